//! permessage-deflate through the protocol context and the blocking driver:
//! round trips, RSV1 rules, bounded inflation (bombs) and bad data.
//!
//! Tests of compression itself need the `deflate` feature; the rest also run
//! without it, where nothing is negotiated or compressed (the last test).

use lockgate_kit as support;

use lockgate::deflate::{DeflateConfig, DeflateParams};
use lockgate::frame::OpCode;
use lockgate::{Config, Error, Message, ProtocolError, Role, WebSocket, WebSocketContext};
#[cfg(feature = "deflate")]
use support::take_output;
use support::{MockStream, frame, parse_frames};

fn deflate_config() -> Config {
    Config::default().deflate(Some(DeflateConfig::default().min_compress_size(16)))
}

fn ctx(role: Role, config: Config, params: DeflateParams) -> WebSocketContext {
    WebSocketContext::with_deflate(role, config, Some(params))
}

/// Moves everything `from` has queued into `to`.
#[cfg(feature = "deflate")]
fn transfer(from: &mut WebSocketContext, to: &mut WebSocketContext) {
    to.feed(&take_output(from));
}

#[cfg(feature = "deflate")]
fn json(i: usize, len: usize) -> String {
    let mut s = format!("{{\"id\":{i},\"kind\":\"quote\",\"pad\":\"");
    while s.len() + 2 < len {
        s.push_str("abcabcabd");
    }
    s.truncate(len - 2);
    s.push_str("\"}");
    s
}

#[cfg(feature = "deflate")]
#[test]
fn messages_round_trip_compressed_in_both_directions_for_every_takeover_mix() {
    for (server_nct, client_nct, server_bits, client_bits) in [
        (false, false, 15, 15),
        (true, false, 15, 9),
        (false, true, 10, 15),
        (true, true, 8, 8),
    ] {
        let params = DeflateParams {
            server_no_context_takeover: server_nct,
            client_no_context_takeover: client_nct,
            server_max_window_bits: server_bits,
            client_max_window_bits: client_bits,
        };
        let mut client = ctx(Role::Client, deflate_config(), params);
        let mut server = ctx(Role::Server, deflate_config(), params);
        let sent: Vec<Message> = (0..50)
            .map(|i| match i % 3 {
                0 => Message::text(json(i, 10 + i * 37)),
                1 => Message::binary(json(i, 5000 + i).into_bytes()),
                _ => Message::text(""),
            })
            .collect();
        for client_sends in [true, false] {
            let (from, to) = if client_sends {
                (&mut client, &mut server)
            } else {
                (&mut server, &mut client)
            };
            let mut plain_len = 0;
            for msg in &sent {
                plain_len += msg.len();
                from.write(msg.clone()).unwrap();
            }
            let wire_len = from.buffered_output();
            transfer(from, to);
            for msg in &sent {
                assert_eq!(to.next_message().unwrap().as_ref(), Some(msg), "{params:?}");
            }
            assert!(to.next_message().unwrap().is_none());
            if server_bits > 8 && client_bits > 8 {
                assert!(
                    wire_len * 2 < plain_len,
                    "{params:?}: {wire_len} of {plain_len} bytes"
                );
            }
        }
    }
}

#[cfg(feature = "deflate")]
#[test]
fn only_messages_at_least_min_size_are_compressed_and_write_uncompressed_opts_out() {
    let mut ws = WebSocket::from_context(
        MockStream::new(),
        ctx(Role::Server, deflate_config(), DeflateParams::default()),
    );
    ws.write(Message::text("tiny")).unwrap();
    ws.write(Message::text("x".repeat(100))).unwrap();
    ws.write_uncompressed(Message::text("y".repeat(100)))
        .unwrap();
    ws.write(Message::Ping("p".repeat(50).into())).unwrap();
    ws.flush().unwrap();
    let frames = parse_frames(&ws.get_ref().written);
    let rsv1: Vec<bool> = frames.iter().map(|f| f.header.rsv1).collect();
    assert_eq!(
        rsv1,
        [false, true, false, false],
        "control frames are never compressed"
    );
    assert!(frames[1].payload.len() < 20);
}

