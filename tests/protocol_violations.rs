//! Every RFC 6455 MUST a receiver has: the connection fails with the right
//! error, the right close code is sent (and flushed), and the connection is
//! over afterwards. Each case runs on the sans-IO context and on the
//! `WebSocket` driver over a mock stream.

use lockgate_kit as support;

use std::panic::{AssertUnwindSafe, catch_unwind};

use lockgate::error::Detail;
use lockgate::frame::OpCode;
use lockgate::protocol::frame::coding::Data;
use lockgate::{
    Bytes, CapacityError, CloseCode, CloseFrame, Config, DEFAULT_MAX_FRAME_SIZE, Error, Message,
    ProtocolError, Role, WebSocket, WebSocketContext,
};
use support::{
    MockStream, WireFrame, client_frame, frame, parse_frames, server_frame, take_output,
};

const MASK: [u8; 4] = [0x12, 0x34, 0x56, 0x78];

/// What a violation must fail the connection with.
#[derive(Debug)]
enum Want {
    Protocol(ProtocolError),
    Capacity(CapacityError),
    /// What tungstenite's enums have no variant for, inside `Error::Io`.
    Detail(Detail),
    /// The peer's text (or close reason) is not UTF-8: `Error::Utf8`, 1007.
    NotUtf8,
}

impl Want {
    fn matches(&self, error: &Error) -> bool {
        match (self, error) {
            (Want::Protocol(want), Error::Protocol(got)) => want == got,
            (Want::Capacity(want), Error::Capacity(got)) => want == got,
            (Want::Detail(want), got) => {
                got.detail().map(|d| format!("{d:?}")) == Some(format!("{want:?}"))
            }
            (Want::NotUtf8, Error::Utf8(_)) => true,
            _ => false,
        }
    }

    fn code(&self) -> CloseCode {
        match self {
            Want::Protocol(e) => e.close_code().expect("a peer violation has a close code"),
            Want::Capacity(e) => e.close_code().expect("a size limit has a close code"),
            Want::Detail(e) => e.close_code().expect("a peer violation has a close code"),
            Want::NotUtf8 => CloseCode::Invalid,
        }
    }
}

/// A frame as the peer of `role` sends it: masked towards a server.
fn peer_frame(role: Role, fin: bool, opcode: OpCode, payload: &[u8]) -> Vec<u8> {
    let mask = (role == Role::Server).then_some(MASK);
    frame(fin, opcode, payload, mask)
}

/// A frame header with arbitrary first byte and announced length, followed by
/// `payload` (masked with `mask` if given).
fn raw_frame(first: u8, mask: Option<[u8; 4]>, len: u64, payload: &[u8]) -> Vec<u8> {
    let mask_bit = if mask.is_some() { 0x80 } else { 0 };
    let mut wire = vec![first];
    match len {
        0..=125 => wire.push(mask_bit | len as u8),
        126..=0xFFFF => {
            wire.push(mask_bit | 126);
            wire.extend_from_slice(&(len as u16).to_be_bytes());
        }
        _ => {
            wire.push(mask_bit | 127);
            wire.extend_from_slice(&len.to_be_bytes());
        }
    }
    let mut body = payload.to_vec();
    if let Some(mask) = mask {
        wire.extend_from_slice(&mask);
        for (i, b) in body.iter_mut().enumerate() {
            *b ^= mask[i % 4];
        }
    }
    wire.extend_from_slice(&body);
    wire
}

fn close_payload(code: u16, reason: &[u8]) -> Vec<u8> {
    let mut payload = code.to_be_bytes().to_vec();
    payload.extend_from_slice(reason);
    payload
}

/// Checks that `frames` is exactly one close frame with `code`, masked iff
/// it comes from a client.
fn assert_single_close(frames: &[WireFrame], role: Role, code: CloseCode, what: &str) {
    assert_eq!(
        frames.len(),
        1,
        "{what}: expected one close frame, got {frames:?}"
    );
    let close = &frames[0];
    assert_eq!(close.header.opcode, OpCode::Close, "{what}");
    assert_eq!(
        close.close_code(),
        Some(u16::from(code)),
        "{what}: close code"
    );
    assert_eq!(
        close.header.mask.is_some(),
        role == Role::Client,
        "{what}: masking of our close frame"
    );
}

