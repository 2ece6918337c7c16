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
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::header::NATS_SEQUENCE;
use async_nats::jetstream::consumer::{AckPolicy, DeliverPolicy, pull};
use async_nats::jetstream::context::{PublishAckFuture, PublishError, PublishErrorKind};
use async_nats::jetstream::message::PublishMessage;
use async_nats::jetstream::stream::{
    self, DiscardPolicy, LastRawMessageErrorKind, Republish, StorageType,
};
use async_nats::jetstream::{self as js};
use bytes::Bytes;
use futures_util::StreamExt;
use tokio::sync::watch;
use tokio_lockgate::hub::PreparedSink;
use tokio_lockgate::{Message, PreparedMessage};

use super::backlog::Backlog;
use super::continuity::Continuity;
use super::delivery::{Delivery, Stored};
use super::local::base36;
use super::{History, ReplayError, Store, write_all, write_one};
use crate::config::HistoryConfig;
use crate::seq::{Kind, Sequenced};
use crate::state::{NodeState, count};

/// The stream's name.
pub(crate) const STREAM: &str = "LOCKGATE";

const SUBJECT_PREFIX: &str = "lockgate.history";

/// Where the stream republishes what it stored, for the nodes.
const STORED_PREFIX: &str = "lockgate.stored";

/// A subject of the stream no client can name: a node's probe that the
/// broker sends it what the stream stores.
const PROBE_SUBJECT: &str = "lockgate.probe";

/// How long a starting node tries to set the stream up.
const STARTUP_PATIENCE: Duration = Duration::from_secs(30);

/// How long probes may fail after the broker returned before the node
/// opens a new connection to it.
pub(super) const STUCK_CONNECTION: Duration = Duration::from_secs(10);

/// How long a node waits for its probe to come back.
const PROBE_PATIENCE: Duration = Duration::from_secs(10);

/// How long a message is retried (with its id, so JetStream stores it
/// once) before its client is told to come back: longer than a stream
/// leader's election.
const PUBLISH_PATIENCE: Duration = Duration::from_secs(20);

/// How long JetStream remembers message ids, to drop retried duplicates.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(60);

/// A replay spanning more positions than this (of all topics) reads in
/// batches through a consumer rather than message by message.
const BULK_SPAN: u64 = 256;

/// Messages a replay's consumer fetches at once.
const BULK_BATCH: usize = 512;

/// How long a replay's consumer waits for a batch to fill.
const BULK_WAIT: Duration = Duration::from_millis(500);

/// Missed positions read one by one rather than through a consumer.
const FEW: u64 = 32;

/// Replayed frames written between flushes.
const REPLAY_BATCH: usize = 64;

fn subject(topic: &str) -> String {
    format!("{SUBJECT_PREFIX}.{topic}")
}

pub(super) fn topic_of(subject: &str) -> Option<&str> {
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
    /// The broker's returns the delivery has caught up with (see
    /// [`NodeState::broker_returned`]).
    pub(super) caught_up: AtomicU64,
}

fn io_error(what: &str, e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(format!("JetStream {what}: {e}"))
}

