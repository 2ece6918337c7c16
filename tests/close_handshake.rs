//! The closing handshake (RFC 6455 sections 5.5.1 and 7): who sends what,
//! what `read` reports, and what is refused afterwards.

use lockgate_kit as support;

use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::Duration;

use lockgate::frame::OpCode;
use lockgate::{
    Buf, Bytes, CloseCode, CloseFrame, Config, Detail, Error, Message, Next, Operation,
    ProtocolError, Role, WebSocket, WebSocketContext,
};
use support::{MockStream, ReadStep, WireFrame, frame, pair, parse_frames};

const MASK: [u8; 4] = [0x12, 0x34, 0x56, 0x78];

fn socket(role: Role, stream: MockStream) -> WebSocket<MockStream> {
    WebSocket::from_raw_socket(stream, role, Config::default())
}

/// A frame as the peer of `role` sends it.
fn peer_frame(role: Role, opcode: OpCode, payload: &[u8]) -> Vec<u8> {
    frame(
        true,
        opcode,
        payload,
        (role == Role::Server).then_some(MASK),
    )
}

fn peer_close(role: Role, code: u16, reason: &str) -> Vec<u8> {
    let mut payload = code.to_be_bytes().to_vec();
    payload.extend_from_slice(reason.as_bytes());
    peer_frame(role, OpCode::Close, &payload)
}

fn written(ws: &WebSocket<MockStream>) -> Vec<WireFrame> {
    parse_frames(&ws.get_ref().written)
}

fn assert_all_flushed(ws: &WebSocket<MockStream>) {
    let stream = ws.get_ref();
    assert_eq!(
        stream.unflushed(),
        0,
        "{} bytes written but not flushed",
        stream.unflushed()
    );
}

fn assert_connection_closed_then_already_closed(
    ws: &mut WebSocket<impl std::io::Read + std::io::Write>,
) {
    let first = ws.read();
    assert!(matches!(first, Err(Error::ConnectionClosed)), "{first:?}");
    for _ in 0..3 {
        let again = ws.read();
        assert!(matches!(again, Err(Error::AlreadyClosed)), "{again:?}");
    }
    assert!(!ws.can_read());
}

// ----- the peer closes -----

#[test]
fn peer_close_is_returned_and_echoed_and_flushed_by_the_same_read() {
    for role in [Role::Server, Role::Client] {
        let mut ws = socket(
            role,
            MockStream::with_input(peer_close(role, 1001, "going away")),
        );
        let msg = ws.read().unwrap();
        assert_eq!(
            msg,
            Message::Close(Some(CloseFrame::new(CloseCode::Away, "going away")))
        );

        // The reply is already on the wire: written and flushed, once.
        let frames = written(&ws);
        assert_eq!(frames.len(), 1, "{role:?}: {frames:?}");
        assert_eq!(frames[0].header.opcode, OpCode::Close);
        assert_eq!(
            frames[0].close_code(),
            Some(1001),
            "{role:?}: the reply echoes the code"
        );
        assert_eq!(
            frames[0].header.mask.is_some(),
            role == Role::Client,
            "{role:?}"
        );
        assert_eq!(ws.get_ref().flush_calls, 1, "{role:?}");
        assert_all_flushed(&ws);

        assert_connection_closed_then_already_closed(&mut ws);
        assert_eq!(written(&ws).len(), 1, "{role:?}: nothing more is sent");
    }
}

#[test]
fn peer_close_without_payload_gets_an_empty_reply() {
    for role in [Role::Server, Role::Client] {
        let mut ws = socket(
            role,
            MockStream::with_input(peer_frame(role, OpCode::Close, b"")),
        );
        assert_eq!(ws.read().unwrap(), Message::Close(None));
        let frames = written(&ws);
        assert_eq!(frames.len(), 1);
        assert_eq!(frames[0].header.opcode, OpCode::Close);
        assert!(
            frames[0].payload.is_empty(),
            "{role:?}: {:?}",
            frames[0].payload
        );
        assert_all_flushed(&ws);
        assert_connection_closed_then_already_closed(&mut ws);
    }
}

