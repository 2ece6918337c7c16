//! The protocol layer: message assembly, validation, control frames and the
//! closing handshake. Sans-IO: bytes in, messages out; messages in, bytes out.

mod assembler;
mod close_payload;
mod compression;
mod context;
mod lifecycle;
mod linger;
mod negotiated;
mod owed;
mod rate_limit;
mod receive_path;
mod seam;
mod send;
mod state;
#[cfg(test)]
mod test_frames;
mod timers;
mod utf8_stream;

pub use context::WebSocketContext;
pub use context::split::{ControlFrames, SendHalf};
#[allow(
    unused_imports,
    reason = "observe/ reports rate limits through it, only with `metrics` or `tracing`"
)]
pub(crate) use lifecycle::RateLimitAction;
pub use rate_limit::{RateLimit, RatePolicy};
pub use seam::{Next, Operation, Output};
