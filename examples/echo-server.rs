//! A WebSocket echo server: every text and binary message is sent back.
//!
//! ```text
//! cargo run --example echo-server              # listens on 127.0.0.1:9001
//! cargo run --example echo-server -- 0.0.0.0:8080
//! ```
//!
//! Then talk to it with `cargo run --example client`.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use lockgate::{Error, Message};

fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:9001".to_owned());
    let listener = TcpListener::bind(&addr)?;
    println!("echo-server listening on ws://{}", listener.local_addr()?);

    let mut backoff = AcceptBackoff::default();
    for stream in listener.incoming() {
        let stream = match stream {
            Ok(stream) => {
                backoff.succeeded();
                stream
            }
            Err(err) => {
                // Out of file descriptors, for one: wait for connections to
                // close instead of spinning on the error.
                thread::sleep(backoff.failed(&err));
                continue;
            }
        };
        let Ok(peer) = stream.peer_addr() else {
            continue;
        };
        thread::spawn(move || match serve(stream) {
            Ok(echoed) => println!("{peer}: closed after echoing {echoed} message(s)"),
            Err(err) => println!("{peer}: dropped: {err}"),
        });
    }
    Ok(())
}

/// Echoes until the closing handshake is done; returns how many messages
/// were echoed.
fn serve(stream: TcpStream) -> lockgate::Result<u64> {
    let peer: SocketAddr = stream.peer_addr()?;
    stream.set_nodelay(true)?;
    let mut ws = lockgate::accept(stream)?;
    println!("{peer}: connected");

    let mut echoed = 0;
    loop {
        match ws.read() {
            Ok(msg) if msg.is_data() => {
                // `send` = `write` + `flush`: the echo goes out right away.
                ws.send(msg)?;
                echoed += 1;
            }
            Ok(Message::Close(frame)) => {
                // The close reply is already queued; the next `read` sends it
                // and then reports `ConnectionClosed`.
                match frame {
                    Some(frame) => println!("{peer}: peer is closing: {frame}"),
                    None => println!("{peer}: peer is closing"),
                }
            }
            // A ping's pong is queued and flushed by the library.
            Ok(_) => {}
            Err(Error::ConnectionClosed) => return Ok(echoed),
            // On a protocol error `read` has already sent the matching close
            // frame; the connection is over either way.
            Err(err) => return Err(err),
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