/// The sans-IO half: feeding `wire` fails the context with `want` before it
/// asks for more bytes, queues one close frame with the right code, and
/// leaves the context closed.
fn context_fails(role: Role, config: Config, wire: &[u8], want: &Want) {
    let what = format!("context {role:?}, {want:?}");
    let mut ctx = WebSocketContext::new(role, config);
    ctx.feed(wire);
    let error = match ctx.next_message() {
        Err(e) => e,
        Ok(other) => panic!("{what}: expected an error, got {other:?}"),
    };
    assert!(want.matches(&error), "{what}: got {error:?}");
    assert_eq!(error.close_code(), Some(want.code()), "{what}");
    assert!(ctx.is_terminated(), "{what}");
    assert_single_close(
        &parse_frames(&take_output(&mut ctx)),
        role,
        want.code(),
        &what,
    );

    // The connection is over: nothing more is parsed, sent or accepted.
    ctx.feed(&peer_frame(role, true, OpCode::Ping, b"late"));
    for _ in 0..3 {
        assert!(
            matches!(ctx.next_message(), Err(Error::AlreadyClosed)),
            "{what}"
        );
    }
    assert!(
        matches!(ctx.write(Message::text("late")), Err(Error::AlreadyClosed)),
        "{what}"
    );
    assert!(
        matches!(ctx.close(None), Err(Error::AlreadyClosed)),
        "{what}"
    );
    assert!(
        take_output(&mut ctx).is_empty(),
        "{what}: nothing is sent after the close frame"
    );
}

/// The driver half: `read` fails with `want`, and the close frame is on the
/// wire and flushed by that same call.
fn driver_fails(role: Role, config: Config, wire: &[u8], want: &Want) {
    let what = format!("driver {role:?}, {want:?}");
    let mut ws = WebSocket::from_raw_socket(MockStream::with_input(wire.to_vec()), role, config);
    let error = match ws.read() {
        Err(e) => e,
        Ok(msg) => panic!("{what}: expected an error, got {msg:?}"),
    };
    assert!(want.matches(&error), "{what}: got {error:?}");
    assert_eq!(error.close_code(), Some(want.code()), "{what}");
    let stream = ws.get_ref();
    assert_single_close(&parse_frames(&stream.written), role, want.code(), &what);
    assert_eq!(
        stream.flushed_at.last(),
        Some(&stream.written.len()),
        "{what}: close frame not flushed"
    );
    assert!(!ws.can_read(), "{what}");

    let written = ws.get_ref().written.len();
    ws.get_mut()
        .push_input(peer_frame(role, true, OpCode::Ping, b"late"));
    for _ in 0..3 {
        assert!(matches!(ws.read(), Err(Error::AlreadyClosed)), "{what}");
    }
    assert!(
        matches!(ws.send(Message::text("late")), Err(Error::AlreadyClosed)),
        "{what}"
    );
    assert!(
        matches!(ws.close(None), Err(Error::AlreadyClosed)),
        "{what}"
    );
    assert_eq!(
        ws.get_ref().written.len(),
        written,
        "{what}: nothing is sent after the close frame"
    );
}

/// Both halves.
fn assert_violation(role: Role, config: Config, wire: &[u8], want: Want) {
    context_fails(role, config, wire, &want);
    driver_fails(role, config, wire, &want);
}

fn protocol(e: ProtocolError) -> Want {
    Want::Protocol(e)
}

// ----- masking (section 5.1) -----

#[test]
fn server_fails_on_an_unmasked_frame_with_1002() {
    let wire = server_frame(OpCode::Text, b"hello");
    assert_violation(
        Role::Server,
        Config::default(),
        &wire,
        protocol(ProtocolError::UnmaskedFrameFromClient),
    );
    // Control frames must be masked too.
    let wire = server_frame(OpCode::Ping, b"");
    assert_violation(
        Role::Server,
        Config::default(),
        &wire,
        protocol(ProtocolError::UnmaskedFrameFromClient),
    );
}

#[test]
fn server_accepts_unmasked_frames_when_configured() {
    let config = Config::default().accept_unmasked_frames(true);
    let mut wire = server_frame(OpCode::Text, b"hello");
    wire.extend(client_frame(OpCode::Binary, b"masked still works"));

    let mut ctx = WebSocketContext::new(Role::Server, config);
    ctx.feed(&wire);
    assert_eq!(ctx.next_message().unwrap(), Some(Message::text("hello")));
    assert_eq!(
        ctx.next_message().unwrap(),
        Some(Message::binary(&b"masked still works"[..]))
    );
    assert_eq!(ctx.next_message().unwrap(), None);
    assert!(take_output(&mut ctx).is_empty(), "no close frame");

    let mut ws = WebSocket::from_raw_socket(MockStream::with_input(wire), Role::Server, config);
    assert_eq!(ws.read().unwrap(), Message::text("hello"));
    assert_eq!(
        ws.read().unwrap(),
        Message::binary(&b"masked still works"[..])
    );
    assert!(ws.get_ref().written.is_empty());
}

#[test]
fn client_fails_on_a_masked_frame_with_1002() {
    let wire = client_frame(OpCode::Text, b"hello");
    assert_violation(
        Role::Client,
        Config::default(),
        &wire,
        protocol(ProtocolError::MaskedFrameFromServer),
    );
    let wire = client_frame(OpCode::Pong, b"");
    assert_violation(
        Role::Client,
        Config::default(),
        &wire,
        protocol(ProtocolError::MaskedFrameFromServer),
    );
}

// ----- reserved bits and opcodes (section 5.2) -----

