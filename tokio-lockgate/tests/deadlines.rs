//! Keepalive and close deadlines of the tokio driver, every one on tokio's
//! paused clock (`start_paused`): on loopback TCP, a split read half
//! giving up on a silent peer while the write half idles; over a pipe,
//! the keepalive failure at exactly the time the rule says, and the pongs
//! to keepalive pings consumed (by `read` and the `Stream`) while the
//! application's pongs and unsolicited ones are returned. What a silent or
//! stalled peer gets, a peer answering pings staying connected, and the
//! FIN after the closing handshake, are the conformance kit's cases
//! (tests/kit.rs).
//!
//! Every elapsed time asserted here is the paused clock's
//! (`tokio::time::Instant`), which moves only to the next timer when
//! every task waits: simulated, exact, whatever the machine's load.

use lockgate_kit as support;

use std::time::Duration;

use futures_util::StreamExt;
use support::{PING_THEN_1011, RawPeer, has_close, parse_frames, summary};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{Instant, sleep_until, timeout};
use tokio_lockgate::{
    Config, Error, Message, Role, ServerOptions, TimeoutKind, WebSocketContext, WebSocketStream,
    accept_async_with,
};

const MS: Duration = Duration::from_millis(1);
const SECOND: Duration = Duration::from_secs(1);

/// The most a step that should be instant may take (the handshake, reading
/// back what the driver wrote).
const LIMIT: Duration = Duration::from_secs(10);

/// When a read that should fail on a deadline is given up on, so a
/// deadline that never fires fails the test instead of hanging it.
const HANG: Duration = Duration::from_secs(20);

/// A server connection with `config` over loopback TCP, upgraded by a
/// [`RawPeer`] that then does nothing unless told. The raw peer's socket
/// is a blocking one: it is only read once the driver is done.
async fn server_and_raw_peer(config: Config) -> (WebSocketStream<TcpStream>, RawPeer) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut peer = RawPeer::connect(listener.local_addr().unwrap());
    let (tcp, _) = listener.accept().await.unwrap();
    let ws = accept_async_with(tcp, ServerOptions::new().config(config))
        .await
        .unwrap();
    // The response is already written: this read does not wait.
    peer.read_upgrade_response(LIMIT);
    (ws, peer)
}

fn keepalive(interval: Duration, timeout: Duration) -> Config {
    Config::default()
        .ping_interval(Some(interval))
        .ping_timeout(Some(timeout))
}

#[tokio::test(start_paused = true)]
async fn a_split_read_half_fails_on_a_silent_peer_while_the_write_half_idles() {
    let interval = 300 * MS;
    let (ws, mut peer) = server_and_raw_peer(keepalive(interval, interval)).await;
    let (writer, mut reader) = ws.into_split();
    let start = Instant::now();
    let result = timeout(HANG, reader.read()).await;
    let took = start.elapsed();
    match result {
        Ok(Err(ref e)) if e.timeout() == Some(TimeoutKind::Keepalive) => {}
        other => panic!("{other:?} after {took:?} (simulated)"),
    }
    // Simulated time: the interval to the ping, the timeout after it.
    assert_eq!(took, 2 * interval, "simulated");

    let received = peer.receive(LIMIT, has_close);
    assert_eq!(summary(&received.frames), PING_THEN_1011, "{received:?}");
    drop(writer);
}

/// On a paused clock the deadline is exact: the first read arms the
/// keepalive interval at connection start, the ping goes out when it
/// passes, and the read fails when the ping timeout passes after that.
#[tokio::test(start_paused = true)]
async fn a_silent_peer_fails_at_exactly_interval_plus_timeout_on_a_paused_clock() {
    let (interval, ping_timeout) = (SECOND, 3 * SECOND);
    let (ours, mut peer_end) = tokio::io::duplex(4096);
    let mut ws = WebSocketStream::from_context(
        ours,
        WebSocketContext::new(Role::Server, keepalive(interval, ping_timeout)),
    );
    let start = Instant::now();
    let real = std::time::Instant::now();
    let result = ws.read().await;
    assert!(
        result.as_ref().err().and_then(|e| e.timeout()) == Some(TimeoutKind::Keepalive),
        "{result:?}"
    );
    assert_eq!(start.elapsed(), interval + ping_timeout, "simulated");
    // Virtual time only: no real wait for the deadlines (printed; the
    // exact simulated time above is the assertion).
    println!("{:?} of the wall clock", real.elapsed());

    // The peer end, read only now: the ping, then the 1011 close.
    drop(ws);
    let mut wire = Vec::new();
    peer_end.read_to_end(&mut wire).await.unwrap();
    assert_eq!(summary(&parse_frames(&wire)), PING_THEN_1011);
}

