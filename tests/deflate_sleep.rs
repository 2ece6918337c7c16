//! A compressed connection with context takeover that sleeps while quiet
//! (`DeflateConfig::sleep_after`) sends and receives the same messages as
//! one that never sleeps, in both roles and at every window size, and
//! reports its quiet interval as a deadline only when it has something to
//! free.
#![cfg(feature = "deflate")]

use std::time::{Duration, Instant};

use lockgate::deflate::{DeflateConfig, DeflateParams};
use lockgate::{Config, Message, Role, WebSocketContext};
use lockgate_kit::{parse_frames, take_output};

fn config(level: u32, sleep_after: Option<Duration>) -> Config {
    Config::default().ping_interval(None).deflate(Some(
        DeflateConfig::default()
            .compression_level(level)
            .min_compress_size(1)
            .sleep_after(sleep_after),
    ))
}

fn params(bits: u8, no_context_takeover: bool) -> DeflateParams {
    DeflateParams {
        server_no_context_takeover: no_context_takeover,
        client_no_context_takeover: no_context_takeover,
        server_max_window_bits: bits,
        client_max_window_bits: bits,
    }
}

/// Messages that refer back across each other, some far.
fn conversation() -> Vec<Message> {
    let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
    (0..40)
        .map(|i| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let text = format!(
                "{{\"id\":{i},\"user\":\"u{}\",\"event\":\"e{}\",\"ts\":{}}}",
                seed % 50,
                seed % 7,
                seed % 1_000_000
            );
            match i % 4 {
                0 => Message::text(text.repeat(1 + i % 9)),
                1 => Message::binary((0..(seed % 3000) as u8).collect::<Vec<u8>>()),
                2 => Message::text(""),
                _ => Message::text(text),
            }
        })
        .collect()
}

/// Plays the conversation, each message from alternating ends, waiting
/// (`handle_timeout`) on both ends after each. Returns each message's
/// unmasked payload on the wire and checks every message arrived intact.
fn play(role: Role, level: u32, bits: u8, sleep_after: Option<Duration>) -> Vec<Vec<u8>> {
    let mut us =
        WebSocketContext::with_deflate(role, config(level, sleep_after), Some(params(bits, false)));
    let peer_role = match role {
        Role::Client => Role::Server,
        Role::Server => Role::Client,
    };
    // The peer never sleeps: what we send must read the same to it.
    let mut peer =
        WebSocketContext::with_deflate(peer_role, config(level, None), Some(params(bits, false)));
    let now = Instant::now();
    let mut wire = Vec::new();
    for (i, msg) in conversation().into_iter().enumerate() {
        let (from, to) = if i % 3 == 0 {
            (&mut peer, &mut us)
        } else {
            (&mut us, &mut peer)
        };
        from.write(msg.clone()).unwrap();
        let bytes = take_output(from);
        to.feed(&bytes);
        assert_eq!(
            to.next_message().unwrap(),
            Some(msg),
            "{role:?} {bits} bits, message {i}"
        );
        wire.extend(parse_frames(&bytes).into_iter().map(|f| f.payload));
        us.handle_timeout(now);
        peer.handle_timeout(now);
    }
    wire
}

#[test]
fn sleeping_after_every_message_keeps_the_messages_and_the_ratio() {
    for role in [Role::Client, Role::Server] {
        for bits in 9..=15 {
            // Level 7: zlib's lazy matcher hashes every string, as the
            // preset dictionary does, so even the bytes are the same.
            assert_eq!(
                play(role, 7, bits, Some(Duration::ZERO)),
                play(role, 7, bits, None),
                "{role:?} {bits}"
            );
            // Level 1 (the default) hashes fewer strings than a wakened
            // compressor knows: other matches, the same messages, a size
            // within 1 %.
            let size = |wire: Vec<Vec<u8>>| wire.iter().map(Vec::len).sum::<usize>();
            let sleepy = size(play(role, 1, bits, Some(Duration::ZERO)));
            let awake = size(play(role, 1, bits, None));
            assert!(
                sleepy <= awake + awake / 100,
                "{role:?} {bits}: {sleepy} vs {awake}"
            );
        }
    }
}

/// One message each way, then a wait at `now`.
fn used(config: Config, params: Option<DeflateParams>, now: Instant) -> WebSocketContext {
    let mut ctx = WebSocketContext::with_deflate(Role::Server, config, params);
    let mut client = WebSocketContext::with_deflate(Role::Client, config, params);
    client.write(Message::text("x".repeat(500))).unwrap();
    ctx.feed(&take_output(&mut client));
    assert!(ctx.next_message().unwrap().is_some());
    ctx.write(Message::text("y".repeat(500))).unwrap();
    take_output(&mut ctx);
    ctx.handle_timeout(now);
    ctx
}

#[test]
fn the_quiet_interval_is_a_deadline_only_with_context_takeover() {
    let now = Instant::now();
    let second = Duration::from_secs(1);
    let mut ctx = used(config(1, Some(second)), Some(params(15, false)), now);
    assert_eq!(ctx.poll_timeout(), Some(now + second));
    // A wait before the deadline keeps it.
    ctx.handle_timeout(now + second / 2);
    assert_eq!(ctx.poll_timeout(), Some(now + second));
    // A message meanwhile does not move it (no timer reset per message),
    // but at the deadline the connection gets another interval.
    let mut client =
        WebSocketContext::with_deflate(Role::Client, config(1, None), Some(params(15, false)));
    let msg = Message::text("x".repeat(500));
    client.write(msg.clone()).unwrap();
    take_output(&mut client);
    client.write(msg.clone()).unwrap();
    ctx.feed(&take_output(&mut client));
    assert_eq!(ctx.next_message().unwrap(), Some(msg.clone()));
    ctx.handle_timeout(now + second / 2);
    assert_eq!(ctx.poll_timeout(), Some(now + second));
    ctx.handle_timeout(now + second);
    assert_eq!(ctx.poll_timeout(), Some(now + 2 * second));
    // Quiet for a whole interval: it sleeps, and an asleep connection has
    // nothing more to wait for.
    ctx.handle_timeout(now + 2 * second);
    assert_eq!(ctx.poll_timeout(), None);
    ctx.handle_timeout(now + 3 * second);
    assert_eq!(ctx.poll_timeout(), None);
    // It wakes on the next message, which reads as ever, and goes back to
    // sleep after another quiet interval.
    client.write(msg.clone()).unwrap();
    ctx.feed(&take_output(&mut client));
    assert_eq!(ctx.next_message().unwrap(), Some(msg));
    ctx.handle_timeout(now + 4 * second);
    assert_eq!(ctx.poll_timeout(), Some(now + 5 * second));

    // Nothing is armed without context takeover, without compression, or
    // with sleeping turned off.
    for (config, params) in [
        (config(1, Some(second)), Some(params(15, true))),
        (config(1, Some(second)), None),
        (config(1, None), Some(params(15, false))),
    ] {
        let ctx = used(config, params, now);
        assert_eq!(ctx.poll_timeout(), None, "{params:?}");
    }
}
