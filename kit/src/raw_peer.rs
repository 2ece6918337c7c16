//! [`RawPeer`]: a WebSocket client on a plain blocking `TcpStream` that
//! upgrades by hand and then does only what a test tells it (often
//! nothing: a peer that vanished without a FIN), and reads back what the
//! driver under test sent it.
//!
//! The upgrade request is sent on connect, so a server on the same thread
//! can accept next: the request is already waiting in its socket.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use lockgate::frame::OpCode;
use lockgate::{Config, TimeoutKind};

use super::{WireFrame, client_frame, parse_complete_frames};

/// A client upgrade request for `path` with the RFC 6455 section 1.3 key.
fn upgrade_request(path: &str) -> String {
    format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\
Upgrade: websocket\r\nConnection: Upgrade\r\n\
Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
}

/// How long one read of the raw peer waits before it looks at the clock.
const POLL: Duration = Duration::from_millis(50);

/// A raw client socket; see the module docs.
#[derive(Debug)]
pub struct RawPeer {
    pub stream: TcpStream,
}

/// What a [`RawPeer`] received.
#[derive(Debug)]
pub struct Received {
    /// The complete frames, in order.
    pub frames: Vec<WireFrame>,
    /// The stream ended (a read returned 0) after them.
    pub ended: bool,
}

impl RawPeer {
    /// Connects to `addr` (127.0.0.1) and sends the upgrade request.
    pub fn connect(addr: SocketAddr) -> Self {
        Self::connect_to(addr, "/")
    }

    /// Connects to `addr` (127.0.0.1) and asks to upgrade `path`.
    pub fn connect_to(addr: SocketAddr, path: &str) -> Self {
        assert!(addr.ip().is_loopback(), "{addr}");
        let mut stream = TcpStream::connect(addr).expect("connect");
        stream
            .write_all(upgrade_request(path).as_bytes())
            .expect("send the request");
        Self { stream }
    }

    /// Reads the server's response head (a byte at a time, so no frame
    /// byte is taken), and checks it switches protocols. `limit` is a hang
    /// guard, the socket's read timeout: a server that never answers fails
    /// the test instead of hanging it.
    pub fn read_upgrade_response(&mut self, limit: Duration) {
        self.stream.set_read_timeout(Some(limit)).unwrap();
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            assert!(head.len() < 4096, "response head too long");
            let mut byte = [0];
            match self.stream.read(&mut byte) {
                Ok(0) => panic!("EOF in the response head"),
                Ok(_) => head.push(byte[0]),
                Err(e) if is_timeout(&e) => panic!("no response head (hang guard: {limit:?})"),
                Err(e) => panic!("reading the response head: {e}"),
            }
        }
        assert!(
            head.starts_with(b"HTTP/1.1 101 "),
            "{}",
            String::from_utf8_lossy(&head)
        );
    }

    /// Answers every ping with its pong, as a client, and sends `text`
    /// once it has answered `pings_first` pings, until the server's close
    /// arrives, which it answers. Returns how many pings it answered.
    ///
    /// # Panics
    ///
    /// On anything but pings and the close, on the end of the stream, and
    /// if no close arrives within `limit` (a hang guard, not a bound the
    /// server is held to).
    pub fn answer_pings_until_closed(
        &mut self,
        pings_first: usize,
        text: &str,
        limit: Duration,
    ) -> usize {
        let end = Instant::now() + limit;
        self.stream.set_read_timeout(Some(POLL)).unwrap();
        let mut wire = Vec::new();
        let mut buf = [0; 4096];
        let mut pings = 0;
        let mut sent = false;
        while Instant::now() < end {
            if !sent && pings >= pings_first {
                let frame = client_frame(OpCode::Text, text.as_bytes());
                self.stream.write_all(&frame).unwrap();
                sent = true;
            }
            match self.stream.read(&mut buf) {
                Ok(0) => panic!("the end of the stream before the closing handshake"),
                Ok(n) => wire.extend_from_slice(&buf[..n]),
                Err(e) if is_timeout(&e) => continue,
                Err(e) => panic!("reading: {e}"),
            }
            let (frames, used) = parse_complete_frames(&wire);
            wire.drain(..used);
            for frame in frames {
                let reply = match frame.header.opcode {
                    OpCode::Ping => {
                        pings += 1;
                        OpCode::Pong
                    }
                    OpCode::Close => OpCode::Close,
                    other => panic!("unexpected {other:?} frame"),
                };
                self.stream
                    .write_all(&client_frame(reply, &frame.payload))
                    .unwrap();
                if reply == OpCode::Close {
                    return pings;
                }
            }
        }
        panic!("no close within {limit:?}");
    }

    /// Reads what was sent to this peer until `done` holds for the frames
    /// so far, the stream ends, or `limit` passes.
    pub fn receive(&mut self, limit: Duration, done: impl Fn(&[WireFrame]) -> bool) -> Received {
        let end = Instant::now() + limit;
        self.stream.set_read_timeout(Some(POLL)).unwrap();
        let mut wire = Vec::new();
        let mut buf = [0; 4096];
        let mut ended = false;
        while Instant::now() < end {
            match self.stream.read(&mut buf) {
                Ok(0) => {
                    ended = true;
                    break;
                }
                Ok(n) => {
                    wire.extend_from_slice(&buf[..n]);
                    if done(&parse_complete_frames(&wire).0) {
                        break;
                    }
                }
                Err(e) if is_timeout(&e) => {}
                Err(e) => panic!("raw peer read: {e}"),
            }
        }
        let (frames, used) = parse_complete_frames(&wire);
        assert_eq!(used, wire.len(), "a frame cut short: {frames:?}");
        Received { frames, ended }
    }
}

