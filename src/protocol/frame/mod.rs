//! tungstenite's `protocol::frame` module: raw frames
//! ([`Frame`], [`FrameHeader`]) for [`Message::Frame`](crate::Message::Frame),
//! and the [`coding`] of opcodes and close codes.
//!
//! Part of the skin ([`crate::protocol`]): the types are the core's own
//! ([`crate::frame`]), re-exported under tungstenite's path; what is
//! defined here is only tungstenite's `std::io` methods on them
//! (`FrameHeader::parse`/`len`/`format`, `Frame::format`), which the core,
//! doing no I/O, does not have.

pub mod coding;
mod io;

pub use crate::frame::{Frame, FrameHeader};
pub use crate::message::CloseFrame;
pub use crate::utf8_bytes::Utf8Bytes;

#[cfg(test)]
mod tests {
    /// tungstenite's paths name the core's types, not copies of them: this
    /// compiles only while they are the same types.
    #[test]
    fn the_skin_names_the_cores_types() {
        fn same(
            header: crate::frame::FrameHeader,
            frame: crate::frame::Frame,
            opcode: crate::frame::OpCode,
            data: crate::frame::Data,
            control: crate::frame::Control,
            code: crate::frame::CloseCode,
        ) -> (
            super::FrameHeader,
            super::Frame,
            super::coding::OpCode,
            super::coding::Data,
            super::coding::Control,
            super::coding::CloseCode,
        ) {
            (header, frame, opcode, data, control, code)
        }
        let frame = super::Frame::ping(&b"x"[..]);
        let (header, ..) = same(
            *frame.header(),
            frame.clone(),
            super::coding::OpCode::Data(super::coding::Data::Text),
            crate::frame::Data::Binary,
            crate::frame::Control::Pong,
            crate::frame::CloseCode::Normal,
        );
        assert_eq!(header.opcode, crate::frame::OpCode::Ping);
    }
}
