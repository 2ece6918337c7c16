//! Helpers shared by the fuzz targets in `fuzz_targets/` and by the seed
//! generator (`examples/gen_corpus.rs`): the counting global allocator,
//! fixed-position knobs and stream shaping read from an input, context
//! builders, a checker for what a context sends, and a frame encoder.
//!
//! Nothing here uses `lockgate::fuzz_api` (which needs `--cfg fuzzing`),
//! so the crate also builds, lints and runs its example normally.

use lockgate::deflate::{DeflateConfig, DeflateParams};
use lockgate::frame::{FrameHeader, HeaderParse, MAX_HEADER_LEN, OpCode, apply_mask};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use lockgate::{
    Buf, Config, Detail, Error, Message, Next, Operation, RateLimit, RatePolicy, Role,
    WebSocketContext,
};

// ----- heap accounting -----

// The counting allocator of the integration tests (one copy, in the
// conformance kit): counts are per thread, and libFuzzer runs targets on
// one thread.
use lockgate_kit::{CountingAlloc, HeapUse};

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

/// The receiving configuration of a context target (six knob bytes), how
/// bytes are handed to the context, its rate limit and how its driver
/// passes time.
///
/// All zero: the old layout's defaults (no rate limit, default keepalive)
/// and no time passing between reads.
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
    /// The rate limit ([`ContextKnobs::rate_limit`]): bit 0 on (off in
    /// half the inputs); bits 1-2 which buckets (messages, bytes, both,
    /// both); bit 3 [`RatePolicy::Close`] rather than `Throttle`; bits 4-6
    /// the message rate ([`MESSAGE_RATES`]). Bit 7: the driver is a
    /// blocking one, telling the context the time before every read (else
    /// it tells it only when no input is there yet, as tokio's does).
    pub rate: u8,
    /// Bits 0-2 the message burst ([`MESSAGE_BURSTS`]); bit 3: the driver
    /// tells the context the start time before anything else; bits 4-6
    /// the byte burst ([`BYTE_BURSTS`]); bit 7 unused.
    pub burst: u8,
    /// Bits 0-2 the byte rate ([`BYTE_RATES`]); bits 3-4 keepalive
    /// ([`ContextKnobs::keepalive`]); bits 5-7 unused.
    pub timing: u8,
    /// The virtual time between reads: the low and high nibbles index
    /// [`STEPS`], alternately (read `i` uses the low nibble for even `i`).
    pub steps: u8,
}

/// Message rates (per second) of the rate limit knobs. The knob tables are
/// small (they make 8,448 distinct limits): lockgate once kept every
/// distinct [`RateLimit`] of a process in a table of at most 65,535, and
/// the tables stay as they were so that existing corpora mean the same.
pub const MESSAGE_RATES: [u32; 8] = [1, 2, 3, 5, 10, 100, 65_536, u32::MAX];
/// Message bursts (`None`: the default, one second's worth).
pub const MESSAGE_BURSTS: [Option<u32>; 8] = [
    None,
    Some(0),
    Some(1),
    Some(2),
    Some(4),
    Some(10),
    Some(1000),
    Some(u32::MAX),
];
/// Byte rates (per second). At least 64 B/s: a 64 KiB message then leaves
/// at most 1,024 s of debt, so keepalive wake-ups while it is repaid stay
/// few.
pub const BYTE_RATES: [u64; 8] = [64, 100, 256, 1000, 4096, 65_536, 1 << 32, u64::MAX];
/// Byte bursts (`None`: the default, one second's worth).
pub const BYTE_BURSTS: [Option<u64>; 8] = [
    None,
    Some(0),
    Some(1),
    Some(125),
    Some(1000),
    Some(16_384),
    Some(1 << 20),
    Some(u64::MAX),
];

/// Virtual time between two reads, in nanoseconds: all shorter than the
/// shortest keepalive interval ([`ContextKnobs::keepalive`], 10 s), so the
/// peer is never silent for a whole interval while the stream lasts.
pub const STEPS: [u64; 16] = [
    0,
    0,
    1,
    1_000_000,
    7_000_000,
    10_000_000,
    33_333_333,
    100_000_000,
    125_000_000,
    250_000_000,
    333_333_333,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    9_999_999_999,
];

impl ContextKnobs {
    /// Knob bytes this takes.
    pub const LEN: usize = 6;

    /// Reads the knob bytes.
    pub fn read(knobs: &mut Knobs<'_>) -> Self {
        Self {
            config: knobs.byte(),
            deflate: knobs.byte(),
            rate: knobs.byte(),
            burst: knobs.byte(),
            timing: knobs.byte(),
            steps: knobs.byte(),
        }
    }

    /// The knob bytes, for seeds.
    pub fn encode(&self) -> [u8; Self::LEN] {
        [
            self.config,
            self.deflate,
            self.rate,
            self.burst,
            self.timing,
            self.steps,
        ]
    }

    /// The configuration, rate limit and keepalive included.
    pub fn config(&self) -> Config {
        let b = self.config;
        let max_message = [64 << 10, 1 << 10, 4 << 10, 16 << 10][usize::from(b & 3)];
        let max_frame = [Some(16 << 10), Some(256), Some(4 << 10), None][usize::from(b >> 2 & 3)];
        let read_buffer = [8 << 10, 1 << 10, 64 << 10, 16][usize::from(b >> 5 & 3)];
        let (interval, timeout) = self.keepalive();
        Config::default()
            .max_message_size(Some(max_message))
            .max_frame_size(max_frame)
            .accept_unmasked_frames(b & 0x10 != 0)
            .read_buffer_size(read_buffer)
            .ping_interval(interval)
            .ping_timeout(timeout)
            .rate_limit(self.rate_limit())
            .deflate(Some(
                DeflateConfig::default().sleep_after(self.sleep_after()),
            ))
    }

