//! [`Frame`]: a raw frame, a [`FrameHeader`] and its payload, written as
//! [`Message::Frame`](crate::Message::Frame).

use std::fmt;
use std::str::Utf8Error;

use bytes::{BufMut, Bytes, BytesMut};

use crate::frame::{Control, FrameHeader, OpCode, encoded_header_len};
use crate::message::CloseFrame;
use crate::utf8_bytes::Utf8Bytes;

/// A raw frame: a [`FrameHeader`] and its payload (unmasked; a mask in the
/// header is applied when the frame is encoded).
///
/// Written as [`Message::Frame`](crate::Message::Frame), it goes out as
/// given, except that a client masks it with a fresh key and a server
/// sends it unmasked, as RFC 6455 requires, and the header's length is the
/// payload's. `read` never returns one. This is tungstenite's raw frame;
/// its `format`, which writes to a `std::io::Write`, is added by the
/// compatibility skin, since the core does no I/O.
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
        encoded_header_len(length as u64, self.header().mask.is_some()) + length
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

    /// The header, to change. Its `payload_len` is not used: a frame is
    /// written with its payload's length.
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
    pub fn into_text(self) -> Result<Utf8Bytes, Utf8Error> {
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
    pub fn to_text(&self) -> Result<&str, Utf8Error> {
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

    /// A frame from its parts; the header's `payload_len` becomes the
    /// payload's length.
    pub fn from_payload(mut header: FrameHeader, payload: Bytes) -> Frame {
        header.payload_len = payload.len() as u64;
        Frame {
            parts: Box::new((header, payload)),
        }
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
    use crate::frame::CloseCode;

    #[test]
    fn close_frames_carry_code_and_reason() {
        let frame = Frame::close(Some(CloseFrame::new(CloseCode::Away, "bye")));
        assert_eq!(frame.payload(), b"\x03\xe9bye");
        assert_eq!(frame.header().opcode, OpCode::Close);
        assert_eq!(frame.header().payload_len, 5);
        assert_eq!(frame.len(), 2 + 5);
    }
}
