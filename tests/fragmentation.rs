//! Messages that arrive in pieces (RFC 6455 section 5.4): fragments, control
//! frames between them, and frames split across socket reads.

use lockgate_kit as support;

use lockgate::frame::OpCode;
use lockgate::{Bytes, CapacityError, Config, Error, Message, Role, WebSocket, WebSocketContext};
use support::{MockStream, ReadStep, frame, pair, parse_frames};

const MASK: [u8; 4] = [0x0f, 0xf0, 0xaa, 0x55];

/// A frame as the peer of `role` sends it.
fn peer_frame(role: Role, fin: bool, opcode: OpCode, payload: &[u8]) -> Vec<u8> {
    frame(fin, opcode, payload, (role == Role::Server).then_some(MASK))
}

/// `parts` as one fragmented message of type `opcode`.
fn fragmented(role: Role, opcode: OpCode, parts: &[&[u8]]) -> Vec<u8> {
    let mut wire = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let op = if i == 0 { opcode } else { OpCode::Continuation };
        wire.extend(peer_frame(role, i + 1 == parts.len(), op, part));
    }
    wire
}

/// Every message the sans-IO context makes of `wire`, fed in one piece.
fn context_messages(role: Role, config: Config, wire: &[u8]) -> Vec<Message> {
    let mut ctx = WebSocketContext::new(role, config);
    ctx.feed(wire);
    let mut messages = Vec::new();
    while let Some(msg) = ctx.next_message().unwrap() {
        messages.push(msg);
    }
    messages
}

/// Reads `count` messages from a driver over a mock playing `reads`.
fn driver_messages(
    role: Role,
    config: Config,
    reads: Vec<ReadStep>,
    count: usize,
) -> (Vec<Message>, MockStream) {
    let stream = MockStream {
        reads: reads.into(),
        ..MockStream::default()
    };
    let mut ws = WebSocket::from_raw_socket(stream, role, config);
    let messages = (0..count)
        .map(|i| ws.read().unwrap_or_else(|e| panic!("message {i}: {e:?}")))
        .collect();
    let next = ws.read();
    assert!(
        next.as_ref().is_err_and(Error::is_would_block),
        "no more messages expected: {next:?}"
    );
    (messages, ws.into_inner())
}

fn one_read(wire: Vec<u8>) -> Vec<ReadStep> {
    vec![ReadStep::Data(wire)]
}

fn byte_per_read(wire: &[u8]) -> Vec<ReadStep> {
    wire.iter().map(|&b| ReadStep::Data(vec![b])).collect()
}

#[test]
fn fragmented_text_is_reassembled() {
    for role in [Role::Server, Role::Client] {
        let wire = fragmented(role, OpCode::Text, &[b"Hello", b", ", "wörld".as_bytes()]);
        let expected = vec![Message::text("Hello, wörld")];
        assert_eq!(
            context_messages(role, Config::default(), &wire),
            expected,
            "{role:?}"
        );
        let (got, stream) = driver_messages(role, Config::default(), one_read(wire), 1);
        assert_eq!(got, expected, "{role:?}");
        assert!(stream.written.is_empty(), "{role:?}: nothing to answer");
    }
}

#[test]
fn fragmented_binary_is_reassembled() {
    let parts: Vec<Vec<u8>> = (0..10u8).map(|i| vec![i; 100 + usize::from(i)]).collect();
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    let expected = vec![Message::binary(parts.concat())];
    for role in [Role::Server, Role::Client] {
        let wire = fragmented(role, OpCode::Binary, &refs);
        assert_eq!(
            context_messages(role, Config::default(), &wire),
            expected,
            "{role:?}"
        );
        let (got, _) = driver_messages(role, Config::default(), one_read(wire), 1);
        assert_eq!(got, expected, "{role:?}");
    }
}

