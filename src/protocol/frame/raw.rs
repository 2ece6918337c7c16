//! [`Frame`] and [`FrameHeader`]: a raw frame as tungstenite models it,
//! for [`Message::Frame`](crate::Message::Frame).

use std::fmt;
use std::io::{Cursor, Write};
use std::str::Utf8Error;

use bytes::{BufMut, Bytes, BytesMut};

use super::coding::{Control, OpCode};
use crate::error::Result;
use crate::frame::{HeaderParse, MAX_HEADER_LEN, apply_mask, encoded_header_len};
use crate::message::CloseFrame;
use crate::utf8_bytes::Utf8Bytes;

/// A frame header as tungstenite models it: no length (the payload has
/// it), and an [`OpCode`] that can hold reserved values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameHeader {
    /// Whether this is the last frame of its message (FIN).
    pub is_final: bool,
    /// Reserved bit 1 (permessage-deflate marks compressed messages with it).
    pub rsv1: bool,
    /// Reserved bit 2.
    pub rsv2: bool,
    /// Reserved bit 3.
    pub rsv3: bool,
    /// The opcode.
    pub opcode: OpCode,
    /// The masking key, if any.
    pub mask: Option<[u8; 4]>,
}

/// A final, unmasked close header, as tungstenite's default.
impl Default for FrameHeader {
    fn default() -> Self {
        FrameHeader {
            is_final: true,
            rsv1: false,
            rsv2: false,
            rsv3: false,
            opcode: OpCode::Control(Control::Close),
            mask: None,
        }
    }
}

impl FrameHeader {
    /// Parses a header at the cursor's position, moving the cursor past it.
    /// `Ok(None)` (the cursor unmoved) when the input ends inside the
    /// header; otherwise the header and its payload length.
    ///
    /// # Errors
    ///
    /// [`ProtocolError`](crate::ProtocolError) for a reserved opcode or a
    /// 64-bit length with its top bit set.
    pub fn parse(cursor: &mut Cursor<impl AsRef<[u8]>>) -> Result<Option<(FrameHeader, u64)>> {
        let position = usize::try_from(cursor.position()).unwrap_or(usize::MAX);
        let input = cursor.get_ref().as_ref();
        let rest = input.get(position..).unwrap_or_default();
        match crate::frame::FrameHeader::parse(rest)? {
            HeaderParse::Partial => Ok(None),
            HeaderParse::Complete(header, length) => {
                cursor.set_position((position + length) as u64);
                let parsed = FrameHeader {
                    is_final: header.fin,
                    rsv1: header.rsv1,
                    rsv2: header.rsv2,
                    rsv3: header.rsv3,
                    opcode: header.opcode,
                    mask: header.mask,
                };
                Ok(Some((parsed, header.payload_len)))
            }
        }
    }

    /// How many bytes this header takes on the wire before a payload of
    /// `length` bytes.
    #[allow(clippy::len_without_is_empty, reason = "tungstenite's signature")]
    pub fn len(&self, length: u64) -> usize {
        encoded_header_len(length, self.mask.is_some())
    }

    /// Writes this header, for a payload of `length` bytes, to `output`.
    ///
    /// # Errors
    ///
    /// The errors of `output`.
    pub fn format(&self, length: u64, output: &mut impl Write) -> Result<()> {
        let mut bytes = [0u8; MAX_HEADER_LEN];
        let n = self.encode(length, &mut bytes);
        output.write_all(&bytes[..n])?;
        Ok(())
    }

    /// Encodes the header into `out`; returns how many bytes it took.
    pub(crate) fn encode(&self, length: u64, out: &mut [u8; MAX_HEADER_LEN]) -> usize {
        let mut first = u8::from(self.opcode) & 0x0F;
        for (set, bit) in [
            (self.is_final, 0x80),
            (self.rsv1, 0x40),
            (self.rsv2, 0x20),
            (self.rsv3, 0x10),
        ] {
            if set {
                first |= bit;
            }
        }
        let mask_bit = if self.mask.is_some() { 0x80 } else { 0 };
        out[0] = first;
        let mut n = 2;
        if length < 126 {
            out[1] = mask_bit | length as u8;
        } else if let Ok(short) = u16::try_from(length) {
            out[1] = mask_bit | 126;
            out[2..4].copy_from_slice(&short.to_be_bytes());
            n = 4;
        } else {
            out[1] = mask_bit | 127;
            out[2..10].copy_from_slice(&length.to_be_bytes());
            n = 10;
        }
        if let Some(mask) = self.mask {
            out[n..n + 4].copy_from_slice(&mask);
            n += 4;
        }
        n
    }
}

