//! The scripted mock stream behind each runtime's `AsyncRead` /
//! `AsyncWrite` (tokio's with feature `tokio`, futures-io's with feature
//! `futures-io`), where "would block" becomes `Pending`, and the
//! conformance connections of async-lockgate's driver over it, written
//! once for every runtime ([`AsyncWhole`], [`AsyncSplit`]).

use std::cell::RefCell;
use std::future::Future;
#[cfg(any(feature = "tokio", feature = "futures-io"))]
use std::io::{self, IoSlice, Read, Write};
use std::marker::PhantomData;
#[cfg(any(feature = "tokio", feature = "futures-io"))]
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use async_lockgate::driver::{WebSocketReadHalf, WebSocketStream, WebSocketWriteHalf};
use async_lockgate::runtime::{SplitTransport, Transport};
use lockgate::{CloseFrame, Config, Message, Result, Role, WebSocketContext};

use crate::MockStream;
use crate::conformance::{Connection, Driver, MockView, would_block};

/// A [`MockStream`] as an async stream. `WouldBlock` from the script
/// becomes `Pending` without a wake-up: tests drive it by polling by hand.
/// (With feature `uring`, the same behind uring-lockgate's completion
/// I/O.)
#[derive(Debug, Default)]
pub struct AsyncMock(pub MockStream);

#[cfg(any(feature = "tokio", feature = "futures-io"))]
fn pending_on_would_block<T>(result: io::Result<T>) -> Poll<io::Result<T>> {
    match result {
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Poll::Pending,
        other => Poll::Ready(other),
    }
}

#[cfg(feature = "tokio")]
impl tokio::io::AsyncRead for AsyncMock {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let n = std::task::ready!(pending_on_would_block(
            self.get_mut().0.read(buf.initialize_unfilled())
        ))?;
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

#[cfg(feature = "tokio")]
impl tokio::io::AsyncWrite for AsyncMock {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        pending_on_would_block(self.get_mut().0.write(buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        pending_on_would_block(self.get_mut().0.write_vectored(bufs))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        pending_on_would_block(self.get_mut().0.flush())
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(feature = "futures-io")]
impl futures_io::AsyncRead for AsyncMock {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        pending_on_would_block(self.get_mut().0.read(buf))
    }
}

#[cfg(feature = "futures-io")]
impl futures_io::AsyncWrite for AsyncMock {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        pending_on_would_block(self.get_mut().0.write(buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        pending_on_would_block(self.get_mut().0.write_vectored(bufs))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        pending_on_would_block(self.get_mut().0.flush())
    }

    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Polls `future` once with a waker that does nothing.
pub fn poll_once<F: Future>(future: F) -> Poll<F::Output> {
    let mut future = std::pin::pin!(future);
    future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
}

/// The call's outcome if it completes in one poll; would-block if not
/// (the future is dropped, as a timeout around it would).
fn at_once<T>(call: impl Future<Output = Result<T>>) -> Result<T> {
    match poll_once(call) {
        Poll::Ready(outcome) => outcome,
        Poll::Pending => Err(would_block()),
    }
}

/// async-lockgate's [`WebSocketStream`] over the mock on runtime `R`: each
/// call polled once and dropped when pending, so every case is also a
/// cancellation case.
#[derive(Debug)]
pub struct AsyncWhole<R>(PhantomData<R>);

/// The whole stream of [`AsyncWhole`].
#[derive(Debug)]
pub struct WholeConnection<R: Transport<AsyncMock>>(pub WebSocketStream<AsyncMock, R>);

impl<R: Transport<AsyncMock>> Driver for AsyncWhole<R> {
    type Connection = WholeConnection<R>;

    fn open(stream: MockStream, role: Role, config: Config) -> WholeConnection<R> {
        let context = WebSocketContext::new(role, config);
        WholeConnection(WebSocketStream::from_context(AsyncMock(stream), context))
    }
}

impl<R: Transport<AsyncMock>> Connection for WholeConnection<R> {
    fn read(&mut self) -> Result<Message> {
        at_once(self.0.read())
    }
    fn write(&mut self, msg: Message) -> Result<()> {
        at_once(self.0.write(msg))
    }
    fn flush(&mut self) -> Result<()> {
        at_once(self.0.flush())
    }
    fn send(&mut self, msg: Message) -> Result<()> {
        at_once(self.0.send(msg))
    }
    fn close(&mut self, frame: Option<CloseFrame>) -> Result<()> {
        at_once(self.0.close(frame))
    }
    fn buffered_output(&self) -> usize {
        self.0.buffered_output()
    }
    fn mock(&self) -> MockView<'_> {
        MockView::Lent(&self.0.get_ref().0)
    }
    fn script(&mut self, change: impl FnOnce(&mut MockStream)) {
        change(&mut self.0.get_mut().0);
    }
}

/// The split halves of async-lockgate's [`WebSocketStream`] over the mock
/// on runtime `R`: reads through the read half, everything else through
/// the write half.
#[derive(Debug)]
pub struct AsyncSplit<R>(PhantomData<R>);

type Halves<R> = (
    WebSocketWriteHalf<AsyncMock, R>,
    WebSocketReadHalf<AsyncMock, R>,
);

/// The halves of [`AsyncSplit`], rejoined for a moment when a case looks
/// at the stream.
#[derive(Debug)]
pub struct SplitConnection<R: SplitTransport<AsyncMock>>(RefCell<Option<Halves<R>>>);

impl<R: SplitTransport<AsyncMock>> SplitConnection<R> {
    fn rejoined<T>(&self, look: impl FnOnce(&mut WebSocketStream<AsyncMock, R>) -> T) -> T {
        let (write, read) = self.0.borrow_mut().take().expect("split");
        let mut ws = read.reunite(write).expect("halves of one stream");
        let seen = look(&mut ws);
        *self.0.borrow_mut() = Some(ws.into_split());
        seen
    }

