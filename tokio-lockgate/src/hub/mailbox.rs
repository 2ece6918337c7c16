//! [`Mailbox`]: one subscriber's bounded queue, shared between the
//! publishers that fill it and the connection task that drains it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use lockgate::PreparedMessage;
use tokio::sync::Notify;

use super::Ended;

/// A drained queue keeps its allocation only up to this many entries, so a
/// subscriber that once took a burst does not hold it while idle.
const KEEP_WHEN_DRAINED: usize = 64;

/// What happened to one message offered to one mailbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Offer {
    Queued,
    /// The queue was full; the message was not queued.
    Full,
    /// The subscriber is closed or gone; nothing was queued.
    Closed,
}

#[derive(Debug, Default)]
struct Queue {
    messages: VecDeque<PreparedMessage>,
    closed: Option<Ended>,
    /// Taking no more messages: closed with this once what is queued was
    /// taken (a drain's turn).
    finishing: Option<Ended>,
}

#[derive(Debug)]
pub(super) struct Mailbox {
    pub(super) id: u64,
    capacity: usize,
    queue: Mutex<Queue>,
    /// Something was queued, or the mailbox closed (one waiter: the
    /// connection task; a permit is kept when it is not waiting).
    ready: Notify,
    /// Room was made, or the mailbox closed (any number of waiting
    /// publishers, under [`SlowConsumer::Wait`](super::SlowConsumer::Wait)).
    room: Notify,
    /// The mailbox closed (for a connection task busy writing).
    closing: Notify,
    pub(super) delivered: AtomicU64,
    pub(super) dropped: AtomicU64,
    /// The topics it is subscribed to; `None` once the subscriber is gone.
    /// Never locked by publishers, so (un)subscribing may take topic locks
    /// while holding it.
    pub(super) topics: Mutex<Option<Vec<Arc<str>>>>,
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing in the hub leaves its state half-updated on a panic.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Mailbox {
    pub(super) fn new(id: u64, capacity: usize) -> Self {
        Self {
            id,
            capacity,
            queue: Mutex::default(),
            ready: Notify::new(),
            room: Notify::new(),
            closing: Notify::new(),
            delivered: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            topics: Mutex::new(Some(Vec::new())),
        }
    }

    /// Queues `msg` if there is room.
    pub(super) fn offer(&self, msg: &PreparedMessage) -> Offer {
        let mut queue = lock(&self.queue);
        if queue.closed.is_some() || queue.finishing.is_some() {
            return Offer::Closed;
        }
        if queue.messages.len() >= self.capacity {
            return Offer::Full;
        }
        queue.messages.push_back(msg.clone());
        drop(queue);
        self.ready.notify_one();
        Offer::Queued
    }

    /// Closes the mailbox (unless it already is) and releases its queue:
    /// `true` if this call closed it.
    pub(super) fn close(&self, ended: Ended) -> bool {
        let mut queue = lock(&self.queue);
        if queue.closed.is_some() {
            return false;
        }
        queue.closed = Some(ended);
        queue.finishing = None;
        queue.messages = VecDeque::new();
        drop(queue);
        self.ready.notify_one();
        self.room.notify_waiters();
        self.closing.notify_waiters();
        true
    }

    /// Stops taking messages, and closes with `ended` once what is queued
    /// was taken, unless it is closed or finishing already. Unlike
    /// [`close`](Self::close), a burst being written is not interrupted.
    pub(super) fn finish(&self, ended: Ended) {
        let mut queue = lock(&self.queue);
        if queue.closed.is_some() || queue.finishing.is_some() {
            return;
        }
        queue.finishing = Some(ended);
        drop(queue);
        self.ready.notify_one();
        // Publishers waiting for room find it closed to them.
        self.room.notify_waiters();
    }

    /// Moves everything queued into `burst`: `Ok(0)` if nothing is, the
    /// reason once closed (or finishing with nothing left).
    pub(super) fn take(&self, burst: &mut Vec<PreparedMessage>) -> Result<usize, Ended> {
        let mut queue = lock(&self.queue);
        if let Some(ended) = &queue.closed {
            return Err(ended.clone());
        }
        let n = queue.messages.len();
        if n == 0 && queue.finishing.is_some() {
            let ended = queue.finishing.take().expect("checked");
            queue.closed = Some(ended.clone());
            queue.messages = VecDeque::new();
            return Err(ended);
        }
        if n == 0 {
            // About to wait: an idle subscriber holds no burst-sized queue.
            if queue.messages.capacity() > KEEP_WHEN_DRAINED {
                queue.messages = VecDeque::new();
            }
            return Ok(0);
        }
        burst.extend(queue.messages.drain(..));
        drop(queue);
        self.delivered.fetch_add(n as u64, Ordering::Relaxed);
        self.room.notify_waiters();
        Ok(n)
    }

    /// Waits until something may have been queued or the mailbox closed.
    pub(super) async fn ready(&self) {
        self.ready.notified().await;
    }

    /// Waits until the mailbox is closed.
    pub(super) async fn closed(&self) -> Ended {
        loop {
            let closing = self.closing.notified();
            tokio::pin!(closing);
            closing.as_mut().enable();
            if let Some(ended) = self.ended() {
                return ended;
            }
            closing.await;
        }
    }

    /// Queues `msg`, waiting for room as long as it takes (the `Wait`
    /// policy). `false` if the mailbox closed first.
    pub(super) async fn offer_waiting(&self, msg: &PreparedMessage) -> bool {
        loop {
            let room = self.room.notified();
            tokio::pin!(room);
            // Registered before looking, so room made in between wakes it.
            room.as_mut().enable();
            match self.offer(msg) {
                Offer::Queued => return true,
                Offer::Closed => return false,
                Offer::Full => room.await,
            }
        }
    }

    /// Messages waiting now.
    pub(super) fn queued(&self) -> usize {
        lock(&self.queue).messages.len()
    }

    /// Why it was closed, if it was.
    pub(super) fn ended(&self) -> Option<Ended> {
        lock(&self.queue).closed.clone()
    }
}
