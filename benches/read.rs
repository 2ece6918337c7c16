//! Parsing received frames from memory, as a server: 100k masked small text
//! frames (20–100 B, JSON-like, the messages of `write.rs`) and 64 masked
//! 1 MiB binary frames. No socket is involved, so the numbers are the cost of
//! framing, unmasking, UTF-8 validation and message assembly: the "read"
//! rows of issue 4, comparable with the peers' in-memory read benches.
//!
//! Each workload runs through the blocking driver and through the sans-IO
//! context directly:
//! - `websocket`: `WebSocket::read` over an in-memory reader;
//! - `context spare/commit`: the context filled the way the driver fills it
//!   (`input_spare`, copy, `commit_input`; same buffer sizes), so the gap to
//!   `websocket` is the driver's own overhead;
//! - `context 8 KiB feeds`: `feed` with pieces of the default read size;
//! - `context one feed` (small) / `context one feed per frame` (1 MiB): the
//!   floor for the context, parsing with no per-read work. (Feeding all
//!   64 MiB at once would measure page faults and DRAM, not the parser.)
//!
//! Every run counts the messages and their bytes and checks them at the end,
//! so no work can be skipped.
//!
//! `fragmentation`: one 256 KiB binary message in one frame and in 1-byte
//! fragments, fed to a context in 128 KiB reads, in wire bytes a second:
//! assembly costs work per frame, not per message so far, so the two stay
//! within a constant factor per wire byte (`tests/cost_bounds.rs` proves
//! the same in counted allocator work; this is its timing).

#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::hint::black_box;
use std::io::{self, Read, Write};
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lockgate::frame::{FrameHeader, MAX_HEADER_LEN, OpCode, apply_mask};
use lockgate::{Buf, Bytes, Config, Message, Role, WebSocket, WebSocketContext};

const SMALL_MESSAGES: usize = 100_000;
const LARGE_MESSAGES: usize = 64;
const LARGE_SIZE: usize = 1 << 20;

/// A read-only in-memory stream over pre-built wire bytes. Nothing is
/// written while reading data frames (no ping, no close), so a write is a
/// bug in the bench.
struct Wire {
    /// Shared with the input, so a run copies nothing up front.
    rest: Bytes,
}

impl Read for Wire {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.rest.len());
        buf[..n].copy_from_slice(&self.rest[..n]);
        self.rest.advance(n);
        Ok(n)
    }
}

