//! What a hostile peer can make one connection cost: memory bounded by a
//! small constant times the limits, work linear in what it sent, whatever
//! the framing. Both are counted with the counting allocator (bytes in
//! use and their peak; allocator calls and the bytes they hand out,
//! reallocations included), never timed, so a loaded machine cannot fail
//! them: work as ratios between runs (the same bytes framed differently,
//! or four times the bytes). The same comparisons in time are benchmarks
//! (`benches/read.rs` `fragmentation`, `benches/deflate.rs`
//! `inflate_framing`).

use lockgate_kit as support;

use std::time::Instant;

use lockgate::deflate::DeflateParams;
use lockgate::frame::OpCode;
use lockgate::handshake::{Exchange, Proxy, Step};
use lockgate::{
    CloseCode, Config, Detail, HandshakeFailure, Message, Role, WebSocket, WebSocketContext,
};
use support::{CountingAlloc, HeapUse, MockStream, ReadStep, frame, parse_frames, take_output};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;
const MASK: [u8; 4] = [0x11, 0x22, 0x33, 0x44];

/// The size of the socket reads a driver makes between frames, at most.
const READ: usize = 128 * KIB;

/// A message limit, and no fragment count limit: the memory and time
/// bounds must hold on bytes alone.
fn limited(limit: usize) -> Config {
    Config::default()
        .max_message_size(Some(limit))
        .max_fragments(None)
}

/// `payload` as client frames of `piece` bytes (the last may be shorter).
fn fragmented(opcode: OpCode, payload: &[u8], piece: usize) -> Vec<u8> {
    let pieces: Vec<&[u8]> = if payload.is_empty() {
        vec![payload]
    } else {
        payload.chunks(piece).collect()
    };
    let mut wire = Vec::with_capacity(payload.len() + pieces.len() * 6);
    for (i, part) in pieces.iter().enumerate() {
        let op = if i == 0 { opcode } else { OpCode::Continuation };
        wire.extend_from_slice(&frame(i + 1 == pieces.len(), op, part, Some(MASK)));
    }
    wire
}

/// Feeds `wire` to `ctx` `chunk` bytes at a time, as a driver reading the
/// socket would, taking messages as they complete.
fn receive(ctx: &mut WebSocketContext, wire: &[u8], chunk: usize) -> Vec<Message> {
    let mut got = Vec::new();
    for piece in wire.chunks(chunk) {
        ctx.feed(piece);
        while let Some(msg) = ctx.next_message().expect("valid input") {
            got.push(msg);
        }
    }
    got
}

