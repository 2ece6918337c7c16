//! Prepared messages: the bytes on the wire are what `write` produces, for
//! every role and compression setting, while the encoding (and, without
//! context takeover, the compression) is shared between connections.

use lockgate_kit as support;

use lockgate::deflate::{DeflateConfig, DeflateParams};
use lockgate::{
    Bytes, CapacityError, Config, Error, Message, PreparedMessage, ProtocolError, Role, WebSocket,
    WebSocketContext,
};
use support::{CountingAlloc, HeapUse, MockStream, WireFrame, parse_frames, take_output};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// What a connection negotiated.
#[derive(Debug, Clone, Copy)]
enum Compression {
    None,
    /// permessage-deflate with context takeover in our direction.
    Takeover,
    /// Without context takeover, with this window.
    NoTakeover {
        window_bits: u8,
    },
}

fn connection(role: Role, compression: Compression) -> WebSocketContext {
    let config = Config::default()
        .max_write_buffer_size(1 << 22)
        .deflate(Some(DeflateConfig::default().min_compress_size(16)));
    let params = match compression {
        Compression::None => return WebSocketContext::new(role, config),
        Compression::Takeover => DeflateParams::default(),
        Compression::NoTakeover { window_bits } => DeflateParams {
            server_no_context_takeover: true,
            client_no_context_takeover: true,
            server_max_window_bits: window_bits,
            client_max_window_bits: window_bits,
        },
    };
    WebSocketContext::with_deflate(role, config, Some(params))
}

fn json(i: usize, len: usize) -> String {
    let mut s = format!("{{\"seq\":{i},\"price\":\"");
    while s.len() + 2 < len {
        s.push_str("101.25,");
    }
    s.truncate(len.saturating_sub(2));
    s.push_str("\"}");
    s
}

