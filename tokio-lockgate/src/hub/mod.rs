//! Publish/subscribe fan-out: one [`PreparedMessage`] to every connection
//! subscribed to a topic, each connection draining its own bounded queue
//! with one flush per burst.
//!
//! - A [`Hub`] holds the topics. [`Hub::subscriber`] gives each connection
//!   a [`Subscriber`]: its mailbox, subscribed to the topics it joins, and
//!   unsubscribed from all of them when dropped.
//! - [`Hub::publish`] queues one shared message for every subscriber of a
//!   topic: nothing is encoded per connection, and the publisher never
//!   waits on a socket.
//! - [`Subscriber::forward`] runs a connection's write side: it takes
//!   everything queued since the last burst, writes it all with
//!   `write_prepared` and flushes once, so a burst costs one write system
//!   call per connection however many messages it holds.
//! - Each queue holds at most [`HubConfig::queue_capacity`] messages. What
//!   happens to a subscriber whose queue is full is the
//!   [`SlowConsumer`] policy: drop the message and count it, close the
//!   connection with a code, or make the publisher wait. A subscriber that
//!   never reads costs at most its bound (plus its connection's write
//!   buffer), whatever is published.
//!
//! Runnable: `examples/hub.rs` (one publisher, three connections) and
//! `examples/production.rs` (a chat in an axum server).
//!
//! ```
//! use futures_util::StreamExt;
//! use tokio_lockgate::hub::{Hub, HubConfig};
//! use tokio_lockgate::{Config, Message, PreparedMessage, Role, WebSocketStream};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> tokio_lockgate::Result<()> {
//! let hub = Hub::new(HubConfig::default());
//! // A connection (here an in-memory one) joins a topic; its write side
//! // forwards what is published there.
//! let (server_io, client_io) = tokio::io::duplex(64 * 1024);
//! let server = WebSocketStream::from_raw_socket(server_io, Role::Server, Config::default()).await;
//! let mut subscriber = hub.subscriber();
//! subscriber.subscribe("prices");
//! let (mut write, _read) = server.into_split();
//! let forwarding = tokio::spawn(async move { subscriber.forward(&mut write).await });
//!
//! let published = hub.publish("prices", &PreparedMessage::new(Message::text("EURUSD 1.0842"))).await;
//! assert_eq!(published.queued, 1);
//!
//! let mut client = WebSocketStream::from_raw_socket(client_io, Role::Client, Config::default()).await;
//! assert_eq!(client.next().await.unwrap()?, Message::text("EURUSD 1.0842"));
//! # forwarding.abort();
//! # Ok(())
//! # }
//! ```

mod mailbox;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub mod metrics;
mod registry;
mod subscriber;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use lockgate::{CloseCode, PreparedMessage};

use mailbox::{Mailbox, Offer};
use registry::Registry;
pub use subscriber::{PreparedSink, Subscriber, SubscriberStats, Topics};

/// What to do with a subscriber whose queue is full when a message is
/// published to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SlowConsumer {
    /// The message is not queued for that subscriber and is counted in its
    /// and the hub's `dropped`. The subscriber misses it and stays.
    Drop,
    /// The subscriber is closed with this code (1008 Policy Violation or
    /// 1013 Try Again Later are the usual ones) the moment its queue is
    /// full: the queue is released at once, and its
    /// [`forward`](Subscriber::forward) sends the close frame and ends.
    Close(CloseCode),
    /// [`Hub::publish`] waits until every subscriber of the topic has room.
    /// Nothing is lost, but one subscriber that stops reading stalls every
    /// publisher of its topics.
    Wait,
}

/// Settings of a [`Hub`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HubConfig {
    queue_capacity: usize,
    slow_consumer: SlowConsumer,
    close_grace: Option<Duration>,
}

impl Default for HubConfig {
    /// 1,024 messages per subscriber; a subscriber that falls that far
    /// behind is closed with 1008 (Policy Violation); 1 s of close grace.
    fn default() -> Self {
        Self {
            queue_capacity: 1024,
            slow_consumer: SlowConsumer::Close(CloseCode::Policy),
            close_grace: Some(Duration::from_secs(1)),
        }
    }
}

impl HubConfig {
    /// The most messages queued for one subscriber (at least 1). Queued
    /// messages are shared, so an entry costs a pointer; the messages
    /// themselves are held once, however many queues they are in.
    pub fn queue_capacity(mut self, messages: usize) -> Self {
        self.queue_capacity = messages.max(1);
        self
    }

    /// What happens when a subscriber's queue is full.
    pub fn slow_consumer(mut self, policy: SlowConsumer) -> Self {
        self.slow_consumer = policy;
        self
    }

    /// How long [`Subscriber::forward`] waits for a closed subscriber's
    /// connection to take its close frame before it returns anyway (a
    /// connection that stopped reading never takes it). `None` waits as
    /// long as it takes. Default 1 s.
    pub fn close_grace(mut self, grace: Option<Duration>) -> Self {
        self.close_grace = grace;
        self
    }
}

/// Why a subscriber was closed: the close frame its connection is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    /// The close code.
    pub code: CloseCode,
    /// The close reason.
    pub reason: String,
}

/// What one [`Hub::publish`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Published {
    /// Subscribers the message was queued for.
    pub queued: usize,
    /// Subscribers whose queue was full, under [`SlowConsumer::Drop`].
    pub dropped: usize,
    /// Subscribers closed because their queue was full, under
    /// [`SlowConsumer::Close`].
    pub closed: usize,
}

