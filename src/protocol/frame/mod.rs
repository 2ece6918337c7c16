//! tungstenite's `protocol::frame` module: raw frames
//! ([`Frame`], [`FrameHeader`]) for [`Message::Frame`](crate::Message::Frame),
//! and the [`coding`] of opcodes and close codes.

pub mod coding;
mod raw;

pub use crate::message::CloseFrame;
pub use crate::utf8_bytes::Utf8Bytes;
pub use raw::{Frame, FrameHeader};