#[test]
fn close_reply_follows_data_already_written() {
    // The caller queued data without flushing; the reply must not overtake
    // it, and the data is flushed with it.
    let mut ws = socket(Role::Server, MockStream::new());
    ws.write(Message::text("last words")).unwrap();
    assert!(ws.get_ref().written.is_empty());
    ws.get_mut().push_input(peer_close(Role::Server, 1000, ""));
    assert!(matches!(ws.read().unwrap(), Message::Close(Some(_))));
    let frames = written(&ws);
    assert_eq!(frames.len(), 2, "{frames:?}");
    assert_eq!(frames[0].payload, b"last words");
    assert_eq!(frames[1].close_code(), Some(1000));
    assert_all_flushed(&ws);
}

#[test]
fn frames_after_the_peers_close_are_ignored() {
    let mut wire = peer_close(Role::Server, 1000, "");
    wire.extend(peer_frame(Role::Server, OpCode::Text, b"too late"));
    wire.extend(peer_frame(Role::Server, OpCode::Ping, b"too late"));
    let mut ws = socket(Role::Server, MockStream::with_input(wire));
    assert!(matches!(ws.read().unwrap(), Message::Close(Some(_))));
    assert_connection_closed_then_already_closed(&mut ws);
    assert_eq!(written(&ws).len(), 1, "no pong for a ping after the close");
}

#[test]
fn context_reports_connection_closed_only_once_the_reply_is_out() {
    let mut ctx = WebSocketContext::new(Role::Server, Config::default());
    ctx.feed(&peer_close(Role::Server, 1000, "bye"));
    // The reply goes out before the peer's close is handed over.
    assert_eq!(ctx.poll(Operation::Read).unwrap(), Next::Transmit);
    let mut output = ctx.output();
    let reply = output.copy_to_bytes(output.remaining());
    assert_eq!(parse_frames(&reply)[0].close_code(), Some(1000));
    assert_eq!(
        ctx.poll(Operation::Read).unwrap(),
        Next::Flush,
        "written but not yet flushed"
    );
    ctx.flushed();
    assert_eq!(
        ctx.poll(Operation::Read).unwrap(),
        Next::Message(Message::Close(Some(CloseFrame::new(
            CloseCode::Normal,
            "bye"
        ))))
    );
    // The handshake is complete: the write side is shut down first.
    assert_eq!(ctx.poll(Operation::Read).unwrap(), Next::Shutdown);
    ctx.shut_down();
    assert!(matches!(
        ctx.poll(Operation::Read),
        Err(Error::ConnectionClosed)
    ));
    assert!(matches!(
        ctx.poll(Operation::Read),
        Err(Error::AlreadyClosed)
    ));
    assert!(ctx.is_terminated());
}

// ----- we close -----

#[test]
fn we_close_and_the_peers_reply_completes_the_handshake() {
    for role in [Role::Server, Role::Client] {
        let mut ws = socket(role, MockStream::new());
        ws.close(Some(CloseFrame::new(CloseCode::Normal, "bye")))
            .unwrap();

        // `close` sends and flushes.
        let frames = written(&ws);
        assert_eq!(frames.len(), 1);
        assert_eq!(frames[0].close_code(), Some(1000));
        assert_eq!(&frames[0].payload[2..], b"bye");
        assert_eq!(frames[0].header.mask.is_some(), role == Role::Client);
        assert_all_flushed(&ws);

        ws.get_mut().push_input(peer_close(role, 1000, ""));
        assert_eq!(
            ws.read().unwrap(),
            Message::Close(Some(CloseFrame::new(CloseCode::Normal, "")))
        );
        assert_connection_closed_then_already_closed(&mut ws);
        assert_eq!(
            written(&ws).len(),
            1,
            "{role:?}: the peer's reply is not answered"
        );
    }
}

