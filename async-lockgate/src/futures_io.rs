//! The [`FuturesIo`] runtime: `futures-io` streams, and async-io's timer
//! for deadlines. Works under smol and async-std (both run on async-io),
//! and under any other executor: async-io drives its timers from a thread
//! of its own when no `block_on` of its runs.

use std::future::Future;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use futures_io::{AsyncRead, AsyncWrite};
use futures_util::io::{AsyncReadExt, ReadHalf, WriteHalf};
use lockgate::WebSocketContext;

use crate::runtime::{ReadTransport, Runtime, SplitParts, Splits, WriteTransport};

/// The runtime of `futures-io` streams (`AsyncRead + AsyncWrite + Unpin`):
/// smol's and async-std's sockets, and anything with a compat layer (for
/// example tokio's through `tokio_util::compat`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FuturesIo;

/// An async-io timer that remembers its instant.
#[derive(Debug)]
pub struct Deadline {
    timer: async_io::Timer,
    at: Instant,
}

impl Future for Deadline {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.timer).poll(cx).map(drop)
    }
}

impl Runtime for FuturesIo {
    type Timer = Deadline;

    fn now() -> Instant {
        Instant::now()
    }

    fn timer_at(at: Instant) -> Option<Deadline> {
        Some(Deadline {
            timer: async_io::Timer::at(at),
            at,
        })
    }

    fn deadline(timer: &Deadline) -> Instant {
        timer.at
    }

    fn reset(mut timer: Pin<&mut Deadline>, at: Instant) {
        timer.timer.set_at(at);
        timer.at = at;
    }
}

impl<S: AsyncRead + Unpin> ReadTransport<S> for FuturesIo {
    /// `futures-io` reads into initialised memory only: the context hands
    /// out zeroed room ([`WebSocketContext::input_spare`]).
    fn poll_receive(
        stream: Pin<&mut S>,
        cx: &mut Context<'_>,
        context: &mut WebSocketContext,
    ) -> Poll<io::Result<usize>> {
        let polled = stream.poll_read(cx, context.input_spare());
        let n = match polled {
            Poll::Ready(Ok(n)) => n,
            _ => 0,
        };
        context.commit_input(n);
        polled
    }

    fn poll_read(
        stream: Pin<&mut S>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        stream.poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> WriteTransport<S> for FuturesIo {
    fn poll_write(
        stream: Pin<&mut S>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        stream.poll_write(cx, buf)
    }

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

    /// `futures-io`'s `poll_close`: for a TCP stream, the FIN; for TLS,
    /// close_notify first.
    fn poll_shutdown(stream: Pin<&mut S>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        stream.poll_close(cx)
    }
}

/// `futures_util::io::split`: the parts share the stream behind its lock,
/// taken for each read or write call, never across the WebSocket work.
impl<S> SplitParts<S> for FuturesIo {
    type ReadPart = ReadHalf<S>;
    type WritePart = WriteHalf<S>;
}

impl<S: AsyncRead + AsyncWrite + Unpin> Splits<S> for FuturesIo {
    fn split(stream: S) -> (ReadHalf<S>, WriteHalf<S>) {
        stream.split()
    }

    fn unsplit(read: ReadHalf<S>, write: WriteHalf<S>) -> S {
        read.reunite(write).expect("the parts of one stream")
    }
}
