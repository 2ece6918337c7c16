//! [`WebSocketStream`]: a WebSocket over any stream a runtime can drive.

use std::fmt;
use std::future::{Future, poll_fn};
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::{FusedStream, Stream};
use futures_sink::Sink;
use lockgate::protocol::ConfigView;
use lockgate::{
    CloseFrame, Config, Error, Message, PreparedMessage, Result, Role, WebSocketConfig,
    WebSocketContext,
};

use super::core::Core;
use super::split::{WebSocketReadHalf, WebSocketWriteHalf, split};
use crate::runtime::{Runtime, SplitTransport, Transport};

/// A WebSocket connection over a stream of runtime `R`, driving lockgate's
/// sans-IO [`WebSocketContext`] directly (no blocking shim, no waker
/// proxy). `async_lockgate::WebSocketStream<S>` is this over `futures-io`
/// streams, `tokio_lockgate::WebSocketStream<S>` over tokio's.
///
/// # The write/flush contract
///
/// - [`write`](Self::write) (and [`Sink::start_send`], i.e.
///   `SinkExt::feed`) queues a message in the out buffer and never flushes;
///   it writes to the socket only once the buffer holds `write_buffer_size`
///   bytes.
/// - [`flush`](SendFlush::flush) (`SinkExt::flush`) writes everything and flushes
///   the socket. [`send`](SendFlush::send) is both.
/// - The pong answering a ping, and the reply to a close, are written and
///   flushed by whichever side polls next — [`read`](Self::read) / the
///   [`Stream`], or a write, flush or send — behind data already queued.
///   Nothing else is flushed implicitly.
///
/// # Cancellation safety
///
/// Every method keeps its progress in the connection, never in the future:
///
/// - [`read`](Self::read) is cancel-safe: a future dropped at any await
///   point has not taken a message; bytes already received stay buffered
///   for the next call.
/// - [`write`](Self::write) and [`send`](SendFlush::send) accept the message on
///   their first poll (it is encoded into the out buffer before anything
///   awaits). Once accepted, dropping the future loses nothing: the bytes go
///   out with the next write or flush. A future dropped before its first
///   poll never accepted the message.
/// - [`flush`](SendFlush::flush) and [`close`](Self::close) are cancel-safe:
///   calling them again continues where the dropped future stopped.
///
/// # Examples
///
/// ```no_run
/// use async_lockgate::{Message, client_async};
///
/// # async fn run() -> async_lockgate::Result<()> {
/// let tcp = smol::net::TcpStream::connect("127.0.0.1:9001").await?;
/// let (mut ws, _) = client_async("ws://127.0.0.1:9001", tcp).await?;
/// for i in 0..64 {
///     ws.write(Message::text(format!("tick {i}"))).await?; // queued
/// }
/// ws.flush().await?; // one flush for the batch
/// let echo = ws.read().await?;
/// # let _ = echo; Ok(()) }
/// ```
///
/// # `send` and `flush`, and `SinkExt`
///
/// [`send`](SendFlush::send) and [`flush`](SendFlush::flush) are reached
/// through `Deref` (on [`SendFlush`]) rather than defined here, so that
/// where `futures::SinkExt` is imported its `send` and `flush` are the ones
/// called (they do the same, through the [`Sink`] implementation) and the
/// import is not reported as unused; without the import, `ws.send(msg)`
/// and `ws.flush()` still work.
pub struct WebSocketStream<S, R: Runtime> {
    inner: SendFlush<S, R>,
    /// What [`get_config`](Self::get_config) lends.
    config_view: ConfigView,
}

/// The [`send`](SendFlush::send) and [`flush`](SendFlush::flush) of a
/// [`WebSocketStream`], which reaches them through `Deref` (see
/// [there](WebSocketStream#send-and-flush-and-sinkext) why).
pub struct SendFlush<S, R: Runtime> {
    core: Core<S, R>,
}

impl<S: fmt::Debug, R: Runtime> fmt::Debug for WebSocketStream<S, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebSocketStream")
            .field("core", &self.inner.core)
            .finish()
    }
}

