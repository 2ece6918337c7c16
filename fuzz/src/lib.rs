//! Helpers shared by the fuzz targets in `fuzz_targets/` and by the seed
//! generator (`examples/gen_corpus.rs`): the counting global allocator,
//! fixed-position knobs and stream shaping read from an input, context
//! builders, a checker for what a context sends, and a frame encoder.
//!
//! Nothing here uses `lockgate::fuzz_api` (which needs `--cfg fuzzing`),
//! so the crate also builds, lints and runs its example normally.

use lockgate::deflate::{DeflateConfig, DeflateParams};
use lockgate::frame::{FrameHeader, HeaderParse, MAX_HEADER_LEN, OpCode, apply_mask};
use lockgate::{Buf, Config, Error, Message, Next, Operation, Role, WebSocketContext};

// ----- heap accounting -----

/// The counting allocator of the integration tests (one copy, shared):
/// counts are per thread, and libFuzzer runs targets on one thread.
#[path = "../../tests/support/counting_alloc.rs"]
#[allow(dead_code, reason = "the tests use more of it than the targets")]
mod counting_alloc;

use counting_alloc::{CountingAlloc, HeapUse};

/// The global allocator of every fuzz target: `System`, counting the bytes
/// in use and their peak. libFuzzer's own allocations (C++ `malloc`) are
/// not counted, and neither is anything a target allocates before
/// [`HeapWatch::start`].
#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// The heap used from a starting point on.
pub struct HeapWatch {
    heap: HeapUse,
}

impl HeapWatch {
    /// Starts measuring: the peak is reset to what is in use now.
    pub fn start() -> Self {
        Self {
            heap: HeapUse::start(),
        }
    }

    /// The most bytes in use at once since [`HeapWatch::start`], above
    /// what was in use then.
    pub fn peak(&self) -> usize {
        self.heap.peak()
    }

    /// Aborts (so libFuzzer records the input as a crash) if the peak
    /// exceeds `bound`, printing both, what the bound was made of, and the
    /// start of the input.
    ///
    /// With `LOCKGATE_FUZZ_HEAP` set in the environment, prints the peak
    /// and the bound of every run (to size bounds, or to watch a
    /// reproducer).
    pub fn check(&self, bound: usize, what: &str, input: &[u8]) {
        static VERBOSE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let peak = self.peak();
        if *VERBOSE.get_or_init(|| std::env::var_os("LOCKGATE_FUZZ_HEAP").is_some()) {
            eprintln!("heap peak {peak} bytes, bound {bound} bytes ({what})");
        }
        if peak > bound {
            let shown = &input[..input.len().min(256)];
            eprintln!(
                "HEAP BOUND EXCEEDED: peak {peak} bytes > bound {bound} bytes ({what}); \
                 input {} bytes, first {}: {shown:02x?}",
                input.len(),
                shown.len(),
            );
            std::process::abort();
        }
    }
}

/// Slack for fixed-size state, in bytes: the read buffer (at most 128 KiB
/// between frames), a decompressor (46 KiB with zlib-rs), a compressor
/// (at most 371 KiB) and small allocations.
pub const HEAP_BASE: usize = 1 << 20;

/// What a context may hold at once while receiving `received` bytes with
/// `max_message_size` = `limit` (DESIGN.md "Cost bounds": a message in
/// assembly holds O(bytes received) with a small constant, however it is
/// fragmented):
///
/// - `8 * limit`: a finished message is one exact allocation, made while
///   its pieces are still held (x2), and the inflater doubles its output
///   buffer up to the limit (x2 again while it copies); a receiver never
///   needs more than a few copies of one message.
/// - `4 * received`: bytes received are buffered at most once, in buffers
///   that may be up to twice as large as their content, plus per-frame
///   bookkeeping that is small against a frame's header bytes.
/// - `reserve`: room reserved (capacity, not yet written, so not resident)
///   for the payload of a frame whose header passed the limits: at most
///   [`MAX_FRAME_RESERVE`], and at most `max_frame_size`. The limit on the
///   announced length of an uncompressed frame is `max_message_size`, but
///   a compressed frame is only limited by `max_frame_size`, so with none
///   a header alone reserves 1 MiB.
/// - [`HEAP_BASE`] for fixed-size state.
pub fn context_heap_bound(limit: usize, max_frame: Option<usize>, received: usize) -> usize {
    8 * limit + 4 * received + frame_reserve(max_frame) + HEAP_BASE
}

