//! What every task of a run shares: the clock and the progress counters.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// A task's running count, on its own cache line: one task stores, the
/// progress line reads.
#[repr(align(64))]
#[derive(Debug, Default)]
pub(crate) struct Counter(AtomicU64);

impl Counter {
    pub(crate) fn set(&self, n: u64) {
        self.0.store(n, Ordering::Relaxed);
    }
}

#[derive(Debug)]
pub(crate) struct Shared {
    /// Timestamps are nanoseconds since this.
    epoch: Instant,
    /// When the traffic started (all connections open), in epoch nanoseconds.
    pub(crate) start_ns: OnceLock<u64>,
    pub(crate) connected: AtomicU64,
    /// What the progress line adds up.
    progress: Mutex<Vec<Arc<Counter>>>,
}

impl Shared {
    pub(crate) fn new() -> Self {
        Self {
            epoch: Instant::now(),
            start_ns: OnceLock::new(),
            connected: AtomicU64::new(0),
            progress: Mutex::default(),
        }
    }

    pub(crate) fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// The traffic starts now; returns the start in epoch nanoseconds.
    pub(crate) fn start(&self) -> u64 {
        *self.start_ns.get_or_init(|| self.now_ns())
    }

    /// A new counter included in the progress line.
    pub(crate) fn counter(&self) -> Arc<Counter> {
        let counter = Arc::new(Counter::default());
        self.lock().push(Arc::clone(&counter));
        counter
    }

    pub(crate) fn progress_total(&self) -> u64 {
        self.lock()
            .iter()
            .map(|c| c.0.load(Ordering::Relaxed))
            .sum()
    }

    pub(crate) fn connected(&self) -> u64 {
        self.connected.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Counter>>> {
        self.progress.lock().unwrap_or_else(|p| p.into_inner())
    }
}
