//! lockgate: WebSocket (RFC 6455) with a sans-IO core and explicit control
//! of when bytes hit the wire.
//!
//! `write` queues, `flush` sends, `send` does both. The library flushes on
//! its own only for protocol housekeeping the caller never asked for: the
//! pong answering a ping and the reply to a close.
//!
//! ```
//! use lockgate::{Config, Message, Role, WebSocket};
//! use std::io::Cursor;
//!
//! // A server-side socket over an in-memory stream holding one masked
//! // client frame: the text "Hello" (RFC 6455 section 5.7).
//! let frame = vec![0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58];
//! let mut ws = WebSocket::from_raw_socket(Cursor::new(frame), Role::Server, Config::default());
//! assert_eq!(ws.read()?, Message::text("Hello"));
//!
//! // Replies are buffered until the caller flushes.
//! ws.get_mut().get_mut().clear();
//! ws.get_mut().set_position(0);
//! ws.write(Message::text("Hi"))?;
//! assert!(ws.get_ref().get_ref().is_empty());
//! ws.flush()?;
//! assert_eq!(ws.get_ref().get_ref(), &[0x81, 0x02, b'H', b'i']);
//! # Ok::<(), lockgate::Error>(())
//! ```

mod codec;
mod config;
mod connect;
pub mod deflate;
mod error;
pub mod frame;
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzz_api;
pub mod handshake;
mod message;
mod proto;
mod read_timeout;
mod utf8_bytes;
mod websocket;

pub use bytes::Bytes;
pub use config::{
    Config, DEFAULT_CLOSE_TIMEOUT, DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_MAX_FRAGMENTS,
    DEFAULT_MAX_FRAME_SIZE, DEFAULT_MAX_MESSAGE_SIZE, DEFAULT_MAX_WRITE_BUFFER_SIZE,
    DEFAULT_PING_INTERVAL, DEFAULT_PING_TIMEOUT, Role,
};
pub use connect::{
    accept, accept_hdr, accept_hdr_with_config, accept_with_config, client, client_with_config,
    connect, connect_with_config,
};
pub use error::{CapacityError, Error, HandshakeError, ProtocolError, Result, TimeoutKind};
pub use frame::CloseCode;
pub use http;
pub use message::{CloseFrame, Message};
pub use proto::WebSocketContext;
pub use read_timeout::ReadTimeoutFn;
pub use utf8_bytes::Utf8Bytes;
pub use websocket::WebSocket;