/// The most `InFrames::begin` reserves ahead of a frame's payload (its
/// `MAX_READ_STEP`).
pub const MAX_FRAME_RESERVE: usize = 1 << 20;

/// See [`context_heap_bound`].
pub fn frame_reserve(max_frame: Option<usize>) -> usize {
    max_frame.unwrap_or(usize::MAX).min(MAX_FRAME_RESERVE)
}

// ----- knobs -----

/// Settings read from fixed positions at the start of an input (so a
/// mutation of one byte changes one setting); bytes past the end of the
/// input read as 0, so an all-zero prefix gives the defaults.
pub struct Knobs<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Knobs<'a> {
    /// The first `n` bytes of `data` as knobs, and the rest.
    pub fn split(data: &'a [u8], n: usize) -> (Self, &'a [u8]) {
        let (knobs, rest) = data.split_at(n.min(data.len()));
        (
            Self {
                bytes: knobs,
                pos: 0,
            },
            rest,
        )
    }

    /// The next knob byte.
    pub fn byte(&mut self) -> u8 {
        let b = self.bytes.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    /// The next two knob bytes, little-endian.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.byte(), self.byte()])
    }
}

/// The largest stream [`Shape::expand`] builds.
pub const MAX_STREAM: usize = 1 << 20;

/// How a body becomes the byte stream a target receives, and how that
/// stream is cut into reads. Seven knob bytes: two chunk sizes, a repeat
/// count and a range (two little-endian `u16`) of the body to repeat.
#[derive(Debug, Clone, Copy, Default)]
pub struct Shape {
    /// Reads alternate between these sizes (see [`chunk_len`]); `b == 0`
    /// means every read is `a`.
    pub chunk_a: u8,
    /// See [`Shape::chunk_a`].
    pub chunk_b: u8,
    /// The range is repeated `repeat + 1` times in all.
    pub repeat: u8,
    /// Start of the repeated range of the body.
    pub from: u16,
    /// End of the repeated range of the body.
    pub to: u16,
}

/// The length of a read for chunk byte `b`: 0 = everything at once, 1 to
/// 127 bytes, then multiples of 512 bytes up to 64 KiB.
pub fn chunk_len(b: u8) -> usize {
    match b {
        0 => usize::MAX,
        1..=127 => usize::from(b),
        _ => (usize::from(b) - 127) * 512,
    }
}

impl Shape {
    /// Reads the seven knob bytes.
    pub fn read(knobs: &mut Knobs<'_>) -> Self {
        Self {
            chunk_a: knobs.byte(),
            chunk_b: knobs.byte(),
            repeat: knobs.byte(),
            from: knobs.u16(),
            to: knobs.u16(),
        }
    }

    /// The seven knob bytes, for seeds.
    pub fn encode(&self) -> [u8; 7] {
        let [f0, f1] = self.from.to_le_bytes();
        let [t0, t1] = self.to.to_le_bytes();
        [self.chunk_a, self.chunk_b, self.repeat, f0, f1, t0, t1]
    }

    /// `body` with the range `from..to` repeated, at most [`MAX_STREAM`]
    /// bytes: a small input can describe a long stream (many fragments, a
    /// large head) whose parts the fuzzer mutates once.
    pub fn expand(&self, body: &[u8]) -> Vec<u8> {
        let from = usize::from(self.from).min(body.len());
        let to = usize::from(self.to).clamp(from, body.len());
        let (head, middle, tail) = (&body[..from], &body[from..to], &body[to..]);
        let mut stream = Vec::with_capacity(body.len());
        stream.extend_from_slice(head);
        for _ in 0..=self.repeat {
            if stream.len() + middle.len() > MAX_STREAM {
                break;
            }
            stream.extend_from_slice(middle);
        }
        stream.extend_from_slice(tail);
        stream.truncate(MAX_STREAM);
        stream
    }

    /// `stream` cut into reads of the chosen sizes.
    pub fn chunks<'s>(&self, stream: &'s [u8]) -> impl Iterator<Item = &'s [u8]> {
        let sizes = [chunk_len(self.chunk_a), chunk_len(self.chunk_b)];
        let alternate = self.chunk_b != 0;
        let mut rest = stream;
        let mut i = 0;
        std::iter::from_fn(move || {
            if rest.is_empty() {
                return None;
            }
            let size = sizes[if alternate { i % 2 } else { 0 }];
            i += 1;
            let (chunk, tail) = rest.split_at(size.min(rest.len()));
            rest = tail;
            Some(chunk)
        })
    }

    /// The largest read [`Shape::chunks`] makes of `stream`.
    pub fn max_chunk(&self, stream_len: usize) -> usize {
        let b = if self.chunk_b == 0 {
            0
        } else {
            chunk_len(self.chunk_b)
        };
        chunk_len(self.chunk_a).max(b).min(stream_len)
    }
}

