//! [`InFrames`]: turns received bytes into frames, each header checked by
//! the caller before any of its payload is buffered.

use std::ops::Range;

use bytes::{Buf, Bytes, BytesMut};

use crate::codec::read_sizing::{MAX_ADAPTIVE_READ, MAX_READ_STEP};
use crate::error::Error;
use crate::frame::{
    FUSED_CHECK_MAX, FrameHeader, HeaderParse, OpCode, apply_mask, apply_mask_at,
    unmask_and_check_ascii,
};

/// Payloads smaller than this are copied out of the receive buffer rather
/// than split from it. A split payload keeps the whole read allocation
/// (up to 128 KiB between frames) alive for as long as the message is
/// held, so a small one would pin hundreds of times its size; copying a
/// few KiB costs about what sharing does (two atomic reference count
/// updates, and a buffer that cannot be reused in place).
const SHARE_MIN: usize = 64 * 1024;

/// The frame whose header has been read and whose payload is arriving:
/// its header, packed (every connection holds one of these), and how far
/// its payload got.
#[derive(Debug, Clone, Copy)]
pub(super) struct InFrame {
    pub(super) payload_len: u64,
    /// Payload bytes already unmasked in place (and handed to
    /// [`FrameCheck::payload`]).
    unmasked: usize,
    mask: Option<[u8; 4]>,
    /// The opcode's four bits: an [`OpCode`] takes three bytes (it can hold
    /// reserved values, which the parser refuses), and this struct would
    /// grow by a word.
    opcode: u8,
    /// FIN and RSV1-3, as bits 3 to 0.
    flags: u8,
}

impl InFrame {
    fn new(header: &FrameHeader) -> Self {
        let bit = |set: bool, at: u8| u8::from(set) << at;
        Self {
            payload_len: header.payload_len,
            unmasked: 0,
            mask: header.mask,
            opcode: header.opcode.as_u8(),
            flags: bit(header.is_final, 3)
                | bit(header.rsv1, 2)
                | bit(header.rsv2, 1)
                | bit(header.rsv3, 0),
        }
    }

    fn header(&self) -> FrameHeader {
        FrameHeader {
            is_final: self.flags & 8 != 0,
            rsv1: self.flags & 4 != 0,
            rsv2: self.flags & 2 != 0,
            rsv3: self.flags & 1 != 0,
            opcode: OpCode::from(self.opcode),
            mask: self.mask,
            payload_len: self.payload_len,
        }
    }
}

/// Received bytes, and the frame currently being read from them.
///
/// [`next_frame`](InFrames::next_frame) is the one question the protocol
/// layer asks. A frame that is wholly buffered is unmasked in place in one
/// pass; otherwise its header is consumed as soon as it is complete (so the
/// payload always starts at the front of `buf`) and payload bytes are
/// unmasked as they arrive, which lets the protocol layer validate text
/// before the frame is complete. Read sizing is in `read_sizing.rs`.
#[derive(Debug, Default)]
pub(crate) struct InFrames {
    pub(super) buf: BytesMut,
    pub(super) current: Option<InFrame>,
    /// Length of the zeroed space handed out by the last `spare` call.
    pub(super) spare_len: u32,
    /// Adaptive read size: doubles while reads fill what was offered (a
    /// busy stream), halves when they use little of it. 0 until the first
    /// read (then the configured read size).
    pub(super) read_size: u32,
    /// What the last read was offered, to adapt `read_size`.
    pub(super) offered: u32,
    /// The whole size (header and payload) of the last frame that did not
    /// arrive in one read, if it was large: the room reserved before the
    /// next read between frames, so that a stream of large messages reads
    /// each one into place instead of into an ordinary read buffer that
    /// `begin` must then copy to a larger one.
    pub(super) large_frame_room: u32,
}

/// What the protocol layer enforces while a frame arrives.
/// [`InFrames::next_frame`] calls it; the codec itself checks only that a
/// header is well formed.
pub(crate) trait FrameCheck {
    /// A new frame's header, before any of its payload is consumed or room
    /// is reserved for it: the announced length is still only the peer's
    /// claim, so every limit belongs here. Called once per frame.
    ///
    /// # Errors
    ///
    /// The frame must not be received; nothing of it is consumed.
    fn header(&mut self, header: &FrameHeader) -> Result<(), Error>;