/// The peak heap while a server receives `wire` in reads of `chunk`
/// bytes, with the messages it produced.
fn peak_receiving(config: Config, wire: &[u8], chunk: usize) -> (usize, Vec<Message>) {
    let heap = HeapUse::start();
    let mut ctx = WebSocketContext::new(Role::Server, config);
    let got = receive(&mut ctx, wire, chunk);
    (heap.peak(), got)
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

#[test]
fn the_counting_allocator_counts() {
    let heap = HeapUse::start();
    let block = vec![1u8; 100_000];
    assert!(heap.now() >= 100_000 && heap.peak() >= 100_000);
    drop(block);
    assert!(heap.now() < 100_000 && heap.peak() >= 100_000);
}

#[test]
fn a_fragmented_message_costs_its_bytes_whatever_the_fragmentation() {
    let limit = MIB;
    let payload = pattern(limit);
    let (one_frame, _) = peak_receiving(
        limited(limit),
        &fragmented(OpCode::Binary, &payload, limit),
        READ,
    );
    // 1-byte fragments, tiny ones, ones just past the small-copy size and
    // sharing large reads with their neighbours, and a few large ones.
    for piece in [1, 7, 257, 4 * KIB, 300 * KIB] {
        let wire = fragmented(OpCode::Binary, &payload, piece);
        let (peak, got) = peak_receiving(limited(limit), &wire, READ);
        assert_eq!(got, [Message::Binary(payload.clone().into())], "{piece}");
        println!("{piece}-byte fragments: peak {peak} B, one frame {one_frame} B");
        // The assembled message, its growth (at most doubling), and one
        // read buffer: about 3x the message; 1-byte fragments used to
        // take 36x.
        assert!(
            peak <= 3 * limit + 2 * READ,
            "{piece}-byte fragments: peak {peak} B for a {limit}-byte message"
        );
        assert!(
            peak <= 3 * one_frame,
            "{piece}-byte fragments: {peak} B against {one_frame} B in one frame"
        );
    }
}

#[test]
fn headers_straddling_reads_cost_no_read_buffer_per_fragment() {
    // Each read holds the last payload byte of one fragment and the header
    // of the next, so every fragment is finished across reads (the path
    // that used to keep an 8 KiB read buffer per payload byte).
    let len = 16 * KIB;
    let payload = pattern(len);
    let wire = fragmented(OpCode::Binary, &payload, 1);
    // Fragments are 7 bytes (2 header, 4 mask, 1 payload): cut before
    // each payload byte.
    let cuts: Vec<usize> = (0..=len).map(|i| (i * 7 + 6).min(wire.len())).collect();
    let reads = || {
        let mut from = 0;
        cuts.iter().map(move |&to| {
            let read = from..to;
            from = to;
            read
        })
    };
    // The script is built before measuring; freeing it while reading
    // would hide allocations.
    let heap = HeapUse::start();
    let mut ctx = WebSocketContext::new(Role::Server, limited(MIB));
    let mut got = Vec::new();
    for read in reads() {
        ctx.feed(&wire[read]);
        while let Some(msg) = ctx.next_message().expect("valid input") {
            got.push(msg);
        }
    }
    let peak = heap.peak();
    assert_eq!(got, [Message::Binary(payload.clone().into())]);
    println!("straddling 1-byte fragments: peak {peak} B for {len} B");
    assert!(peak <= 4 * len + 16 * KIB, "peak {peak} B for {len} B");

    // The blocking driver reads the same way, into the same buffers.
    let mut stream = MockStream::new();
    for read in reads() {
        stream.reads.push_back(ReadStep::Data(wire[read].to_vec()));
    }
    let mut ws = WebSocket::from_raw_socket(stream, Role::Server, limited(MIB));
    assert_eq!(
        ws.read().expect("the message"),
        Message::Binary(payload.into())
    );
    assert!(ws.get_ref().read_calls > len, "one read per fragment");
}

/// The peak heap while a proxy tunnel takes a refusal whose body came in
/// the same read as its head.
fn peak_refused_by_proxy(body: &[u8]) -> (usize, String) {
    let mut answer = b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/html\r\n\r\n".to_vec();
    answer.extend_from_slice(body);
    let now = Instant::now();
    let proxy = Proxy::http("http://proxy.test:3128").expect("a valid proxy URL");
    let heap = HeapUse::start();
    let mut tunnel = proxy.tunnel("example.com", 443, None, None);
    assert!(matches!(tunnel.poll(now), Step::Transmit(_)));
    tunnel.receive(&answer, now);
    let Step::Done(Err(error)) = tunnel.poll(now) else {
        panic!("the 403 is a refusal");
    };
    let Ok(Detail::Handshake(HandshakeFailure::ProxyRefused(refusal))) = error.into_detail() else {
        panic!("the 403 is a refusal");
    };
    (heap.peak(), refusal.body)
}

#[test]
fn a_refusal_body_costs_its_bytes_whatever_they_are() {
    // Text decodes in place; invalid bytes each become a 3-byte U+FFFD if
    // the whole body is decoded, where the error keeps one short line.
    let len = MIB;
    let (text, text_summary) = peak_refused_by_proxy(&vec![b'x'; len]);
    let (invalid, invalid_summary) = peak_refused_by_proxy(&vec![0xff; len]);
    println!("1 MiB refusal body: peak {text} B as text, {invalid} B as invalid UTF-8");
    assert_eq!(text_summary, format!("{}…", "x".repeat(120)));
    assert_eq!(invalid_summary, format!("{}…", "\u{fffd}".repeat(120)));
    assert!(
        invalid <= text + 16 * KIB,
        "{invalid} B for invalid bytes against {text} B for text"
    );
}

/// A request a slow client sends in pieces.
const UPGRADE_REQUEST: &[u8] = b"GET /chat HTTP/1.1\r\nHost: example.com\r\nUpgrade: websocket\r\n\
    Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
    Sec-WebSocket-Version: 13\r\n\r\n";

#[test]
fn a_handshake_waiting_for_its_request_holds_about_what_arrived() {
    // A non-blocking server's handshake parked between the pieces of a
    // request that arrives a byte at a time, then in halves: what the
    // parked `MidHandshake` holds (the stream, the handshake state, the
    // head so far), never a read buffer.
    let half = UPGRADE_REQUEST.len() / 2;
    let pieces: [Vec<&'static [u8]>; 2] = [
        UPGRADE_REQUEST.chunks(1).collect(),
        vec![&UPGRADE_REQUEST[..half], &UPGRADE_REQUEST[half..]],
    ];
    for pieces in pieces {
        let mut stream = MockStream::new();
        for piece in &pieces {
            stream
                .reads
                .push_back(ReadStep::Shared(lockgate::Bytes::from_static(piece)));
            stream.reads.push_back(ReadStep::WouldBlock);
        }
        let heap = HeapUse::start();
        let mut most = 0;
        let mut parked = lockgate::accept(stream);
        let ws = loop {
            match parked {
                Ok(ws) => break ws,
                Err(lockgate::HandshakeError::Interrupted(mid)) => {
                    most = most.max(heap.now());
                    parked = mid.handshake();
                }
                Err(lockgate::HandshakeError::Failure(error)) => panic!("{error}"),
            }
        };
        assert!(most <= 2 * KIB, "{most} B held in {} pieces", pieces.len());
        assert!(
            ws.get_ref()
                .written
                .starts_with(b"HTTP/1.1 101 Switching Protocols\r\n")
        );
    }
}

#[test]
fn small_messages_never_pin_the_read_buffer_they_arrived_in() {
    // Small messages the application keeps (a chat history), each arriving
    // in a large read beside a large message it drops.
    let kept_len = 300;
    let count = 40;
    let mut wire = Vec::new();
    for i in 0..count {
        wire.extend_from_slice(&fragmented(OpCode::Binary, &[i as u8; 300], kept_len));
        wire.extend_from_slice(&fragmented(OpCode::Binary, &[0; 100 * KIB], 100 * KIB));
        // And a fragmented one, whose pieces must not pin it either.
        wire.extend_from_slice(&fragmented(OpCode::Binary, &[i as u8; 600], 257));
    }
    let heap = HeapUse::start();
    let mut ctx = WebSocketContext::new(Role::Server, Config::default());
    let kept: Vec<Message> = receive(&mut ctx, &wire, READ)
        .into_iter()
        .filter(|msg| msg.len() < 100 * KIB)
        .collect();
    ctx.handle_timeout(std::time::Instant::now());
    let held = heap.now();
    assert_eq!(kept.len(), 2 * count);
    let kept_bytes: usize = kept.iter().map(Message::len).sum();
    println!(
        "{} small messages ({kept_bytes} B) hold {held} B",
        kept.len()
    );
    // Each message's own allocation, with allocator rounding: not a read
    // buffer each (which used to be 128 KiB or more apiece).
    assert!(held <= 2 * kept_bytes + 4 * KIB, "{held} B held");
    drop(kept);
}

/// What receiving a message cost, in counted units.
#[derive(Debug, Clone, Copy)]
struct Work {
    /// Allocator calls (allocations and reallocations).
    calls: usize,
    /// Bytes they handed out ([`HeapUse::traffic`]).
    traffic: usize,
}

/// The allocator work of receiving `wire`, one message, on a fresh
/// server context.
fn receive_work(config: Config, params: Option<DeflateParams>, wire: &[u8]) -> Work {
    let heap = HeapUse::start();
    let mut ctx = WebSocketContext::with_deflate(Role::Server, config, params);
    let got = receive(&mut ctx, wire, READ);
    let work = Work {
        calls: heap.calls(),
        traffic: heap.traffic(),
    };
    assert_eq!(got.len(), 1);
    work
}

/// `a` against `b`, as a ratio of their counts.
fn ratio(a: usize, b: usize) -> f64 {
    a as f64 / b as f64
}

/// The most allocator calls a message of `len` bytes may take, however
/// finely it is framed: its buffer doubling from the smallest step, plus
/// the context's and the read buffers' own few.
fn calls_bound(len: usize) -> usize {
    2 * (usize::BITS - len.leading_zeros()) as usize + 32
}

#[test]
fn assembly_work_is_linear_in_the_bytes_received() {
    // Copying the message so far at every fragment is quadratic: 16x the
    // traffic for 4x the bytes; linear work is about 4x.
    let config = limited(64 * MIB);
    let small = fragmented(OpCode::Binary, &pattern(64 * KIB), 1);
    let large = fragmented(OpCode::Binary, &pattern(256 * KIB), 1);
    let (small, large) = (
        receive_work(config, None, &small),
        receive_work(config, None, &large),
    );
    let traffic = ratio(large.traffic, small.traffic);
    println!("1-byte fragments, 4x the bytes: {small:?} -> {large:?}, {traffic:.2}x the traffic");
    assert!(traffic < 6.0, "{traffic:.2}x the traffic for 4x the bytes");
    // No allocation per fragment: 262,144 of them.
    assert!(large.calls <= calls_bound(256 * KIB), "{large:?}");
}

#[test]
fn fragments_cost_work_per_frame_not_per_message_so_far() {
    // The same payload in one frame and in 1-byte fragments: compare per
    // byte received on the wire (a fragment is 7 wire bytes for 1 of
    // payload).
    let payload = pattern(256 * KIB);
    let config = limited(64 * MIB);
    let one = fragmented(OpCode::Binary, &payload, payload.len());
    let many = fragmented(OpCode::Binary, &payload, 1);
    let (one_work, many_work) = (
        receive_work(config, None, &one),
        receive_work(config, None, &many),
    );
    let per_byte = ratio(many_work.traffic, many.len()) / ratio(one_work.traffic, one.len());
    println!(
        "per wire byte, 1-byte fragments vs one frame: {per_byte:.2}x the traffic \
         ({many_work:?} for {} wire bytes, {one_work:?} for {})",
        many.len(),
        one.len()
    );
    // Measured: under 1x (the fragments' headers are wire bytes that are
    // never kept). Copying the message so far at every fragment was
    // thousands of times more at this size, and grows with it.
    assert!(per_byte < 2.0, "{per_byte:.2}x per wire byte");
    assert!(
        many_work.calls <= one_work.calls + calls_bound(payload.len()),
        "{many_work:?} against {one_work:?} in one frame"
    );
}

/// `payload` as a compressed message of stored DEFLATE blocks of one byte
/// each, in one frame per block (the framing that made inflation
/// quadratic) or all in one frame.
fn stored_one_byte_blocks(payload: &[u8], frame_per_block: bool) -> Vec<u8> {
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
        let op = if i == 0 {
            OpCode::Binary
        } else {
            OpCode::Continuation
        };
        let mut frame = frame(i + 1 == blocks.len(), op, block, Some(MASK));
        if i == 0 {
            frame[0] |= 0x40; // RSV1: compressed
        }
        wire.extend_from_slice(&frame);
    }
    wire
}

