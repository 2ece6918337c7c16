//! The seam between the async driver and a runtime: a clock, a timer, and
//! how the runtime's streams move bytes.
//!
//! Everything else (the loop that asks lockgate's sans-IO
//! [`WebSocketContext`] what to do, the connection and its split halves,
//! the opening handshake) is written once in [`driver`](crate::driver),
//! generic over a [`Transport`]. A runtime is a marker type implementing
//! [`Runtime`], [`ReadTransport`] and [`WriteTransport`] (and [`Splits`]
//! for split halves, [`Connect`] for `connect_async`);
//! [`FuturesIo`](crate::FuturesIo) (this crate) and `tokio_lockgate::Tokio`
//! are the two there are.

use std::future::Future;
use std::io::{self, IoSlice};
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use lockgate::{Connector, Output, WebSocketContext};

use crate::driver::{Chunks, transmit};

/// A clock and a timer: what the driver needs to enforce deadlines (the
/// handshake's, keepalive, the closing handshake's, rate limits).
pub trait Runtime {
    /// A timer that completes at an instant, and can be moved to another.
    type Timer: Future;

    /// The clock deadlines are measured on (a runtime with a test clock
    /// returns that clock's time).
    fn now() -> Instant;

    /// A timer completing at `deadline`, or `None` where none can be had
    /// (tokio's outside a runtime): deadlines are then handled only when a
    /// wait ends for another reason.
    fn timer_at(deadline: Instant) -> Option<Self::Timer>;

    /// The instant `timer` completes at.
    fn deadline(timer: &Self::Timer) -> Instant;

    /// Moves `timer` to `deadline`.
    fn reset(timer: Pin<&mut Self::Timer>, deadline: Instant);
}

/// How a runtime's stream `S` is read. Each method is the runtime's own
/// poll of the same name; only [`poll_receive`](Self::poll_receive) does
/// more, since the runtimes differ in how they read into a buffer.
pub trait ReadTransport<S>: Runtime {
    /// Reads what `stream` has into `context`'s input and reports the count
    /// to it (0 when the read failed or is pending, else through
    /// [`WebSocketContext::input_appended`] or
    /// [`WebSocketContext::commit_input`]); returns the count, 0 at the end
    /// of the stream.
    ///
    /// # Errors
    ///
    /// The stream's.
    fn poll_receive(
        stream: Pin<&mut S>,
        cx: &mut Context<'_>,
        context: &mut WebSocketContext,
    ) -> Poll<io::Result<usize>>;