impl<S: fmt::Debug, R: Runtime> fmt::Debug for SendFlush<S, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendFlush")
            .field("core", &self.core)
            .finish()
    }
}

impl<S, R: Runtime> Deref for WebSocketStream<S, R> {
    type Target = SendFlush<S, R>;

    fn deref(&self) -> &SendFlush<S, R> {
        &self.inner
    }
}

impl<S, R: Runtime> DerefMut for WebSocketStream<S, R> {
    fn deref_mut(&mut self) -> &mut SendFlush<S, R> {
        &mut self.inner
    }
}

impl<S, R: Runtime> WebSocketStream<S, R> {
    /// Wraps a stream whose opening handshake is already done, for example
    /// the upgraded connection from hyper or axum. `async` (and ready at
    /// once) as in tokio-tungstenite and async-tungstenite.
    ///
    /// `config` is a [`Config`], or tungstenite's [`WebSocketConfig`] or
    /// `Option<WebSocketConfig>` (`None`: the defaults).
    pub async fn from_raw_socket(stream: S, role: Role, config: impl Into<Config>) -> Self {
        Self::from_context(stream, WebSocketContext::new(role, config.into()))
    }

    /// Like [`from_raw_socket`](Self::from_raw_socket), for a stream from
    /// which the bytes `part`, past the handshake, were already read: they
    /// are the start of the frame stream.
    pub async fn from_partially_read(
        stream: S,
        part: impl AsRef<[u8]>,
        role: Role,
        config: impl Into<Config>,
    ) -> Self {
        let context = WebSocketContext::after_handshake(role, config.into(), None, part.as_ref());
        Self::from_context(stream, context)
    }

    /// Drives an existing context over `stream`.
    pub fn from_context(stream: S, context: WebSocketContext) -> Self {
        Self {
            config_view: ConfigView::of(&context.config()),
            inner: SendFlush {
                core: Core::new(stream, context),
            },
        }
    }

    /// The settings tungstenite's [`WebSocketConfig`] has (the whole
    /// configuration is [`config`](Self::config)).
    pub fn get_config(&self) -> &WebSocketConfig {
        self.config_view.get()
    }

    /// The stream.
    pub fn get_ref(&self) -> &S {
        &self.inner.core.stream
    }

    /// The stream, mutably. Reading or writing it directly corrupts the
    /// connection.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner.core.stream
    }

    /// Gives back the stream; buffered input and output are dropped.
    pub fn into_inner(self) -> S {
        self.inner.core.stream
    }

    /// The protocol state.
    pub fn context(&self) -> &WebSocketContext {
        &self.inner.core.context
    }

    /// The subprotocol the opening handshake chose, if any
    /// ([`WebSocketContext::subprotocol`]).
    pub fn subprotocol(&self) -> Option<&str> {
        self.inner.core.context.subprotocol()
    }

    /// The configuration (a copy).
    pub fn config(&self) -> Config {
        self.inner.core.context.config()
    }

    /// Replaces the configuration; limits and deadlines apply from the
    /// next frame and the next wait.
    pub fn reconfigure(&mut self, config: Config) {
        self.config_view = ConfigView::of(&config);
        self.inner.core.context.set_config(config);
    }

    /// Whether more messages can be read.
    pub fn can_read(&self) -> bool {
        !self.inner.core.context.is_terminated()
    }

    /// Bytes written but not yet handed to the stream.
    pub fn buffered_output(&self) -> usize {
        self.inner.core.context.buffered_output()
    }

    /// Bytes received but not yet returned as messages: when non-zero, the
    /// next [`read`](Self::read) may complete without waiting for the
    /// socket. Useful to flush replies only once the input is drained.
    pub fn buffered_input(&self) -> usize {
        self.inner.core.context.buffered_input()
    }

    /// Queues a close frame, owed a flush that the next read, write or
    /// flush gives it (a drain's turn, from inside a read).
    #[doc(hidden)]
    pub fn queue_close(&mut self, frame: CloseFrame) -> Result<()> {
        self.inner.core.context.close(Some(frame))
    }

    pub(crate) fn into_core(self) -> Core<S, R> {
        self.inner.core
    }

    pub(crate) fn from_core(core: Core<S, R>) -> Self {
        Self {
            config_view: ConfigView::of(&core.context.config()),
            inner: SendFlush { core },
        }
    }
}