    /// Payload bytes of the frame with `header`, unmasked, as they arrive:
    /// each byte once and in order, all of them before the frame is
    /// returned. `ascii`: every byte is known to be ASCII (`false` means
    /// unknown, not "not ASCII").
    ///
    /// # Errors
    ///
    /// The bytes are invalid; the connection is failed without waiting for
    /// the rest of the frame.
    fn payload(&mut self, header: &FrameHeader, bytes: &[u8], ascii: bool) -> Result<(), Error>;
}

/// A frame whose header passed [`FrameCheck::header`] and whose whole
/// payload is buffered, unmasked and passed [`FrameCheck::payload`]; from
/// [`InFrames::next_frame`]. Consume it with [`take`](Frame::take) or
/// [`skip`](Frame::skip) before decoding goes on: its payload was unmasked
/// in place, so it cannot be decoded a second time.
#[derive(Debug)]
#[must_use = "a frame must be taken or skipped before the next one"]
pub(crate) struct Frame<'a> {
    frames: &'a mut InFrames,
    header: FrameHeader,
    /// Where the payload is in the receive buffer.
    payload: Range<usize>,
}

impl Frame<'_> {
    /// The frame's header.
    #[inline]
    pub(crate) fn header(&self) -> FrameHeader {
        self.header
    }

    /// The unmasked payload, in the receive buffer.
    #[inline]
    pub(crate) fn payload(&self) -> &[u8] {
        &self.frames.buf[self.payload.clone()]
    }

    /// Consumes the frame and returns its payload: copied out if it is
    /// small, split from the receive buffer without a copy otherwise.
    // `always`: left to itself the compiler calls it, passing the frame
    // through memory. Inlined, reading small texts through the context
    // takes 730 instructions a message instead of 773 (cachegrind).
    #[inline(always)]
    pub(crate) fn take(self) -> Bytes {
        let payload = self.frames.detach(self.payload);
        self.frames.end_frame();
        payload
    }

    /// Consumes the frame without taking its payload (the caller copied
    /// what it needed from [`payload`](Frame::payload)).
    #[inline]
    pub(crate) fn skip(self) {
        self.frames.buf.advance(self.payload.end);
        self.frames.end_frame();
    }
}

impl InFrames {
    /// Buffered bytes not yet consumed as frames.
    #[inline]
    pub(crate) fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Appends received bytes.
    #[inline]
    pub(crate) fn extend(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// Drops every received byte and the frame in progress, keeping the
    /// buffer's allocation for the next read: input read only to be
    /// thrown away (a lingering close) costs one read buffer, however much
    /// of it arrives.
    pub(crate) fn discard(&mut self) {
        self.buf.clear();
        self.current = None;
        self.large_frame_room = 0;
    }

    /// The next frame, once its whole payload is buffered.
    ///
    /// Tri-state: `Ok(Some(frame))`; `Ok(None)`, more bytes are needed
    /// (payload bytes of a frame in progress were handed to
    /// `check.payload` meanwhile); or an error, from a malformed header or
    /// from `check`, after which the connection is failed.
    ///
    /// A new header goes to `check.header` before anything else: no
    /// payload byte is consumed and no room is reserved for a frame the
    /// protocol refuses. A frame that arrived whole is unmasked in one pass
    /// (checking ASCII on the way for small payloads) and never enters the
    /// frame-in-progress bookkeeping.
    ///
    /// # Errors
    ///
    /// The header is malformed (reserved opcode, bad length), or `check`
    /// failed.
    #[inline]
    pub(crate) fn next_frame<C: FrameCheck>(
        &mut self,
        check: &mut C,
    ) -> Result<Option<Frame<'_>>, Error> {
        let header = match self.current {
            Some(frame) => frame.header(),
            None => {
                let (header, header_len) = match FrameHeader::decode(&self.buf)? {
                    HeaderParse::Partial => return Ok(None),
                    HeaderParse::Complete(header, len) => (header, len),
                };
                check.header(&header)?;
                if let Some((payload, ascii)) = self.unmask_whole(&header, header_len) {
                    self.large_frame_room = 0;
                    check.payload(&header, &self.buf[payload.clone()], ascii)?;
                    return Ok(Some(Frame {
                        frames: self,
                        header,
                        payload,
                    }));
                }
                self.begin(header, header_len);
                header
            }
        };
        let (fresh, complete) = self.unmask_new();
        check.payload(&header, &self.buf[fresh], false)?;
        if !complete {
            return Ok(None);
        }
        Ok(Some(Frame {
            frames: self,
            header,
            payload: 0..header.payload_len as usize,
        }))
    }

