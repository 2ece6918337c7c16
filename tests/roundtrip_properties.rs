//! Round trips through the sans-IO core, with random data: what one
//! [`WebSocketContext`] writes, a context of the other role reads back as
//! the same messages, in order, whatever the sizes of the pieces the bytes
//! are drained and fed in; with permessage-deflate too (with the `deflate`
//! feature). And hand-built fragmented messages (RFC 6455 section 5.4), cut
//! at random byte offsets, text inside multi-byte characters included, with
//! pings between the fragments, reassemble to the original.

use lockgate_kit as support;
use lockgate_kit::properties;

use lockgate::deflate::DeflateParams;
use lockgate::frame::OpCode;
use lockgate::{Buf, Config, Message, Role, WebSocketContext};
use properties::proptest_config;
use proptest::prelude::*;
use proptest::sample::Index;
use support::{frame, parse_frames};

fn role() -> impl Strategy<Value = Role> {
    prop_oneof![Just(Role::Client), Just(Role::Server)]
}

fn other(role: Role) -> Role {
    match role {
        Role::Client => Role::Server,
        Role::Server => Role::Client,
    }
}

/// Random text of up to `max_chars` characters, of any width.
fn text(max_chars: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(any::<char>(), 0..max_chars).prop_map(String::from_iter)
}

/// Repetitive (compressible) text of about `len` bytes, with multi-byte
/// characters in it.
fn pattern_text(len: usize, seed: u8) -> String {
    let words = ["lockgate", "é", "frame", "€", "😀", "message", " ", "\n"];
    let mut s = String::new();
    let mut i = usize::from(seed);
    while s.len() < len {
        s.push_str(words[i % words.len()]);
        i += 1 + i % 3;
    }
    s
}

fn message() -> impl Strategy<Value = Message> {
    let bytes = |max: usize| prop::collection::vec(any::<u8>(), 0..max);
    prop_oneof![
        3 => text(300).prop_map(Message::text),
        3 => bytes(1000).prop_map(Message::binary),
        // Long, compressible, across the 16- and 64-bit length encodings.
        1 => (0..70_000usize, any::<u8>()).prop_map(|(len, seed)| Message::text(pattern_text(len, seed))),
        1 => (0..70_000usize, any::<u8>()).prop_map(|(len, seed)| {
            Message::binary(pattern_text(len, seed).into_bytes())
        }),
        1 => bytes(126).prop_map(|b| Message::Ping(b.into())),
        1 => bytes(126).prop_map(|b| Message::Pong(b.into())),
    ]
}

/// Piece sizes to drain or feed bytes in, used in turn.
fn pieces() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(prop_oneof![3 => 1..16usize, 2 => 1..70_000usize], 1..8)
}

/// A short description of a message, for assertion messages.
fn describe(msg: &Message) -> String {
    match msg {
        Message::Text(t) if t.len() <= 40 => format!("Text({:?})", t.as_str()),
        Message::Text(t) => format!("Text({} bytes)", t.len()),
        Message::Binary(b) => format!("Binary({} bytes)", b.len()),
        other => format!("{other:?}"),
    }
}

fn assert_same_messages(got: &[Message], want: &[Message]) {
    let summary = |msgs: &[Message]| msgs.iter().map(describe).collect::<Vec<_>>();
    assert_eq!(summary(got), summary(want), "messages received vs sent");
    for (i, (got, want)) in got.iter().zip(want).enumerate() {
        assert!(
            got == want,
            "message {i}: payload differs ({})",
            describe(want)
        );
    }
}

/// Drains up to `n` bytes of `ctx`'s output into `wire`: at most one
/// contiguous chunk, advanced byte-accurately.
fn drain(ctx: &mut WebSocketContext, n: usize, wire: &mut Vec<u8>) {
    let mut output = ctx.output();
    let chunk = output.chunk();
    let n = n.min(chunk.len());
    wire.extend_from_slice(&chunk[..n]);
    output.advance(n);
}

/// Feeds `wire` to `ctx` in pieces of the sizes in `feed` (in turn) and
/// returns every message it makes of them.
fn feed(ctx: &mut WebSocketContext, wire: &[u8], feed: &[usize]) -> Vec<Message> {
    let mut messages = Vec::new();
    let mut rest = wire;
    for &n in feed.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (piece, tail) = rest.split_at(n.min(rest.len()));
        rest = tail;
        ctx.feed(piece);
        loop {
            match ctx.next_message() {
                Ok(Some(msg)) => messages.push(msg),
                Ok(None) => break,
                Err(e) => panic!(
                    "after {} messages and {} of {} bytes: {e:?}",
                    messages.len(),
                    wire.len() - rest.len(),
                    wire.len()
                ),
            }
        }
    }
    messages
}

