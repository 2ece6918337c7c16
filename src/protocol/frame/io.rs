//! tungstenite's `std::io` methods on the core's [`FrameHeader`] and
//! [`Frame`]: reading a header from a `Cursor`, writing a header or a
//! frame to a `Write`. They live here, not in [`crate::frame`], because
//! the core does no I/O.

use std::io::{Cursor, Write};

use crate::error::Result;
use crate::frame::{
    Frame, FrameHeader, HeaderParse, MAX_HEADER_LEN, apply_mask, encoded_header_len,
};

impl FrameHeader {
    /// Parses a header at the cursor's position, moving the cursor past it.
    /// `Ok(None)` (the cursor unmoved) when the input ends inside the
    /// header; otherwise the header and its payload length (also in the
    /// header's `payload_len`). tungstenite's signature; the core's is
    /// [`FrameHeader::decode`].
    ///
    /// # Errors
    ///
    /// [`ProtocolError`](crate::ProtocolError) for a reserved opcode or a
    /// 64-bit length with its top bit set.
    pub fn parse(cursor: &mut Cursor<impl AsRef<[u8]>>) -> Result<Option<(FrameHeader, u64)>> {
        let position = usize::try_from(cursor.position()).unwrap_or(usize::MAX);
        let input = cursor.get_ref().as_ref();
        let rest = input.get(position..).unwrap_or_default();
        match FrameHeader::decode(rest)? {
            HeaderParse::Partial => Ok(None),
            HeaderParse::Complete(header, length) => {
                cursor.set_position((position + length) as u64);
                Ok(Some((header, header.payload_len)))
            }
        }
    }

    /// How many bytes this header takes on the wire before a payload of
    /// `length` bytes (tungstenite's signature; the header's own
    /// `payload_len` is not used).
    #[allow(clippy::len_without_is_empty, reason = "tungstenite's signature")]
    pub fn len(&self, length: u64) -> usize {
        encoded_header_len(length, self.mask.is_some())
    }

    /// Writes this header, for a payload of `length` bytes (not the
    /// header's `payload_len`), to `output`.
    ///
    /// # Errors
    ///
    /// The errors of `output`.
    pub fn format(&self, length: u64, output: &mut impl Write) -> Result<()> {
        let mut bytes = [0u8; MAX_HEADER_LEN];
        let header = FrameHeader {
            payload_len: length,
            ..*self
        };
        let n = header.encode(&mut bytes);
        output.write_all(&bytes[..n])?;
        Ok(())
    }
}

impl Frame {
    /// Writes the frame to `output`, masking the payload if the header has
    /// a mask.
    ///
    /// # Errors
    ///
    /// The errors of `output`.
    pub fn format(self, output: &mut impl Write) -> Result<()> {
        let (header, payload) = self.into_parts();
        header.format(payload.len() as u64, output)?;
        match header.mask {
            Some(mask) => {
                let mut masked = payload.to_vec();
                apply_mask(&mut masked, mask);
                output.write_all(&masked)?;
            }
            None => output.write_all(&payload)?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{Data, OpCode};

    #[test]
    fn headers_round_trip_through_format_and_parse() {
        for (length, mask) in [
            (0u64, None),
            (125, Some([1, 2, 3, 4])),
            (126, None),
            (65_535, Some([9, 9, 9, 9])),
            (65_536, None),
        ] {
            let header = FrameHeader {
                is_final: false,
                rsv1: true,
                opcode: OpCode::Data(Data::Binary),
                mask,
                payload_len: length,
                ..FrameHeader::default()
            };
            let mut wire = Vec::new();
            header.format(length, &mut wire).unwrap();
            assert_eq!(wire.len(), header.len(length));
            wire.push(0xAA); // the payload's first byte stays unread
            let mut cursor = Cursor::new(&wire);
            assert_eq!(
                FrameHeader::parse(&mut cursor).unwrap(),
                Some((header, length))
            );
            assert_eq!(cursor.position() as usize, wire.len() - 1);
            let mut partial = Cursor::new(&wire[..1]);
            assert_eq!(FrameHeader::parse(&mut partial).unwrap(), None);
            assert_eq!(partial.position(), 0);
        }
    }

    #[test]
    fn a_masked_frame_is_written_masked() {
        let mut frame = Frame::message(&b"abcd"[..], OpCode::Data(Data::Text), true);
        frame.header_mut().mask = Some([1, 1, 1, 1]);
        let mut wire = Vec::new();
        frame.format(&mut wire).unwrap();
        assert_eq!(
            wire,
            [
                0x81,
                0x84,
                1,
                1,
                1,
                1,
                b'a' ^ 1,
                b'b' ^ 1,
                b'c' ^ 1,
                b'd' ^ 1
            ]
        );
    }
}
