//! The drain's schedule: one task, one timer, each connection's turn in
//! order, then the deadline.

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::{Instant, sleep_until};

use super::registry::{Slot, Turn};
use super::{DrainOptions, Shared, lock};

/// Gives each of `slots` its turn, then waits until no connection is left
/// or the deadline passed (and cuts what is left), and publishes the
/// report.
pub(super) async fn run(shared: Arc<Shared>, options: DrainOptions, slots: Vec<Arc<Slot>>) {
    let start = Instant::now();
    let deadline = after(start, options.deadline);
    let window = options.window.min(options.deadline);
    let frame = &shared.started.get().expect("set when started").frame;
    let n = slots.len();
    let mut timer = pin!(sleep_until(start));
    for (k, slot) in slots.into_iter().enumerate() {
        if slot.turn() == Turn::Released {
            continue;
        }
        let at = after(start, turn_offset(window, k, n));
        if at > Instant::now() {
            timer.as_mut().reset(at);
            timer.as_mut().await;
        }
        slot.give_turn().turn(frame);
    }
    loop {
        let mut emptied = pin!(shared.emptied.notified());
        emptied.as_mut().enable();
        if lock(&shared.registry).live == 0 {
            break;
        }
        timer.as_mut().reset(deadline);
        tokio::select! {
            () = emptied => {}
            () = timer.as_mut() => {
                let told = lock(&shared.registry).cut();
                for told in told {
                    told.cut(frame);
                }
                break;
            }
        }
    }
    let counts = lock(&shared.registry).counts;
    shared.report.send_replace(Some(counts));
}

/// When the `k`th of `n` connections is given its turn: `window × k / n`
/// after the start, so the turns are evenly spread over `[0, window)`.
fn turn_offset(window: Duration, k: usize, n: usize) -> Duration {
    let nanos = window.as_nanos() * k as u128 / n as u128;
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

/// `start + delay`, or thirty years on for a longer delay (past what an
/// `Instant` may hold).
fn after(start: Instant, delay: Duration) -> Instant {
    const FAR: Duration = Duration::from_secs(30 * 365 * 86_400);
    let delay = delay.min(FAR);
    start
        .checked_add(delay)
        .unwrap_or_else(|| start + Duration::from_secs(86_400))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_are_spread_evenly_over_the_window_and_never_past_it() {
        let window = Duration::from_secs(10);
        for n in [1, 3, 1000, 1_000_000] {
            let offsets: Vec<_> = (0..n).map(|k| turn_offset(window, k, n)).collect();
            assert_eq!(offsets[0], Duration::ZERO);
            assert!(offsets.iter().all(|&o| o < window), "{n}");
            assert!(offsets.windows(2).all(|w| w[0] < w[1]), "{n}");
        }
        assert_eq!(turn_offset(Duration::ZERO, 5, 10), Duration::ZERO);
        // A window of centuries saturates rather than overflow, and so
        // does the deadline.
        assert_eq!(
            turn_offset(Duration::MAX, 1, 2),
            Duration::from_nanos(u64::MAX)
        );
        let now = Instant::now();
        assert!(after(now, Duration::MAX) > after(now, Duration::from_secs(1 << 20)));
    }
}