fn compressed_in_one_byte_frames(payload: &[u8]) -> Vec<u8> {
    stored_one_byte_blocks(payload, true)
}

fn deflate_params() -> DeflateParams {
    DeflateParams {
        server_no_context_takeover: false,
        client_no_context_takeover: false,
        server_max_window_bits: 15,
        client_max_window_bits: 15,
    }
}

#[cfg(feature = "deflate")]
#[test]
fn inflation_work_is_linear_whatever_the_framing() {
    let config = limited(64 * MIB);
    let params = Some(deflate_params());
    // Large enough that copying the message so far at every frame would
    // dominate (it grows with the size; the per-frame work does not).
    let payload = pattern(512 * KIB);
    let many = stored_one_byte_blocks(&payload, true);
    let one = stored_one_byte_blocks(&payload, false);
    let small = compressed_in_one_byte_frames(&pattern(128 * KIB));
    let [many, one, small] = [&many, &one, &small].map(|wire| receive_work(config, params, wire));
    // The same blocks to inflate, framed differently: the frames add a
    // header each (7 bytes of wire to 6 of payload), and work per frame,
    // but no copy of the message so far: that was one reallocation of
    // the whole message per frame, quadratic traffic.
    let framing = ratio(many.traffic, one.traffic);
    println!("the same stored blocks in one frame each vs one frame: {framing:.2}x the traffic");
    println!("({many:?} against {one:?})");
    assert!(framing < 4.0, "{framing:.2}x the traffic");
    // A small allocation per frame (measured: one, of about 9 bytes) is
    // work per frame; a growing one would show in the traffic above.
    assert!(
        many.calls <= one.calls + payload.len() + calls_bound(payload.len()),
        "{many:?} against {one:?} in one frame, {} frames",
        payload.len()
    );
    let bytes = ratio(many.traffic, small.traffic);
    println!("compressed 1-byte frames, 4x the bytes: {bytes:.2}x the traffic");
    assert!(bytes < 6.0, "{bytes:.2}x the traffic for 4x the bytes");

    // And its memory: the inflated message and its growth, not a copy per
    // frame.
    let payload = pattern(MIB);
    let wire = compressed_in_one_byte_frames(&payload);
    let heap = HeapUse::start();
    let mut ctx = WebSocketContext::with_deflate(Role::Server, limited(MIB), params);
    let got = receive(&mut ctx, &wire, READ);
    let peak = heap.peak();
    assert_eq!(got, [Message::Binary(payload.into())]);
    println!("compressed 1-byte frames: peak {peak} B for 1 MiB");
    assert!(peak <= 3 * MIB + 2 * READ + 64 * KIB, "peak {peak} B");
}

