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
//!
//! # Opening connections
//!
//! [`accept`], [`accept_hdr`], [`client`] and [`connect`] run the opening
//! handshake over a blocking stream with the default [`Config`], under
//! tungstenite's names and signatures. For anything else, the settings are
//! one builder per side, finished by a method:
//!
//! - [`ServerOptions`] (the [`Config`] and the
//!   [`Callback`](handshake::Callback)):
//!   `ServerOptions::new().config(config).callback(callback).accept(stream)`;
//! - [`ClientOptions`] (the [`Config`]):
//!   `ClientOptions::new().config(config).connect(url)` or
//!   `.client(request, stream)`.
//!
//! tokio-lockgate takes the same builders in its `accept_async_with`,
//! `client_async_with` and `connect_async_with`. Both sides give up on a
//! handshake that takes longer than [`Config::handshake_timeout`] (30 s by
//! default) with [`Error::Timeout`]`(`[`TimeoutKind::Handshake`]`)`, and a
//! server answers a request that cannot be a WebSocket upgrade with an
//! HTTP error at once. Every driver runs the same sans-IO
//! [`HandshakeDriver`](handshake::HandshakeDriver).

mod codec;
mod config;
mod connect;
pub mod deflate;
pub mod error;
pub mod frame;
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzz_api;
pub mod handshake;
mod message;
mod prepared;
mod proto;
pub mod protocol;
mod read_timeout;
mod utf8_bytes;
mod websocket;

pub use bytes::{Buf, Bytes};
pub use config::{
    Config, DEFAULT_CLOSE_TIMEOUT, DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_MAX_FRAGMENTS,
    DEFAULT_MAX_FRAME_SIZE, DEFAULT_MAX_MESSAGE_SIZE, DEFAULT_MAX_WRITE_BUFFER_SIZE,
    DEFAULT_PING_INTERVAL, DEFAULT_PING_TIMEOUT, Role,
};
pub use connect::{accept, accept_hdr, client, connect};
pub use error::{CapacityError, Error, HandshakeFailure, ProtocolError, Result, TimeoutKind};
pub use frame::CloseCode;
pub use handshake::{ClientOptions, ServerOptions};
pub use http;
pub use message::{CloseFrame, Message};
pub use prepared::PreparedMessage;
pub use proto::{Next, Operation, Output, WebSocketContext};
pub use read_timeout::ReadTimeoutFn;
pub use utf8_bytes::Utf8Bytes;
pub use websocket::WebSocket;