#[test]
fn close_twice_sends_one_close_frame() {
    let mut ws = socket(Role::Server, MockStream::new());
    ws.close(Some(CloseFrame::new(CloseCode::Normal, "bye")))
        .unwrap();
    ws.close(Some(CloseFrame::new(CloseCode::Away, "again")))
        .unwrap();
    ws.close(None).unwrap();
    let frames = written(&ws);
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert_eq!(frames[0].close_code(), Some(1000));
}

#[test]
fn close_codes_forbidden_on_the_wire_are_refused_and_nothing_is_sent() {
    // RFC 6455 section 7.4.1/7.4.2: codes our own receiver rejects with 1002.
    for code in [0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000, u16::MAX] {
        for via_write in [false, true] {
            let mut ws = socket(Role::Client, MockStream::new());
            let frame = Some(CloseFrame::new(CloseCode::from(code), "x"));
            let result = if via_write {
                ws.send(Message::Close(frame))
            } else {
                ws.close(frame)
            };
            assert!(
                matches!(
                    result.as_ref().err().and_then(|e| e.detail()),
                    Some(Detail::SendForbiddenCloseCode(c)) if *c == code
                ),
                "{code}: {result:?}"
            );
            assert_eq!(
                result.unwrap_err().close_code(),
                None,
                "the caller's mistake"
            );
            assert!(written(&ws).is_empty(), "{code}: nothing on the wire");
            // The connection is untouched: data still goes out, and a valid
            // close still starts the handshake.
            ws.send(Message::text("still open")).unwrap();
            ws.close(Some(CloseFrame::new(CloseCode::Library(4000), "done")))
                .unwrap();
            let frames = written(&ws);
            assert_eq!(frames.len(), 2, "{code}");
            assert_eq!(frames[1].close_code(), Some(4000));
        }
    }
    // Every code a peer may send is accepted for sending.
    for code in [1000, 1001, 1003, 1007, 1008, 1011, 1014, 3000, 4999] {
        let mut ws = socket(Role::Server, MockStream::new());
        ws.close(Some(CloseFrame::new(CloseCode::from(code), "")))
            .unwrap();
        assert_eq!(written(&ws)[0].close_code(), Some(code));
    }
}

#[test]
fn close_after_reading_the_peers_close_sends_nothing_more() {
    // The common pattern: read a Close, then call close().
    let mut ws = socket(
        Role::Client,
        MockStream::with_input(peer_close(Role::Client, 1000, "")),
    );
    assert!(matches!(ws.read().unwrap(), Message::Close(Some(_))));
    ws.close(None).unwrap();
    assert_eq!(written(&ws).len(), 1);
    assert_connection_closed_then_already_closed(&mut ws);
    assert!(matches!(ws.close(None), Err(Error::AlreadyClosed)));
}

#[test]
fn writes_after_our_close_are_refused() {
    let mut ws = socket(Role::Client, MockStream::new());
    ws.close(None).unwrap();
    for msg in [
        Message::text("late"),
        Message::binary(&b"late"[..]),
        Message::Ping(Bytes::from_static(b"late")),
        Message::Pong(Bytes::from_static(b"late")),
    ] {
        let result = ws.write(msg.clone());
        assert!(
            matches!(
                result,
                Err(Error::Protocol(ProtocolError::SendAfterClosing))
            ),
            "{msg:?}: {result:?}"
        );
        let result = ws.send(msg.clone());
        assert!(
            matches!(
                result,
                Err(Error::Protocol(ProtocolError::SendAfterClosing))
            ),
            "{msg:?}: {result:?}"
        );
    }
    assert_eq!(written(&ws).len(), 1, "only our close frame");

    // Refusing a write does not break the handshake.
    ws.get_mut().push_input(peer_close(Role::Client, 1000, ""));
    assert!(matches!(ws.read().unwrap(), Message::Close(_)));
    assert_connection_closed_then_already_closed(&mut ws);
    let result = ws.write(Message::text("later still"));
    assert!(matches!(result, Err(Error::AlreadyClosed)), "{result:?}");
}