    /// A compressor with context takeover sleeps whenever the connection
    /// is quiet (it keeps its windows and is rebuilt from them by the next
    /// message) for the inputs that read through `input_spare`, and never
    /// for the rest: no input sleeps after an interval, whose deadline
    /// the wait oracle does not model.
    pub fn sleep_after(&self) -> Option<Duration> {
        self.use_spare().then_some(Duration::ZERO)
    }

    /// Whether reads go through `input_spare`.
    pub fn use_spare(&self) -> bool {
        self.config & 0x80 != 0
    }

    /// The rate limit, if any (see [`ContextKnobs::rate`]).
    pub fn rate_limit(&self) -> Option<RateLimit> {
        let r = self.rate;
        if r & 1 == 0 {
            return None;
        }
        let messages = MESSAGE_RATES[usize::from(r >> 4 & 7)];
        let message_burst = MESSAGE_BURSTS[usize::from(self.burst & 7)];
        let bytes = BYTE_RATES[usize::from(self.timing & 7)];
        let byte_burst = BYTE_BURSTS[usize::from(self.burst >> 4 & 7)];
        let with_messages = |limit: RateLimit| {
            let limit = limit.with_messages_per_second(messages);
            match message_burst {
                Some(n) => limit.message_burst(n),
                None => limit,
            }
        };
        let with_bytes = |limit: RateLimit| {
            let limit = limit.with_bytes_per_second(bytes);
            match byte_burst {
                Some(n) => limit.byte_burst(n),
                None => limit,
            }
        };
        let limit = match r >> 1 & 3 {
            0 => with_messages(RateLimit::messages_per_second(messages)),
            1 => with_bytes(RateLimit::bytes_per_second(bytes)),
            _ => with_bytes(with_messages(RateLimit::bytes_per_second(bytes))),
        };
        let policy = if r & 8 != 0 {
            RatePolicy::Close
        } else {
            RatePolicy::Throttle
        };
        Some(limit.policy(policy))
    }

    /// Keepalive interval and timeout (bits 3-4 of
    /// [`ContextKnobs::timing`]): the defaults (20 s, 20 s), none, (10 s,
    /// 1 s), (60 s, none).
    pub fn keepalive(&self) -> (Option<Duration>, Option<Duration>) {
        let s = Duration::from_secs;
        [
            (Some(s(20)), Some(s(20))),
            (None, None),
            (Some(s(10)), Some(s(1))),
            (Some(s(60)), None),
        ][usize::from(self.timing >> 3 & 3)]
    }

    /// Whether the driver tells the context the time before every read.
    pub fn blocking_driver(&self) -> bool {
        self.rate & 0x80 != 0
    }

    /// Whether the driver tells the context the start time first.
    pub fn tell_start(&self) -> bool {
        self.burst & 0x08 != 0
    }

