//! [`Subscriber`]: one connection's side of the hub, and
//! [`PreparedSink`], what it forwards into.

use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use lockgate::{CloseCode, CloseFrame, Error, PreparedMessage};
use tokio::io::{AsyncRead, AsyncWrite};

use super::mailbox::{Mailbox, lock};
use super::{Ended, Hub};
use crate::drain::DrainHook;
use crate::{WebSocketStream, WebSocketWriteHalf};

/// One connection's mailbox in a [`Hub`]: the topics it is subscribed to
/// and the bounded queue of messages published there since it last
/// drained it.
///
/// Dropping it unsubscribes it from every topic and frees its queue.
#[derive(Debug)]
pub struct Subscriber {
    hub: Hub,
    mailbox: Arc<Mailbox>,
}

/// A handle to (un)subscribe a [`Subscriber`] from another task, say the
/// connection's read loop while [`Subscriber::forward`] runs. Does nothing
/// once the subscriber is dropped.
#[derive(Debug, Clone)]
pub struct Topics {
    hub: Hub,
    mailbox: Weak<Mailbox>,
}

/// A [`Subscriber`]'s counters.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SubscriberStats {
    /// Messages waiting in its queue now.
    pub queued: usize,
    /// Messages handed to its connection.
    pub delivered: u64,
    /// Messages it missed because its queue was full
    /// ([`SlowConsumer::Drop`](super::SlowConsumer::Drop)).
    pub dropped: u64,
    /// Why it was closed, if it was.
    pub closed: Option<Ended>,
}

impl Subscriber {
    pub(super) fn new(hub: Hub, mailbox: Arc<Mailbox>) -> Self {
        Self { hub, mailbox }
    }

    /// Unique within its hub.
    pub fn id(&self) -> u64 {
        self.mailbox.id
    }

    /// Subscribes to `topic` (nothing if it already is).
    pub fn subscribe(&self, topic: &str) {
        subscribe(&self.hub, &self.mailbox, topic);
    }

    /// Unsubscribes from `topic` (nothing if it is not subscribed).
    pub fn unsubscribe(&self, topic: &str) {
        unsubscribe(&self.hub, &self.mailbox, topic);
    }

    /// A handle to (un)subscribe this subscriber from another task.
    pub fn topics(&self) -> Topics {
        Topics {
            hub: self.hub.clone(),
            mailbox: Arc::downgrade(&self.mailbox),
        }
    }

    /// Its counters.
    pub fn stats(&self) -> SubscriberStats {
        SubscriberStats {
            queued: self.mailbox.queued(),
            delivered: self.mailbox.delivered.load(Ordering::Relaxed),
            dropped: self.mailbox.dropped.load(Ordering::Relaxed),
            closed: self.mailbox.ended(),
        }
    }

    /// Waits until something is queued, then moves everything queued into
    /// `burst` (appending) and returns how many messages that was.
    ///
    /// # Errors
    ///
    /// [`Ended`] once the subscriber was closed, by the
    /// [`SlowConsumer::Close`](super::SlowConsumer::Close) policy or by
    /// [`Hub::close_all`]: what was still queued is discarded. At a
    /// drain's turn ([`Registration::attach_subscriber`]) it takes no more
    /// messages, and ends once what was queued has been returned.
    ///
    /// [`Registration::attach_subscriber`]: crate::drain::Registration::attach_subscriber
    pub async fn recv_burst(&mut self, burst: &mut Vec<PreparedMessage>) -> Result<usize, Ended> {
        loop {
            let n = self.mailbox.take(burst)?;
            if n > 0 {
                self.hub
                    .inner
                    .delivered
                    .fetch_add(n as u64, Ordering::Relaxed);
                #[cfg(feature = "metrics")]
                super::metrics::delivered(n);
                return Ok(n);
            }
            self.mailbox.ready().await;
        }
    }

    /// Runs a connection's write side: each burst (everything queued since
    /// the last one) is written with `write_prepared` and flushed once.
    /// Returns when the subscriber is closed, after sending the close frame
    /// (behind every message queued for it, when a drain closed it) if the
    /// connection takes it within the hub's
    /// [`close_grace`](super::HubConfig::close_grace) (a connection that
    /// stopped reading may not), closing it even while a burst is stuck on
    /// a connection that stopped reading.
    ///
    /// Other messages can be written to the same connection between bursts
    /// (through the other clones of a split write half's stream, say), as
    /// long as they are flushed.
    ///
    /// # Errors
    ///
    /// The connection's write errors (the subscriber stays usable).
    pub async fn forward<W: PreparedSink>(&mut self, ws: &mut W) -> lockgate::Result<Ended> {
        let mut burst = Vec::new();
        let ended = loop {
            if let Err(ended) = self.recv_burst(&mut burst).await {
                break ended;
            }
            let written = write_burst(ws, &mut burst);
            tokio::select! {
                biased;
                result = written => result?,
                ended = self.mailbox.closed() => break ended,
            }
        };
        drop(burst);
        let close = ws.close(Some(CloseFrame::new(ended.code, ended.reason.as_str())));
        match self.hub.inner.config.close_grace {
            Some(grace) if tokio::runtime::Handle::try_current().is_ok() => {
                let _ = tokio::time::timeout(grace, close).await;
            }
            _ => {
                let _ = close.await;
            }
        }
        Ok(ended)
    }
}

