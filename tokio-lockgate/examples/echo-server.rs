//! A WebSocket echo server on tokio: every text and binary message is sent
//! back. One task per connection.
//!
//! ```text
//! cargo run -p tokio-lockgate --example echo-server              # ws://127.0.0.1:9001
//! cargo run -p tokio-lockgate --example echo-server -- 0.0.0.0:8080
//! ```
//!
//! Then talk to it with `cargo run -p tokio-lockgate --example client`, or
//! load it with `cargo run --release -p lockgate-loadgen -- --url
//! ws://127.0.0.1:9001`.
//!
//! Echoes are written with `write` and flushed once the bytes received so
//! far are used up (`buffered_input() == 0`): a burst of messages read in one
//! socket read is answered with one flush, a lone message at once. A status
//! line is printed at most once a second, and only when something changed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio_lockgate::Error;

/// Connection and message counts, shared by every connection task.
#[derive(Default)]
struct Stats {
    accepted: AtomicU64,
    open: AtomicU64,
    failed: AtomicU64,
    echoed: AtomicU64,
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:9001".to_owned());
    let listener = TcpListener::bind(&addr).await?;
    println!("echo-server listening on ws://{}", listener.local_addr()?);

    let stats = Arc::new(Stats::default());
    tokio::spawn(report(Arc::clone(&stats)));

    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(err) => {
                // Out of file descriptors, for one: back off instead of
                // spinning on the error.
                eprintln!("accept failed: {err}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let stats = Arc::clone(&stats);
        tokio::spawn(async move {
            stats.accepted.fetch_add(1, Ordering::Relaxed);
            stats.open.fetch_add(1, Ordering::Relaxed);
            if let Err(err) = serve(stream, &stats).await {
                stats.failed.fetch_add(1, Ordering::Relaxed);
                eprintln!("{peer}: dropped: {err}");
            }
            stats.open.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

/// Echoes until the closing handshake is done.
async fn serve(stream: TcpStream, stats: &Stats) -> tokio_lockgate::Result<()> {
    // A flushed echo must not wait for the peer's delayed ACK.
    stream.set_nodelay(true)?;
    let mut ws = tokio_lockgate::accept_async(stream).await?;
    loop {
        match ws.read().await {
            Ok(msg) if msg.is_data() => {
                ws.write(msg).await?;
                stats.echoed.fetch_add(1, Ordering::Relaxed);
            }
            // A ping's pong and the close reply are queued and flushed by the
            // library; after the close reply, `read` reports ConnectionClosed.
            Ok(_) => {}
            Err(Error::ConnectionClosed) => return Ok(()),
            // On a protocol error `read` has already sent the matching close
            // frame; the connection is over either way.
            Err(err) => return Err(err),
        }
        // Everything received so far is answered: open the gate once for the
        // whole burst.
        if ws.buffered_input() == 0 {
            ws.flush().await?;
        }
    }
}

/// Prints one status line a second when the counts have changed.
async fn report(stats: Arc<Stats>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last = Some((0, 0, 0, 0));
    loop {
        tick.tick().await;
        let now = (
            stats.open.load(Ordering::Relaxed),
            stats.accepted.load(Ordering::Relaxed),
            stats.failed.load(Ordering::Relaxed),
            stats.echoed.load(Ordering::Relaxed),
        );
        if last != Some(now) {
            let (open, accepted, failed, echoed) = now;
            println!(
                "connections: {open} open, {accepted} accepted, {failed} failed; {echoed} messages echoed"
            );
            last = Some(now);
        }
    }
}
