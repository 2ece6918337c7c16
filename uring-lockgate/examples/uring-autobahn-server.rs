//! Echo server for the Autobahn TestSuite (fuzzingclient mode), on io_uring
//! (tokio-uring).
//!
//! Echoes every text and binary message back; pongs and close replies are left
//! to the library. One task per connection, on one ring.
//!
//! Run the whole conformance suite against it with
//! `AUTOBAHN_PACKAGE=uring-lockgate AUTOBAHN_SUFFIX=-uring bash autobahn/run.sh server`,
//! or by hand:
//!
//! ```text
//! cargo run --release -p uring-lockgate --example uring-autobahn-server -- 127.0.0.1:9002
//! kosoku 127.0.0.1:9002 -x '12.*' -x '13.*'
//! ```

use std::time::{Duration, Instant};

use tokio_uring::net::TcpListener;
use uring_lockgate::{Error, Message, UringStream};

fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:9002".to_owned());
    let addr = addr
        .parse()
        .map_err(|_| std::io::Error::other(format!("not an address: {addr}")))?;
    tokio_uring::start(async move {
        let listener = TcpListener::bind(addr)?;
        let local = listener.local_addr()?;
        println!("uring-autobahn-server listening on {local}");

        let mut backoff = AcceptBackoff::default();
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    backoff.succeeded();
                    tokio_uring::spawn(handle(stream));
                }
                Err(err) => tokio::time::sleep(backoff.failed(&err)).await,
            }
        }
    })
}

async fn handle(stream: tokio_uring::net::TcpStream) {
    // Each echo is one flush; without NODELAY the small ones would wait for
    // the peer's delayed ACK.
    let _ = stream.set_nodelay(true);
    // A failed handshake (the runner's readiness probe, for one) just ends
    // the connection.
    let Ok(mut ws) = uring_lockgate::accept_async_with(
        UringStream::new(stream),
        uring_lockgate::ServerOptions::new().config(config()),
    )
    .await
    else {
        return;
    };
    loop {
        match ws.read().await {
            Ok(msg @ (Message::Text(_) | Message::Binary(_))) => {
                if ws.send(msg).await.is_err() {
                    break;
                }
            }
            // Pongs to pings and the close reply are queued by the library
            // and flushed on the next call.
            Ok(Message::Ping(_) | Message::Pong(_) | Message::Close(_) | Message::Frame(_)) => {}
            // The closing handshake is complete: drop the TCP connection, as
            // a server should.
            Err(Error::ConnectionClosed | Error::AlreadyClosed) => break,
            // The peer broke the protocol (or a limit): `read` has already
            // sent the close frame with the matching code. Drop the
            // connection.
            Err(_) => break,
        }
    }
}

/// The conformance configuration: defaults, plus permessage-deflate offered
/// (client) or accepted (server) so Autobahn's 12.x and 13.x cases run.
/// Every message is compressed (no minimum size): kosoku 0.1.0 fails its
/// 12.x hash check on uncompressed text echoes, and compressing everything
/// exercises the codec hardest anyway.
fn config() -> uring_lockgate::Config {
    uring_lockgate::Config::default().deflate(Some(
        uring_lockgate::deflate::DeflateConfig::default().min_compress_size(0),
    ))
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
