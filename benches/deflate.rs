//! permessage-deflate through the public API, on JSON-like 1 KiB and 64 KiB
//! text messages, with context takeover (the default) and without it.
//!
//! - **compress**: a server-role [`WebSocketContext`] with deflate
//!   negotiated `write`s one message per iteration and the output is drained
//!   (`output` chunk by chunk), as a driver would hand it to the socket.
//! - **decompress**: the same messages, compressed beforehand by a
//!   client-role context (so masked, with RSV1 set), are `feed` to a
//!   server-role context and read back with `next_message`.
//!
//! - **inflate framing**: one 512 KiB message as one-byte stored blocks,
//!   all in one frame and in one frame each (the framing that once made
//!   inflation quadratic): the two stay within a constant factor, in
//!   payload bytes a second (`tests/cost_bounds.rs` proves the same in
//!   counted allocator work; this is its timing).
//!
//! Throughput is in payload (uncompressed) bytes. The compression ratio,
//! wire bytes (frame headers included) per payload byte, is printed once
//! per size and mode on stderr.
//!
//! With context takeover the compressed frames form one stream that must be
//! inflated from its start, so the decompress bench replays it in runs of
//! the whole corpus on a fresh context each. Each run starts with an
//! untimed warm-up message, so the decompressor's lazy allocation is not
//! timed; without context takeover it is, because lockgate drops the state
//! after every message (that cost is the point of the mode).

#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lockgate::deflate::{DeflateConfig, DeflateParams};
use lockgate::{Buf, Config, Message, Role, Utf8Bytes, WebSocketContext};

/// Bytes of distinct messages cycled through. Small corpora flatter
/// DEFLATE: cycling through 64 × 1 KiB, compress and decompress both ran
/// about twice as fast as on 50k distinct messages (the branch predictor
/// and caches learn the repeating input), so each size gets 4 MiB of
/// distinct text (4096 × 1 KiB, 64 × 64 KiB), which measured like the
/// 50k-message case.
const CORPUS_BYTES: usize = 4 << 20;

/// Deterministic JSON-like text: an array of event records with varying
/// numbers and a handful of repeated keys and values, as chat or market
/// data feeds send. Same generator as the raw DEFLATE unit tests and
/// `bench-peers`.
fn json_like(len: usize, seed: u64) -> String {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    const NAMES: [&str; 8] = [
        "alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi",
    ];
    const EVENTS: [&str; 5] = ["login", "logout", "purchase", "view", "update"];
    let mut out = String::with_capacity(len + 256);
    out.push('[');
    while out.len() < len {
        let r = next();
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str(&format!(
            "{{\"id\":{},\"user\":\"{}\",\"event\":\"{}\",\"ts\":{},\"active\":{},\
             \"score\":{}.{:02},\"tags\":[\"t{}\",\"t{}\"]}}",
            r % 100_000,
            NAMES[(r >> 20) as usize % NAMES.len()],
            EVENTS[(r >> 24) as usize % EVENTS.len()],
            1_700_000_000 + (r >> 32) % 10_000_000,
            (r >> 40) & 1 == 1,
            (r >> 41) % 1000,
            (r >> 51) % 100,
            (r >> 8) % 16,
            (r >> 12) % 16,
        ));
    }
    out.truncate(len);
    out
}