impl Subscriber {
    /// What a drain calls at the connection's turn and at its deadline.
    pub(crate) fn drain_hook(&self) -> Weak<dyn DrainHook> {
        let mailbox: Arc<dyn DrainHook> = self.mailbox.clone();
        Arc::downgrade(&mailbox)
    }
}

impl DrainHook for Mailbox {
    fn close_after_queued(&self, frame: &CloseFrame) {
        self.finish(drained(frame));
    }

    fn cut(&self, frame: &CloseFrame) {
        self.close(drained(frame));
    }
}

fn drained(frame: &CloseFrame) -> Ended {
    Ended {
        code: frame.code,
        reason: frame.reason.as_str().to_owned(),
    }
}

/// Writes every message of `burst` and flushes once.
async fn write_burst<W: PreparedSink>(
    ws: &mut W,
    burst: &mut Vec<PreparedMessage>,
) -> lockgate::Result<()> {
    for msg in burst.drain(..) {
        match ws.write_prepared(&msg).await {
            Ok(()) => {}
            // Past `max_write_buffer_size`: what is queued goes out first.
            Err(Error::WriteBufferFull(_)) => {
                ws.flush().await?;
                ws.write_prepared(&msg).await?;
            }
            Err(e) => return Err(e),
        }
    }
    ws.flush().await
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        let topics = lock(&self.mailbox.topics).take().unwrap_or_default();
        let registry = &self.hub.inner.registry;
        for topic in topics {
            registry.unsubscribe(&topic, self.mailbox.id);
        }
        registry.deregister(self.mailbox.id);
        // Wakes publishers waiting for room in it.
        self.mailbox.close(Ended {
            code: CloseCode::Away,
            reason: String::new(),
        });
        self.hub.inner.subscribers.fetch_sub(1, Ordering::Relaxed);
        #[cfg(feature = "metrics")]
        super::metrics::subscriber_removed();
    }
}

impl Topics {
    /// Subscribes to `topic`; see [`Subscriber::subscribe`].
    pub fn subscribe(&self, topic: &str) {
        if let Some(mailbox) = self.mailbox.upgrade() {
            subscribe(&self.hub, &mailbox, topic);
        }
    }

    /// Unsubscribes from `topic`; see [`Subscriber::unsubscribe`].
    pub fn unsubscribe(&self, topic: &str) {
        if let Some(mailbox) = self.mailbox.upgrade() {
            unsubscribe(&self.hub, &mailbox, topic);
        }
    }
}

fn subscribe(hub: &Hub, mailbox: &Arc<Mailbox>, topic: &str) {
    // Held across the registry update, so a concurrent drop or unsubscribe
    // sees the list and the registry agree.
    let mut topics = lock(&mailbox.topics);
    let Some(topics) = topics.as_mut() else {
        return; // dropped
    };
    if topics.iter().any(|t| &**t == topic) {
        return;
    }
    let topic: Arc<str> = topic.into();
    hub.inner.registry.subscribe(&topic, mailbox);
    topics.push(topic);
}

fn unsubscribe(hub: &Hub, mailbox: &Arc<Mailbox>, topic: &str) {
    let mut topics = lock(&mailbox.topics);
    let Some(topics) = topics.as_mut() else {
        return;
    };
    if let Some(at) = topics.iter().position(|t| &**t == topic) {
        topics.swap_remove(at);
        hub.inner.registry.unsubscribe(topic, mailbox.id);
    }
}

/// A WebSocket that [`Subscriber::forward`] can write to:
/// [`WebSocketStream`] and [`WebSocketWriteHalf`].
pub trait PreparedSink: Send {
    /// Queues a prepared message (see [`WebSocketStream::write_prepared`]).
    fn write_prepared(
        &mut self,
        msg: &PreparedMessage,
    ) -> impl Future<Output = lockgate::Result<()>> + Send;

    /// Writes everything queued and flushes.
    fn flush(&mut self) -> impl Future<Output = lockgate::Result<()>> + Send;

    /// Starts the closing handshake with `frame` and flushes.
    fn close(
        &mut self,
        frame: Option<CloseFrame>,
    ) -> impl Future<Output = lockgate::Result<()>> + Send;
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> PreparedSink for WebSocketStream<S> {
    fn write_prepared(
        &mut self,
        msg: &PreparedMessage,
    ) -> impl Future<Output = lockgate::Result<()>> + Send {
        WebSocketStream::write_prepared(self, msg)
    }

    fn flush(&mut self) -> impl Future<Output = lockgate::Result<()>> + Send {
        crate::SendFlush::flush(self)
    }

    fn close(
        &mut self,
        frame: Option<CloseFrame>,
    ) -> impl Future<Output = lockgate::Result<()>> + Send {
        WebSocketStream::close(self, frame)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> PreparedSink for WebSocketWriteHalf<S> {
    fn write_prepared(
        &mut self,
        msg: &PreparedMessage,
    ) -> impl Future<Output = lockgate::Result<()>> + Send {
        WebSocketWriteHalf::write_prepared(self, msg)
    }

    fn flush(&mut self) -> impl Future<Output = lockgate::Result<()>> + Send {
        WebSocketWriteHalf::flush(self)
    }

    fn close(
        &mut self,
        frame: Option<CloseFrame>,
    ) -> impl Future<Output = lockgate::Result<()>> + Send {
        WebSocketWriteHalf::close(self, frame)
    }
}
