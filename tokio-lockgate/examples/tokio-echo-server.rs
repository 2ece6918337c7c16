//! A WebSocket echo server on tokio: every text and binary message is sent
//! back. One task per connection.
//!
//! ```text
//! cargo run -p tokio-lockgate --example tokio-echo-server              # ws://127.0.0.1:9001
//! cargo run -p tokio-lockgate --example tokio-echo-server -- 0.0.0.0:8080
//! cargo run -p tokio-lockgate --example tokio-echo-server -- 0.0.0.0:8080 \
//!     --allow-origin 'https://*.example.com' --allow-origin http://localhost:5173
//! ```
//!
//! Web pages may open the echo only from the server's own origin (clients
//! other than browsers send no `Origin` and are always accepted): the
//! default [`OriginPolicy`]. Each `--allow-origin PATTERN` after the
//! address allows more (`https://app.example.com`, `*.example.com`,
//! `example.com:8443`, ...); `--allow-origin '*'` allows any page.
//!
//! Then talk to it with `cargo run -p tokio-lockgate --example tokio-client`, or
//! load it with `cargo run --release -p lockgate-loadgen -- --url
//! ws://127.0.0.1:9001`.
//!
//! Echoes are written with `write` and flushed once the bytes received so
//! far are used up (`buffered_input() == 0`): a burst of messages read in one
//! socket read is answered with one flush, a lone message at once. A status
//! line is printed at most once a second, and only when something changed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpStream};
use tokio_lockgate::handshake::OriginPolicy;
use tokio_lockgate::{Error, ServerOptions};

/// Connection and message counts, shared by every connection task.
#[derive(Default)]
struct Stats {
    accepted: AtomicU64,
    open: AtomicU64,
    failed: AtomicU64,
    echoed: AtomicU64,
}

const USAGE: &str = "usage: tokio-echo-server [ADDR] [--allow-origin PATTERN]...";

/// The address and the origin policy from the command line; exits with
/// the usage on a mistake.
fn arguments() -> (String, OriginPolicy, Vec<String>) {
    let mut addr = None;
    let mut origins = OriginPolicy::same_origin();
    let mut patterns = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--allow-origin" => {
                let Some(pattern) = args.next() else {
                    usage_error("--allow-origin needs a pattern");
                };
                origins = origins
                    .allow_origin(&pattern)
                    .unwrap_or_else(|error| usage_error(&error.to_string()));
                patterns.push(pattern);
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            _ if addr.is_none() && !arg.starts_with('-') => addr = Some(arg),
            _ => usage_error(&format!("unexpected argument {arg:?}")),
        }
    }
    let addr = addr.unwrap_or_else(|| "127.0.0.1:9001".to_owned());
    (addr, origins, patterns)
}

fn usage_error(problem: &str) -> ! {
    eprintln!("tokio-echo-server: {problem}\n{USAGE}");
    std::process::exit(2);
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let (addr, origins, patterns) = arguments();
    let listener = TcpListener::bind(&addr).await?;
    let local = listener.local_addr()?;
    if origins.is_any() {
        println!("accepting web pages from any origin");
    } else if !patterns.is_empty() {
        println!(
            "accepting web pages from its own origin and {}",
            patterns.join(", ")
        );
    }
    println!("tokio-echo-server listening on ws://{local}");

    let stats = Arc::new(Stats::default());
    tokio::spawn(report(Arc::clone(&stats)));

    let mut backoff = AcceptBackoff::default();
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => {
                backoff.succeeded();
                accepted
            }
            Err(err) => {
                // Out of file descriptors, for one: wait for connections to
                // close instead of spinning on the error.
                tokio::time::sleep(backoff.failed(&err)).await;
                continue;
            }
        };
        let stats = Arc::clone(&stats);
        let options = ServerOptions::new().origin_policy(origins.clone());
        tokio::spawn(async move {
            stats.accepted.fetch_add(1, Ordering::Relaxed);
            stats.open.fetch_add(1, Ordering::Relaxed);
            if let Err(err) = serve(stream, options, &stats).await {
                stats.failed.fetch_add(1, Ordering::Relaxed);
                eprintln!("{peer}: dropped: {err}");
            }
            stats.open.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

/// Echoes until the closing handshake is done. An upgrade from a web page
/// the origin policy refuses is answered with 403 and counted as failed.
async fn serve(
    stream: TcpStream,
    options: ServerOptions,
    stats: &Stats,
) -> tokio_lockgate::Result<()> {
    // A flushed echo must not wait for the peer's delayed ACK.
    stream.set_nodelay(true)?;
    let mut ws = tokio_lockgate::accept_async_with(stream, options).await?;
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

/// The wait after a failed `accept`. Out of file descriptors (EMFILE), every
/// `accept` fails until a connection closes: retrying at once would spin a
/// core and flood the log. The wait doubles from 5 ms to 1 s and an accepted
/// connection resets it; failures are reported at most once a second, with
/// a count.
#[derive(Default)]
struct AcceptBackoff {
    delay: Duration,
    unreported: u64,
    last_report: Option<Instant>,
}

impl AcceptBackoff {
    const FIRST: Duration = Duration::from_millis(5);
    const MAX: Duration = Duration::from_secs(1);
    const REPORT_EVERY: Duration = Duration::from_secs(1);

    /// Counts a failure, reports it unless the last report is recent, and
    /// returns how long to wait before the next `accept`.
    fn failed(&mut self, err: &std::io::Error) -> Duration {
        self.unreported += 1;
        self.delay = (self.delay * 2).clamp(Self::FIRST, Self::MAX);
        if self
            .last_report
            .is_none_or(|at| at.elapsed() >= Self::REPORT_EVERY)
        {
            eprintln!(
                "accept failed: {err} ({} failure(s) since the last report; next try in {:?})",
                self.unreported, self.delay
            );
            self.unreported = 0;
            self.last_report = Some(Instant::now());
        }
        self.delay
    }

    fn succeeded(&mut self) {
        self.delay = Duration::ZERO;
    }
}