fn assert_reserved_bit_fails(bit: u8) {
    for role in [Role::Server, Role::Client] {
        for opcode in [OpCode::Text, OpCode::Binary, OpCode::Ping, OpCode::Close] {
            let mut wire = peer_frame(role, true, opcode, b"");
            wire[0] |= bit;
            assert_violation(
                role,
                Config::default(),
                &wire,
                protocol(ProtocolError::NonZeroReservedBits),
            );
        }
    }
}

#[test]
fn rsv1_without_extension_fails_with_1002() {
    assert_reserved_bit_fails(0x40);
}

#[test]
fn rsv2_fails_with_1002() {
    assert_reserved_bit_fails(0x20);
}

#[test]
fn rsv3_fails_with_1002() {
    assert_reserved_bit_fails(0x10);
}

#[test]
fn reserved_data_opcodes_3_to_7_fail_with_1002() {
    for role in [Role::Server, Role::Client] {
        for op in 3..=7u8 {
            let mask = (role == Role::Server).then_some(MASK);
            let wire = raw_frame(0x80 | op, mask, 3, b"abc");
            assert_violation(
                role,
                Config::default(),
                &wire,
                protocol(ProtocolError::UnknownDataFrameType(op)),
            );
        }
    }
}

#[test]
fn reserved_control_opcodes_11_to_15_fail_with_1002() {
    for role in [Role::Server, Role::Client] {
        for op in 11..=15u8 {
            let mask = (role == Role::Server).then_some(MASK);
            let wire = raw_frame(0x80 | op, mask, 0, b"");
            assert_violation(
                role,
                Config::default(),
                &wire,
                protocol(ProtocolError::UnknownControlFrameType(op)),
            );
        }
    }
}

#[test]
fn reserved_opcode_fails_from_the_first_byte() {
    // Nothing after the first byte is needed to know the frame is invalid.
    assert_violation(
        Role::Server,
        Config::default(),
        &[0x83],
        protocol(ProtocolError::UnknownDataFrameType(3)),
    );
}

#[test]
fn payload_length_with_most_significant_bit_fails_with_1002() {
    for role in [Role::Server, Role::Client] {
        let mask = (role == Role::Server).then_some(MASK);
        let wire = raw_frame(0x82, mask, 1 << 63, b"");
        assert_violation(
            role,
            Config::default(),
            &wire,
            Want::Detail(Detail::InvalidPayloadLength),
        );
        let wire = raw_frame(0x82, mask, u64::MAX, b"");
        assert_violation(
            role,
            Config::default(),
            &wire,
            Want::Detail(Detail::InvalidPayloadLength),
        );
    }
}

// ----- control frames (section 5.5) -----

#[test]
fn control_frame_over_125_bytes_fails_with_1002() {
    for role in [Role::Server, Role::Client] {
        for opcode in [OpCode::Ping, OpCode::Pong, OpCode::Close] {
            let mut payload = close_payload(1000, &[b'x'; 124]);
            assert_eq!(payload.len(), 126);
            let wire = peer_frame(role, true, opcode, &payload);
            assert_violation(
                role,
                Config::default(),
                &wire,
                protocol(ProtocolError::ControlFrameTooBig),
            );

            // 125 bytes is fine.
            payload.pop();
            let mut ctx = WebSocketContext::new(role, Config::default());
            ctx.feed(&peer_frame(role, true, opcode, &payload));
            let msg = ctx.next_message().unwrap().unwrap();
            assert_eq!(msg.len(), 125, "{role:?} {opcode:?}");
        }
    }
}

#[test]
fn control_frame_too_long_fails_from_the_header_alone() {
    // Only the header of a 1000-byte ping: the payload is never waited for.
    let wire = raw_frame(0x89, Some(MASK), 1000, b"");
    assert_violation(
        Role::Server,
        Config::default(),
        &wire,
        protocol(ProtocolError::ControlFrameTooBig),
    );
}

#[test]
fn fragmented_ping_fails_with_1002() {
    for role in [Role::Server, Role::Client] {
        let wire = peer_frame(role, false, OpCode::Ping, b"p");
        assert_violation(
            role,
            Config::default(),
            &wire,
            protocol(ProtocolError::FragmentedControlFrame),
        );
    }
}

#[test]
fn fragmented_pong_fails_with_1002() {
    for role in [Role::Server, Role::Client] {
        let wire = peer_frame(role, false, OpCode::Pong, b"p");
        assert_violation(
            role,
            Config::default(),
            &wire,
            protocol(ProtocolError::FragmentedControlFrame),
        );
    }
}

#[test]
fn fragmented_close_fails_with_1002() {
    for role in [Role::Server, Role::Client] {
        let wire = peer_frame(role, false, OpCode::Close, &close_payload(1000, b""));
        assert_violation(
            role,
            Config::default(),
            &wire,
            protocol(ProtocolError::FragmentedControlFrame),
        );
    }
}

// ----- fragmentation (section 5.4) -----

#[test]
fn continuation_without_a_message_fails_with_1002() {
    for role in [Role::Server, Role::Client] {
        for fin in [true, false] {
            let wire = peer_frame(role, fin, OpCode::Continuation, b"orphan");
            assert_violation(
                role,
                Config::default(),
                &wire,
                protocol(ProtocolError::UnexpectedContinueFrame),
            );
        }
    }
}

