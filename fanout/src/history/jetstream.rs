//! The history on NATS JetStream: one stream, `LOCKGATE`, with a subject
//! per topic (`lockgate.history.NAME`), its last N messages per subject,
//! replicated over the broker's cluster. A message's position is its
//! stream sequence number: the same on every node, strictly increasing
//! within a topic. The epoch is the stream's creation time, so it changes
//! when the stream is recreated.
//!
//! Every node delivers from one ordered consumer of the stream, the node
//! that took the message from its client included: a message is delivered
//! only once JetStream stored it. Replay of what a node's backlog does not
//! hold reads the stream's leader one message at a time (a read from a
//! replica could lag behind what the node delivered).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_nats::jetstream::consumer::DeliverPolicy;
use async_nats::jetstream::consumer::push::OrderedConfig;
use async_nats::jetstream::context::PublishAckFuture;
use async_nats::jetstream::message::PublishMessage;
use async_nats::jetstream::stream::{self, DiscardPolicy, LastRawMessageErrorKind, StorageType};
use async_nats::jetstream::{self as js};
use bytes::Bytes;
use futures_util::StreamExt;
use tokio::sync::{mpsc, watch};
use tokio_lockgate::hub::PreparedSink;
use tokio_lockgate::{Message, PreparedMessage};

use super::backlog::Backlog;
use super::local::base36;
use super::{History, ReplayError, Store, write_all, write_one};
use crate::config::HistoryConfig;
use crate::seq::{Kind, Sequenced};
use crate::state::{NodeState, count};

/// The stream's name.
pub(crate) const STREAM: &str = "LOCKGATE";

const SUBJECT_PREFIX: &str = "lockgate.history";

/// How long a message is retried (with its id, so JetStream stores it
/// once) before its client is told to come back: longer than a stream
/// leader's election.
const PUBLISH_PATIENCE: Duration = Duration::from_secs(20);

/// How long JetStream remembers message ids, to drop retried duplicates.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(60);

/// Messages of one client sent to JetStream and not yet acknowledged;
/// past it, the client is not read until acknowledgements come back.
const IN_FLIGHT: usize = 256;

/// Replayed frames written between flushes.
const REPLAY_BATCH: usize = 64;

fn subject(topic: &str) -> String {
    format!("{SUBJECT_PREFIX}.{topic}")
}

fn topic_of(subject: &str) -> Option<&str> {
    let topic = subject.strip_prefix(SUBJECT_PREFIX)?.strip_prefix('.')?;
    crate::topic::is_valid(topic).then_some(topic)
}

/// The node's handle on the stream.
#[derive(Debug)]
pub(crate) struct Stream {
    context: js::Context,
    stream: stream::Stream,
    /// Prefix of this node's message ids.
    node: String,
    connections: AtomicU64,
}

fn io_error(what: &str, e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(format!("JetStream {what}: {e}"))
}

pub(super) async fn start(
    config: HistoryConfig,
    state: Arc<NodeState>,
    client: async_nats::Client,
) -> std::io::Result<Arc<History>> {
    let context = js::new(client.clone());
    let replicas = config.replicas.unwrap_or_else(|| {
        // The servers a client learns of are the cluster's.
        let servers = client.server_info().connect_urls.len().max(1);
        if servers >= 3 { 3 } else { 1 }
    });
    let wanted = stream::Config {
        name: STREAM.to_owned(),
        subjects: vec![format!("{SUBJECT_PREFIX}.*")],
        max_messages_per_subject: i64::try_from(config.messages).unwrap_or(i64::MAX),
        max_age: config.max_age.unwrap_or_default(),
        num_replicas: replicas,
        storage: StorageType::File,
        discard: DiscardPolicy::Old,
        duplicate_window: DUPLICATE_WINDOW,
        ..Default::default()
    };
    let mut stream = context
        .get_or_create_stream(wanted.clone())
        .await
        .map_err(|e| io_error("stream", e))?;
    let mut info = stream
        .info()
        .await
        .map_err(|e| io_error("stream info", e))?
        .clone();
    // Another node (or an earlier run) made it: its limits follow this
    // node's options; its replicas and epoch stay.
    if info.config.max_messages_per_subject != wanted.max_messages_per_subject
        || info.config.max_age != wanted.max_age
    {
        let mut updated = info.config.clone();
        updated.max_messages_per_subject = wanted.max_messages_per_subject;
        updated.max_age = wanted.max_age;
        info = context
            .update_stream(updated)
            .await
            .map_err(|e| io_error("stream update", e))?;
    }
    let epoch = format!(
        "j{}",
        base36(u64::try_from(info.created.unix_timestamp_nanos()).unwrap_or_default())
    );
    let known_after = info.state.last_sequence;
    let history = Arc::new(History {
        epoch,
        backlog: Mutex::new(Backlog::new(
            usize::try_from(config.messages).unwrap_or(usize::MAX),
            config.max_age,
            known_after,
        )),
        store: Store::JetStream(Box::new(Stream {
            context,
            stream: stream.clone(),
            node: format!("{:x}", node_id()),
            connections: AtomicU64::new(0),
        })),
        state,
    });
    let messages = consume_from(&stream, &client, known_after + 1)
        .await
        .map_err(|e| io_error("consumer", e))?;
    tokio::spawn(deliver_stored(
        Arc::downgrade(&history),
        stream,
        client,
        messages,
        known_after,
    ));
    Ok(history)
}

