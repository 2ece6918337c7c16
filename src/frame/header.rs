//! Frame headers (RFC 6455 section 5.2): parsing and encoding.

use crate::error::{Detail, Error, ProtocolError};
use crate::frame::OpCode;

/// The longest header: 2 fixed bytes, 8 bytes of length, 4 bytes of mask.
pub const MAX_HEADER_LEN: usize = 14;

/// The largest control frame payload (RFC 6455 section 5.5).
pub(crate) const MAX_CONTROL_PAYLOAD: usize = 125;

/// The fixed part of a frame, everything before the payload.
///
/// The one frame header: the read path parses into it, the send path
/// encodes from it, and raw frames ([`Frame`](crate::frame::Frame)) carry
/// it. Its fields are tungstenite's (`is_final`, `rsv1`-`rsv3`, `opcode`,
/// `mask`) plus the payload length, which tungstenite kept beside the
/// header; tungstenite's `parse`, `len` and `format` methods, which read
/// and write through `std::io`, are added by the compatibility skin, since
/// the core does no I/O.
///
/// ```text
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-+-+-+-+-------+-+-------------+-------------------------------+
/// |F|R|R|R| opcode|M| Payload len |    Extended payload length    |
/// |I|S|S|S|  (4)  |A|     (7)     |             (16/64)           |
/// |N|V|V|V|       |S|             |   (if payload len==126/127)   |
/// | |1|2|3|       |K|             |                               |
/// +-+-+-+-+-------+-+-------------+ - - - - - - - - - - - - - - - +
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// Whether this is the last frame of its message (FIN).
    pub is_final: bool,
    /// Reserved bit 1 (permessage-deflate marks compressed messages with it).
    pub rsv1: bool,
    /// Reserved bit 2.
    pub rsv2: bool,
    /// Reserved bit 3.
    pub rsv3: bool,
    /// What the payload means.
    pub opcode: OpCode,
    /// The masking key; frames from clients carry one, frames from servers
    /// do not.
    pub mask: Option<[u8; 4]>,
    /// The payload length in bytes.
    pub payload_len: u64,
}

/// The outcome of [`FrameHeader::decode`] when the input is not (yet) wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum HeaderParse {
    /// A whole header: the header and how many bytes it took.
    Complete(FrameHeader, usize),
    /// The input ends inside the header; nothing was consumed.
    Partial,
}

/// A final, unmasked close header with an empty payload: tungstenite's
/// default, a base for `FrameHeader { opcode, ..Default::default() }`.
impl Default for FrameHeader {
    fn default() -> Self {
        Self::new(OpCode::Close, 0)
    }
}

impl FrameHeader {
    /// A final, unmasked header with no reserved bits.
    pub fn new(opcode: OpCode, payload_len: u64) -> Self {
        Self {
            is_final: true,
            rsv1: false,
            rsv2: false,
            rsv3: false,
            opcode,
            mask: None,
            payload_len,
        }
    }

    /// Parses a header from the start of `input` without consuming anything
    /// or allocating.
    ///
    /// # Errors
    ///
    /// A reserved opcode, or a 64-bit length with its most significant bit
    /// set (RFC 6455: "the most significant bit MUST be 0").
    #[inline]
    pub fn decode(input: &[u8]) -> Result<HeaderParse, Error> {
        let Some(&first) = input.first() else {
            return Ok(HeaderParse::Partial);
        };
        // Checked on the first byte so a bad frame fails without waiting.
        let opcode = OpCode::from_u8(first & 0x0F)
            .ok_or_else(|| ProtocolError::reserved_opcode(first & 0x0F))?;
        let Some(&second) = input.get(1) else {
            return Ok(HeaderParse::Partial);
        };
        let masked = second & 0x80 != 0;
        let (length_bytes, short_len) = match second & 0x7F {
            126 => (2, None),
            127 => (8, None),
            n => (0, Some(u64::from(n))),
        };
        let header_len = 2 + length_bytes + if masked { 4 } else { 0 };
        if input.len() < header_len {
            return Ok(HeaderParse::Partial);
        }
        let payload_len = match short_len {
            Some(n) => n,
            None if length_bytes == 2 => u64::from(u16::from_be_bytes([input[2], input[3]])),
            None => {
                let len = u64::from_be_bytes(input[2..10].try_into().expect("8 length bytes"));
                if len >> 63 != 0 {
                    return Err(Detail::InvalidPayloadLength.into());
                }
                len
            }
        };
        // One bounds check and one load, not four of each (a masked
        // header is on every frame a server reads).
        let mask = masked.then(|| {
            let at = 2 + length_bytes;
            <[u8; 4]>::try_from(&input[at..at + 4]).expect("4 mask bytes")
        });
        let header = FrameHeader {
            is_final: first & 0x80 != 0,
            rsv1: first & 0x40 != 0,
            rsv2: first & 0x20 != 0,
            rsv3: first & 0x10 != 0,
            opcode,
            mask,
            payload_len,
        };
        Ok(HeaderParse::Complete(header, header_len))
    }

    /// How many bytes [`FrameHeader::encode`] writes.
    #[inline]
    pub fn encoded_len(&self) -> usize {
        encoded_header_len(self.payload_len, self.mask.is_some())
    }

    /// The first byte on the wire: the flags and the opcode.
    #[inline]
    fn first_byte(&self) -> u8 {
        u8::from(self.is_final) << 7
            | u8::from(self.rsv1) << 6
            | u8::from(self.rsv2) << 5
            | u8::from(self.rsv3) << 4
            | self.opcode.as_u8()
    }