    /// Unmasks, in place, the payload of the frame whose `header_len`-byte
    /// header is at the front of the buffer, if the whole frame is
    /// buffered; returns where the payload is and whether it is known to
    /// be ASCII. Nothing is consumed.
    ///
    /// This is the common case for small messages, and one pass: no frame
    /// bookkeeping, and ASCII is checked while unmasking.
    #[inline]
    fn unmask_whole(
        &mut self,
        header: &FrameHeader,
        header_len: usize,
    ) -> Option<(Range<usize>, bool)> {
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
        Some((header_len..end, ascii))
    }

    /// Starts a frame whose payload is still arriving: consumes its
    /// `header_len`-byte header and reserves room for the payload, so a
    /// large payload is read with few reallocations; the reservation is
    /// capped, since the announced length is the peer's claim, not bytes
    /// that arrived.
    fn begin(&mut self, header: FrameHeader, header_len: usize) {
        // `advance` moves the start; `split_to` would create and drop a
        // shared handle.
        self.buf.advance(header_len);
        self.current = Some(InFrame::new(&header));
        let missing = (header.payload_len as usize).saturating_sub(self.buf.len());
        self.buf.reserve(missing.min(MAX_READ_STEP));
        self.large_frame_room = if header.payload_len > MAX_ADAPTIVE_READ as u64 {
            // At most 1 MiB and a header: fits.
            (header_len + (header.payload_len as usize).min(MAX_READ_STEP)) as u32
        } else {
            0
        };
    }

    /// Unmasks the payload bytes of the frame in progress that arrived
    /// since the last call; returns their range in the buffer and whether
    /// the whole payload is now there.
    fn unmask_new(&mut self) -> (Range<usize>, bool) {
        let Some(frame) = self.current.as_mut() else {
            return (0..0, false);
        };
        let len = frame.payload_len as usize;
        let available = self.buf.len().min(len);
        let range = frame.unmasked..available;
        if let Some(mask) = frame.mask {
            apply_mask_at(&mut self.buf[range.clone()], mask, frame.unmasked);
        }
        frame.unmasked = available;
        (range, available == len)
    }

    /// Consumes the buffer up to `payload.end` and returns the payload.
    // `always`: called, it returns the `Bytes` through memory, and reloading
    // it stalled on the store (perf: about 10 ns of a 60 ns small read).
    #[inline(always)]
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

