//! The history of a standalone node: positions from a counter in this
//! process, the backlog as the only copy, and an epoch that is new with
//! every process.

use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex, Weak};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use tokio::sync::mpsc;

use super::{History, Store, backlog::Backlog};
use crate::config::HistoryConfig;
use crate::state::NodeState;

/// Messages a node's clients may have handed over and not yet delivered;
/// past it, a publishing connection waits (and stops reading its client).
const QUEUE: usize = 4096;

/// Where a standalone node's clients hand their messages: one queue, so
/// that positions follow the order in which they are delivered.
#[derive(Debug, Clone)]
pub(crate) struct Sequencer {
    queue: mpsc::Sender<(Box<str>, Bytes)>,
}

impl Sequencer {
    /// Hands one stored message over: accepted once queued.
    pub(crate) async fn append(&self, topic: &str, stored: Bytes) -> Result<(), String> {
        self.queue
            .send((topic.into(), stored))
            .await
            .map_err(|_| "the node's history is stopped".to_owned())
    }
}

pub(super) fn start(config: HistoryConfig, state: Arc<NodeState>) -> Arc<History> {
    let (queue, mut queued) = mpsc::channel::<(Box<str>, Bytes)>(QUEUE);
    let history = Arc::new(History {
        epoch: fresh_epoch(),
        backlog: Mutex::new(Backlog::new(
            usize::try_from(config.messages).unwrap_or(usize::MAX),
            config.max_age,
            0,
        )),
        store: Store::Local(Sequencer { queue }),
        state,
    });
    let weak: Weak<History> = Arc::downgrade(&history);
    tokio::spawn(async move {
        let mut position = 0u64;
        while let Some((topic, stored)) = queued.recv().await {
            let Some(history) = weak.upgrade() else {
                return;
            };
            position += 1;
            history.deliver(&topic, position, &stored).await;
        }
    });
    history
}

/// A token no other process is likely to have picked: the time, the
/// process and a per-process random key, hashed, in base 36.
fn fresh_epoch() -> String {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    hasher.write_u128(now.as_nanos());
    hasher.write_u32(std::process::id());
    format!("m{}", base36(hasher.finish()))
}

/// `n` in base 36 (digits and lower-case letters).
pub(super) fn base36(mut n: u64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).expect("ASCII digits")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epochs_are_valid_and_differ() {
        let (a, b) = (fresh_epoch(), fresh_epoch());
        assert_ne!(a, b);
        assert!(crate::seq::is_valid_epoch(&a), "{a}");
        assert_eq!(base36(0), "0");
        assert_eq!(base36(36 * 36 + 35), "10z");
    }
}
