//! Per-message DEFLATE (RFC 7692 section 7.2): [`Deflater`] compresses whole
//! message payloads, [`Inflater`] decompresses them frame by frame under a
//! size limit.
//!
//! Backend: flate2 over zlib-rs, raw DEFLATE (no zlib header).
//!
//! # Memory
//!
//! Neither side allocates anything until its first compressed message. With
//! no context takeover the compressor forgets its history at the end of
//! every message (a full flush) and the decompressor is reset after every
//! message; both are kept for the rest of a burst and dropped by
//! [`Deflater::release`] once the burst of writes is flushed and by
//! [`Inflater::release`] once the connection waits for the peer, so an
//! idle connection holds nothing. With context takeover the state stays
//! until the connection sleeps (below). Measured with zlib-rs 0.6:
//!
//! - compressor: 245 KiB at 9 window bits up to 371 KiB at 15 (a fixed
//!   128 KiB hash table and 64 KiB literal buffer, plus four times the
//!   window). flate2 has no memory-level knob, so zlib-rs's default 8 is
//!   used whatever the configuration says;
//! - decompressor: 46.4 KiB whatever the window bits (zlib-rs always
//!   allocates a 32 KiB window).
//!
//! Dropping the state after every message instead costs about 2 µs per
//! 1 KiB JSON message on the compressing side (2.8 µs with a reset, 4.9 µs
//! with a new state) and 0.3 µs on the decompressing side. Keeping it
//! within a burst and dropping it when the connection goes quiet keeps the
//! speed of reuse and still frees the memory; peers ask for no context
//! takeover precisely to save that memory. Forgetting the history costs a
//! clear of the compressor's 128 KiB hash table per message either way; a
//! full flush does only that, where a reset also reinitialises the block
//! state (callgrind: 209k -> 159k instructions per 1 KiB message).
//!
//! # Sleeping with context takeover
//!
//! With context takeover the state is the shared history and cannot simply
//! be dropped. What the next message can refer to is only the last
//! 2^window_bits bytes of uncompressed data that went through that
//! direction's stream, so with [`Deflater::keep_window`] and
//! [`Inflater::keep_window`] each side copies the end of every message into
//! a ring of that size (`window.rs`), and [`Deflater::sleep`] /
//! [`Inflater::sleep`] drop the zlib state between messages. The next
//! message rebuilds it with the window as preset dictionary: the
//! decompressor decodes exactly as before; the compressor may find other
//! matches than the running one would have (a dictionary hashes every
//! position, levels 1 to 6 hash only some as they go; levels 7 and 8 give
//! the same bytes), so the peer reads the same messages at about the same
//! size. The protocol layer decides when to sleep (`proto/compression.rs`).
//!
//! # Bounded inflation
//!
//! [`Inflater::inflate`] never lets its output grow past the caller's limit
//! plus one byte. It hands the backend at most 64 KiB of output space per
//! call (never more than the limit leaves), grows the buffer itself by
//! doubling capped at the limit, and stops with [`InflateError::TooLarge`]
//! as soon as the output exceeds the limit. A frame that would inflate to
//! gigabytes costs no more than the limit: measured against a 1 MiB limit,
//! the 1 GiB bomb stops after about 1 ms with `out.capacity()` at 1 MiB + 1,
//! and the heap peaks 1.55 MiB above where it started: the new 1 MiB buffer
//! while the old 512 KiB one is copied into it, plus the 46 KiB
//! decompressor.
//!
//! Growth starts from a guess of four times the compressed size, and a full
//! buffer is first topped up through a 512-byte stack buffer, so a small
//! message inflated in one go gets an exact fit and output that exactly
//! fills the buffer costs no growth. Later growth at least doubles, so a
//! message arriving in many tiny frames is copied O(log n) times, not once
//! per frame: inflation is linear in its output whatever the framing.
//!
//! # Window bits
//!
//! flate2 (like zlib) cannot use an 8-bit window for raw DEFLATE. Inflating
//! with a larger window than the peer uses is always safe, so the inflater
//! uses 9. A compressor with 9 bits could emit distances up to 512 that a
//! peer with a 256-byte window cannot follow, so with 8 bits the deflater
//! emits stored (uncompressed) blocks, which reference no window at all.
//!
//! Like zlib, the inflater rejects distances reaching before the data it
//! has seen but does not enforce the negotiated window on a peer that uses
//! a larger one: such a peer is decoded, not refused.

use bytes::{BufMut, BytesMut};
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

use super::window::Window;

/// The empty stored block a sync flush ends with, minus its first byte:
/// stripped from every compressed message (RFC 7692 section 7.2.1) and
/// appended again before inflating its end (section 7.2.2).
const TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// Smallest window flate2 accepts for raw DEFLATE.
const MIN_BACKEND_WINDOW_BITS: u8 = 9;

/// Largest LZ77 window RFC 7692 allows.
const MAX_WINDOW_BITS: u8 = 15;

/// Largest payload of one stored DEFLATE block.
const MAX_STORED_BLOCK: usize = 0xffff;

/// Free output space kept before each compress call. zlib asks for more
/// than six bytes so that a sync flush is not split across calls.
const COMPRESS_SLACK: usize = 64;

/// Smallest output window the inflater offers per backend call.
const MIN_INFLATE_STEP: usize = 1024;

/// Largest output window the inflater offers per backend call.
const MAX_INFLATE_STEP: usize = 64 * 1024;

/// Stack buffer the inflater tries before growing a full output buffer.
const PROBE: usize = 512;

/// Compresses the messages one endpoint sends (RFC 7692 section 7.2.1).
#[derive(Debug)]
pub(crate) struct Deflater {
    /// zlib level 1 to 9, or 0: stored blocks only, no compressor state.
    level: u32,
    /// LZ77 window handed to flate2, 9 to 15 (8 is served by `level` 0).
    window_bits: u8,
    /// zlib memory level 1 to 9, as configured.
    #[allow(
        dead_code,
        reason = "flate2 has no memory-level knob: zlib-rs uses its default 8"
    )]
    mem_level: u8,
    /// Start every message with an empty window, and free the state after it.
    no_context_takeover: bool,
    /// Created on the first compressed message, and again after a sleep.
    state: Option<Compress>,
    /// With context takeover and sleeping enabled ([`Deflater::keep_window`]):
    /// the last input, from which [`Deflater::sleep`] lets `state` be rebuilt.
    window: Option<Window>,
}

