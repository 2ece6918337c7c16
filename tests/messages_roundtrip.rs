//! Messages sent by one end arrive intact at the other, in both directions,
//! at every payload length boundary; clients mask, servers do not.

use lockgate_kit as support;

use lockgate::frame::OpCode;
use lockgate::{Bytes, Config, Error, Message, ProtocolError, Role, WebSocket};
use support::{MockStream, PipeEnd, pair, parse_frames};

/// A payload whose bytes depend on their position, so a shifted or
/// reordered byte shows.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

fn assert_nothing_to_read(ws: &mut WebSocket<PipeEnd>) {
    let next = ws.read();
    assert!(
        next.as_ref().is_err_and(Error::is_would_block),
        "unexpected: {next:?}"
    );
}

/// Sends `msg` from `from` and checks that `to` reads exactly it.
fn roundtrip(from: &mut WebSocket<PipeEnd>, to: &mut WebSocket<PipeEnd>, msg: Message) {
    from.send(msg.clone()).unwrap();
    let got = to.read().unwrap();
    // Compare without printing megabytes on failure.
    assert!(
        got == msg,
        "sent {} bytes, received {:?} ({} bytes)",
        msg.len(),
        std::mem::discriminant(&got),
        got.len()
    );
    assert_nothing_to_read(to);
}

/// Runs `check` with (sender, receiver) = (client, server), then
/// (server, client).
fn both_directions(check: impl Fn(&mut WebSocket<PipeEnd>, &mut WebSocket<PipeEnd>)) {
    let (mut client, mut server) = pair(Config::default());
    check(&mut client, &mut server);
    check(&mut server, &mut client);
}

#[test]
fn text_roundtrips() {
    both_directions(|from, to| {
        roundtrip(from, to, Message::text("Hello, world"));
        roundtrip(from, to, Message::text("κόσμε 😀 €"));
    });
}

#[test]
fn binary_roundtrips() {
    both_directions(|from, to| {
        roundtrip(from, to, Message::binary(pattern(1000)));
        roundtrip(from, to, Message::binary(vec![0u8, 255, 0, 255]));
    });
}

#[test]
fn empty_messages_roundtrip() {
    both_directions(|from, to| {
        roundtrip(from, to, Message::text(""));
        roundtrip(from, to, Message::binary(Bytes::new()));
    });
}

#[test]
fn payloads_at_the_length_encoding_boundaries_roundtrip() {
    // 125: last 7-bit length; 126: first 16-bit; 65535: last 16-bit;
    // 65536: first 64-bit (and past the size where servers stop copying).
    both_directions(|from, to| {
        for len in [124, 125, 126, 127, 65_535, 65_536, 65_537] {
            roundtrip(from, to, Message::binary(pattern(len)));
            roundtrip(
                from,
                to,
                Message::text("é".repeat(len / 2) + &"x".repeat(len % 2)),
            );
        }
    });
}

#[test]
fn many_messages_written_then_flushed_arrive_in_order() {
    both_directions(|from, to| {
        let messages: Vec<Message> = (0..500)
            .map(|i| match i % 3 {
                0 => Message::text(format!("message {i}")),
                1 => Message::binary(pattern(i)),
                _ => Message::binary(pattern(40_000 + i)),
            })
            .collect();
        for msg in &messages {
            from.write(msg.clone()).unwrap();
        }
        from.flush().unwrap();
        for (i, msg) in messages.iter().enumerate() {
            assert!(to.read().unwrap() == *msg, "message {i}");
        }
        assert_nothing_to_read(to);
    });
}

#[test]
fn ping_is_answered_with_a_pong_carrying_its_payload() {
    both_directions(|from, to| {
        for payload in [&b""[..], b"keepalive", &[0xAB; 125]] {
            from.send(Message::Ping(Bytes::copy_from_slice(payload)))
                .unwrap();
            assert_eq!(
                to.read().unwrap(),
                Message::Ping(Bytes::copy_from_slice(payload))
            );
            // The reader sent the pong without being asked to flush.
            assert_eq!(
                from.read().unwrap(),
                Message::Pong(Bytes::copy_from_slice(payload))
            );
            assert_nothing_to_read(from);
            assert_nothing_to_read(to);
        }
    });
}

#[test]
fn unsolicited_pong_roundtrips_and_is_not_answered() {
    both_directions(|from, to| {
        roundtrip(from, to, Message::Pong(Bytes::from_static(b"heartbeat")));
        assert_nothing_to_read(from);
    });
}