// ----- context builders -----

/// The receiving configuration of a context target (one knob byte), and
/// how bytes are handed to the context.
#[derive(Debug, Clone, Copy, Default)]
pub struct ContextKnobs {
    /// Bits 0-1 `max_message_size` (64 KiB, 1 KiB, 4 KiB, 16 KiB); bits
    /// 2-3 `max_frame_size` (16 KiB, 256 B, 4 KiB, none); bit 4
    /// `accept_unmasked_frames`; bits 5-6 `read_buffer_size` (8 KiB, 1 KiB,
    /// 64 KiB, 16 B); bit 7: reads go through `input_spare`/`commit_input`
    /// instead of `feed`.
    pub config: u8,
    /// See [`deflate_params`].
    pub deflate: u8,
}

impl ContextKnobs {
    /// Knob bytes this takes.
    pub const LEN: usize = 2;

    /// Reads the knob bytes.
    pub fn read(knobs: &mut Knobs<'_>) -> Self {
        Self {
            config: knobs.byte(),
            deflate: knobs.byte(),
        }
    }

    /// The knob bytes, for seeds.
    pub fn encode(&self) -> [u8; 2] {
        [self.config, self.deflate]
    }

    /// The configuration.
    pub fn config(&self) -> Config {
        let b = self.config;
        let max_message = [64 << 10, 1 << 10, 4 << 10, 16 << 10][usize::from(b & 3)];
        let max_frame = [Some(16 << 10), Some(256), Some(4 << 10), None][usize::from(b >> 2 & 3)];
        let read_buffer = [8 << 10, 1 << 10, 64 << 10, 16][usize::from(b >> 5 & 3)];
        Config::default()
            .max_message_size(Some(max_message))
            .max_frame_size(max_frame)
            .accept_unmasked_frames(b & 0x10 != 0)
            .read_buffer_size(read_buffer)
    }

    /// Whether reads go through `input_spare`.
    pub fn use_spare(&self) -> bool {
        self.config & 0x80 != 0
    }
}

/// permessage-deflate parameters from one knob byte: bits 0-2 server
/// window bits (8 + n), bit 3 `server_no_context_takeover`, bits 4-6 client
/// window bits, bit 7 `client_no_context_takeover`. 0 is the agreement on
/// a bare offer, with 8-bit windows.
pub fn deflate_params(b: u8) -> DeflateParams {
    DeflateParams {
        server_max_window_bits: 8 + (b & 7),
        server_no_context_takeover: b & 0x08 != 0,
        client_max_window_bits: 8 + (b >> 4 & 7),
        client_no_context_takeover: b & 0x80 != 0,
    }
}

/// Local compression settings from one knob byte: level (low nibble, mod
/// 10) and minimum size to compress (0, 1, 64 or 1024 bytes).
pub fn deflate_config(b: u8) -> DeflateConfig {
    DeflateConfig::default()
        .compression_level(u32::from(b & 15) % 10)
        .min_compress_size([0, 1, 64, 1024][usize::from(b >> 4 & 3)])
}

/// The other role.
pub fn peer(role: Role) -> Role {
    match role {
        Role::Client => Role::Server,
        Role::Server => Role::Client,
    }
}

// ----- frames -----

/// One frame on the wire. A `mask` of `Some` masks the payload.
pub fn encode_frame(
    opcode: OpCode,
    fin: bool,
    rsv1: bool,
    mask: Option<[u8; 4]>,
    payload: &[u8],
) -> Vec<u8> {
    let mut header = FrameHeader::new(opcode, payload.len() as u64);
    header.fin = fin;
    header.rsv1 = rsv1;
    header.mask = mask;
    let mut head = [0; MAX_HEADER_LEN];
    let n = header.encode(&mut head);
    let mut frame = head[..n].to_vec();
    let start = frame.len();
    frame.extend_from_slice(payload);
    if let Some(mask) = mask {
        apply_mask(&mut frame[start..], mask);
    }
    frame
}