#[test]
fn continuation_after_a_complete_message_fails_with_1002() {
    let mut wire = peer_frame(Role::Server, true, OpCode::Text, b"done");
    wire.extend(peer_frame(
        Role::Server,
        true,
        OpCode::Continuation,
        b"more",
    ));

    let mut ctx = WebSocketContext::new(Role::Server, Config::default());
    ctx.feed(&wire);
    assert_eq!(ctx.next_message().unwrap(), Some(Message::text("done")));
    let error = ctx.next_message().unwrap_err();
    assert!(
        matches!(
            error,
            Error::Protocol(ProtocolError::UnexpectedContinueFrame)
        ),
        "{error:?}"
    );
    assert_single_close(
        &parse_frames(&take_output(&mut ctx)),
        Role::Server,
        CloseCode::Protocol,
        "context",
    );

    let mut ws = WebSocket::from_raw_socket(
        MockStream::with_input(wire),
        Role::Server,
        Config::default(),
    );
    assert_eq!(ws.read().unwrap(), Message::text("done"));
    let error = ws.read().unwrap_err();
    assert!(
        matches!(
            error,
            Error::Protocol(ProtocolError::UnexpectedContinueFrame)
        ),
        "{error:?}"
    );
    assert_single_close(
        &parse_frames(&ws.get_ref().written),
        Role::Server,
        CloseCode::Protocol,
        "driver",
    );
}

#[test]
fn new_data_frame_inside_a_fragmented_message_fails_with_1002() {
    for role in [Role::Server, Role::Client] {
        for first in [OpCode::Text, OpCode::Binary] {
            for intruder in [OpCode::Text, OpCode::Binary] {
                for intruder_fin in [true, false] {
                    let mut wire = peer_frame(role, false, first, b"start");
                    wire.extend(peer_frame(role, intruder_fin, intruder, b"intruder"));
                    let want = protocol(ProtocolError::ExpectedFragment(match intruder {
                        OpCode::Text => Data::Text,
                        _ => Data::Binary,
                    }));
                    assert_violation(role, Config::default(), &wire, want);
                }
            }
        }
    }
}

// ----- UTF-8 (sections 5.6 and 8.1) -----

#[test]
fn invalid_utf8_in_a_single_frame_fails_with_1007() {
    for role in [Role::Server, Role::Client] {
        for bad in [
            &b"\xff"[..],
            b"abc\xc0\xaf",
            b"\xed\xa0\x80",
            b"\xf4\x90\x80\x80",
            b"caf\xc3",
        ] {
            let wire = peer_frame(role, true, OpCode::Text, bad);
            assert_violation(role, Config::default(), &wire, Want::NotUtf8);
        }
    }
}

#[test]
fn invalid_utf8_across_fragments_fails_with_1007() {
    for role in [Role::Server, Role::Client] {
        // A two-byte sequence whose continuation byte, in the next fragment,
        // is not a continuation byte.
        let mut wire = peer_frame(role, false, OpCode::Text, b"ok \xce");
        wire.extend(peer_frame(role, true, OpCode::Continuation, b"A"));
        assert_violation(role, Config::default(), &wire, Want::NotUtf8);

        // Valid fragments, but the message ends inside a code point.
        let mut wire = peer_frame(role, false, OpCode::Text, b"ok ");
        wire.extend(peer_frame(
            role,
            false,
            OpCode::Continuation,
            "κ".as_bytes(),
        ));
        wire.extend(peer_frame(role, true, OpCode::Continuation, b"\xe2\x82"));
        assert_violation(role, Config::default(), &wire, Want::NotUtf8);
    }
}

#[test]
fn invalid_utf8_fails_before_the_rest_of_the_frame_arrives() {
    for role in [Role::Server, Role::Client] {
        // A 100-byte text frame of which only the header and 6 bytes have
        // arrived; the sixth (0xF4 0x90) can never be valid.
        let mut payload = "κόσμε".as_bytes()[..4].to_vec();
        payload.extend_from_slice(b"\xf4\x90");
        payload.resize(100, b'a');
        let full = peer_frame(role, true, OpCode::Text, &payload);
        let header_len = full.len() - payload.len();
        let partial = &full[..header_len + 6];
        assert_violation(role, Config::default(), partial, Want::NotUtf8);
    }
}

#[test]
fn invalid_utf8_in_a_first_fragment_fails_before_the_final_fragment() {
    for role in [Role::Server, Role::Client] {
        // Only the first fragment was sent; the message is not complete.
        let wire = peer_frame(role, false, OpCode::Text, b"Hello \xff");
        assert_violation(role, Config::default(), &wire, Want::NotUtf8);

        // Same with a valid first fragment and a bad second one, no final.
        let mut wire = peer_frame(role, false, OpCode::Text, b"Hello ");
        wire.extend(peer_frame(role, false, OpCode::Continuation, b"\xc0"));
        assert_violation(role, Config::default(), &wire, Want::NotUtf8);
    }
}

