//! Broadcast pacing: a publisher keeps at most a window of its messages
//! not yet received by *every* connection of the topic (the subscribers,
//! and the other publishers, which are subscribed too), not merely by its
//! own connection.
//!
//! Why: a node queues a bounded number of messages per connection
//! (lockgate-fanout: 1,024) and closes a connection whose queue is full
//! with 1008. Paced by its own read-back alone, a publisher runs as fast
//! as its own connection is served; on a busy machine another
//! connection's reader (or the node's task writing to it) may not run for
//! milliseconds, and its queue overflows although it keeps up on average.
//! Paced by every receiver, a connection never has more than
//! `publishers x window` messages queued for it, whatever the scheduler
//! does; a receiver that stops reading stops the publishers instead.
//!
//! Receivers report progress with two atomic operations per message; a
//! publisher that has to wait says what it waits for, and only the
//! receiver that reaches exactly that count wakes it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::Notify;

/// A receiver's count once it has left: it paces no one any more.
const GONE: u64 = u64::MAX;
/// What a publisher that does not wait waits for.
const NOT_WAITING: u64 = u64::MAX;

/// One receiver's count of one publisher's messages, on its own cache
/// line: one receiver stores, one publisher reads.
#[repr(align(64))]
#[derive(Debug, Default)]
struct Slot(AtomicU64);

/// A publisher's side: what it waits for, and how it is woken.
#[repr(align(64))]
#[derive(Debug)]
struct Waiter {
    wanted: AtomicU64,
    wake: Notify,
}

/// Progress of every receiver of every publisher; see the module docs.
#[derive(Debug)]
pub(crate) struct Pacer {
    window: u64,
    publishers: usize,
    receivers: usize,
    /// `receiver * publishers + publisher`: how many of the publisher's
    /// messages the receiver has received, or [`GONE`].
    received: Box<[Slot]>,
    waiters: Box<[Waiter]>,
}

impl Pacer {
    /// `receivers` connections, each receiving the messages of
    /// `publishers`, who may each be `window` messages ahead of the
    /// slowest of them.
    pub(crate) fn new(receivers: usize, publishers: usize, window: u64) -> Self {
        Self {
            window,
            publishers,
            receivers,
            received: (0..receivers * publishers)
                .map(|_| Slot::default())
                .collect(),
            waiters: (0..publishers)
                .map(|_| Waiter {
                    wanted: AtomicU64::new(NOT_WAITING),
                    wake: Notify::new(),
                })
                .collect(),
        }
    }

    fn slot(&self, receiver: usize, publisher: usize) -> &AtomicU64 {
        &self.received[receiver * self.publishers + publisher].0
    }

    /// Receiver `receiver` has received `count` messages of `publisher`
    /// (counts go up by one: messages arrive in order).
    pub(crate) fn received(&self, receiver: usize, publisher: usize, count: u64) {
        // SeqCst on both sides: either the publisher sees this count, or
        // this receiver sees what the publisher waits for.
        self.slot(receiver, publisher)
            .store(count, Ordering::SeqCst);
        let waiter = &self.waiters[publisher];
        if waiter.wanted.load(Ordering::SeqCst) == count {
            waiter.wake.notify_one();
        }
    }

    /// Receiver `receiver` receives nothing more (it is done, closed or
    /// failed): it no longer holds anyone back.
    pub(crate) fn leave(&self, receiver: usize) {
        for publisher in 0..self.publishers {
            self.slot(receiver, publisher).store(GONE, Ordering::SeqCst);
            self.waiters[publisher].wake.notify_one();
        }
    }

    /// The first receiver from `from` on that has received fewer than
    /// `need` messages of `publisher`.
    fn laggard(&self, publisher: usize, need: u64, from: usize) -> Option<usize> {
        (from..self.receivers).find(|&r| self.slot(r, publisher).load(Ordering::SeqCst) < need)
    }

