//! A chat server with what a deployment needs around its WebSockets:
//! every message a connection sends is broadcast to every connection.
//!
//! ```text
//! cargo run -p tokio-lockgate --features axum,metrics,tracing --example production -- 127.0.0.1:3000
//! ```
//!
//! Then open `http://127.0.0.1:3000/` in a browser (twice, to see the
//! broadcast) and `http://127.0.0.1:3000/metrics` for the counters. The
//! address defaults to `127.0.0.1:0` (a free port); the line `listening on
//! http://...` says which.
//!
//! The parts, each in a few lines below:
//!
//! - **The upgrade**: `tokio_lockgate::axum::WebSocketUpgrade`, the axum
//!   extractor, routed with `any` (HTTP/1.1 upgrades are `GET`, HTTP/2
//!   ones `CONNECT`). This example is also the runnable example of the
//!   extractor with a drain (`on_upgrade_registered`).
//! - **The Origin check**: an [`OriginPolicy`] in an `Extension` layer.
//!   Pages of other sites are refused with 403 before the handler runs:
//!   a browser sends the user's cookies with a WebSocket upgrade whatever
//!   page opens it, so a server that trusts cookies must check `Origin`.
//! - **Limits**: each connection's [`Config`] caps messages at 4 KiB and
//!   rate-limits what a client sends ([`RateLimit`]); a client that sends
//!   faster is throttled (TCP pushes back on it), not disconnected.
//! - **Fan-out**: one [`Hub`]; each connection's [`Subscriber`] forwards
//!   what is published to topic `chat`, one flush per burst. A message is
//!   encoded once ([`PreparedMessage`]) however many connections get it.
//!   A connection whose queue fills up is closed with 1008 (the hub's
//!   default) instead of holding memory for ever.
//! - **Metrics**: the `metrics` facade's Prometheus exporter
//!   (`metrics-exporter-prometheus` 0.18, the line built on `metrics`
//!   0.24), installed as the global recorder before the first connection,
//!   rendered at `GET /metrics` by the same router. `register_metrics`
//!   makes every series exist at zero from the first scrape.
//! - **Tracing**: `tracing-subscriber`'s `fmt` on stderr, filtered by
//!   `RUST_LOG` (`info` when unset; `RUST_LOG=lockgate=debug` shows each
//!   connection's close, timeout and rate-limit events).
//! - **Drain**: on SIGTERM or Ctrl-C, [`Drain::start`] closes the
//!   WebSockets with 1012 (Service Restart: "come back soon"), each after
//!   what is queued for it, their turns spread over a window so clients do
//!   not all reconnect in the same second, and cuts those still open at a
//!   deadline. The same signal is axum's `with_graceful_shutdown` future:
//!   axum stops accepting and finishes its HTTP requests. An upgraded
//!   connection is no longer axum's (hyper handed it over), so `main` then
//!   waits for the drain's report before it returns.

use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::State;
use axum::response::{Html, Response};
use axum::routing::{any, get};
use axum::{Extension, Router};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tokio::net::TcpListener;
use tokio_lockgate::axum::{WebSocket, WebSocketUpgrade};
use tokio_lockgate::drain::{Drain, DrainOptions, Registered};
use tokio_lockgate::handshake::OriginPolicy;
use tokio_lockgate::hub::{Hub, HubConfig, Subscriber};
use tokio_lockgate::{CloseCode, Config, Message, PreparedMessage, RateLimit};
use tracing_subscriber::EnvFilter;

/// The topic every connection joins.
const TOPIC: &str = "chat";

/// What every handler shares; each field is a cheap handle.
#[derive(Clone)]
struct App {
    hub: Hub,
    drain: Drain,
    config: Config,
    metrics: PrometheusHandle,
}

/// `/ws`: the upgrade, registered with the drain (while it drains, new
/// upgrades get 503 with `Retry-After`). The Origin was checked when the
/// extractor ran.
async fn ws(State(app): State<App>, upgrade: WebSocketUpgrade) -> Response {
    let hub = app.hub.clone();
    upgrade
        .config(app.config)
        .on_upgrade_registered(&app.drain, move |ws| chat(ws, hub))
}

/// One chat connection: its subscriber writes what the hub broadcasts,
/// its read loop publishes what the client sends.
async fn chat(ws: Registered<WebSocket>, hub: Hub) {
    let mut subscriber: Subscriber = hub.subscriber();
    subscriber.subscribe(TOPIC);
    // At the connection's turn in a drain, the subscriber writes what was
    // queued for it, then the drain's close frame.
    ws.registration().attach_subscriber(&subscriber);
    let (mut write, mut read) = ws.into_split();
    let forwarding = tokio::spawn(async move { subscriber.forward(&mut write).await });
    // The registered read half reads on through a drain's close until the
    // client's close reply (then `Err(ConnectionClosed)`).
    while let Ok(message) = read.read().await {
        if let Message::Text(text) = message {
            tracing::info!(bytes = text.len(), "chat message");
            hub.publish(TOPIC, &PreparedMessage::new(Message::Text(text)))
                .await;
        }
    }
    // The client left (or closed): its subscriber has nothing more to
    // write. Dropping it unsubscribes it.
    forwarding.abort();
}