#[test]
fn code_point_split_across_fragments_is_valid() {
    let text = "κόσμε 😀 €";
    let bytes = text.as_bytes();
    for role in [Role::Server, Role::Client] {
        // Split at every byte, so every code point is cut at every position.
        for cut in 1..bytes.len() {
            let mut wire = peer_frame(role, false, OpCode::Text, &bytes[..cut]);
            wire.extend(peer_frame(role, true, OpCode::Continuation, &bytes[cut..]));
            let mut ctx = WebSocketContext::new(role, Config::default());
            ctx.feed(&wire);
            assert_eq!(
                ctx.next_message().unwrap(),
                Some(Message::text(text)),
                "{role:?} cut {cut}"
            );
        }
        // One byte per fragment.
        let mut wire = Vec::new();
        for (i, b) in bytes.iter().enumerate() {
            let opcode = if i == 0 {
                OpCode::Text
            } else {
                OpCode::Continuation
            };
            wire.extend(peer_frame(
                role,
                i + 1 == bytes.len(),
                opcode,
                std::slice::from_ref(b),
            ));
        }
        let mut ws =
            WebSocket::from_raw_socket(MockStream::with_input(wire), role, Config::default());
        assert_eq!(ws.read().unwrap(), Message::text(text), "{role:?}");
    }
}

#[test]
fn code_point_split_across_reads_of_one_frame_is_valid() {
    let text = "€uro 😀";
    let wire = client_frame(OpCode::Text, text.as_bytes());
    let mut ctx = WebSocketContext::new(Role::Server, Config::default());
    for (i, byte) in wire.iter().enumerate() {
        ctx.feed(std::slice::from_ref(byte));
        let got = ctx.next_message().unwrap();
        if i + 1 < wire.len() {
            assert_eq!(got, None, "byte {i}");
        } else {
            assert_eq!(got, Some(Message::text(text)));
        }
    }
}

// ----- close frames (sections 5.5.1 and 7.4) -----

#[test]
fn close_payload_of_one_byte_fails_with_1002() {
    for role in [Role::Server, Role::Client] {
        let wire = peer_frame(role, true, OpCode::Close, &[0x03]);
        assert_violation(
            role,
            Config::default(),
            &wire,
            protocol(ProtocolError::InvalidCloseSequence),
        );
    }
}

#[test]
fn invalid_close_codes_fail_with_1002() {
    for code in [
        0, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535,
    ] {
        for role in [Role::Server, Role::Client] {
            let wire = peer_frame(role, true, OpCode::Close, &close_payload(code, b"why"));
            assert_violation(
                role,
                Config::default(),
                &wire,
                Want::Detail(Detail::InvalidCloseCode(code)),
            );
        }
    }
}

#[test]
fn valid_close_codes_are_accepted_and_echoed() {
    let codes = [
        1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 3999, 4000,
        4999,
    ];
    for code in codes {
        for role in [Role::Server, Role::Client] {
            let wire = peer_frame(role, true, OpCode::Close, &close_payload(code, b"reason"));
            let expected = Message::Close(Some(CloseFrame::new(CloseCode::from(code), "reason")));

            let mut ctx = WebSocketContext::new(role, Config::default());
            ctx.feed(&wire);
            assert_eq!(
                ctx.next_message().unwrap(),
                Some(expected.clone()),
                "context {role:?} {code}"
            );
            assert_single_close(
                &parse_frames(&take_output(&mut ctx)),
                role,
                code.into(),
                "context echo",
            );
            assert!(
                matches!(ctx.next_message(), Err(Error::ConnectionClosed)),
                "context {role:?} {code}"
            );

            let mut ws =
                WebSocket::from_raw_socket(MockStream::with_input(wire), role, Config::default());
            assert_eq!(ws.read().unwrap(), expected, "driver {role:?} {code}");
            assert_single_close(
                &parse_frames(&ws.get_ref().written),
                role,
                code.into(),
                "driver echo",
            );
            assert!(
                matches!(ws.read(), Err(Error::ConnectionClosed)),
                "driver {role:?} {code}"
            );
        }
    }
}

#[test]
fn close_reason_that_is_not_utf8_fails_with_1007() {
    for role in [Role::Server, Role::Client] {
        for reason in [&b"\xff"[..], b"bye \xc3", b"\xed\xa0\x80"] {
            let wire = peer_frame(role, true, OpCode::Close, &close_payload(1000, reason));
            assert_violation(role, Config::default(), &wire, Want::NotUtf8);
        }
    }
}

// ----- size limits (section 10.4) -----