/// Takes every complete frame off the front of `buf`: header and unmasked
/// payload. Panics on a header error: whatever lockgate sends must parse.
pub fn take_frames(buf: &mut Vec<u8>) -> Vec<(FrameHeader, Vec<u8>)> {
    let mut frames = Vec::new();
    let mut at = 0;
    loop {
        let rest = &buf[at..];
        let (header, len) = match FrameHeader::parse(rest).expect("lockgate sent a bad header") {
            HeaderParse::Partial => break,
            HeaderParse::Complete(header, len) => (header, len),
        };
        let Some(end) = usize::try_from(header.payload_len)
            .ok()
            .and_then(|n| len.checked_add(n))
            .filter(|&end| end <= rest.len())
        else {
            break;
        };
        let mut payload = rest[len..end].to_vec();
        if let Some(mask) = header.mask {
            apply_mask(&mut payload, mask);
        }
        frames.push((header, payload));
        at += end;
    }
    buf.drain(..at);
    frames
}

/// Checks what a receiving context sends on its own: only pongs and one
/// final close frame, masked exactly when the context is a client.
pub struct OutputChecker {
    role: Role,
    pending: Vec<u8>,
    /// The close frame sent: `Some(None)` for one without a code.
    pub close_sent: Option<Option<u16>>,
    /// Bytes checked.
    pub total: usize,
}

impl OutputChecker {
    /// A checker for the output of a context in `role`.
    pub fn new(role: Role) -> Self {
        Self {
            role,
            pending: Vec::new(),
            close_sent: None,
            total: 0,
        }
    }

    /// One `Transmit` step: takes at most `step` bytes of the output,
    /// checking that its chunk and its vectored view agree.
    pub fn transmit(&mut self, ctx: &mut WebSocketContext, step: usize) {
        let mut output = ctx.output();
        let remaining = output.remaining();
        let mut slices = [std::io::IoSlice::new(&[]); 8];
        let n = output.chunks_vectored(&mut slices);
        let listed: usize = slices[..n].iter().map(|s| s.len()).sum();
        assert!(n > 0 && listed <= remaining);
        assert!(n == slices.len() || listed == remaining);
        let chunk = output.chunk();
        assert!(!chunk.is_empty(), "Transmit with an empty chunk");
        let take = chunk.len().min(step.max(1));
        self.pending.extend_from_slice(&chunk[..take]);
        output.advance(take);
        self.total += take;
    }

    /// Writes out and flushes everything pending, as `flush` does, in
    /// pieces of at most `step` bytes, then checks it.
    pub fn drain(&mut self, ctx: &mut WebSocketContext, step: usize, last_ping: Option<&[u8]>) {
        ctx.flush();
        loop {
            match ctx.poll(Operation::Write).expect("a write does not fail") {
                Next::Transmit => self.transmit(ctx, step),
                Next::Flush => ctx.flushed(),
                Next::Done => break,
                other => panic!("a write asked for {other:?}"),
            }
        }
        self.check(last_ping);
    }

    /// Checks the frames sent so far. `last_ping` is the payload of the
    /// newest ping read: a pong must echo it.
    pub fn check(&mut self, last_ping: Option<&[u8]>) {
        for (header, payload) in take_frames(&mut self.pending) {
            assert!(self.close_sent.is_none(), "frame after our close frame");
            assert!(header.fin && !header.rsv1 && !header.rsv2 && !header.rsv3);
            assert_eq!(header.mask.is_some(), self.role == Role::Client, "masking");
            assert!(payload.len() <= 125);
            match header.opcode {
                OpCode::Pong => assert_eq!(Some(&payload[..]), last_ping, "pong echoes ping"),
                OpCode::Close => {
                    assert!(payload.len() != 1);
                    let code =
                        (payload.len() >= 2).then(|| u16::from_be_bytes([payload[0], payload[1]]));
                    self.close_sent = Some(code);
                }
                other => panic!("a receiving context sent {other:?}"),
            }
        }
    }
}

// ----- the context targets -----

/// Knob bytes of the context targets: [`ContextKnobs`] then [`Shape`].
pub const CONTEXT_KNOBS: usize = ContextKnobs::LEN + 7;

