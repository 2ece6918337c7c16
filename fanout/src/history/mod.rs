//! [`History`]: positions for every message of a topic, and replay for a
//! client that resumes after one. The owner of the sequenced delivery path:
//!
//! - a client's message goes to the store ([`Publisher`]): JetStream with
//!   a broker, else the node's own sequencer; it counts as accepted once
//!   the store has it;
//! - one task per node takes the store's messages in position order and
//!   [`deliver`](History::deliver)s each: into the [`Backlog`], to the
//!   hub's subscribers of its `lockgate.seq.v1` frame, and to those of the
//!   plain message;
//! - a resuming connection subscribes first, then [`replay`](History::replay)s
//!   what it missed (from the backlog, and from the store for what is
//!   older), then forwards the live queue, skipping what it replayed
//!   ([`SkipThrough`](resume::SkipThrough)).

mod backlog;
#[cfg(feature = "nats")]
mod continuity;
#[cfg(feature = "nats")]
mod delivery;
#[cfg(feature = "nats")]
mod jetstream;
#[cfg(feature = "nats")]
mod jetstream_publish;
#[cfg(feature = "nats")]
mod jetstream_read;
mod local;

use std::io;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use bytes::Bytes;
use tokio_lockgate::hub::PreparedSink;
use tokio_lockgate::{Message, PreparedMessage, Utf8Bytes};

use crate::config::HistoryConfig;
use crate::seq::{Kind, Sequenced, Since};
use crate::state::{NodeState, count};
use backlog::{Backlog, Plan};
pub(crate) mod resume;

/// A node's history: its epoch, its recent messages, and the store behind
/// them.
#[derive(Debug)]
pub(crate) struct History {
    epoch: String,
    backlog: Mutex<Backlog>,
    store: Store,
    state: Arc<NodeState>,
}

#[derive(Debug)]
enum Store {
    /// A standalone node: positions are this process's.
    Local(local::Sequencer),
    /// Positions are a JetStream stream's sequence numbers.
    #[cfg(feature = "nats")]
    JetStream(Box<jetstream::Stream>),
}

/// Why a client's `since` cannot be served.
#[derive(Debug)]
pub(crate) enum ReplayError {
    /// The position is gone, or of another epoch: close with 4001.
    Resync,
    /// The store did not answer: the client should try again (1013).
    Unavailable(String),
    /// Writing to the client failed: it is gone.
    Closed,
}

/// What a client's message becomes in the store: its kind, then its
/// payload; the `lockgate.seq.v1` frame is its position then this.
pub(crate) fn stored_form(msg: &Message) -> Option<Bytes> {
    let (kind, payload) = match msg {
        Message::Text(text) => (Kind::Text, text.as_bytes()),
        Message::Binary(data) => (Kind::Binary, data),
        _ => return None,
    };
    let mut stored = Vec::with_capacity(1 + payload.len());
    stored.push(kind.byte());
    stored.extend_from_slice(payload);
    Some(stored.into())
}

/// The hub topic of `topic`'s `lockgate.seq.v1` subscribers. (`:` is not
/// in topic names.)
pub(crate) fn sequenced_topic(topic: &str) -> String {
    format!("seq:{topic}")
}

impl History {
    /// Starts the history: on JetStream when `nats` is given, in memory
    /// otherwise; the delivery task runs until the node's state is dropped.
    pub(crate) async fn start(
        config: HistoryConfig,
        state: Arc<NodeState>,
        #[cfg(feature = "nats")] nats: Option<&async_nats::Client>,
    ) -> io::Result<Arc<Self>> {
        #[cfg(feature = "nats")]
        if let Some(client) = nats {
            return jetstream::start(config, state, client.clone()).await;
        }
        Ok(local::start(config, state))
    }

    /// The epoch clients name in `since`.
    pub(crate) fn epoch(&self) -> &str {
        &self.epoch
    }

    /// Whether the node delivers everything the store holds from now on:
    /// not while it catches up after the broker came back. Until then it
    /// takes no client.
    pub(crate) fn caught_up(&self) -> bool {
        match &self.store {
            Store::Local(_) => true,
            #[cfg(feature = "nats")]
            Store::JetStream(stream) => stream.caught_up(&self.state),
        }
    }

    /// A connection's way into the store.
    pub(crate) fn publisher(&self) -> Publisher {
        match &self.store {
            Store::Local(sequencer) => Publisher::Local(sequencer.clone()),
            #[cfg(feature = "nats")]
            Store::JetStream(stream) => {
                Publisher::JetStream(Box::new(stream.publisher(Arc::clone(&self.state))))
            }
        }
    }