pub(super) async fn start(
    config: HistoryConfig,
    state: Arc<NodeState>,
    client: async_nats::Client,
) -> std::io::Result<Arc<History>> {
    // Nodes that start with their cluster find JetStream electing its
    // leaders, and each other creating the stream: they try again.
    let deadline = tokio::time::Instant::now() + STARTUP_PATIENCE;
    loop {
        match set_up(config, &client).await {
            Ok(set_up) => return Ok(set_up.start(config, state)),
            Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => return Err(e),
            Err(e) if tokio::time::Instant::now() >= deadline => return Err(e),
            Err(e) => {
                eprintln!("lockgate-fanout: {e}; trying again");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}

/// What a node learned of the stream, before it delivers.
struct SetUp {
    context: js::Context,
    stream: stream::Stream,
    epoch: String,
    stored: async_nats::Subscriber,
    node: String,
    known_through: u64,
}

/// Creates the stream (or adjusts its limits to this node's), subscribes
/// to what it republishes, and probes that subscription.
async fn set_up(config: HistoryConfig, client: &async_nats::Client) -> std::io::Result<SetUp> {
    let context = js::new(client.clone());
    let replicas = config.replicas.unwrap_or_else(|| {
        // The servers a client learns of are the cluster's.
        let servers = client.server_info().connect_urls.len().max(1);
        if servers >= 3 { 3 } else { 1 }
    });
    let wanted = stream::Config {
        name: STREAM.to_owned(),
        subjects: vec![format!("{SUBJECT_PREFIX}.*"), PROBE_SUBJECT.to_owned()],
        max_messages_per_subject: i64::try_from(config.messages).unwrap_or(i64::MAX),
        max_age: config.max_age.unwrap_or_default(),
        num_replicas: replicas,
        storage: StorageType::File,
        discard: DiscardPolicy::Old,
        duplicate_window: DUPLICATE_WINDOW,
        republish: Some(Republish {
            source: ">".to_owned(),
            destination: format!("{STORED_PREFIX}.>"),
            headers_only: false,
        }),
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
    if info.config.subjects != wanted.subjects || info.config.republish != wanted.republish {
        // JetStream does not change a stream's republishing.
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "JetStream stream {STREAM} exists with other subjects or republishing than \
                 this node needs (made by another version?); remove it to start over \
                 (a new epoch)"
            ),
        ));
    }
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
    let mut stored = client
        .subscribe(format!("{STORED_PREFIX}.>"))
        .await
        .map_err(|e| io_error("subscribe", e))?;
    let node = format!("{:x}", node_id());
    let known_through = probe(&context, &mut stored, &node)
        .await
        .map_err(|e| io_error("probe", e))?;
    Ok(SetUp {
        context,
        stream,
        epoch,
        stored,
        node,
        known_through,
    })
}

impl SetUp {
    fn start(self, config: HistoryConfig, state: Arc<NodeState>) -> Arc<History> {
        let SetUp {
            context,
            stream,
            epoch,
            stored,
            node,
            known_through,
        } = self;
        let history = Arc::new(History {
            epoch,
            backlog: Mutex::new(Backlog::new(
                usize::try_from(config.messages).unwrap_or(usize::MAX),
                config.max_age,
                known_through,
            )),
            store: Store::JetStream(Box::new(Stream {
                context: context.clone(),
                stream,
                node: node.clone(),
                connections: AtomicU64::new(0),
                caught_up: AtomicU64::new(state.broker_returned()),
            })),
            state: Arc::clone(&state),
        });
        tokio::spawn(
            Delivery {
                history: Arc::downgrade(&history),
                context,
                stored,
                node,
                continuity: Continuity::new(known_through),
                last_arrival: tokio::time::Instant::now(),
            }
            .run(state.broker_returns()),
        );
        history
    }
}

/// Publishes a probe into the stream and waits for it to come back
/// republished: from then on the broker sends this node every message
/// stored after it. Returns its position: the node delivers what follows.
pub(super) async fn probe(
    context: &js::Context,
    stored: &mut async_nats::Subscriber,
    node: &str,
) -> Result<u64, String> {
    let ack = context
        .publish(PROBE_SUBJECT, Bytes::from(node.to_owned()))
        .await
        .map_err(|e| e.to_string())?
        .await
        .map_err(|e| e.to_string())?;
    let deadline = tokio::time::Instant::now() + PROBE_PATIENCE;
    loop {
        let next = tokio::time::timeout_at(deadline, stored.next())
            .await
            .map_err(|_| format!("the broker did not republish it within {PROBE_PATIENCE:?}"))?
            .ok_or("the subscription ended")?;
        if sequence(&next, NATS_SEQUENCE) == Some(ack.sequence) {
            return Ok(ack.sequence);
        }
    }
}

/// A sequence number in a republished message's headers.
pub(super) fn sequence(
    message: &async_nats::Message,
    header: async_nats::HeaderName,
) -> Option<u64> {
    message.headers.as_ref()?.get(header)?.as_str().parse().ok()
}

/// A node's id, the prefix of its message ids: a number no other node
/// of the domain is likely to have.
fn node_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.finish()
}

impl Stream {
    /// Whether delivery caught up with the broker's last return: until
    /// then, the backlog may lack what was stored while it was away.
    pub(super) fn caught_up(&self, state: &NodeState) -> bool {
        self.caught_up.load(Ordering::Acquire) >= state.broker_returned()
    }

    /// The stream's newest position, from its leader.
    pub(super) async fn last_position(&self) -> Result<u64, String> {
        self.stream
            .get_info()
            .await
            .map(|info| info.state.last_sequence)
            .map_err(|e| e.to_string())
    }

