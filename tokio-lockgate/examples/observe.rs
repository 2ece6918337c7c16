//! What `lockgate::observe` offers, in one program: the connections'
//! counters through the `metrics` facade (here into the Prometheus
//! exporter, printed at the end), and their `tracing` span and events
//! (here printed on stderr by `tracing-subscriber`).
//!
//! ```text
//! cargo run -p tokio-lockgate --features metrics,tracing --example observe
//! ```
//!
//! Why it is worth the two features: the counters say what the
//! connections did in aggregate (opened, closed by code and by side,
//! messages and bytes each way, handshake failures by reason, timeouts,
//! rate-limit actions) and are gathered per burst, not per message; the
//! events come only at the rare moments (a close, a timeout, a protocol
//! error, a refusal), each inside the connection's `websocket` span. Without
//! the features none of it is compiled.
//!
//! The series names are constants in `lockgate::observe::names` and
//! `tokio_lockgate::hub::metrics::names`; the module documentation of
//! `lockgate::observe` says when counts reach the recorder.

use metrics_exporter_prometheus::PrometheusBuilder;
use tokio::net::TcpListener;
use tokio_lockgate::lockgate::observe::names;
use tokio_lockgate::{CloseCode, CloseFrame, Message, accept_async, connect_async};
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // lockgate's events are at DEBUG under target `lockgate` (and each
    // state change at TRACE): shown unless RUST_LOG says otherwise.
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("lockgate=debug"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();

    // A global recorder before the first connection, then every series
    // registered at zero: a scrape before any traffic already lists them.
    let prometheus = PrometheusBuilder::new().install_recorder()?;
    tokio_lockgate::lockgate::observe::register_metrics();

    // Some traffic: an echo server and a client that sends three
    // messages and closes with 1000.
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("ws://{}/", listener.local_addr()?);
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await?;
        let mut ws = accept_async(tcp).await?;
        while let Ok(message) = ws.read().await {
            if message.is_data() {
                ws.send(message).await?;
            }
        }
        Ok::<_, tokio_lockgate::Error>(())
    });
    let (mut ws, _) = connect_async(&url).await?;
    for text in ["one", "two", "three"] {
        ws.send(Message::text(text)).await?;
        ws.read().await?;
    }
    ws.close(Some(CloseFrame::new(CloseCode::Normal, "done")))
        .await?;
    while ws.read().await.is_ok() {}
    // Both ends are over: their counts have all reached the recorder.
    server.await??;
    drop(ws);

    // Both ends are in this process, so each message is counted twice:
    // received by the server, and its echo received by the client.
    // The exporter's text, as `/metrics` would serve it: here only the
    // samples of lockgate's series that are not zero, sorted by name.
    let rendered = prometheus.render();
    let mut samples: Vec<&str> = rendered
        .lines()
        .filter(|line| line.starts_with("lockgate_") && !line.ends_with(" 0"))
        .collect();
    samples.sort_unstable();
    println!("# lockgate's series, as the exporter renders them:");
    for sample in samples {
        println!("{sample}");
    }
    println!(
        "(a series name from lockgate::observe::names: {})",
        names::MESSAGES_RECEIVED
    );
    Ok(())
}
