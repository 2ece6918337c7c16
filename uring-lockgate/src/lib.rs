//! uring-lockgate: [lockgate]'s WebSocket on io_uring, through
//! [tokio-uring](tokio_uring), with the same explicit write/flush control
//! as tokio-lockgate.
//!
//! [`WebSocketStream`] is async-lockgate's driver (the loop over the
//! sans-IO [`WebSocketContext`], written once for every runtime) on the
//! [`Uring`] runtime: `write` queues, `flush` sends, `send` does both,
//! and only pongs and close replies are flushed implicitly.
//!
//! ```
//! use uring_lockgate::{Message, UringStream, accept_async, client_async};
//!
//! tokio_uring::start(async {
//!     let listener = tokio_uring::net::TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
//!     let addr = listener.local_addr()?;
//!     let server = tokio_uring::spawn(async move {
//!         let (tcp, _) = listener.accept().await?;
//!         let mut ws = accept_async(UringStream::new(tcp)).await?;
//!         while let Ok(msg) = ws.read().await {
//!             if msg.is_data() {
//!                 ws.send(msg).await?;
//!             }
//!         }
//!         Ok::<(), uring_lockgate::Error>(())
//!     });
//!
//!     let tcp = UringStream::connect(addr).await?;
//!     let (mut ws, _) = client_async(format!("ws://{addr}"), tcp).await?;
//!     for i in 0..3 {
//!         ws.write(Message::text(format!("hello {i}"))).await?; // queued
//!     }
//!     ws.flush().await?; // all three leave together
//!     for i in 0..3 {
//!         assert_eq!(ws.read().await?, Message::text(format!("hello {i}")));
//!     }
//!     ws.close(None).await?;
//!     while ws.read().await.is_ok() {} // until ConnectionClosed
//!     server.await.unwrap()?;
//!     Ok::<(), uring_lockgate::Error>(())
//! })?;
//! # Ok::<(), uring_lockgate::Error>(())
//! ```
//!
//! # Why tokio-uring
//!
//! tokio-uring runs on tokio's current-thread scheduler, so tokio's clock,
//! `Sleep` and paused test clock drive every deadline unchanged (the
//! [`Runtime`](async_lockgate::runtime::Runtime) impl of [`Uring`] is
//! tokio's), and its operations take `bytes::BytesMut` / `Bytes` as owned
//! buffers, so the context's own buffers are lent to the kernel instead of
//! copied: a read fills the spare capacity of the connection's receive
//! buffer ([`WebSocketContext::input_lend`]) and what it read joins the
//! buffer in place. Writes copy the output into one owned buffer per
//! stream, reused from write to write (see Limits for how much it takes). (monoio and compio bring their own
//! timers and executors.)
//!
//! The read and the write in flight live in the stream ([`UringStream`]),
//! not in the future polling them: a call dropped while pending
//! (cancelled) loses nothing, and the next call resumes the same
//! operation. A split connection's halves share the socket, each using
//! its own operation, so a read and a write run at once.
//!
//! The transports are written once over the owned-buffer traits of
//! [`completion`], which the conformance kit's scripted mock implements
//! too: the kit's cases run the same code as a socket.
//!
//! # Limits
//!
//! - Linux only, on a kernel that allows io_uring; everything runs inside
//!   [`tokio_uring::start`] (one thread per ring).
//! - tokio-uring 0.5 has zero-copy sends (`SEND_ZC`) only on its
//!   `UdpSocket`; TCP writes here are plain io_uring writes.
//! - No `connect_async`: connect a [`UringStream`] and call
//!   [`client_async`]; no TLS.
//! - A write completes only once the ring has run, so the stream takes
//!   output as a socket's send buffer does: up to 256 KiB at once, in a
//!   write in flight or staged behind one, and a flush waits for no
//!   completion (a failed write is reported by the next call). A larger
//!   output stays counted in `buffered_output` until the kernel took it.
//! - A parked connection keeps its read in flight, which owns the lent
//!   part of its receive buffer: the buffer is not released while idle.
//! - Dropping a [`UringStream`] with a read in flight shuts its read side
//!   down, so that the read completes and the socket closes once the ring
//!   reaps it; a write in flight is left to finish.

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod completion;
mod connect;
mod runtime;
mod split;
mod stream;
mod writes;

pub use connect::{accept_async, accept_async_with, client_async, client_async_with};
/// The core crate: `uring_lockgate::lockgate::Message` is
/// `lockgate::Message`.
pub use lockgate;
pub use lockgate::{
    Bytes, ClientOptions, CloseCode, CloseFrame, Config, Connector, Error, HandshakeFailure,
    Message, PreparedMessage, ProtocolError, RateLimit, RatePolicy, Result, Role, ServerOptions,
    TimeoutKind, Utf8Bytes, WebSocketConfig, WebSocketContext, deflate, handshake, http,
};
pub use runtime::Uring;
pub use split::{ReadPart, WritePart};
pub use stream::UringStream;

/// A WebSocket connection over `S` (by default a [`UringStream`]):
/// [async-lockgate's driver](async_lockgate::driver::WebSocketStream),
/// whose page lists its methods, the write/flush contract and what each
/// method keeps when cancelled, run on [`Uring`].
pub type WebSocketStream<S = UringStream> = async_lockgate::driver::WebSocketStream<S, Uring>;

/// The read half of a split [`WebSocketStream`].
pub type WebSocketReadHalf<S = UringStream> = async_lockgate::driver::WebSocketReadHalf<S, Uring>;

/// The write half of a split [`WebSocketStream`].
pub type WebSocketWriteHalf<S = UringStream> = async_lockgate::driver::WebSocketWriteHalf<S, Uring>;
