//! The protocol layer: message assembly, validation, control frames and the
//! closing handshake. Sans-IO: bytes in, messages out; messages in, bytes out.

mod assembler;
mod close_payload;
mod compression;
mod context;
mod drive;
mod receive;
mod send;
mod state;
mod timers;
mod utf8_stream;

pub use context::WebSocketContext;
pub use drive::{Next, Operation, Output};
