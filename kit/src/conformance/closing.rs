//! The closing handshake and the end of the stream: the peer's close is
//! returned and echoed, ours is flushed and the peer's reply ends the
//! connection, a close reply the stream cannot take goes out with the next
//! call, and an end of stream before the handshake is a reset.

use lockgate::frame::{CloseCode, OpCode};
use lockgate::{CloseFrame, Error, Message, ProtocolError};

use super::{Connection, Driver, server, until_done};
use crate::{MockStream, ReadStep, client_frame, parse_frames};

/// Read eof in the middle is a reset not a hang.
pub fn read_eof_in_the_middle_is_a_reset_not_a_hang<D: Driver>() {
    let mut stream = MockStream::new();
    stream.push_input(client_frame(OpCode::Text, b"whole")[..4].to_vec());
    stream.reads.push_back(ReadStep::Eof);
    let mut ws = server::<D>(stream);
    let err = ws.read().unwrap_err();
    assert!(
        matches!(
            err,
            Error::Protocol(ProtocolError::ResetWithoutClosingHandshake)
        ),
        "{err:?}"
    );
}

/// The peer's close is returned and echoed (code 1000, flushed); the
/// next read reports the completed handshake, every later one that the
/// connection is closed, and a write is refused.
pub fn the_peers_close_is_returned_echoed_and_ends_the_connection<D: Driver>() {
    let mut stream = MockStream::new();
    stream.push_input(client_frame(OpCode::Text, b"last words"));
    stream.push_input(client_frame(OpCode::Close, &1000u16.to_be_bytes()));
    stream.reads.push_back(ReadStep::Eof);
    let mut ws = server::<D>(stream);
    assert_eq!(ws.read().unwrap(), Message::text("last words"));
    match ws.read().unwrap() {
        Message::Close(Some(frame)) => assert_eq!(frame.code, CloseCode::Normal),
        other => panic!("{other:?}"),
    }
    assert_eq!(ws.mock().flush_calls, 1, "the reply was flushed");
    let frames = parse_frames(&ws.mock().written);
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].close_code(), Some(1000), "the close was echoed");
    assert!(
        matches!(ws.read(), Err(Error::ConnectionClosed)),
        "the handshake is complete"
    );
    assert!(matches!(ws.read(), Err(Error::AlreadyClosed)));
    assert!(ws.write(Message::text("too late")).is_err());
    assert_eq!(parse_frames(&ws.mock().written).len(), 1, "nothing more");
}

/// `close` sends our close frame and flushes; the peer's reply is
/// returned, then the handshake is complete.
pub fn our_close_is_flushed_and_the_peers_reply_ends_the_connection<D: Driver>() {
    let mut ws = server::<D>(MockStream::new());
    ws.write(Message::text("before")).unwrap();
    let frame = CloseFrame {
        code: CloseCode::Away,
        reason: "restarting".into(),
    };
    ws.close(Some(frame)).unwrap();
    assert_eq!(ws.mock().flush_calls, 1, "close flushes");
    let frames = parse_frames(&ws.mock().written);
    assert_eq!(frames.len(), 2, "the data ahead of the close went first");
    assert_eq!(frames[1].close_code(), Some(1001));
    assert_eq!(&frames[1].payload[2..], b"restarting");
    assert!(ws.write(Message::text("after close")).is_err());

    ws.script(|mock| {
        mock.push_input(client_frame(OpCode::Close, &1001u16.to_be_bytes()));
        mock.reads.push_back(ReadStep::Eof);
    });
    assert!(matches!(ws.read(), Ok(Message::Close(Some(_)))));
    assert!(matches!(ws.read(), Err(Error::ConnectionClosed)));
    assert_eq!(
        parse_frames(&ws.mock().written).len(),
        2,
        "a reply is not answered"
    );
}