#[test]
fn a_message_in_too_many_frames_fails_with_1008() {
    for (max, compressed) in [(1, false), (10, false), (10, true), (1000, false)] {
        if compressed && !cfg!(feature = "deflate") {
            continue;
        }
        let config = Config::default().max_fragments(Some(max));
        let params = compressed.then(deflate_params);
        let payload = pattern(max);
        let wire = if compressed {
            compressed_in_one_byte_frames(&payload)
        } else {
            fragmented(OpCode::Binary, &payload, 1)
        };
        // Exactly `max` frames are fine.
        let mut ctx = WebSocketContext::with_deflate(Role::Server, config, params);
        assert_eq!(
            receive(&mut ctx, &wire, READ),
            [Message::Binary(payload.clone().into())]
        );
        // One more (an empty one) is not.
        let mut wire = wire;
        let last = wire.len() - if compressed { 13 } else { 7 };
        wire[last] &= 0x7f; // the last frame is no longer final
        wire.extend_from_slice(&frame(true, OpCode::Continuation, &[], Some(MASK)));
        let mut ctx = WebSocketContext::with_deflate(Role::Server, config, params);
        ctx.feed(&wire);
        let error = match ctx.next_message() {
            Ok(outcome) => panic!("{max}: {outcome:?} instead of an error"),
            Err(error) => error,
        };
        assert!(
            matches!(
                error.detail(),
                Some(Detail::TooManyFragments { max: m }) if *m == max
            ),
            "{max}: {error:?}"
        );
        assert_eq!(error.close_code(), Some(CloseCode::Policy));
        let frames = parse_frames(&take_output(&mut ctx));
        assert_eq!(frames.len(), 1);
        assert_eq!(frames[0].close_code(), Some(1008));
    }
    // The default admits the most finely cut message of the Autobahn
    // suite: 4 MiB in 64-byte fragments.
    let payload = pattern(4 * MIB);
    let mut ctx = WebSocketContext::new(Role::Server, Config::default());
    let got = receive(&mut ctx, &fragmented(OpCode::Binary, &payload, 64), READ);
    assert_eq!(got, [Message::Binary(payload.into())]);
}