#[test]
fn control_frames_between_fragments_are_delivered_and_the_ping_answered() {
    for role in [Role::Server, Role::Client] {
        let mut wire = peer_frame(role, false, OpCode::Text, b"Hel");
        wire.extend(peer_frame(role, true, OpCode::Ping, b"p1"));
        wire.extend(peer_frame(role, false, OpCode::Continuation, b"lo "));
        wire.extend(peer_frame(role, true, OpCode::Pong, b"unsolicited"));
        wire.extend(peer_frame(role, true, OpCode::Continuation, b"world"));

        let mut ws =
            WebSocket::from_raw_socket(MockStream::with_input(wire), role, Config::default());
        assert_eq!(ws.read().unwrap(), Message::Ping(Bytes::from_static(b"p1")));
        // The pong is on the wire and flushed by the read that returned the ping.
        let frames = parse_frames(&ws.get_ref().written);
        assert_eq!(frames.len(), 1, "{role:?}: {frames:?}");
        assert_eq!(frames[0].header.opcode, OpCode::Pong);
        assert_eq!(frames[0].payload, b"p1");
        assert_eq!(frames[0].header.mask.is_some(), role == Role::Client);
        assert_eq!(ws.get_ref().flush_calls, 1);
        assert_eq!(ws.get_ref().unflushed(), 0);

        assert_eq!(
            ws.read().unwrap(),
            Message::Pong(Bytes::from_static(b"unsolicited"))
        );
        assert_eq!(ws.read().unwrap(), Message::text("Hello world"));
        assert_eq!(
            parse_frames(&ws.get_ref().written).len(),
            1,
            "{role:?}: a pong is not answered"
        );
    }
}

#[test]
fn a_frame_delivered_one_byte_per_read_yields_the_same_message() {
    let payload: Vec<u8> = (0..300u32).map(|i| (i * 7) as u8).collect();
    for role in [Role::Server, Role::Client] {
        let wire = peer_frame(role, true, OpCode::Binary, &payload);
        let (got, stream) = driver_messages(role, Config::default(), byte_per_read(&wire), 1);
        assert_eq!(got, vec![Message::binary(payload.clone())], "{role:?}");
        assert!(stream.reads.is_empty(), "{role:?}: every byte was read");

        let text = "κόσμε, 😀!";
        let wire = peer_frame(role, true, OpCode::Text, text.as_bytes());
        let (got, _) = driver_messages(role, Config::default(), byte_per_read(&wire), 1);
        assert_eq!(got, vec![Message::text(text)], "{role:?}");
    }
}

#[test]
fn fragments_and_a_ping_delivered_one_byte_per_read() {
    for role in [Role::Server, Role::Client] {
        let mut wire = peer_frame(role, false, OpCode::Text, "κό".as_bytes());
        wire.extend(peer_frame(role, true, OpCode::Ping, b"ping"));
        wire.extend(peer_frame(
            role,
            true,
            OpCode::Continuation,
            "σμε".as_bytes(),
        ));
        let (got, stream) = driver_messages(role, Config::default(), byte_per_read(&wire), 2);
        assert_eq!(
            got,
            vec![
                Message::Ping(Bytes::from_static(b"ping")),
                Message::text("κόσμε")
            ],
            "{role:?}"
        );
        let frames = parse_frames(&stream.written);
        assert_eq!(frames.len(), 1);
        assert_eq!(frames[0].payload, b"ping");
    }
}

#[test]
fn many_messages_in_one_read_come_out_in_order_without_more_reads() {
    for role in [Role::Server, Role::Client] {
        let mut wire = Vec::new();
        let mut expected = Vec::new();
        for i in 0..200u32 {
            match i % 4 {
                0 => {
                    wire.extend(peer_frame(
                        role,
                        true,
                        OpCode::Text,
                        format!("text {i}").as_bytes(),
                    ));
                    expected.push(Message::text(format!("text {i}")));
                }
                1 => {
                    wire.extend(peer_frame(role, true, OpCode::Binary, &i.to_be_bytes()));
                    expected.push(Message::binary(i.to_be_bytes().to_vec()));
                }
                2 => {
                    let (a, b) = (format!("frag {i} "), "end");
                    wire.extend(fragmented(
                        role,
                        OpCode::Text,
                        &[a.as_bytes(), b.as_bytes()],
                    ));
                    expected.push(Message::text(format!("{a}{b}")));
                }
                _ => {
                    wire.extend(peer_frame(role, true, OpCode::Pong, &i.to_le_bytes()));
                    expected.push(Message::Pong(Bytes::copy_from_slice(&i.to_le_bytes())));
                }
            }
        }
        let config = Config::default().read_buffer_size(wire.len());
        let (got, stream) = driver_messages(role, config, one_read(wire), expected.len());
        assert_eq!(got, expected, "{role:?}");
        // One socket read for all of them, plus the one that found nothing:
        // a buffered message is never held back waiting for the socket.
        assert_eq!(stream.read_calls, 2, "{role:?}");
    }
}