/// Messages of every kind and size class: empty, under the compression
/// minimum, every header length, above the size from which frames are
/// shared, control frames.
fn messages() -> Vec<Message> {
    let noise: Vec<u8> = (0..70_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    vec![
        Message::text(""),
        Message::text("hi"),
        Message::text(json(1, 64)),
        Message::binary(vec![7u8; 125]),
        Message::text(json(2, 126)),
        Message::text(json(3, 1_500)),
        Message::binary(noise[..3_000].to_vec()),
        Message::text(json(4, 16 * 1024)),
        Message::binary(Bytes::from(noise.clone())),
        Message::Ping(Bytes::from_static(b"are you there")),
        Message::Pong(Bytes::new()),
    ]
}

/// Client frames carry a random key: compare them unmasked, key blanked.
fn comparable(wire: &[u8]) -> Vec<WireFrame> {
    parse_frames(wire)
        .into_iter()
        .map(|mut frame| {
            frame.header.mask = frame.header.mask.map(|_| [0; 4]);
            frame
        })
        .collect()
}

const SETTINGS: [Compression; 4] = [
    Compression::None,
    Compression::Takeover,
    Compression::NoTakeover { window_bits: 15 },
    Compression::NoTakeover { window_bits: 9 },
];

#[test]
fn prepared_bytes_equal_written_bytes_for_every_role_and_compression() {
    for role in [Role::Server, Role::Client] {
        for compression in SETTINGS {
            let case = format!("{role:?}, {compression:?}");
            let mut written = connection(role, compression);
            let mut prepared = connection(role, compression);
            // Interleaved with plain writes: a connection with context
            // takeover must see the same history either way.
            for (i, msg) in messages().into_iter().enumerate() {
                written.write(msg.clone()).unwrap();
                prepared.write_prepared(&PreparedMessage::new(msg)).unwrap();
                let plain = Message::text(json(i, 200));
                written.write(plain.clone()).unwrap();
                prepared.write(plain).unwrap();
            }
            let (written, prepared) = (take_output(&mut written), take_output(&mut prepared));
            match role {
                Role::Server => assert!(written == prepared, "{case}: the bytes differ"),
                Role::Client => assert!(
                    comparable(&written) == comparable(&prepared),
                    "{case}: the frames differ"
                ),
            }
        }
    }
}

#[test]
fn one_prepared_message_is_written_alike_to_many_connections() {
    for role in [Role::Server, Role::Client] {
        for compression in SETTINGS {
            let case = format!("{role:?}, {compression:?}");
            let msg = Message::text(json(9, 4_000));
            let mut expected = connection(role, compression);
            expected.write(msg.clone()).unwrap();
            let expected = comparable(&take_output(&mut expected));
            let prepared = PreparedMessage::new(msg);
            for _ in 0..5 {
                let mut ctx = connection(role, compression);
                ctx.write_prepared(&prepared).unwrap();
                assert_eq!(comparable(&take_output(&mut ctx)), expected, "{case}");
            }
        }
    }
}

#[cfg(feature = "deflate")]
#[test]
fn compressed_once_per_parameter_set_for_connections_without_takeover() {
    let prepared = PreparedMessage::new(Message::text(json(5, 10_000)));
    for i in 0..100 {
        let role = if i % 2 == 0 {
            Role::Server
        } else {
            Role::Client
        };
        let mut ctx = connection(role, Compression::NoTakeover { window_bits: 15 });
        ctx.write_prepared(&prepared).unwrap();
    }
    assert_eq!(prepared.compressed_forms(), 1);
    for _ in 0..10 {
        let mut ctx = connection(Role::Server, Compression::NoTakeover { window_bits: 10 });
        ctx.write_prepared(&prepared).unwrap();
    }
    assert_eq!(prepared.compressed_forms(), 2);
    // With context takeover each connection compresses on its own: nothing
    // is shared, so nothing is kept.
    for _ in 0..10 {
        let mut ctx = connection(Role::Server, Compression::Takeover);
        ctx.write_prepared(&prepared).unwrap();
    }
    assert_eq!(prepared.compressed_forms(), 2);
}

#[cfg(feature = "deflate")]
#[test]
fn compression_is_shared_across_threads_and_done_once() {
    let prepared = PreparedMessage::new(Message::text(json(6, 50_000)));
    let outputs: Vec<Vec<u8>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let prepared = prepared.clone();
                scope.spawn(move || {
                    let mut ctx =
                        connection(Role::Server, Compression::NoTakeover { window_bits: 15 });
                    ctx.write_prepared(&prepared).unwrap();
                    take_output(&mut ctx)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(outputs.windows(2).all(|w| w[0] == w[1]));
    assert_eq!(prepared.compressed_forms(), 1);
}

#[test]
fn a_large_prepared_frame_is_shared_not_copied_per_server_connection() {
    const CONNECTIONS: usize = 100;
    let payload = Bytes::from(vec![b'x'; 64 * 1024]);
    let prepared = PreparedMessage::new(Message::Binary(payload.clone()));
    // The shared frame is encoded by the first connection.
    let mut first = connection(Role::Server, Compression::None);
    first.write_prepared(&prepared).unwrap();
    let mut connections: Vec<_> = (0..CONNECTIONS)
        .map(|_| connection(Role::Server, Compression::None))
        .collect();

    let heap = HeapUse::start();
    for ctx in &mut connections {
        ctx.write_prepared(&prepared).unwrap();
    }
    let prepared_cost = heap.now();
    assert_eq!(connections[0].buffered_output(), 10 + payload.len());

    let mut connections: Vec<_> = (0..CONNECTIONS)
        .map(|_| connection(Role::Server, Compression::None))
        .collect();
    let heap = HeapUse::start();
    for ctx in &mut connections {
        ctx.write(Message::Binary(payload.clone())).unwrap();
    }
    let written_cost = heap.now();
    // `write` queues a large payload by reference too, but each
    // connection still encodes a header of its own.
    assert!(
        prepared_cost < CONNECTIONS * 1024 && prepared_cost <= written_cost,
        "{CONNECTIONS} connections holding a 64 KiB prepared frame took {prepared_cost} \
         bytes of heap (write: {written_cost})"
    );
}

#[test]
fn a_full_buffer_hands_the_message_it_was_prepared_from_back() {
    let config = Config::default().max_write_buffer_size(1_000);
    let mut ctx = WebSocketContext::new(Role::Server, config);
    let payload = Bytes::from(vec![1u8; 600]);
    let prepared = PreparedMessage::new(Message::Binary(payload.clone()));
    ctx.write_prepared(&prepared).unwrap();
    let refused = ctx.write_prepared(&prepared).unwrap_err();
    assert!(refused.is_write_buffer_full());
    // tungstenite's variant, with the message as `write` hands its own
    // back: the same bytes, not a copy of them.
    let Error::WriteBufferFull(back) = refused else {
        panic!("expected WriteBufferFull, got {refused:?}");
    };
    let Message::Binary(back) = *back else {
        panic!("expected the binary message back");
    };
    assert_eq!(back.as_ptr(), payload.as_ptr());
    // Nothing of it was queued: after a flush it goes through.
    let wire = take_output(&mut ctx);
    assert_eq!(parse_frames(&wire).len(), 1);
    ctx.write_prepared(&prepared).unwrap();
    assert_eq!(parse_frames(&take_output(&mut ctx)).len(), 1);
}

#[test]
fn prepared_messages_are_refused_like_written_ones() {
    let too_long_ping = PreparedMessage::new(Message::Ping(Bytes::from(vec![0u8; 126])));
    let mut ctx = WebSocketContext::new(Role::Server, Config::default());
    assert!(matches!(
        ctx.write_prepared(&too_long_ping),
        Err(Error::Protocol(ProtocolError::ControlFrameTooBig))
    ));

    let config = Config::default().max_write_buffer_size(100);
    let mut ctx = WebSocketContext::new(Role::Server, config);
    let too_large = PreparedMessage::new(Message::binary(vec![0u8; 200]));
    assert!(matches!(
        ctx.write_prepared(&too_large),
        Err(Error::Capacity(CapacityError::MessageTooLong { .. }))
    ));

    let mut ctx = WebSocketContext::new(Role::Server, Config::default());
    ctx.close(None).unwrap();
    assert!(matches!(
        ctx.write_prepared(&PreparedMessage::new(Message::text("late"))),
        Err(Error::Protocol(ProtocolError::SendAfterClosing))
    ));
}

#[test]
fn a_prepared_close_starts_the_closing_handshake() {
    let close = PreparedMessage::new(Message::Close(None));
    let mut ctx = WebSocketContext::new(Role::Server, Config::default());
    ctx.write_prepared(&close).unwrap();
    let frames = parse_frames(&take_output(&mut ctx));
    assert_eq!(support::summary(&frames).len(), 1);
    assert!(support::has_close(&frames));
}

#[test]
fn the_blocking_driver_queues_prepared_messages_until_flushed() {
    let prepared = PreparedMessage::new(Message::text("to everyone"));
    let mut ws = WebSocket::from_raw_socket(MockStream::new(), Role::Server, Config::default());
    for _ in 0..3 {
        ws.write_prepared(&prepared).unwrap();
    }
    assert!(ws.get_ref().written.is_empty());
    ws.flush().unwrap();
    let frames = parse_frames(&ws.get_ref().written);
    assert_eq!(frames.len(), 3);
    assert!(frames.iter().all(|f| f.payload == b"to everyone"));
}