    fn halves(&mut self) -> &mut Halves<R> {
        self.0.get_mut().as_mut().expect("split")
    }
}

impl<R: SplitTransport<AsyncMock>> Driver for AsyncSplit<R> {
    type Connection = SplitConnection<R>;

    fn open(stream: MockStream, role: Role, config: Config) -> SplitConnection<R> {
        let context = WebSocketContext::new(role, config);
        let ws = WebSocketStream::<_, R>::from_context(AsyncMock(stream), context);
        SplitConnection(RefCell::new(Some(ws.into_split())))
    }
}

impl<R: SplitTransport<AsyncMock>> Connection for SplitConnection<R> {
    fn read(&mut self) -> Result<Message> {
        at_once(self.halves().1.read())
    }
    fn write(&mut self, msg: Message) -> Result<()> {
        at_once(self.halves().0.write(msg))
    }
    fn flush(&mut self) -> Result<()> {
        at_once(self.halves().0.flush())
    }
    fn send(&mut self, msg: Message) -> Result<()> {
        at_once(self.halves().0.send(msg))
    }
    fn close(&mut self, frame: Option<CloseFrame>) -> Result<()> {
        at_once(self.halves().0.close(frame))
    }
    fn buffered_output(&self) -> usize {
        self.0.borrow().as_ref().expect("split").0.buffered_output()
    }
    fn mock(&self) -> MockView<'_> {
        MockView::Copied(Box::new(self.rejoined(|ws| ws.get_ref().0.clone())))
    }
    fn script(&mut self, change: impl FnOnce(&mut MockStream)) {
        self.rejoined(|ws| change(&mut ws.get_mut().0));
    }
}

/// What a dial case does once connected, through async-lockgate's driver
/// on any runtime: the kit's echo messages written and flushed once, read
/// back, then the closing handshake.
pub async fn echo_exchange<S: Unpin, R: Transport<S>>(ws: &mut WebSocketStream<S, R>, what: &str) {
    let messages = crate::conformance::echo_messages(what);
    for message in &messages {
        ws.write(message.clone()).await.unwrap();
    }
    ws.flush().await.unwrap();
    for message in messages {
        assert_eq!(ws.read().await.unwrap(), message, "{what}");
    }
    ws.close(None).await.unwrap();
    while ws.read().await.is_ok() {}
}