    /// Waits until `publisher` may have sent `total` messages: until every
    /// receiver still there has received all but a window of them.
    pub(crate) async fn ready(&self, publisher: usize, total: u64) {
        let need = total.saturating_sub(self.window);
        let Some(mut from) = self.laggard(publisher, need, 0) else {
            return;
        };
        let waiter = &self.waiters[publisher];
        loop {
            let woken = waiter.wake.notified();
            tokio::pin!(woken);
            // Registered before looking, so a wake in between is kept.
            woken.as_mut().enable();
            waiter.wanted.store(need, Ordering::SeqCst);
            match self.laggard(publisher, need, from) {
                Some(r) => from = r,
                None => break,
            }
            woken.await;
        }
        waiter.wanted.store(NOT_WAITING, Ordering::SeqCst);
    }

    /// Makes `receiver` leave when dropped, however its task ends.
    pub(crate) fn guard(self: &Arc<Self>, receiver: usize) -> Leave {
        Leave {
            pacer: Arc::clone(self),
            receiver,
        }
    }
}

/// Makes a receiver leave the [`Pacer`] when dropped.
#[derive(Debug)]
pub(crate) struct Leave {
    pacer: Arc<Pacer>,
    receiver: usize,
}

impl Drop for Leave {
    fn drop(&mut self) {
        self.pacer.leave(self.receiver);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Whether `ready` is done at its first poll.
    fn ready_now(pacer: &Pacer, publisher: usize, total: u64) -> bool {
        let mut ready = std::pin::pin!(pacer.ready(publisher, total));
        let waker = std::task::Waker::noop();
        ready
            .as_mut()
            .poll(&mut std::task::Context::from_waker(waker))
            .is_ready()
    }

    #[test]
    fn a_publisher_waits_for_its_slowest_receiver_only() {
        let pacer = Pacer::new(3, 2, 10);
        assert!(ready_now(&pacer, 0, 10), "a window ahead of everyone");
        assert!(!ready_now(&pacer, 0, 11));
        pacer.received(0, 0, 1);
        pacer.received(1, 0, 5);
        assert!(!ready_now(&pacer, 0, 11), "receiver 2 has nothing");
        pacer.received(2, 0, 1);
        assert!(ready_now(&pacer, 0, 11));
        assert!(!ready_now(&pacer, 0, 12), "receivers 0 and 2 have 1");
        // The other publisher's progress is its own.
        pacer.received(0, 1, 7);
        assert!(!ready_now(&pacer, 0, 12));
        assert!(ready_now(&pacer, 1, 10));
        assert!(!ready_now(&pacer, 1, 11));
    }

    #[test]
    fn a_receiver_that_left_holds_no_one_back() {
        let pacer = Arc::new(Pacer::new(2, 1, 4));
        pacer.received(0, 0, 100);
        assert!(!ready_now(&pacer, 0, 20));
        drop(pacer.guard(1));
        assert!(ready_now(&pacer, 0, 20));
        assert!(!ready_now(&pacer, 0, 105));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_waiting_publisher_is_woken_by_the_laggards() {
        let pacer = Arc::new(Pacer::new(2, 1, 8));
        let waiting = tokio::spawn({
            let pacer = Arc::clone(&pacer);
            async move { pacer.ready(0, 1000).await }
        });
        // Both receivers go the whole way, one message at a time.
        let receivers: Vec<_> = (0..2)
            .map(|r| {
                let pacer = Arc::clone(&pacer);
                tokio::spawn(async move {
                    for count in 1..=1000 {
                        pacer.received(r, 0, count);
                        if count % 64 == 0 {
                            tokio::task::yield_now().await;
                        }
                    }
                })
            })
            .collect();
        for receiver in receivers {
            receiver.await.unwrap();
        }
        tokio::time::timeout(Duration::from_secs(10), waiting)
            .await
            .expect("woken once both passed 992")
            .unwrap();
    }
}
