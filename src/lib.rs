//! lockgate: WebSocket (RFC 6455, with permessage-deflate, RFC 7692) with a
//! sans-IO core and explicit control of when bytes hit the wire.
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
//! # The write/flush contract
//!
//! - [`read`](WebSocket::read) returns the next message: `Text`, `Binary`,
//!   and the control messages you may want to see (`Ping`, `Pong`, the
//!   peer's `Close`). Reading a ping queues its pong; reading a close
//!   queues the reply. The pong answering lockgate's own keepalive ping is
//!   consumed, never returned.
//! - [`write`](WebSocket::write) encodes a message into the out buffer and
//!   never flushes. It writes (without flushing) only once the buffer
//!   holds `write_buffer_size` bytes. A message that would take the buffer
//!   past `max_write_buffer_size` is refused with
//!   [`Error::WriteBufferFull`], handed back as given; the connection
//!   stays usable.
//! - [`flush`](WebSocket::flush) writes the whole buffer and flushes the
//!   stream; [`send`](WebSocket::send) is `write` then `flush`.
//! - The pong to a ping and the reply to a close are written **and
//!   flushed** by the next `read`, `write` or `flush`, behind what was
//!   already queued. Nothing else is flushed for you: no timers, no flush
//!   before a read, none after each frame.
//! - On a non-blocking stream every call may fail with
//!   [`io::ErrorKind::WouldBlock`](std::io::ErrorKind::WouldBlock) and can
//!   be repeated: no byte is lost or sent twice.
//! - After the closing handshake, `read` returns [`Error::ConnectionClosed`]
//!   once, then [`Error::AlreadyClosed`].
//!
//! # Opening connections
//!
//! [`accept`], [`accept_hdr`], [`client()`] and [`connect()`] (and their
//! `_with_config` forms) have tungstenite's names and signatures.
//! [`connect()`] dials the whole way: TCP, TLS for `wss://` (with a TLS
//! feature, through a [`Connector`]), the handshake and redirects. For
//! anything else the settings are one builder per side:
//!
//! - [`ServerOptions`] (the [`Config`] and the
//!   [`Callback`](handshake::Callback)):
//!   `ServerOptions::new().config(config).callback(callback).accept(stream)`;
//! - [`ClientOptions`] (the [`Config`], the TLS [`Connector`], an HTTP
//!   [`Proxy`](handshake::Proxy), redirects):
//!   `ClientOptions::new().config(config).connect(url)` or
//!   `.client(request, stream)`.
//!
//! tokio-lockgate takes the same builders. Both sides give up on a
//! handshake that takes longer than [`Config::handshake_timeout`] with
//! a timeout ([`Error::timeout`] is `Some(TimeoutKind::Handshake)`), and a server answers
//! a request that cannot be a WebSocket upgrade with an HTTP error at
//! once. On a non-blocking stream the handshake returns
//! [`HandshakeError::Interrupted`] and resumes from there.
//!
//! # Defaults and limits
//!
//! Every limit is enforced before memory is committed (a header announcing
//! 2^63 bytes allocates nothing), and a message in assembly costs memory in
//! proportion to the bytes received, however it is fragmented.
//!
//! | [`Config`] | default | when it is crossed |
//! |---|---|---|
//! | `max_message_size` | 64 MiB | [`CapacityError::MessageTooLong`], close 1009 |
//! | `max_frame_size` | 16 MiB | [`CapacityError::MessageTooLong`] (as tungstenite), close 1009 |
//! | `max_fragments` | 131,072 per message | [`Detail::TooManyFragments`], close 1008 |
//! | `write_buffer_size` | 128 KiB | `write` starts writing (not flushing) |
//! | `max_write_buffer_size` | 72 MiB | [`Error::WriteBufferFull`] hands the message back |
//! | `read_buffer_size` | 8 KiB first read, adapting; nothing held while idle | |
//! | `handshake_timeout` | 30 s | [`TimeoutKind::Handshake`] |
//! | `ping_interval` | 20 s of silence | a keepalive ping goes out |
//! | `ping_timeout` | 20 s after that ping | [`TimeoutKind::Keepalive`], close 1011 |
//! | `close_timeout` | 10 s after our close | [`TimeoutKind::Close`] |
//!
//! The opening handshake's head has limits of its own,
//! [`handshake::HandshakeLimits`] on [`ServerOptions`] and
//! [`ClientOptions`]: 124 header fields and a 64 KiB head by default
//! (tungstenite's), over which a server answers 431 and a client fails
//! with [`HandshakeFailure::HeadTooLarge`].
//!
//! permessage-deflate (RFC 7692) is off unless configured
//! ([`deflate::DeflateConfig`]); inflating is bounded by
//! `max_message_size` too.
//!
//! # Cargo features
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `deflate` | yes | permessage-deflate ([`deflate`]) |
//! | `handshake` | yes | nothing: the handshake is always built; the name is tungstenite's |
//! | `url` | | [`IntoClientRequest`](handshake::IntoClientRequest) for `url::Url` |
//! | `rustls` | | `wss://` through rustls (`Connector::Rustls`), with your roots |
//! | `rustls-tls-webpki-roots` | | `rustls` with Mozilla's root certificates compiled in |
//! | `rustls-tls-native-roots` | | `rustls` with the operating system's root certificates |
//! | `native-tls` | | `wss://` through the platform's TLS library (`Connector::NativeTls`) |
//! | `native-tls-vendored` | | `native-tls` with OpenSSL built from source |
//! | `metrics` | | counters through the `metrics` facade (module `observe`) |
//! | `tracing` | | a `tracing` span per connection; events at close, timeout, protocol error, handshake refusal (module `observe`) |
//!
//! # Porting from tungstenite
//!
//! Code written for tungstenite 0.30 builds after renaming the crate
//! (`tungstenite` to `lockgate`, in code and in `Cargo.toml`): the same
//! functions, types, error variants, module paths and cargo features. It
//! behaves the same, except where lockgate differs on purpose:
//!
//! - the out buffer is bounded (`max_write_buffer_size`, 72 MiB): a full
//!   buffer hands the message back in [`Error::WriteBufferFull`] instead
//!   of growing without limit;
//! - keepalive and the deadlines above are on by default: a peer that
//!   stays silent through a ping is dropped with
//!   a timeout ([`Error::timeout`]); turn them off with `None`;
//! - the pong answering lockgate's own keepalive ping is consumed, not
//!   returned: every other pong is (the application's own pings', and
//!   unsolicited ones);
//! - a server refuses an upgrade whose `Origin` is another site's with 403
//!   (cross-site WebSocket hijacking); requests without `Origin` pass, and
//!   [`ServerOptions::origin_policy`] allows more (see
//!   [`handshake::OriginPolicy`]);
//! - what lockgate reports beyond tungstenite's error variants (deadlines,
//!   the opening handshake's reasons, rate limits, invalid compressed
//!   data) is an [`Error::Io`] carrying a [`Detail`] ([`Error::detail`]):
//!   the enums keep exactly tungstenite's variants and messages, so an
//!   exhaustive `match` still compiles (see [`error`]);
//! - streams passed to `accept`, `client` or `from_raw_socket` must be
//!   `'static` (owned), which lets lockgate bound a `TcpStream`'s reads by
//!   its deadlines;
//! - [`WebSocketContext`] is sans-IO: its methods take and give bytes, not a
//!   stream.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod blocking_dial;
pub mod client;
mod client_tls;
mod codec;
mod config;
pub mod deflate;
pub mod dial;
pub mod error;
pub mod frame;
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzz_api;
pub mod handshake;
mod message;
mod mid_handshake;
#[cfg(any(feature = "metrics", feature = "tracing"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "metrics", feature = "tracing"))))]
pub mod observe;
mod prepared;
mod proto;
pub mod protocol;
mod server;
mod std_stream;
pub mod stream;
mod upgrade;
mod utf8_bytes;
pub mod util;
mod websocket;

