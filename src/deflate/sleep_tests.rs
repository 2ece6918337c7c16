//! A connection that sleeps between messages (drops its zlib state, keeps
//! its windows, rebuilds from them) must send and receive the same
//! messages as one that never sleeps, at the same compression.

use proptest::prelude::*;

use super::raw::tests::{compress, inflate, json_like, random_bytes};
use super::raw::{Deflater, Inflater};

/// One message of a generated conversation.
fn message(kind: u8, len: usize, seed: u64) -> Vec<u8> {
    match kind % 3 {
        0 => json_like(len, seed),
        1 => random_bytes(len, seed),
        // Long repeats reach far back into the window.
        _ => json_like(len.min(300), seed).repeat(len / 300 + 1)[..len].to_vec(),
    }
}

fn conversation() -> impl Strategy<Value = Vec<Vec<u8>>> {
    proptest::collection::vec((any::<u8>(), 0usize..5000, any::<u64>()), 1..12).prop_map(|specs| {
        specs
            .into_iter()
            .map(|(kind, len, seed)| message(kind, len, seed))
            .collect()
    })
}

/// Compresses `messages`, sleeping before each if `sleep`.
fn compress_all(level: u32, bits: u8, messages: &[Vec<u8>], sleep: bool) -> Vec<Vec<u8>> {
    let mut deflater = Deflater::new(level, bits, 8, false).keep_window();
    messages
        .iter()
        .map(|m| {
            if sleep {
                deflater.sleep();
                assert!(!deflater.is_allocated());
            }
            compress(&mut deflater, m)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Levels 7 and 8 (zlib's lazy matcher inserts every string into the
    /// hash chains, as the preset dictionary does) give the same bytes.
    /// The faster levels insert only some strings of the data they
    /// compress, while the dictionary of a wakened compressor inserts all
    /// of them (and level 9's chain walk meets a few stale entries the
    /// rebuilt one lacks), so their matches, never their output, differ:
    /// the peer inflates the same messages, and the size stays within 1 %
    /// (more often smaller than larger: the rebuilt chains know more).
    #[test]
    fn sleeping_compresses_to_the_same_messages(
        level in 1u32..=9,
        bits in 9u8..=15,
        messages in conversation(),
    ) {
        let awake = compress_all(level, bits, &messages, false);
        let sleepy = compress_all(level, bits, &messages, true);
        if matches!(level, 7 | 8) {
            prop_assert!(awake == sleepy);
        }
        // A peer that never sleeps reads the sleepy stream.
        let mut peer = Inflater::new(bits, false);
        for (message, payload) in messages.iter().zip(&sleepy) {
            prop_assert!(inflate(&mut peer, payload).expect("inflates") == message[..]);
        }
        let size = |payloads: &[Vec<u8>]| payloads.iter().map(Vec::len).sum::<usize>();
        let (awake, sleepy) = (size(&awake), size(&sleepy));
        // A few bytes of slack for conversations of a few bytes.
        prop_assert!(sleepy <= awake + awake / 100 + 8, "{} vs {} bytes", sleepy, awake);
    }

    #[test]
    fn sleeping_inflates_to_the_same_messages(
        level in 1u32..=9,
        bits in 9u8..=15,
        messages in conversation(),
    ) {
        let payloads = compress_all(level, bits, &messages, false);
        let mut inflater = Inflater::new(bits, false).keep_window();
        for (message, payload) in messages.iter().zip(&payloads) {
            inflater.sleep();
            prop_assert!(!inflater.is_allocated());
            let got = inflate(&mut inflater, payload).expect("inflates");
            prop_assert!(got == message[..]);
        }
    }
}

#[test]
fn without_context_takeover_nothing_is_kept() {
    let messages: Vec<Vec<u8>> = (0..4).map(|i| json_like(2000, i)).collect();
    for bits in 9..=15 {
        let mut deflater = Deflater::new(1, bits, 8, true).keep_window();
        let mut plain = Deflater::new(1, bits, 8, true);
        let mut inflater = Inflater::new(bits, true).keep_window();
        for m in &messages {
            let payload = compress(&mut deflater, m);
            assert_eq!(payload, compress(&mut plain, m));
            // Nothing to sleep on: release already frees this state.
            assert!(!deflater.sleep());
            assert!(inflate(&mut inflater, &payload).unwrap() == m[..]);
            assert!(!inflater.sleep());
        }
    }
}

#[test]
fn a_message_half_inflated_keeps_its_state() {
    let text = json_like(4000, 3);
    let payload = compress(&mut Deflater::new(1, 15, 8, false), &text);
    let mut inflater = Inflater::new(15, false).keep_window();
    let mut out = bytes::BytesMut::new();
    let (first, rest) = payload.split_at(payload.len() / 2);
    inflater
        .inflate(first, false, &mut out, usize::MAX)
        .unwrap();
    assert!(!inflater.sleep());
    assert!(inflater.is_allocated());
    inflater.inflate(rest, true, &mut out, usize::MAX).unwrap();
    assert!(out == text);
    assert!(inflater.sleep());
}