#[test]
fn writes_after_the_peers_close_are_refused() {
    let mut ws = socket(
        Role::Server,
        MockStream::with_input(peer_close(Role::Server, 1000, "")),
    );
    assert!(matches!(ws.read().unwrap(), Message::Close(_)));
    let result = ws.write(Message::text("late"));
    assert!(
        matches!(
            result,
            Err(Error::Protocol(ProtocolError::SendAfterClosing))
        ),
        "{result:?}"
    );
    assert_eq!(written(&ws).len(), 1, "only the reply");
}

#[test]
fn data_after_we_sent_close_is_still_delivered() {
    for role in [Role::Server, Role::Client] {
        let mut ws = socket(role, MockStream::new());
        ws.close(Some(CloseFrame::new(CloseCode::Normal, "")))
            .unwrap();
        // The peer had these in flight before it saw our close.
        let mut wire = peer_frame(role, OpCode::Text, b"in flight");
        wire.extend(peer_frame(role, OpCode::Binary, &[1, 2, 3]));
        wire.extend(frame(
            false,
            OpCode::Text,
            b"frag",
            (role == Role::Server).then_some(MASK),
        ));
        wire.extend(frame(
            true,
            OpCode::Continuation,
            b"mented",
            (role == Role::Server).then_some(MASK),
        ));
        wire.extend(peer_close(role, 1000, ""));
        ws.get_mut().push_input(wire);

        assert_eq!(ws.read().unwrap(), Message::text("in flight"));
        assert_eq!(ws.read().unwrap(), Message::binary(vec![1, 2, 3]));
        assert_eq!(ws.read().unwrap(), Message::text("fragmented"));
        assert!(matches!(ws.read().unwrap(), Message::Close(Some(_))));
        assert_connection_closed_then_already_closed(&mut ws);
    }
}

#[test]
fn pings_after_we_sent_close_are_not_answered() {
    for role in [Role::Server, Role::Client] {
        let mut ws = socket(role, MockStream::new());
        ws.close(None).unwrap();
        let flushes = ws.get_ref().flush_calls;
        let mut wire = peer_frame(role, OpCode::Ping, b"are you there");
        wire.extend(peer_close(role, 1000, ""));
        ws.get_mut().push_input(wire);

        assert_eq!(
            ws.read().unwrap(),
            Message::Ping(Bytes::from_static(b"are you there"))
        );
        assert!(matches!(ws.read().unwrap(), Message::Close(_)));
        assert_connection_closed_then_already_closed(&mut ws);
        let frames = written(&ws);
        assert_eq!(
            frames.len(),
            1,
            "{role:?}: no pong after our close: {frames:?}"
        );
        assert_eq!(frames[0].header.opcode, OpCode::Close);
        assert_eq!(
            ws.get_ref().flush_calls,
            flushes,
            "{role:?}: nothing to flush"
        );
    }
}

// ----- the stream ends -----

#[test]
fn eof_without_close_is_a_reset() {
    for role in [Role::Server, Role::Client] {
        // Between frames, and in the middle of one.
        let partial = peer_frame(role, OpCode::Text, b"cut short");
        for input in [
            peer_frame(role, OpCode::Text, b"whole"),
            partial[..5].to_vec(),
        ] {
            let mut stream = MockStream::with_input(input);
            stream.reads.push_back(ReadStep::Eof);
            let mut ws = socket(role, stream);
            let mut result = ws.read();
            if matches!(result, Ok(Message::Text(_))) {
                result = ws.read();
            }
            assert!(
                matches!(
                    result,
                    Err(Error::Protocol(ProtocolError::ResetWithoutClosingHandshake))
                ),
                "{role:?}: {result:?}"
            );
            assert!(
                ws.get_ref().written.is_empty(),
                "{role:?}: nothing can be sent to a closed stream"
            );
            for _ in 0..3 {
                assert!(matches!(ws.read(), Err(Error::AlreadyClosed)));
            }
            assert!(matches!(
                ws.send(Message::text("x")),
                Err(Error::AlreadyClosed)
            ));
        }
    }
}