/// A number no other node of the domain is likely to have.
fn node_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.finish()
}

type Ordered = js::consumer::push::Ordered;

async fn consume_from(
    stream: &stream::Stream,
    client: &async_nats::Client,
    start: u64,
) -> Result<Ordered, async_nats::Error> {
    let consumer = stream
        .create_consumer(OrderedConfig {
            deliver_subject: client.new_inbox(),
            filter_subject: format!("{SUBJECT_PREFIX}.*"),
            deliver_policy: DeliverPolicy::ByStartSequence {
                start_sequence: start,
            },
            ..Default::default()
        })
        .await?;
    Ok(consumer.messages().await?)
}

/// Delivers every stored message, in stream order, for as long as the node
/// runs. The ordered consumer recovers from gaps and lost servers by
/// itself; should its stream end, a new one starts after the last
/// position delivered.
async fn deliver_stored(
    history: Weak<History>,
    stream: stream::Stream,
    client: async_nats::Client,
    mut messages: Ordered,
    mut delivered: u64,
) {
    loop {
        while let Some(next) = messages.next().await {
            let Some(history) = history.upgrade() else {
                return;
            };
            let message = match next {
                Ok(message) => message,
                Err(e) => {
                    eprintln!("lockgate-fanout: history consumer: {e}");
                    continue;
                }
            };
            let position = match message.info() {
                Ok(info) => info.stream_sequence,
                Err(e) => {
                    eprintln!("lockgate-fanout: history message without its position: {e}");
                    continue;
                }
            };
            // Redelivered after the consumer recovered.
            if position <= delivered {
                continue;
            }
            delivered = position;
            match topic_of(message.subject.as_str()) {
                Some(topic) => history.deliver(topic, position, &message.payload).await,
                None => count(&history.state.counters.relay_errors),
            }
        }
        loop {
            if history.strong_count() == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
            match consume_from(&stream, &client, delivered + 1).await {
                Ok(fresh) => {
                    messages = fresh;
                    break;
                }
                Err(e) => eprintln!("lockgate-fanout: history consumer: {e}; retrying"),
            }
        }
    }
}

impl Stream {
    /// A connection's publisher: its own message ids and acknowledgements.
    pub(crate) fn publisher(&self, state: Arc<NodeState>) -> Publisher {
        let connection = self.connections.fetch_add(1, Ordering::Relaxed);
        Publisher {
            state,
            context: self.context.clone(),
            ids: format!("{}.{connection:x}", self.node),
            next: 0,
            acks: None,
            failure: watch::channel(None).0,
        }
    }

    /// Writes to `ws` the messages of `topic` with a position in
    /// `after + 1 ..= through`, from the stream's leader. `after` must
    /// still be held (unless 0: from the oldest held), and still be held
    /// once they are read, which proves that none was dropped meanwhile
    /// (JetStream drops a subject's oldest first).
    pub(super) async fn replay<W: PreparedSink>(
        &self,
        topic: &str,
        after: u64,
        through: u64,
        ws: &mut W,
    ) -> Result<u64, ReplayError> {
        let subject = subject(topic);
        let first_from = |sequence: u64| {
            let subject = &subject;
            async move {
                match self
                    .stream
                    .get_first_raw_message_by_subject(subject, sequence)
                    .await
                {
                    Ok(message) => Ok(Some(message)),
                    Err(e) if matches!(e.kind(), LastRawMessageErrorKind::NoMessageFound) => {
                        Ok(None)
                    }
                    Err(e) => Err(ReplayError::Unavailable(format!("history read: {e}"))),
                }
            }
        };
        let held = |message: &Option<js::message::StreamMessage>, position: u64| {
            message.as_ref().is_some_and(|m| m.sequence == position)
        };
        let mut anchor = None;
        if after > 0 {
            if !held(&first_from(after).await?, after) {
                return Err(ReplayError::Resync);
            }
            anchor = Some(after);
        }
        let mut cursor = after + 1;
        let mut batch = Vec::with_capacity(REPLAY_BATCH);
        while cursor <= through {
            let Some(message) = first_from(cursor).await? else {
                break;
            };
            if message.sequence > through {
                break;
            }
            anchor.get_or_insert(message.sequence);
            cursor = message.sequence + 1;
            if let Some(frame) = frame(message.sequence, &message.payload) {
                batch.push(frame);
            }
            if batch.len() == REPLAY_BATCH {
                write_all(ws, &batch).await?;
                batch.clear();
            }
        }
        for frame in &batch {
            write_one(ws, frame).await?;
        }
        if let Some(anchor) = anchor {
            if !held(&first_from(anchor).await?, anchor) {
                return Err(ReplayError::Resync);
            }
        }
        Ok(through)
    }
}

