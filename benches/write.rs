//! 100k small text messages written, then one flush, into a stream whose
//! write costs ~80 ns and flush ~8 µs: the cost of the write path and of
//! flushing policy, as in the benchmark that motivated the write/flush API.

#![allow(missing_docs)] // criterion_group! generates undocumented items

use lockgate_kit as support;

use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use lockgate::{Config, Message, Role, WebSocket};
use support::MockStream;

const MESSAGES: usize = 100_000;

fn messages() -> Vec<Message> {
    (0..MESSAGES)
        .map(|i| {
            Message::text(format!(
                "{{\"id\":{i},\"event\":\"tick\",\"pad\":\"{}\"}}",
                "x".repeat(i % 60)
            ))
        })
        .collect()
}

fn costly_stream() -> MockStream {
    let mut stream = MockStream::new();
    stream.discard = true;
    stream.write_cost = Some(Duration::from_nanos(80));
    stream.flush_cost = Some(Duration::from_micros(8));
    stream
}

fn write_then_flush(c: &mut Criterion) {
    let msgs = messages();
    let mut group = c.benchmark_group("write 100k small texts then flush");
    group.throughput(Throughput::Elements(MESSAGES as u64));
    group.sample_size(20);
    for (name, role) in [("server", Role::Server), ("client", Role::Client)] {
        group.bench_function(name, |b| {
            b.iter_batched(
                || {
                    (
                        WebSocket::from_raw_socket(costly_stream(), role, Config::default()),
                        msgs.clone(),
                    )
                },
                |(mut ws, msgs)| {
                    for msg in msgs {
                        ws.write(msg).unwrap();
                    }
                    ws.flush().unwrap();
                    assert_eq!(ws.get_ref().flush_calls, 1);
                    assert!(ws.get_ref().bytes_written > MESSAGES * 20);
                    ws
                },
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, write_then_flush);
criterion_main!(benches);
