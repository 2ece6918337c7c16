//! One client: the opening handshake (which names its topic), then its
//! messages published, and the topic's messages forwarded to it, until it
//! leaves or the node drains.

use std::sync::Arc;

use futures_util::StreamExt;
use tokio::net::TcpStream;
use tokio_lockgate::handshake::ErrorResponse;
use tokio_lockgate::http::{Request, Response, StatusCode};
use tokio_lockgate::{PreparedMessage, ServerOptions, accept_async_with};

use crate::config::NodeConfig;
use crate::history::{History, Publisher, resume, sequenced_topic};
use crate::relay::Relay;
use crate::scrape;
use crate::seq::{self, Since};
use crate::state::{NodeState, count};
use crate::topic;

/// Which way a node's messages travel.
#[derive(Debug, Clone)]
pub(crate) enum Path {
    /// To the local hub at once, and to the other nodes through the relay
    /// (if any): no positions.
    Direct(Option<Relay>),
    /// Through the history, which gives each message its position.
    History(Arc<History>),
}

/// What the handshake learned of a client.
struct Client {
    topic: String,
    subscriber: tokio_lockgate::hub::Subscriber,
    registration: tokio_lockgate::drain::Registration,
    /// Whether it receives `lockgate.seq.v1` frames.
    sequenced: bool,
    since: Option<Since>,
}

