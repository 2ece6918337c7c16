//! Keepalive of the blocking driver on loopback TCP: `read` does not
//! return the pongs to keepalive pings (while the application's pongs and
//! unsolicited ones still come back), and a caller's own read timeout is
//! left alone. What a silent or stalled peer gets, a peer answering pings
//! staying connected, and the FIN after the closing handshake, are the
//! conformance kit's cases (tests/kit.rs).
//!
//! No assertion reads a clock: what the peer saw (pings, counted) and what
//! each call returned are the evidence, and generous hang guards turn a
//! call that never returns into a failure. When each deadline falls is
//! asserted on simulated time in `src/proto/timers.rs`.

use lockgate_kit as support;

use std::io;
use std::net::{TcpListener, TcpStream};
use std::thread;
use std::time::Duration;

use lockgate::frame::OpCode;
use lockgate::{Config, Error, Message, WebSocket};
use support::conformance::HangGuard;
use support::{RawPeer, summary};

const MS: Duration = Duration::from_millis(1);

/// The most a step that should be instant may take (the handshake, reading
/// back what the driver wrote).
const LIMIT: Duration = Duration::from_secs(10);

/// When a read that should return is made to fail instead of hanging the
/// test run (see [`HangGuard`]).
const HANG: Duration = Duration::from_secs(20);

/// A server `WebSocket` with `config` over loopback TCP, upgraded by a
/// [`RawPeer`] that then does nothing unless told.
fn server_and_raw_peer(config: Config) -> (WebSocket<TcpStream>, RawPeer) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut peer = RawPeer::connect(listener.local_addr().unwrap());
    let (stream, _) = listener.accept().unwrap();
    let ws = lockgate::ServerOptions::new()
        .config(config)
        .accept(stream)
        .unwrap();
    peer.read_upgrade_response(LIMIT);
    (ws, peer)
}

/// A lockgate client that reads at its own pace, so every ping is
/// answered with its own payload. It sends "quiet over" once it has seen
/// `pings_first` keepalive pings, and
/// on the application's ping "app" an unsolicited pong "heartbeat" and
/// then "bye". Returns the payloads of the other (keepalive) pings it saw
/// once the closing handshake completed.
fn echoing_peer(url: &str, pings_first: usize) -> Vec<Vec<u8>> {
    let (mut ws, _) = lockgate::connect(url).unwrap();
    ws.get_ref()
        .get_ref()
        .set_read_timeout(Some(50 * MS))
        .unwrap();
    let mut keepalive = Vec::new();
    let mut sent = false;
    for _ in 0..1000 {
        if !sent && keepalive.len() >= pings_first {
            ws.send(Message::text("quiet over")).unwrap();
            sent = true;
        }
        match ws.read() {
            Ok(Message::Ping(payload)) if payload == "app" => {
                ws.send(Message::Pong("heartbeat".into())).unwrap();
                ws.send(Message::text("bye")).unwrap();
            }
            Ok(Message::Ping(payload)) => keepalive.push(payload.to_vec()),
            Ok(Message::Close(_)) => {}
            Ok(other) => panic!("peer: unexpected {other:?}"),
            Err(Error::ConnectionClosed) => return keepalive,
            Err(Error::Io(e)) if is_timeout(&e) => {}
            Err(e) => panic!("peer: {e:?}"),
        }
    }
    panic!("peer: no closing handshake within 1000 reads");
}

/// The pong to a keepalive ping is the connection's business: `read`
/// never returns it, through several intervals of keepalive. The pong to
/// the application's own ping and an unsolicited pong are returned.
#[test]
fn keepalive_pongs_are_consumed_and_other_pongs_returned() {
    // Keepalive rounds before the peer speaks, counted by the peer.
    const PINGS_FIRST: usize = 3;
    let interval = 200 * MS;
    let config = Config::default()
        .ping_interval(Some(interval))
        .ping_timeout(Some(interval));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}/", listener.local_addr().unwrap());
    let peer = thread::spawn(move || echoing_peer(&url, PINGS_FIRST));
    let (stream, _) = listener.accept().unwrap();
    let mut ws = lockgate::ServerOptions::new()
        .config(config)
        .accept(stream)
        .unwrap();

    // Keepalive pings go out and are answered; nothing is returned (and
    // nothing fails) until the peer speaks.
    let first = ws.read().unwrap();
    assert_eq!(first, Message::text("quiet over"));

    // The application's ping gets its pong back; the unsolicited pong
    // that follows is returned as well.
    ws.send(Message::Ping("app".into())).unwrap();
    assert_eq!(ws.read().unwrap(), Message::Pong("app".into()));
    assert_eq!(ws.read().unwrap(), Message::Pong("heartbeat".into()));
    assert_eq!(ws.read().unwrap(), Message::text("bye"));

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
    assert!(matches!(end, Some(Err(Error::ConnectionClosed))), "{end:?}");
    let keepalive = peer.join().unwrap();
    // The peer spoke only after these: the connection lived through
    // them, each pong satisfying its ping's timeout.
    assert!(keepalive.len() >= PINGS_FIRST, "{} pings", keepalive.len());
    for (n, payload) in keepalive.iter().enumerate() {
        let expected = format!("lockgate keepalive {:03}", n + 1);
        assert_eq!(String::from_utf8_lossy(payload), expected);
    }
}

/// A caller's own read timeout is left alone: each `read` returns the
/// caller's timeout error, not after the driver's next deadline, and the
/// socket keeps the caller's setting; keepalive pings still go out
/// between such reads.
#[test]
fn a_callers_read_timeout_is_left_alone_and_pings_still_go_out() {
    const HOUR: Duration = Duration::from_secs(3600);
    for (interval, what) in [(HOUR, "reads return"), (300 * MS, "pings go out")] {
        let config = Config::default()
            .ping_interval(Some(interval))
            .ping_timeout(None);
        let (mut ws, mut peer) = server_and_raw_peer(config);
        ws.get_ref().set_read_timeout(Some(100 * MS)).unwrap();
        // As the kernel keeps it (rounded to its tick).
        let own = ws.get_ref().read_timeout().unwrap();
        // A driver that took the timeout over would wait for its deadline
        // (an hour in the first case): the guard makes that fail.
        let guard = HangGuard::on(peer.stream.try_clone().unwrap(), HANG);
        peer.stream.set_nonblocking(true).unwrap();
        let pinged = |peer: &RawPeer| peer.stream.peek(&mut [0]).is_ok_and(|n| n > 0);
        // Three reads; with keepalive due, as many as it takes for the
        // ping to reach the peer (bounded).
        let mut returns = 0;
        while returns < 3 || (interval < HOUR && !pinged(&peer) && returns < 200) {
            match ws.read() {
                Err(Error::Io(e)) if is_timeout(&e) => {}
                other => panic!("{what}: call {returns}: {other:?}"),
            }
            returns += 1;
        }
        drop(guard);
        assert_eq!(ws.get_ref().read_timeout().unwrap(), own, "{what}");
        if interval == HOUR {
            assert!(!pinged(&peer), "no ping an hour early");
            continue;
        }
        peer.stream.set_nonblocking(false).unwrap();
        let received = peer.receive(LIMIT, |frames| !frames.is_empty());
        let frames = summary(&received.frames);
        assert!(
            !frames.is_empty(),
            "{what}: no keepalive ping: {received:?}"
        );
        assert!(
            frames.iter().all(|&f| f == (OpCode::Ping, None)),
            "{received:?}"
        );
    }
}

fn is_timeout(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}