#[test]
fn rsv1_without_negotiation_is_a_protocol_error() {
    let mut server = WebSocketContext::new(Role::Server, deflate_config());
    let mut wire = frame(
        true,
        OpCode::Text,
        b"\xf2\x48\xcd\xc9\xc9\x07\x00",
        Some([1, 2, 3, 4]),
    );
    wire[0] |= 0x40;
    server.feed(&wire);
    let err = server.next_message().unwrap_err();
    assert!(
        matches!(err, Error::Protocol(ProtocolError::NonZeroReservedBits)),
        "{err:?}"
    );
    assert_eq!(err.close_code().map(u16::from), Some(1002));
}

#[test]
fn rsv1_on_a_continuation_or_control_frame_is_a_protocol_error() {
    for second in [OpCode::Continuation, OpCode::Ping] {
        let mut server = ctx(Role::Server, deflate_config(), DeflateParams::default());
        let mut first = frame(false, OpCode::Text, b"\xf2\x48\xcd", Some([1, 2, 3, 4]));
        first[0] |= 0x40;
        let mut next = frame(
            second == OpCode::Continuation,
            second,
            b"x",
            Some([1, 2, 3, 4]),
        );
        next[0] |= 0x40;
        server.feed(&first);
        server.feed(&next);
        let err = server.next_message().unwrap_err();
        assert!(
            matches!(err, Error::Protocol(ProtocolError::NonZeroReservedBits)),
            "{second:?}: {err:?}"
        );
    }
}

#[cfg(feature = "deflate")]
#[test]
fn the_rfc_7692_hello_example_inflates_across_fragments() {
    // RFC 7692 section 7.2.3.1 "Hello", split into two fragments.
    let payload = [0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00];
    let mut server = ctx(Role::Server, Config::default(), DeflateParams::default());
    let mut first = frame(false, OpCode::Text, &payload[..3], Some([9, 8, 7, 6]));
    first[0] |= 0x40;
    server.feed(&first);
    server.feed(&frame(
        true,
        OpCode::Continuation,
        &payload[3..],
        Some([5, 4, 3, 2]),
    ));
    assert_eq!(server.next_message().unwrap(), Some(Message::text("Hello")));
}

/// A compressed frame of `zeros` zero bytes, as a client would send it.
#[cfg(feature = "deflate")]
fn bomb(zeros: usize) -> Vec<u8> {
    let mut client = ctx(
        Role::Client,
        Config::default()
            .max_write_buffer_size(usize::MAX)
            .deflate(Some(DeflateConfig::default().compression_level(9))),
        DeflateParams::default(),
    );
    client.write(Message::binary(vec![0u8; zeros])).unwrap();
    take_output(&mut client)
}

#[cfg(feature = "deflate")]
#[test]
fn a_deflate_bomb_fails_with_1009_without_inflating_past_the_limit() {
    let wire = bomb(64 << 20);
    assert!(wire.len() < 100 * 1024, "bomb is {} bytes", wire.len());
    let config = Config::default().max_message_size(Some(1 << 20));
    let mut ws = WebSocket::from_context(
        MockStream::with_input(wire),
        ctx(Role::Server, config, DeflateParams::default()),
    );
    let err = ws.read().unwrap_err();
    match &err {
        Error::Capacity(lockgate::CapacityError::MessageTooLong {
            size,
            max_size: max,
        }) => {
            assert_eq!(*max, 1 << 20);
            assert!(*size <= (1 << 20) + 1, "inflated {size} bytes");
        }
        other => panic!("{other:?}"),
    }
    let frames = parse_frames(&ws.get_ref().written);
    assert_eq!(frames.last().unwrap().close_code(), Some(1009));
}