/// The body of `context_server`, `context_client` and their deflate
/// variants: arbitrary bytes, shaped by the knobs, received by a context.
///
/// Invariants: no panic; at most one message per two bytes received;
/// messages within the limits, text valid UTF-8; the context sends only
/// pongs echoing the newest ping and one close frame last, masked when it
/// is a client; after any error every further call gives
/// [`Error::AlreadyClosed`]; an error with a close code has a close frame
/// sent, with that code unless one was already sent; heap within
/// [`context_heap_bound`].
pub fn run_context(data: &[u8], role: Role, deflate: bool) {
    let (mut knobs, body) = Knobs::split(data, CONTEXT_KNOBS);
    let ck = ContextKnobs::read(&mut knobs);
    let shape = Shape::read(&mut knobs);
    let stream = shape.expand(body);
    let config = ck.config();
    let limit = config.get_max_message_size().expect("set");
    let max_frame = config.get_max_frame_size();
    let params = deflate.then(|| deflate_params(ck.deflate));

    let watch = HeapWatch::start();
    let mut ctx = WebSocketContext::with_deflate(role, config, params);
    let mut out = OutputChecker::new(role);
    let mut last_ping: Option<lockgate::Bytes> = None;
    let mut received = 0usize;
    let mut messages = 0usize;
    let mut failed = false;
    for chunk in shape.chunks(&stream) {
        received += chunk.len();
        if ck.use_spare() {
            let mut rest = chunk;
            while !rest.is_empty() {
                let spare = ctx.input_spare();
                assert!(!spare.is_empty(), "input_spare gave no room");
                let n = spare.len().min(rest.len());
                spare[..n].copy_from_slice(&rest[..n]);
                ctx.commit_input(n);
                rest = &rest[n..];
            }
        } else {
            ctx.feed(chunk);
        }
        if failed {
            assert!(matches!(ctx.next_message(), Err(Error::AlreadyClosed)));
            continue;
        }
        // Driven as a driver would: one read operation until it needs
        // input, writing out in pieces as big as this chunk.
        loop {
            match ctx.poll(Operation::Read) {
                Ok(Next::Message(msg)) => {
                    messages += 1;
                    assert!(messages <= received / 2 + 1, "more messages than frames");
                    check_message(&msg, limit);
                    if let Message::Ping(payload) = msg {
                        last_ping = Some(payload);
                    }
                    out.check(last_ping.as_deref());
                }
                Ok(Next::Transmit) => out.transmit(&mut ctx, chunk.len()),
                Ok(Next::Flush) => ctx.flushed(),
                Ok(Next::Shutdown) => ctx.shut_down(),
                Ok(Next::Receive) => {
                    out.check(last_ping.as_deref());
                    break;
                }
                Ok(Next::Done) => panic!("a read ended without a message"),
                Ok(Next::Wait) => panic!("a wait without a rate limit"),
                Err(error) => {
                    failed = true;
                    let sent_before = out.close_sent;
                    out.check(last_ping.as_deref());
                    if let Some(code) = error.close_code() {
                        let sent = out.close_sent.unwrap_or_else(|| {
                            panic!("{error:?} has close code {code:?} but no close frame was sent")
                        });
                        if sent_before.is_none() {
                            assert_eq!(sent, Some(u16::from(code)), "close code for {error:?}");
                        }
                    }
                    assert!(matches!(
                        ctx.poll(Operation::Read),
                        Err(Error::AlreadyClosed)
                    ));
                    assert!(matches!(
                        ctx.write(Message::text("x")),
                        Err(Error::AlreadyClosed)
                    ));
                    assert!(ctx.is_terminated());
                    break;
                }
            }
        }
        if chunk.len().is_multiple_of(3) {
            let _ = ctx.waiting(std::time::Instant::now());
        }
    }
    ctx.input_ended();
    let eof = loop {
        match ctx.poll(Operation::Read) {
            Ok(Next::Transmit) => out.transmit(&mut ctx, usize::MAX),
            Ok(Next::Flush) => ctx.flushed(),
            Ok(Next::Shutdown) => ctx.shut_down(),
            Ok(other) => panic!("{other:?} after the end of the stream"),
            Err(error) => break error,
        }
    };
    assert!(
        !failed || matches!(eof, Error::AlreadyClosed),
        "{eof:?} after failing"
    );
    assert!(matches!(
        ctx.poll(Operation::Read),
        Err(Error::AlreadyClosed)
    ));
    watch.check(
        context_heap_bound(limit, max_frame, received),
        &format!(
            "8 x max_message_size {limit} + 4 x {received} received + frame reserve {} + {HEAP_BASE}",
            frame_reserve(max_frame)
        ),
        data,
    );
}

/// What any received message must satisfy.
pub fn check_message(msg: &Message, limit: usize) {
    match msg {
        Message::Text(text) => {
            assert!(std::str::from_utf8(text.as_bytes()).is_ok());
            assert!(text.len() <= limit);
        }
        Message::Binary(data) => assert!(data.len() <= limit),
        Message::Ping(data) | Message::Pong(data) => assert!(data.len() <= 125),
        Message::Close(frame) => {
            if let Some(frame) = frame {
                assert!(frame.code.is_allowed_on_wire());
                assert!(frame.reason.len() <= 123);
            }
        }
        Message::Frame(_) => panic!("read returned a raw frame"),
    }
}