#[test]
fn frame_over_max_frame_size_fails_from_the_header_alone() {
    let huge = 1u64 << 62;
    for role in [Role::Server, Role::Client] {
        let mask = (role == Role::Server).then_some(MASK);
        // Just the header: the payload never arrives.
        let header = raw_frame(0x82, mask, huge, b"");
        assert!(header.len() <= 14);
        let want = Want::Capacity(CapacityError::MessageTooLong {
            size: usize::try_from(huge).unwrap_or(usize::MAX),
            max_size: DEFAULT_MAX_FRAME_SIZE,
        });

        let mut ctx = WebSocketContext::new(role, Config::default());
        ctx.feed(&header);
        let error = ctx.next_message().unwrap_err();
        assert!(want.matches(&error), "{error:?}");
        assert!(
            ctx.buffered_input() <= header.len(),
            "buffered {}",
            ctx.buffered_input()
        );

        assert_violation(role, Config::default(), &header, want);

        // A configured limit, one byte over it.
        let config = Config::default().max_frame_size(Some(1000));
        let header = raw_frame(0x81, mask, 1001, b"");
        let want = Want::Capacity(CapacityError::MessageTooLong {
            size: 1001,
            max_size: 1000,
        });
        assert_violation(role, config, &header, want);
    }
}

