//! [`OutBuffer`]: encoded frames waiting for the socket.

use std::collections::VecDeque;
use std::io::IoSlice;

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::frame::{FrameHeader, apply_mask};

/// Payloads at least this large are queued by reference instead of copied
/// (server role only: client payloads must be masked, which means a copy).
const ZERO_COPY_MIN: usize = 32 * 1024;

/// Encoded frames shared between connections (prepared messages) at least
/// this large are queued by reference instead of copied. Below it a copy
/// costs less than the reference count, the queue entry and the extra
/// slice of a vectored write (benches/prepared.rs).
pub(crate) const SHARE_ENCODED_MIN: usize = 1024;

/// An idle, drained buffer keeps its allocation only up to this size, so a
/// connection that once sent a burst does not hold the memory while idle.
const KEEP_WHEN_DRAINED: usize = 64 * 1024;

/// Pending output: frames encoded but not yet accepted by the socket.
///
/// Small frames are encoded back to back into one contiguous `tail`, so a
/// burst of messages leaves in one write. Large unmasked payloads are queued
/// as shared [`Bytes`] chunks between header bytes and written with vectored
/// I/O, never copied. Consuming output ([`Buf::advance`]) moves a cursor; a
/// partial write never shifts the remainder.
#[derive(Debug, Default)]
pub(crate) struct OutBuffer {
    /// Frozen chunks that precede `tail`, oldest first. Boxed, and only
    /// while large payloads are on their way out: small frames never need
    /// it, and an idle connection should not carry its 32 bytes.
    #[expect(
        clippy::box_collection,
        reason = "one pointer instead of a 32-byte VecDeque on every connection"
    )]
    queue: Option<Box<VecDeque<Bytes>>>,
    /// The newest encoded bytes, after everything in `queue`.
    tail: BytesMut,
    len: usize,
}

impl OutBuffer {
    /// Bytes waiting to be written.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is waiting.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends one frame: `header` followed by `payload`, masked with the
    /// header's key if it has one.
    #[inline]
    pub(crate) fn push_frame(&mut self, header: &FrameHeader, payload: Bytes) {
        let payload_len = payload.len();
        let head_len = header.encoded_len();
        self.len += head_len + payload_len;
        match header.mask {
            Some(mask) => {
                self.tail.reserve(head_len + payload_len);
                header.put(&mut self.tail);
                let start = self.tail.len();
                self.tail.put_slice(&payload);
                apply_mask(&mut self.tail[start..], mask);
            }
            None if payload_len >= ZERO_COPY_MIN => {
                header.put(&mut self.tail);
                let head = self.tail.split().freeze();
                let queue = self.queue();
                queue.push_back(head);
                queue.push_back(payload);
            }
            None => {
                self.tail.reserve(head_len + payload_len);
                header.put(&mut self.tail);
                self.tail.put_slice(&payload);
            }
        }
    }

    /// Appends a frame encoded elsewhere and shared between connections:
    /// queued by reference from [`SHARE_ENCODED_MIN`] bytes, copied below.
    #[inline]
    pub(crate) fn push_encoded(&mut self, frame: &Bytes) {
        self.len += frame.len();
        if frame.len() >= SHARE_ENCODED_MIN {
            if !self.tail.is_empty() {
                let before = self.tail.split().freeze();
                self.queue().push_back(before);
            }
            self.queue().push_back(frame.clone());
        } else {
            self.tail.extend_from_slice(frame);
        }
    }

    /// The queue of frozen chunks, created on first use.
    #[inline]
    fn queue(&mut self) -> &mut VecDeque<Bytes> {
        self.queue.get_or_insert_with(Box::default)
    }

    /// The capacity left in the contiguous part (for tests of when the
    /// allocation is given back).
    #[cfg(test)]
    pub(crate) fn tail_capacity(&self) -> usize {
        self.tail.capacity()
    }

    /// Gives back a large allocation once everything was written: call it
    /// where the connection may go idle (after a flush, or waiting for the
    /// peer). Otherwise a drained buffer keeps its allocation, so the rest
    /// of a burst written out in pieces does not grow a new one.
    #[inline]
    pub(crate) fn release_if_drained(&mut self) {
        if self.len != 0 {
            return;
        }
        // Everything queued was written: `advance` emptied the queue.
        self.queue = None;
        // `capacity` excludes what was consumed from the front, so ask
        // whether the whole allocation is above the bound (this also moves
        // the empty view back to its start).
        if self.tail.try_reclaim(KEEP_WHEN_DRAINED + 1) {
            self.tail = BytesMut::new();
        }
    }
}

impl Buf for OutBuffer {
    #[inline]
    fn remaining(&self) -> usize {
        self.len
    }

    #[inline]
    fn chunk(&self) -> &[u8] {
        match self.queue.as_deref().and_then(VecDeque::front) {
            Some(front) => front,
            None => &self.tail,
        }
    }

    fn chunks_vectored<'a>(&'a self, dst: &mut [IoSlice<'a>]) -> usize {
        let chunks = self
            .queue
            .iter()
            .flat_map(|queue| queue.iter())
            .map(|b| &b[..])
            .chain((!self.tail.is_empty()).then_some(&self.tail[..]));
        let mut n = 0;
        for (slot, chunk) in dst.iter_mut().zip(chunks) {
            *slot = IoSlice::new(chunk);
            n += 1;
        }
        n
    }

