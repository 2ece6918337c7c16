//! One client: the opening handshake (which names its topic), then its
//! messages published, and the topic's messages forwarded to it.

use std::sync::Arc;

use futures_util::StreamExt;
use tokio::net::TcpStream;
use tokio_lockgate::handshake::ErrorResponse;
use tokio_lockgate::http::{Request, Response, StatusCode};
use tokio_lockgate::{Config, PreparedMessage, ServerOptions, accept_async_with};

use crate::relay::Relay;
use crate::state::{NodeState, count};
use crate::topic;

/// Serves one client until it leaves, fails, or is closed by the hub.
pub(crate) async fn serve(
    tcp: TcpStream,
    config: Config,
    state: Arc<NodeState>,
    relay: Option<Relay>,
) {
    let _ = tcp.set_nodelay(true);
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
        if !state.accepting() {
            count(&state.counters.refused_unavailable);
            return Err(refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                "the broadcast broker is unreachable; try again",
            ));
        }
        // Subscribed before the 101 goes out: once a client's handshake
        // completes, it receives everything published to its topic.
        let subscriber = state.hub.subscriber();
        subscriber.subscribe(name);
        topic = Some((name.to_owned(), subscriber));
        Ok(response)
    };
    let options = ServerOptions::new().config(config).callback(callback);
    let ws = match accept_async_with(tcp, options).await {
        Ok(ws) => ws,
        Err(_) => {
            count(&state.counters.handshake_failed);
            return;
        }
    };
    let (topic, subscriber) = topic.expect("an accepted upgrade named its topic");
    count(&state.counters.accepted);
    count(&state.counters.open);

    let (mut write, mut read) = ws.into_split();
    // Its own task: a client's writes never wait behind its reads, and a
    // publish that waits (for the broker, or under the Wait policy for this
    // very client's queue) never stops its forwarding.
    let forward = tokio::spawn(async move {
        let mut subscriber = subscriber;
        let _ = subscriber.forward(&mut write).await;
    });
    // Until the closing handshake completes, the connection fails, or its
    // deadlines pass (the read half enforces them).
    while let Some(Ok(msg)) = read.next().await {
        if !msg.is_data() || forward.is_finished() {
            // Closed by the hub: nothing more is published for it.
            continue;
        }
        count(&state.counters.from_clients);
        let prepared = PreparedMessage::new(msg);
        // Local subscribers first, then the other nodes, in the order the
        // client sent them.
        state.hub.publish(&topic, &prepared).await;
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
