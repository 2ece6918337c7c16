//! The codec layer: buffers between the socket and the protocol, no I/O.
//!
//! [`FrameCodec`] owns the bytes received and not yet parsed ([`InFrames`])
//! and the bounded out buffer of encoded frames ([`OutBuffer`]).

mod in_frames;
mod out_buffer;

pub use in_frames::{InFrames, WholeFrame};
pub use out_buffer::OutBuffer;

/// The two buffers of a connection.
#[derive(Debug, Default)]
pub struct FrameCodec {
    /// Received bytes and the frame being read.
    pub input: InFrames,
    /// Encoded frames waiting for the socket.
    pub output: OutBuffer,
}