impl Deflater {
    /// A deflater for the negotiated parameters. Allocates nothing.
    ///
    /// Out-of-range values are clamped: `level` to 9, `window_bits` to
    /// 8..=15, `mem_level` to 1..=9. With 8 window bits (or level 0) every
    /// message is sent as stored blocks.
    pub(crate) fn new(
        level: u32,
        window_bits: u8,
        mem_level: u8,
        no_context_takeover: bool,
    ) -> Self {
        let window_bits = window_bits.clamp(8, MAX_WINDOW_BITS);
        let level = if window_bits < MIN_BACKEND_WINDOW_BITS {
            0
        } else {
            level.min(9)
        };
        Self {
            level,
            window_bits: window_bits.max(MIN_BACKEND_WINDOW_BITS),
            mem_level: mem_level.clamp(1, 9),
            no_context_takeover,
            state: None,
            window: None,
        }
    }

    /// Keeps the window of what was compressed, so that [`sleep`] can drop
    /// the compressor and the next message rebuild it. Only with context
    /// takeover and a compressor (not stored blocks): otherwise there is no
    /// history to keep. Allocates nothing yet.
    ///
    /// [`sleep`]: Deflater::sleep
    pub(crate) fn keep_window(mut self) -> Self {
        if !self.no_context_takeover && self.level > 0 {
            self.window = Some(Window::new(self.window_bits));
        }
        self
    }

    /// Compresses one whole message payload, appending the RFC 7692 payload
    /// (sync flush, trailing `00 00 ff ff` removed) to `out`: never more
    /// than [`max_compressed_len`] bytes, since data that does not compress
    /// goes out as stored blocks.
    pub(crate) fn compress(&mut self, input: &[u8], out: &mut BytesMut) {
        if input.is_empty() {
            // Section 7.2.3.6: the header byte of an empty stored block.
            // The stream is at a block boundary after every message, so
            // this is valid whatever the compressor state, which stays
            // untouched (and unallocated).
            out.put_u8(0x00);
            return;
        }
        if self.level == 0 {
            write_stored(input, out);
            return;
        }
        let start = out.len();
        let deflated = self.deflate_into(input, out);
        if !deflated || out.len() - start > max_compressed_len(input.len()) {
            // Stored blocks instead: the backend failed (only on internal
            // errors; the next message starts from a fresh state), or the
            // data does not compress. Level 1 codes every byte with static
            // Huffman codes, 9 bits for half the byte values, so random
            // data grows by about 5.5 % and worst-case data by 12.5 %.
            // Either way the peer's window receives the same bytes as ours,
            // so the two stay in step with context takeover.
            out.truncate(start);
            if !deflated {
                self.state = None;
            }
            write_stored(input, out);
        }
        if let Some(window) = self.window.as_mut() {
            // The peer's window takes these bytes whatever the block type.
            window.push(input);
        }
    }

    /// Without context takeover, the settings that alone determine the
    /// compressed bytes of a message (level and window, after clamping), so
    /// connections with equal settings can share them.
    pub(crate) fn shared_settings(&self) -> Option<(u32, u8)> {
        self.no_context_takeover
            .then_some((self.level, self.window_bits))
    }

    /// Frees the compressor when no message may reference it: between
    /// bursts, without context takeover. With context takeover the state is
    /// the shared dictionary and must stay.
    pub(crate) fn release(&mut self) {
        if self.no_context_takeover {
            self.state = None;
        }
    }

    /// Drops the compressor of a connection with context takeover, keeping
    /// only its window ([`keep_window`](Self::keep_window)): the next message
    /// rebuilds it with the window as preset dictionary. Always between
    /// messages, since a message is compressed whole. `true` if something
    /// was freed.
    pub(crate) fn sleep(&mut self) -> bool {
        self.window.is_some() && self.state.take().is_some()
    }

    /// Runs `input` through the compressor with a sync flush, appending to
    /// `out` without the tail. `false` if the backend failed.
    fn deflate_into(&mut self, input: &[u8], out: &mut BytesMut) -> bool {
        let (level, window_bits) = (self.level, self.window_bits);
        if self.state.is_none() {
            if let Some(window) = self.window.as_mut().filter(|w| !w.is_empty()) {
                // Waking: the same history as before the sleep. A preset
                // dictionary hashes every position, where levels 1 to 6
                // hashed only some: other matches, the same messages.
                // (Compressing the window again instead mirrors that
                // sparse hashing more closely but costs more and, since
                // message boundaries move the hashed positions, compresses
                // worse on some conversations.)
                let mut state =
                    Compress::new_with_window_bits(Compression::new(level), false, window_bits);
                if state.set_dictionary(window.make_contiguous()).is_err() {
                    return false;
                }
                self.state = Some(state);
            }
        }
        // Without context takeover a full flush ends the message: the same
        // sync-flush tail, and the compressor forgets the history, so the
        // next message cannot refer back. Cheaper than a reset, which also
        // reinitialises the block state a flush already left clean.
        let flush = if self.no_context_takeover {
            FlushCompress::Full
        } else {
            FlushCompress::Sync
        };
        let state = self.state.get_or_insert_with(|| {
            Compress::new_with_window_bits(Compression::new(level), false, window_bits)
        });
        let start = out.len();
        let base_in = state.total_in();
        // Chatty JSON compresses to well under half; the output window
        // grows geometrically for data that does not.
        let mut window = input.len() / 2 + COMPRESS_SLACK;
        loop {
            let consumed = (state.total_in() - base_in) as usize;
            let out_before = state.total_out();
            let at = out.len();
            out.resize(at + window, 0);
            let result = state.compress(&input[consumed..], &mut out[at..], flush);
            let produced = (state.total_out() - out_before) as usize;
            out.truncate(at + produced);
            if result.is_err() {
                return false;
            }
            let now_consumed = (state.total_in() - base_in) as usize;
            // The flush is complete once the compressor stops with output
            // space to spare.
            if now_consumed == input.len() && produced < window {
                break;
            }
            if now_consumed == consumed && produced == 0 {
                return false;
            }
            window = (out.len() - start).max(COMPRESS_SLACK);
        }
        if out.len() - start < TAIL.len() || !out.ends_with(&TAIL) {
            return false;
        }
        out.truncate(out.len() - TAIL.len());
        true
    }

    /// Whether compressor state is allocated: only between the first
    /// compressed message and the end of it (no context takeover) or the
    /// end of the connection (context takeover).
    #[cfg_attr(not(test), allow(dead_code))] // tests only, for now
    pub(crate) fn is_allocated(&self) -> bool {
        self.state.is_some()
    }
}

