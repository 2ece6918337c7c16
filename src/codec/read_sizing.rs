//! How much [`InFrames`] offers each socket read, and giving back a
//! drained buffer.

use bytes::buf::Limit;
use bytes::{BufMut, BytesMut};

use crate::codec::in_frames::InFrames;

/// The largest read step, and the most reserved ahead of arriving bytes.
pub(super) const MAX_READ_STEP: usize = 1 << 20;

/// The configured read size is taken up to this (the sizes are kept as
/// `u32`: every connection holds them).
const MAX_HINT: usize = 1 << 30;

/// The largest read a busy stream grows to between frames (what
/// tungstenite reads at once; fewer syscalls for batched small messages).
pub(super) const MAX_ADAPTIVE_READ: usize = 128 * 1024;

impl InFrames {
    /// Zeroed space at the end of the buffer for one socket read of about
    /// `hint` bytes; pass the count actually read to [`InFrames::commit`]
    /// before anything else touches the buffer.
    pub(crate) fn spare(&mut self, hint: usize) -> &mut [u8] {
        // Zeroing costs as much as the read, so offer what reads have been
        // delivering: the adaptive size, which inside a large frame may keep
        // doubling (up to 1 MiB) while reads fill what they are offered.
        // Offering the frame's whole remainder meant zeroing up to a
        // megabyte for every socket read of a few dozen kilobytes, and let
        // a sender that announces much and sends little make us zero it.
        // Not past the frame's end either: bytes read beyond it are copied
        // to a new buffer when the payload is split off.
        let hint = hint.min(MAX_HINT);
        let want = match self.large_frame_missing() {
            Some(missing) => self.read_size(hint).min(missing.max(hint)),
            None => self.read_size(hint),
        };
        self.offered = want as u32;
        let len = self.buf.len() - self.spare_len as usize;
        self.buf.truncate(len);
        self.reserve_for_read(want);
        self.buf.resize(len + want, 0);
        self.spare_len = want as u32;
        &mut self.buf[len..]
    }

    /// Keeps the first `n` bytes of the space given by [`InFrames::spare`]
    /// and drops the rest.
    ///
    /// # Panics
    ///
    /// If `n` is larger than that space.
    pub(crate) fn commit(&mut self, n: usize) {
        assert!(
            n <= self.spare_len as usize,
            "committed more bytes than were read into"
        );
        let len = self.buf.len() - self.spare_len as usize + n;
        self.spare_len = 0;
        self.buf.truncate(len);
        self.after_read(n);
    }

    /// The buffer itself, with capacity reserved for the next read and
    /// limited to that read's size, for drivers that read into
    /// uninitialised memory (no zeroing). Only append to it, then call
    /// [`InFrames::appended`].
    pub(crate) fn for_read(&mut self, hint: usize) -> Limit<&mut BytesMut> {
        let hint = hint.min(MAX_HINT);
        let want = match self.large_frame_missing() {
            // Capacity that is reserved but not written costs no resident
            // memory, so a large frame (its size passed the limits) gets
            // room for the rest of its payload, up to one step.
            Some(missing) => missing.max(hint).min(MAX_READ_STEP),
            None => self.read_size(hint),
        };
        let len = self.buf.len() - self.spare_len as usize;
        self.buf.truncate(len);
        self.spare_len = 0;
        self.reserve_for_read(want);
        self.offered = want as u32;
        (&mut self.buf).limit(want)
    }

    /// Room for a read of `want` bytes; between frames, after a large
    /// frame, room for another as large (reserved, not touched: it costs
    /// no resident memory until read into), so that its payload is read in
    /// place rather than copied out of an ordinary read buffer once its
    /// header shows its size.
    fn reserve_for_read(&mut self, want: usize) {
        let room = if self.current.is_none() {
            (self.large_frame_room as usize).saturating_sub(self.buf.len())
        } else {
            0
        };
        self.buf.reserve(want.max(room));
    }

    /// The room [`InFrames::for_read`] makes, split off the buffer to be
    /// lent to a read that owns its buffer until it completes: empty, its
    /// limit the read's size. Give it back with [`InFrames::returned`].
    pub(crate) fn lend(&mut self, hint: usize) -> Limit<BytesMut> {
        let want = Limit::limit(&self.for_read(hint));
        let len = self.buf.len();
        self.buf.split_off(len).limit(want)
    }

    /// The buffer [`InFrames::lend`] gave, with what was read into it:
    /// joined back in place when nothing moved the buffer meanwhile,
    /// copied otherwise.
    pub(crate) fn returned(&mut self, read: BytesMut) {
        let n = read.len();
        self.buf.unsplit(read);
        self.after_read(n);
    }

    /// `n` bytes were appended to the buffer from [`InFrames::for_read`].
    pub(crate) fn appended(&mut self, n: usize) {
        self.after_read(n);
    }

    /// For a frame in progress too large for one ordinary read: the payload
    /// bytes still missing. Reads inside such a frame stop at its end (or
    /// read the configured size, if less is missing), since whatever
    /// follows it in the buffer is copied to a new one when the payload is
    /// split off.
    fn large_frame_missing(&self) -> Option<usize> {
        let len = self.current?.payload_len as usize;
        (len > MAX_ADAPTIVE_READ).then(|| len.saturating_sub(self.buf.len()))
    }