impl Write for Wire {
    fn write(&mut self, _: &[u8]) -> io::Result<usize> {
        Err(io::Error::other("the read bench must not write"))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A different key for every frame, as a browser sends them.
fn mask_key(i: usize) -> [u8; 4] {
    (i as u32).wrapping_mul(0x9E37_79B9).to_le_bytes()
}

/// Appends one final, masked frame to `wire`.
fn push_client_frame(wire: &mut Vec<u8>, opcode: OpCode, payload: &[u8], mask: [u8; 4]) {
    let mut header = FrameHeader::new(opcode, payload.len() as u64);
    header.mask = Some(mask);
    let mut head = [0; MAX_HEADER_LEN];
    let n = header.encode(&mut head);
    wire.extend_from_slice(&head[..n]);
    let start = wire.len();
    wire.extend_from_slice(payload);
    apply_mask(&mut wire[start..], mask);
}

/// The wire bytes of `count` frames and the total payload length.
struct Input {
    wire: Bytes,
    count: usize,
    payload_bytes: usize,
}

/// 100k masked text frames of 20–100 B, shaped like `write.rs`'s messages.
fn small_texts() -> Input {
    let mut wire = Vec::new();
    let mut payload_bytes = 0;
    for i in 0..SMALL_MESSAGES {
        let text = format!(
            "{{\"id\":{i},\"event\":\"tick\",\"pad\":\"{}\"}}",
            "x".repeat(i % 60)
        );
        assert!((20..=100).contains(&text.len()));
        payload_bytes += text.len();
        push_client_frame(&mut wire, OpCode::Text, text.as_bytes(), mask_key(i));
    }
    Input {
        wire: wire.into(),
        count: SMALL_MESSAGES,
        payload_bytes,
    }
}

/// 64 masked binary frames of 1 MiB each.
fn large_binaries() -> Input {
    let payload: Vec<u8> = (0..LARGE_SIZE).map(|i| (i * 31 + 7) as u8).collect();
    let mut wire = Vec::with_capacity(LARGE_MESSAGES * (LARGE_SIZE + MAX_HEADER_LEN));
    for i in 0..LARGE_MESSAGES {
        push_client_frame(&mut wire, OpCode::Binary, &payload, mask_key(i));
    }
    Input {
        wire: wire.into(),
        count: LARGE_MESSAGES,
        payload_bytes: LARGE_MESSAGES * LARGE_SIZE,
    }
}

/// Reads `input.count` messages through the blocking driver.
fn via_websocket(input: &Input) {
    let stream = Wire {
        rest: input.wire.clone(),
    };
    let mut ws = WebSocket::from_raw_socket(stream, Role::Server, Config::default());
    let mut bytes = 0;
    for _ in 0..input.count {
        let msg = ws.read().expect("a valid frame");
        debug_assert!(msg.is_data());
        bytes += black_box(msg).len();
    }
    assert_eq!(bytes, input.payload_bytes);
    assert!(ws.get_ref().rest.is_empty());
}

/// How the context gets its input.
#[derive(Clone, Copy)]
enum Fill {
    /// `feed` pieces of this many bytes.
    Feed(usize),
    /// `input_spare` + `commit_input`, as the driver does.
    SpareCommit,
}

/// Fills the context as `fill` says and drains it after each piece.
fn via_context(input: &Input, fill: Fill) {
    let mut ctx = WebSocketContext::new(Role::Server, Config::default());
    let (mut count, mut bytes) = (0, 0);
    let mut rest = &input.wire[..];
    while !rest.is_empty() {
        let n = match fill {
            Fill::Feed(chunk) => {
                let n = chunk.min(rest.len());
                ctx.feed(&rest[..n]);
                n
            }
            Fill::SpareCommit => {
                let spare = ctx.input_spare();
                let n = spare.len().min(rest.len());
                spare[..n].copy_from_slice(&rest[..n]);
                ctx.commit_input(n);
                n
            }
        };
        rest = &rest[n..];
        while let Some(msg) = ctx.next_message().expect("a valid frame") {
            debug_assert!(matches!(msg, Message::Text(_) | Message::Binary(_)));
            count += 1;
            bytes += black_box(msg).len();
        }
    }
    assert_eq!((count, bytes), (input.count, input.payload_bytes));
    assert_eq!(ctx.buffered_input(), 0);
}

/// Benches one input; `floor` names the largest-feed variant and its size.
fn bench_input(
    c: &mut Criterion,
    name: &str,
    input: &Input,
    throughput: Throughput,
    floor: (&str, usize),
) {
    let read_size = Config::default().get_read_buffer_size();
    let mut group = c.benchmark_group(name);
    group.throughput(throughput);
    group.bench_function("websocket", |b| b.iter(|| via_websocket(input)));
    group.bench_function("context spare/commit", |b| {
        b.iter(|| via_context(input, Fill::SpareCommit));
    });
    group.bench_function("context 8 KiB feeds", |b| {
        b.iter(|| via_context(input, Fill::Feed(read_size)));
    });
    group.bench_function(floor.0, |b| {
        b.iter(|| via_context(input, Fill::Feed(floor.1)));
    });
    group.finish();
}

fn read(c: &mut Criterion) {
    let small = small_texts();
    bench_input(
        c,
        "read 100k masked small texts",
        &small,
        Throughput::Elements(small.count as u64),
        ("context one feed", small.wire.len()),
    );
    drop(small);

    let large = large_binaries();
    bench_input(
        c,
        "read 64 x 1 MiB masked binaries",
        &large,
        Throughput::Bytes(large.payload_bytes as u64),
        ("context one feed per frame", large.wire.len() / large.count),
    );
}

/// `payload` as masked client frames of `piece` bytes each.
fn fragments(payload: &[u8], piece: usize) -> Vec<u8> {
    let pieces: Vec<&[u8]> = payload.chunks(piece).collect();
    let mut wire = Vec::new();
    for (i, part) in pieces.iter().enumerate() {
        let opcode = if i == 0 {
            OpCode::Binary
        } else {
            OpCode::Continuation
        };
        let mut header = FrameHeader::new(opcode, part.len() as u64);
        header.is_final = i + 1 == pieces.len();
        header.mask = Some(mask_key(i));
        let mut head = [0; MAX_HEADER_LEN];
        let n = header.encode(&mut head);
        wire.extend_from_slice(&head[..n]);
        let start = wire.len();
        wire.extend_from_slice(part);
        apply_mask(&mut wire[start..], mask_key(i));
    }
    wire
}

fn fragmentation(c: &mut Criterion) {
    const LEN: usize = 256 << 10;
    let payload: Vec<u8> = (0..LEN).map(|i| (i * 7 + i / 251) as u8).collect();
    let mut group = c.benchmark_group("fragmentation: 256 KiB binary, per wire byte");
    for (name, piece) in [("one frame", LEN), ("1-byte fragments", 1)] {
        let wire = fragments(&payload, piece);
        group.throughput(Throughput::Bytes(wire.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| {
                let config = Config::default()
                    .max_message_size(Some(64 << 20))
                    .max_fragments(None);
                let mut ctx = WebSocketContext::new(Role::Server, config);
                let mut got = 0;
                for read in wire.chunks(128 << 10) {
                    ctx.feed(black_box(read));
                    while let Some(msg) = ctx.next_message().unwrap() {
                        got += msg.len();
                    }
                }
                assert_eq!(got, LEN);
            });
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    // Each iteration parses 6 to 64 MiB; ten samples settle within seconds.
    // Command-line options (--measurement-time etc.) override these.
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = read, fragmentation
}
criterion_main!(benches);