/// The most bytes [`Deflater::compress`] appends for `len` bytes of input:
/// the size of the payload as stored blocks (5 bytes per 64 KiB block, plus
/// the first byte of the stripped empty block).
pub(crate) fn max_compressed_len(len: usize) -> usize {
    len.saturating_add(len.div_ceil(MAX_STORED_BLOCK).saturating_mul(5))
        .saturating_add(1)
}

/// Appends `input` as stored DEFLATE blocks followed by the header byte of
/// the empty stored block whose remaining bytes are the stripped [`TAIL`].
fn write_stored(input: &[u8], out: &mut impl BufMut) {
    for block in input.chunks(MAX_STORED_BLOCK) {
        let len = block.len() as u16;
        // BFINAL 0, BTYPE 00, then padding to the byte boundary.
        out.put_u8(0x00);
        out.put_u16_le(len);
        out.put_u16_le(!len);
        out.put_slice(block);
    }
    out.put_u8(0x00);
}

/// Gives `out` room for exactly `additional` more bytes. `BytesMut::reserve`
/// may double the capacity, which could overshoot the inflation limit.
fn grow_exact(out: &mut BytesMut, additional: usize) {
    let mut bigger = BytesMut::with_capacity(out.len() + additional);
    bigger.extend_from_slice(out);
    *out = bigger;
}

/// Why [`Inflater::inflate`] failed. The inflater starts over afterwards;
/// the connection is expected to close (1009 and 1007/1002).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum InflateError {
    /// The message inflates to more than `max` bytes. Inflation stopped at
    /// `size` bytes; the message is at least that large.
    #[error("compressed message inflates to more than {max} bytes")]
    TooLarge {
        /// Bytes of output when inflation stopped.
        size: u64,
        /// The limit that was exceeded.
        max: usize,
    },
    /// The payload is not valid DEFLATE data for this stream.
    #[error("invalid compressed data")]
    Invalid,
}

/// Decompresses the messages one endpoint receives (RFC 7692 section
/// 7.2.2), streaming across frames.
#[derive(Debug)]
pub(crate) struct Inflater {
    /// LZ77 window handed to flate2, 9 to 15 (8 is inflated with 9).
    window_bits: u8,
    /// Reset the state after every message.
    no_context_takeover: bool,
    /// Created on the first compressed payload byte, and again after a sleep.
    state: Option<Decompress>,
    /// With context takeover and sleeping enabled ([`Inflater::keep_window`]):
    /// the last output, from which [`Inflater::sleep`] lets `state` be
    /// rebuilt.
    window: Option<Window>,
    /// Payload bytes were fed for the current message.
    message_started: bool,
    /// The peer's DEFLATE stream ended (a block with BFINAL set) and none of
    /// this message's payload came after it: the tail is not fed then.
    stream_restarted: bool,
    /// Bytes inflated for the current message.
    message_out: usize,
}

impl Inflater {
    /// An inflater for the peer's negotiated window bits. Allocates
    /// nothing. `window_bits` is clamped to 9..=15.
    pub(crate) fn new(window_bits: u8, no_context_takeover: bool) -> Self {
        Self {
            window_bits: window_bits.clamp(MIN_BACKEND_WINDOW_BITS, MAX_WINDOW_BITS),
            no_context_takeover,
            state: None,
            window: None,
            message_started: false,
            stream_restarted: false,
            message_out: 0,
        }
    }

    /// Keeps the window of what was inflated, so that [`sleep`] can drop the
    /// decompressor and the next message rebuild it. Only with context
    /// takeover: otherwise no message refers to an earlier one. Allocates
    /// nothing yet.
    ///
    /// The window is the negotiated one (at least 9 bits), so after a sleep
    /// a peer that refers back further than it agreed to is refused as
    /// invalid data, where without sleeping it would be decoded.
    ///
    /// [`sleep`]: Inflater::sleep
    pub(crate) fn keep_window(mut self) -> Self {
        if !self.no_context_takeover {
            self.window = Some(Window::new(self.window_bits));
        }
        self
    }

    /// Drops the decompressor of a connection with context takeover,
    /// keeping only its window ([`keep_window`](Self::keep_window)), if no
    /// message is half inflated: the next message rebuilds it with the
    /// window as preset dictionary. `true` if something was freed.
    pub(crate) fn sleep(&mut self) -> bool {
        self.window.is_some() && !self.message_started && self.state.take().is_some()
    }

    /// Whether a message is half inflated (its last frame is yet to come).
    pub(crate) fn is_mid_message(&self) -> bool {
        self.message_started
    }

    /// Inflates one frame's payload of a compressed message, appending to
    /// `out`, which holds the message inflated so far.
    ///
    /// `end_of_message` is the frame's FIN: the `00 00 ff ff` tail is fed
    /// after the payload (RFC 7692 section 7.2.2) and, with no context
    /// takeover, the state is reset.
    ///
    /// `out.len()` stays at most `max_total + 1`, and capacity this call
    /// reserves stays within that too: inflation stops with
    /// [`InflateError::TooLarge`] as soon as the output exceeds `max_total`.
    /// On error the contents of `out` are unspecified and the state is
    /// dropped.
    ///
    /// A DEFLATE stream may end inside a message (RFC 7692 section 7.2.3.4
    /// flushes with BFINAL set): payload after that point is inflated as a
    /// new stream whose dictionary is this message's output so far.
    pub(crate) fn inflate(
        &mut self,
        input: &[u8],
        end_of_message: bool,
        out: &mut BytesMut,
        max_total: usize,
    ) -> Result<(), InflateError> {
        if out.len() > max_total {
            self.abandon();
            return Err(InflateError::TooLarge {
                size: out.len() as u64,
                max: max_total,
            });
        }
        let mut result = Ok(());
        if !input.is_empty() {
            self.message_started = true;
            self.stream_restarted = false;
            result = self.feed(input, false, out, max_total);
        }
        // An empty payload (no bytes in any frame) is an empty message; a
        // stream that ended exactly at the end of the payload needs no tail.
        if result.is_ok() && end_of_message && self.message_started && !self.stream_restarted {
            result = self.feed(&TAIL, true, out, max_total);
        }
        match result {
            Err(_) => self.abandon(),
            Ok(()) if end_of_message => {
                if let Some(window) = self.window.as_mut() {
                    let len = self.message_out.min(out.len());
                    window.push(&out[out.len() - len..]);
                }
                if self.no_context_takeover {
                    // The next message starts with an empty window (a
                    // reference back into this one is an error). A reset
                    // keeps the allocation for the rest of a burst;
                    // `release` frees it once the connection waits.
                    if let Some(state) = self.state.as_mut() {
                        state.reset(false);
                    }
                }
                self.message_started = false;
                self.stream_restarted = false;
                self.message_out = 0;
            }
            Ok(()) => {}
        }
        result
    }