    /// The stored messages of every topic with a position in
    /// `after + 1 ..= through` (a few read one by one from the leader,
    /// more through a consumer).
    pub(super) async fn read_all(&self, after: u64, through: u64) -> Result<Vec<Stored>, String> {
        let mut found = Vec::new();
        let mut keep = |position: u64, subject: &str, payload: Bytes| {
            if let Some(topic) = topic_of(subject) {
                found.push((position, topic.to_owned(), payload));
            }
        };
        if through.saturating_sub(after) <= FEW {
            for position in after + 1..=through {
                match self.stream.get_raw_message(position).await {
                    Ok(message) => keep(position, message.subject.as_str(), message.payload),
                    // Trimmed, or deleted.
                    Err(e) if matches!(e.kind(), LastRawMessageErrorKind::NoMessageFound) => {}
                    Err(e) => return Err(e.to_string()),
                }
            }
            return Ok(found);
        }
        let consumer = self
            .stream
            .create_consumer(pull::Config {
                filter_subject: format!("{SUBJECT_PREFIX}.*"),
                deliver_policy: DeliverPolicy::ByStartSequence {
                    start_sequence: after + 1,
                },
                ack_policy: AckPolicy::None,
                memory_storage: true,
                num_replicas: 1,
                inactive_threshold: Duration::from_secs(30),
                ..Default::default()
            })
            .await
            .map_err(|e| e.to_string())?;
        let name = consumer.cached_info().name.clone();
        let mut pending = consumer.cached_info().num_pending;
        let result = async {
            while pending > 0 {
                let mut batch = consumer
                    .batch()
                    .max_messages(BULK_BATCH)
                    .expires(BULK_WAIT)
                    .messages()
                    .await
                    .map_err(|e| e.to_string())?;
                let mut any = false;
                while let Some(message) = batch.next().await {
                    let message = message.map_err(|e| e.to_string())?;
                    let info = message.info().map_err(|e| e.to_string())?;
                    if info.stream_sequence > through {
                        return Ok(());
                    }
                    any = true;
                    pending = info.pending;
                    keep(
                        info.stream_sequence,
                        message.subject.as_str(),
                        message.payload.clone(),
                    );
                }
                if !any {
                    return Ok(());
                }
            }
            Ok(())
        }
        .await;
        let _ = self.stream.delete_consumer(&name).await;
        result.map(|()| found)
    }