impl<S: Unpin, R: Transport<S>> WebSocketStream<S, R> {
    /// Runs what a write, flush or close owes until it is done.
    async fn run_write(&mut self) -> Result<()> {
        poll_fn(|cx| self.inner.core.poll_write(cx)).await
    }

    /// Reads the next message. Cancel-safe.
    ///
    /// Pings, pongs (except the pong answering a keepalive ping, which the
    /// connection keeps) and the peer's close are returned too; the pong and the
    /// close reply are queued and sent for you. Keepalive pings go out and
    /// the keepalive and close deadlines are enforced while it waits.
    ///
    /// # Errors
    ///
    /// As for the core's [`WebSocket::read`](lockgate::WebSocket::read):
    /// [`Error::ConnectionClosed`] once the closing handshake completes
    /// (after the write side was shut down), then [`Error::AlreadyClosed`];
    /// a protocol or capacity error after the matching close frame was
    /// sent and the close lingered (the write side shut down, input
    /// discarded until the peer's FIN or `close_timeout`, so that dropping
    /// the connection next does not reset it with the close unread; see
    /// [`Next::Discard`](lockgate::Next::Discard)); a timeout ([`Error::timeout`])
    /// when a deadline passed.
    // Not an `async fn`: the future is one pointer, so a task parked in a
    // read is 40 bytes smaller.
    pub fn read(&mut self) -> impl Future<Output = Result<Message>> + '_ {
        poll_fn(move |cx| {
            let mut wcx = Context::from_waker(cx.waker());
            self.inner.core.poll_read(cx, &mut wcx)
        })
    }

    /// Queues `msg` without flushing (the message is accepted on the first
    /// poll); writes out only once the buffer reached `write_buffer_size`,
    /// or to deliver an owed pong or close reply.
    ///
    /// # Errors
    ///
    /// [`Error::WriteBufferFull`] hands `msg` back untouched; other errors
    /// as for [`WebSocketContext::write`]. An I/O error after acceptance
    /// means the message is queued and the stream failed.
    pub async fn write(&mut self, msg: Message) -> Result<()> {
        self.inner.core.context.write(msg)?;
        self.run_write().await
    }

    /// [`write`](Self::write), but never compressed, whatever
    /// permessage-deflate negotiated (see
    /// [`WebSocketContext::write_uncompressed`]).
    ///
    /// # Errors
    ///
    /// As for [`write`](Self::write).
    pub async fn write_uncompressed(&mut self, msg: Message) -> Result<()> {
        self.inner.core.context.write_uncompressed(msg)?;
        self.run_write().await
    }

    /// [`write`](Self::write) for a [`PreparedMessage`]: encoded once for
    /// every connection it goes to (see
    /// [`WebSocketContext::write_prepared`]).
    ///
    /// # Errors
    ///
    /// As for [`write`](Self::write); a full buffer hands back the message
    /// `msg` was prepared from, in [`Error::WriteBufferFull`].
    pub async fn write_prepared(&mut self, msg: &PreparedMessage) -> Result<()> {
        self.inner.core.context.write_prepared(msg)?;
        self.run_write().await
    }

    /// Starts the closing handshake: queues a close frame and flushes. Keep
    /// reading until [`Error::ConnectionClosed`] (or the end of the
    /// [`Stream`]) to complete it. Cancel-safe.
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyClosed`] once the connection is over; [`Error::Io`].
    pub async fn close(&mut self, frame: Option<CloseFrame>) -> Result<()> {
        self.inner.core.context.close(frame)?;
        self.inner.flush().await
    }
}

impl<S: Unpin, R: SplitTransport<S>> WebSocketStream<S, R> {
    /// Splits into a write half and a read half that can move to different
    /// tasks, and run side by side: each half owns its side of the
    /// connection (the read half decodes, the write half encodes, neither
    /// taking a lock the other holds), and only what one owes the other
    /// crosses. Pongs and close replies owed by the read half are written
    /// by it, behind the data queued by the write half, and the read
    /// half's waits enforce the deadlines.
    ///
    /// The order is **(write, read)**, as with `futures::StreamExt::split`
    /// (sink first, then stream). Unlike `StreamExt::split`'s halves
    /// (`SplitSink<WebSocketStream<S>, Message>` and
    /// `SplitStream<WebSocketStream<S>>`, which `ws.split()` gives with
    /// `StreamExt` imported, and which lock the whole stream for each
    /// operation), these keep `write`/`flush`/`send`/`close` and `read`,
    /// and the read half answers pings on its own.
    ///
    /// ```
    /// # async fn f(ws: async_lockgate::WebSocketStream<smol::net::TcpStream>) {
    /// let (write, read) = ws.into_split(); // write half first, like StreamExt::split
    /// # let _ = (write, read);
    /// # }
    /// ```
    pub fn into_split(self) -> (WebSocketWriteHalf<S, R>, WebSocketReadHalf<S, R>) {
        split(self)
    }
}