pub use bytes::{Buf, Bytes};
pub use client::{ClientHandshake, ClientRequestBuilder, client, connect};
pub use client_tls::{client_tls, client_tls_with_config};
pub use config::{
    Config, DEFAULT_CLOSE_TIMEOUT, DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_MAX_FRAGMENTS,
    DEFAULT_MAX_FRAME_SIZE, DEFAULT_MAX_MESSAGE_SIZE, DEFAULT_MAX_WRITE_BUFFER_SIZE,
    DEFAULT_PING_INTERVAL, DEFAULT_PING_TIMEOUT, Role,
};
pub use dial::Connector;
pub use error::{
    CapacityError, Detail, Error, HandshakeFailure, ProtocolError, Result, TimeoutKind,
};
pub use frame::CloseCode;
pub use handshake::{ClientOptions, HandshakeError, ServerOptions};
pub use http;
pub use message::{CloseFrame, Message};
pub use prepared::PreparedMessage;
pub use proto::{
    ControlFrames, Next, Operation, Output, RateLimit, RatePolicy, SendHalf, WebSocketContext,
};
pub use protocol::WebSocketConfig;
pub use server::{ServerHandshake, accept, accept_hdr, accept_hdr_with_config, accept_with_config};
pub use std_stream::ReadTimeoutFn;
pub use utf8_bytes::Utf8Bytes;
pub use websocket::WebSocket;
