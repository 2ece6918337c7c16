//! What a hostile peer can make one connection cost through a driver: a
//! message in assembly costs about its bytes whatever its fragmentation,
//! with the driver's own read buffers included. The test binary must have
//! [`CountingAlloc`](crate::CountingAlloc) as its global allocator (the
//! case checks that it counts).

use bytes::Bytes;
use lockgate::frame::OpCode;
use lockgate::{Config, Message, Role};

use super::{Connection, Driver};
use crate::{HeapUse, MockStream, ReadStep, frame};

const KIB: usize = 1024;

/// The size of the socket reads the mock hands out.
const READ: usize = 16 * KIB;

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

/// `payload` as masked client frames of `piece` bytes.
fn fragmented(payload: &[u8], piece: usize) -> Vec<u8> {
    let pieces: Vec<&[u8]> = payload.chunks(piece).collect();
    let mut wire = Vec::with_capacity(payload.len() + pieces.len() * 6);
    for (i, part) in pieces.iter().enumerate() {
        let opcode = if i == 0 {
            OpCode::Binary
        } else {
            OpCode::Continuation
        };
        let fin = i + 1 == pieces.len();
        wire.extend_from_slice(&frame(fin, opcode, part, Some([1, 2, 3, 4])));
    }
    wire
}

/// Panics unless the counting allocator counts this thread's allocations.
fn assert_counting() {
    let heap = HeapUse::start();
    let block = std::hint::black_box(vec![1u8; 100_000]);
    assert!(
        heap.now() >= 100_000,
        "CountingAlloc is not the global allocator of this test binary"
    );
    drop(block);
}

/// The peak heap while the driver reads `payload` sent in frames of
/// `piece` bytes, arriving in reads of [`READ`] bytes.
fn peak_reading<D: Driver>(payload: &[u8], piece: usize) -> usize {
    let config = Config::default()
        .max_message_size(Some(payload.len()))
        .max_fragments(None);
    // The script is built before measuring, and shares `wire`, which
    // outlives the measurement: reading it frees nothing.
    let wire = Bytes::from(fragmented(payload, piece));
    let mut stream = MockStream::new();
    let mut from = 0;
    while from < wire.len() {
        let to = (from + READ).min(wire.len());
        stream
            .reads
            .push_back(ReadStep::Shared(wire.slice(from..to)));
        from = to;
    }
    let heap = HeapUse::start();
    let mut ws = D::open(stream, Role::Server, config);
    let msg = ws.read().expect("the message");
    let peak = heap.peak();
    assert!(
        matches!(&msg, Message::Binary(got) if got == payload),
        "{piece}-byte frames: not the message sent"
    );
    drop(msg);
    drop(ws);
    drop(wire);
    peak
}

/// A 256 KiB message in 1-byte, 7-byte, 257-byte and 4 KiB frames costs
/// at most three times what it costs in one frame, read buffers included.
pub fn a_message_in_assembly_costs_its_bytes_whatever_the_fragmentation<D: Driver>() {
    assert_counting();
    let payload = pattern(256 * KIB);
    let one_frame = peak_reading::<D>(&payload, payload.len());
    for piece in [1, 7, 257, 4 * KIB] {
        let peak = peak_reading::<D>(&payload, piece);
        println!("{piece}-byte frames: peak {peak} B, one frame {one_frame} B");
        assert!(
            peak <= 3 * one_frame,
            "{piece}-byte frames: {peak} B against {one_frame} B in one frame"
        );
    }
}
