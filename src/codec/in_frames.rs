//! [`InFrames`]: turns received bytes into frame headers and payloads.

use std::ops::Range;

use bytes::buf::Limit;
use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::error::ProtocolError;
use crate::frame::{
    FUSED_CHECK_MAX, FrameHeader, HeaderParse, apply_mask, apply_mask_at, unmask_and_check_ascii,
};

/// The largest read step, and the most reserved ahead of arriving bytes.
const MAX_READ_STEP: usize = 1 << 20;

/// Payloads smaller than this are copied out of the receive buffer rather
/// than split from it. A split payload keeps the whole read allocation
/// (up to 128 KiB between frames) alive for as long as the message is
/// held, so a small one would pin hundreds of times its size; copying a
/// few KiB costs about what sharing does (two atomic reference count
/// updates, and a buffer that cannot be reused in place).
const SHARE_MIN: usize = 64 * 1024;

/// The largest read a busy stream grows to between frames (what
/// tungstenite reads at once; fewer syscalls for batched small messages).
const MAX_ADAPTIVE_READ: usize = 128 * 1024;

/// The frame whose header has been read and whose payload is arriving.
#[derive(Debug, Clone, Copy)]
struct InFrame {
    header: FrameHeader,
    /// Payload bytes already unmasked in place (and handed to the caller
    /// through [`InFrames::unmask_new`]).
    unmasked: usize,
}

/// Received bytes, and the frame currently being read from them.
///
/// The header is consumed as soon as it is complete, so the payload always
/// starts at the front of `buf`. Payload bytes are unmasked as they arrive,
/// which lets the protocol layer validate text before a frame is complete.
#[derive(Debug, Default)]
pub struct InFrames {
    buf: BytesMut,
    current: Option<InFrame>,
    /// Length of the zeroed space handed out by the last `spare` call.
    spare_len: usize,
    /// Adaptive read size: doubles while reads fill what was offered (a
    /// busy stream), halves when they use little of it. 0 until the first
    /// read (then the configured read size).
    read_size: usize,
    /// What the last read was offered, to adapt `read_size`.
    offered: usize,
}

/// A frame whose header and whole payload are buffered, its payload
/// unmasked in place by [`InFrames::unmask_whole`] and not yet consumed:
/// read it with [`InFrames::whole_payload`], then consume it with
/// [`InFrames::take_whole`] or [`InFrames::skip_whole`].
#[derive(Debug)]
#[must_use = "the frame stays buffered until it is taken or skipped"]
pub struct WholeFrame {
    payload: Range<usize>,
    /// Every payload byte is known to be ASCII (checked while unmasking
    /// small payloads); `false` means unknown, not "not ASCII".
    pub ascii: bool,
}

impl InFrames {
    /// Buffered bytes not yet consumed as frames.
    #[inline]
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Whether a frame has started and not yet finished.
    #[inline]
    pub fn in_frame(&self) -> bool {
        self.current.is_some()
    }