/// A raw frame: a [`FrameHeader`] and its payload (unmasked; a mask in the
/// header is applied when the frame is written).
///
/// Written as [`Message::Frame`](crate::Message::Frame), it goes out as
/// given, except that a client masks it with a fresh key and a server
/// sends it unmasked, as RFC 6455 requires. `read` never returns one.
#[derive(Clone, PartialEq, Eq)]
pub struct Frame {
    // Boxed: a frame is rare, and a `Message` on every read and write
    // would otherwise grow by a header.
    parts: Box<(FrameHeader, Bytes)>,
}

impl Frame {
    /// The frame's length on the wire: header and payload.
    pub fn len(&self) -> usize {
        let length = self.payload().len();
        self.header().len(length as u64) + length
    }

    /// Whether [`len`](Self::len) is zero (never: a header is at least two
    /// bytes).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The header.
    pub fn header(&self) -> &FrameHeader {
        &self.parts.0
    }

    /// The header, to change.
    pub fn header_mut(&mut self) -> &mut FrameHeader {
        &mut self.parts.0
    }

    /// The payload, unmasked.
    pub fn payload(&self) -> &[u8] {
        &self.parts.1
    }

    /// The payload as text.
    ///
    /// # Errors
    ///
    /// If it is not UTF-8.
    pub fn into_text(self) -> std::result::Result<Utf8Bytes, Utf8Error> {
        Utf8Bytes::try_from(self.into_payload())
    }

    /// The payload.
    pub fn into_payload(self) -> Bytes {
        self.parts.1
    }

    /// The payload as text.
    ///
    /// # Errors
    ///
    /// If it is not UTF-8.
    pub fn to_text(&self) -> std::result::Result<&str, Utf8Error> {
        std::str::from_utf8(self.payload())
    }

    /// A data frame: `opcode` should be a [`OpCode::Data`].
    pub fn message(data: impl Into<Bytes>, opcode: OpCode, is_final: bool) -> Frame {
        let header = FrameHeader {
            is_final,
            opcode,
            ..FrameHeader::default()
        };
        Frame::from_payload(header, data.into())
    }

    /// A pong.
    pub fn pong(data: impl Into<Bytes>) -> Frame {
        Frame::control(Control::Pong, data.into())
    }

    /// A ping.
    pub fn ping(data: impl Into<Bytes>) -> Frame {
        Frame::control(Control::Ping, data.into())
    }

    /// A close frame, with a code and reason or none.
    pub fn close(frame: Option<CloseFrame>) -> Frame {
        let payload = match frame {
            None => Bytes::new(),
            Some(CloseFrame { code, reason }) => {
                let mut payload = BytesMut::with_capacity(2 + reason.len());
                payload.put_u16(code.into());
                payload.extend_from_slice(reason.as_bytes());
                payload.freeze()
            }
        };
        Frame::control(Control::Close, payload)
    }

    /// A frame from its parts.
    pub fn from_payload(header: FrameHeader, payload: Bytes) -> Frame {
        Frame {
            parts: Box::new((header, payload)),
        }
    }

    /// Writes the frame to `output`, masking the payload if the header has
    /// a mask.
    ///
    /// # Errors
    ///
    /// The errors of `output`.
    pub fn format(self, output: &mut impl Write) -> Result<()> {
        let (header, payload) = *self.parts;
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

    /// The header and the payload.
    pub(crate) fn into_parts(self) -> (FrameHeader, Bytes) {
        *self.parts
    }

    fn control(control: Control, payload: Bytes) -> Frame {
        let header = FrameHeader {
            opcode: OpCode::Control(control),
            ..FrameHeader::default()
        };
        Frame::from_payload(header, payload)
    }
}

impl fmt::Debug for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Frame")
            .field("header", self.header())
            .field("payload", &Bytes::copy_from_slice(self.payload()))
            .finish()
    }
}

/// tungstenite's multi-line description of a frame.
impl fmt::Display for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header = self.header();
        writeln!(f)?;
        writeln!(f, "<FRAME>")?;
        writeln!(f, "final: {}", header.is_final)?;
        writeln!(
            f,
            "reserved: {} {} {}",
            header.rsv1, header.rsv2, header.rsv3
        )?;
        writeln!(f, "opcode: {}", header.opcode)?;
        writeln!(f, "length: {}", self.len())?;
        writeln!(f, "payload length: {}", self.payload().len())?;
        write!(f, "payload: 0x")?;
        for byte in self.payload() {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{CloseCode, Data};

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

    #[test]
    fn close_frames_carry_code_and_reason() {
        let frame = Frame::close(Some(CloseFrame::new(CloseCode::Away, "bye")));
        assert_eq!(frame.payload(), b"\x03\xe9bye");
        assert_eq!(frame.header().opcode, OpCode::Control(Control::Close));
        assert_eq!(frame.len(), 2 + 5);
    }
}
