//! [`Uring`]: the runtime uring-lockgate instantiates async-lockgate's
//! driver for. Its clock and timer are tokio's (tokio-uring runs on
//! tokio's current-thread scheduler); its reads and writes are the owned-
//! buffer operations of [`completion`](crate::completion), written once
//! here for every stream that has them.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use async_lockgate::runtime::{ReadTransport, Runtime, WriteTransport};
use bytes::{BufMut, BytesMut};
use lockgate::{Output, WebSocketContext};
use tokio::time::{Sleep, sleep_until};

use crate::completion::{Completion, CompletionRead, CompletionWrite};
use crate::writes;

/// io_uring (through tokio-uring) as the runtime of
/// [`async_lockgate::driver`]: streams whose reads and writes own their
/// buffers ([`CompletionRead`], [`CompletionWrite`]), and tokio's clock
/// and timer (so tests on a paused clock drive every deadline).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Uring;

impl Runtime for Uring {
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

impl<S: CompletionRead + Unpin> ReadTransport<S> for Uring {
    /// Lends the context's spare input capacity to the read, which owns it
    /// until the kernel is done; what was read joins the input in place.
    fn poll_receive(
        stream: Pin<&mut S>,
        cx: &mut Context<'_>,
        context: &mut WebSocketContext,
    ) -> Poll<io::Result<usize>> {
        let stream = stream.get_mut();
        let lent = (!stream.read_in_flight()).then(|| context.input_lend());
        match stream.poll_read_owned(cx, lent) {
            Completion::Done(read, buf) => {
                context.input_returned(buf);
                Poll::Ready(read)
            }
            Completion::Pending(unused) => {
                if let Some(buf) = unused {
                    context.input_returned(buf);
                }
                Poll::Pending
            }
        }
    }

    /// The opening handshake's reads: into a buffer of `buf`'s size, then
    /// copied (once per connection).
    fn poll_read(
        stream: Pin<&mut S>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let stream = stream.get_mut();
        let lent =
            (!stream.read_in_flight()).then(|| BytesMut::with_capacity(buf.len()).limit(buf.len()));
        match stream.poll_read_owned(cx, lent) {
            Completion::Done(read, owned) => Poll::Ready(read.and_then(|_| copy_read(&owned, buf))),
            Completion::Pending(_) => Poll::Pending,
        }
    }
}

/// A handshake read's bytes moved into the caller's buffer.
fn copy_read(read: &[u8], buf: &mut [u8]) -> io::Result<usize> {
    // A read started for an earlier, larger buffer: the handshake's
    // buffers only grow, so this is a broken contract, not a lost byte.
    let to = buf.get_mut(..read.len()).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "a handshake read completed into a smaller buffer than it started with",
        )
    })?;
    to.copy_from_slice(read);
    Ok(read.len())
}

impl<S: CompletionWrite + Unpin> WriteTransport<S> for Uring {
    /// The opening handshake's writes: everything accepted before goes
    /// out first, then `buf`, to its completion.
    fn poll_write(
        stream: Pin<&mut S>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        writes::poll_write_through(stream.get_mut(), cx, &[IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        stream: Pin<&mut S>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        writes::poll_write_through(stream.get_mut(), cx, bufs)
    }

    fn poll_transmit(
        stream: Pin<&mut S>,
        cx: &mut Context<'_>,
        output: &mut Output<'_>,
    ) -> Poll<io::Result<()>> {
        writes::poll_transmit(stream.get_mut(), cx, output)
    }

    /// Staged bytes wait for the write in flight: the connection reads on
    /// only once they are the kernel's, as it would once a socket took
    /// them. (Output whose head is in flight is output the stream cannot
    /// take yet, as on a full socket: the read goes on.)
    fn holds_unsent_output(stream: &S) -> bool {
        stream.has_staged()
    }

    fn poll_flush(stream: Pin<&mut S>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let stream = stream.get_mut();
        std::task::ready!(writes::poll_flush(stream, cx))?;
        stream.poll_flush_owned(cx)
    }

    /// Everything accepted written, then the FIN.
    fn poll_shutdown(stream: Pin<&mut S>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let stream = stream.get_mut();
        std::task::ready!(writes::poll_drain(stream, cx))?;
        stream.poll_shutdown_owned(cx)
    }
}