#[test]
fn eof_after_the_peers_close_is_a_clean_end() {
    let mut stream = MockStream::new();
    stream
        .reads
        .push_back(ReadStep::Data(peer_close(Role::Server, 1000, "")));
    stream.reads.push_back(ReadStep::Eof);
    let mut ws = socket(Role::Server, stream);
    assert!(matches!(ws.read().unwrap(), Message::Close(_)));
    assert_connection_closed_then_already_closed(&mut ws);
}

#[test]
fn eof_after_the_peers_reply_is_a_clean_end() {
    let mut ws = socket(Role::Client, MockStream::new());
    ws.close(None).unwrap();
    ws.get_mut()
        .reads
        .push_back(ReadStep::Data(peer_close(Role::Client, 1000, "")));
    ws.get_mut().reads.push_back(ReadStep::Eof);
    assert!(matches!(ws.read().unwrap(), Message::Close(_)));
    assert_connection_closed_then_already_closed(&mut ws);
}

#[test]
fn eof_while_waiting_for_the_close_reply_is_a_reset() {
    let mut ws = socket(Role::Client, MockStream::new());
    ws.close(None).unwrap();
    ws.get_mut().reads.push_back(ReadStep::Eof);
    let result = ws.read();
    assert!(
        matches!(
            result,
            Err(Error::Protocol(ProtocolError::ResetWithoutClosingHandshake))
        ),
        "{result:?}"
    );
    assert!(matches!(ws.read(), Err(Error::AlreadyClosed)));
}

// ----- both ends -----

#[test]
fn full_handshake_between_client_and_server() {
    for client_starts in [true, false] {
        let (mut client, mut server) = pair(Config::default());
        let (first, second) = if client_starts {
            (&mut client, &mut server)
        } else {
            (&mut server, &mut client)
        };

        first
            .close(Some(CloseFrame::new(CloseCode::Normal, "done")))
            .unwrap();
        assert_eq!(
            second.read().unwrap(),
            Message::Close(Some(CloseFrame::new(CloseCode::Normal, "done")))
        );
        assert_connection_closed_then_already_closed(second);
        assert_eq!(
            first.read().unwrap(),
            Message::Close(Some(CloseFrame::new(CloseCode::Normal, "")))
        );
        assert_connection_closed_then_already_closed(first);
    }
}

#[test]
fn simultaneous_close_completes_on_both_ends() {
    let (mut client, mut server) = pair(Config::default());
    client
        .close(Some(CloseFrame::new(CloseCode::Normal, "client")))
        .unwrap();
    server
        .close(Some(CloseFrame::new(CloseCode::Away, "server")))
        .unwrap();
    assert_eq!(
        client.read().unwrap(),
        Message::Close(Some(CloseFrame::new(CloseCode::Away, "server")))
    );
    assert_eq!(
        server.read().unwrap(),
        Message::Close(Some(CloseFrame::new(CloseCode::Normal, "client")))
    );
    assert_connection_closed_then_already_closed(&mut client);
    assert_connection_closed_then_already_closed(&mut server);
}

// ----- our close frame not yet on the wire when the peer's arrives -----

/// Reads until the handshake completes, flushing when a call would block,
/// as an event loop does. Runs on a thread with a time limit: the failure
/// this guards against is a busy loop inside `read`, which would otherwise
/// hang the test run.
fn finish_handshake(mut ws: WebSocket<MockStream>) -> (Vec<String>, WebSocket<MockStream>) {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut seen = Vec::new();
        for _ in 0..10 {
            let result = ws.read();
            seen.push(format!("{result:?}"));
            match result {
                Err(Error::ConnectionClosed | Error::AlreadyClosed) => break,
                Err(_) => {
                    let _ = ws.flush();
                }
                Ok(_) => {}
            }
        }
        let _ = tx.send((seen, ws));
    });
    match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(done) => done,
        Err(RecvTimeoutError::Timeout) => panic!("read() did not return within 10 s: it spins"),
        Err(RecvTimeoutError::Disconnected) => panic!("the reading thread panicked"),
    }
}