/// A tokio lockgate peer that keeps reading, so every ping is answered
/// with its own payload. It sends "quiet over" at `send_at`, and on the
/// application's ping "app" an unsolicited pong "heartbeat" and then
/// "bye". Returns the payloads of the other (keepalive) pings it saw once
/// the closing handshake completed.
async fn echoing_peer<S>(mut ws: WebSocketStream<S>, send_at: Instant) -> Vec<Vec<u8>>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut keepalive = Vec::new();
    let mut sent = false;
    for _ in 0..1000 {
        tokio::select! {
            result = ws.read() => match result {
                Ok(Message::Ping(payload)) if payload == "app" => {
                    ws.send(Message::Pong("heartbeat".into())).await.unwrap();
                    ws.send(Message::text("bye")).await.unwrap();
                }
                Ok(Message::Ping(payload)) => keepalive.push(payload.to_vec()),
                Ok(Message::Close(_)) => {}
                Err(Error::ConnectionClosed) => return keepalive,
                other => panic!("peer: {other:?}"),
            },
            () = sleep_until(send_at), if !sent => {
                ws.send(Message::text("quiet over")).await.unwrap();
                sent = true;
            }
        }
    }
    panic!("peer: no closing handshake within 1000 reads");
}

/// The pong to a keepalive ping is the connection's business: neither
/// `read` nor the `Stream` returns it, through several intervals of
/// keepalive on a paused clock. The pong to the application's own ping and
/// an unsolicited pong are returned.
#[tokio::test(start_paused = true)]
async fn keepalive_pongs_are_consumed_and_other_pongs_returned_on_a_paused_clock() {
    let quiet = 10 * SECOND;
    let (ours, theirs) = tokio::io::duplex(4096);
    let mut ws = WebSocketStream::from_context(
        ours,
        WebSocketContext::new(Role::Server, keepalive(SECOND, SECOND)),
    );
    let peer_config = Config::default().ping_interval(None);
    let peer =
        WebSocketStream::from_context(theirs, WebSocketContext::new(Role::Client, peer_config));
    let start = Instant::now();
    let peer = tokio::spawn(echoing_peer(peer, start + quiet));

    // Keepalive pings go out and are answered; the stream yields nothing
    // (and nothing fails) until the peer speaks.
    let first = ws.next().await.unwrap().unwrap();
    assert_eq!(first, Message::text("quiet over"));
    assert_eq!(start.elapsed(), quiet);

    // The application's ping gets its pong back; the unsolicited pong
    // that follows is returned as well.
    ws.send(Message::Ping("app".into())).await.unwrap();
    assert_eq!(ws.read().await.unwrap(), Message::Pong("app".into()));
    let heartbeat = ws.next().await.unwrap().unwrap();
    assert_eq!(heartbeat, Message::Pong("heartbeat".into()));
    assert_eq!(ws.read().await.unwrap(), Message::text("bye"));

    ws.close(None).await.unwrap();
    let mut end = None;
    for _ in 0..10 {
        match ws.read().await {
            Ok(Message::Close(_)) => {}
            other => {
                end = Some(other);
                break;
            }
        }
    }
    assert!(matches!(end, Some(Err(Error::ConnectionClosed))), "{end:?}");
    let keepalive = peer.await.unwrap();
    // Quiet for an interval, pinged, answered at once, the timeout passes
    // heard from, quiet for another interval: pings at 1, 3, 5, 7 and 9 s.
    let expected: Vec<Vec<u8>> = (1..=5)
        .map(|n| format!("lockgate keepalive {n:03}").into_bytes())
        .collect();
    assert_eq!(keepalive, expected);
}
