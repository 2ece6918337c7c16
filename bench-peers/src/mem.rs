//! Scenarios 1 and 2: writing into a costly in-memory sink, and reading
//! masked frames from memory. Blocking libraries get `std::io` streams;
//! async libraries get the same streams through tokio's traits, polled by a
//! current-thread runtime (`block_on`), timing inside the future.

use std::io::Read;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::frames::{self, OP_BINARY, OP_TEXT};
use crate::libs::{AsyncLib, SyncLib};
use crate::streams::{CostMock, MemStream, MockState};

/// Cost of one write call on the mock sink.
pub(crate) const WRITE_COST: Duration = Duration::from_nanos(80);
/// Cost of one flush on the mock sink.
pub(crate) const FLUSH_COST: Duration = Duration::from_micros(8);

/// What one write run measured.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WriteRun {
    /// Time from the first write to the end of the flush.
    pub(crate) elapsed: Duration,
    /// Write calls the sink saw.
    pub(crate) writes: u64,
    /// Flush calls the sink saw.
    pub(crate) flushes: u64,
}

/// 20–100 byte JSON-like texts, as in `benches/write.rs`.
pub(crate) fn small_texts(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            format!(
                "{{\"id\":{i},\"event\":\"tick\",\"pad\":\"{}\"}}",
                "x".repeat(i % 60)
            )
        })
        .collect()
}

/// Checks that `written` holds exactly `texts`, in order, as final text
/// frames, masked iff the writer was a client.
fn verify_written(lib: &str, written: &[u8], texts: &[String], client: bool) {
    let mut i = 0;
    let n = frames::for_each_frame(written, |op, fin, masked, p| {
        if op != OP_TEXT || !fin || masked != client {
            return Err(format!("frame {i}: opcode {op} fin {fin} masked {masked}"));
        }
        if texts.get(i).map(String::as_bytes) != Some(p) {
            return Err(format!("frame {i}: payload differs"));
        }
        i += 1;
        Ok(())
    })
    .unwrap_or_else(|e| crate::fail(lib, &format!("write output: {e}")));
    if n != texts.len() {
        crate::fail(lib, &format!("wrote {n} frames, expected {}", texts.len()));
    }
}

fn finish(
    lib: &str,
    mock: &CostMock,
    texts: &[String],
    server: bool,
    buf: &mut Vec<u8>,
) -> MockState {
    let mut st = mock.take();
    verify_written(lib, &st.written, texts, !server);
    *buf = std::mem::take(&mut st.written);
    st
}

/// Scenario 1 for a blocking library: write all `texts`, then flush once.
/// `buf` is the sink's reusable backing buffer.
pub(crate) fn write_sync<L: SyncLib>(
    lib: &str,
    texts: &[String],
    server: bool,
    buf: &mut Vec<u8>,
) -> WriteRun {
    let mock = CostMock::new(std::mem::take(buf), WRITE_COST, FLUSH_COST);
    let mut ws = L::wrap(mock.clone(), server);
    let msgs: Vec<L::Msg> = texts.iter().map(|t| L::text(t.clone())).collect();
    let t0 = Instant::now();
    for m in msgs {
        L::write(&mut ws, m);
    }
    L::flush(&mut ws);
    let elapsed = t0.elapsed();
    drop(ws);
    let st = finish(lib, &mock, texts, server, buf);
    WriteRun {
        elapsed,
        writes: st.writes,
        flushes: st.flushes,
    }
}