/// A close reply the stream cannot take now waits in the out buffer: the
/// read returns the peer's close, and the next call sends and flushes
/// the reply before the handshake completes.
pub fn a_close_reply_the_stream_cannot_take_is_sent_by_the_next_call<D: Driver>() {
    let mut stream = MockStream::new();
    stream.write_blocked = true;
    stream.push_input(client_frame(OpCode::Close, &1000u16.to_be_bytes()));
    stream.reads.push_back(ReadStep::Eof);
    let mut ws = server::<D>(stream);
    assert!(matches!(ws.read(), Ok(Message::Close(Some(_)))));
    assert!(ws.mock().written.is_empty());
    assert!(ws.buffered_output() > 0, "the reply waits");
    ws.script(|mock| mock.write_blocked = false);
    let ended = until_done(|| match ws.read() {
        Err(Error::ConnectionClosed) => Ok(true),
        Err(e) => Err(e),
        Ok(other) => panic!("{other:?}"),
    });
    assert!(ended);
    let frames = parse_frames(&ws.mock().written);
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].close_code(), Some(1000));
    assert_eq!(ws.mock().flush_calls, 1);
}

/// Reads a [`ReadStep::Repeat`] may take before the stream runs dry: far
/// more than a read loop makes within [`ENDLESS_CLOSE_TIMEOUT`].
const ENDLESS_READS: usize = 2_000_000;

/// The close timeout of the endless case.
const ENDLESS_CLOSE_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(50);

/// A peer that never stops sending, over a stream whose every read has
/// data (the linger never waits, so only a deadline checked before each
/// read ends it): the read that failed the connection (1009) returns its
/// error long before the stream runs dry. A driver that cannot bound its
/// reads (the blocking one over a mock) does not linger at all.
pub fn a_linger_whose_input_never_stops_ends_at_the_close_timeout<D: Driver>() {
    let flood = bytes::Bytes::from(client_frame(OpCode::Binary, &[7; 4096]).repeat(16));
    let mut stream = MockStream::new();
    stream
        .reads
        .push_back(ReadStep::Repeat(flood, ENDLESS_READS));
    let config = lockgate::Config::default()
        .max_message_size(Some(1024))
        .close_timeout(Some(ENDLESS_CLOSE_TIMEOUT));
    let mut ws = D::open(stream, lockgate::Role::Server, config);
    let error = ws.read().unwrap_err();
    assert!(
        matches!(
            error,
            Error::Capacity(lockgate::CapacityError::MessageTooLong { .. })
        ),
        "{error:?}"
    );
    let reads = ws.mock().read_calls;
    assert!(reads < ENDLESS_READS, "read until the stream ran dry");
    let frames = parse_frames(&ws.mock().written);
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].close_code(), Some(1009));
}

/// After our close, a peer that never stops sending data (and never
/// answers the close), over a stream whose every read has data: reads
/// hand over its messages until the close timeout, then fail with
/// [`TimeoutKind::Close`](lockgate::TimeoutKind::Close), long before the
/// stream runs dry. The deadline is checked before each read, not only
/// when a read would wait (none ever does here).
pub fn our_close_with_input_that_never_stops_ends_at_the_close_timeout<D: Driver>() {
    let flood = bytes::Bytes::from(client_frame(OpCode::Text, b"more").repeat(64));
    let mut stream = MockStream::new();
    stream
        .reads
        .push_back(ReadStep::Repeat(flood, ENDLESS_READS));
    let config = lockgate::Config::default().close_timeout(Some(ENDLESS_CLOSE_TIMEOUT));
    let mut ws = D::open(stream, lockgate::Role::Server, config);
    let frame = CloseFrame {
        code: CloseCode::Away,
        reason: "draining".into(),
    };
    until_done(|| ws.close(Some(frame.clone())));
    let mut messages = 0_usize;
    let error = loop {
        match ws.read() {
            Ok(Message::Text(_)) => messages += 1,
            Ok(other) => panic!("{other:?}"),
            Err(error) => break error,
        }
    };
    assert!(
        error.timeout() == Some(lockgate::TimeoutKind::Close),
        "{error:?} after {messages} messages"
    );
    let reads = ws.mock().read_calls;
    assert!(reads < ENDLESS_READS, "read until the stream ran dry");
    let frames = parse_frames(&ws.mock().written);
    assert_eq!(frames[0].close_code(), Some(1001));
}
