//! Rate limits over a real socket, against a [`RawPeer`](crate::RawPeer) that floods: a
//! throttled read hands messages over no faster than the limit allows and
//! keeps the connection, and the Close policy fails the read with the
//! limit that was overrun and tells the peer 1008. No assertion reads a
//! clock: the pace itself (the burst at once, then one message per
//! refill) is asserted on simulated time, in the core's unit tests
//! (`src/proto/rate_limit.rs`) and on tokio's paused clock
//! (tokio-lockgate's `tests/rate_limits.rs`); over a real socket each
//! driver shows it waits out the throttle without losing, reordering or
//! closing anything, and the flooding tests show by counts that a flood
//! is still held back while another connection is served. Run by
//! [`handshake_suite!`](crate::handshake_suite).

use std::io::Write;
use std::time::{Duration, Instant};

use lockgate::frame::{CloseCode, OpCode};
use lockgate::{Config, Message, RateLimit, RatePolicy};

use super::Sockets;
use super::deadlines::server_and_raw_peer;
use crate::{client_frame, has_close, summary};

/// Messages a second the cases allow a peer.
pub const RATE: u32 = 20;
/// Messages the cases let through at once.
pub const BURST: u32 = 10;

/// The most a step that should be instant may take.
const LIMIT: Duration = Duration::from_secs(10);

/// A peer sends 30 messages at once to a connection limited to 20 a
/// second after a burst of 10: the read waits out the throttle (about a
/// second, printed) and returns each, in order, and the connection stays
/// open.
pub fn a_throttled_read_keeps_the_pace_and_the_connection<D: Sockets>() {
    let limit = RateLimit::messages_per_second(RATE).message_burst(BURST);
    let (mut ws, mut peer, guard) = server_and_raw_peer::<D>(Config::default().rate_limit(limit));
    let flood: Vec<u8> = (0..30)
        .flat_map(|i| client_frame(OpCode::Text, format!("{i:02}").as_bytes()))
        .collect();
    let start = Instant::now();
    peer.stream.write_all(&flood).unwrap();
    for i in 0..30 {
        match ws.read() {
            Ok(Message::Text(text)) => assert_eq!(text.as_str(), format!("{i:02}")),
            other => panic!("message {i}: {other:?}"),
        }
    }
    println!(
        "30 messages at {BURST} + {RATE}/s: {:?} (the limit allows 1 s at the least)",
        start.elapsed()
    );
    ws.write(Message::text("still open")).unwrap();
    ws.close(None).unwrap();
    drop(guard);
    let received = peer.receive(LIMIT, has_close);
    assert_eq!(
        summary(&received.frames),
        [(OpCode::Text, None), (OpCode::Close, None)],
        "{received:?}"
    );
}

/// With the Close policy, the message that overruns the limit fails the
/// read with [`Detail::ByteRateExceeded`](lockgate::Detail::ByteRateExceeded), after the messages
/// within it were returned, and the peer receives a 1008 close.
pub fn the_close_policy_fails_the_read_and_tells_the_peer_1008<D: Sockets>() {
    let limit = RateLimit::bytes_per_second(1000).policy(RatePolicy::Close);
    let (mut ws, mut peer, guard) = server_and_raw_peer::<D>(Config::default().rate_limit(limit));
    // Two 600-byte messages: the second overruns the 1000-byte burst.
    let frame = client_frame(OpCode::Binary, &[0; 600]);
    peer.stream.write_all(&frame.repeat(2)).unwrap();
    assert!(matches!(ws.read(), Ok(Message::Binary(data)) if data.len() == 600));
    let error = ws.read().unwrap_err();
    drop(guard);
    assert!(
        matches!(
            error.detail(),
            Some(lockgate::error::Detail::ByteRateExceeded {
                per_second: 1000,
                burst: 1000,
            })
        ),
        "{error:?}"
    );
    let received = peer.receive(LIMIT, has_close);
    assert_eq!(
        summary(&received.frames),
        [(OpCode::Close, Some(u16::from(CloseCode::Policy)))],
        "{received:?}"
    );
}

/// The bound a flooding peer's echoes keep while another connection of the
/// same server is served, in counts: at least the burst came back, and
/// not the whole `flood` (`flood` is many seconds' worth at the limit):
/// the flood is still being throttled while the other is answered.
pub fn assert_throttled_while_another_is_served(flooded: usize, flood: usize) {
    assert!(
        flooded >= BURST as usize,
        "{flooded} echoes: not even the burst"
    );
    assert!(
        flooded < flood,
        "{flooded} of {flood} echoed: no longer throttled while the other was served"
    );
}