    /// Appends received bytes.
    #[inline]
    pub fn extend(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// Zeroed space at the end of the buffer for one socket read of about
    /// `hint` bytes; pass the count actually read to [`InFrames::commit`]
    /// before anything else touches the buffer.
    pub fn spare(&mut self, hint: usize) -> &mut [u8] {
        // Zeroing costs as much as the read, so offer what reads have been
        // delivering: the adaptive size, which inside a large frame may keep
        // doubling (up to 1 MiB) while reads fill what they are offered.
        // Offering the frame's whole remainder meant zeroing up to a
        // megabyte for every socket read of a few dozen kilobytes, and let
        // a sender that announces much and sends little make us zero it.
        // Not past the frame's end either: bytes read beyond it are copied
        // to a new buffer when the payload is split off.
        let want = match self.large_frame_missing() {
            Some(missing) => self.read_size(hint).min(missing.max(hint)),
            None => self.read_size(hint),
        };
        self.offered = want;
        let len = self.buf.len() - self.spare_len;
        self.buf.truncate(len);
        self.buf.resize(len + want, 0);
        self.spare_len = want;
        &mut self.buf[len..]
    }

    /// Keeps the first `n` bytes of the space given by [`InFrames::spare`]
    /// and drops the rest.
    ///
    /// # Panics
    ///
    /// If `n` is larger than that space.
    pub fn commit(&mut self, n: usize) {
        assert!(
            n <= self.spare_len,
            "committed more bytes than were read into"
        );
        let len = self.buf.len() - self.spare_len + n;
        self.spare_len = 0;
        self.buf.truncate(len);
        self.after_read(n);
    }

    /// The buffer itself, with capacity reserved for the next read and
    /// limited to that read's size, for drivers that read into
    /// uninitialised memory (no zeroing). Only append to it, then call
    /// [`InFrames::appended`].
    pub fn for_read(&mut self, hint: usize) -> Limit<&mut BytesMut> {
        let want = match self.large_frame_missing() {
            // Capacity that is reserved but not written costs no resident
            // memory, so a large frame (its size passed the limits) gets
            // room for the rest of its payload, up to one step.
            Some(missing) => missing.max(hint).min(MAX_READ_STEP),
            None => self.read_size(hint),
        };
        let len = self.buf.len() - self.spare_len;
        self.buf.truncate(len);
        self.spare_len = 0;
        self.buf.reserve(want);
        self.offered = want;
        (&mut self.buf).limit(want)
    }

    /// `n` bytes were appended to the buffer from [`InFrames::for_read`].
    pub fn appended(&mut self, n: usize) {
        self.after_read(n);
    }

    /// For a frame in progress too large for one ordinary read: the payload
    /// bytes still missing. Reads inside such a frame stop at its end (or
    /// read the configured size, if less is missing), since whatever
    /// follows it in the buffer is copied to a new one when the payload is
    /// split off.
    fn large_frame_missing(&self) -> Option<usize> {
        let frame = self.current?;
        let len = frame.header.payload_len as usize;
        (len > MAX_ADAPTIVE_READ).then(|| len.saturating_sub(self.buf.len()))
    }

    fn read_size(&mut self, hint: usize) -> usize {
        if self.read_size == 0 {
            self.read_size = hint;
        }
        let size = self.read_size.max(hint);
        if self.large_frame_missing().is_some() {
            size
        } else {
            // Between frames, batches of small messages gain nothing from
            // reads larger than this.
            size.min(MAX_ADAPTIVE_READ.max(hint))
        }
    }

    /// Adapts the read size and releases an empty buffer: an idle
    /// connection holds no read buffer.
    fn after_read(&mut self, n: usize) {
        // Nothing read (a read that would block, or the end of the stream)
        // says nothing about how busy the stream is.
        if self.offered > 0 && n > 0 {
            if n >= self.offered {
                let cap = if self.large_frame_missing().is_some() {
                    MAX_READ_STEP
                } else {
                    MAX_ADAPTIVE_READ
                };
                self.read_size = (self.read_size * 2).min(cap.max(self.read_size));
            } else if n < self.offered / 4 {
                self.read_size /= 2;
            }
        }
        if self.buf.is_empty() {
            self.buf = BytesMut::new();
        }
    }

    /// The header at the front of the buffer, if it is complete; nothing
    /// is consumed. Only meaningful while no frame is in progress
    /// ([`InFrames::in_frame`] is false).
    ///
    /// # Errors
    ///
    /// A malformed header (reserved opcode, bad length).
    #[inline]
    pub fn peek_header(&self) -> Result<HeaderParse, ProtocolError> {
        FrameHeader::parse(&self.buf)
    }

    /// The header of the frame in progress.
    #[inline]
    pub fn current_header(&self) -> Option<FrameHeader> {
        self.current.map(|frame| frame.header)
    }

    /// Unmasks, in place, the payload of the frame whose `header_len`-byte
    /// header [`peek_header`](InFrames::peek_header) returned, if the whole
    /// frame is buffered. Call it once the header passed every check;
    /// nothing is consumed (`None` leaves everything as it was: then call
    /// [`InFrames::begin`]).
    ///
    /// This is the common case for small messages, and one pass: no frame
    /// bookkeeping, and ASCII is checked while unmasking.
    #[inline]
    pub fn unmask_whole(&mut self, header: &FrameHeader, header_len: usize) -> Option<WholeFrame> {
        let len = header.payload_len as usize;
        let end = header_len.checked_add(len)?;
        if self.buf.len() < end {
            return None;
        }
        let payload = &mut self.buf[header_len..end];
        let ascii = if len <= FUSED_CHECK_MAX {
            unmask_and_check_ascii(payload, header.mask)
        } else {
            if let Some(mask) = header.mask {
                apply_mask(payload, mask);
            }
            false
        };
        Some(WholeFrame {
            payload: header_len..end,
            ascii,
        })
    }

    /// The unmasked payload of `frame`.
    #[inline]
    pub fn whole_payload(&self, frame: &WholeFrame) -> &[u8] {
        &self.buf[frame.payload.clone()]
    }

    /// Consumes `frame` and returns its payload: copied out if it is small,
    /// split from the receive buffer without a copy otherwise.
    #[inline]
    pub fn take_whole(&mut self, frame: WholeFrame) -> Bytes {
        self.detach(frame.payload)
    }

    /// Consumes `frame` without taking its payload (the caller copied what
    /// it needed from [`InFrames::whole_payload`]).
    #[inline]
    pub fn skip_whole(&mut self, frame: WholeFrame) {
        self.buf.advance(frame.payload.end);
    }

    /// Consumes the buffer up to `payload.end` and returns the payload.
    #[inline]
    fn detach(&mut self, payload: Range<usize>) -> Bytes {
        if payload.len() < SHARE_MIN {
            // An allocation of the exact size leaves the receive buffer
            // unshared, so it is reused in place for the next read, and
            // nothing the caller keeps pins it.
            let copy = Bytes::from(Box::<[u8]>::from(&self.buf[payload.clone()]));
            self.buf.advance(payload.end);
            copy
        } else {
            let mut frame = self.buf.split_to(payload.end).freeze();
            // Advancing the frozen handle is a pointer bump; advancing the
            // receive buffer would update its shared bookkeeping too.
            frame.advance(payload.start);
            frame
        }
    }

    /// Starts a frame whose payload is still arriving: consumes its
    /// `header_len`-byte header and reserves room for the payload. Call it
    /// once the header passed every limit, so a large payload is read with
    /// few reallocations; the reservation is capped, since the announced
    /// length is the peer's claim, not bytes that arrived.
    pub fn begin(&mut self, header: FrameHeader, header_len: usize) {
        // `advance` moves the start; `split_to` would create and drop a
        // shared handle.
        self.buf.advance(header_len);
        self.current = Some(InFrame {
            header,
            unmasked: 0,
        });
        let missing = (header.payload_len as usize).saturating_sub(self.buf.len());
        self.buf.reserve(missing.min(MAX_READ_STEP));
    }

    /// Unmasks payload bytes that arrived since the last call and returns
    /// their range in [`InFrames::payload_so_far`].
    pub fn unmask_new(&mut self) -> Range<usize> {
        let Some(frame) = self.current.as_mut() else {
            return 0..0;
        };
        let available = self.buf.len().min(frame.header.payload_len as usize);
        let range = frame.unmasked..available;
        if let Some(mask) = frame.header.mask {
            apply_mask_at(&mut self.buf[range.clone()], mask, frame.unmasked);
        }
        frame.unmasked = available;
        range
    }

    /// The payload bytes of the current frame received so far (unmasked up
    /// to the last [`InFrames::unmask_new`]).
    #[inline]
    pub fn payload_so_far(&self) -> &[u8] {
        let len = self.current.map_or(0, |f| f.unmasked);
        &self.buf[..len]
    }

    /// Gives back a drained buffer: call it where the connection may wait
    /// for the peer, so an idle connection holds no read buffer. While
    /// messages keep arriving, a drained, unshared buffer is reused in place.
    #[inline]
    pub fn release_if_drained(&mut self) {
        if self.buf.is_empty() && self.spare_len == 0 && self.buf.capacity() > 0 {
            self.buf = BytesMut::new();
        }
    }

    /// Takes the current frame if its whole payload has arrived and been
    /// unmasked.
    pub fn take_frame(&mut self) -> Option<(FrameHeader, Bytes)> {
        let frame = self.current?;
        let len = frame.header.payload_len as usize;
        if frame.unmasked < len {
            return None;
        }
        self.current = None;
        let payload = self.detach(0..len);
        if self.buf.is_empty() && self.buf.capacity() > 0 {
            self.buf = BytesMut::new();
        }
        Some((frame.header, payload))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{MAX_HEADER_LEN, OpCode, apply_mask};

    fn masked_frame(payload: &[u8], mask: [u8; 4]) -> Vec<u8> {
        let mut header = FrameHeader::new(OpCode::Binary, payload.len() as u64);
        header.mask = Some(mask);
        let mut head = [0; MAX_HEADER_LEN];
        let n = header.encode(&mut head);
        let mut wire = head[..n].to_vec();
        let mut body = payload.to_vec();
        apply_mask(&mut body, mask);
        wire.extend_from_slice(&body);
        wire
    }

    /// Drives `frames` the way the context does: whole frames in one step,
    /// partial ones incrementally. Returns a finished frame, if any.
    fn step(frames: &mut InFrames) -> Option<(FrameHeader, Bytes)> {
        if !frames.in_frame() {
            let HeaderParse::Complete(header, header_len) = frames.peek_header().unwrap() else {
                return None;
            };
            if let Some(whole) = frames.unmask_whole(&header, header_len) {
                return Some((header, frames.take_whole(whole)));
            }
            frames.begin(header, header_len);
        }
        let range = frames.unmask_new();
        let _ = &frames.payload_so_far()[range];
        frames.take_frame()
    }

    #[test]
    fn frames_split_at_every_byte_come_out_whole() {
        let payload: Vec<u8> = (0..300u32).map(|i| i as u8).collect();
        let wire = masked_frame(&payload, [9, 8, 7, 6]);
        let mut frames = InFrames::default();
        let mut got = None;
        for byte in &wire {
            frames.extend(std::slice::from_ref(byte));
            if frames.in_frame() {
                let range = frames.unmask_new();
                assert_eq!(frames.payload_so_far()[range.clone()], payload[range]);
            }
            if let Some(frame) = step(&mut frames) {
                got = Some(frame);
            }
        }
        let (header, body) = got.expect("frame completes");
        assert_eq!(header.payload_len, 300);
        assert_eq!(&body[..], &payload[..]);
        assert_eq!(frames.buffered(), 0);
    }

    #[test]
    fn whole_frames_come_out_unmasked_at_every_size_and_cut() {
        // Sizes on both sides of the fused small path and the 16-bit length.
        for len in [0, 1, 7, 8, 9, 125, 126, 255, 256, 257, 1000, 70_000] {
            let payload: Vec<u8> = (0..len as u32).map(|i| (i * 31 + 7) as u8).collect();
            let mut wire = masked_frame(&payload, [0xA1, 0x02, 0xF3, 0x44]);
            wire.extend_from_slice(&masked_frame(b"next", [1, 2, 3, 4]));
            // Arriving whole, and arriving in two pieces cut anywhere in
            // the first frame (a few cuts for the big one).
            let cuts: Vec<usize> = if len > 300 {
                vec![1, 2, 5, 100, wire.len() / 2]
            } else {
                (1..=len + 6).collect()
            };
            for cut in std::iter::once(wire.len()).chain(cuts) {
                let mut frames = InFrames::default();
                let mut got = Vec::new();
                frames.extend(&wire[..cut]);
                while let Some(frame) = step(&mut frames) {
                    got.push(frame);
                }
                frames.extend(&wire[cut..]);
                while let Some(frame) = step(&mut frames) {
                    got.push(frame);
                }
                assert_eq!(got.len(), 2, "len {len} cut {cut}");
                assert_eq!(&got[0].1[..], &payload[..], "len {len} cut {cut}");
                assert_eq!(&got[1].1[..], b"next", "len {len} cut {cut}");
                assert_eq!(frames.buffered(), 0);
            }
        }
    }

    #[test]
    fn whole_frame_reports_ascii_only_when_it_is() {
        let mut frames = InFrames::default();
        frames.extend(&masked_frame(b"{\"a\":1}", [5, 6, 7, 8]));
        frames.extend(&masked_frame("caf\u{e9}".as_bytes(), [5, 6, 7, 8]));
        for expect_ascii in [true, false] {
            let HeaderParse::Complete(header, n) = frames.peek_header().unwrap() else {
                panic!("header buffered");
            };
            let whole = frames
                .unmask_whole(&header, n)
                .expect("whole frame buffered");
            assert_eq!(whole.ascii, expect_ascii);
            frames.skip_whole(whole);
        }
    }

    #[test]
    fn read_size_grows_on_full_reads_and_ignores_reads_that_would_block() {
        let mut frames = InFrames::default();
        let offered = frames.for_read(8192).get_ref().capacity();
        assert!(offered >= 8192);
        let data = vec![0x82; frames.offered];
        frames.buf.extend_from_slice(&data);
        frames.appended(data.len());
        assert_eq!(frames.read_size, 16384, "a full read doubles the next one");
        // A poll that found nothing (Pending) is not a short read.
        frames.for_read(8192);
        frames.appended(0);
        assert_eq!(frames.read_size, 16384);
        // A read that used little of what it was offered halves it.
        frames.for_read(8192);
        frames.buf.extend_from_slice(&[0x82]);
        frames.appended(1);
        assert_eq!(frames.read_size, 8192);
    }

    /// Starts a frame announcing `len` bytes, as the context would.
    fn begin_large(frames: &mut InFrames, len: u64) {
        let header = FrameHeader::new(OpCode::Binary, len);
        let mut head = [0; MAX_HEADER_LEN];
        let n = header.encode(&mut head);
        frames.extend(&head[..n]);
        let HeaderParse::Complete(header, header_len) = frames.peek_header().unwrap() else {
            panic!("header buffered");
        };
        assert!(frames.unmask_whole(&header, header_len).is_none());
        frames.begin(header, header_len);
    }

    #[test]
    fn zeroed_reads_in_a_large_frame_grow_with_delivery_and_stop_at_its_end() {
        let hint = 8192;
        let len = 3 * MAX_READ_STEP + 5;
        let mut frames = InFrames::default();
        begin_large(&mut frames, len as u64);
        // The first offer is an ordinary read, whatever the peer announced.
        assert!(frames.spare(hint).len() <= MAX_ADAPTIVE_READ);
        frames.commit(0);
        let mut received = 0;
        let mut largest = 0;
        while received < len {
            let missing = len - received;
            let space = frames.spare(hint);
            assert!(
                space.len() <= missing.max(hint),
                "{} > {missing}",
                space.len()
            );
            assert!(space.len() <= MAX_READ_STEP);
            largest = largest.max(space.len());
            // A stream that delivers everything it is offered.
            let n = space.len().min(missing);
            frames.commit(n);
            received += n;
            let _ = frames.unmask_new();
        }
        assert_eq!(
            largest, MAX_READ_STEP,
            "full reads grow to the largest step"
        );
        let (_, payload) = frames.take_frame().expect("complete");
        assert_eq!(payload.len(), len);
    }

    #[test]
    fn uninitialised_reads_in_a_large_frame_stop_at_its_end() {
        let hint = 8192;
        let len = MAX_READ_STEP + 300_000;
        let mut frames = InFrames::default();
        begin_large(&mut frames, len as u64);
        let first = frames.for_read(hint).remaining_mut();
        assert_eq!(first, MAX_READ_STEP);
        let mut buf = frames.for_read(hint);
        buf.put_bytes(0, MAX_READ_STEP);
        frames.appended(MAX_READ_STEP);
        let missing = len - MAX_READ_STEP;
        assert_eq!(frames.for_read(hint).remaining_mut(), missing);
    }

    #[test]
    fn larger_payload_is_split_without_copy() {
        let payload = vec![7u8; SHARE_MIN];
        let mut header = FrameHeader::new(OpCode::Binary, payload.len() as u64);
        header.mask = None;
        let mut head = [0; MAX_HEADER_LEN];
        let n = header.encode(&mut head);
        let mut frames = InFrames::default();
        frames.extend(&head[..n]);
        frames.extend(&payload);
        frames.extend(&[0x82]);
        let ptr = frames.buf[n..].as_ptr();
        let (_, body) = step(&mut frames).unwrap();
        assert_eq!(body.as_ptr(), ptr);
        assert_eq!(&body[..], &payload[..]);
        assert_eq!(frames.buffered(), 1, "the next frame's first byte stays");
    }

    #[test]
    fn small_payloads_are_copied_so_the_buffer_is_reused_in_place() {
        let mut frames = InFrames::default();
        let mut wire = Vec::new();
        for i in 0..10u8 {
            wire.extend_from_slice(&masked_frame(&[i; 100], [i, 1, 2, 3]));
        }
        let start = frames.for_read(64 * 1024).get_ref().as_ptr();
        frames.buf.extend_from_slice(&wire);
        frames.appended(wire.len());
        let mut kept = Vec::new();
        while let Some((_, body)) = step(&mut frames) {
            kept.push(body);
        }
        assert_eq!(kept.len(), 10);
        assert!(
            kept.iter()
                .enumerate()
                .all(|(i, b)| b[..] == [i as u8; 100])
        );
        // The messages are still held, yet the drained buffer is unshared:
        // the next read goes into the same allocation.
        assert_eq!(frames.for_read(64 * 1024).get_ref().as_ptr(), start);
        // Waiting for the peer gives it back.
        frames.appended(0);
        frames.release_if_drained();
        assert_eq!(frames.buf.capacity(), 0);
    }
}