    fn read_size(&mut self, hint: usize) -> usize {
        if self.read_size == 0 {
            self.read_size = hint as u32;
        }
        let size = (self.read_size as usize).max(hint);
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
        let offered = self.offered as usize;
        if offered > 0 && n > 0 {
            let read_size = self.read_size as usize;
            if n >= offered {
                let cap = if self.large_frame_missing().is_some() {
                    MAX_READ_STEP
                } else {
                    MAX_ADAPTIVE_READ
                };
                // At most the larger of 1 MiB and the hint: fits.
                self.read_size = (read_size * 2).min(cap.max(read_size)) as u32;
            } else if n < offered / 4 {
                self.read_size /= 2;
            }
        }
        if self.buf.is_empty() {
            self.buf = BytesMut::new();
        }
    }

    /// Gives back a drained buffer: call it where the connection may wait
    /// for the peer, so an idle connection holds no read buffer. While
    /// messages keep arriving, a drained, unshared buffer is reused in place.
    #[inline]
    pub(crate) fn release_if_drained(&mut self) {
        if self.buf.is_empty() && self.spare_len == 0 && self.buf.capacity() > 0 {
            self.buf = BytesMut::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::in_frames::tests::{AcceptAll, masked_frame};
    use crate::frame::{FrameHeader, MAX_HEADER_LEN, OpCode};

    #[test]
    fn read_size_grows_on_full_reads_and_ignores_reads_that_would_block() {
        let mut frames = InFrames::default();
        let offered = frames.for_read(8192).get_ref().capacity();
        assert!(offered >= 8192);
        let data = vec![0x82; frames.offered as usize];
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

    #[test]
    fn a_lent_read_buffer_joins_the_input_in_place_and_survives_the_input_moving() {
        let mut frames = InFrames::default();
        frames.extend(&[0x82, 0x02]);
        let lent = frames.lend(8192);
        assert_eq!(lent.get_ref().len(), 0);
        assert!(lent.get_ref().capacity() >= Limit::limit(&lent));
        let mut read = lent.into_inner();
        let at = read.as_ptr();
        read.extend_from_slice(&[1, 2]);
        frames.returned(read);
        assert_eq!(&frames.buf[..], &[0x82, 0x02, 1, 2]);
        assert_eq!(
            frames.buf[2..].as_ptr(),
            at,
            "joined where it was read: no copy"
        );
        // The input reallocated while a read was in flight: its bytes are
        // copied behind, in order.
        let mut read = frames.lend(8192).into_inner();
        frames.buf.reserve(1 << 20);
        read.extend_from_slice(&[3]);
        frames.returned(read);
        assert_eq!(&frames.buf[..], &[0x82, 0x02, 1, 2, 3]);
    }

    /// Starts a frame announcing `len` bytes, as the context would.
    fn begin_large(frames: &mut InFrames, len: u64) {
        let header = FrameHeader::new(OpCode::Binary, len);
        let mut head = [0; MAX_HEADER_LEN];
        let n = header.encode(&mut head);
        frames.extend(&head[..n]);
        assert!(frames.next_frame(&mut AcceptAll).unwrap().is_none());
        assert_eq!(frames.buffered(), 0, "the header is consumed");
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
        let mut payload = None;
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
            if let Some(frame) = frames.next_frame(&mut AcceptAll).unwrap() {
                payload = Some(frame.take());
            }
        }
        assert_eq!(
            largest, MAX_READ_STEP,
            "full reads grow to the largest step"
        );
        assert_eq!(payload.expect("complete").len(), len);
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

    /// Feeds `wire` through `for_read`, as a stream that fills every read,
    /// and returns each frame's payload with the address the frame's first
    /// read landed at.
    fn read_through(frames: &mut InFrames, wire: &[u8]) -> Vec<(bytes::Bytes, usize)> {
        let mut out = Vec::new();
        let mut at = 0;
        let mut first_read = None;
        while at < wire.len() {
            let mut buf = frames.for_read(8192);
            let n = buf.remaining_mut().min(wire.len() - at);
            let start = buf.get_ref().as_ptr() as usize + buf.get_ref().len();
            first_read.get_or_insert(start);
            buf.put_slice(&wire[at..at + n]);
            frames.appended(n);
            at += n;
            while let Some(frame) = frames.next_frame(&mut AcceptAll).unwrap() {
                out.push((frame.take(), first_read.take().expect("read")));
            }
        }
        out
    }

    #[test]
    fn after_a_large_frame_the_next_one_is_read_in_place() {
        let len = 4 * MAX_ADAPTIVE_READ;
        let mut wire = Vec::new();
        let mut head = [0; MAX_HEADER_LEN];
        let header_len = FrameHeader::new(OpCode::Binary, len as u64).encode(&mut head);
        for i in 0..3u8 {
            wire.extend_from_slice(&head[..header_len]);
            wire.extend(std::iter::repeat_n(i, len));
        }
        let mut frames = InFrames::default();
        let payloads = read_through(&mut frames, &wire);
        assert_eq!(payloads.len(), 3);
        for (i, (payload, first_read)) in payloads.iter().enumerate() {
            assert_eq!(payload.len(), len);
            assert!(payload.iter().all(|&b| b == i as u8));
            if i > 0 {
                // The payload is where its first read put it, after the
                // header: nothing was copied once the header showed its size.
                assert_eq!(payload.as_ptr() as usize, first_read + header_len);
            }
        }
        // A small frame ends the reservation.
        let small = FrameHeader::new(OpCode::Binary, 10);
        let mut head = [0; MAX_HEADER_LEN];
        let n = small.encode(&mut head);
        let mut wire = head[..n].to_vec();
        wire.extend_from_slice(&[7; 10]);
        read_through(&mut frames, &wire);
        assert!(frames.for_read(8192).get_ref().capacity() < len);
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
        while let Some(frame) = frames.next_frame(&mut AcceptAll).unwrap() {
            kept.push(frame.take());
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