    /// Frees the decompressor when no message may need it: without context
    /// takeover, between messages. Called where the connection waits for
    /// the peer, so an idle connection holds nothing.
    pub(crate) fn release(&mut self) {
        if self.no_context_takeover && !self.message_started {
            self.state = None;
        }
    }

    /// Inflates `input` into `out`, growing it at most to `max_total + 1`.
    /// `tail`: `input` is the appended [`TAIL`], which may be cut short by
    /// the end of the stream.
    fn feed(
        &mut self,
        input: &[u8],
        tail: bool,
        out: &mut BytesMut,
        max_total: usize,
    ) -> Result<(), InflateError> {
        let window_bits = self.window_bits;
        if self.state.is_none() {
            let mut state = Decompress::new_with_window_bits(false, window_bits);
            if let Some(window) = self.window.as_mut().filter(|w| !w.is_empty()) {
                // Waking: the same history as before the sleep.
                state
                    .set_dictionary(window.make_contiguous())
                    .map_err(|_| InflateError::Invalid)?;
            }
            self.state = Some(state);
        }
        let state = self.state.as_mut().expect("created above");
        let limit = max_total.saturating_add(1);
        // Output offered per call: a guess from the input size first, then
        // doubling, at most MAX_INFLATE_STEP (and never past the limit).
        let mut step = input
            .len()
            .saturating_mul(4)
            .clamp(MIN_INFLATE_STEP, MAX_INFLATE_STEP);
        let mut pos = 0;
        loop {
            if out.len() > max_total {
                return Err(InflateError::TooLarge {
                    size: out.len() as u64,
                    max: max_total,
                });
            }
            let room = limit - out.len();
            let (in_before, out_before) = (state.total_in(), state.total_out());
            let (status, offered) = if out.len() == out.capacity() {
                // Full: probe with a small stack buffer before growing, so
                // output that exactly fills the buffer costs no growth.
                let mut probe = [0u8; PROBE];
                let offered = PROBE.min(room);
                let status =
                    state.decompress(&input[pos..], &mut probe[..offered], FlushDecompress::None);
                let produced = (state.total_out() - out_before) as usize;
                let consumed = (state.total_in() - in_before) as usize;
                if produced > 0 {
                    let finished = pos + consumed == input.len() && produced < offered;
                    let grow = if finished && out.is_empty() {
                        // A message inflated in one go gets an exact fit.
                        produced
                    } else {
                        // Double (or take the first step): a message that
                        // arrives in many small frames must not be copied
                        // whole once per frame. Go straight to the limit
                        // rather than leave a sliver that would cost
                        // another full copy.
                        let grow = step.max(out.len()).max(produced);
                        if room - grow.min(room) < grow {
                            room
                        } else {
                            grow
                        }
                    };
                    grow_exact(out, grow);
                    out.extend_from_slice(&probe[..produced]);
                }
                (status, offered)
            } else {
                let offered = (out.capacity() - out.len()).min(room).min(step);
                let start = out.len();
                out.resize(start + offered, 0);
                let status =
                    state.decompress(&input[pos..], &mut out[start..], FlushDecompress::None);
                let produced = (state.total_out() - out_before) as usize;
                out.truncate(start + produced);
                (status, offered)
            };
            let status = status.map_err(|_| InflateError::Invalid)?;
            let consumed = (state.total_in() - in_before) as usize;
            let produced = (state.total_out() - out_before) as usize;
            pos += consumed;
            self.message_out += produced;
            if out.len() > max_total {
                return Err(InflateError::TooLarge {
                    size: out.len() as u64,
                    max: max_total,
                });
            }
            if status == Status::StreamEnd {
                // Start a new stream that can refer back to this message.
                state.reset(false);
                let dict_len = self.message_out.min(1 << window_bits).min(out.len());
                if dict_len > 0 {
                    state
                        .set_dictionary(&out[out.len() - dict_len..])
                        .map_err(|_| InflateError::Invalid)?;
                }
                if tail {
                    // The tail only completes what the payload began.
                    return Ok(());
                }
                if pos == input.len() {
                    self.stream_restarted = true;
                    return Ok(());
                }
                continue;
            }
            if pos == input.len() && produced < offered {
                // All input taken and output space left: nothing pending.
                return Ok(());
            }
            if consumed == 0 && produced == 0 {
                // No progress with input and output space available.
                return Err(InflateError::Invalid);
            }
            step = step.saturating_mul(2).min(MAX_INFLATE_STEP);
        }
    }

    /// Drops the state after an error: the inflater starts over, with no
    /// history.
    fn abandon(&mut self) {
        self.state = None;
        if let Some(window) = self.window.as_mut() {
            window.clear();
        }
        self.message_started = false;
        self.stream_restarted = false;
        self.message_out = 0;
    }