fn is_timeout(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// What a silent keepalive peer receives: a ping, then the 1011 close.
pub const PING_THEN_1011: [(OpCode, Option<u16>); 2] =
    [(OpCode::Ping, None), (OpCode::Close, Some(1011))];

const MS: Duration = Duration::from_millis(1);
const SECOND: Duration = Duration::from_secs(1);

/// A peer that completed the handshake and went silent without a FIN.
pub struct SilentPeerCase {
    pub name: &'static str,
    pub config: Config,
    /// We start the closing handshake before reading.
    pub close_first: bool,
    pub kind: TimeoutKind,
    /// What the silent peer receives: opcode and close code of each frame.
    /// The order shows the rule was followed without a clock: a keepalive
    /// gives up only after its ping went out. When each deadline falls is
    /// the core's rule, asserted on simulated time (`src/proto/timers.rs`,
    /// tokio-lockgate's paused-clock tests).
    pub peer_receives: &'static [(OpCode, Option<u16>)],
}

pub fn silent_peer_cases() -> [SilentPeerCase; 2] {
    [
        SilentPeerCase {
            name: "keepalive: pinged after the interval, given up a timeout later",
            config: Config::default()
                .ping_interval(Some(SECOND))
                .ping_timeout(Some(SECOND)),
            close_first: false,
            kind: TimeoutKind::Keepalive,
            peer_receives: &PING_THEN_1011,
        },
        SilentPeerCase {
            name: "close: our close is never answered",
            config: Config::default()
                .ping_interval(None)
                .close_timeout(Some(500 * MS)),
            close_first: true,
            kind: TimeoutKind::Close,
            peer_receives: &[(OpCode::Close, None)],
        },
    ]
}

/// A peer that stops reading while our out buffer holds far more than the
/// sockets can take, then sends `trigger` and goes silent: the read that
/// owes the answer (and the data queued ahead of it) cannot write it, and
/// must still fail on its deadline, in every driver.
pub struct StalledPeerCase {
    pub name: &'static str,
    /// With the out buffer never written out by `write`.
    pub config: Config,
    /// The one frame the peer sends (masked), which the read owes an
    /// answer to.
    pub trigger: Vec<u8>,
    pub kind: TimeoutKind,
}

/// Queued before the read: far beyond loopback socket buffers (a few MiB).
pub const STALLED_OUTPUT: usize = 32 << 20;

pub fn stalled_peer_cases() -> [StalledPeerCase; 2] {
    let unwritten = |config: Config| {
        config
            .write_buffer_size(usize::MAX)
            .max_write_buffer_size(usize::MAX)
    };
    [
        StalledPeerCase {
            name: "keepalive: a pong owed behind queued data, the peer silent",
            config: unwritten(
                Config::default()
                    .ping_interval(Some(SECOND))
                    .ping_timeout(Some(SECOND)),
            ),
            trigger: super::client_frame(OpCode::Ping, b"are you there"),
            kind: TimeoutKind::Keepalive,
        },
        StalledPeerCase {
            name: "close: a close reply owed behind queued data",
            config: unwritten(
                Config::default()
                    .ping_interval(None)
                    .close_timeout(Some(500 * MS)),
            ),
            trigger: super::client_frame(OpCode::Close, &1000u16.to_be_bytes()),
            kind: TimeoutKind::Close,
        },
    ]
}

/// The most a [`Flood`] writes, whatever else happens.
const FLOOD_BYTES: u64 = 16 << 30;

/// The longest a [`Flood`] writes, whatever else happens: less than a
/// [`HangGuard`](crate::conformance::HangGuard)'s usual 20 s, so a flood
/// that ended on its own is told apart from one that was stopped.
const FLOOD_TIME: Duration = Duration::from_secs(15);

/// A [`RawPeer`] that never stops sending: one thread writes the same
/// frames over and over until told to stop (or 16 GiB or 15 s passed:
/// bounds that a test never reaches), another reads what the server sends, until its
/// close frame and the end of the stream.
#[derive(Debug)]
pub struct Flood {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// The writer stopped without being told: a bound, or a failed write.
    ended: std::sync::Arc<std::sync::atomic::AtomicBool>,
    writer: Option<std::thread::JoinHandle<()>>,
    reader: Option<std::thread::JoinHandle<Flooded>>,
    /// To end a write the server does not take.
    stream: TcpStream,
}

/// What a [`Flood`]'s reader received.
#[derive(Debug)]
pub struct Flooded {
    /// The complete frames, in order.
    pub frames: Vec<WireFrame>,
    /// The flood was still being written when the close frame arrived.
    pub flooding_at_close: bool,
    /// The stream ended (the server's FIN) after them.
    pub ended: bool,
    /// A read failed (a reset), and with what.
    pub failed: Option<io::ErrorKind>,
}

impl Flood {
    /// Starts flooding the server with `frames` (masked client frames),
    /// repeated, and reading what it sends, for at most `limit` after the
    /// close frame. `fin_on_close`: once the close frame is read, stop
    /// flooding and shut down our write side, as a peer that answers a
    /// close does; otherwise the flood goes on until [`stop`](Self::stop).
    pub fn start(peer: RawPeer, frames: &[u8], limit: Duration, fin_on_close: bool) -> Self {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};

        let stop = Arc::new(AtomicBool::new(false));
        let ended = Arc::new(AtomicBool::new(false));
        let mut writing = peer.stream.try_clone().expect("clone the peer's socket");
        let stopping = peer.stream.try_clone().expect("clone the peer's socket");
        let chunk = frames.repeat((64 * 1024 / frames.len()).max(1));
        let writer = {
            let (stop, ended) = (stop.clone(), ended.clone());
            std::thread::spawn(move || {
                let start = Instant::now();
                let mut written = 0;
                while !stop.load(Ordering::Acquire) {
                    if written >= FLOOD_BYTES
                        || start.elapsed() > FLOOD_TIME
                        || writing.write_all(&chunk).is_err()
                    {
                        ended.store(true, Ordering::Release);
                        return;
                    }
                    written += chunk.len() as u64;
                }
            })
        };
        let reader = {
            let (stop, ended) = (stop.clone(), ended.clone());
            let mut stream = peer.stream;
            std::thread::spawn(move || {
                stream.set_read_timeout(Some(POLL)).unwrap();
                let mut end = Instant::now() + FLOOD_TIME;
                let mut wire = Vec::new();
                let mut buf = [0; 4096];
                let mut received = Flooded {
                    frames: Vec::new(),
                    flooding_at_close: false,
                    ended: false,
                    failed: None,
                };
                let mut closed = false;
                while Instant::now() < end {
                    match stream.read(&mut buf) {
                        Ok(0) => {
                            received.ended = true;
                            break;
                        }
                        Ok(n) => wire.extend_from_slice(&buf[..n]),
                        Err(e) if is_timeout(&e) => continue,
                        Err(e) => {
                            received.failed = Some(e.kind());
                            break;
                        }
                    }
                    if !closed && super::has_close(&parse_complete_frames(&wire).0) {
                        closed = true;
                        received.flooding_at_close = !ended.load(Ordering::Acquire);
                        end = Instant::now() + limit;
                        if fin_on_close {
                            stop.store(true, Ordering::Release);
                            let _ = stream.shutdown(std::net::Shutdown::Write);
                        }
                    }
                }
                let (frames, _) = parse_complete_frames(&wire);
                received.frames = frames;
                received
            })
        };
        Self {
            stop,
            ended,
            writer: Some(writer),
            reader: Some(reader),
            stream: stopping,
        }
    }

    /// Whether the flood is still being written: not stopped, and not
    /// ended on its own (a bound, or a write the server refused).
    pub fn is_flooding(&self) -> bool {
        use std::sync::atomic::Ordering;
        !self.stop.load(Ordering::Acquire) && !self.ended.load(Ordering::Acquire)
    }

    /// What the reader received: waits for the close frame and then the
    /// end of the stream (or the limits of [`start`](Self::start)).
    pub fn received(&mut self) -> Flooded {
        self.reader
            .take()
            .expect("received once")
            .join()
            .expect("the flood's reader")
    }

    /// Stops the flood (a write the server does not take fails: our write
    /// side is shut down) and waits for its writer.
    pub fn stop(mut self) {
        self.stop_writer();
    }

    fn stop_writer(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        let _ = self.stream.shutdown(std::net::Shutdown::Write);
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

impl Drop for Flood {
    fn drop(&mut self) {
        self.stop_writer();
    }
}