/// Serves one client until it leaves, fails, or is closed by the hub (a
/// drain's turn included); or, with [`NodeConfig::metrics`], answers a
/// `GET /metrics`.
pub(crate) async fn serve(
    tcp: TcpStream,
    node: Arc<NodeConfig>,
    state: Arc<NodeState>,
    path: Path,
) {
    let _ = tcp.set_nodelay(true);
    let mut config = node.websocket;
    if let Some(render) = &node.metrics {
        // The peek counts against the handshake's deadline: a connection
        // gets one deadline, whatever it turns out to be. Measured on
        // tokio's clock, the one its timers run on (and a paused test
        // clock moves).
        let started = tokio::time::Instant::now();
        let limit = config.get_handshake_timeout();
        let scrape = match limit {
            Some(limit) => tokio::time::timeout(limit, scrape::asks_for_metrics(&tcp))
                .await
                .unwrap_or(false),
            None => scrape::asks_for_metrics(&tcp).await,
        };
        let left = limit.map(|limit| limit.saturating_sub(started.elapsed()));
        if scrape {
            scrape::answer(tcp, render, state.stats(), left).await;
            return;
        }
        config = config.handshake_timeout(left);
    }
    let history = match &path {
        Path::History(history) => Some(Arc::clone(history)),
        Path::Direct(_) => None,
    };
    let mut client = None;
    #[allow(
        clippy::result_large_err,
        reason = "the handshake callback's signature is tungstenite's"
    )]
    let callback = |request: &Request<()>, mut response: Response<()>| {
        let Some(name) = topic::from_path(request.uri().path()) else {
            count(&state.counters.refused_path);
            return Err(refusal(
                StatusCode::NOT_FOUND,
                "connect to /topics/NAME (NAME: 1 to 128 of A-Z a-z 0-9 - _)",
            ));
        };
        let since = match request.uri().query().and_then(Since::from_query) {
            None => None,
            Some(Ok(since)) => Some(since),
            Some(Err(e)) => {
                count(&state.counters.handshake_failed);
                return Err(refusal(StatusCode::BAD_REQUEST, &e.to_string()));
            }
        };
        let offers_sequenced = offers(request, seq::SUBPROTOCOL);
        if since.is_some() && !offers_sequenced {
            count(&state.counters.handshake_failed);
            return Err(refusal(
                StatusCode::BAD_REQUEST,
                "`since` needs the lockgate.seq.v1 subprotocol",
            ));
        }
        // Registered before the 101 goes out, so a drain either counts
        // this client or refuses it (503 with Retry-After).
        let registration = state.drain.register().map_err(|refused| {
            count(&state.counters.refused_draining);
            refused.to_error_response()
        })?;
        if !state.accepting() || history.as_ref().is_some_and(|h| !h.caught_up()) {
            count(&state.counters.refused_unavailable);
            return Err(refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                "the broadcast broker is unreachable; try again",
            ));
        }
        // Subscribed before the 101 goes out: once a client's handshake
        // completes, it receives everything published to its topic. At
        // its turn in a drain, it is sent what was queued for it, then
        // the close.
        let subscriber = state.hub.subscriber();
        let sequenced = offers_sequenced && history.is_some();
        if let (true, Some(history)) = (sequenced, &history) {
            let headers = response.headers_mut();
            headers.insert(
                "sec-websocket-protocol",
                seq::SUBPROTOCOL.parse().expect("a header value"),
            );
            if let Ok(epoch) = history.epoch().parse() {
                headers.insert(seq::EPOCH_HEADER, epoch);
            }
            subscriber.subscribe(&sequenced_topic(name));
        } else {
            subscriber.subscribe(name);
        }
        registration.attach_subscriber(&subscriber);
        client = Some(Client {
            topic: name.to_owned(),
            subscriber,
            registration,
            sequenced,
            since,
        });
        Ok(response)
    };
    // The one place a client's handshake options are put together.
    let options = ServerOptions::new()
        .config(config)
        .origin_policy(node.origin.clone())
        .callback(callback);
    let ws = match accept_async_with(tcp, options).await {
        Ok(ws) => ws,
        Err(_) => {
            count(&state.counters.handshake_failed);
            return;
        }
    };
    let Client {
        topic,
        subscriber,
        registration,
        sequenced,
        since,
    } = client.expect("an accepted upgrade named its topic");
    count(&state.counters.accepted);
    count(&state.counters.open);

    let (mut write, read) = ws.into_split();
    // The read half sees the drain's deadline; the subscriber sends its
    // close.
    let mut read = registration.guard(read);
    let mut publisher = history.as_ref().map(|history| history.publisher());
    let refused = publisher.as_ref().map(Publisher::refused);
    let replay_topic = topic.clone();
    // Set when the write side is done: a message still on its way into the
    // history is abandoned then, rather than stored after the client was
    // told to go (and perhaps resumed elsewhere).
    let (write_done, mut write_ended) = match publisher {
        Some(_) => {
            let (done, ended) = tokio::sync::watch::channel(false);
            (Some(WriteDone(done)), Some(ended))
        }
        None => (None, None),
    };
    // Its own task: a client's writes never wait behind its reads, and a
    // publish that waits (for the broker, or under the Wait policy for this
    // very client's queue) never stops its forwarding.
    let forward = tokio::spawn(async move {
        let _done = write_done;
        let mut subscriber = subscriber;
        // A `since` comes with the subprotocol (else the upgrade was
        // refused); without a history to serve it, it gets 4001.
        let history = history.as_deref().filter(|_| sequenced);
        resume::forward(
            history,
            &replay_topic,
            since,
            &mut subscriber,
            &mut write,
            refused,
        )
        .await;
    });
    // Until the closing handshake completes, the connection fails, its
    // deadlines pass (the read half enforces them), or a drain's deadline.
    while let Some(Ok(msg)) = read.next().await {
        if !msg.is_data() || forward.is_finished() {
            // Closed by the hub: nothing more is published for it.
            continue;
        }
        match (&path, &mut publisher) {
            (_, Some(publisher)) => {
                // Delivered by the history once stored, to this node's
                // subscribers too.
                let write_ended = write_ended.as_mut().expect("made with the publisher");
                let stored = tokio::select! {
                    stored = publisher.publish(&topic, &msg) => stored.is_ok(),
                    _ = write_ended.wait_for(|ended| *ended) => false,
                };
                if stored {
                    count(&state.counters.from_clients);
                }
            }
            (Path::Direct(relay), None) => {
                let prepared = PreparedMessage::new(msg);
                // Local subscribers first, then the other nodes, in the
                // order the client sent them.
                state.hub.publish(&topic, &prepared).await;
                // Counted once in every queue: a drain reports it as
                // accepted.
                count(&state.counters.from_clients);
                if let Some(relay) = relay {
                    relay.publish(&topic, prepared.message()).await;
                }
            }
            (Path::History(_), None) => unreachable!("a history gives every client a publisher"),
        }
        // Reading a buffered message costs the task nothing of tokio's
        // budget, so a client sending a flood would otherwise hold its
        // worker until its socket ran dry, while the queues it fills wait
        // for the forwarders to run.
        tokio::task::consume_budget().await;
    }
    forward.abort();
    state
        .counters
        .open
        .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
}

/// Tells the read side, when dropped, that the write side is done.
struct WriteDone(tokio::sync::watch::Sender<bool>);

impl Drop for WriteDone {
    fn drop(&mut self) {
        self.0.send_replace(true);
    }
}

/// Whether the client offered `protocol` in `Sec-WebSocket-Protocol`.
fn offers(request: &Request<()>, protocol: &str) -> bool {
    request
        .headers()
        .get_all("sec-websocket-protocol")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|offered| offered.trim() == protocol)
}

fn refusal(status: StatusCode, why: &str) -> ErrorResponse {
    let mut response = ErrorResponse::new(Some(format!("{why}\n")));
    *response.status_mut() = status;
    response
}
