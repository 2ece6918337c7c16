//! tokio-lockgate: [lockgate]'s WebSocket on tokio, with the same
//! explicit write/flush control.
//!
//! [`WebSocketStream`] drives lockgate's sans-IO [`WebSocketContext`]
//! directly over any `AsyncRead + AsyncWrite`: `write` queues, `flush`
//! sends, `send` does both, and only pongs and close replies are flushed
//! implicitly. It is also a [`Stream`](futures_core::Stream) of messages and
//! a [`Sink`](futures_sink::Sink) of messages (`feed` many, `flush` once).
//!
//! ```
//! use tokio_lockgate::{Message, accept_async, connect_async};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> tokio_lockgate::Result<()> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let url = format!("ws://{}", listener.local_addr()?);
//! let server = tokio::spawn(async move {
//!     let (tcp, _) = listener.accept().await.map_err(tokio_lockgate::Error::Io)?;
//!     let mut ws = accept_async(tcp).await?;
//!     while let Ok(msg) = ws.read().await {
//!         if msg.is_data() {
//!             ws.send(msg).await?;
//!         }
//!     }
//!     Ok::<(), tokio_lockgate::Error>(())
//! });
//!
//! let (mut ws, _) = connect_async(url).await?;
//! for i in 0..3 {
//!     ws.write(Message::text(format!("hello {i}"))).await?; // queued
//! }
//! ws.flush().await?; // all three leave together
//! for i in 0..3 {
//!     assert_eq!(ws.read().await?, Message::text(format!("hello {i}")));
//! }
//! ws.close(None).await?;
//! while ws.read().await.is_ok() {} // until ConnectionClosed
//! server.await.unwrap()?;
//! # Ok(()) }
//! ```
//!
//! # Opening connections
//!
//! [`accept_async`], [`accept_hdr_async`], [`client_async`] and
//! [`connect_async`] use the default [`Config`], under
//! tokio-tungstenite's names and signatures. For anything else, build the
//! core crate's options, re-exported here, and pass them to the `_with`
//! form:
//!
//! - [`accept_async_with`]`(stream, `[`ServerOptions`]`::new().config(config).callback(callback))`;
//! - [`client_async_with`]`(request, stream, `[`ClientOptions`]`::new().config(config))`;
//! - [`connect_async_with`]`(url, ClientOptions::new().config(config).tls(connector))`
//!   (a TLS [`Connector`]; see [`IntoConnector`]).
//!
//! The handshake, and for `connect_async*` the TCP connection and TLS
//! with it, must finish within [`Config::handshake_timeout`] (30 s by
//! default), else it fails with
//! [`Error::Timeout`]`(`[`TimeoutKind::Handshake`]`)`; a server answers a
//! request that cannot be a WebSocket upgrade with an HTTP error at once.
//!
//! # Fan-out
//!
//! [`PreparedMessage`] encodes a message once for any number of
//! connections (`write_prepared`), and the [`hub`] module delivers one to
//! every subscriber of a topic, each connection with its own bounded queue,
//! a slow-consumer policy, and one flush per burst.

#[cfg(feature = "axum")]
pub mod axum;
mod connect;
mod core;
pub mod hub;
mod split;
mod stream;
mod tls;
#[cfg(feature = "hyper")]
pub mod upgrade;

pub use connect::{
    IntoConnector, accept_async, accept_async_with, accept_hdr_async, client_async,
    client_async_with, connect_async, connect_async_with,
};
/// The core crate, under the name tokio-tungstenite gives tungstenite:
/// `tokio_lockgate::lockgate::Message` is `lockgate::Message`.
pub use lockgate;
pub use lockgate::{
    Bytes, ClientOptions, CloseCode, CloseFrame, Config, Error, HandshakeFailure, Message,
    PreparedMessage, ProtocolError, Result, Role, ServerOptions, TimeoutKind, Utf8Bytes,
    WebSocketContext, deflate, handshake, http,
};
pub use split::{WebSocketReadHalf, WebSocketWriteHalf};
pub use stream::WebSocketStream;
pub use tls::{Connector, MaybeTlsStream};

/// The workspace README's examples (blocking and tokio), compiled as doc
/// tests here because this crate can see both.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