/// The two modes benched: what the handshake would have agreed.
fn modes() -> [(&'static str, DeflateParams); 2] {
    let no_takeover = DeflateParams {
        server_no_context_takeover: true,
        client_no_context_takeover: true,
        ..DeflateParams::default()
    };
    [
        ("context takeover", DeflateParams::default()),
        ("no context takeover", no_takeover),
    ]
}

fn context(role: Role, params: DeflateParams) -> WebSocketContext {
    let config = Config::default().deflate(Some(DeflateConfig::default()));
    let ctx = WebSocketContext::with_deflate(role, config, Some(params));
    assert!(ctx.deflate().is_some(), "deflate not enabled: feature off?");
    ctx
}

/// Hands every pending output byte to a pretend socket; returns how many.
fn drain(ctx: &mut WebSocketContext) -> usize {
    let mut output = ctx.output();
    let mut n = 0;
    while output.has_remaining() {
        let k = output.chunk().len();
        n += k;
        output.advance(k);
    }
    n
}

/// `msgs` as one client-role connection sends them: one buffer per frame.
fn client_frames(params: DeflateParams, msgs: &[Utf8Bytes]) -> Vec<Vec<u8>> {
    let mut ctx = context(Role::Client, params);
    msgs.iter()
        .map(|m| {
            ctx.write(Message::text(m.clone())).unwrap();
            let mut output = ctx.output();
            let frame = output.copy_to_bytes(output.remaining()).to_vec();
            // RSV1: the message really was compressed.
            assert_eq!(frame[0] & 0x40, 0x40, "message sent uncompressed");
            frame
        })
        .collect()
}

/// Reads one message from `ctx` and checks its size.
fn read_one(ctx: &mut WebSocketContext, len: usize) {
    let msg = ctx.next_message().unwrap().expect("a whole message");
    let Message::Text(t) = msg else {
        panic!("expected text, got {msg:?}")
    };
    assert_eq!(t.len(), len);
    black_box(t);
}

fn deflate(c: &mut Criterion) {
    for (label, size) in [("1KiB", 1024), ("64KiB", 64 * 1024)] {
        let corpus = CORPUS_BYTES / size;
        let texts: Vec<Utf8Bytes> = (0..corpus as u64)
            .map(|seed| json_like(size, seed + 1).into())
            .collect();
        let warm: Utf8Bytes = json_like(256, 0).into();
        let raw = (corpus * size) as f64;
        let mut group = c.benchmark_group(format!("deflate {label} JSON-like"));
        group.throughput(Throughput::Bytes(size as u64));
        for (mode, params) in modes() {
            // Ratio as each role puts the corpus on the wire.
            let mut server = context(Role::Server, params);
            let mut server_wire = 0;
            for t in &texts {
                server.write(Message::text(t.clone())).unwrap();
                server_wire += drain(&mut server);
            }
            let mut stream = vec![warm.clone()];
            stream.extend(texts.iter().cloned());
            let frames = client_frames(params, &stream);
            let client_wire: usize = frames[1..].iter().map(Vec::len).sum();
            // The frames decode to the corpus, byte for byte.
            let mut check = context(Role::Server, params);
            for (f, t) in frames.iter().zip(&stream) {
                check.feed(f);
                let got = check.next_message().unwrap().expect("a whole message");
                assert_eq!(got.as_text(), Some(t.as_str()), "round trip differs");
            }
            eprintln!(
                "deflate {label} JSON-like, level 1, 15 bits, {mode}: wire / payload = \
                 {:.3} as server ({server_wire} / {raw} bytes), {:.3} as client (masked)",
                server_wire as f64 / raw,
                client_wire as f64 / raw,
            );

            group.bench_function(format!("compress, {mode}"), |b| {
                let mut ctx = context(Role::Server, params);
                let mut i = 0;
                b.iter(|| {
                    let msg = Message::text(texts[i % corpus].clone());
                    ctx.write(black_box(msg)).unwrap();
                    i += 1;
                    black_box(drain(&mut ctx))
                });
            });
            group.bench_function(format!("decompress, {mode}"), |b| {
                b.iter_custom(|iters| {
                    let mut timed = Duration::ZERO;
                    let mut done = 0;
                    while done < iters {
                        let mut ctx = context(Role::Server, params);
                        ctx.feed(&frames[0]);
                        read_one(&mut ctx, warm.len());
                        let k = (iters - done).min(corpus as u64) as usize;
                        let t0 = Instant::now();
                        for f in &frames[1..=k] {
                            ctx.feed(black_box(f));
                            read_one(&mut ctx, size);
                        }
                        timed += t0.elapsed();
                        done += k as u64;
                    }
                    timed
                });
            });
        }
        group.finish();
    }
}

/// `payload` as masked client frames of one-byte stored DEFLATE blocks,
/// one frame per block or all in one frame.
fn stored_one_byte_blocks(payload: &[u8], frame_per_block: bool) -> Vec<u8> {
    use lockgate::frame::{FrameHeader, MAX_HEADER_LEN, OpCode, apply_mask};
    let mut blocks: Vec<Vec<u8>> = payload
        .iter()
        .map(|&byte| vec![0x00, 0x01, 0x00, 0xfe, 0xff, byte])
        .collect();
    // The header byte of the empty block whose tail was stripped.
    blocks.last_mut().expect("non-empty").push(0x00);
    if !frame_per_block {
        blocks = vec![blocks.concat()];
    }
    let mut wire = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        let opcode = if i == 0 {
            OpCode::Binary
        } else {
            OpCode::Continuation
        };
        let mut header = FrameHeader::new(opcode, block.len() as u64);
        header.is_final = i + 1 == blocks.len();
        header.rsv1 = i == 0;
        header.mask = Some([0x11, 0x22, 0x33, 0x44]);
        let mut head = [0; MAX_HEADER_LEN];
        let n = header.encode(&mut head);
        wire.extend_from_slice(&head[..n]);
        let start = wire.len();
        wire.extend_from_slice(block);
        apply_mask(&mut wire[start..], [0x11, 0x22, 0x33, 0x44]);
    }
    wire
}

fn inflate_framing(c: &mut Criterion) {
    const LEN: usize = 512 << 10;
    let payload: Vec<u8> = (0..LEN).map(|i| (i * 7 + i / 251) as u8).collect();
    let params = modes()[0].1;
    let mut group = c.benchmark_group("inflate framing: 512 KiB of 1-byte stored blocks");
    group.throughput(Throughput::Bytes(LEN as u64));
    for (name, frame_per_block) in [("one frame", false), ("one frame per block", true)] {
        let wire = stored_one_byte_blocks(&payload, frame_per_block);
        group.bench_function(name, |b| {
            b.iter(|| {
                let config = Config::default()
                    .max_message_size(Some(64 << 20))
                    .max_fragments(None);
                let mut ctx = WebSocketContext::with_deflate(Role::Server, config, Some(params));
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
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = deflate, inflate_framing
}
criterion_main!(benches);
