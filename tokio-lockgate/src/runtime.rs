//! [`Tokio`]: the runtime tokio-lockgate instantiates async-lockgate's
//! driver for. This file and TLS (`tls.rs`) are all that is specific to
//! tokio in a connection's life.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use std::net::{IpAddr, SocketAddr};

use async_lockgate::driver::first_address;
use async_lockgate::runtime::{
    Connect, ReadTransport, Runtime, SplitParts, Splits, WriteTransport,
};
use lockgate::{Connector, Result, WebSocketContext};
use tokio::io::{AsyncRead, AsyncWrite, ReadHalf, WriteHalf};
use tokio::net::TcpStream;
use tokio::time::{Sleep, sleep_until};
use tokio_util::io::poll_read_buf;

use crate::tls::{MaybeTlsStream, secure};

/// tokio as the runtime of [`async_lockgate::driver`]: tokio's
/// `AsyncRead + AsyncWrite + Unpin` streams, and tokio's clock and timer
/// (so tests on a paused clock drive every deadline).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokio;

impl Runtime for Tokio {
    type Timer = Sleep;

    fn now() -> Instant {
        tokio::time::Instant::now().into_std()
    }

    /// None outside a runtime (a hand-rolled executor): deadlines are then
    /// handled when a wait ends.
    fn timer_at(deadline: Instant) -> Option<Sleep> {
        tokio::runtime::Handle::try_current()
            .ok()
            .map(|_| sleep_until(deadline.into()))
    }

    fn deadline(timer: &Sleep) -> Instant {
        timer.deadline().into_std()
    }

    fn reset(timer: Pin<&mut Sleep>, deadline: Instant) {
        timer.reset(deadline.into());
    }
}

impl<S: AsyncRead + Unpin> ReadTransport<S> for Tokio {
    /// Reads into the context's spare capacity without zeroing it.
    fn poll_receive(
        stream: Pin<&mut S>,
        cx: &mut Context<'_>,
        context: &mut WebSocketContext,
    ) -> Poll<io::Result<usize>> {
        let polled = poll_read_buf(stream, cx, &mut context.input_buffer());
        let n = match polled {
            Poll::Ready(Ok(n)) => n,
            _ => 0,
        };
        context.input_appended(n);
        polled
    }

    fn poll_read(
        stream: Pin<&mut S>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let mut buf = tokio::io::ReadBuf::new(buf);
        stream
            .poll_read(cx, &mut buf)
            .map_ok(|()| buf.filled().len())
    }
}

impl<S: AsyncWrite + Unpin> WriteTransport<S> for Tokio {
    fn poll_write(
        stream: Pin<&mut S>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        stream.poll_write(cx, buf)
    }

    /// One vectored write where the stream has one, else the first slice
    /// (tokio's default).
    fn poll_write_vectored(
        stream: Pin<&mut S>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        stream.poll_write_vectored(cx, bufs)
    }

    fn poll_flush(stream: Pin<&mut S>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        stream.poll_flush(cx)
    }

    fn poll_shutdown(stream: Pin<&mut S>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        stream.poll_shutdown(cx)
    }
}

/// `tokio::io::split`: the parts share the stream behind tokio's own lock,
/// taken for each read or write call, never across the WebSocket work.
impl<S> SplitParts<S> for Tokio {
    type ReadPart = ReadHalf<S>;
    type WritePart = WriteHalf<S>;
}

impl<S: AsyncRead + AsyncWrite + Unpin> Splits<S> for Tokio {
    fn split(stream: S) -> (ReadHalf<S>, WriteHalf<S>) {
        tokio::io::split(stream)
    }

    fn unsplit(read: ReadHalf<S>, write: WriteHalf<S>) -> S {
        read.unsplit(write)
    }
}

impl Connect for Tokio {
    type Stream = MaybeTlsStream<TcpStream>;

    async fn tcp(host: &str, port: u16, nodelay: bool) -> io::Result<Self::Stream> {
        let tcp = TcpStream::connect((host, port)).await?;
        tcp.set_nodelay(nodelay)?;
        Ok(MaybeTlsStream::Plain(tcp))
    }

    async fn lookup(host: &str, port: u16) -> io::Result<IpAddr> {
        first_address(tokio::net::lookup_host((host, port)).await?)
    }

    async fn secure(
        stream: Self::Stream,
        host: &str,
        connector: Connector,
    ) -> Result<Self::Stream> {
        secure(stream, host, connector).await
    }

    fn peer_addr(stream: &Self::Stream) -> Option<SocketAddr> {
        stream.get_ref().peer_addr().ok()
    }
}
