//! The live progress line (rewritten in place on a terminal, plain lines
//! otherwise) and the watchdog that stops a stuck run.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::shared::Shared;

/// The watchdog gives up when nothing has moved for this long...
const STALL_TIMEOUT: Duration = Duration::from_secs(30);
/// ... or, with `--duration`, this long after the duration is over.
pub(crate) const GRACE: Duration = Duration::from_secs(30);

/// Where progress goes.
pub(crate) struct Progress {
    /// On a terminal: one line, rewritten in place.
    in_place: bool,
    every: Duration,
}

impl Progress {
    /// A spinner line on a terminal; otherwise plain lines every second
    /// (logs and CI keep them readable).
    pub(crate) fn new() -> Self {
        let in_place = std::io::stderr().is_terminal();
        Self {
            in_place,
            every: Duration::from_millis(if in_place { 250 } else { 1000 }),
        }
    }

    fn show(&self, line: String) {
        if self.in_place {
            // Back to the start of the line, the new text, and the rest of
            // the old one erased.
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r{line}\x1b[K");
            let _ = err.flush();
        } else {
            eprintln!("{line}");
        }
    }

    /// Clears the progress line before the summary is printed.
    pub(crate) fn finish(&self) {
        if self.in_place {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
        }
    }

    /// Shows progress until the watchdog fires; returns why it did.
    pub(crate) async fn watch(
        &self,
        shared: Arc<Shared>,
        connections: u64,
        size: usize,
        hard_limit: Option<Duration>,
    ) -> String {
        let mut tick =
            tokio::time::interval_at(tokio::time::Instant::now() + self.every, self.every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last = (0, Instant::now());
        let mut moved = (0, Instant::now());
        loop {
            tick.tick().await;
            let connected = shared.connected();
            let total = shared.progress_total();
            let now = Instant::now();
            match shared.start_ns.get() {
                None => self.show(format!("connecting: {connected}/{connections} open")),
                Some(&start) => {
                    let dt = now.duration_since(last.1).as_secs_f64().max(1e-9);
                    let rate = total.saturating_sub(last.0) as f64 / dt;
                    let elapsed = shared.now_ns().saturating_sub(start);
                    self.show(format!(
                        "{:7.1} s {total:>12} msgs {rate:>11.0} msg/s {:>9.2} MB/s",
                        elapsed as f64 / 1e9,
                        rate * size as f64 / 1e6
                    ));
                    if hard_limit.is_some_and(|limit| elapsed > limit.as_nanos() as u64) {
                        return format!(
                            "still running {} s after the --duration was over",
                            GRACE.as_secs()
                        );
                    }
                }
            }
            last = (total, now);
            let activity = total + connected;
            if activity != moved.0 {
                moved = (activity, now);
            } else if now.duration_since(moved.1) >= STALL_TIMEOUT {
                return format!("nothing moved for {} s", STALL_TIMEOUT.as_secs());
            }
        }
    }
}