#[test]
fn huge_frame_header_without_limits_allocates_nothing() {
    // With both limits off, a frame announcing 2^62 bytes is legal and must
    // simply wait for its payload; memory grows with what actually arrives.
    // The failure this guards against is an allocation abort, which would
    // take the whole test binary down, so the body runs in a child copy of
    // this binary.
    const CHILD: &str = "LOCKGATE_PROTOCOL_VIOLATIONS_CHILD";
    if std::env::var_os(CHILD).is_none() {
        let name = "huge_frame_header_without_limits_allocates_nothing";
        let exe = std::env::current_exe().unwrap();
        let out = std::process::Command::new(exe)
            .args(["--exact", name, "--nocapture"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "child test failed with {}:\n{log}",
            out.status
        );
        assert!(
            log.contains("1 passed"),
            "the child did not run the test:\n{log}"
        );
        return;
    }
    let config = Config::default()
        .max_frame_size(None)
        .max_message_size(None);
    for role in [Role::Server, Role::Client] {
        let mask = (role == Role::Server).then_some(MASK);
        let mut ctx = WebSocketContext::new(role, config);
        ctx.feed(&raw_frame(0x82, mask, 1 << 62, b""));
        assert!(matches!(ctx.next_message(), Ok(None)), "{role:?}");
        ctx.feed(&[0x55; 100]);
        assert!(matches!(ctx.next_message(), Ok(None)), "{role:?}");
        assert!(
            ctx.buffered_input() <= 100,
            "{role:?}: {}",
            ctx.buffered_input()
        );
    }
}

#[test]
fn frame_at_max_frame_size_is_accepted() {
    let config = Config::default().max_frame_size(Some(1000));
    let payload = vec![7u8; 1000];
    let mut ctx = WebSocketContext::new(Role::Server, config);
    ctx.feed(&client_frame(OpCode::Binary, &payload));
    assert_eq!(ctx.next_message().unwrap(), Some(Message::binary(payload)));
}

#[test]
fn message_over_max_message_size_across_fragments_fails_with_1009() {
    // Every fragment is well under the frame limit; their sum is not.
    let config = Config::default()
        .max_frame_size(Some(100))
        .max_message_size(Some(250));
    for role in [Role::Server, Role::Client] {
        for opcode in [OpCode::Text, OpCode::Binary] {
            let mut wire = peer_frame(role, false, opcode, &[b'a'; 100]);
            wire.extend(peer_frame(role, false, OpCode::Continuation, &[b'b'; 100]));
            // Only the header of the third fragment: 300 > 250 is known.
            let third = peer_frame(role, true, OpCode::Continuation, &[b'c'; 100]);
            wire.extend_from_slice(&third[..third.len() - 100]);
            let want = Want::Capacity(CapacityError::MessageTooLong {
                size: 300,
                max_size: 250,
            });
            assert_violation(role, config, &wire, want);
        }
    }
}

// ----- after a violation -----

#[test]
fn violation_while_closing_sends_no_second_close_frame() {
    // We sent a close; the peer then breaks the protocol. The error is
    // reported, but RFC 6455 allows only one close frame per endpoint.
    let mut ctx = WebSocketContext::new(Role::Server, Config::default());
    ctx.close(Some(CloseFrame::new(CloseCode::Away, "going")))
        .unwrap();
    let ours = parse_frames(&take_output(&mut ctx));
    assert_eq!(ours.len(), 1);
    assert_eq!(ours[0].close_code(), Some(1001));

    ctx.feed(&server_frame(OpCode::Text, b"unmasked"));
    let error = ctx.next_message().unwrap_err();
    assert!(
        matches!(
            error,
            Error::Protocol(ProtocolError::UnmaskedFrameFromClient)
        ),
        "{error:?}"
    );
    assert!(
        take_output(&mut ctx).is_empty(),
        "a second close frame was queued"
    );
    assert!(matches!(ctx.next_message(), Err(Error::AlreadyClosed)));

    let mut ws = WebSocket::from_raw_socket(MockStream::new(), Role::Server, Config::default());
    ws.close(Some(CloseFrame::new(CloseCode::Away, "going")))
        .unwrap();
    ws.get_mut()
        .push_input(server_frame(OpCode::Text, b"unmasked"));
    let error = ws.read().unwrap_err();
    assert!(
        matches!(
            error,
            Error::Protocol(ProtocolError::UnmaskedFrameFromClient)
        ),
        "{error:?}"
    );
    let frames = parse_frames(&ws.get_ref().written);
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert!(matches!(ws.read(), Err(Error::AlreadyClosed)));
}

#[test]
fn messages_before_a_violation_are_delivered_and_nothing_after_it() {
    let mut wire = client_frame(OpCode::Text, b"one");
    wire.extend(client_frame(OpCode::Ping, b"two"));
    wire.extend(raw_frame(0x80 | 5, Some(MASK), 0, b""));
    wire.extend(client_frame(OpCode::Text, b"never"));

    let mut ws = WebSocket::from_raw_socket(
        MockStream::with_input(wire),
        Role::Server,
        Config::default(),
    );
    assert_eq!(ws.read().unwrap(), Message::text("one"));
    assert_eq!(
        ws.read().unwrap(),
        Message::Ping(Bytes::from_static(b"two"))
    );
    let error = ws.read().unwrap_err();
    assert!(
        matches!(
            error,
            Error::Protocol(ProtocolError::UnknownDataFrameType(5))
        ),
        "{error:?}"
    );
    for _ in 0..3 {
        assert!(matches!(ws.read(), Err(Error::AlreadyClosed)));
    }
    // The pong, then the close frame; nothing else.
    let frames = parse_frames(&ws.get_ref().written);
    assert_eq!(frames.len(), 2, "{frames:?}");
    assert_eq!(frames[0].header.opcode, OpCode::Pong);
    assert_eq!(frames[1].close_code(), Some(1002));
}

// ----- no panics on arbitrary input -----

/// xorshift64*: deterministic, no extra crates.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// A payload that is often meaningful: text (sometimes broken), a close
/// payload, or noise.
fn random_payload(rng: &mut Rng) -> Vec<u8> {
    let len = rng.pick(&[0, 1, 2, 3, 5, 8, 13, 60, 125, 126, 200]);
    match rng.below(4) {
        0 => rng.bytes(len),
        1 => {
            let text = "aé€😀".repeat(len / 10 + 1);
            let mut bytes = text.into_bytes();
            bytes.truncate(len.max(1));
            bytes
        }
        2 => {
            let code = rng.pick(&[0u16, 1000, 1001, 1002, 1005, 1007, 2999, 3000, 4999, 5000]);
            let mut payload = close_payload(code, &rng.bytes(len.min(6)));
            if rng.chance(10) {
                payload.truncate(1);
            }
            payload
        }
        _ => vec![b'x'; len],
    }
}

/// A byte string that is mostly frames (valid or broken in one way) and
/// sometimes pure noise.
fn random_input(rng: &mut Rng, role: Role) -> Vec<u8> {
    if rng.chance(5) {
        let n = rng.below(64);
        return rng.bytes(n);
    }
    let mut wire = Vec::new();
    let mut open = false;
    for _ in 0..1 + rng.below(6) {
        // Mostly a plausible sequence, sometimes any opcode at all.
        let opcode = if rng.chance(90) {
            match rng.below(10) {
                0..=5 if open => 0,
                0..=5 => rng.pick(&[1, 2]),
                6 => 8,
                7 | 8 => 9,
                _ => 10,
            }
        } else {
            rng.pick(&[0, 1, 2, 3, 7, 8, 9, 10, 11, 15])
        };
        let fin = if opcode >= 8 {
            rng.chance(95)
        } else {
            rng.chance(50)
        };
        if opcode < 8 {
            open = !fin;
        }
        let mut first = opcode | if fin { 0x80 } else { 0 };
        if rng.chance(3) {
            first |= rng.pick(&[0x40, 0x20, 0x10]);
        }
        let masked = if role == Role::Server {
            rng.chance(92)
        } else {
            rng.chance(8)
        };
        let mask = masked.then(|| rng.next().to_le_bytes()[..4].try_into().unwrap());
        let payload = random_payload(rng);
        let announced = if rng.chance(8) {
            rng.pick(&[
                0,
                126,
                65_536,
                1 << 20,
                1 << 40,
                (1 << 63) - 1,
                1 << 63,
                u64::MAX,
            ])
        } else {
            payload.len() as u64
        };
        wire.extend(raw_frame(first, mask, announced, &payload));
    }
    if rng.chance(20) {
        let cut = rng.below(wire.len() + 1);
        wire.truncate(cut);
    }
    wire
}

/// What a context made of an input: the messages, then how it stopped.
#[derive(Debug, PartialEq)]
struct Outcome {
    messages: Vec<Message>,
    /// `None` if it simply wants more bytes; otherwise the error, formatted.
    end: Option<String>,
}

/// Feeds `input` in the given chunk sizes (cycling), draining output between
/// chunks as a driver would, and checks the invariants on the way.
fn run_context(role: Role, config: Config, input: &[u8], chunks: &[usize]) -> Outcome {
    let mut ctx = WebSocketContext::new(role, config);
    let mut messages = Vec::new();
    let mut output = Vec::new();
    let mut end = None;
    let mut failure_code = None;
    let mut pos = 0;
    let mut step = 0;
    'feed: while pos < input.len() || step == 0 {
        let n = chunks[step % chunks.len()].min(input.len() - pos);
        step += 1;
        ctx.feed(&input[pos..pos + n]);
        pos += n;
        for round in 0..2 {
            loop {
                match ctx.next_message() {
                    Ok(Some(msg)) => {
                        if let Message::Text(text) = &msg {
                            assert!(
                                std::str::from_utf8(text.as_bytes()).is_ok(),
                                "text that is not UTF-8"
                            );
                        }
                        if msg.is_control() {
                            assert!(msg.len() <= 125, "control message of {} bytes", msg.len());
                        }
                        messages.push(msg);
                    }
                    Ok(None) => break,
                    Err(e) => {
                        assert!(
                            e.close_code().is_some()
                                || matches!(e, Error::AlreadyClosed | Error::ConnectionClosed),
                            "error without a close code: {e:?}"
                        );
                        failure_code = e.close_code().map(u16::from);
                        end = Some(format!("{e:?}"));
                        break 'feed;
                    }
                }
            }
            if round == 0 {
                output.extend(take_output(&mut ctx));
            }
        }
    }
    output.extend(take_output(&mut ctx));

    // What we sent is well-formed: control frames only, masked iff client,
    // at most one close frame and nothing after it.
    let frames = parse_frames(&output);
    for (i, f) in frames.iter().enumerate() {
        assert!(f.header.opcode.is_control(), "{f:?}");
        assert_eq!(f.header.mask.is_some(), role == Role::Client);
        if f.header.opcode == OpCode::Close {
            assert_eq!(
                i + 1,
                frames.len(),
                "frames after our close frame: {frames:?}"
            );
        }
    }
    // A failure sends its close code, last.
    if let Some(code) = failure_code {
        let last = frames.last().map(WireFrame::close_code);
        assert_eq!(last, Some(Some(code)), "{end:?}: {frames:?}");
    }
    // After any error, the connection is over.
    if end.is_some() {
        assert!(matches!(ctx.next_message(), Err(Error::AlreadyClosed)));
    }
    Outcome { messages, end }
}

