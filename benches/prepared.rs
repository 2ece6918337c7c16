//! One message to 1,000 server connections: `write` on each (every
//! connection encodes, and compresses, the message itself) against
//! `write_prepared` (encoded once; without context takeover, compressed
//! once). Each connection's output is then copied out, as a socket would,
//! so shared frames pay for what they save only once.

#![allow(missing_docs)] // criterion_group! generates undocumented items

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lockgate::deflate::{DeflateConfig, DeflateParams};
use lockgate::{Buf, Config, Message, Next, Operation, PreparedMessage, Role, WebSocketContext};

const CONNECTIONS: usize = 1_000;

#[derive(Clone, Copy)]
enum Compression {
    Off,
    NoTakeover,
    Takeover,
}

fn connections(compression: Compression) -> Vec<WebSocketContext> {
    let config = Config::default().deflate(Some(DeflateConfig::default()));
    let params = match compression {
        Compression::Off => None,
        Compression::NoTakeover => Some(DeflateParams {
            server_no_context_takeover: true,
            ..DeflateParams::default()
        }),
        Compression::Takeover => Some(DeflateParams::default()),
    };
    (0..CONNECTIONS)
        .map(|_| WebSocketContext::with_deflate(Role::Server, config, params))
        .collect()
}

/// Chatty JSON of about `len` bytes.
fn message(len: usize) -> Message {
    let mut s = String::from("{\"channel\":\"trades\",\"data\":[");
    let mut i = 0;
    while s.len() + 40 < len {
        s.push_str(&format!(
            "{{\"p\":\"{}.{}\",\"q\":{}}},",
            100 + i % 7,
            i % 100,
            i % 13
        ));
        i += 1;
    }
    while s.len() + 2 < len {
        s.push(' ');
    }
    s.push_str("]}");
    Message::text(s)
}

/// Writes the connection's output into `sink` (the socket's copy) and
/// reports it flushed.
fn transmit(ctx: &mut WebSocketContext, sink: &mut Vec<u8>) {
    ctx.flush();
    loop {
        match ctx.poll(Operation::Flush).expect("flushing does not fail") {
            Next::Transmit => {
                let mut output = ctx.output();
                while output.has_remaining() {
                    let chunk = output.chunk();
                    sink.extend_from_slice(chunk);
                    let n = chunk.len();
                    output.advance(n);
                }
            }
            Next::Flush => ctx.flushed(),
            Next::Done => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    sink.clear();
}

fn fan_out(c: &mut Criterion) {
    for (compression, name) in [
        (Compression::Off, "uncompressed"),
        (Compression::NoTakeover, "deflate, no context takeover"),
        (Compression::Takeover, "deflate, context takeover"),
    ] {
        let mut group = c.benchmark_group(format!("one message to 1000 connections, {name}"));
        group.throughput(Throughput::Elements(CONNECTIONS as u64));
        group.sample_size(10);
        for size in [64, 16 * 1024] {
            let msg = message(size);
            let mut sink = Vec::with_capacity(64 * 1024);
            let mut conns = connections(compression);
            group.bench_function(format!("write {size} B"), |b| {
                b.iter(|| {
                    for ctx in &mut conns {
                        ctx.write(msg.clone()).unwrap();
                        transmit(ctx, &mut sink);
                    }
                })
            });
            let mut conns = connections(compression);
            group.bench_function(format!("write_prepared {size} B"), |b| {
                b.iter(|| {
                    // A new message each time: the encoding and compression
                    // it shares are part of the cost.
                    let prepared = PreparedMessage::new(msg.clone());
                    for ctx in &mut conns {
                        ctx.write_prepared(&prepared).unwrap();
                        transmit(ctx, &mut sink);
                    }
                })
            });
        }
        group.finish();
    }
}

/// Where sharing a frame starts to beat copying it (`SHARE_ENCODED_MIN`).
fn share_threshold(c: &mut Criterion) {
    let mut group = c.benchmark_group("write_prepared to 1000 connections, by size");
    group.throughput(Throughput::Elements(CONNECTIONS as u64));
    group.sample_size(10);
    for size in [512, 1024, 2048, 4096, 8192] {
        let msg = message(size);
        let mut sink = Vec::with_capacity(64 * 1024);
        let mut conns = connections(Compression::Off);
        group.bench_function(format!("{size} B, 8 per flush"), |b| {
            b.iter(|| {
                let prepared: Vec<_> = (0..8).map(|_| PreparedMessage::new(msg.clone())).collect();
                for ctx in &mut conns {
                    for p in &prepared {
                        ctx.write_prepared(p).unwrap();
                    }
                    transmit(ctx, &mut sink);
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, fan_out, share_threshold);
criterion_main!(benches);