    fn advance(&mut self, mut cnt: usize) {
        assert!(cnt <= self.len, "advance past the end of the out buffer");
        self.len -= cnt;
        while cnt > 0 {
            match self.queue.as_deref_mut().and_then(VecDeque::front_mut) {
                Some(front) if front.len() <= cnt => {
                    cnt -= front.len();
                    self.queue.as_deref_mut().and_then(VecDeque::pop_front);
                }
                Some(front) => {
                    front.advance(cnt);
                    cnt = 0;
                }
                None => {
                    self.tail.advance(cnt);
                    cnt = 0;
                }
            }
        }
        if self.len == 0 {
            // Empty and unshared, the allocation is reused from its start
            // by the next `reserve`.
            self.tail.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{MAX_HEADER_LEN, OpCode};

    fn drain_in_steps(out: &mut OutBuffer, step: usize) -> Vec<u8> {
        let mut wire = Vec::new();
        while out.has_remaining() {
            let chunk = out.chunk();
            let n = chunk.len().min(step);
            wire.extend_from_slice(&chunk[..n]);
            out.advance(n);
        }
        wire
    }

    #[test]
    fn a_drained_buffer_is_reused_until_released() {
        let mut out = OutBuffer::default();
        let payload = Bytes::from(vec![1u8; 1000]);
        for _ in 0..100 {
            out.push_frame(&FrameHeader::new(OpCode::Binary, 1000), payload.clone());
        }
        let capacity = out.tail.capacity();
        assert!(capacity > KEEP_WHEN_DRAINED);
        out.advance(out.len());
        // Mid-burst: the next frames go into the same allocation.
        let start = out.tail.as_ptr();
        out.push_frame(&FrameHeader::new(OpCode::Binary, 1000), payload.clone());
        assert_eq!(out.tail.as_ptr(), start);
        // Not drained: nothing is released.
        out.release_if_drained();
        assert_eq!(out.tail.as_ptr(), start);
        out.advance(out.len());
        out.release_if_drained();
        assert_eq!(
            out.tail.capacity(),
            0,
            "an idle connection holds no write buffer"
        );
    }

    #[test]
    fn frames_come_out_in_order_whatever_the_write_sizes() {
        let big = Bytes::from(vec![7u8; ZERO_COPY_MIN + 3]);
        let mut expected = Vec::new();
        let mut out = OutBuffer::default();
        for (i, payload) in [
            Bytes::from_static(b"one"),
            big.clone(),
            Bytes::from_static(b"three"),
        ]
        .into_iter()
        .enumerate()
        {
            let header = FrameHeader::new(OpCode::Binary, payload.len() as u64);
            let mut head = [0; MAX_HEADER_LEN];
            let n = header.encode(&mut head);
            expected.extend_from_slice(&head[..n]);
            expected.extend_from_slice(&payload);
            out.push_frame(&header, payload);
            assert_eq!(out.len(), expected.len(), "after frame {i}");
        }
        let mut slices = [IoSlice::new(&[]); 4];
        assert_eq!(out.chunks_vectored(&mut slices), 3);
        for step in [1, 2, 7, 1000, usize::MAX] {
            let mut copy = OutBuffer::default();
            for payload in [
                Bytes::from_static(b"one"),
                big.clone(),
                Bytes::from_static(b"three"),
            ] {
                copy.push_frame(
                    &FrameHeader::new(OpCode::Binary, payload.len() as u64),
                    payload,
                );
            }
            assert_eq!(drain_in_steps(&mut copy, step), expected, "step {step}");
            assert!(copy.is_empty());
        }
    }

    #[test]
    fn large_server_payload_is_not_copied() {
        let big = Bytes::from(vec![1u8; ZERO_COPY_MIN]);
        let mut out = OutBuffer::default();
        out.push_frame(
            &FrameHeader::new(OpCode::Binary, big.len() as u64),
            big.clone(),
        );
        let mut slices = [IoSlice::new(&[]); 4];
        assert_eq!(out.chunks_vectored(&mut slices), 2);
        assert_eq!(slices[1].as_ptr(), big.as_ptr());
    }

    #[test]
    fn an_idle_buffer_holds_no_queue_of_large_payloads() {
        let big = Bytes::from(vec![1u8; ZERO_COPY_MIN]);
        let mut out = OutBuffer::default();
        out.push_frame(&FrameHeader::new(OpCode::Binary, big.len() as u64), big);
        assert!(out.queue.is_some());
        // Partly written: the queue is still needed.
        out.advance(10);
        out.release_if_drained();
        assert!(out.queue.is_some());
        out.advance(out.len());
        out.release_if_drained();
        assert!(out.queue.is_none(), "an idle connection holds no queue");
    }

    #[test]
    fn shared_frames_are_queued_by_reference_and_small_ones_copied() {
        let small = Bytes::from(vec![1u8; SHARE_ENCODED_MIN - 1]);
        let large = Bytes::from(vec![2u8; SHARE_ENCODED_MIN]);
        let mut out = OutBuffer::default();
        out.push_encoded(&small);
        out.push_encoded(&large);
        out.push_encoded(&small);
        let mut slices = [IoSlice::new(&[]); 4];
        assert_eq!(out.chunks_vectored(&mut slices), 3);
        assert_ne!(slices[0].as_ptr(), small.as_ptr());
        assert_eq!(slices[1].as_ptr(), large.as_ptr());
        let expected = [&small[..], &large[..], &small[..]].concat();
        assert_eq!(drain_in_steps(&mut out, 700), expected);
    }

    #[test]
    fn masked_payload_is_masked_in_the_buffer() {
        let mut header = FrameHeader::new(OpCode::Text, 5);
        header.mask = Some([0x37, 0xfa, 0x21, 0x3d]);
        let mut out = OutBuffer::default();
        out.push_frame(&header, Bytes::from_static(b"Hello"));
        assert_eq!(
            out.chunk(),
            &[
                0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58
            ]
        );
    }
}
