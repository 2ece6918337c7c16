//! The async driver, written once for every runtime: a connection
//! ([`WebSocketStream`]), its split halves, the opening handshake and the
//! dial of `connect_async`, each
//! generic over the runtime `R` that moves the bytes and keeps the time
//! ([`Transport`](crate::runtime::Transport)).
//!
//! Use it through a runtime's names: this crate's root for `futures-io`
//! streams, or `tokio_lockgate` for tokio's. Code generic over runtimes
//! names these types with the runtime as a parameter.

mod core;
mod dial;
mod handshake;
mod split;
mod stream;

pub(crate) use core::{Chunks, transmit};
pub use dial::{connect, open};
pub use handshake::{accept_with, client_with, exchange, finish_client, until};
/// The first address a lookup found ([`Connect::lookup`](crate::runtime::Connect::lookup)),
/// or `NotFound`: lockgate's, where the dial's other decisions are.
pub use lockgate::dial::first_address;
pub use split::{WebSocketReadHalf, WebSocketWriteHalf};
pub use stream::{SendFlush, WebSocketStream, stream_item};