    /// Reads into `buf` (the opening handshake's reads).
    ///
    /// # Errors
    ///
    /// The stream's.
    fn poll_read(
        stream: Pin<&mut S>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>>;
}

/// How a runtime's stream `S` is written: the runtime's own polls of the
/// same names.
pub trait WriteTransport<S>: Runtime {
    /// Writes from `buf`.
    ///
    /// # Errors
    ///
    /// The stream's.
    fn poll_write(stream: Pin<&mut S>, cx: &mut Context<'_>, buf: &[u8])
    -> Poll<io::Result<usize>>;

    /// Writes from `bufs`, in one call where the stream can.
    ///
    /// # Errors
    ///
    /// The stream's.
    fn poll_write_vectored(
        stream: Pin<&mut S>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>>;

    /// One write of `output`'s bytes (the driver's
    /// [`Next::Transmit`](lockgate::Next::Transmit)), advancing it by what
    /// the stream took. By default one contiguous chunk goes out with
    /// [`poll_write`](Self::poll_write), several with one
    /// [`poll_write_vectored`](Self::poll_write_vectored); a runtime whose
    /// writes own their buffer (io_uring's) hands the bytes over instead.
    ///
    /// # Errors
    ///
    /// The stream's; `WriteZero` when it took nothing.
    #[inline]
    fn poll_transmit(
        stream: Pin<&mut S>,
        cx: &mut Context<'_>,
        output: &mut Output<'_>,
    ) -> Poll<io::Result<()>> {
        transmit(output, |chunks| match chunks {
            Chunks::One(buf) => Self::poll_write(stream, cx, buf),
            Chunks::Many(bufs) => Self::poll_write_vectored(stream, cx, bufs),
        })
    }

    /// Whether `stream` holds output it took but has not yet handed to
    /// the kernel (a completion-based runtime's, io_uring's, staged
    /// behind a write in flight): a read whose output step is pending on
    /// it waits for that step instead of reading on, as a read on a
    /// socket reads on only once the socket took what was owed, so the
    /// pong owed for each ping of a burst goes out. `false` by default: a
    /// pending write of a readiness-based stream is one it cannot take
    /// now, and the read goes on.
    #[inline]
    fn holds_unsent_output(stream: &S) -> bool {
        let _ = stream;
        false
    }

    /// Flushes.
    ///
    /// # Errors
    ///
    /// The stream's.
    fn poll_flush(stream: Pin<&mut S>, cx: &mut Context<'_>) -> Poll<io::Result<()>>;

    /// Shuts the write side down (TLS: close_notify, then the FIN).
    ///
    /// # Errors
    ///
    /// The stream's.
    fn poll_shutdown(stream: Pin<&mut S>, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
}

/// A stream `S` the runtime both reads and writes: what a connection runs
/// over. Implemented for every runtime that implements [`ReadTransport`]
/// and [`WriteTransport`] for `S`.
pub trait Transport<S>: ReadTransport<S> + WriteTransport<S> {}

impl<S, R: ReadTransport<S> + WriteTransport<S>> Transport<S> for R {}

/// How a runtime opens connections for `connect_async`: TCP, name lookups
/// and TLS. The dial sequence itself (the route's steps, a proxy's tunnel,
/// one deadline over all of it) is [`driver::connect`](crate::driver::connect),
/// written once.
pub trait Connect: Transport<Self::Stream> + Sized {
    /// What `connect_async` connects over: TCP, maybe under TLS.
    type Stream: Unpin + Send + 'static;

    /// A TCP connection to `host` (a name or an address) and `port`, with
    /// `TCP_NODELAY` set to `nodelay`.
    fn tcp(
        host: &str,
        port: u16,
        nodelay: bool,
    ) -> impl Future<Output = io::Result<Self::Stream>> + Send;

    /// The first address `host` resolves to.
    fn lookup(host: &str, port: u16) -> impl Future<Output = io::Result<IpAddr>> + Send;

    /// `stream` secured to `host` with TLS through `connector` (over TLS
    /// already, inside an `https://` proxy's session).
    fn secure(
        stream: Self::Stream,
        host: &str,
        connector: Connector,
    ) -> impl Future<Output = lockgate::Result<Self::Stream>> + Send;

    /// The TCP peer of `stream` (the proxy, through one), for the
    /// connection's span.
    fn peer_addr(stream: &Self::Stream) -> Option<SocketAddr>;
}

/// The types of the parts a runtime splits a stream `S` into, named for
/// every `S`: the halves of a split connection hold them, and with no
/// bound on `S` here, a type that holds a half needs none either (as code
/// written for `SplitStream<WebSocketStream<S>>` has none). What the parts
/// can do is [`Splits`]'s and [`SplitTransport`]'s, on the impls.
pub trait SplitParts<S>: Runtime {
    /// The part that reads.
    type ReadPart: Unpin;
    /// The part that writes.
    type WritePart: Unpin;
}

/// How a runtime splits its stream `S` so that a split connection's read
/// half reads while its write half writes: the runtime's own split (for
/// tokio, `tokio::io::split`), whose parts the halves own and which the
/// runtime reads and writes like any stream.
pub trait Splits<S>: Transport<S> + SplitParts<S> {
    /// Splits `stream` into its parts.
    fn split(stream: S) -> (Self::ReadPart, Self::WritePart);

    /// Joins the parts of one stream.
    fn unsplit(read: Self::ReadPart, write: Self::WritePart) -> S;
}

/// A runtime that splits `S` into parts it can read and write: what a
/// split connection needs. Implemented for every runtime that implements
/// [`Splits`] for `S`, [`ReadTransport`] for the read part and
/// [`WriteTransport`] for the write part.
pub trait SplitTransport<S>:
    Splits<S>
    + ReadTransport<<Self as SplitParts<S>>::ReadPart>
    + WriteTransport<<Self as SplitParts<S>>::WritePart>
{
}

impl<S, R> SplitTransport<S> for R where
    R: Splits<S>
        + ReadTransport<<R as SplitParts<S>>::ReadPart>
        + WriteTransport<<R as SplitParts<S>>::WritePart>
{
}
