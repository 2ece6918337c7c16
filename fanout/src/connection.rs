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
use crate::relay::Relay;
use crate::scrape;
use crate::state::{NodeState, count};
use crate::topic;

/// Serves one client until it leaves, fails, or is closed by the hub (a
/// drain's turn included); or, with [`NodeConfig::metrics`], answers a
/// `GET /metrics`.
pub(crate) async fn serve(
    tcp: TcpStream,
    node: Arc<NodeConfig>,
    state: Arc<NodeState>,
    relay: Option<Relay>,
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
    let mut topic = None;
    #[allow(
        clippy::result_large_err,
        reason = "the handshake callback's signature is tungstenite's"
    )]
    let callback = |request: &Request<()>, response: Response<()>| {
        let Some(name) = topic::from_path(request.uri().path()) else {
            count(&state.counters.refused_path);
            return Err(refusal(
                StatusCode::NOT_FOUND,
                "connect to /topics/NAME (NAME: 1 to 128 of A-Z a-z 0-9 - _)",
            ));
        };
        // Registered before the 101 goes out, so a drain either counts
        // this client or refuses it (503 with Retry-After).
        let registration = state.drain.register().map_err(|refused| {
            count(&state.counters.refused_draining);
            refused.to_error_response()
        })?;
        if !state.accepting() {
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
        subscriber.subscribe(name);
        registration.attach_subscriber(&subscriber);
        topic = Some((name.to_owned(), subscriber, registration));
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
    let (topic, subscriber, registration) = topic.expect("an accepted upgrade named its topic");
    count(&state.counters.accepted);
    count(&state.counters.open);

    let (mut write, read) = ws.into_split();
    // The read half sees the drain's deadline; the subscriber sends its
    // close.
    let mut read = registration.guard(read);
    // Its own task: a client's writes never wait behind its reads, and a
    // publish that waits (for the broker, or under the Wait policy for this
    // very client's queue) never stops its forwarding.
    let forward = tokio::spawn(async move {
        let mut subscriber = subscriber;
        let _ = subscriber.forward(&mut write).await;
    });
    // Until the closing handshake completes, the connection fails, its
    // deadlines pass (the read half enforces them), or a drain's deadline.
    while let Some(Ok(msg)) = read.next().await {
        if !msg.is_data() || forward.is_finished() {
            // Closed by the hub: nothing more is published for it.
            continue;
        }
        let prepared = PreparedMessage::new(msg);
        // Local subscribers first, then the other nodes, in the order the
        // client sent them.
        state.hub.publish(&topic, &prepared).await;
        // Counted once in every queue: a drain reports it as accepted.
        count(&state.counters.from_clients);
        if let Some(relay) = &relay {
            relay.publish(&topic, prepared.message()).await;
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

fn refusal(status: StatusCode, why: &str) -> ErrorResponse {
    let mut response = ErrorResponse::new(Some(format!("{why}\n")));
    *response.status_mut() = status;
    response
}
