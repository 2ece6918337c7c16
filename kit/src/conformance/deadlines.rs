//! The deadlines of an upgraded connection over a real socket, against a
//! [`RawPeer`] that does only what the case says: a silent peer fails the
//! read with the timeout its rule names, also while the read cannot write
//! the answer it owes to a peer that stopped reading; after the peer's
//! close, our write side is shut down (the peer reads our FIN while the
//! connection is still held). Run by [`handshake_suite!`](crate::handshake_suite).
//!
//! No assertion here reads a clock: a case shows its rule by what the
//! peer observed (the ping before the 1011 close, our close) and the
//! error's kind, and a [`HangGuard`] turns a deadline that never fires
//! into a failure instead of a hung run. When each deadline falls is
//! asserted on simulated time: the core's `Instant`s in
//! `src/proto/timers.rs`, tokio's paused clock in tokio-lockgate's
//! `tests/deadlines.rs`.

use std::io::Write;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use lockgate::frame::{CloseCode, OpCode};
use lockgate::{Config, Error, Message, ServerOptions};

use super::{HangGuard, Session, Sockets};
use crate::{
    RawPeer, STALLED_OUTPUT, client_frame, has_close, silent_peer_cases, stalled_peer_cases,
    summary,
};

/// The most a step that should be instant may take (the handshake, reading
/// back what the driver wrote).
const LIMIT: Duration = Duration::from_secs(10);

/// When a read that should fail on a deadline is made to fail instead of
/// hanging the test run.
const HANG: Duration = Duration::from_secs(20);

/// A server connection with `config` over loopback TCP, upgraded by a
/// [`RawPeer`] that then does nothing unless told, and a [`HangGuard`] on
/// the server's socket.
pub(super) fn server_and_raw_peer<D: Sockets>(
    config: Config,
) -> (Box<dyn Session>, RawPeer, HangGuard) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut peer = RawPeer::connect(listener.local_addr().unwrap());
    let (tcp, _) = listener.accept().unwrap();
    let guard = HangGuard::on(tcp.try_clone().unwrap(), HANG);
    let ws = D::accept(tcp, ServerOptions::new().config(config)).unwrap();
    peer.read_upgrade_response(LIMIT);
    (ws, peer, guard)
}

/// A peer that completed the handshake and went silent (no FIN) fails
/// the read with the timeout of the rule: keepalive, or close after our
/// close frame. It receives the ping and the 1011 close, or our close.
pub fn a_silent_peer_fails_the_read_with_a_timeout<D: Sockets>() {
    for case in silent_peer_cases() {
        let name = case.name;
        let (mut ws, mut peer, guard) = server_and_raw_peer::<D>(case.config);
        let start = Instant::now();
        if case.close_first {
            ws.close(None).unwrap();
        }
        let result = ws.read();
        let took = start.elapsed();
        drop(guard);
        println!("{name}: {result:?} after {took:?}");
        match result {
            Err(error) if error.timeout() == Some(case.kind) => {}
            other => panic!("{name}: {other:?}"),
        }
        assert!(matches!(ws.read(), Err(Error::AlreadyClosed)), "{name}");

        let received = peer.receive(LIMIT, has_close);
        assert_eq!(
            summary(&received.frames),
            case.peer_receives,
            "{name}: {received:?}"
        );
    }
}

/// A read that owes a pong or close reply behind far more output than the
/// sockets hold, to a peer that stopped reading and went silent, still
/// fails on its deadline (the frame that owes the answer is returned
/// first).
pub fn a_read_blocked_on_owed_output_still_fails_on_its_deadline<D: Sockets>() {
    for case in stalled_peer_cases() {
        let name = case.name;
        let (mut ws, mut peer, guard) = server_and_raw_peer::<D>(case.config);
        ws.write(Message::binary(vec![0; STALLED_OUTPUT])).unwrap();
        assert_eq!(ws.buffered_output(), STALLED_OUTPUT + 10, "{name}: queued");
        peer.stream.write_all(&case.trigger).unwrap();
        let trigger = ws.read();
        let result = ws.read();
        drop(guard);
        assert!(trigger.is_ok(), "{name}: {trigger:?}");
        // Within the hang guard's time, which a deadline blocked behind
        // the stalled write would outlast: the guard's shutdown would fail
        // the read with an I/O error instead.
        match result {
            Err(error) if error.timeout() == Some(case.kind) => {}
            other => panic!("{name}: {other:?}"),
        }
        // Some of the output stayed behind: the write really was blocked.
        assert!(ws.buffered_output() > 0, "{name}: everything went out");
    }
}

/// After the peer's close and our reply, the write side is shut down: the
/// peer reads the reply, then the end of the stream, while the connection
/// is still held.
pub fn after_the_peers_close_our_write_side_is_shut_down<D: Sockets>() {
    let (mut ws, mut peer, guard) = server_and_raw_peer::<D>(Config::default());
    peer.stream
        .write_all(&client_frame(OpCode::Close, &1000u16.to_be_bytes()))
        .unwrap();
    match ws.read() {
        Ok(Message::Close(Some(frame))) => assert_eq!(frame.code, CloseCode::Normal),
        other => panic!("{other:?}"),
    }
    assert!(matches!(ws.read(), Err(Error::ConnectionClosed)));
    drop(guard);

    // `ws` is alive: the FIN comes from the shutdown, not from a drop.
    let received = peer.receive(LIMIT, |_| false);
    assert_eq!(
        summary(&received.frames),
        [(OpCode::Close, Some(1000))],
        "{received:?}"
    );
    assert!(received.ended, "no EOF after the close reply: {received:?}");
    drop(ws);
}

/// A peer that answers every keepalive ping stays connected: the pongs are
/// consumed, never returned, and the read returns the peer's message when
/// it comes, however many intervals later (here: after three
/// pings answered, counted by the peer, not timed); the closing handshake
/// then completes.
pub fn a_peer_that_answers_pings_stays_connected<D: Sockets>() {
    const PINGS_FIRST: usize = 3;
    let interval = Duration::from_millis(300);
    let config = Config::default()
        .ping_interval(Some(interval))
        .ping_timeout(Some(interval));
    let (mut ws, mut peer, guard) = server_and_raw_peer::<D>(config);
    let answering =
        std::thread::spawn(move || peer.answer_pings_until_closed(PINGS_FIRST, "still here", HANG));
    // One read through every keepalive round until the peer speaks.
    let received = ws.read();
    assert_eq!(received.unwrap(), Message::text("still here"));
    ws.close(None).unwrap();
    let mut end = None;
    for _ in 0..10 {
        match ws.read() {
            Ok(Message::Close(_)) => {}
            other => {
                end = Some(other);
                break;
            }
        }
    }
    drop(guard);
    assert!(matches!(end, Some(Err(Error::ConnectionClosed))), "{end:?}");
    let pings = answering.join().unwrap();
    assert!(pings >= PINGS_FIRST, "the peer answered {pings} pings");
}