    /// After a frame was consumed: a frame that arrived over several reads
    /// ends here, and the buffer it grew to is given back if drained (a
    /// frame that arrived whole leaves a drained buffer to be reused in
    /// place).
    #[inline]
    fn end_frame(&mut self) {
        if self.current.take().is_some() && self.buf.is_empty() && self.buf.capacity() > 0 {
            self.buf = BytesMut::new();
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::error::ProtocolError;
    use crate::frame::{MAX_HEADER_LEN, OpCode};

    /// A check that accepts every frame.
    pub(in crate::codec) struct AcceptAll;

    impl FrameCheck for AcceptAll {
        fn header(&mut self, _: &FrameHeader) -> Result<(), Error> {
            Ok(())
        }

        fn payload(&mut self, _: &FrameHeader, _: &[u8], _: bool) -> Result<(), Error> {
            Ok(())
        }
    }

    /// A check that records what it was shown, and refuses headers
    /// announcing more than `max` bytes.
    #[derive(Default)]
    struct Recorder {
        max: u64,
        headers: usize,
        payload: Vec<u8>,
        ascii: Vec<bool>,
    }

    impl FrameCheck for Recorder {
        fn header(&mut self, header: &FrameHeader) -> Result<(), Error> {
            self.headers += 1;
            if header.payload_len > self.max {
                return Err(ProtocolError::ControlFrameTooBig.into());
            }
            Ok(())
        }

        fn payload(&mut self, _: &FrameHeader, bytes: &[u8], ascii: bool) -> Result<(), Error> {
            self.payload.extend_from_slice(bytes);
            self.ascii.push(ascii);
            Ok(())
        }
    }

    pub(in crate::codec) fn masked_frame(payload: &[u8], mask: [u8; 4]) -> Vec<u8> {
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

    fn next(frames: &mut InFrames) -> Option<(FrameHeader, Bytes)> {
        let frame = frames.next_frame(&mut AcceptAll).unwrap()?;
        Some((frame.header(), frame.take()))
    }

    #[test]
    fn frames_split_at_every_byte_come_out_whole_and_checked_as_they_arrive() {
        let payload: Vec<u8> = (0..300u32).map(|i| i as u8).collect();
        let wire = masked_frame(&payload, [9, 8, 7, 6]);
        let mut frames = InFrames::default();
        let mut check = Recorder {
            max: 300,
            ..Recorder::default()
        };
        let mut got = None;
        for (i, byte) in wire.iter().enumerate() {
            frames.extend(std::slice::from_ref(byte));
            if let Some(frame) = frames.next_frame(&mut check).unwrap() {
                got = Some((frame.header(), frame.take()));
            }
            // Every payload byte received so far was shown, unmasked.
            let seen = check.payload.len();
            assert_eq!(check.payload[..], payload[..seen]);
            assert_eq!(seen, (i + 1).saturating_sub(wire.len() - payload.len()));
        }
        assert_eq!(check.headers, 1);
        let (header, body) = got.expect("frame completes");
        assert_eq!(header.payload_len, 300);
        assert_eq!(&body[..], &payload[..]);
        assert_eq!(frames.buffered(), 0);
    }

    #[test]
    fn a_refused_header_consumes_and_reserves_nothing() {
        let header = FrameHeader::new(OpCode::Binary, 1 << 40);
        let mut head = [0; MAX_HEADER_LEN];
        let n = header.encode(&mut head);
        let mut frames = InFrames::default();
        frames.extend(&head[..n]);
        frames.extend(b"abc");
        let mut check = Recorder::default();
        assert!(frames.next_frame(&mut check).is_err());
        assert_eq!(frames.buffered(), n + 3);
        assert!(frames.buf.capacity() < 1024);
        assert!(check.payload.is_empty());
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
                while let Some(frame) = next(&mut frames) {
                    got.push(frame);
                }
                frames.extend(&wire[cut..]);
                while let Some(frame) = next(&mut frames) {
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
        let mut check = Recorder {
            max: 100,
            ..Recorder::default()
        };
        for expect_ascii in [true, false] {
            let frame = frames.next_frame(&mut check).unwrap().expect("buffered");
            assert_eq!(check.ascii.pop(), Some(expect_ascii));
            frame.skip();
        }
        assert_eq!(frames.buffered(), 0);
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
        let (_, body) = next(&mut frames).unwrap();
        assert_eq!(body.as_ptr(), ptr);
        assert_eq!(&body[..], &payload[..]);
        assert_eq!(frames.buffered(), 1, "the next frame's first byte stays");
    }

    #[test]
    fn a_frame_that_arrived_in_pieces_gives_its_drained_buffer_back() {
        let wire = masked_frame(&[3; 1000], [1, 2, 3, 4]);
        for take in [true, false] {
            let mut frames = InFrames::default();
            frames.extend(&wire[..10]);
            assert!(frames.next_frame(&mut AcceptAll).unwrap().is_none());
            frames.extend(&wire[10..]);
            let frame = frames.next_frame(&mut AcceptAll).unwrap().expect("whole");
            assert_eq!(frame.payload(), &[3; 1000][..]);
            if take {
                assert_eq!(frame.take().len(), 1000);
            } else {
                frame.skip();
            }
            assert_eq!(frames.buf.capacity(), 0);
            assert!(frames.current.is_none());
        }
    }
}