/// Bytes that do not compress: random, or all taking 9-bit static Huffman
/// codes (the worst case for level 1).
#[cfg(feature = "deflate")]
fn incompressible(len: usize, seed: u64, high: bool) -> lockgate::Bytes {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let byte = (state >> 24) as u8;
            if high { byte | 0x90 } else { byte }
        })
        .collect::<Vec<u8>>()
        .into()
}

#[cfg(feature = "deflate")]
#[test]
fn compressed_writes_never_take_the_out_buffer_past_its_maximum() {
    use lockgate::deflate::DeflateConfig;

    let max = MIB;
    let config = Config::default()
        .max_write_buffer_size(max)
        .deflate(Some(DeflateConfig::default().compression_level(1)));
    for no_context_takeover in [false, true] {
        let params = DeflateParams {
            server_no_context_takeover: no_context_takeover,
            ..deflate_params()
        };
        let mut server = WebSocketContext::with_deflate(Role::Server, config, Some(params));
        let mut client = WebSocketContext::with_deflate(
            Role::Client,
            Config::default().max_message_size(None),
            Some(params),
        );
        // The message from the report: accepted, and within the bound.
        let first = Message::Binary(incompressible(1_000_000, 1, false));
        server.write(first.clone()).unwrap();
        assert!(
            server.buffered_output() <= max,
            "{}",
            server.buffered_output()
        );
        let mut accepted = vec![first];
        // Then until full: every refusal hands the message back as given,
        // and the buffer never exceeds the maximum.
        for i in 0..200u64 {
            let len = 1 + (i as usize * 7919) % 40_000;
            let msg = match i % 3 {
                0 => Message::Binary(incompressible(len, i, true)),
                1 => Message::Binary(incompressible(len, i, false)),
                _ => Message::text("{\"json\":true}".repeat(len / 13 + 1)),
            };
            match server.write(msg.clone()) {
                Ok(()) => accepted.push(msg),
                Err(lockgate::Error::WriteBufferFull(back)) => assert_eq!(*back, msg),
                Err(e) => panic!("{e}"),
            }
            assert!(
                server.buffered_output() <= max,
                "{}",
                server.buffered_output()
            );
        }
        // Everything accepted decodes, in order, with context takeover
        // intact across messages sent as stored blocks.
        client.feed(&take_output(&mut server));
        for msg in &accepted {
            assert_eq!(client.next_message().unwrap().as_ref(), Some(msg));
        }
    }
}
