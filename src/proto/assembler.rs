//! [`Fragments`]: a data message arriving in several frames.

use bytes::{Bytes, BytesMut};

use crate::frame::OpCode;

/// The frames of one fragmented message so far.
///
/// Payloads are kept as the `Bytes` split from the read buffer and joined
/// once, when the last frame arrives: one allocation of the exact size and
/// one copy, instead of a buffer that reallocates (and faults in fresh
/// pages) as it doubles.
#[derive(Debug)]
pub(crate) struct Fragments {
    opcode: OpCode,
    parts: Vec<Bytes>,
    len: usize,
}

impl Fragments {
    /// Starts a `Text` or `Binary` message.
    pub(crate) fn new(opcode: OpCode) -> Self {
        Self {
            opcode,
            parts: Vec::new(),
            len: 0,
        }
    }

    /// The opcode of the first frame.
    pub(crate) fn opcode(&self) -> OpCode {
        self.opcode
    }

    /// Payload bytes so far.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Appends the next frame's payload.
    pub(crate) fn push(&mut self, payload: Bytes) {
        if !payload.is_empty() {
            self.len += payload.len();
            self.parts.push(payload);
        }
    }

    /// The whole payload; a single non-empty fragment is returned without
    /// copying.
    pub(crate) fn finish(mut self) -> Bytes {
        match self.parts.len() {
            0 => Bytes::new(),
            1 => self.parts.pop().expect("one part"),
            _ => {
                let mut whole = BytesMut::with_capacity(self.len);
                for part in &self.parts {
                    whole.extend_from_slice(part);
                }
                whole.freeze()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_parts_in_order_and_skips_copies_when_it_can() {
        let mut f = Fragments::new(OpCode::Binary);
        f.push(Bytes::from_static(b"ab"));
        f.push(Bytes::new());
        f.push(Bytes::from_static(b"cde"));
        assert_eq!(f.len(), 5);
        assert_eq!(&f.finish()[..], b"abcde");

        let only = Bytes::from(vec![1, 2, 3]);
        let mut f = Fragments::new(OpCode::Text);
        f.push(Bytes::new());
        f.push(only.clone());
        assert_eq!(f.finish().as_ptr(), only.as_ptr());
        assert!(Fragments::new(OpCode::Text).finish().is_empty());
    }
}