/// The write rows' floor: each prebuilt text's bytes copied into the
/// sink's buffer and the text dropped (its allocation freed), with no
/// framing, masking or sink calls. Every library pays at least this.
pub(crate) fn write_floor(texts: &[String], buf: &mut Vec<u8>) -> Duration {
    let mut out = std::mem::take(buf);
    out.clear();
    let msgs: Vec<String> = texts.to_vec();
    let t0 = Instant::now();
    for m in msgs {
        out.extend_from_slice(m.as_bytes());
    }
    let elapsed = t0.elapsed();
    let total: usize = texts.iter().map(String::len).sum();
    assert_eq!(out.len(), total, "the floor copied every text");
    *buf = out;
    elapsed
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Scenario 1 for an async library.
pub(crate) fn write_async<L: AsyncLib>(
    lib: &str,
    texts: &[String],
    server: bool,
    buf: &mut Vec<u8>,
) -> WriteRun {
    let mock = CostMock::new(std::mem::take(buf), WRITE_COST, FLUSH_COST);
    let rt = runtime();
    let elapsed = rt.block_on(async {
        let mut ws = L::wrap(mock.clone(), server).await;
        let msgs: Vec<L::Msg> = texts.iter().map(|t| L::text(t.clone())).collect();
        let t0 = Instant::now();
        for m in msgs {
            L::write(&mut ws, m).await;
        }
        L::flush(&mut ws).await;
        t0.elapsed()
    });
    let st = finish(lib, &mock, texts, server, buf);
    WriteRun {
        elapsed,
        writes: st.writes,
        flushes: st.flushes,
    }
}

/// Input and expectations for one read scenario.
pub(crate) struct ReadInput {
    /// Masked frames, as a client would send them.
    pub(crate) bytes: Bytes,
    /// The payloads, for the full check of the first run.
    pub(crate) payloads: Vec<Bytes>,
    /// Folded digests of all payloads, for the cheap check of every run.
    pub(crate) digest: u64,
    /// Total payload bytes.
    pub(crate) payload_bytes: usize,
}

impl ReadInput {
    fn new(payloads: Vec<Bytes>, opcode: u8) -> Self {
        let total: usize = payloads.iter().map(|p| p.len() + 14).sum();
        let mut bytes = Vec::with_capacity(total);
        let mut digest = 0;
        for (i, p) in payloads.iter().enumerate() {
            frames::encode(&mut bytes, opcode, p, Some(frames::mask_for(i)));
            digest = frames::fold(digest, frames::digest(p));
        }
        Self {
            bytes: bytes.into(),
            payload_bytes: payloads.iter().map(Bytes::len).sum(),
            payloads,
            digest,
        }
    }

    /// `texts` as masked text frames.
    pub(crate) fn texts(texts: &[String]) -> Self {
        Self::new(
            texts.iter().map(|t| Bytes::from(t.clone())).collect(),
            OP_TEXT,
        )
    }

    /// `n` binary messages of `size` bytes with varying content.
    pub(crate) fn binaries(n: usize, size: usize) -> Self {
        Self::new((0..n).map(|i| pattern(i, size)).collect(), OP_BINARY)
    }
}

/// `size` bytes whose content depends on `i` and the position.
pub(crate) fn pattern(i: usize, size: usize) -> Bytes {
    (0..size)
        .map(|j| (j.wrapping_mul(31) ^ (j >> 9) ^ i.wrapping_mul(131)) as u8)
        .collect::<Vec<u8>>()
        .into()
}

fn check_read(lib: &str, input: &ReadInput, digest: u64) {
    if digest != input.digest {
        crate::fail(lib, "read payloads differ from what was sent (digest)");
    }
}

fn check_full(lib: &str, input: &ReadInput, i: usize, p: &[u8]) {
    if input.payloads[i] != p {
        crate::fail(lib, &format!("message {i} differs from what was sent"));
    }
}

/// Scenario 2 for a blocking library, server role. With `full`, every
/// payload is also compared byte for byte (used for the untimed warm-up).
pub(crate) fn read_sync<L: SyncLib>(lib: &str, input: &ReadInput, full: bool) -> Duration {
    let n = input.payloads.len();
    let mut ws = L::wrap(MemStream::new(input.bytes.clone()), true);
    let mut acc = 0;
    let t0 = Instant::now();
    for i in 0..n {
        let m = L::read(&mut ws);
        let p = L::payload(&m);
        acc = frames::fold(acc, frames::digest(p));
        if full {
            check_full(lib, input, i, p);
        }
    }
    let elapsed = t0.elapsed();
    check_read(lib, input, acc);
    elapsed
}

/// The read rows' floor: the mock's copy of every input byte into one
/// reused 1 MiB buffer, with no parsing, unmasking, validation or
/// allocation. Every library pays at least this copy, so no library can
/// read faster than it.
pub(crate) fn read_floor(input: &ReadInput) -> Duration {
    let mut stream = MemStream::new(input.bytes.clone());
    let mut buf = vec![0u8; 1 << 20];
    let mut last = 0u8;
    let mut total = 0;
    let t0 = Instant::now();
    loop {
        let n = stream.read(&mut buf).expect("the memory stream reads");
        if n == 0 {
            break;
        }
        total += n;
        last ^= buf[n - 1];
    }
    let elapsed = t0.elapsed();
    std::hint::black_box(last);
    assert_eq!(total, input.bytes.len(), "the floor read every byte");
    elapsed
}

/// Scenario 2 for an async library, server role.
pub(crate) fn read_async<L: AsyncLib>(lib: &str, input: &ReadInput, full: bool) -> Duration {
    let n = input.payloads.len();
    let rt = runtime();
    let (elapsed, acc) = rt.block_on(async {
        let mut ws = L::wrap(MemStream::new(input.bytes.clone()), true).await;
        let mut acc = 0;
        let t0 = Instant::now();
        for i in 0..n {
            let m = L::read(&mut ws).await;
            let p = L::payload(&m);
            acc = frames::fold(acc, frames::digest(p));
            if full {
                check_full(lib, input, i, p);
            }
        }
        (t0.elapsed(), acc)
    });
    check_read(lib, input, acc);
    elapsed
}