    /// Whether decompressor state is allocated: from the first compressed
    /// payload byte to the end of that message (no context takeover) or of
    /// the connection (context takeover).
    #[cfg_attr(not(test), allow(dead_code))] // tests only, for now
    pub(crate) fn is_allocated(&self) -> bool {
        self.state.is_some()
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    const KIB: usize = 1024;
    const MIB: usize = 1024 * 1024;

    /// Deterministic JSON-like text (same generator as `benches/deflate.rs`).
    pub(in crate::deflate) fn json_like(len: usize, seed: u64) -> Vec<u8> {
        let mut next = xorshift(seed);
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

    pub(in crate::deflate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    pub(in crate::deflate) fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
        let mut next = xorshift(seed);
        (0..len).map(|_| next() as u8).collect()
    }

    pub(in crate::deflate) fn compress(deflater: &mut Deflater, input: &[u8]) -> Vec<u8> {
        let mut out = BytesMut::new();
        deflater.compress(input, &mut out);
        out.to_vec()
    }

    /// Inflates one message given as frames.
    fn inflate_frames(
        inflater: &mut Inflater,
        frames: &[&[u8]],
        max_total: usize,
    ) -> Result<BytesMut, InflateError> {
        let mut out = BytesMut::new();
        for (i, frame) in frames.iter().enumerate() {
            inflater.inflate(frame, i + 1 == frames.len(), &mut out, max_total)?;
        }
        Ok(out)
    }

    pub(in crate::deflate) fn inflate(
        inflater: &mut Inflater,
        payload: &[u8],
    ) -> Result<BytesMut, InflateError> {
        inflate_frames(inflater, &[payload], usize::MAX)
    }

    /// Splits `data` into `n` frames of about equal size (at least one).
    fn frames(data: &[u8], n: usize) -> Vec<&[u8]> {
        if data.is_empty() {
            return vec![data];
        }
        data.chunks(data.len().div_ceil(n)).collect()
    }

    /// Asserts the payload (tail stripped) is nothing but stored blocks.
    fn assert_stored_only(payload: &[u8]) {
        let full = [payload, &TAIL[..]].concat();
        let mut rest = &full[..];
        while !rest.is_empty() {
            assert!(rest.len() >= 5, "truncated stored block header");
            // BFINAL 0, BTYPE 00 and zero padding.
            assert_eq!(rest[0], 0x00, "not a stored block");
            let len = u16::from_le_bytes([rest[1], rest[2]]);
            let nlen = u16::from_le_bytes([rest[3], rest[4]]);
            assert_eq!(len, !nlen);
            rest = &rest[5 + usize::from(len)..];
        }
    }

    /// Every window size, context takeover on and off, levels 0/1/6/9,
    /// message sizes 0 B to 1 MiB of JSON-like text and random bytes, all
    /// through one deflater/inflater pair per setting (so context carries
    /// across messages), larger messages split into frames.
    fn round_trip_matrix(window_bits: u8) {
        const SIZES: [usize; 5] = [0, 1, 100, 64 * KIB, MIB];
        let messages: Vec<Vec<u8>> = SIZES
            .into_iter()
            .zip(0..)
            .flat_map(|(size, seed)| {
                // Random bytes, and bytes that all take 9-bit static
                // Huffman codes: neither compresses.
                let high: Vec<u8> = random_bytes(size, seed).iter().map(|b| b | 0x90).collect();
                [json_like(size, seed), random_bytes(size, seed), high]
            })
            .collect();
        for no_context_takeover in [false, true] {
            for level in [0, 1, 6, 9] {
                let mut deflater = Deflater::new(level, window_bits, 8, no_context_takeover);
                let mut inflater = Inflater::new(window_bits, no_context_takeover);
                for message in &messages {
                    let size = message.len();
                    let what = format!(
                        "bits {window_bits}, level {level}, no context takeover \
                         {no_context_takeover}, {size} bytes"
                    );
                    let payload = compress(&mut deflater, message);
                    assert!(
                        payload.len() <= max_compressed_len(size),
                        "{what}: {} bytes, more than stored blocks take",
                        payload.len()
                    );
                    if window_bits == 8 || level == 0 {
                        assert_stored_only(&payload);
                        assert!(!deflater.is_allocated(), "{what}");
                    }
                    if no_context_takeover {
                        // Kept for the rest of a burst, freed by `release`
                        // once it is flushed.
                        deflater.release();
                        assert!(!deflater.is_allocated(), "{what}");
                    }
                    let parts = frames(&payload, 1 + size / (16 * KIB));
                    let got = inflate_frames(&mut inflater, &parts, MIB).expect(&what);
                    assert!(got[..] == message[..], "{what}: round trip differs");
                    if no_context_takeover {
                        // Reset and kept until the connection waits.
                        inflater.release();
                        assert!(!inflater.is_allocated(), "{what}");
                    }
                }
            }
        }
    }

    #[test]
    fn round_trip_window_bits_8() {
        round_trip_matrix(8);
    }

    #[test]
    fn round_trip_window_bits_9() {
        round_trip_matrix(9);
    }

    #[test]
    fn round_trip_window_bits_10() {
        round_trip_matrix(10);
    }

    #[test]
    fn round_trip_window_bits_11() {
        round_trip_matrix(11);
    }

    #[test]
    fn round_trip_window_bits_12() {
        round_trip_matrix(12);
    }

    #[test]
    fn round_trip_window_bits_13() {
        round_trip_matrix(13);
    }

    #[test]
    fn round_trip_window_bits_14() {
        round_trip_matrix(14);
    }

    #[test]
    fn round_trip_window_bits_15() {
        round_trip_matrix(15);
    }

    #[test]
    fn context_takeover_keeps_the_window_across_messages() {
        let message = json_like(4 * KIB, 7);
        let mut deflater = Deflater::new(1, 15, 8, false);
        let mut inflater = Inflater::new(15, false);
        let first = compress(&mut deflater, &message);
        let second = compress(&mut deflater, &message);
        assert!(
            second.len() * 10 < first.len(),
            "second {} vs first {}: the window was not kept",
            second.len(),
            first.len()
        );
        assert!(inflate(&mut inflater, &first).unwrap() == message);
        assert!(inflate(&mut inflater, &second).unwrap() == message);
        assert!(deflater.is_allocated() && inflater.is_allocated());

        let mut deflater = Deflater::new(1, 15, 8, true);
        let mut inflater = Inflater::new(15, true);
        let first = compress(&mut deflater, &message);
        let second = compress(&mut deflater, &message);
        assert_eq!(first, second, "no context takeover: each message alone");
        assert!(inflate(&mut inflater, &first).unwrap() == message);
        assert!(inflate(&mut inflater, &second).unwrap() == message);
        assert!(
            deflater.is_allocated() && inflater.is_allocated(),
            "kept for the burst"
        );
        deflater.release();
        inflater.release();
        assert!(!deflater.is_allocated() && !inflater.is_allocated());
    }

    #[test]
    fn without_context_takeover_a_reference_to_the_last_message_is_refused() {
        // A peer that agreed to no context takeover but compresses with it:
        // its second message refers back into the first.
        let message = json_like(KIB, 3);
        let mut deflater = Deflater::new(1, 15, 8, false);
        let first = compress(&mut deflater, &message);
        let second = compress(&mut deflater, &message);
        let mut inflater = Inflater::new(15, true);
        assert!(inflate(&mut inflater, &first).unwrap() == message);
        assert!(matches!(
            inflate(&mut inflater, &second),
            Err(InflateError::Invalid)
        ));
    }

    #[test]
    fn message_split_into_frames() {
        for (size, frame_len) in [(100, 1), (4 * KIB, 1), (64 * KIB, 7), (MIB, 4093)] {
            let message = json_like(size, 11);
            for no_context_takeover in [false, true] {
                let mut deflater = Deflater::new(6, 15, 8, no_context_takeover);
                let mut inflater = Inflater::new(15, no_context_takeover);
                // Twice, so the second message uses the first one's window.
                for _ in 0..2 {
                    let payload = compress(&mut deflater, &message);
                    let parts: Vec<&[u8]> = payload.chunks(frame_len).collect();
                    let got = inflate_frames(&mut inflater, &parts, MIB).unwrap();
                    assert!(
                        got[..] == message[..],
                        "{size} bytes in {frame_len}-byte frames"
                    );
                }
            }
        }
    }

    #[test]
    fn empty_frames_inside_a_message() {
        let message = json_like(2 * KIB, 5);
        let payload = compress(&mut Deflater::new(1, 15, 8, false), &message);
        let (a, b) = payload.split_at(payload.len() / 2);
        let mut inflater = Inflater::new(15, false);
        let got = inflate_frames(&mut inflater, &[&[], a, &[], b, &[]], MIB).unwrap();
        assert!(got == message);
    }

    #[test]
    fn state_is_allocated_lazily_and_released_without_context_takeover() {
        let message = json_like(KIB, 1);
        for no_context_takeover in [false, true] {
            let mut deflater = Deflater::new(1, 15, 8, no_context_takeover);
            let mut inflater = Inflater::new(15, no_context_takeover);
            assert!(!deflater.is_allocated() && !inflater.is_allocated());

            // Empty messages need no compressor, and a zero-length payload
            // no decompressor; the 0x00 payload of an empty message does.
            let empty = compress(&mut deflater, b"");
            assert!(!deflater.is_allocated());
            assert!(inflate(&mut inflater, b"").unwrap().is_empty());
            assert!(!inflater.is_allocated());
            assert!(inflate(&mut inflater, &empty).unwrap().is_empty());
            inflater.release();
            assert_eq!(inflater.is_allocated(), !no_context_takeover);
            let mut inflater = Inflater::new(15, no_context_takeover);

            let payload = compress(&mut deflater, &message);
            assert!(deflater.is_allocated());
            deflater.release();
            assert_eq!(deflater.is_allocated(), !no_context_takeover);

            let (a, b) = payload.split_at(payload.len() / 2);
            let mut out = BytesMut::new();
            inflater.inflate(a, false, &mut out, MIB).unwrap();
            assert!(inflater.is_allocated(), "allocated mid-message");
            inflater.inflate(b, true, &mut out, MIB).unwrap();
            assert!(out == message);
            assert!(inflater.is_allocated(), "kept for the rest of a burst");
            inflater.release();
            assert_eq!(inflater.is_allocated(), !no_context_takeover);
        }

        // Stored blocks (level 0, or 8 window bits) never need a compressor.
        for (level, bits) in [(0, 15), (9, 8)] {
            let mut deflater = Deflater::new(level, bits, 8, false);
            let payload = compress(&mut deflater, &message);
            assert!(!deflater.is_allocated());
            assert_stored_only(&payload);
            assert!(inflate(&mut Inflater::new(bits, false), &payload).unwrap() == message);
        }
    }

    #[test]
    fn empty_message() {
        // RFC 7692 section 7.2.3.6: an empty stored block, tail stripped.
        let mut deflater = Deflater::new(6, 15, 8, false);
        let mut inflater = Inflater::new(15, false);
        assert_eq!(compress(&mut deflater, b""), [0x00]);
        assert!(inflate(&mut inflater, &[0x00]).unwrap().is_empty());
        // Between messages that share the window.
        let message = json_like(KIB, 2);
        for _ in 0..2 {
            let payload = compress(&mut deflater, &message);
            assert!(inflate(&mut inflater, &payload).unwrap() == message);
            let empty = compress(&mut deflater, b"");
            assert_eq!(empty, [0x00]);
            assert!(inflate(&mut inflater, &empty).unwrap().is_empty());
        }
        // The fixed-Huffman form other compressors emit (a lone end of block).
        assert!(inflate(&mut inflater, &[0x02, 0x00]).unwrap().is_empty());
        let payload = compress(&mut deflater, &message);
        assert!(inflate(&mut inflater, &payload).unwrap() == message);
    }

    #[test]
    fn rfc7692_examples() {
        const HELLO: &[u8] = &[0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00];
        let mut inflater = Inflater::new(15, false);
        // 7.2.3.1: one frame, then the same message in two fragments.
        assert_eq!(inflate(&mut inflater, HELLO).unwrap(), "Hello");
        let got = inflate_frames(&mut inflater, &[&HELLO[..3], &HELLO[3..]], 100).unwrap();
        assert_eq!(got, "Hello");
        // 7.2.3.2: the second "Hello" refers back to the first.
        let mut inflater = Inflater::new(15, false);
        assert_eq!(inflate(&mut inflater, HELLO).unwrap(), "Hello");
        let shared = [0xf2, 0x00, 0x11, 0x00, 0x00];
        assert_eq!(inflate(&mut inflater, &shared).unwrap(), "Hello");
        // 7.2.3.3: a stored block.
        let stored = [
            0x00, 0x05, 0x00, 0xfa, 0xff, 0x48, 0x65, 0x6c, 0x6c, 0x6f, 0x00,
        ];
        assert_eq!(
            inflate(&mut Inflater::new(15, false), &stored).unwrap(),
            "Hello"
        );
        // 7.2.3.5: two DEFLATE blocks in one message.
        let two = [
            0xf2, 0x48, 0x05, 0x00, 0x00, 0x00, 0xff, 0xff, 0xca, 0xc9, 0xc9, 0x07, 0x00,
        ];
        assert_eq!(
            inflate(&mut Inflater::new(15, false), &two).unwrap(),
            "Hello"
        );
        // Our own output for "Hello" inflates the same way.
        let ours = compress(&mut Deflater::new(1, 15, 8, false), b"Hello");
        assert_eq!(
            inflate(&mut Inflater::new(15, false), &ours).unwrap(),
            "Hello"
        );
    }

    #[test]
    fn rfc7692_bfinal_flush() {
        // 7.2.3.4: "Hello" in a block with BFINAL set, then a 0x00 octet that
        // makes the appended tail an empty stored block of a new stream.
        let bfinal = [0xf3, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x00];
        let sync = [0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00];
        for no_context_takeover in [false, true] {
            let mut inflater = Inflater::new(15, no_context_takeover);
            assert_eq!(inflate(&mut inflater, &bfinal).unwrap(), "Hello");
            // The connection goes on: later messages still inflate.
            assert_eq!(inflate(&mut inflater, &sync).unwrap(), "Hello");
            assert_eq!(inflate(&mut inflater, &bfinal).unwrap(), "Hello");
            // Without the trailing 0x00 the stream simply ends.
            assert_eq!(inflate(&mut inflater, &bfinal[..7]).unwrap(), "Hello");
            assert_eq!(inflate(&mut inflater, &sync).unwrap(), "Hello");
            // Split so the final block ends exactly at a frame boundary.
            let got = inflate_frames(&mut inflater, &[&bfinal[..7], &bfinal[7..]], 100);
            assert_eq!(got.unwrap(), "Hello");
            let got = inflate_frames(&mut inflater, &[&bfinal[..7], &[]], 100);
            assert_eq!(got.unwrap(), "Hello");
            assert_eq!(inflate(&mut inflater, &sync).unwrap(), "Hello");
        }
    }

    /// `message` in one DEFLATE block with BFINAL set.
    fn final_block(message: &[u8]) -> Vec<u8> {
        let mut state = Compress::new_with_window_bits(Compression::new(6), false, 15);
        let mut out = Vec::with_capacity(message.len() + 64);
        let status = state.compress_vec(message, &mut out, FlushCompress::Finish);
        assert_eq!(status.unwrap(), Status::StreamEnd);
        out
    }

    #[test]
    fn a_new_stream_after_a_final_block() {
        // More payload after a final block is a new stream in the same
        // message, which may refer back to the output before it.
        let text = b"context takeover context takeover context takeover".repeat(8);
        let mut payload = final_block(b"Hello");
        let mut next = Compress::new_with_window_bits(Compression::new(6), false, 15);
        next.set_dictionary(b"Hello").unwrap();
        let mut rest = Vec::with_capacity(256);
        next.compress_vec(b", Hello world", &mut rest, FlushCompress::Sync)
            .unwrap();
        assert!(rest.ends_with(&TAIL));
        payload.extend_from_slice(&rest[..rest.len() - TAIL.len()]);
        let mut inflater = Inflater::new(15, false);
        assert_eq!(
            inflate(&mut inflater, &payload).unwrap(),
            "Hello, Hello world"
        );

        // A final block of `text`, then a message made of back-references
        // into it, from a compressor primed with the same window.
        let mut inflater = Inflater::new(15, false);
        let mut first = final_block(&text);
        first.push(0x00);
        let mut primed = Deflater::new(6, 15, 8, false);
        primed.state = Some(Compress::new_with_window_bits(
            Compression::new(6),
            false,
            15,
        ));
        primed
            .state
            .as_mut()
            .unwrap()
            .set_dictionary(&text)
            .unwrap();
        let second = compress(&mut primed, &text);
        assert!(second.len() < 20, "second message: {} bytes", second.len());
        assert!(inflate(&mut inflater, &first).unwrap() == text);
        assert!(inflate(&mut inflater, &second).unwrap() == text);
    }

    #[test]
    fn invalid_data_is_an_error_not_a_panic() {
        let cases: &[&[u8]] = &[
            &[0xff; 16],                     // BTYPE 11 is reserved
            &[0x00, 0x05, 0x00, 0x00, 0x00], // stored LEN/NLEN mismatch
            &[
                0xf3, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0xde, 0xad, 0xbe, 0xef,
            ], // junk after final
            &[0xf5, 0x00, 0x00],             // dynamic block with 287 literal codes
            &[0x02, 0x80, 0xff, 0xff, 0xff], // fixed block, distance before the start
        ];
        for (i, case) in cases.iter().enumerate() {
            let mut inflater = Inflater::new(15, false);
            assert_eq!(
                inflate(&mut inflater, case),
                Err(InflateError::Invalid),
                "case {i}"
            );
            assert!(!inflater.is_allocated(), "state dropped after an error");
            // The inflater starts over: a valid message inflates again.
            let hello = [0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00];
            assert_eq!(inflate(&mut inflater, &hello).unwrap(), "Hello");
        }

        // Junk in a later frame of a message that started well: the first
        // frame ends with the header byte of a stored block, the second
        // has a LEN that does not match its NLEN.
        let payload = compress(&mut Deflater::new(1, 15, 8, false), &json_like(KIB, 9));
        let mut inflater = Inflater::new(15, false);
        let got = inflate_frames(&mut inflater, &[&payload, &[0x01, 0x00, 0x00, 0x00]], MIB);
        assert_eq!(got, Err(InflateError::Invalid));

        // Random bytes and corrupted streams: any outcome but a panic, and
        // never more output than allowed.
        let valid = compress(&mut Deflater::new(6, 15, 8, false), &json_like(2 * KIB, 4));
        let mut next = xorshift(99);
        for i in 0..2000 {
            let input = if i % 2 == 0 {
                let len = (next() % 64) as usize;
                random_bytes(len, next())
            } else {
                let mut corrupt = valid.clone();
                let at = (next() as usize) % corrupt.len();
                corrupt[at] ^= 1 << (next() % 8);
                corrupt
            };
            let bits = 8 + (next() % 8) as u8;
            let mut inflater = Inflater::new(bits, false);
            let mut out = BytesMut::new();
            let _ = inflater.inflate(&input, true, &mut out, 4 * KIB);
            assert!(out.len() <= 4 * KIB + 1);
        }
    }

    #[test]
    fn out_of_range_parameters_do_not_panic() {
        let message = json_like(3 * KIB, 6);
        for (level, bits, mem) in [(100, 0, 0), (1, 255, 255), (u32::MAX, 16, 10), (5, 7, 1)] {
            let mut deflater = Deflater::new(level, bits, mem, false);
            let payload = compress(&mut deflater, &message);
            for inflate_bits in [0, 8, 15, 16, 255] {
                let got = inflate(&mut Inflater::new(inflate_bits.max(bits), false), &payload);
                assert!(
                    got.unwrap() == message,
                    "{level} {bits} {mem} {inflate_bits}"
                );
            }
        }
    }

    #[test]
    fn limit_is_exact_and_counts_earlier_output() {
        let message = json_like(10_000, 8);
        let payload = compress(&mut Deflater::new(6, 15, 8, false), &message);
        let exact = inflate_frames(&mut Inflater::new(15, false), &[&payload], 10_000);
        assert!(exact.unwrap() == message);
        let over = inflate_frames(&mut Inflater::new(15, false), &[&payload], 9_999);
        assert!(matches!(
            over,
            Err(InflateError::TooLarge { max: 9_999, .. })
        ));

        // The limit bounds the whole message, earlier frames included.
        let parts = frames(&payload, 4);
        let over = inflate_frames(&mut Inflater::new(15, false), &parts, 9_999);
        assert!(matches!(
            over,
            Err(InflateError::TooLarge { max: 9_999, .. })
        ));
        let mut out = BytesMut::from(&b"0123456789"[..]);
        let result = Inflater::new(15, false).inflate(&payload, true, &mut out, 10_009);
        assert!(matches!(
            result,
            Err(InflateError::TooLarge { max: 10_009, .. })
        ));
        let mut out = BytesMut::from(&b"0123456789"[..]);
        Inflater::new(15, false)
            .inflate(&payload, true, &mut out, 10_010)
            .unwrap();
        assert!(out[10..] == message[..]);
    }

    /// Compressed zeros: `mib` MiB of them, built without holding them.
    ///
    /// After the first MiB the window holds only zeros, so the compressed
    /// form of the second MiB (sync flushed, hence byte aligned and ending
    /// at a block boundary) inflates to one MiB of zeros wherever it is
    /// repeated after the first: the bomb is the first MiB's output
    /// followed by `mib - 1` copies of the second's.
    fn zeros_bomb(mib: usize) -> Vec<u8> {
        let mut state = Compress::new_with_window_bits(Compression::new(9), false, 15);
        let zeros = vec![0u8; MIB];
        let chunk = |state: &mut Compress| {
            let mut out = Vec::with_capacity(4 * KIB);
            let base = state.total_in();
            loop {
                let done = (state.total_in() - base) as usize;
                state
                    .compress_vec(&zeros[done..], &mut out, FlushCompress::Sync)
                    .unwrap();
                if (state.total_in() - base) as usize == MIB && out.len() < out.capacity() {
                    return out;
                }
                out.reserve(4 * KIB);
            }
        };
        let first = chunk(&mut state);
        let steady = chunk(&mut state);
        let mut bomb = Vec::with_capacity(first.len() + steady.len() * (mib - 1));
        bomb.extend_from_slice(&first);
        for _ in 1..mib {
            bomb.extend_from_slice(&steady);
        }
        assert!(bomb.ends_with(&TAIL));
        bomb.truncate(bomb.len() - TAIL.len());
        bomb
    }

    /// Feeds `bomb` in `frame_len`-byte frames against a 1 MiB limit.
    fn explode(bomb: &[u8], frame_len: usize, mut out: BytesMut) -> (InflateError, BytesMut) {
        let mut inflater = Inflater::new(15, false);
        let parts: Vec<&[u8]> = bomb.chunks(frame_len).collect();
        for (i, part) in parts.iter().enumerate() {
            if let Err(e) = inflater.inflate(part, i + 1 == parts.len(), &mut out, MIB) {
                assert!(!inflater.is_allocated());
                return (e, out);
            }
        }
        panic!("the bomb inflated within the limit");
    }

    fn assert_bounded(error: InflateError, out: &BytesMut) {
        assert!(
            matches!(error, InflateError::TooLarge { max: MIB, size } if size as usize == MIB + 1)
        );
        assert_eq!(out.len(), MIB + 1);
        assert!(
            out.capacity() <= MIB + 64 * KIB,
            "capacity {} past the limit",
            out.capacity()
        );
    }

    #[test]
    fn bomb_64_mib_in_65_kb() {
        let bomb = zeros_bomb(64);
        assert!(
            (60_000..70_000).contains(&bomb.len()),
            "{} bytes",
            bomb.len()
        );
        // It really is 64 MiB of zeros.
        let all = inflate_frames(&mut Inflater::new(15, false), &[&bomb], 64 * MIB).unwrap();
        assert_eq!(all.len(), 64 * MIB);
        assert!(all.iter().all(|&b| b == 0));
        drop(all);

        // One frame, many frames, and into a buffer already bigger than the
        // limit (which must not grow).
        for frame_len in [bomb.len(), 1000, 1] {
            let (error, out) = explode(&bomb, frame_len, BytesMut::new());
            assert_bounded(error, &out);
        }
        let (error, out) = explode(&bomb, bomb.len(), BytesMut::with_capacity(4 * MIB));
        assert!(matches!(error, InflateError::TooLarge { max: MIB, .. }));
        assert_eq!(out.len(), MIB + 1);
        assert_eq!(out.capacity(), 4 * MIB);
    }

    #[test]
    fn bomb_1_gib_in_1_mb() {
        let bomb = zeros_bomb(1024);
        assert!(
            (900_000..1_100_000).contains(&bomb.len()),
            "{} bytes",
            bomb.len()
        );
        for frame_len in [bomb.len(), 64 * KIB] {
            let (error, out) = explode(&bomb, frame_len, BytesMut::new());
            assert_bounded(error, &out);
        }
    }

    /// One byte of `message` per frame, as a stored block: the framing an
    /// attacker picks to make each frame's output tiny.
    fn one_byte_stored_frames(message: &[u8]) -> Vec<Vec<u8>> {
        let mut frames: Vec<Vec<u8>> = message
            .iter()
            .map(|&b| vec![0x00, 0x01, 0x00, 0xfe, 0xff, b])
            .collect();
        // The header byte of the empty stored block the tail completes.
        frames.last_mut().expect("non-empty").push(0x00);
        frames
    }

    #[test]
    fn many_tiny_frames_cost_a_logarithmic_number_of_reallocations() {
        for size in [1, 2, 1000, 64 * KIB, MIB] {
            let message = random_bytes(size, 5);
            let frames = one_byte_stored_frames(&message);
            let mut inflater = Inflater::new(15, false);
            let mut out = BytesMut::new();
            let mut moves = 0;
            for (i, frame) in frames.iter().enumerate() {
                let before = out.as_ptr();
                inflater
                    .inflate(frame, i + 1 == frames.len(), &mut out, 2 * MIB)
                    .unwrap();
                moves += usize::from(out.as_ptr() != before);
            }
            assert!(out == message, "{size}");
            // Each move copies the message so far: doubling keeps the
            // copies linear in total, one move per frame is quadratic.
            let bound = 2 * (usize::BITS - size.leading_zeros()) as usize + 2;
            assert!(moves <= bound, "{size} bytes: {moves} moves, bound {bound}");
            assert!(out.capacity() <= 2 * size.max(MIN_INFLATE_STEP), "{size}");
        }
    }

    #[test]
    fn output_capacity_stays_close_to_the_message() {
        for size in [10, 100, 500, KIB, 4 * KIB, 64 * KIB, 100_000, MIB] {
            let message = json_like(size, 12);
            let payload = compress(&mut Deflater::new(1, 15, 8, false), &message);
            let out = inflate_frames(&mut Inflater::new(15, false), &[&payload], MIB).unwrap();
            assert!(out == message);
            if size <= PROBE {
                assert_eq!(out.capacity(), size, "exact fit");
            } else {
                assert!(
                    out.capacity() < 2 * size,
                    "{size}: capacity {}",
                    out.capacity()
                );
            }
        }
    }
}
