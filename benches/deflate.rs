//! permessage-deflate cost on JSON-like 1 KiB and 64 KiB messages: compress
//! and decompress throughput (uncompressed bytes per second), with the
//! compression ratio printed once per size.
//!
//! STAND-IN: the codec (`src/deflate/codec.rs`) is crate-private and not yet
//! wired into `WebSocketContext`, so this drives flate2 directly with the
//! codec's default settings: zlib-rs backend, raw DEFLATE, level 1, 15
//! window bits, context takeover, sync flush with the `00 00 ff ff` tail
//! stripped and appended again on inflate. Switch it to the public API once
//! compression is negotiated end to end.

#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress};

/// The codec's default level (`DeflateConfig::default`).
const LEVEL: u32 = 1;
/// The codec's default window.
const WINDOW_BITS: u8 = 15;
/// Distinct messages cycled through, so the bench does not measure one
/// message compressed against itself.
const CORPUS: usize = 64;
const TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// Deterministic JSON-like text: an array of event records with varying
/// numbers and a handful of repeated keys and values, as chat or market
/// data feeds send. Same generator as the codec's unit tests.
fn json_like(len: usize, seed: u64) -> Vec<u8> {
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
    out.into_bytes()
}

/// One message, as the codec compresses it: sync flush, tail stripped.
fn compress(state: &mut Compress, input: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.reserve(input.len() / 2 + 64);
    let base = state.total_in();
    loop {
        if out.capacity() - out.len() < 64 {
            out.reserve(out.len().max(64));
        }
        let consumed = (state.total_in() - base) as usize;
        state
            .compress_vec(&input[consumed..], out, FlushCompress::Sync)
            .unwrap();
        if (state.total_in() - base) as usize == input.len() && out.len() < out.capacity() {
            break;
        }
    }
    assert!(out.ends_with(&TAIL));
    out.truncate(out.len() - TAIL.len());
}

/// One message, as the codec inflates it: payload, then the tail.
fn decompress(state: &mut Decompress, input: &[u8], out: &mut Vec<u8>, len: usize) {
    out.clear();
    out.reserve(len + 1);
    state
        .decompress_vec(input, out, FlushDecompress::None)
        .unwrap();
    state
        .decompress_vec(&TAIL, out, FlushDecompress::None)
        .unwrap();
    assert_eq!(out.len(), len);
}

fn new_compress() -> Compress {
    Compress::new_with_window_bits(Compression::new(LEVEL), false, WINDOW_BITS)
}

fn new_decompress() -> Decompress {
    Decompress::new_with_window_bits(false, WINDOW_BITS)
}

fn deflate(c: &mut Criterion) {
    let mut group = c.benchmark_group("deflate (flate2 direct, codec settings)");
    for (label, size) in [("1KiB", 1024), ("64KiB", 64 * 1024)] {
        let messages: Vec<Vec<u8>> = (0..CORPUS as u64)
            .map(|seed| json_like(size, seed + 1))
            .collect();
        // The corpus as one connection sends it: context carried across.
        let mut state = new_compress();
        let mut buf = Vec::new();
        let compressed: Vec<Vec<u8>> = messages
            .iter()
            .map(|m| {
                compress(&mut state, m, &mut buf);
                buf.clone()
            })
            .collect();
        let raw: usize = messages.iter().map(Vec::len).sum();
        let packed: usize = compressed.iter().map(Vec::len).sum();
        eprintln!(
            "deflate {label} JSON-like, level {LEVEL}, {WINDOW_BITS} bits, context takeover: \
             ratio {:.3} ({packed} / {raw} bytes)",
            packed as f64 / raw as f64
        );

        group.throughput(Throughput::Bytes(size as u64));
        group.bench_function(format!("compress {label}"), |b| {
            let mut state = new_compress();
            let mut out = Vec::new();
            let mut i = 0;
            b.iter(|| {
                compress(&mut state, black_box(&messages[i % CORPUS]), &mut out);
                i += 1;
                black_box(out.len())
            });
        });
        group.bench_function(format!("decompress {label}"), |b| {
            let mut state = new_decompress();
            let mut out = Vec::new();
            let mut i = 0;
            b.iter(|| {
                // The compressed corpus is one stream: replay it in order.
                if i % CORPUS == 0 {
                    state = new_decompress();
                }
                decompress(
                    &mut state,
                    black_box(&compressed[i % CORPUS]),
                    &mut out,
                    size,
                );
                i += 1;
                black_box(out.len())
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
    targets = deflate
}
criterion_main!(benches);