#[cfg(feature = "deflate")]
#[test]
fn invalid_compressed_data_closes_with_1007_for_text_and_1002_for_binary() {
    for (opcode, code) in [(OpCode::Text, 1007), (OpCode::Binary, 1002)] {
        let mut wire = frame(
            true,
            opcode,
            &[0xff, 0xff, 0xff, 0xff, 0x00],
            Some([1, 1, 1, 1]),
        );
        wire[0] |= 0x40;
        let mut ws = WebSocket::from_context(
            MockStream::with_input(wire),
            ctx(Role::Server, Config::default(), DeflateParams::default()),
        );
        let err = ws.read().unwrap_err();
        assert!(
            matches!(
                err.detail(),
                Some(lockgate::Detail::InvalidCompressedData { .. })
            ),
            "{err:?}"
        );
        let frames = parse_frames(&ws.get_ref().written);
        assert_eq!(
            frames.last().unwrap().close_code(),
            Some(code),
            "{opcode:?}"
        );
    }
}

#[cfg(feature = "deflate")]
#[test]
fn compressed_text_that_inflates_to_bad_utf8_closes_with_1007() {
    let mut client = ctx(Role::Client, deflate_config(), DeflateParams::default());
    // Binary frames carry no UTF-8 check on send; relabel one as text.
    client
        .write(Message::binary(b"valid start \xff\xfe invalid".repeat(4)))
        .unwrap();
    let mut wire = take_output(&mut client);
    wire[0] = (wire[0] & 0xF0) | OpCode::Text.as_u8();
    let mut server = ctx(Role::Server, deflate_config(), DeflateParams::default());
    server.feed(&wire);
    let err = server.next_message().unwrap_err();
    assert!(
        matches!(err, Error::Utf8(_)) && err.close_code() == Some(lockgate::CloseCode::Invalid),
        "{err:?}"
    );
}

/// An upgrade request offering permessage-deflate.
const OFFER: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n";

/// The handshake of a side with this deflate config offers (client) or
/// accepts (server) nothing.
fn assert_nothing_negotiated(config: Option<DeflateConfig>) {
    use lockgate::handshake::{ClientUpgrade, NoCallback, ServerUpgrade};
    let client = ClientUpgrade::with_deflate("ws://localhost/", config).unwrap();
    assert!(
        !client
            .request()
            .headers()
            .contains_key("sec-websocket-extensions"),
        "{config:?}"
    );
    let mut server = ServerUpgrade::with_deflate(NoCallback, config);
    let done = server.receive(OFFER).unwrap().unwrap();
    assert!(done.deflate.is_none(), "{config:?}");
    assert!(
        !done
            .response
            .headers()
            .contains_key("sec-websocket-extensions"),
        "{config:?}"
    );
}

#[test]
fn without_a_deflate_config_nothing_is_offered_or_accepted() {
    assert_nothing_negotiated(None);
}

/// Without the `deflate` feature a deflate config offers and accepts
/// nothing, and parameters handed to a context are ignored: messages go out
/// uncompressed (and RSV1 stays a protocol error, see above).
#[cfg(not(feature = "deflate"))]
#[test]
fn without_the_feature_nothing_is_negotiated_or_compressed() {
    assert_nothing_negotiated(Some(DeflateConfig::default()));

    let mut ws = WebSocket::from_context(
        MockStream::new(),
        ctx(Role::Server, deflate_config(), DeflateParams::default()),
    );
    assert_eq!(ws.context().deflate(), None);
    let text = "x".repeat(100);
    ws.write(Message::text(text.clone())).unwrap();
    ws.flush().unwrap();
    let frames = parse_frames(&ws.get_ref().written);
    assert_eq!(frames.len(), 1);
    assert!(!frames[0].header.rsv1);
    assert_eq!(frames[0].payload, text.as_bytes());
}
