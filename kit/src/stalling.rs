//! Peers on 127.0.0.1 that hold a dial without ever going quiet, and
//! servers that record the heads they are sent:
//!
//! - [`DribblingPeer`]: a TLS server (or `https://` proxy) that sends its
//!   flight, or an HTTP proxy that sends its answer to CONNECT, one byte
//!   at a time: each read returns, so only a deadline over all of them
//!   ends the wait;
//! - [`RedirectLoop`]: a server that answers each upgrade late, with a
//!   redirect to itself;
//! - [`HeadRecorder`]: a server that keeps every request head and answers
//!   each as told (a redirect, a refusal).
//!
//! Each stops by itself: a dribble after [`DRIBBLE_BYTES`] bytes, a
//! connection when its client goes.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use crate::proxies::{Acceptor, ProxyKind};

/// How many bytes a [`DribblingPeer`] sends after its opening before it
/// closes the connection: at one per [`DRIBBLE_EVERY`], ten seconds, far
/// past any deadline the cases set. A client that never gave up meets the
/// end of the stream instead of a timeout.
pub const DRIBBLE_BYTES: usize = 500;

/// The pause before each dribbled byte.
pub const DRIBBLE_EVERY: Duration = Duration::from_millis(20);

/// How long a server here waits for a request head.
const HEAD_LIMIT: Duration = Duration::from_secs(20);

/// What a [`DribblingPeer`] plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dribble {
    /// A TLS server's flight: a handshake record that announces 16 KiB,
    /// then its body a byte at a time (a `wss://` server, or an
    /// `https://` proxy).
    TlsFlight,
    /// An HTTP proxy's answer to CONNECT: a status line and one header
    /// that never ends.
    HttpHead,
}

impl Dribble {
    /// What goes out at once, before the dribble.
    fn opening(self) -> &'static [u8] {
        match self {
            // Handshake record, TLS 1.2 framing, 16384 bytes; a
            // ServerHello of 16380.
            Dribble::TlsFlight => b"\x16\x03\x03\x40\x00\x02\x00\x3f\xfc",
            Dribble::HttpHead => b"HTTP/1.1 200 Connection established\r\nX-Slow: ",
        }
    }
}

/// A peer that accepts TCP connections and sends each a [`Dribble`]:
/// its opening, then one byte every [`DRIBBLE_EVERY`], up to
/// [`DRIBBLE_BYTES`], stopping when the client goes.
pub struct DribblingPeer {
    acceptor: Acceptor,
    accepted: Arc<AtomicUsize>,
}

impl DribblingPeer {
    /// Starts one playing `dribble`.
    pub fn start(dribble: Dribble) -> DribblingPeer {
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&accepted);
        let acceptor = Acceptor::start(Arc::new(move |mut tcp: TcpStream| {
            count.fetch_add(1, Ordering::SeqCst);
            let _ = tcp.set_nodelay(true);
            if tcp.write_all(dribble.opening()).is_err() {
                return;
            }
            for _ in 0..DRIBBLE_BYTES {
                thread::sleep(DRIBBLE_EVERY);
                if tcp.write_all(b"a").is_err() {
                    return;
                }
            }
        }));
        DribblingPeer { acceptor, accepted }
    }

    /// `127.0.0.1:PORT`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.acceptor.port())
    }

    /// The connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// The dials that meet this peer: as a `wss://` server and an
    /// `https://` proxy for [`Dribble::TlsFlight`] (with TLS only), as an
    /// `http://` proxy for [`Dribble::HttpHead`]. Each is `(what, proxy
    /// URL, URL)`.
    pub fn routes(&self, dribble: Dribble, tls: bool) -> Vec<(String, Option<String>, String)> {
        let address = self.address();
        let through = |kind: ProxyKind| {
            (
                format!("an {} proxy answering a byte at a time", kind.scheme()),
                Some(format!("{}://{address}", kind.scheme())),
                "ws://localhost:9/".to_owned(),
            )
        };
        match (dribble, tls) {
            (Dribble::HttpHead, _) => vec![through(ProxyKind::Http)],
            (Dribble::TlsFlight, false) => Vec::new(),
            (Dribble::TlsFlight, true) => vec![
                (
                    "a wss:// server sending its TLS flight a byte at a time".to_owned(),
                    None,
                    format!("wss://{address}/"),
                ),
                through(ProxyKind::Https),
            ],
        }
    }
}

/// A server that answers every upgrade after a pause with `302 Found` to
/// itself.
pub struct RedirectLoop {
    acceptor: Acceptor,
    answered: Arc<AtomicUsize>,
}

impl RedirectLoop {
    /// Starts one answering each request `after` it arrived.
    pub fn start(after: Duration) -> RedirectLoop {
        let answered = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&answered);
        let acceptor = Acceptor::start(Arc::new(move |mut tcp: TcpStream| {
            if read_head(&mut tcp).is_none() {
                return;
            }
            thread::sleep(after);
            count.fetch_add(1, Ordering::SeqCst);
            let _ = tcp.write_all(&answer(302, &[("Location", "/again")]));
        }));
        RedirectLoop { acceptor, answered }
    }

    /// `ws://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("ws://127.0.0.1:{}/", self.acceptor.port())
    }

    /// The requests answered so far.
    pub fn answered(&self) -> usize {
        self.answered.load(Ordering::SeqCst)
    }
}

/// How a [`HeadRecorder`] answers a request head.
pub type Answer = Arc<dyn Fn(&str) -> Vec<u8> + Send + Sync>;

/// A server that keeps the head of every request it is sent and answers
/// each with what [`Answer`] makes of it.
pub struct HeadRecorder {
    acceptor: Acceptor,
    heads: Arc<Mutex<Vec<String>>>,
}

impl HeadRecorder {
    /// Starts one answering with `answer`.
    pub fn start(answer: Answer) -> HeadRecorder {
        let heads = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&heads);
        let acceptor = Acceptor::start(Arc::new(move |mut tcp: TcpStream| {
            let Some(head) = read_head(&mut tcp) else {
                return;
            };
            let reply = answer(&head);
            kept.lock().unwrap().push(head);
            let _ = tcp.write_all(&reply);
        }));
        HeadRecorder { acceptor, heads }
    }

    /// The port, on 127.0.0.1 (and `[::1]` where there is one).
    pub fn port(&self) -> u16 {
        self.acceptor.port()
    }

    /// The request heads received so far, in order.
    pub fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

/// An HTTP/1.1 response head with `status`, `headers` and no body, that
/// closes the connection.
pub fn answer(status: u16, headers: &[(&str, &str)]) -> Vec<u8> {
    let mut head = format!("HTTP/1.1 {status} Status {status}\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("Content-Length: 0\r\nConnection: close\r\n\r\n");
    head.into_bytes()
}

/// Reads a request head (up to its blank line), or `None` if the client
/// went first.
fn read_head(tcp: &mut TcpStream) -> Option<String> {
    tcp.set_read_timeout(Some(HEAD_LIMIT)).ok()?;
    let mut head = Vec::new();
    let mut byte = [0; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match tcp.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    Some(String::from_utf8_lossy(&head).into_owned())
}
