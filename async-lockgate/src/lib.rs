//! async-lockgate: [lockgate]'s WebSocket on any async runtime, with the
//! same explicit write/flush control.
//!
//! With the default feature `futures-io`, [`WebSocketStream`] runs over any
//! `futures-io` `AsyncRead + AsyncWrite + Unpin` stream: smol's and
//! async-std's sockets, and anything with a compat layer. Its deadlines
//! (handshake, keepalive, closing handshake, rate limits) run on
//! async-io's timer, which works under any executor. `write` queues,
//! `flush` sends, `send` does both, and only pongs and close replies are
//! flushed implicitly. It is also a [`Stream`](futures_core::Stream) and a
//! [`Sink`](futures_sink::Sink) of messages.
//!
//! ```
//! use async_lockgate::{Message, accept_async, client_async};
//! use smol::net::{TcpListener, TcpStream};
//!
//! # fn main() -> async_lockgate::Result<()> {
//! smol::block_on(async {
//!     let listener = TcpListener::bind("127.0.0.1:0").await?;
//!     let addr = listener.local_addr()?;
//!     let server = smol::spawn(async move {
//!         let (tcp, _) = listener.accept().await?;
//!         let mut ws = accept_async(tcp).await?;
//!         while let Ok(msg) = ws.read().await {
//!             if msg.is_data() {
//!                 ws.send(msg).await?;
//!             }
//!         }
//!         Ok::<(), async_lockgate::Error>(())
//!     });
//!
//!     let tcp = TcpStream::connect(addr).await?;
//!     let (mut ws, _) = client_async(format!("ws://{addr}/"), tcp).await?;
//!     for i in 0..3 {
//!         ws.write(Message::text(format!("hello {i}"))).await?; // queued
//!     }
//!     ws.flush().await?; // all three leave together
//!     for i in 0..3 {
//!         assert_eq!(ws.read().await?, Message::text(format!("hello {i}")));
//!     }
//!     ws.close(None).await?;
//!     while ws.read().await.is_ok() {} // until ConnectionClosed
//!     server.await
//! })
//! # }
//! ```
//!
//! # One driver, every runtime
//!
//! The driver (the loop over lockgate's sans-IO [`WebSocketContext`], the
//! connection and its split halves, the opening handshake) is written once,
//! in [`driver`], generic over a runtime. A runtime is a marker type
//! implementing [`runtime::Runtime`] (a clock and a timer),
//! [`runtime::ReadTransport`] and [`runtime::WriteTransport`] (its streams'
//! reads, writes, flush and shutdown) and [`runtime::Splits`] (its
//! streams' split):
//! [`FuturesIo`] here, `tokio_lockgate::Tokio` in tokio-lockgate, which
//! builds on this crate with `default-features = false`. Another runtime
//! is one such type and nothing else.
//!
//! # Opening connections
//!
//! [`connect_async`] and [`connect_async_with`] dial a `ws://` URL over
//! smol's TCP (async-net), through a proxy if the [`ClientOptions`] name
//! one (HTTP CONNECT, SOCKS5, the environment's), within the handshake's
//! deadline: the same dial sequence as tokio-lockgate's, written once in
//! [`driver::connect`]. With the `rustls` feature it speaks `wss://` and
//! `https://` proxies through futures-rustls, trusting the roots a
//! `Connector::Rustls` in
//! [`ClientOptions::tls`] names, or those of a root feature. Without it,
//! connect a TLS stream yourself and hand it to [`client_async`].
//!
//! ```no_run
//! # #[cfg(feature = "rustls-tls-webpki-roots")]
//! # fn main() -> async_lockgate::Result<()> {
//! use async_lockgate::{Message, connect_async};
//!
//! smol::block_on(async {
//!     let (mut ws, _response) = connect_async("wss://echo.example/").await?;
//!     assert!(ws.get_ref().is_tls());
//!     ws.send(Message::text("hello")).await?;
//!     println!("{}", ws.read().await?);
//!     ws.close(None).await
//! })
//! # }
//! # #[cfg(not(feature = "rustls-tls-webpki-roots"))]
//! # fn main() {}
//! ```
//!
//! # Cargo features
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `futures-io` | yes | the driver for `futures-io` streams ([`FuturesIo`], [`accept_async`], [`client_async`], [`connect_async`], [`WebSocketStream`]) |
//! | `rustls` | | `wss://` and `https://` proxies in [`connect_async`] through futures-rustls; bring your roots in [`ClientOptions::tls`] |
//! | `rustls-tls-webpki-roots` | | `rustls`, trusting the Mozilla roots compiled in |
//! | `rustls-tls-native-roots` | | `rustls`, trusting the operating system's roots |
//! | `tracing` | | lockgate's span per connection (`lockgate/tracing`), with the peer's address from `connect_async` |

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod driver;
#[cfg(feature = "futures-io")]
mod futures_io;
#[cfg(feature = "futures-io")]
mod futures_io_connect;
pub mod runtime;

#[cfg(feature = "futures-io")]
pub use futures_io::{Deadline, FuturesIo};
#[cfg(feature = "futures-io")]
pub use futures_io_connect::MaybeTlsStream;
/// The core crate.
pub use lockgate;
pub use lockgate::{
    Bytes, ClientOptions, CloseCode, CloseFrame, Config, Connector, Error, Message,
    PreparedMessage, ProtocolError, RateLimit, RatePolicy, Result, Role, ServerOptions,
    TimeoutKind, Utf8Bytes, WebSocketConfig, WebSocketContext, deflate, handshake, http,
};

#[cfg(feature = "futures-io")]
mod futures_io_api;
#[cfg(feature = "futures-io")]
pub use futures_io_api::*;