#[test]
fn zero_length_fragments() {
    for role in [Role::Server, Role::Client] {
        let cases: [(OpCode, &[&[u8]], Message); 5] = [
            (OpCode::Text, &[b"", b"", b""], Message::text("")),
            (OpCode::Text, &[b"ab", b"", b"c"], Message::text("abc")),
            (OpCode::Text, &[b"", b"abc"], Message::text("abc")),
            (OpCode::Binary, &[b"", b""], Message::binary(Bytes::new())),
            (
                OpCode::Binary,
                &[b"\x01", b"", b"", b"\x02", b""],
                Message::binary(vec![1, 2]),
            ),
        ];
        for (opcode, parts, expected) in cases {
            let wire = fragmented(role, opcode, parts);
            assert_eq!(
                context_messages(role, Config::default(), &wire),
                vec![expected.clone()],
                "{role:?} {parts:?}"
            );
            let (got, _) = driver_messages(role, Config::default(), one_read(wire), 1);
            assert_eq!(got, vec![expected], "{role:?} {parts:?}");
        }
    }
}

#[test]
fn sixteen_mib_binary_across_the_pair() {
    const SIZE: usize = 16 << 20;
    let config = Config::default()
        .max_frame_size(Some(SIZE))
        .max_message_size(Some(SIZE));
    let payload: Vec<u8> = (0..SIZE).map(|i| (i % 251) as u8).collect();
    let (mut client, mut server) = pair(config);

    client.send(Message::binary(payload.clone())).unwrap();
    let got = server.read().unwrap();
    assert!(
        got == Message::binary(payload.clone()),
        "client to server: payload differs"
    );

    server.send(Message::binary(payload.clone())).unwrap();
    let got = client.read().unwrap();
    assert!(
        got == Message::binary(payload),
        "server to client: payload differs"
    );
}

#[test]
fn max_message_size_boundary() {
    const LIMIT: usize = 1000;
    let config = Config::default()
        .max_frame_size(Some(400))
        .max_message_size(Some(LIMIT));
    for role in [Role::Server, Role::Client] {
        for opcode in [OpCode::Text, OpCode::Binary] {
            // Exactly the limit, in fragments each within the frame limit.
            let exact = fragmented(role, opcode, &[&[b'a'; 400], &[b'b'; 400], &[b'c'; 200]]);
            let got = context_messages(role, config, &exact);
            assert_eq!(got.len(), 1);
            assert_eq!(got[0].len(), LIMIT, "{role:?} {opcode:?}");
            let (got, _) = driver_messages(role, config, one_read(exact), 1);
            assert_eq!(got[0].len(), LIMIT);

            // One byte more.
            let over = fragmented(role, opcode, &[&[b'a'; 400], &[b'b'; 400], &[b'c'; 201]]);
            let mut ctx = WebSocketContext::new(role, config);
            ctx.feed(&over);
            let error = ctx.next_message().unwrap_err();
            let want = CapacityError::MessageTooLong {
                size: LIMIT + 1,
                max_size: LIMIT,
            };
            assert!(
                matches!(&error, Error::Capacity(e) if *e == want),
                "{error:?}"
            );
            assert_eq!(error.close_code().map(u16::from), Some(1009));

            let mut ws = WebSocket::from_raw_socket(MockStream::with_input(over), role, config);
            let error = ws.read().unwrap_err();
            assert!(
                matches!(&error, Error::Capacity(e) if *e == want),
                "{error:?}"
            );
            let frames = parse_frames(&ws.get_ref().written);
            assert_eq!(frames.len(), 1, "{frames:?}");
            assert_eq!(frames[0].close_code(), Some(1009));
            assert_eq!(ws.get_ref().unflushed(), 0);
        }
    }

    // The same boundary for a single frame, with no frame limit.
    let config = Config::default()
        .max_frame_size(None)
        .max_message_size(Some(LIMIT));
    let got = context_messages(
        Role::Server,
        config,
        &peer_frame(Role::Server, true, OpCode::Binary, &[0; LIMIT]),
    );
    assert_eq!(got, vec![Message::binary(vec![0; LIMIT])]);
    let mut ctx = WebSocketContext::new(Role::Server, config);
    ctx.feed(&peer_frame(
        Role::Server,
        true,
        OpCode::Binary,
        &[0; LIMIT + 1],
    ));
    let error = ctx.next_message().unwrap_err();
    assert_eq!(error.close_code().map(u16::from), Some(1009), "{error:?}");
}