/// Writes `messages` from a `sender` context (each one uncompressed where
/// `uncompressed` says so), draining part of its output after each write
/// and the rest at the end; feeds the bytes to a context of the other role;
/// checks that it reads the same messages, and the frame headers on the
/// wire. Compressed (`deflate`) only when `config` has a deflate config.
fn round_trip(
    sender: Role,
    config: Config,
    deflate: Option<DeflateParams>,
    messages: &[Message],
    uncompressed: &[bool],
    drains: &[usize],
    feeds: &[usize],
) {
    let mut tx = WebSocketContext::with_deflate(sender, config, deflate);
    let mut rx = WebSocketContext::with_deflate(other(sender), config, deflate);
    assert_eq!(tx.deflate().is_some(), deflate.is_some());
    let mut wire = Vec::new();
    let mut drains = drains.iter().cycle();
    for (msg, &uncompressed) in messages.iter().zip(uncompressed.iter().cycle()) {
        let written = if uncompressed {
            tx.write_uncompressed(msg.clone())
        } else {
            tx.write(msg.clone())
        };
        written.unwrap_or_else(|e| panic!("write {}: {e:?}", describe(msg)));
        drain(&mut tx, *drains.next().unwrap(), &mut wire);
    }
    while tx.buffered_output() > 0 {
        drain(&mut tx, *drains.next().unwrap(), &mut wire);
    }

    let min_compress_size = config.get_deflate().map(|d| d.get_min_compress_size());
    let frames = parse_frames(&wire);
    assert_eq!(frames.len(), messages.len(), "one frame per message");
    for (i, (frame, msg)) in frames.iter().zip(messages).enumerate() {
        let compressed = deflate.is_some()
            && msg.is_data()
            && !uncompressed[i % uncompressed.len()]
            && msg.len() >= min_compress_size.unwrap_or(0);
        assert_eq!(
            frame.header.rsv1,
            compressed,
            "frame {i} ({}): RSV1 marks exactly the compressed messages",
            describe(msg)
        );
        assert_eq!(
            frame.header.mask.is_some(),
            sender == Role::Client,
            "frame {i}: only clients mask"
        );
        assert!(frame.header.is_final, "frame {i}: fragmented");
    }

    assert_same_messages(&feed(&mut rx, &wire, feeds), messages);
}

proptest! {
    #![proptest_config(proptest_config())]

    #[test]
    fn messages_round_trip_in_order_in_any_pieces(
        sender in role(),
        messages in prop::collection::vec(message(), 0..24),
        drains in pieces(),
        feeds in pieces(),
    ) {
        round_trip(sender, Config::default(), None, &messages, &[false], &drains, &feeds);
    }

    #[test]
    fn fragmented_messages_reassemble(
        receiver in role(),
        data in prop_oneof![
            text(200).prop_map(|t| (OpCode::Text, t.into_bytes())),
            prop::collection::vec(any::<u8>(), 0..600).prop_map(|b| (OpCode::Binary, b)),
        ],
        cuts in prop::collection::vec(any::<Index>(), 0..8),
        pings in pings(),
        mask in any::<[u8; 4]>(),
        feeds in pieces(),
    ) {
        let (opcode, payload) = data;
        let cuts: Vec<usize> = cuts.iter().map(|c| c.index(payload.len() + 1)).collect();
        reassemble(receiver, opcode, &payload, cuts, &pings, mask, &feeds);
    }

    /// The character at `wide` is at least two bytes long, and one cut
    /// falls inside it.
    #[test]
    fn text_cut_inside_a_character_reassembles(
        receiver in role(),
        before in text(20),
        wide in prop_oneof![
            proptest::char::range('\u{80}', '\u{7ff}'),
            proptest::char::range('\u{800}', '\u{ffff}'),
            proptest::char::range('\u{10000}', '\u{10ffff}'),
        ],
        after in text(20),
        inside in any::<Index>(),
        cuts in prop::collection::vec(any::<Index>(), 0..4),
        pings in pings(),
        mask in any::<[u8; 4]>(),
        feeds in pieces(),
    ) {
        let text = format!("{before}{wide}{after}");
        let payload = text.into_bytes();
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c.index(payload.len() + 1)).collect();
        cuts.push(before.len() + 1 + inside.index(wide.len_utf8() - 1));
        reassemble(receiver, OpCode::Text, &payload, cuts, &pings, mask, &feeds);
    }
}

