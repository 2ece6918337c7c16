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

mod connect;
mod core;
mod split;
mod stream;
mod tls;

pub use connect::{
    accept_async, accept_async_with_config, accept_hdr_async, accept_hdr_async_with_config,
    client_async, client_async_with_config, connect_async, connect_async_tls_with_config,
    connect_async_with_config,
};
pub use lockgate::{
    Bytes, CloseCode, CloseFrame, Config, Error, HandshakeError, Message, ProtocolError, Result,
    Role, TimeoutKind, Utf8Bytes, WebSocketContext, deflate, handshake, http,
};
pub use split::{WebSocketReadHalf, WebSocketWriteHalf};
pub use stream::WebSocketStream;
pub use tls::{Connector, MaybeTlsStream};

/// The workspace README's examples (blocking and tokio), compiled as doc
/// tests here because this crate can see both.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
