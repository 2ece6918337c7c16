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