#[test]
fn control_payload_over_125_bytes_is_refused_and_the_connection_stays_usable() {
    both_directions(|from, to| {
        for msg in [
            Message::Ping(Bytes::from(vec![1; 126])),
            Message::Pong(Bytes::from(vec![1; 126])),
        ] {
            let result = from.send(msg);
            assert!(
                matches!(
                    result,
                    Err(Error::Protocol(ProtocolError::ControlFrameTooBig))
                ),
                "{result:?}"
            );
        }
        assert_nothing_to_read(to);
        roundtrip(from, to, Message::text("still fine"));
    });
}

// ----- what goes on the wire -----

/// The frames one end writes for `messages`.
fn wire_of(role: Role, messages: &[Message]) -> Vec<u8> {
    let mut ws = WebSocket::from_raw_socket(MockStream::new(), role, Config::default());
    for msg in messages {
        ws.write(msg.clone()).unwrap();
    }
    ws.flush().unwrap();
    ws.into_inner().written
}

fn sample_messages() -> Vec<Message> {
    vec![
        Message::text("Hello"),
        Message::binary(pattern(300)),
        Message::binary(pattern(70_000)),
        Message::Ping(Bytes::from_static(b"ping")),
        Message::Pong(Bytes::from_static(b"pong")),
        Message::text(""),
    ]
}

#[test]
fn client_output_is_masked_with_a_fresh_key_per_frame() {
    let messages = sample_messages();
    let wire = wire_of(Role::Client, &messages);
    let frames = parse_frames(&wire);
    assert_eq!(frames.len(), messages.len());
    let mut keys = Vec::new();
    for (frame, msg) in frames.iter().zip(&messages) {
        let key = frame.header.mask.expect("every client frame is masked");
        keys.push(key);
        // The payload unmasks to the message.
        assert_eq!(frame.payload, msg.clone().into_data());
    }
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), frames.len(), "masking keys repeat: {keys:?}");

    // On the wire, the payload is not in the clear: "Hello" after its
    // 6-byte header (2 + 4-byte key) is masked.
    let (head, key) = (&wire[..2], frames[0].header.mask.unwrap());
    assert_eq!(head, [0x81, 0x80 | 5]);
    let expected: Vec<u8> = b"Hello"
        .iter()
        .enumerate()
        .map(|(i, b)| b ^ key[i % 4])
        .collect();
    assert_eq!(&wire[6..11], &expected[..]);
}

#[test]
fn server_output_is_not_masked() {
    let messages = sample_messages();
    let wire = wire_of(Role::Server, &messages);
    let frames = parse_frames(&wire);
    assert_eq!(frames.len(), messages.len());
    for (frame, msg) in frames.iter().zip(&messages) {
        assert_eq!(frame.header.mask, None);
        assert!(frame.header.is_final);
        assert!(!frame.header.rsv1 && !frame.header.rsv2 && !frame.header.rsv3);
        assert_eq!(frame.payload, msg.clone().into_data());
    }
    // RFC 6455 section 5.7: a single-frame unmasked text message "Hello".
    assert_eq!(&wire[..7], &[0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f]);
}

#[test]
fn frames_use_the_shortest_length_encoding() {
    let cases: [(usize, &[u8]); 4] = [
        (125, &[0x82, 125]),
        (126, &[0x82, 126, 0x00, 126]),
        (65_535, &[0x82, 126, 0xFF, 0xFF]),
        (65_536, &[0x82, 127, 0, 0, 0, 0, 0, 1, 0, 0]),
    ];
    for (len, header) in cases {
        let wire = wire_of(Role::Server, &[Message::binary(pattern(len))]);
        assert_eq!(&wire[..header.len()], header, "{len}");
        assert_eq!(wire.len(), header.len() + len);
        let frames = parse_frames(&wire);
        assert_eq!(frames[0].header.opcode, OpCode::Binary);
    }
}

#[test]
fn pong_sent_by_the_client_is_masked() {
    // The automatic pong follows the role's masking rule too.
    let ping = support::server_frame(OpCode::Ping, b"hi");
    let mut ws = WebSocket::from_raw_socket(
        MockStream::with_input(ping),
        Role::Client,
        Config::default(),
    );
    assert_eq!(ws.read().unwrap(), Message::Ping(Bytes::from_static(b"hi")));
    let frames = parse_frames(&ws.get_ref().written);
    assert_eq!(frames.len(), 1);
    assert!(frames[0].header.mask.is_some());
    assert_eq!(frames[0].payload, b"hi");
}