/// Builds a connected pair of contexts (`writer` in `role`) agreeing on
/// `params`, with `config` on both ends.
pub fn context_pair(
    role: Role,
    config: Config,
    params: Option<DeflateParams>,
) -> (WebSocketContext, WebSocketContext) {
    (
        WebSocketContext::with_deflate(role, config, params),
        WebSocketContext::with_deflate(peer(role), config, params),
    )
}

/// Moves `writer`'s pending output into `reader` in reads of `step` bytes,
/// reading every message that completes, up to a close message; returns
/// them. Panics if `reader` fails.
pub fn transfer(
    writer: &mut WebSocketContext,
    reader: &mut WebSocketContext,
    step: usize,
) -> Vec<Message> {
    let mut got = Vec::new();
    writer.flush();
    loop {
        match writer
            .poll(Operation::Write)
            .expect("a write does not fail")
        {
            Next::Transmit => {
                let mut output = writer.output();
                let chunk = output.chunk();
                let take = chunk.len().min(step.max(1));
                reader.feed(&chunk[..take]);
                output.advance(take);
            }
            Next::Flush => writer.flushed(),
            Next::Done => break,
            other => panic!("a write asked for {other:?}"),
        }
        while !matches!(got.last(), Some(Message::Close(_))) {
            match reader.next_message() {
                Ok(Some(msg)) => got.push(msg),
                Ok(None) => break,
                Err(e) => panic!("the peer failed on what lockgate wrote: {e:?}"),
            }
        }
    }
    got
}

// ----- handshakes -----

/// The largest HTTP head lockgate accepts (`handshake::head`).
pub const MAX_HEAD: usize = 64 << 10;

/// What a handshake may hold at once when the largest read is
/// `max_chunk` bytes: the head buffer (doubling, so up to twice the head
/// limit), its parsed form (request or response and its header map, less
/// than twice the head again), the leftover copy of the last read, and
/// 256 KiB of slack. Not a function of the bytes sent in all: reading is
/// bounded by the head limit.
pub fn handshake_heap_bound(max_chunk: usize) -> usize {
    4 * MAX_HEAD + 2 * max_chunk + (256 << 10)
}

/// The permessage-deflate configuration of the handshake targets from two
/// knob bytes: none unless bit 0 of `deflate` is set; then bits 1-3 server
/// window bits (8 + n), bits 4-6 client window bits, bit 7
/// `server_no_context_takeover`, and `local` as in [`deflate_config`].
pub fn handshake_deflate(deflate: u8, local: u8) -> Option<DeflateConfig> {
    (deflate & 1 != 0).then(|| {
        deflate_config(local)
            .server_max_window_bits(8 + (deflate >> 1 & 7))
            .client_max_window_bits(8 + (deflate >> 4 & 7))
            .server_no_context_takeover(deflate & 0x80 != 0)
    })
}

/// What a handshake target reads from its input: how the stream is cut
/// into reads, the stream itself, and the deflate configuration (knob
/// bytes 0 and 1, see [`handshake_deflate`]; 9 knob bytes in all).
pub fn handshake_input(data: &[u8]) -> (Shape, Vec<u8>, Option<DeflateConfig>) {
    let (mut knobs, body) = Knobs::split(data, 9);
    let deflate = knobs.byte();
    let local = knobs.byte();
    let shape = Shape::read(&mut knobs);
    let stream = shape.expand(body);
    (shape, stream, handshake_deflate(deflate, local))
}

/// Where an HTTP head ends in `stream`: just past the LF of the first
/// empty line (LF or CR LF) that follows a non-empty line; empty lines
/// before the start line are skipped (RFC 9112 section 2.2). An
/// independent reference for the handshake's incremental reader.
pub fn head_end(stream: &[u8]) -> Option<usize> {
    let mut lines = 0;
    let mut start = 0;
    for (i, &b) in stream.iter().enumerate() {
        if b != b'\n' {
            continue;
        }
        let line = &stream[start..i];
        let content = line.strip_suffix(b"\r").unwrap_or(line);
        start = i + 1;
        if !content.is_empty() {
            lines += 1;
        } else if lines > 0 {
            return Some(i + 1);
        }
    }
    None
}
