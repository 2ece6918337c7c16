//! UTF-8 validation of received text, measured through the public
//! `WebSocketContext` (the incremental validator is private): a valid 1 MiB
//! mixed-script message (ASCII, Latin, Cyrillic, Greek, CJK, emoji) as one
//! frame and split across 16 fragments whose boundaries fall inside
//! multi-byte characters, and a pure-ASCII 64 KiB message (the fast path).
//!
//! The context is a client reading unmasked server frames, so no unmasking
//! is mixed in. Each message also runs as binary with the same bytes and
//! framing: the gap between `text` and `binary` is what validation costs;
//! one frame against 16 fragments shows what carrying a partial character
//! across frame boundaries and assembling the fragments cost. Each
//! iteration feeds the whole wire input at once and takes the message.

#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lockgate::frame::{FrameHeader, MAX_HEADER_LEN, OpCode};
use lockgate::{Config, Message, Role, WebSocketContext};

const MIXED_SIZE: usize = 1 << 20;
const ASCII_SIZE: usize = 64 << 10;
const FRAGMENTS: usize = 16;

/// Exactly `len` bytes of valid UTF-8 in several scripts and widths.
fn mixed_text(len: usize) -> String {
    const PHRASE: &str = "Hello, wörld! Ça va? Привет, мир. Γειά σου κόσμε. \
        你好，世界。こんにちは。안녕하세요 🌍🚀✨ {\"ok\":true} ";
    let mut text = String::with_capacity(len);
    while text.len() + PHRASE.len() <= len {
        text.push_str(PHRASE);
    }
    while text.len() < len {
        text.push('.');
    }
    text
}

/// JSON-like ASCII of exactly `len` bytes.
fn ascii_text(len: usize) -> String {
    let mut text = String::with_capacity(len);
    let mut i = 0;
    while text.len() < len {
        text.push_str(&format!("{{\"id\":{i},\"event\":\"tick\"}},"));
        i += 1;
    }
    text.truncate(len);
    text
}

/// Unmasked (server-to-client) frames carrying `payload` as one message of
/// type `opcode`, split into `fragments` frames of about equal size.
fn wire(opcode: OpCode, payload: &[u8], fragments: usize) -> Vec<u8> {
    let step = payload.len().div_ceil(fragments);
    let mut out = Vec::with_capacity(payload.len() + fragments * MAX_HEADER_LEN);
    let pieces: Vec<&[u8]> = payload.chunks(step).collect();
    for (i, piece) in pieces.iter().enumerate() {
        let op = if i == 0 { opcode } else { OpCode::Continuation };
        let mut header = FrameHeader::new(op, piece.len() as u64);
        header.is_final = i + 1 == pieces.len();
        let mut head = [0; MAX_HEADER_LEN];
        let n = header.encode(&mut head);
        out.extend_from_slice(&head[..n]);
        out.extend_from_slice(piece);
    }
    out
}

/// Feeds `wire` to a fresh client context and returns the message length.
fn receive(wire: &[u8]) -> usize {
    let mut ctx = WebSocketContext::new(Role::Client, Config::default());
    ctx.feed(wire);
    let msg = ctx
        .next_message()
        .expect("valid input")
        .expect("a whole message");
    debug_assert!(matches!(msg, Message::Text(_) | Message::Binary(_)));
    black_box(msg).len()
}

fn bench_message(c: &mut Criterion, name: &str, text: &str, fragment_counts: &[usize]) {
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Bytes(text.len() as u64));
    for &fragments in fragment_counts {
        let label = match fragments {
            1 => "1 frame".to_string(),
            n => format!("{n} fragments"),
        };
        for (kind, opcode) in [("text", OpCode::Text), ("binary", OpCode::Binary)] {
            let input = wire(opcode, text.as_bytes(), fragments);
            group.bench_function(format!("{kind}, {label}"), |b| {
                b.iter(|| assert_eq!(receive(&input), text.len()));
            });
        }
    }
    group.finish();
}

fn utf8(c: &mut Criterion) {
    let mixed = mixed_text(MIXED_SIZE);
    assert_eq!(mixed.len(), MIXED_SIZE);
    // The point of the fragmented case: characters cut across frames (7 of
    // the 15 boundaries with this text).
    let step = MIXED_SIZE / FRAGMENTS;
    let cut = (1..FRAGMENTS)
        .filter(|k| !mixed.is_char_boundary(k * step))
        .count();
    assert!(
        cut >= FRAGMENTS / 4,
        "only {cut} fragment boundaries split a character"
    );
    bench_message(c, "utf8 1 MiB mixed-script", &mixed, &[1, FRAGMENTS]);

    let ascii = ascii_text(ASCII_SIZE);
    assert_eq!(ascii.len(), ASCII_SIZE);
    bench_message(c, "utf8 64 KiB ascii", &ascii, &[1]);
}

criterion_group! {
    name = benches;
    // Command-line options (--measurement-time etc.) override these.
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    targets = utf8
}
criterion_main!(benches);
