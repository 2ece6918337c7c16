//! [`Fragments`]: a data message arriving in several frames.

use bytes::{Bytes, BytesMut};

use crate::frame::OpCode;

/// The smallest allocation for a message in assembly, so that a message
/// of many tiny fragments does not reallocate at every one.
const MIN_CAPACITY: usize = 64;

/// The frames of one fragmented message so far.
///
/// Each fragment's payload is copied into one contiguous buffer as it
/// arrives, so a message in assembly costs its bytes and nothing per
/// fragment: no handle or allocation per part, and no part pins the
/// receive buffer it was read into. The buffer at least doubles when it
/// grows (never past the message size limit), so the copies add up to
/// O(message) whatever the fragmentation, and the last fragment, whose
/// size completes the message, gets an exact fit.
///
/// For a compressed message the frames are counted here and the inflated
/// bytes kept by the context.
#[derive(Debug)]
pub(crate) struct Fragments {
    opcode: OpCode,
    data: BytesMut,
    frames: usize,
}

impl Fragments {
    /// Starts a `Text` or `Binary` message with its first frame.
    pub(crate) fn new(opcode: OpCode) -> Self {
        Self {
            opcode,
            data: BytesMut::new(),
            frames: 1,
        }
    }

    /// The opcode of the first frame.
    pub(crate) fn opcode(&self) -> OpCode {
        self.opcode
    }

    /// Payload bytes so far.
    pub(crate) fn len(&self) -> usize {
        self.data.len()
    }

    /// Frames so far, the first one included.
    pub(crate) fn frames(&self) -> usize {
        self.frames
    }

    /// Counts the header of one more continuation frame.
    pub(crate) fn count_frame(&mut self) {
        self.frames += 1;
    }

    /// Appends a frame's payload. `fin`: it is the last one. `max`: the
    /// most the message may hold (checked by the caller), which growth
    /// never reserves beyond.
    pub(crate) fn push(&mut self, payload: &[u8], fin: bool, max: usize) {
        let needed = self.data.len() + payload.len();
        if needed > self.data.capacity() {
            let capacity = if fin {
                needed
            } else {
                (2 * self.data.capacity())
                    .max(MIN_CAPACITY)
                    .min(max)
                    .max(needed)
            };
            // `BytesMut::reserve` may double past `max`; this sizes the
            // allocation exactly.
            let mut grown = BytesMut::with_capacity(capacity);
            grown.extend_from_slice(&self.data);
            self.data = grown;
        }
        self.data.extend_from_slice(payload);
    }

    /// The whole payload.
    pub(crate) fn finish(self) -> Bytes {
        self.data.freeze()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_parts_in_order() {
        let mut f = Fragments::new(OpCode::Binary);
        f.push(b"ab", false, usize::MAX);
        f.count_frame();
        f.push(b"", false, usize::MAX);
        f.count_frame();
        f.push(b"cde", true, usize::MAX);
        assert_eq!((f.len(), f.frames()), (5, 3));
        assert_eq!(&f.finish()[..], b"abcde");
        assert!(Fragments::new(OpCode::Text).finish().is_empty());
    }

    #[test]
    fn growth_is_geometric_bounded_by_the_limit_and_exact_at_the_end() {
        let max = 100_000;
        let mut f = Fragments::new(OpCode::Binary);
        let mut moves = 0;
        for _ in 0..max - 1 {
            let before = f.data.as_ptr();
            f.push(b"x", false, max);
            moves += usize::from(f.data.as_ptr() != before);
            assert!(f.data.capacity() <= max);
        }
        assert!(
            moves <= 20,
            "{moves} reallocations for {max} one-byte parts"
        );
        f.push(b"y", true, max);
        assert_eq!(f.data.capacity(), max);

        // Two fragments: the second one's size completes an exact fit.
        let mut f = Fragments::new(OpCode::Binary);
        f.push(&[1; 1000], false, usize::MAX);
        f.push(&[2; 3000], true, usize::MAX);
        assert_eq!(f.data.capacity(), 4000);
    }
}