/// The `lockgate.seq.v1` frame of a stored message.
fn frame(position: u64, stored: &[u8]) -> Option<PreparedMessage> {
    let (&kind, payload) = stored.split_first()?;
    let kind = Kind::from_byte(kind)?;
    Some(PreparedMessage::new(Message::Binary(Sequenced::encode(
        position, kind, payload,
    ))))
}

/// A connection's messages on their way into the stream.
#[derive(Debug)]
pub(crate) struct Publisher {
    state: Arc<NodeState>,
    context: js::Context,
    ids: String,
    next: u64,
    /// To the task that waits for acknowledgements, started with the
    /// connection's first message.
    acks: Option<mpsc::Sender<Pending>>,
    failure: watch::Sender<Option<String>>,
}

struct Pending {
    subject: String,
    stored: Bytes,
    id: String,
    ack: PublishAckFuture,
}

impl Publisher {
    /// Sends one message to the stream; its acknowledgement is awaited
    /// by the connection's acknowledgement task, in order.
    pub(crate) async fn publish(&mut self, topic: &str, stored: Bytes) -> Result<(), String> {
        if let Some(why) = self.failure.borrow().clone() {
            return Err(why);
        }
        let id = format!("{}.{:x}", self.ids, self.next);
        self.next += 1;
        let subject = subject(topic);
        let ack = send(&self.context, &subject, &stored, &id)
            .await
            .map_err(|e| format!("publish to JetStream: {e}"))?;
        let acks = self.acks.get_or_insert_with(|| {
            let (acks, pending) = mpsc::channel(IN_FLIGHT);
            tokio::spawn(await_acks(
                Arc::clone(&self.state),
                self.context.clone(),
                pending,
                self.failure.clone(),
            ));
            acks
        });
        acks.send(Pending {
            subject,
            stored,
            id,
            ack,
        })
        .await
        .map_err(|_| "the acknowledgement task ended".to_owned())
    }

    /// Resolves once JetStream refused one of this connection's messages
    /// for good, with why.
    pub(crate) fn failures(&self) -> watch::Receiver<Option<String>> {
        self.failure.subscribe()
    }
}

async fn send(
    context: &js::Context,
    subject: &str,
    stored: &Bytes,
    id: &str,
) -> Result<PublishAckFuture, async_nats::jetstream::context::PublishError> {
    context
        .send_publish(
            subject.to_owned(),
            PublishMessage::build()
                .payload(stored.clone())
                .message_id(id),
        )
        .await
}

/// Waits for each acknowledgement in order, retrying a message that was
/// not acknowledged (same id: stored at most once) until
/// [`PUBLISH_PATIENCE`] runs out; then reports the failure and stops.
async fn await_acks(
    state: Arc<NodeState>,
    context: js::Context,
    mut pending: mpsc::Receiver<Pending>,
    failure: watch::Sender<Option<String>>,
) {
    let mut last_position = 0;
    while let Some(Pending {
        subject,
        stored,
        id,
        mut ack,
    }) = pending.recv().await
    {
        let started = tokio::time::Instant::now();
        let mut wait = Duration::from_millis(50);
        let position = loop {
            let error = match ack.await {
                Ok(ack) => break ack.sequence,
                Err(e) => e.to_string(),
            };
            if started.elapsed() > PUBLISH_PATIENCE {
                let _ = failure.send(Some(format!("JetStream did not store a message: {error}")));
                return;
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(Duration::from_secs(1));
            ack = loop {
                match send(&context, &subject, &stored, &id).await {
                    Ok(ack) => break ack,
                    Err(e) if started.elapsed() > PUBLISH_PATIENCE => {
                        let _ = failure.send(Some(format!("JetStream publish: {e}")));
                        return;
                    }
                    Err(_) => tokio::time::sleep(wait).await,
                }
            };
        };
        if position < last_position {
            // A retried message stored after a later one of the same
            // client: positions stay unique, its order did not.
            eprintln!(
                "lockgate-fanout: a client's message was stored out of order after a JetStream \
                 failover ({position} after {last_position})"
            );
        }
        last_position = last_position.max(position);
        count(&state.counters.relayed_out);
    }
}