    /// Delivers one stored message: called by the delivery task, in
    /// position order. `stored` is the kind byte, then the payload.
    pub(crate) async fn deliver(&self, topic: &str, position: u64, stored: &[u8]) {
        let Some((&kind_byte, payload)) = stored.split_first() else {
            count(&self.state.counters.relay_errors);
            return;
        };
        let Some(kind) = Kind::from_byte(kind_byte) else {
            count(&self.state.counters.relay_errors);
            return;
        };
        let frame = Sequenced::encode(position, kind, payload);
        let plain = frame.slice(crate::seq::HEADER_LEN..);
        let plain = match kind {
            Kind::Binary => Message::Binary(plain),
            Kind::Text => match Utf8Bytes::try_from(plain) {
                Ok(text) => Message::Text(text),
                Err(_) => {
                    count(&self.state.counters.relay_errors);
                    return;
                }
            },
        };
        let sequenced = PreparedMessage::new(Message::Binary(frame));
        // In the backlog before the hub: a connection that subscribes after
        // the check below finds it there.
        self.lock()
            .push(topic, position, sequenced.clone(), Instant::now());
        let hub = &self.state.hub;
        let sequenced_topic = sequenced_topic(topic);
        if hub.subscribers(&sequenced_topic) > 0 {
            hub.publish(&sequenced_topic, &sequenced).await;
        }
        if hub.subscribers(topic) > 0 {
            hub.publish(topic, &PreparedMessage::new(plain)).await;
        }
        count(&self.state.counters.relayed_in);
    }

    /// Writes to `ws` every message of `topic` after `since` (flushed),
    /// and returns the position the live queue must skip through. The
    /// connection subscribed to the live queue before calling this.
    pub(crate) async fn replay<W: PreparedSink>(
        &self,
        topic: &str,
        since: &Since,
        ws: &mut W,
    ) -> Result<u64, ReplayError> {
        if since.epoch() != self.epoch {
            return Err(ReplayError::Resync);
        }
        if !self.caught_up() {
            return Err(ReplayError::Unavailable(
                "catching up with the broker".to_owned(),
            ));
        }
        let after = since.position();
        let plan = self.lock().plan(topic, after, Instant::now());
        let (from_memory, through) = match plan {
            Plan::Memory(frames) => (frames, after),
            Plan::Store {
                after,
                through,
                then,
            } => {
                let fetched = match &self.store {
                    // Evicted from the only copy: only "from the oldest
                    // held" can be served.
                    Store::Local(_) if after == 0 => through,
                    Store::Local(_) => return Err(ReplayError::Resync),
                    #[cfg(feature = "nats")]
                    Store::JetStream(stream) => stream.replay(topic, after, through, ws).await?,
                };
                (then, fetched.max(after))
            }
        };
        let last = from_memory
            .last()
            .and_then(position_of)
            .unwrap_or(through)
            .max(through);
        write_all(ws, &from_memory).await?;
        Ok(last)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Backlog> {
        self.backlog.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The position of a `lockgate.seq.v1` frame.
pub(crate) fn position_of(frame: &PreparedMessage) -> Option<u64> {
    match frame.message() {
        Message::Binary(data) => Sequenced::position_of(data),
        _ => None,
    }
}

/// Writes `frames` and flushes once.
pub(crate) async fn write_all<W: PreparedSink>(
    ws: &mut W,
    frames: &[PreparedMessage],
) -> Result<(), ReplayError> {
    for frame in frames {
        write_one(ws, frame).await?;
    }
    ws.flush().await.map_err(|_| ReplayError::Closed)
}

/// Writes one frame, flushing first when the write buffer is full.
pub(crate) async fn write_one<W: PreparedSink>(
    ws: &mut W,
    frame: &PreparedMessage,
) -> Result<(), ReplayError> {
    match ws.write_prepared(frame).await {
        Ok(()) => Ok(()),
        Err(tokio_lockgate::Error::WriteBufferFull(_)) => {
            ws.flush().await.map_err(|_| ReplayError::Closed)?;
            ws.write_prepared(frame)
                .await
                .map_err(|_| ReplayError::Closed)
        }
        Err(_) => Err(ReplayError::Closed),
    }
}

/// A connection's way into the store.
#[derive(Debug)]
pub(crate) enum Publisher {
    Local(local::Sequencer),
    #[cfg(feature = "nats")]
    JetStream(Box<jetstream_publish::Publisher>),
}

impl Publisher {
    /// Hands a client's message to the store; waits while the store's
    /// queue is full. `Err` when the store refused it for good: the client
    /// should be told (1013).
    pub(crate) async fn publish(&mut self, topic: &str, msg: &Message) -> Result<(), String> {
        let Some(stored) = stored_form(msg) else {
            return Ok(());
        };
        match self {
            Publisher::Local(sequencer) => sequencer.append(topic, stored).await,
            #[cfg(feature = "nats")]
            Publisher::JetStream(publisher) => publisher.publish(topic, stored).await,
        }
    }

    /// Resolves with why, once the store refused one of this
    /// connection's messages for good (it is not delivered, and neither
    /// is anything the connection sends after it): the client should be
    /// told to come back. Never, for a store that cannot refuse.
    pub(crate) fn refused(&self) -> impl Future<Output = String> + Send + 'static {
        let failures: Option<tokio::sync::watch::Receiver<Option<String>>> = match self {
            Publisher::Local(_) => None,
            #[cfg(feature = "nats")]
            Publisher::JetStream(publisher) => Some(publisher.failures()),
        };
        async move {
            if let Some(mut failures) = failures {
                if let Ok(why) = failures.wait_for(Option::is_some).await {
                    return why.clone().unwrap_or_default();
                }
            }
            std::future::pending().await
        }
    }
}