    /// The stored messages of `topic` with a position in
    /// `after + 1 ..= through`, from the stream's leader.
    pub(super) async fn read(
        &self,
        topic: &str,
        after: u64,
        through: u64,
    ) -> Result<Vec<(u64, Bytes)>, String> {
        let subject = subject(topic);
        let mut found = Vec::new();
        let mut cursor = after + 1;
        while cursor <= through {
            match self
                .stream
                .get_first_raw_message_by_subject(&subject, cursor)
                .await
            {
                Ok(message) if message.sequence <= through => {
                    cursor = message.sequence + 1;
                    found.push((message.sequence, message.payload));
                }
                Ok(_) => break,
                Err(e) if matches!(e.kind(), LastRawMessageErrorKind::NoMessageFound) => break,
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(found)
    }

    /// A connection's publisher: its own message ids and acknowledgements.
    pub(crate) fn publisher(&self, state: Arc<NodeState>) -> Publisher {
        let connection = self.connections.fetch_add(1, Ordering::Relaxed);
        Publisher {
            state,
            context: self.context.clone(),
            ids: format!("{}.{connection:x}", self.node),
            next: 0,
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
        if through - after > BULK_SPAN {
            // Many messages, perhaps: read them in batches through a
            // consumer of this topic, then check with the leader.
            match self.bulk(&subject, cursor, through, ws).await {
                Ok(Some((first, next))) => {
                    anchor.get_or_insert(first);
                    cursor = next;
                }
                Ok(None) => {}
                Err(ReplayError::Closed) => return Err(ReplayError::Closed),
                // The leader reads what the consumer could not.
                Err(e) => eprintln!("lockgate-fanout: replay in batches: {e:?}"),
            }
        }
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

impl Stream {
    /// Writes what a consumer of `subject` from `from` reads, through
    /// `through`, in batches; returns the first position written and the
    /// one after the last (`None` if none was). The consumer may run on a replica
    /// behind the leader, so the caller goes on from there with the
    /// leader.
    async fn bulk<W: PreparedSink>(
        &self,
        subject: &str,
        from: u64,
        through: u64,
        ws: &mut W,
    ) -> Result<Option<(u64, u64)>, ReplayError> {
        let unavailable = |e: &dyn std::fmt::Display| ReplayError::Unavailable(e.to_string());
        let consumer = self
            .stream
            .create_consumer(pull::Config {
                filter_subject: subject.to_owned(),
                deliver_policy: DeliverPolicy::ByStartSequence {
                    start_sequence: from,
                },
                ack_policy: AckPolicy::None,
                memory_storage: true,
                num_replicas: 1,
                inactive_threshold: Duration::from_secs(30),
                ..Default::default()
            })
            .await
            .map_err(|e| unavailable(&e))?;
        let name = consumer.cached_info().name.clone();
        let pending = consumer.cached_info().num_pending;
        let result = async {
            let mut written = None;
            if pending == 0 {
                return Ok(written);
            }
            let mut frames = Vec::with_capacity(BULK_BATCH);
            loop {
                let mut batch = consumer
                    .batch()
                    .max_messages(BULK_BATCH)
                    .expires(BULK_WAIT)
                    .messages()
                    .await
                    .map_err(|e| unavailable(&e))?;
                frames.clear();
                let mut done = true;
                while let Some(message) = batch.next().await {
                    let message = message.map_err(|e| unavailable(&e))?;
                    let info = message.info().map_err(|e| unavailable(&e))?;
                    let position = info.stream_sequence;
                    if position > through {
                        break;
                    }
                    written = Some((written.map_or(position, |(first, _)| first), position + 1));
                    if let Some(frame) = frame(position, &message.payload) {
                        frames.push(frame);
                    }
                    // The last the consumer sees (as of this message).
                    done = info.pending == 0 || position == through;
                    if done {
                        break;
                    }
                }
                write_all(ws, &frames).await?;
                if done || frames.is_empty() {
                    return Ok(written);
                }
            }
        }
        .await;
        let _ = self.stream.delete_consumer(&name).await;
        result
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

/// A connection's messages on their way into the stream, one at a time:
/// a message is sent once the one before it is stored, so that a retry
/// (after a lost acknowledgement, or through a leader's election) never
/// lands behind a later message of the same client.
#[derive(Debug)]
pub(crate) struct Publisher {
    state: Arc<NodeState>,
    context: js::Context,
    ids: String,
    next: u64,
    failure: watch::Sender<Option<String>>,
}

impl Publisher {
    /// Stores one message, retrying it (with its id: stored at most once)
    /// until [`PUBLISH_PATIENCE`] runs out; then the connection is done
    /// publishing, and [`failures`](Self::failures) says why.
    pub(crate) async fn publish(&mut self, topic: &str, stored: Bytes) -> Result<(), String> {
        if let Some(why) = self.failure.borrow().clone() {
            return Err(why);
        }
        let id = format!("{}.{:x}", self.ids, self.next);
        self.next += 1;
        let subject = subject(topic);
        let started = tokio::time::Instant::now();
        let mut wait = Duration::from_millis(50);
        loop {
            // Handed to a client that is away, a message would wait in its
            // buffer and could be stored long after: after its sender, told
            // 1013, resumed elsewhere with its next message.
            let connected = self.context.client().connection_state()
                == async_nats::connection::State::Connected;
            let attempt = if connected {
                send(&self.context, &subject, &stored, &id).await
            } else {
                Err(PublishError::new(PublishErrorKind::BrokenPipe))
            };
            let error = match attempt {
                Ok(ack) => match ack.await {
                    Ok(_) => {
                        count(&self.state.counters.relayed_out);
                        return Ok(());
                    }
                    Err(e) => e.to_string(),
                },
                Err(e) => e.to_string(),
            };
            if started.elapsed() > PUBLISH_PATIENCE {
                let why = format!("JetStream did not store a message: {error}");
                let _ = self.failure.send(Some(why.clone()));
                return Err(why);
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(Duration::from_secs(1));
        }
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
) -> Result<PublishAckFuture, PublishError> {
    context
        .send_publish(
            subject.to_owned(),
            PublishMessage::build()
                .payload(stored.clone())
                .message_id(id),
        )
        .await
}