    /// The virtual time before read `i` arrives after read `i - 1`.
    pub fn step(&self, i: usize) -> Duration {
        let nibble = if i.is_multiple_of(2) {
            self.steps & 15
        } else {
            self.steps >> 4
        };
        Duration::from_nanos(STEPS[usize::from(nibble)])
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
    header.is_final = fin;
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
        let (header, len) = match FrameHeader::decode(rest).expect("lockgate sent a bad header") {
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
            match ctx.poll(Operation::Flush).expect("a write does not fail") {
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
            assert!(header.is_final && !header.rsv1 && !header.rsv2 && !header.rsv3);
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

// ----- rate limits in virtual time -----

const NANOS: u128 = 1_000_000_000;

/// The instant virtual time starts at, captured once per process.
fn virtual_start() -> Instant {
    static START: OnceLock<Instant> = OnceLock::new();
    *START.get_or_init(Instant::now)
}

/// One token bucket as lockgate's documentation describes it, kept
/// independently of its implementation: a continuous level (tokens times
/// 10^9, so a nanosecond earns exactly `per_second` units) capped at the
/// burst, that a message may enter once it holds the message's cost (or a
/// full bucket, for a message larger than the burst) and that may go
/// below zero by the excess.
#[derive(Debug, Clone, Copy)]
struct ModelBucket {
    per_second: u128,
    /// The burst as lockgate keeps it: at most `i64::MAX`.
    burst: i128,
    level: i128,
}

impl ModelBucket {
    fn new(per_second: u64, burst: u64) -> Self {
        let burst = i128::from(burst.min(i64::MAX as u64));
        Self {
            per_second: per_second.into(),
            burst,
            level: burst * NANOS as i128,
        }
    }

    fn refill(&mut self, nanos: u128) {
        let cap = self.burst * NANOS as i128;
        let room = u128::try_from(cap - self.level).unwrap_or(0);
        let earned = self.per_second.saturating_mul(nanos);
        if earned >= room {
            self.level = cap;
        } else {
            self.level += earned as i128;
        }
    }

    fn need(&self, cost: u64) -> i128 {
        i128::from(cost).min(self.burst) * NANOS as i128
    }

    fn fits(&self, cost: u64) -> bool {
        cost == 0 || self.level >= self.need(cost)
    }

    fn charge(&mut self, cost: u64) {
        self.level -= i128::from(cost) * NANOS as i128;
    }

    /// Nanoseconds from the last refill until `cost` fits.
    fn fits_in(&self, cost: u64) -> u128 {
        if self.fits(cost) {
            return 0;
        }
        let missing = u128::try_from(self.need(cost) - self.level).expect("does not fit");
        missing.div_ceil(self.per_second)
    }
}

/// Which bucket a message overran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Messages,
    Bytes,
}

/// A [`RateLimit`]'s buckets, fed the same instants as the context.
#[derive(Debug, Clone, Copy)]
struct RateModel {
    messages: Option<ModelBucket>,
    bytes: Option<ModelBucket>,
    /// The first instant observed: time zero.
    origin: Option<Instant>,
    /// The last instant observed, in nanoseconds since `origin`.
    now: u128,
}

impl RateModel {
    fn new(limit: RateLimit) -> Self {
        Self {
            messages: limit
                .get_messages_per_second()
                .zip(limit.get_message_burst())
                .map(|(rate, burst)| ModelBucket::new(rate.into(), burst.into())),
            bytes: limit
                .get_bytes_per_second()
                .zip(limit.get_byte_burst())
                .map(|(rate, burst)| ModelBucket::new(rate, burst)),
            origin: None,
            now: 0,
        }
    }

    fn observe(&mut self, at: Instant) {
        let origin = *self.origin.get_or_insert(at);
        let now = at.saturating_duration_since(origin).as_nanos();
        if now > self.now {
            for bucket in [&mut self.messages, &mut self.bytes].into_iter().flatten() {
                bucket.refill(now - self.now);
            }
            self.now = now;
        }
    }

    /// What `msg` costs in messages and bytes; `None` if it is free.
    fn costs(msg: &Message) -> Option<(u64, u64)> {
        match msg {
            Message::Close(_) => None,
            Message::Ping(_) | Message::Pong(_) => Some((1, 0)),
            Message::Text(_) | Message::Binary(_) | Message::Frame(_) => {
                Some((1, msg.len() as u64))
            }
        }
    }

    /// The bucket `msg` does not fit in now, messages first.
    fn overrun(&self, msg: &Message) -> Option<Unit> {
        let (messages, bytes) = Self::costs(msg)?;
        if !self.messages.is_none_or(|b| b.fits(messages)) {
            Some(Unit::Messages)
        } else if !self.bytes.is_none_or(|b| b.fits(bytes)) {
            Some(Unit::Bytes)
        } else {
            None
        }
    }

    fn charge(&mut self, msg: &Message) {
        if let Some((messages, bytes)) = Self::costs(msg) {
            if let Some(bucket) = &mut self.messages {
                bucket.charge(messages);
            }
            if let Some(bucket) = &mut self.bytes {
                bucket.charge(bytes);
            }
        }
    }

    /// The first instant `msg` fits, as of the last instant observed.
    fn fits_at(&self, msg: &Message) -> Instant {
        let (messages, bytes) = Self::costs(msg).unwrap_or((0, 0));
        let by_messages = self.messages.map_or(0, |b| b.fits_in(messages));
        let by_bytes = self.bytes.map_or(0, |b| b.fits_in(bytes));
        let nanos = self.now + by_messages.max(by_bytes);
        let origin = self.origin.expect("observed");
        origin
            .checked_add(Duration::from_nanos(
                u64::try_from(nanos).unwrap_or(u64::MAX),
            ))
            .expect("an instant within reach")
    }
}

/// One [`Next::Wait`], for the checks made once the held message is known.
#[derive(Debug)]
struct WaitSeen {
    /// The buckets when the context decided to hold the message.
    decided: RateModel,
    /// The buckets once the context was told the time of the wait.
    told: RateModel,
    /// The context's deadline.
    deadline: Instant,
    /// When the driver asked for the deadline.
    asked: Instant,
    /// When the driver woke up (the deadline, or the time of the wait if
    /// the deadline had passed).
    woke: Instant,
}

/// The sum over a window of messages, as checked by [`Pace`].
#[derive(Debug)]
struct Window {
    per_second: i128,
    burst: i128,
    /// Units handed over so far.
    total: i128,
    /// The least of `before * 10^9 - per_second * t` over the messages
    /// handed over so far, `before` being the units handed over before
    /// the message, `t` the virtual nanoseconds at which it was charged.
    least: i128,
}

impl Window {
    fn new(per_second: u64, burst: u64) -> Self {
        Self {
            per_second: per_second.into(),
            burst: burst.min(i64::MAX as u64).into(),
            total: 0,
            least: i128::MAX,
        }
    }

    /// A message of `cost` units charged at `at` virtual nanoseconds,
    /// `slack` beyond the burst allowed (see [`Pace::handed_over`]).
    fn add(&mut self, cost: u64, at: u128, slack: i128, what: &str) {
        let earned = |nanos: u128| self.per_second.saturating_mul(nanos as i128);
        let n = NANOS as i128;
        self.least = self.least.min((self.total * n).saturating_sub(earned(at)));
        self.total += i128::from(cost);
        // From the start: burst + rate x elapsed + slack.
        let over = (self.total - self.burst - slack).saturating_mul(n);
        assert!(
            over <= earned(at),
            "{what}: {} handed over by {at} ns, more than burst {} + {}/s x elapsed + {slack}",
            self.total,
            self.burst,
            self.per_second,
        );
        // Over any window ending now, one more for the token partly earned
        // before it.
        let over = (self.total - self.burst - slack - 1)
            .saturating_mul(n)
            .saturating_sub(earned(at));
        assert!(
            over <= self.least,
            "{what}: more than burst {} + {}/s x window + {} handed over in a window ending at \
             {at} ns",
            self.burst,
            self.per_second,
            slack + 1,
        );
    }
}

/// The documented bounds on what a limited context hands over, checked
/// without a model: over any interval of `T` seconds, at most
/// `burst + rate x T` messages (+1 for the token partly earned before the
/// interval; the bucket starts full, so none from the start), and as many
/// bytes plus the excess of the last message over the byte burst (the
/// debt it may leave).
#[derive(Debug)]
struct Pace {
    messages: Option<Window>,
    bytes: Option<Window>,
}

impl Pace {
    fn new(limit: RateLimit) -> Self {
        Self {
            messages: limit
                .get_messages_per_second()
                .zip(limit.get_message_burst())
                // A burst of 0 spaces messages like a burst of 1.
                .map(|(rate, burst)| Window::new(rate.into(), burst.max(1).into())),
            bytes: limit
                .get_bytes_per_second()
                .zip(limit.get_byte_burst())
                .map(|(rate, burst)| Window::new(rate, burst)),
        }
    }

    fn handed_over(&mut self, msg: &Message, at: u128) {
        let Some((messages, bytes)) = RateModel::costs(msg) else {
            return;
        };
        if let Some(window) = &mut self.messages {
            window.add(messages, at, 0, "messages");
        }
        if let Some(window) = &mut self.bytes
            && bytes > 0
        {
            let excess = (i128::from(bytes) - window.burst).max(0);
            window.add(bytes, at, excess, "bytes");
        }
    }
}

/// A driver's clock in virtual time, and the checks on the rate limit and
/// the deadlines it drives.
struct VirtualTime {
    t0: Instant,
    /// The driver's time.
    now: Instant,
    /// The latest instant the context was told (`handle_timeout`): the
    /// time a rate limit charges messages at.
    told: Option<Instant>,
    /// Every deadline up to this instant was handled: the context must
    /// not report one at or before it.
    settled: Option<Instant>,
    limit: Option<RateLimit>,
    ping_interval: Option<Duration>,
    model: Option<RateModel>,
    pace: Option<Pace>,
    /// The waits since the last message handed over.
    row: Vec<WaitSeen>,
    waits: usize,
}

impl VirtualTime {
    fn new(limit: Option<RateLimit>, ping_interval: Option<Duration>) -> Self {
        let t0 = virtual_start();
        Self {
            t0,
            now: t0,
            told: None,
            settled: None,
            limit,
            ping_interval,
            model: limit.map(RateModel::new),
            pace: limit.map(Pace::new),
            row: Vec::new(),
            waits: 0,
        }
    }

    fn tell(&mut self, at: Instant) {
        self.told = Some(at);
        if let Some(model) = &mut self.model {
            model.observe(at);
        }
    }

    /// What a driver does before a wait: `ctx.handle_timeout(now)`, then
    /// `ctx.poll_timeout()`; checks that the deadline is later than every
    /// deadline already handled, and that asking for it changes nothing.
    fn waiting(&mut self, ctx: &mut WebSocketContext) -> Option<Instant> {
        self.waiting_for(ctx, false)
    }

    /// [`VirtualTime::waiting`]; with `throttled`, a deadline that passed
    /// is allowed (a message held on a stale clock that fits by now: the
    /// wait's deadline "may already have passed"), checked against the
    /// model once the message is known.
    fn waiting_for(&mut self, ctx: &mut WebSocketContext, throttled: bool) -> Option<Instant> {
        let now = self.now;
        ctx.handle_timeout(now);
        let deadline = ctx.poll_timeout();
        assert_eq!(ctx.poll_timeout(), deadline, "poll_timeout is a pure query");
        self.tell(now);
        let passed = throttled && deadline.is_some_and(|d| d <= now);
        if let (Some(deadline), Some(settled), false) = (deadline, self.settled, passed) {
            assert!(
                deadline > settled,
                "deadline {:?} reported after the time {:?} was handled",
                deadline - self.t0,
                settled - self.t0,
            );
        }
        if deadline.is_none_or(|d| d > now) {
            self.settled = Some(now);
        }
        deadline
    }

    /// `ctx.handle_timeout(at)`, time moving on to `at`.
    fn handle_timeout(&mut self, ctx: &mut WebSocketContext, at: Instant) {
        assert!(at >= self.now, "time goes forward");
        self.now = at;
        ctx.handle_timeout(at);
        self.tell(at);
        self.settled = Some(at);
    }

    /// Virtual nanoseconds at which a message handed over now was charged.
    fn charged_at(&self) -> u128 {
        self.told.map_or(0, |t| (t - self.t0).as_nanos())
    }

    fn in_ns(&self, at: Instant) -> u128 {
        at.saturating_duration_since(self.t0).as_nanos()
    }

    /// `read` handed `msg` over.
    fn handed_over(&mut self, msg: &Message) {
        let at = self.charged_at();
        let Some(mut model) = self.model else {
            return;
        };
        if RateModel::costs(msg).is_none() {
            assert!(self.row.is_empty(), "a free message was held back");
            return;
        }
        if let Some(unit) = model.overrun(msg) {
            panic!(
                "a message of {} bytes handed over at {at} ns with its {unit:?} bucket short \
                 ({model:?})",
                msg.len()
            );
        }
        // The waits before it were for it: it did not fit when they began,
        // each deadline is the instant it fits (or a keepalive deadline
        // before it), and the driver woke to the wait after a deadline
        // only if the message did not fit by then.
        let last = self.row.len().saturating_sub(1);
        for (i, wait) in self.row.iter().enumerate() {
            let fits = wait.told.fits_at(msg);
            assert!(
                wait.decided.overrun(msg).is_some(),
                "waited at {} ns for a message of {} bytes that fit",
                self.in_ns(wait.woke),
                msg.len()
            );
            let passed = wait.deadline <= wait.asked;
            assert_eq!(
                passed,
                fits <= wait.asked,
                "a wait's deadline passed ({} ns, at {} ns) exactly when the message of {} bytes \
                 fit by then",
                self.in_ns(wait.deadline),
                self.in_ns(wait.woke),
                msg.len(),
            );
            if passed {
                // The read goes on at once.
                assert_eq!(
                    i, last,
                    "waited again after a wait whose deadline had passed"
                );
            } else if self.ping_interval.is_none() {
                assert_eq!(
                    self.in_ns(wait.deadline),
                    self.in_ns(fits),
                    "the deadline of a wait for a message of {} bytes is when it fits",
                    msg.len()
                );
            } else {
                assert!(
                    wait.deadline <= fits,
                    "a wait for a message of {} bytes ended at {} ns, after it fit at {} ns",
                    msg.len(),
                    self.in_ns(wait.deadline),
                    self.in_ns(fits),
                );
            }
            if i < last {
                assert!(
                    wait.woke < fits,
                    "waited again at {} ns for a message of {} bytes that fit at {} ns",
                    self.in_ns(wait.woke),
                    msg.len(),
                    self.in_ns(fits),
                );
            }
        }
        self.row.clear();
        model.charge(msg);
        self.model = Some(model);
        if let Some(pace) = &mut self.pace {
            pace.handed_over(msg, at);
        }
    }

    /// The read answered [`Next::Wait`]: checks it, takes it (one
    /// nanosecond early first, every other time) and wakes up.
    fn wait(&mut self, ctx: &mut WebSocketContext, out: &mut OutputChecker) {
        let limit = self.limit.expect("a wait without a rate limit");
        assert_eq!(
            limit.get_policy(),
            RatePolicy::Throttle,
            "a wait under the Close policy"
        );
        self.waits += 1;
        let decided = self.model.expect("limited");
        let deadline = self
            .waiting_for(ctx, true)
            .expect("a wait without a deadline");
        let told = self.model.expect("limited");
        let asked = self.now;
        if deadline > self.now {
            let early = deadline - Duration::from_nanos(1);
            if self.waits % 2 == 1 && early > self.now {
                // One nanosecond early the message is still held, and the
                // deadline the same.
                self.handle_timeout(ctx, early);
                loop {
                    match ctx.poll(Operation::Read) {
                        Ok(Next::Wait) => break,
                        Ok(Next::Transmit) => out.transmit(ctx, usize::MAX),
                        Ok(Next::Flush) => ctx.flushed(),
                        other => panic!("{other:?} a nanosecond before the deadline of a wait"),
                    }
                }
                assert_eq!(
                    self.waiting(ctx),
                    Some(deadline),
                    "the deadline moved a nanosecond before it"
                );
            }
        }
        let woke = deadline.max(self.now);
        self.row.push(WaitSeen {
            decided,
            told,
            deadline,
            asked,
            woke,
        });
        // Keepalive deadlines before the message fits may wake the driver
        // up in between: at most one per interval.
        let first = self.row[0].woke;
        let bound = match self.ping_interval {
            None => 1,
            Some(interval) => {
                2 + usize::try_from((woke - first).as_nanos() / interval.as_nanos())
                    .unwrap_or(usize::MAX)
            }
        };
        assert!(
            self.row.len() <= bound,
            "{} waits in a row without progress (at most {bound})",
            self.row.len()
        );
        self.handle_timeout(ctx, woke);
    }

    /// The read failed with `error`: checks a rate limit's errors.
    fn failed(&mut self, error: &Error) {
        self.row.clear();
        if let Some(kind) = error.timeout() {
            panic!("timeout {kind:?}: the peer was never silent for long, nor was a close pending");
        }
        let (unit, per_second, burst) = match error.detail() {
            Some(Detail::MessageRateExceeded { per_second, burst }) => {
                (Unit::Messages, *per_second, *burst)
            }
            Some(Detail::ByteRateExceeded { per_second, burst }) => {
                (Unit::Bytes, *per_second, *burst)
            }
            _ => return,
        };
        let limit = self
            .limit
            .unwrap_or_else(|| panic!("{error:?} without a rate limit"));
        assert_eq!(
            limit.get_policy(),
            RatePolicy::Close,
            "{error:?} throttling"
        );
        let model = self.model.expect("limited");
        let configured = match unit {
            Unit::Messages => limit
                .get_messages_per_second()
                .map(u64::from)
                .zip(limit.get_message_burst().map(u64::from)),
            Unit::Bytes => limit.get_bytes_per_second().zip(limit.get_byte_burst()),
        };
        let (rate, configured_burst) =
            configured.unwrap_or_else(|| panic!("{error:?} without that bucket"));
        assert_eq!(
            (per_second, burst),
            (rate, configured_burst.min(i64::MAX as u64)),
            "{error:?} for {limit:?}"
        );
        // The message that overran it was dropped: its size is unknown,
        // but the bucket cannot have been full, and the message bucket is
        // checked first.
        let messages_fit = model.messages.is_none_or(|b| b.fits(1));
        match unit {
            Unit::Messages => assert!(!messages_fit, "{error:?} with room for a message"),
            Unit::Bytes => {
                assert!(messages_fit, "{error:?} with the message bucket short");
                let bytes = model.bytes.expect("checked");
                assert!(
                    bytes.level < bytes.burst * NANOS as i128,
                    "{error:?} with a full byte bucket"
                );
            }
        }
    }
}

/// What [`run_context_stats`] saw.
#[derive(Debug, Default)]
pub struct ContextRun {
    /// The rate limit the knobs set.
    pub limit: Option<RateLimit>,
    /// Messages handed over (close included).
    pub messages: usize,
    /// [`Next::Wait`] answers.
    pub waits: usize,
    /// The error that failed the connection while the stream lasted.
    pub error: Option<Error>,
    /// The close code sent, if a close frame was.
    pub close_sent: Option<Option<u16>>,
    /// Virtual time at the end of the stream.
    pub elapsed: Duration,
}

// ----- the context targets -----

/// Knob bytes of the context targets: [`ContextKnobs`] then [`Shape`].
pub const CONTEXT_KNOBS: usize = ContextKnobs::LEN + 7;

/// The body of `context_server`, `context_client` and their deflate
/// variants: arbitrary bytes, shaped by the knobs, received by a context;
/// see [`run_context_stats`].
pub fn run_context(data: &[u8], role: Role, deflate: bool) {
    run_context_stats(data, role, deflate);
}

/// [`run_context`], returning what it saw.
///
/// The context is driven as a driver would, in virtual time: a read
/// arrives a knob-chosen step after the context asked for input (all
/// shorter than the keepalive interval); the driver tells the context the
/// time when it would wait for input (always, for a blocking driver) and
/// handles the deadlines that pass first; it waits out [`Next::Wait`] to
/// its deadline.
///
/// Invariants: no panic; at most one message per two bytes received;
/// messages within the limits, text valid UTF-8; the context sends only
/// pongs echoing the newest ping and one close frame last, masked when it
/// is a client (so no keepalive ping: the peer is never silent for an
/// interval, and a throttle is not silence), and no deadline fails it;
/// after any error every further call gives [`Error::AlreadyClosed`]; an
/// error with a close code has a close frame sent, with that code unless
/// one was already sent; heap within [`context_heap_bound`]; every
/// deadline reported is later than those already handled, and a few
/// polls without progress at most. Rate limits:
///
/// - [`Next::Wait`] only with a limit whose policy is `Throttle`, its
///   deadline one nanosecond too early still a wait with the same
///   deadline, and at most one wait per keepalive interval before the
///   held message comes (one in all without keepalive);
/// - every message handed over fits an independent model of the buckets
///   at the time it was charged, every wait was for a message that did not
///   fit, and its deadline is the instant it fits (or, with keepalive,
///   no later);
/// - over any interval of `T` seconds at most `burst + rate x T` (+1)
///   messages, and as many bytes plus the debt of the last message;
/// - `MessageRateExceeded`/`ByteRateExceeded` only under the `Close`
///   policy, with the configured rate and burst, when the model's bucket
///   is short, closing with 1008.
pub fn run_context_stats(data: &[u8], role: Role, deflate: bool) -> ContextRun {
    let (mut knobs, body) = Knobs::split(data, CONTEXT_KNOBS);
    let ck = ContextKnobs::read(&mut knobs);
    let shape = Shape::read(&mut knobs);
    let stream = shape.expand(body);
    let config = ck.config();
    let limit = config.get_max_message_size().expect("set");
    let max_frame = config.get_max_frame_size();
    let params = deflate.then(|| deflate_params(ck.deflate));
    let rate_limit = config.get_rate_limit();

    let watch = HeapWatch::start();
    let mut ctx = WebSocketContext::with_deflate(role, config, params);
    let mut time = VirtualTime::new(rate_limit, config.get_ping_interval());
    let mut out = OutputChecker::new(role);
    let mut last_ping: Option<lockgate::Bytes> = None;
    let mut received = 0usize;
    let mut messages = 0usize;
    let mut failed = None;
    if ck.tell_start() {
        let _ = time.waiting(&mut ctx);
    }
    let mut chunks = shape.chunks(&stream).enumerate().peekable();
    while let Some((_, chunk)) = chunks.next() {
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
        if failed.is_some() {
            assert!(matches!(ctx.next_message(), Err(Error::AlreadyClosed)));
            continue;
        }
        // Driven as a driver would: one read operation until it needs
        // input, writing out in pieces as big as this chunk.
        let mut stalled = 0;
        loop {
            stalled += 1;
            assert!(stalled <= 16, "{stalled} polls without progress");
            match ctx.poll(Operation::Read) {
                Ok(Next::Message(msg)) => {
                    stalled = 0;
                    messages += 1;
                    assert!(messages <= received / 2 + 1, "more messages than frames");
                    check_message(&msg, limit);
                    time.handed_over(&msg);
                    if let Message::Ping(payload) = msg {
                        last_ping = Some(payload);
                    }
                    out.check(last_ping.as_deref());
                }
                Ok(Next::Transmit) => {
                    stalled = 0;
                    out.transmit(&mut ctx, chunk.len());
                }
                Ok(Next::Flush) => ctx.flushed(),
                Ok(Next::Shutdown) => ctx.shut_down(),
                // A lingering close after a failure: the peer's FIN ends
                // it at once, and the failure is checked below.
                Ok(Next::Discard) => {
                    assert!(ctx.is_terminated(), "a linger on an open connection");
                    ctx.input_ended();
                }
                Ok(Next::Receive) => {
                    out.check(last_ping.as_deref());
                    let Some(&(i, next)) = chunks.peek() else {
                        break;
                    };
                    // The next read arrives after its step. The driver
                    // tells the context the time if it waits for it (or
                    // always, blocking), and handles a deadline first.
                    let arrival = time.now + ck.step(i);
                    let tell =
                        ck.blocking_driver() || arrival > time.now || next.len().is_multiple_of(3);
                    if tell && let Some(deadline) = time.waiting(&mut ctx).filter(|d| *d <= arrival)
                    {
                        stalled = 0;
                        time.handle_timeout(&mut ctx, deadline.max(time.now));
                        continue;
                    }
                    time.now = arrival;
                    break;
                }
                Ok(Next::Done) => panic!("a read ended without a message"),
                Ok(Next::Wait) => {
                    stalled = 0;
                    time.wait(&mut ctx, &mut out);
                }
                Err(error) => {
                    time.failed(&error);
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
                    if matches!(
                        error.detail(),
                        Some(Detail::MessageRateExceeded { .. } | Detail::ByteRateExceeded { .. })
                    ) {
                        assert_eq!(error.close_code().map(u16::from), Some(1008));
                        assert_eq!(
                            (sent_before, out.close_sent),
                            (None, Some(Some(1008))),
                            "a close frame with 1008 for {error:?}"
                        );
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
                    failed = Some(error);
                    break;
                }
            }
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
        failed.is_none() || matches!(eof, Error::AlreadyClosed),
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
    ContextRun {
        limit: rate_limit,
        messages,
        waits: time.waits,
        error: failed,
        close_sent: out.close_sent,
        elapsed: time.now - time.t0,
    }
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
            .poll(Operation::Flush)
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

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::path::Path;

    use super::*;

    const TARGETS: [(&str, Role, bool); 4] = [
        ("context_server", Role::Server, false),
        ("context_client", Role::Client, false),
        ("context_deflate_server", Role::Server, true),
        ("context_deflate_client", Role::Client, true),
    ];

    fn seed(target: &str, name: &str) -> Vec<u8> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("corpus")
            .join(target)
            .join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn every_context_seed_passes() {
        for (target, role, deflate) in TARGETS {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("corpus")
                .join(target);
            let mut n = 0;
            for entry in std::fs::read_dir(&dir).expect("corpus") {
                let path = entry.expect("entry").path();
                let data = std::fs::read(&path).expect("seed");
                run_context_stats(&data, role, deflate);
                n += 1;
            }
            assert!(n > 10, "{target}: {n} seeds");
        }
    }

    #[test]
    fn rate_seeds_hit_their_limits() {
        for (target, role, deflate) in TARGETS {
            let names: &[&str] = if deflate {
                &["rate_throttle_inflated", "rate_close_inflated"]
            } else {
                &[
                    "rate_throttle_messages",
                    "rate_throttle_bytes_debt",
                    "rate_throttle_both",
                    "rate_close_messages",
                    "rate_close_bytes",
                ]
            };
            for name in names {
                let run = run_context_stats(&seed(target, name), role, deflate);
                let limit = run.limit.expect("a limit");
                if name.starts_with("rate_throttle") {
                    assert_eq!(limit.get_policy(), RatePolicy::Throttle);
                    assert!(run.waits > 0, "{target}/{name}: {run:?}");
                    assert!(
                        matches!(run.error, None | Some(Error::ConnectionClosed)),
                        "{target}/{name}: {run:?}"
                    );
                    // Every message, the close last.
                    assert_eq!(run.close_sent, Some(Some(1000)), "{target}/{name}");
                } else {
                    assert_eq!(limit.get_policy(), RatePolicy::Close);
                    assert_eq!(run.waits, 0, "{target}/{name}");
                    let expected = if name.ends_with("messages") {
                        "message rate exceeded"
                    } else {
                        "byte rate exceeded"
                    };
                    let error = run.error.expect("closed");
                    assert!(
                        error.to_string().contains(expected),
                        "{target}/{name}: {error}"
                    );
                    assert_eq!(run.close_sent, Some(Some(1008)), "{target}/{name}");
                }
            }
        }
    }

    #[test]
    fn the_rate_seeds_read_as_intended() {
        let run = run_context_stats(
            &seed("context_server", "rate_throttle_messages"),
            Role::Server,
            false,
        );
        assert_eq!(
            run.limit,
            Some(RateLimit::messages_per_second(2).message_burst(1))
        );
        // Nine messages and a ping at 2/s, burst 1, then the close: the
        // tenth at 4.5 s, the close with it.
        assert_eq!(run.messages, 11);
        assert_eq!(run.waits, 9);
        assert_eq!(run.elapsed, Duration::from_millis(4500));
        let run = run_context_stats(
            &seed("context_server", "rate_close_messages"),
            Role::Server,
            false,
        );
        assert_eq!(run.messages, 2, "the burst, then the third closes");
    }

    #[test]
    fn zero_knobs_are_the_defaults_without_a_limit() {
        let ck = ContextKnobs::default();
        assert_eq!(ck.rate_limit(), None);
        assert_eq!(ck.config().get_rate_limit(), None);
        assert_eq!(
            ck.config().get_ping_interval(),
            Config::default().get_ping_interval()
        );
        assert_eq!(ck.step(0), Duration::ZERO);
        assert!(!ck.blocking_driver() && !ck.tell_start());
        let mut knobs = Knobs::split(&[], CONTEXT_KNOBS).0;
        assert_eq!(
            ContextKnobs::read(&mut knobs).encode(),
            [0; ContextKnobs::LEN]
        );
    }

    /// The knobs make few distinct limits (see [`MESSAGE_RATES`]; lockgate
    /// once panicked past 65,535 in a process).
    #[test]
    fn the_knobs_make_few_distinct_limits() {
        let mut limits = HashSet::new();
        let mut limited = 0;
        for rate in 0..=255u8 {
            for burst in 0..=255u8 {
                for timing in 0..8u8 {
                    let ck = ContextKnobs {
                        rate,
                        burst,
                        timing,
                        ..ContextKnobs::default()
                    };
                    if let Some(limit) = ck.rate_limit() {
                        limits.insert(limit);
                        limited += 1;
                    }
                }
            }
        }
        assert_eq!(limited, 256 * 256 * 8 / 2, "half the inputs have a limit");
        assert_eq!(limits.len(), 8_448);
        assert!(
            STEPS
                .iter()
                .all(|&ns| Duration::from_nanos(ns) < Duration::from_secs(10))
        );
    }

    /// The model and the documented examples agree (`rate_limit.rs`).
    #[test]
    fn the_model_repays_a_debt() {
        let limit = RateLimit::bytes_per_second(1000).byte_burst(1000);
        let mut model = RateModel::new(limit);
        let t0 = virtual_start();
        model.observe(t0);
        let big = Message::binary(vec![0; 5000]);
        let small = Message::binary(vec![0; 100]);
        assert_eq!(model.overrun(&big), None, "a full bucket takes it");
        model.charge(&big);
        assert_eq!(model.overrun(&small), Some(Unit::Bytes));
        assert_eq!(model.fits_at(&small), t0 + Duration::from_millis(4100));
        model.observe(t0 + Duration::from_millis(4100) - Duration::from_nanos(1));
        assert_eq!(model.overrun(&small), Some(Unit::Bytes));
        model.observe(t0 + Duration::from_millis(4100));
        assert_eq!(model.overrun(&small), None);
        // A ping costs no bytes: the debt does not hold it back.
        model.charge(&big);
        assert_eq!(model.overrun(&Message::Ping(lockgate::Bytes::new())), None);
    }

    /// A core bug the harness found (`rate_limit.rs`, `Bucket::fits_at`):
    /// a message that costs no bytes (a ping, a pong, an empty text or
    /// binary message) held back by the message bucket gets the deadline
    /// at which the byte bucket's debt is repaid, although it fits, and is
    /// handed over, as soon as the message bucket allows. `Bucket::fits`
    /// takes a cost of 0 as always fitting; `Bucket::fits_at` does not.
    /// Drivers slept until that deadline, so the message came 8 s late
    /// (fixed; kept as a regression test beside the core's own).
    #[test]
    fn a_message_without_bytes_does_not_wait_for_the_byte_debt() {
        use lockgate::frame::OpCode;
        let frame = |op, p: &[u8]| encode_frame(op, true, false, Some([0; 4]), p);
        let t0 = virtual_start();
        let limit = RateLimit::messages_per_second(1)
            .message_burst(1)
            .with_bytes_per_second(100)
            .byte_burst(100);
        let config = Config::default().ping_interval(None).rate_limit(limit);
        for last in [frame(OpCode::Ping, b""), frame(OpCode::Text, b"")] {
            let mut ctx = WebSocketContext::new(Role::Server, config);
            ctx.handle_timeout(t0);
            // 900 bytes of debt, repaid at 9 s; then 1 message, 0 bytes.
            ctx.feed(&frame(OpCode::Binary, &[0; 1000]));
            ctx.feed(&last);
            let mut out = OutputChecker::new(Role::Server);
            let mut read = |ctx: &mut WebSocketContext| loop {
                match ctx.poll(Operation::Read).expect("read") {
                    Next::Transmit => out.transmit(ctx, usize::MAX),
                    Next::Flush => ctx.flushed(),
                    next => return next,
                }
            };
            assert!(matches!(read(&mut ctx), Next::Message(Message::Binary(_))));
            assert_eq!(read(&mut ctx), Next::Wait);
            ctx.handle_timeout(t0);
            let deadline = ctx.poll_timeout().expect("throttled");
            // Handed over at 1 s...
            ctx.handle_timeout(t0 + Duration::from_secs(1));
            assert!(matches!(read(&mut ctx), Next::Message(_)));
            // ...so that is the instant it fits, which the deadline was
            // to be (it is 9 s).
            assert_eq!(deadline - t0, Duration::from_secs(1));
        }
    }
}
