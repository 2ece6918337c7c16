//! The floors of the echo-at-scale row: echo servers with no WebSocket
//! library and no async runtime, so that what they cost per message is
//! what the kernel and the readiness or completion machinery cost.
//!
//! - `floor-epoll` ([`epoll`]): mio (epoll, edge-triggered), reading until
//!   `WouldBlock` and writing what that read produced at once.
//! - `floor-uring` ([`uring`]): io_uring set up for a server that does
//!   nothing else: one multishot receive per connection into a ring of
//!   provided buffers, `DEFER_TASKRUN` with a single issuer, and every
//!   send of a pass over the completions submitted together; the thread
//!   waits in `io_uring_enter`, as a runtime whose event loop is the ring
//!   would.
//! - `floor-uring-epoll`: the same ring, but the thread waits in
//!   `epoll_wait` on an eventfd the ring signals, as a ring driven from
//!   inside a readiness runtime (tokio's) must.
//! - `floor-uring-nodefer`: the same as `floor-uring` without
//!   `DEFER_TASKRUN`, as tokio-uring sets its ring up: the kernel runs each
//!   completion's work when it interrupts the thread, not when the thread
//!   asks.
//!
//! They run one event loop per thread, as the uring-lockgate server does
//! ([`threads`]), and answer frames with the same hand-written code ([`Echo`]):
//! the handshake's fixed response, then each masked frame unmasked into
//! a server frame. They serve only the scale load's traffic (frames
//! under 64 KiB; a close frame or anything larger ends the connection).
//!
//! Not in the report: `bench-peers __scale_load echo floor-uring batching
//! 10000 500 16 1000 3000` runs one (the form is ignored). BENCHMARKS.md
//! says what they showed.

mod epoll;
mod uring;

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use super::servers::{Live, upgrade_response};
use super::threads::{self, Hand};
use crate::{frames, upgrade};

/// Which floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Floor {
    /// mio's epoll loop.
    Epoll,
    /// The bare io_uring loop.
    Uring,
    /// The same ring, waited for with epoll.
    UringEpoll,
    /// The same ring without `DEFER_TASKRUN`.
    UringNoDefer,
}

impl Floor {
    /// The floor a load names, if `name` is one.
    pub(super) fn named(name: &str) -> Option<Self> {
        match name {
            "floor-epoll" => Some(Self::Epoll),
            "floor-uring" => Some(Self::Uring),
            "floor-uring-epoll" => Some(Self::UringEpoll),
            "floor-uring-nodefer" => Some(Self::UringNoDefer),
            _ => None,
        }
    }

    /// Starts one loop of this floor on its own thread; the function
    /// returned hands it a socket.
    fn spawn(self, live: Arc<AtomicUsize>) -> Hand {
        let shared = Shared {
            live,
            response: upgrade_response(),
        };
        match self {
            Floor::Epoll => epoll::spawn(shared),
            Floor::Uring => uring::spawn(uring::Setup::FLOOR, shared),
            Floor::UringEpoll => uring::spawn(uring::Setup::EPOLL, shared),
            Floor::UringNoDefer => uring::spawn(uring::Setup::NO_DEFER, shared),
        }
    }
}

/// Serves the echo scenario until stdin closes (the control thread ends
/// the process).
pub(super) fn serve_echo(floor: Floor) -> ! {
    threads::serve("floor", |live| floor.spawn(live))
}

/// What the connections of one loop share: the count of live ones, and
/// the handshake's response (made once, not per connection).
pub(super) struct Shared {
    live: Arc<AtomicUsize>,
    response: Arc<str>,
}

/// One connection's protocol state: the bytes of an incomplete frame (or
/// handshake head), and whether it counts as live.
#[derive(Default)]
pub(super) struct Echo {
    pending: Vec<u8>,
    live: Option<Live>,
}

impl Echo {
    /// Takes `input`, appending the replies to `out`; `false` once the
    /// connection is to end (a close frame, or a frame this floor does not
    /// serve).
    pub(super) fn feed(&mut self, input: &[u8], out: &mut Vec<u8>, shared: &Shared) -> bool {
        self.pending.extend_from_slice(input);
        if self.live.is_none() {
            let Some(end) = upgrade::head_end(&self.pending) else {
                return self.pending.len() < 8192;
            };
            self.pending.drain(..end);
            out.extend_from_slice(shared.response.as_bytes());
            self.live = Some(Live::new(&shared.live));
        }
        let (used, open) = echo_frames(&self.pending, out);
        self.pending.drain(..used);
        if !open {
            self.live = None;
        }
        open
    }
}