/// Pings to put between fragments: after which fragment, and the payload.
fn pings() -> impl Strategy<Value = Vec<(Index, Vec<u8>)>> {
    prop::collection::vec(
        (any::<Index>(), prop::collection::vec(any::<u8>(), 0..=125)),
        0..4,
    )
}

/// `payload` as a message of type `opcode` cut at `cuts` (byte offsets,
/// in any order; repeated offsets make empty fragments), with each of
/// `pings` after the fragment it names, as the peer of `receiver` sends it
/// (masked by a client), fed to a `receiver` context in pieces of the
/// sizes in `feeds`. The receiver must read each ping where it was sent and
/// the message, whole, once its last fragment has arrived.
fn reassemble(
    receiver: Role,
    opcode: OpCode,
    payload: &[u8],
    mut cuts: Vec<usize>,
    pings: &[(Index, Vec<u8>)],
    mask: [u8; 4],
    feeds: &[usize],
) {
    cuts.sort_unstable();
    let mut bounds = vec![0];
    bounds.extend(cuts);
    bounds.push(payload.len());
    let fragments: Vec<&[u8]> = bounds.windows(2).map(|b| &payload[b[0]..b[1]]).collect();
    let message = match opcode {
        OpCode::Text => Message::text(String::from_utf8(payload.to_vec()).expect("UTF-8")),
        _ => Message::binary(payload.to_vec()),
    };

    let mut wire = Vec::new();
    let mut expected = Vec::new();
    let mut frames = 0u8;
    let mut push = |wire: &mut Vec<u8>, fin: bool, opcode: OpCode, payload: &[u8]| {
        let mask = (receiver == Role::Server).then(|| {
            frames = frames.wrapping_add(1);
            [mask[0] ^ frames, mask[1], mask[2], mask[3]]
        });
        wire.extend(frame(fin, opcode, payload, mask));
    };
    for (i, fragment) in fragments.iter().enumerate() {
        let last = i + 1 == fragments.len();
        let op = if i == 0 { opcode } else { OpCode::Continuation };
        push(&mut wire, last, op, fragment);
        if last {
            expected.push(message.clone());
        }
        for (_, ping) in pings
            .iter()
            .filter(|(after, _)| after.index(fragments.len()) == i)
        {
            push(&mut wire, true, OpCode::Ping, ping);
            expected.push(Message::Ping(ping.clone().into()));
        }
    }

    let mut rx = WebSocketContext::new(receiver, Config::default());
    assert_same_messages(&feed(&mut rx, &wire, feeds), &expected);
}

#[cfg(feature = "deflate")]
mod compressed {
    use lockgate::Config;
    use lockgate::deflate::{DeflateConfig, DeflateParams};
    use proptest::prelude::*;

    use super::{message, pieces, proptest_config, role, round_trip};

    /// Parameters both ends agreed (the contexts are built from them, as
    /// after a handshake; see `deflate_messages.rs`).
    fn params() -> impl Strategy<Value = DeflateParams> {
        (any::<bool>(), any::<bool>(), 8..=15u8, 8..=15u8).prop_map(
            |(server_nct, client_nct, server_bits, client_bits)| DeflateParams {
                server_no_context_takeover: server_nct,
                client_no_context_takeover: client_nct,
                server_max_window_bits: server_bits,
                client_max_window_bits: client_bits,
            },
        )
    }

    /// Local settings: compression level and the smallest message
    /// compressed.
    fn config() -> impl Strategy<Value = Config> {
        (0..=9u32, prop_oneof![Just(0usize), 0..200usize]).prop_map(|(level, min)| {
            Config::default().deflate(Some(
                DeflateConfig::default()
                    .compression_level(level)
                    .min_compress_size(min),
            ))
        })
    }

    proptest! {
        #![proptest_config(proptest_config())]

        #[test]
        fn compressed_messages_round_trip_in_order_in_any_pieces(
            sender in role(),
            params in params(),
            config in config(),
            messages in prop::collection::vec(message(), 0..24),
            uncompressed in prop::collection::vec(prop::bool::weighted(0.2), 1..8),
            drains in pieces(),
            feeds in pieces(),
        ) {
            round_trip(sender, config, Some(params), &messages, &uncompressed, &drains, &feeds);
        }
    }
}
