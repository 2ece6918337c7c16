//! A close frame that always arrives: a peer that floods the server over
//! real TCP still receives the close code of the failure it caused (1008
//! for the rate limit's Close policy, 1009 for an oversized message),
//! although the server drops the connection as soon as its read fails,
//! because that read lingers first: it shuts down the write side and
//! discards input until the peer's FIN. A peer that never stops sending
//! holds the read no longer than the close timeout. Run by
//! [`handshake_suite!`](crate::handshake_suite).
//!
//! No case compares elapsed time: the close timeout's bound is shown by
//! order (the read returned while the flood, bounded at 15 s, was still
//! being written, and a read that ignored its deadline would have waited
//! for the flood to end, which a [`HangGuard`](super::HangGuard) of 20 s
//! then ends).

use std::time::Duration;

use lockgate::frame::{CloseCode, OpCode};
use lockgate::{CapacityError, Config, Error, Message, RateLimit, RatePolicy};

use super::Sockets;
use super::deadlines::server_and_raw_peer;
use super::rate_limits::{BURST, RATE};
use crate::{Flood, client_frame, summary};

/// The most a step that should be instant may take.
const LIMIT: Duration = Duration::from_secs(10);

/// The most messages the server reads before the failure (the rate
/// limit's burst, and a margin).
const READS: usize = 1000;

/// A flood that fails the server's read with a close code.
struct FloodCase {
    name: &'static str,
    config: Config,
    /// What the peer sends, over and over.
    frame: Vec<u8>,
    code: CloseCode,
    /// The error the server's read fails with.
    fails_with: fn(&Error) -> bool,
}

fn flood_cases() -> [FloodCase; 2] {
    [
        FloodCase {
            name: "the rate limit's Close policy: 1008",
            config: Config::default().rate_limit(
                RateLimit::messages_per_second(RATE)
                    .message_burst(BURST)
                    .policy(RatePolicy::Close),
            ),
            frame: client_frame(OpCode::Text, b"flood"),
            code: CloseCode::Policy,
            fails_with: |e| {
                matches!(
                    e.detail(),
                    Some(lockgate::error::Detail::MessageRateExceeded { .. })
                )
            },
        },
        FloodCase {
            name: "an oversized message: 1009",
            config: Config::default().max_message_size(Some(1024)),
            frame: client_frame(OpCode::Binary, &[7; 4096]),
            code: CloseCode::Size,
            fails_with: |e| matches!(e, Error::Capacity(CapacityError::MessageTooLong { .. })),
        },
    ]
}

/// Reads until the read fails: the error, after at most [`READS`]
/// messages, each a data message.
fn read_until_failure(ws: &mut dyn super::Session, name: &str) -> Error {
    for _ in 0..READS {
        match ws.read() {
            Ok(Message::Text(_) | Message::Binary(_)) => {}
            Ok(other) => panic!("{name}: {other:?}"),
            Err(error) => return error,
        }
    }
    panic!("{name}: no failure in {READS} messages");
}

/// A peer floods the server until it reads the close frame, then stops
/// and closes its side (as a peer that answers a close does); the server
/// drops the connection as soon as its read fails. The peer reads the
/// close code of the failure, then the server's FIN, and no reset. (When
/// the failed read returned at once, the drop with the flood unread
/// reset the connection, and a reset discards what the peer has not read
/// yet, the close frame included: over a network, the close was lost.)
pub fn a_flooding_peer_receives_the_close_code<D: Sockets>() {
    for case in flood_cases() {
        let name = case.name;
        let (mut ws, peer, guard) = server_and_raw_peer::<D>(case.config);
        let mut flood = Flood::start(peer, &case.frame, LIMIT, true);
        let error = read_until_failure(ws.as_mut(), name);
        // What a server does on an error: drop the connection.
        drop(ws);
        drop(guard);
        assert!((case.fails_with)(&error), "{name}: {error:?}");
        let received = flood.received();
        flood.stop();
        assert_eq!(
            summary(&received.frames),
            [(OpCode::Close, Some(u16::from(case.code)))],
            "{name}: {received:?}"
        );
        assert!(received.flooding_at_close, "{name}: {received:?}");
        assert!(received.ended, "{name}: no FIN: {received:?}");
        assert_eq!(received.failed, None, "{name}: {received:?}");
    }
}

/// A peer that floods and never stops (nor closes its side) holds the
/// failing read no longer than the close timeout: the read returns its
/// error while the flood is still being written. Meanwhile the peer read
/// the close code and the server's FIN, sent before the discarding began.
pub fn a_peer_that_never_stops_sending_is_given_up_at_the_close_timeout<D: Sockets>() {
    let config = Config::default()
        .max_message_size(Some(1024))
        .close_timeout(Some(Duration::from_millis(300)));
    let (mut ws, peer, guard) = server_and_raw_peer::<D>(config);
    let mut flood = Flood::start(
        peer,
        &client_frame(OpCode::Binary, &[7; 4096]),
        LIMIT,
        false,
    );
    let error = ws.read().unwrap_err();
    let flooding = flood.is_flooding();
    drop(guard);
    assert!(
        matches!(error, Error::Capacity(CapacityError::MessageTooLong { .. })),
        "{error:?}"
    );
    assert!(flooding, "the read waited for the flood to end");
    // `ws` is still alive: the FIN came from the shutdown after the close.
    let received = flood.received();
    assert_eq!(
        summary(&received.frames),
        [(OpCode::Close, Some(1009))],
        "{received:?}"
    );
    assert!(received.ended, "no FIN after the close: {received:?}");
    drop(ws);
    flood.stop();
}
