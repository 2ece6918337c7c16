//! The codec layer: buffers between the socket and the protocol, no I/O.
//!
//! [`InFrames`] owns the bytes received and not yet parsed, and hands out
//! whole frames through [`next_frame`](InFrames::next_frame);
//! [`OutBuffer`] is the bounded out buffer of encoded frames. Crate-private: the public way in is
//! [`WebSocketContext`](crate::WebSocketContext).

mod in_frames;
mod out_buffer;
mod read_sizing;

pub(crate) use in_frames::{FrameCheck, InFrames};
pub(crate) use out_buffer::OutBuffer;