    /// Appends the header to `out`, as [`FrameHeader::encode`] would
    /// write it. Every store has a size known at compile time, so encoding
    /// a header on the send path is a few register moves, not a copy of a
    /// variable-length scratch array.
    #[inline(always)]
    pub(crate) fn put(&self, out: &mut bytes::BytesMut) {
        use bytes::BufMut;
        let first = self.first_byte();
        let mask_bit = if self.mask.is_some() { 0x80 } else { 0 };
        match self.payload_len {
            n @ 0..=125 => out.put_u16(u16::from_be_bytes([first, mask_bit | n as u8])),
            n @ 126..=0xFFFF => {
                let [hi, lo] = (n as u16).to_be_bytes();
                out.put_u32(u32::from_be_bytes([first, mask_bit | 126, hi, lo]));
            }
            n => {
                out.put_u16(u16::from_be_bytes([first, mask_bit | 127]));
                out.put_u64(n);
            }
        }
        if let Some(mask) = self.mask {
            out.put_u32(u32::from_be_bytes(mask));
        }
    }

    /// Writes the header into `out` using the shortest length form, and
    /// returns how many bytes it used.
    #[inline]
    pub fn encode(&self, out: &mut [u8; MAX_HEADER_LEN]) -> usize {
        out[0] = self.first_byte();
        let mask_bit = if self.mask.is_some() { 0x80 } else { 0 };
        let mut len = 2;
        match self.payload_len {
            n @ 0..=125 => out[1] = mask_bit | n as u8,
            n @ 126..=0xFFFF => {
                out[1] = mask_bit | 126;
                out[2..4].copy_from_slice(&(n as u16).to_be_bytes());
                len = 4;
            }
            n => {
                out[1] = mask_bit | 127;
                out[2..10].copy_from_slice(&n.to_be_bytes());
                len = 10;
            }
        }
        if let Some(mask) = self.mask {
            out[len..len + 4].copy_from_slice(&mask);
            len += 4;
        }
        len
    }
}

/// The header length for a payload of `payload_len` bytes.
#[inline]
pub const fn encoded_header_len(payload_len: u64, masked: bool) -> usize {
    let base = match payload_len {
        0..=125 => 2,
        126..=0xFFFF => 4,
        _ => 10,
    };
    if masked { base + 4 } else { base }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(header: FrameHeader) {
        let mut buf = [0u8; MAX_HEADER_LEN];
        let n = header.encode(&mut buf);
        assert_eq!(n, header.encoded_len());
        assert_eq!(
            FrameHeader::decode(&buf[..n]).ok(),
            Some(HeaderParse::Complete(header, n))
        );
        for cut in 0..n {
            assert_eq!(
                FrameHeader::decode(&buf[..cut]).ok(),
                Some(HeaderParse::Partial),
                "cut at {cut}"
            );
        }
        // The send path's encoder writes the same bytes.
        let mut put = bytes::BytesMut::new();
        header.put(&mut put);
        assert_eq!(&put[..], &buf[..n], "put differs from encode: {header:?}");
    }

    #[test]
    fn all_three_length_forms_round_trip_masked_and_not() {
        for len in [0, 1, 125, 126, 127, 0xFFFF, 0x1_0000, u64::MAX >> 1] {
            for mask in [None, Some([1, 2, 3, 4])] {
                for opcode in [
                    OpCode::Text,
                    OpCode::Binary,
                    OpCode::Continuation,
                    OpCode::Ping,
                ] {
                    let mut h = FrameHeader::new(opcode, len);
                    h.mask = mask;
                    h.is_final = len % 2 == 0;
                    h.rsv1 = len == 1;
                    round_trip(h);
                }
            }
        }
    }

    #[test]
    fn uses_the_shortest_length_form() {
        assert_eq!(encoded_header_len(125, false), 2);
        assert_eq!(encoded_header_len(126, false), 4);
        assert_eq!(encoded_header_len(65535, true), 8);
        assert_eq!(encoded_header_len(65536, true), 14);
    }

    #[test]
    fn rejects_length_with_most_significant_bit() {
        let mut buf = [0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 0];
        let error = FrameHeader::decode(&buf).unwrap_err();
        assert!(
            matches!(error.detail(), Some(Detail::InvalidPayloadLength)),
            "{error:?}"
        );
        buf[2] = 0x7F;
        assert!(matches!(
            FrameHeader::decode(&buf),
            Ok(HeaderParse::Complete(..))
        ));
    }

    #[test]
    fn rejects_reserved_opcodes_from_the_first_byte() {
        for op in [3u8, 7, 11, 15] {
            assert!(matches!(
                FrameHeader::decode(&[0x80 | op]),
                Err(Error::Protocol(e)) if e == ProtocolError::reserved_opcode(op)
            ));
        }
    }

    #[test]
    fn parses_rfc_examples() {
        // Unmasked "Hello" and a masked one (RFC 6455 section 5.7).
        let h = FrameHeader::decode(&[0x81, 0x05, b'H']).unwrap();
        assert_eq!(
            h,
            HeaderParse::Complete(FrameHeader::new(OpCode::Text, 5), 2)
        );
        let masked = [0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f];
        let HeaderParse::Complete(h, 6) = FrameHeader::decode(&masked).unwrap() else {
            panic!("masked header");
        };
        assert_eq!(h.mask, Some([0x37, 0xfa, 0x21, 0x3d]));
    }
}
