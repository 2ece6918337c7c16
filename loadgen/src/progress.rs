//! The live progress line (indicatif on a terminal, plain lines
//! otherwise) and the watchdog that stops a stuck run.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::shared::Shared;

/// The watchdog gives up when nothing has moved for this long...
const STALL_TIMEOUT: Duration = Duration::from_secs(30);
/// ... or, with `--duration`, this long after the duration is over.
pub(crate) const GRACE: Duration = Duration::from_secs(30);

/// Where progress goes.
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    every: Duration,
}

impl Progress {
    /// A spinner line on a terminal; otherwise plain lines every second
    /// (logs and CI keep them readable).
    pub(crate) fn new() -> Self {
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}")
                    .expect("a valid template"),
            );
            bar.enable_steady_tick(Duration::from_millis(100));
            Self {
                bar: Some(bar),
                every: Duration::from_millis(250),
            }
        } else {
            Self {
                bar: None,
                every: Duration::from_secs(1),
            }
        }
    }

    fn show(&self, line: String) {
        match &self.bar {
            Some(bar) => bar.set_message(line),
            None => eprintln!("{line}"),
        }
    }

    /// Clears the progress line before the summary is printed.
    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
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