fn assert_handshake_finished(seen: &[String], ws: &WebSocket<MockStream>) {
    assert!(seen[0].starts_with("Ok(Close("), "{seen:?}");
    assert_eq!(
        seen.last().map(String::as_str),
        Some("Err(ConnectionClosed)"),
        "{seen:?}"
    );
    let frames = written(ws);
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert_eq!(
        frames[0].header.opcode,
        OpCode::Close,
        "our close frame went out"
    );
    assert_all_flushed(ws);
}

#[test]
fn close_written_but_not_flushed_then_peer_close_does_not_hang_read() {
    // `write` never flushes, so our close frame is still buffered when the
    // peer's close arrives (both ends closed at the same time).
    let mut ws = socket(Role::Server, MockStream::new());
    ws.write(Message::Close(Some(CloseFrame::new(
        CloseCode::Normal,
        "bye",
    ))))
    .unwrap();
    ws.get_mut().push_input(peer_close(Role::Server, 1000, ""));
    let (seen, ws) = finish_handshake(ws);
    assert_handshake_finished(&seen, &ws);
}

#[test]
fn close_that_would_block_then_peer_close_does_not_hang_read() {
    // Non-blocking stream: `close` queues the frame but the socket is full.
    let mut stream = MockStream::new();
    stream.write_blocked = true;
    let mut ws = socket(Role::Client, stream);
    let result = ws.close(Some(CloseFrame::new(CloseCode::Normal, "bye")));
    assert!(
        result.as_ref().is_err_and(Error::is_would_block),
        "{result:?}"
    );
    ws.get_mut().write_blocked = false;
    ws.get_mut().push_input(peer_close(Role::Client, 1000, ""));
    let (seen, ws) = finish_handshake(ws);
    assert_handshake_finished(&seen, &ws);
}

// ----- the lingering close -----

/// The blocking driver over a stream it is given a read timeout for (a
/// mock, whose every read has data: a peer that never stops sending): the
/// read that fails the connection writes the 1009, shuts down, discards
/// what keeps arriving, and returns its error once the close timeout
/// passed, long before the stream runs dry. Counted, not timed.
#[test]
fn a_blocking_linger_whose_input_never_stops_ends_at_the_close_timeout() {
    const READS: usize = 2_000_000;
    let flood = Bytes::from(peer_frame(Role::Server, OpCode::Binary, &[7; 4096]).repeat(16));
    let mut stream = MockStream::new();
    stream.reads.push_back(ReadStep::Repeat(flood, READS));
    let config = Config::default()
        .max_message_size(Some(1024))
        .close_timeout(Some(Duration::from_millis(50)));
    let mut ws = WebSocket::from_raw_socket(stream, Role::Server, config);
    // The mock cannot time out a read, but it never has to wait.
    ws.set_read_timeout_fn(|_, _| Ok(()));
    let error = ws.read().unwrap_err();
    assert!(
        matches!(
            error,
            Error::Capacity(lockgate::CapacityError::MessageTooLong { .. })
        ),
        "{error:?}"
    );
    let reads = ws.get_ref().read_calls;
    assert!(reads > 1, "no linger: {reads} reads");
    assert!(reads < READS, "read until the stream ran dry");
    let frames = written(&ws);
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].close_code(), Some(1009));
    assert!(matches!(ws.read(), Err(Error::AlreadyClosed)));
}

/// Over a stream the blocking driver cannot time out, and over a
/// non-blocking one, the failure is reported without lingering: a read
/// there could wait past the close timeout.
#[test]
fn a_stream_that_cannot_wait_is_not_lingered_on() {
    let mut stream = MockStream::new();
    stream.push_input(peer_frame(Role::Server, OpCode::Binary, &[7; 2048]));
    stream
        .reads
        .push_back(ReadStep::Repeat(Bytes::from_static(&[0x82; 100]), 10));
    let config = Config::default().max_message_size(Some(1024));
    let mut ws = WebSocket::from_raw_socket(stream, Role::Server, config);
    let error = ws.read().unwrap_err();
    assert!(matches!(error, Error::Capacity(_)), "{error:?}");
    assert_eq!(ws.get_ref().read_calls, 1, "no read after the failure");
    assert_eq!(written(&ws)[0].close_code(), Some(1009));
}