impl<S: Unpin, R: Transport<S>> SendFlush<S, R> {
    /// Writes everything queued and flushes the stream. Cancel-safe.
    ///
    /// # Errors
    ///
    /// [`Error::Io`].
    pub async fn flush(&mut self) -> Result<()> {
        poll_fn(|cx| self.core.poll_flush(cx)).await
    }

    /// [`write`](WebSocketStream::write) then [`flush`](SendFlush::flush).
    ///
    /// # Errors
    ///
    /// As for both.
    pub async fn send(&mut self, msg: Message) -> Result<()> {
        self.core.context.write(msg)?;
        self.flush().await
    }
}

/// Maps the end of the closing handshake to the end of the stream. Once
/// the connection is over every read fails with `AlreadyClosed`, so the
/// stream stays ended without a flag of its own.
#[inline]
#[doc(hidden)]
pub fn stream_item(result: Result<Message>) -> Option<Result<Message>> {
    match result {
        Err(Error::ConnectionClosed | Error::AlreadyClosed) => None,
        other => Some(other),
    }
}

impl<S: Unpin, R: Transport<S>> Stream for WebSocketStream<S, R> {
    type Item = Result<Message>;

    /// Yields messages; ends after the closing handshake completes. A
    /// protocol error is yielded once, then the stream ends.
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut wcx = Context::from_waker(cx.waker());
        self.get_mut()
            .inner
            .core
            .poll_read(cx, &mut wcx)
            .map(stream_item)
    }
}

/// Ended once the stream has yielded how the connection ended (the error,
/// or `None` after the closing handshake): polling it again only yields
/// `None`. For `select!` loops and frameworks that ask (axum's
/// `WebSocket`).
impl<S: Unpin, R: Transport<S>> FusedStream for WebSocketStream<S, R> {
    fn is_terminated(&self) -> bool {
        self.inner.core.context.is_read_over()
    }
}

impl<S: Unpin, R: Transport<S>> Sink<Message> for WebSocketStream<S, R> {
    type Error = Error;

    /// Ready once the out buffer is below `write_buffer_size` (it writes, it
    /// does not flush) and any owed pong or close reply is out.
    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        self.get_mut().inner.core.poll_write(cx)
    }

    /// Queues the message ([`SinkExt::feed`](https://docs.rs/futures/latest/futures/sink/trait.SinkExt.html#method.feed)
    /// of many, then one flush, costs one socket flush).
    fn start_send(self: Pin<&mut Self>, msg: Message) -> Result<()> {
        self.get_mut().inner.core.context.write(msg)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        self.get_mut().inner.core.poll_flush(cx)
    }

    /// Sends a close frame (if none was sent) and flushes. Read on to
    /// complete the closing handshake.
    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        let this = self.get_mut();
        match this.inner.core.context.close(None) {
            Ok(()) | Err(Error::AlreadyClosed) => {}
            Err(e) => return Poll::Ready(Err(e)),
        }
        this.inner.core.poll_flush(cx)
    }
}
