//! The history on NATS JetStream: one stream, `LOCKGATE`, with a subject
//! per topic (`lockgate.history.NAME`), its last N messages per subject,
//! replicated over the broker's cluster. A message's position is its
//! stream sequence number: the same on every node, strictly increasing
//! within a topic. The epoch is the stream's creation time, so it changes
//! when the stream is recreated.
//!
//! The stream republishes each message it stored, with its position, to
//! `lockgate.stored.>`: every node delivers from there
//! ([`Delivery`]), the node that took the
//! message from its client included, so a message is delivered only once
//! JetStream stored it. This file sets the stream up and probes that
//! subscription; reads are in `jetstream_read.rs`, a client's publishing
//! in `jetstream_publish.rs`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::header::NATS_SEQUENCE;
use async_nats::jetstream::stream::{self, DiscardPolicy, Republish, StorageType};
use async_nats::jetstream::{self as js};
use bytes::Bytes;
use futures_util::StreamExt;

use super::backlog::Backlog;
use super::continuity::Continuity;
use super::delivery::Delivery;
use super::local::base36;
use super::{History, Store};
use crate::config::HistoryConfig;
use crate::state::NodeState;

/// The stream's name.
pub(crate) const STREAM: &str = "LOCKGATE";

pub(super) const SUBJECT_PREFIX: &str = "lockgate.history";

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

/// How long JetStream remembers message ids, to drop retried duplicates.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(60);

pub(super) fn subject(topic: &str) -> String {
    format!("{SUBJECT_PREFIX}.{topic}")
}

pub(super) fn topic_of(subject: &str) -> Option<&str> {
    let topic = subject.strip_prefix(SUBJECT_PREFIX)?.strip_prefix('.')?;
    crate::topic::is_valid(topic).then_some(topic)
}

/// The node's handle on the stream.
#[derive(Debug)]
pub(crate) struct Stream {
    pub(super) context: js::Context,
    pub(super) stream: stream::Stream,
    /// Prefix of this node's message ids.
    pub(super) node: String,
    pub(super) connections: AtomicU64,
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
}
