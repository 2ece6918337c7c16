//! A connection's messages on their way into the JetStream history.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use async_nats::jetstream::context::{PublishAckFuture, PublishError, PublishErrorKind};
use async_nats::jetstream::message::PublishMessage;
use async_nats::jetstream::{self as js};
use bytes::Bytes;
use tokio::sync::watch;

use super::jetstream::{Stream, subject};
use crate::state::{NodeState, count};

/// How long a message is retried (with its id, so JetStream stores it
/// once) before its client is told to come back: longer than a stream
/// leader's election.
const PUBLISH_PATIENCE: Duration = Duration::from_secs(20);

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

impl Stream {
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
}