/// Echoes each whole masked frame of `input` into `out` as a server frame:
/// (bytes used, whether the connection stays open).
fn echo_frames(input: &[u8], out: &mut Vec<u8>) -> (usize, bool) {
    let mut at = 0;
    while let [first, second, rest @ ..] = &input[at..] {
        let (len, ext) = match second & 0x7f {
            126 => match rest {
                [hi, lo, ..] => (usize::from(u16::from_be_bytes([*hi, *lo])), 2),
                _ => break,
            },
            127 => return (at, false),
            short => (usize::from(short), 0),
        };
        let Some(frame) = rest.get(ext..ext + 4 + len) else {
            break;
        };
        if first & 0x0f == 0x8 || second & 0x80 == 0 {
            return (at, false);
        }
        let (key, payload) = frame.split_at(4);
        frames::put_header(out, *first, len, false);
        out.extend(payload.iter().zip(key.iter().cycle()).map(|(b, k)| b ^ k));
        at += 2 + ext + 4 + len;
    }
    (at, true)
}

#[cfg(test)]
mod tests {
    use std::net::{TcpListener, TcpStream};

    use std::sync::atomic::Ordering;

    use super::*;
    use crate::frames::{OP_BINARY, encode};

    /// A client frame: FIN + `opcode`, masked with `key`.
    fn masked(opcode: u8, payload: &[u8], key: [u8; 4]) -> Vec<u8> {
        let mut f = Vec::new();
        encode(&mut f, opcode, payload, Some(key));
        f
    }

    /// One loop's shared state, with no connection live.
    fn shared() -> Shared {
        Shared {
            live: Arc::new(AtomicUsize::new(0)),
            response: upgrade_response(),
        }
    }

    #[test]
    fn frames_come_back_unmasked_whole_or_split_anywhere() {
        let payloads: [&[u8]; 3] = [b"", &[7; 64], &[9; 300]];
        let mut input = Vec::new();
        let mut want = Vec::new();
        for p in payloads {
            input.extend(masked(OP_BINARY, p, [1, 2, 3, 4]));
            encode(&mut want, OP_BINARY, p, None);
        }
        let shared = shared();
        for split in 0..=input.len() {
            let mut echo = Echo {
                live: Some(Live::new(&shared.live)),
                ..Echo::default()
            };
            let mut out = Vec::new();
            assert!(echo.feed(&input[..split], &mut out, &shared));
            assert!(echo.feed(&input[split..], &mut out, &shared));
            assert_eq!(out, want, "split at {split}");
        }
    }

    #[test]
    fn the_handshake_is_answered_then_a_close_frame_ends_the_connection() {
        let shared = shared();
        let mut echo = Echo::default();
        let mut out = Vec::new();
        assert!(echo.feed(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", &mut out, &shared));
        assert_eq!(out, upgrade_response().as_bytes());
        assert_eq!(shared.live.load(Ordering::Relaxed), 1);
        assert!(!echo.feed(&masked(0x8, b"", [0; 4]), &mut out, &shared));
        assert_eq!(shared.live.load(Ordering::Relaxed), 0);
    }

    /// Each floor's event loop over a real socket: the handshake, 200
    /// echoes written in one go and read back byte for byte, and the end
    /// of the connection after a close frame.
    #[test]
    fn each_floor_echoes_over_loopback_and_ends_on_close() {
        use std::io::{Read, Write};
        use std::time::Duration;
        for floor in [
            Floor::Epoll,
            Floor::Uring,
            Floor::UringEpoll,
            Floor::UringNoDefer,
        ] {
            let hand = floor.spawn(Arc::new(AtomicUsize::new(0)));
            let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
            let mut client =
                TcpStream::connect(listener.local_addr().expect("address")).expect("connect");
            client
                .set_read_timeout(Some(Duration::from_secs(10)))
                .expect("timeout");
            hand(listener.accept().expect("accept").0);

            client
                .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                .expect("head");
            let mut head = vec![0; upgrade_response().len()];
            client.read_exact(&mut head).expect("response");
            assert_eq!(head, upgrade_response().as_bytes(), "{floor:?}");

            let mut frames = Vec::new();
            let mut want = Vec::new();
            for i in 0..200u32 {
                let payload: Vec<u8> = (0..64).map(|j| (i + j) as u8).collect();
                frames.extend(masked(OP_BINARY, &payload, i.to_be_bytes()));
                encode(&mut want, OP_BINARY, &payload, None);
            }
            client.write_all(&frames).expect("frames");
            let mut got = vec![0; want.len()];
            client.read_exact(&mut got).expect("echoes");
            assert!(got == want, "{floor:?}: echoes differ");

            client.write_all(&masked(0x8, b"", [9; 4])).expect("close");
            let mut rest = Vec::new();
            client
                .read_to_end(&mut rest)
                .expect("the end of the stream");
            assert!(
                rest.is_empty(),
                "{floor:?}: {} bytes after the close",
                rest.len()
            );
        }
    }
}