/// Counters of a [`Hub`] since it was created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HubStats {
    /// Subscribers alive now.
    pub subscribers: usize,
    /// Topics with at least one subscriber now.
    pub topics: usize,
    /// Calls to [`Hub::publish`].
    pub published: u64,
    /// Messages queued for a subscriber.
    pub queued: u64,
    /// Messages handed to a connection by a subscriber.
    pub delivered: u64,
    /// Messages not queued because a queue was full
    /// ([`SlowConsumer::Drop`]).
    pub dropped: u64,
    /// Subscribers closed because their queue was full
    /// ([`SlowConsumer::Close`]).
    pub closed_slow: u64,
}

/// Topics and their subscribers. Cheap to clone; `Send + Sync`.
#[derive(Debug, Clone)]
pub struct Hub {
    inner: Arc<HubInner>,
}

#[derive(Debug)]
struct HubInner {
    config: HubConfig,
    registry: Registry,
    next_id: AtomicU64,
    subscribers: AtomicUsize,
    published: AtomicU64,
    queued: AtomicU64,
    delivered: AtomicU64,
    dropped: AtomicU64,
    closed_slow: AtomicU64,
}

impl Hub {
    /// A hub without topics. With the `metrics` feature, the hub's series
    /// are registered with the current recorder, at zero (see the
    /// `metrics` module).
    pub fn new(config: HubConfig) -> Self {
        #[cfg(feature = "metrics")]
        metrics::register_hub();
        Self {
            inner: Arc::new(HubInner {
                config,
                registry: Registry::default(),
                next_id: AtomicU64::new(1),
                subscribers: AtomicUsize::new(0),
                published: AtomicU64::new(0),
                queued: AtomicU64::new(0),
                delivered: AtomicU64::new(0),
                dropped: AtomicU64::new(0),
                closed_slow: AtomicU64::new(0),
            }),
        }
    }

    /// The hub's settings.
    pub fn config(&self) -> &HubConfig {
        &self.inner.config
    }

    /// A new subscriber (one per connection), subscribed to nothing.
    pub fn subscriber(&self) -> Subscriber {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let mailbox = Arc::new(Mailbox::new(id, self.inner.config.queue_capacity));
        self.inner.registry.register(&mailbox);
        self.inner.subscribers.fetch_add(1, Ordering::Relaxed);
        #[cfg(feature = "metrics")]
        metrics::subscriber_added();
        Subscriber::new(self.clone(), mailbox)
    }

    /// Queues `msg` for every current subscriber of `topic`. Under
    /// [`SlowConsumer::Drop`] and [`SlowConsumer::Close`] the future is
    /// ready at its first poll; under [`SlowConsumer::Wait`] it waits for
    /// room in every queue.
    pub async fn publish(&self, topic: &str, msg: &PreparedMessage) -> Published {
        let inner = &*self.inner;
        inner.published.fetch_add(1, Ordering::Relaxed);
        let mut published = Published::default();
        let mut full = Vec::new();
        inner
            .registry
            .for_each_subscriber(topic, |mailbox| match mailbox.offer(msg) {
                Offer::Queued => published.queued += 1,
                Offer::Closed => {}
                Offer::Full => match inner.config.slow_consumer {
                    SlowConsumer::Drop => {
                        mailbox.dropped.fetch_add(1, Ordering::Relaxed);
                        published.dropped += 1;
                    }
                    SlowConsumer::Close(code) => {
                        let ended = Ended {
                            code,
                            reason: "slow consumer: queue full".into(),
                        };
                        if mailbox.close(ended) {
                            #[cfg(feature = "tracing")]
                            tracing::debug!(
                                target: "tokio_lockgate",
                                subscriber = mailbox.id,
                                topic,
                                code = u16::from(code),
                                "slow consumer closed"
                            );
                            published.closed += 1;
                        }
                    }
                    SlowConsumer::Wait => full.push(Arc::clone(mailbox)),
                },
            });
        // Waited for outside the topic's lock.
        for mailbox in full {
            if mailbox.offer_waiting(msg).await {
                published.queued += 1;
            }
        }
        inner
            .queued
            .fetch_add(published.queued as u64, Ordering::Relaxed);
        inner
            .dropped
            .fetch_add(published.dropped as u64, Ordering::Relaxed);
        inner
            .closed_slow
            .fetch_add(published.closed as u64, Ordering::Relaxed);
        #[cfg(feature = "metrics")]
        metrics::published(&published);
        published
    }

    /// Closes every subscriber with `code` and `reason` (say, 1012 or 1013
    /// when a node lost the broker that feeds it). Their queues are
    /// discarded; each [`forward`](Subscriber::forward) sends the close
    /// frame and ends. Subscribers created afterwards are not affected.
    pub fn close_all(&self, code: CloseCode, reason: &str) {
        let ended = Ended {
            code,
            reason: reason.into(),
        };
        self.inner.registry.for_each_mailbox(|mailbox| {
            mailbox.close(ended.clone());
        });
    }

    /// Subscribers of `topic` now.
    pub fn subscribers(&self, topic: &str) -> usize {
        self.inner.registry.subscribers(topic)
    }

    /// The hub's counters.
    pub fn stats(&self) -> HubStats {
        let inner = &*self.inner;
        HubStats {
            subscribers: inner.subscribers.load(Ordering::Relaxed),
            topics: inner.registry.topics(),
            published: inner.published.load(Ordering::Relaxed),
            queued: inner.queued.load(Ordering::Relaxed),
            delivered: inner.delivered.load(Ordering::Relaxed),
            dropped: inner.dropped.load(Ordering::Relaxed),
            closed_slow: inner.closed_slow.load(Ordering::Relaxed),
        }
    }
}