/// `/metrics`: the exporter's text format.
async fn scrape(State(app): State<App>) -> String {
    app.metrics.render()
}

/// `/`: a page that joins the chat. Once its greeting comes back through
/// the hub it says so in the chat, so every other client (and the test
/// that runs this example in a browser) sees that the round trip worked.
async fn index() -> Html<&'static str> {
    Html(
        r#"<!doctype html>
<meta charset="utf-8">
<title>lockgate chat</title>
<h1>lockgate chat</h1>
<form id="form"><input id="text" autocomplete="off" placeholder="say something"> <button>send</button></form>
<p id="status">connecting</p>
<ul id="log"></ul>
<script>
const greeting = "hello from the browser";
const status = document.getElementById("status");
const log = document.getElementById("log");
const ws = new WebSocket(location.origin.replace(/^http/, "ws") + "/ws");
let greeted = false;
ws.onopen = () => { status.textContent = "connected"; ws.send(greeting); };
ws.onmessage = (e) => {
  const item = document.createElement("li");
  item.textContent = e.data;
  log.append(item);
  if (e.data === greeting && !greeted) {
    greeted = true;
    ws.send("the browser got its greeting back through the hub");
  }
};
ws.onclose = (e) => { status.textContent = `closed: ${e.code} ${e.reason}`; };
document.getElementById("form").onsubmit = (e) => {
  e.preventDefault();
  const text = document.getElementById("text");
  if (text.value) ws.send(text.value);
  text.value = "";
};
</script>
"#,
    )
}

/// Resolves at SIGTERM (what a service manager or an orchestrator sends)
/// or Ctrl-C.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut terminate = signal(SignalKind::terminate()).expect("a SIGTERM handler");
        tokio::select! {
            _ = terminate.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// 1012 (Service Restart), the turns spread over 5 s, the rest cut at 10 s.
/// A deployment's stop timeout (Kubernetes' `terminationGracePeriodSeconds`,
/// systemd's `TimeoutStopSec`) must be longer than the deadline.
fn drain_options() -> DrainOptions {
    DrainOptions::default()
        .code(CloseCode::Restart)
        .reason("restarting")
        .window(Duration::from_secs(5))
        .deadline(Duration::from_secs(10))
}

/// Folds the histograms' samples into their summaries now and then
/// (`install_recorder` leaves it to its caller), so that they do not pile
/// up between scrapes.
async fn upkeep(metrics: PrometheusHandle) {
    let mut ticks = tokio::time::interval(Duration::from_secs(5));
    loop {
        ticks.tick().await;
        metrics.run_upkeep();
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();

    // The recorder first: lockgate registers its counters with the one it
    // first reports to. Then every series, at zero.
    let metrics = PrometheusBuilder::new()
        .install_recorder()
        .map_err(std::io::Error::other)?;
    tokio_lockgate::hub::metrics::register_metrics();
    tokio::spawn(upkeep(metrics.clone()));

    let app = App {
        hub: Hub::new(HubConfig::default()),
        drain: Drain::new(),
        // Chat lines are short; a client may send 5 a second, in bursts of
        // up to 20.
        config: Config::default()
            .max_message_size(Some(4096))
            .max_frame_size(Some(4096))
            .rate_limit(RateLimit::messages_per_second(5).message_burst(20)),
        metrics,
    };
    let drain = app.drain.clone();
    // Only the server's own pages (and clients that are not browsers,
    // which send no Origin). Add your front end's origin with
    // `.allow_origin("https://app.example.com")`.
    let origins = OriginPolicy::same_origin();
    let router = Router::new()
        .route("/", get(index))
        .route("/ws", any(ws))
        .route("/metrics", get(scrape))
        .layer(Extension(origins))
        .with_state(app);

    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".to_owned());
    let listener = TcpListener::bind(&addr).await?;
    let local: SocketAddr = listener.local_addr()?;
    println!("listening on http://{local}/ (chat at ws://{local}/ws, metrics at /metrics)");

    // The signal ends axum's accept loop, and starts the drain on its own
    // task (the future `start` returns only reports).
    let draining = drain.clone();
    let shutdown = async move {
        shutdown_signal().await;
        println!(
            "draining {} WebSocket connection(s); no new ones",
            draining.live()
        );
        drop(draining.start(drain_options()));
    };
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await?;

    // axum is done with its HTTP connections; the WebSockets are the
    // drain's. A second `start` waits for the same report.
    let report = drain.start(drain_options()).await;
    println!(
        "drained: {} connection(s), {} closed, {} left before their turn, {} cut at the deadline",
        report.connections, report.closed, report.left, report.cut
    );
    Ok(())
}
