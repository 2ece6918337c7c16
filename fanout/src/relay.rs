//! [`Relay`]: a node's link to the NATS broker. Messages of local clients
//! go out under their topic's subject; messages of other nodes come in and
//! become one [`PreparedMessage`] each for the local hub.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_nats::{ConnectOptions, Event, ServerAddr};
use bytes::Bytes;
use futures_util::StreamExt;
use tokio_lockgate::{Message, PreparedMessage, Utf8Bytes};

use crate::state::{NodeState, count};
use crate::topic::{self, Kind};

/// Commands a node's client may buffer towards the broker; past it, a
/// publishing connection waits (and stops reading its client), so a
/// broker that falls behind, or is away, costs bounded memory.
const CLIENT_CAPACITY: usize = 4096;

/// The connection to the broker.
#[derive(Debug, Clone)]
pub(crate) struct Relay {
    client: async_nats::Client,
    state: Arc<NodeState>,
}

impl Relay {
    /// Connects to the broker at `url` (a comma-separated list names the
    /// servers of a cluster) and, if `relay_topics`, starts relaying what
    /// other nodes publish into the local hub. (A node with a history
    /// delivers from the history's stream instead.)
    pub(crate) async fn connect(
        url: &str,
        state: Arc<NodeState>,
        relay_topics: bool,
    ) -> std::io::Result<Self> {
        let servers = url
            .split(',')
            .map(|server| server.trim().parse::<ServerAddr>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("NATS server URL {url}: {e}"),
                )
            })?;
        let events = Arc::clone(&state);
        // The event callback needs the client, which exists only once
        // connected.
        let connected: Arc<OnceLock<async_nats::Client>> = Arc::default();
        let reconnected = Arc::clone(&connected);
        let client = ConnectOptions::new()
            .name("lockgate-fanout")
            // A node delivers its own clients' messages locally: the broker
            // must not send them back.
            .no_echo()
            .max_reconnects(None)
            // The default backoff grows to seconds; a node without its
            // broker refuses clients, so it retries briskly.
            .reconnect_delay_callback(|attempts| {
                Duration::from_millis((attempts as u64 * 100).min(1000))
            })
            .client_capacity(CLIENT_CAPACITY)
            .event_callback(move |event| {
                let state = Arc::clone(&events);
                let client = reconnected.get().cloned();
                async move {
                    match event {
                        Event::Disconnected => state.broker_lost(),
                        Event::Connected => {
                            // The client subscribes again by itself; clients
                            // are accepted once the server has it.
                            if let Some(client) = client {
                                if let Err(e) = sync(&client).await {
                                    eprintln!("lockgate-fanout: broker: {e}");
                                }
                            }
                            state.broker_back();
                        }
                        other => eprintln!("lockgate-fanout: broker: {other}"),
                    }
                }
            })
            .connect(servers)
            .await
            .map_err(|e| std::io::Error::other(format!("NATS server at {url}: {e}")))?;
        if relay_topics {
            let subscription = client
                .subscribe(topic::all_subjects())
                .await
                .map_err(|e| std::io::Error::other(format!("NATS subscribe: {e}")))?;
            tokio::spawn(deliver_relayed(subscription, Arc::clone(&state)));
        }
        sync(&client).await?;
        let _ = connected.set(client.clone());
        Ok(Self { client, state })
    }

    /// The connection to the broker.
    pub(crate) fn client(&self) -> &async_nats::Client {
        &self.client
    }

    /// Publishes a local client's message to the other nodes. Waits while
    /// the client's buffer towards the broker is full.
    pub(crate) async fn publish(&self, topic: &str, msg: &Message) {
        let (kind, payload) = match msg {
            Message::Text(text) => (Kind::Text, Bytes::from(text.clone())),
            Message::Binary(data) => (Kind::Binary, data.clone()),
            _ => return,
        };
        let counters = &self.state.counters;
        match self
            .client
            .publish(topic::subject(kind, topic), payload)
            .await
        {
            Ok(()) => count(&counters.relayed_out),
            Err(e) => {
                count(&counters.relay_errors);
                eprintln!("lockgate-fanout: publish to the broker failed: {e}");
            }
        }
    }

    /// Hands what local clients published to the broker before the node
    /// exits, waiting at most `limit`.
    pub(crate) async fn flush(&self, limit: Duration) {
        match tokio::time::timeout(limit, self.client.flush()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("lockgate-fanout: flushing to the broker failed: {e}"),
            Err(_) => eprintln!("lockgate-fanout: flushing to the broker took over {limit:?}"),
        }
    }
}

/// Waits until the server has processed everything this client sent so
/// far, the subscription included: from then on no other node's message is
/// missed. (A flush only puts the bytes on the socket.) A request nobody
/// answers comes back as "no responders" from the server itself, after the
/// commands before it.
async fn sync(client: &async_nats::Client) -> std::io::Result<()> {
    use async_nats::RequestErrorKind;
    match client.request(topic::SYNC_SUBJECT, Bytes::new()).await {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == RequestErrorKind::NoResponders => Ok(()),
        Err(e) => Err(std::io::Error::other(format!("NATS round trip: {e}"))),
    }
}

/// Delivers every message from other nodes to the local subscribers of its
/// topic, in the order the broker hands them over.
async fn deliver_relayed(mut subscription: async_nats::Subscriber, state: Arc<NodeState>) {
    while let Some(relayed) = subscription.next().await {
        let Some((kind, topic)) = topic::parse_subject(relayed.subject.as_str()) else {
            count(&state.counters.relay_errors);
            continue;
        };
        let msg = match kind {
            Kind::Binary => Message::Binary(relayed.payload),
            Kind::Text => match Utf8Bytes::try_from(relayed.payload) {
                Ok(text) => Message::Text(text),
                Err(_) => {
                    count(&state.counters.relay_errors);
                    continue;
                }
            },
        };
        state.hub.publish(topic, &PreparedMessage::new(msg)).await;
        // Counted once in every queue: a drain reports it as accepted.
        count(&state.counters.relayed_in);
    }
    eprintln!("lockgate-fanout: the broker subscription ended");
}
