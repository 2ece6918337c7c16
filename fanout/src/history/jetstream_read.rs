//! Reading the JetStream history: replay for a resuming client (from the
//! leader message by message, or in batches through a consumer), and what
//! a node missed of the stream.

use std::time::Duration;

use async_nats::jetstream::consumer::{AckPolicy, DeliverPolicy, pull};
use async_nats::jetstream::stream::LastRawMessageErrorKind;
use bytes::Bytes;
use futures_util::StreamExt;
use tokio_lockgate::hub::PreparedSink;
use tokio_lockgate::{Message, PreparedMessage};

use super::delivery::Stored;
use super::jetstream::{SUBJECT_PREFIX, Stream, subject, topic_of};
use super::{ReplayError, write_all, write_one};
use crate::seq::{Kind, Sequenced};

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

impl Stream {
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
            .reader(&format!("{SUBJECT_PREFIX}.*"), after + 1)
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
        let held = |message: &Option<async_nats::jetstream::message::StreamMessage>,
                    position: u64| {
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
            .reader(subject, from)
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

impl Stream {
    /// A short-lived consumer that reads `filter` from position `from` in
    /// batches, unacknowledged, in memory on one server; the caller deletes
    /// it (and the server does after 30 s idle).
    async fn reader(
        &self,
        filter: &str,
        from: u64,
    ) -> Result<
        async_nats::jetstream::consumer::Consumer<pull::Config>,
        async_nats::jetstream::stream::ConsumerError,
    > {
        self.stream
            .create_consumer(pull::Config {
                filter_subject: filter.to_owned(),
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
    }
}