#[test]
fn arbitrary_input_never_panics_and_every_error_carries_a_close_code() {
    let small = Config::default()
        .max_frame_size(Some(150))
        .max_message_size(Some(300));
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for case in 0..3000 {
        for role in [Role::Server, Role::Client] {
            let input = random_input(&mut rng, role);
            let widest = if rng.chance(30) { 2 } else { 17 };
            let chunks: Vec<usize> = (0..8).map(|_| 1 + rng.below(widest)).collect();
            for config in [Config::default(), small] {
                let result = catch_unwind(AssertUnwindSafe(|| {
                    let whole = run_context(role, config, &input, &[usize::MAX]);
                    let pieces = run_context(role, config, &input, &chunks);
                    let bytewise = run_context(role, config, &input, &[1]);
                    assert_eq!(whole, pieces, "chunks {chunks:?}");
                    assert_eq!(whole, bytewise, "one byte at a time");
                }));
                if let Err(panic) = result {
                    let msg = panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    panic!("case {case}, {role:?}, {config:?}, input {input:02x?}: {msg}");
                }
            }
        }
    }
}

#[test]
fn arbitrary_input_through_the_driver_never_panics() {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    for case in 0..1000 {
        for role in [Role::Server, Role::Client] {
            let input = random_input(&mut rng, role);
            let mut stream = MockStream::new();
            let mut pos = 0;
            while pos < input.len() {
                let n = (1 + rng.below(20)).min(input.len() - pos);
                stream.push_input(input[pos..pos + n].to_vec());
                pos += n;
            }
            stream.reads.push_back(support::ReadStep::Eof);
            let mut ws = WebSocket::from_raw_socket(stream, role, Config::default());
            let result = catch_unwind(AssertUnwindSafe(|| {
                for _ in 0..input.len() + 10 {
                    match ws.read() {
                        Ok(_) => {}
                        Err(Error::AlreadyClosed) => return,
                        Err(e) if e.is_would_block() => panic!("the script ends with EOF: {e:?}"),
                        Err(e) => assert!(
                            e.close_code().is_some()
                                || matches!(
                                    e,
                                    Error::ConnectionClosed
                                        | Error::Protocol(
                                            ProtocolError::ResetWithoutClosingHandshake
                                        )
                                ),
                            "{e:?}"
                        ),
                    }
                }
                panic!("read never reported the end of the connection");
            }));
            if let Err(panic) = result {
                let msg = panic.downcast_ref::<String>().cloned().unwrap_or_default();
                panic!("case {case}, {role:?}, input {input:02x?}: {msg}");
            }
        }
    }
}
