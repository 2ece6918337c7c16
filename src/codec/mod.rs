//! The codec layer: buffers between the socket and the protocol, no I/O.
//!
//! [`FrameCodec`] owns the bytes received and not yet parsed ([`InFrames`],
//! which hands out whole frames through
//! [`next_frame`](InFrames::next_frame)) and the bounded out buffer of
//! encoded frames ([`OutBuffer`]). Crate-private: the public way in is
//! [`WebSocketContext`](crate::WebSocketContext).

mod in_frames;
mod out_buffer;
mod read_sizing;

pub(crate) use in_frames::{FrameCheck, InFrames};
pub(crate) use out_buffer::OutBuffer;

/// The two buffers of a connection.
#[derive(Debug, Default)]
pub(crate) struct FrameCodec {
    /// Received bytes and the frame being read.
    pub(crate) input: InFrames,
    /// Encoded frames waiting for the socket.
    pub(crate) output: OutBuffer,
}
