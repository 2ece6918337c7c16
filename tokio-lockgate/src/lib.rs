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
//! [`accept_async`], [`accept_hdr_async`], [`client_async`],
//! [`client_async_tls`] and [`connect_async`], and their `_with_config`
//! forms, have tokio-tungstenite's names and signatures. lockgate's own
//! settings are the core crate's options, re-exported here, passed to the
//! `_with` form:
//!
//! - [`accept_async_with`]`(stream, `[`ServerOptions`]`::new().config(config).callback(callback))`;
//! - [`client_async_with`]`(request, stream, `[`ClientOptions`]`::new().config(config))`;
//! - [`connect_async_with`]`(url, ClientOptions::new().config(config).tls(connector))`
//!   (a TLS [`Connector`], the one the blocking driver takes).
//!
//! The handshake, and for `connect_async*` the TCP connection and TLS
//! with it, must finish within [`Config::handshake_timeout`] (30 s by
//! default), else it fails with
//! a timeout ([`Error::timeout`] is `Some(TimeoutKind::Handshake)`); a server answers a
//! request that cannot be a WebSocket upgrade with an HTTP error at once.
//!
//! # The write/flush contract, defaults and limits
//!
//! As in the core crate ([lockgate's documentation](lockgate#the-writeflush-contract)):
//! `write` (and [`Sink::start_send`](futures_sink::Sink::start_send), i.e.
//! `SinkExt::feed`) queues and never flushes; `flush` (`SinkExt::flush`)
//! writes everything and flushes; `send` is both; only the pong to a ping
//! and the reply to a close are flushed for you. The limits (64 MiB
//! messages, 16 MiB frames, a 72 MiB write buffer) and deadlines (30 s
//! handshake, keepalive ping after 20 s of silence, 20 s for its answer,
//! 10 s for a closing handshake) are [`Config`]'s, enforced while a read
//! waits.
//!
//! # Fan-out
//!
//! [`PreparedMessage`] encodes a message once for any number of
//! connections (`write_prepared`), and the [`hub`] module delivers one to
//! every subscriber of a topic, each connection with its own bounded queue,
//! a slow-consumer policy, and one flush per burst.
//!
//! # Graceful drain
//!
//! A [`drain::Drain`] registers live connections (plain accept loops, the
//! axum extractor, hyper upgrades, hub subscribers); starting it refuses
//! new upgrades with 503 and `Retry-After`, closes each connection behind
//! what is queued for it, spread over a window, and cuts what is still
//! open at a deadline.
//!
//! # Cargo features
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `connect`, `handshake`, `stream` | yes | nothing: always built; the names are tokio-tungstenite's |
//! | `url` | | `IntoClientRequest` for `url::Url` |
//! | `rustls` | | `wss://` through rustls, with your roots in `Connector::Rustls` |
//! | `rustls-tls-webpki-roots` | | `rustls` with Mozilla's root certificates compiled in |
//! | `rustls-tls-native-roots` | | `rustls` with the operating system's root certificates |
//! | `native-tls` | | `wss://` through the platform's TLS library |
//! | `native-tls-vendored` | | `native-tls` with OpenSSL built from source |
//! | `hyper` | | `upgrade`: WebSockets upgraded by hyper 1, HTTP/1.1 and HTTP/2 |
//! | `axum` | | `axum`: the `WebSocketUpgrade` extractor for axum 0.8 |
//! | `metrics` | | lockgate's counters and the hub's through the `metrics` facade (`lockgate::observe`, `hub::metrics`) |
//! | `tracing` | | lockgate's span per connection and its events, and the hub's, through `tracing` |
//!
//! # Porting from tokio-tungstenite
//!
//! Code written for tokio-tungstenite 0.30 builds after renaming the
//! crates (`tokio_tungstenite` to `tokio_lockgate`, `tungstenite` to
//! `lockgate`, in code and in `Cargo.toml`), and behaves the same except
//! where lockgate differs on purpose (see
//! [the core crate's list](lockgate#porting-from-tungstenite)). On this
//! side:
//!
//! - [`WebSocketStream`] is a `Stream` and a `Sink` as before;
//!   `StreamExt::split` gives the same `SplitSink` / `SplitStream`.
//!   [`into_split`](WebSocketStream::into_split) gives lockgate's own
//!   halves, which keep `read`/`write`/`flush`/`send`/`close` and run side
//!   by side: each owns its side of the connection, and only what the read
//!   half owes (a pong, a close reply) and the close state cross.
//! - `send` and `flush` work with or without `SinkExt` imported (see
//!   [`WebSocketStream`]); `write` queues without flushing.
//! - `connect_async*` return `lockgate::handshake::client::Response`, and
//!   [`WebSocketStream::get_config`] lends the settings, as before.
//! - [`WebSocketReadHalf`] and [`WebSocketWriteHalf`] carry no bound on the
//!   stream in their types (the impls have them), so a struct holding one
//!   needs no `where` clause.

#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "axum")]
#[cfg_attr(docsrs, doc(cfg(feature = "axum")))]
pub mod axum;
mod connect;
pub mod drain;
#[cfg(feature = "hyper")]
mod h2_dial;
pub mod hub;
mod runtime;
mod split;
mod stream;
mod tls;
#[cfg(feature = "hyper")]
#[cfg_attr(docsrs, doc(cfg(feature = "hyper")))]
pub mod upgrade;

pub use connect::{
    accept_async, accept_async_with, accept_async_with_config, accept_hdr_async,
    accept_hdr_async_with_config, client_async, client_async_tls, client_async_tls_with_config,
    client_async_with, client_async_with_config, connect_async, connect_async_tls_with_config,
    connect_async_with, connect_async_with_config,
};
/// The core crate, under the name tokio-tungstenite gives tungstenite:
/// `tokio_lockgate::lockgate::Message` is `lockgate::Message`.
pub use lockgate;
pub use lockgate::{
    Bytes, ClientOptions, CloseCode, CloseFrame, Config, Connector, Error, HandshakeFailure,
    Message, PreparedMessage, ProtocolError, RateLimit, RatePolicy, Result, Role, ServerOptions,
    TimeoutKind, Utf8Bytes, WebSocketConfig, WebSocketContext, deflate, handshake, http,
};
pub use runtime::Tokio;
pub use split::{WebSocketReadHalf, WebSocketWriteHalf};
pub use stream::{SendFlush, WebSocketStream};
pub use tls::MaybeTlsStream;

/// The workspace README's examples (blocking and tokio), compiled as doc
/// tests here because this crate can see both.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
