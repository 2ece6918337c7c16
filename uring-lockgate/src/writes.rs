//! The write side of [`Uring`](crate::Uring)'s transports, over any
//! [`CompletionWrite`] stream.
//!
//! io_uring completes a write only when the ring is next driven, so a
//! connection that waited for each write's completion before taking more
//! output would behave unlike a socket: a burst of pings read meanwhile
//! would get only the newest pong (the context keeps one pong while an
//! earlier one is unflushed). So the stream accepts output as a socket's
//! send buffer does: a write of up to [`STAGE_LIMIT`] bytes, or that many
//! staged behind a write in flight, is taken off the connection's output
//! at once, and a flush waits for a completion only to hand staged bytes
//! to the kernel (see [`poll_flush`]). What is larger stays
//! counted as the connection's buffered output until the kernel took it,
//! so `buffered_output` and the write buffer limits mean what they mean
//! on a socket.

use std::io::{self, IoSlice};
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use lockgate::Output;

use crate::completion::{Completion, CompletionWrite, InFlight, STAGE_LIMIT};

/// The most chunks of output one write gathers.
const MAX_SLICES: usize = 64;

/// Polls the write in flight until it completes or would wait: a short
/// write goes on with its rest, and the bytes it completed that the
/// output still counted are taken off it through `advance`. Ready once no
/// write is in flight, with the error of one that failed.
pub(crate) fn poll_settle<S: CompletionWrite>(
    stream: &mut S,
    cx: &mut Context<'_>,
    advance: &mut dyn FnMut(usize),
) -> Poll<io::Result<()>> {
    let mut next: Option<Bytes> = None;
    while stream.write_in_flight() || next.is_some() {
        match stream.poll_write_owned(cx, next.take()) {
            Completion::Pending(None) => return Poll::Pending,
            Completion::Pending(Some(_)) => return Poll::Ready(Err(refused())),
            Completion::Done(Err(error), _) => {
                stream.set_in_flight(InFlight::default());
                return Poll::Ready(Err(error));
            }
            Completion::Done(Ok(0), _) => {
                stream.set_in_flight(InFlight::default());
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            Completion::Done(Ok(n), mut rest) => {
                let mut in_flight = stream.in_flight();
                let ahead = n.min(in_flight.ahead);
                in_flight.ahead -= ahead;
                let counted = (n - ahead).min(in_flight.counted);
                in_flight.counted -= counted;
                advance(counted);
                stream.set_in_flight(in_flight);
                if n < rest.len() {
                    rest.advance(n);
                    next = Some(rest);
                }
            }
        }
    }
    Poll::Ready(Ok(()))
}

/// Hands the kernel what it can of `output`; ready once some of it was
/// taken (or there is none), pending while the stream can take none.
pub(crate) fn poll_transmit<S: CompletionWrite>(
    stream: &mut S,
    cx: &mut Context<'_>,
    output: &mut Output<'_>,
) -> Poll<io::Result<()>> {
    let mut slices = [IoSlice::new(&[]); MAX_SLICES];
    loop {
        if let Poll::Ready(Err(error)) = poll_settle(stream, cx, &mut |n| output.advance(n)) {
            return Poll::Ready(Err(error));
        }
        if stream.write_in_flight() {
            if stream.in_flight().counted > 0 {
                // The output's first bytes are the ones in flight.
                return Poll::Pending;
            }
            let filled = output.chunks_vectored(&mut slices);
            return match stream.stage(&slices[..filled]) {
                0 if output.remaining() > 0 => Poll::Pending,
                staged => {
                    output.advance(staged);
                    Poll::Ready(Ok(()))
                }
            };
        }
        let Some(staged) = stream.take_staged() else {
            break;
        };
        std::task::ready!(submit_staged(stream, cx, staged))?;
    }
    if output.remaining() == 0 {
        return Poll::Ready(Ok(()));
    }
    // Nothing in flight: the output in one write.
    let filled = output.chunks_vectored(&mut slices);
    let owned = stream.owned_copy(&slices[..filled]);
    let total = owned.len();
    match stream.poll_write_owned(cx, Some(owned)) {
        Completion::Pending(None) => {
            let ahead = total.min(STAGE_LIMIT);
            output.advance(ahead);
            stream.set_in_flight(InFlight {
                ahead,
                counted: total - ahead,
            });
            Poll::Ready(Ok(()))
        }
        Completion::Pending(Some(_)) => Poll::Pending,
        Completion::Done(Err(error), _) => Poll::Ready(Err(error)),
        Completion::Done(Ok(0), _) => Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
        Completion::Done(Ok(n), _) => {
            output.advance(n);
            Poll::Ready(Ok(()))
        }
    }
}

/// Starts the write of bytes staged earlier (already off the output).
fn submit_staged<S: CompletionWrite>(
    stream: &mut S,
    cx: &mut Context<'_>,
    staged: Bytes,
) -> Poll<io::Result<()>> {
    let ahead = staged.len();
    match stream.poll_write_owned(cx, Some(staged)) {
        Completion::Pending(None) => {
            stream.set_in_flight(InFlight { ahead, counted: 0 });
            Poll::Ready(Ok(()))
        }
        Completion::Done(Err(error), _) => Poll::Ready(Err(error)),
        // Only a stream that keeps writes in flight stages bytes.
        Completion::Pending(Some(_)) | Completion::Done(Ok(_), _) => Poll::Ready(Err(refused())),
    }
}

/// A flush: what the stream accepted is the kernel's once it is in a
/// write in flight, as what a socket's send buffer holds is, so this
/// waits only while bytes are staged behind a write in flight (they must
/// be handed to the kernel before the caller may stop polling), and
/// reports a write that failed.
pub(crate) fn poll_flush<S: CompletionWrite>(
    stream: &mut S,
    cx: &mut Context<'_>,
) -> Poll<io::Result<()>> {
    loop {
        if stream.in_flight().counted > 0 {
            // The output's head is in flight: transmitting, not flushing.
            return Poll::Pending;
        }
        if let Poll::Ready(Err(error)) = poll_settle(stream, cx, &mut |_| {}) {
            return Poll::Ready(Err(error));
        }
        if !stream.has_staged() {
            return Poll::Ready(Ok(()));
        }
        if stream.write_in_flight() {
            return Poll::Pending;
        }
        if let Some(staged) = stream.take_staged() {
            std::task::ready!(submit_staged(stream, cx, staged))?;
        }
    }
}

/// Writes everything the stream accepted: the write in flight, then what
/// is staged behind it.
pub(crate) fn poll_drain<S: CompletionWrite>(
    stream: &mut S,
    cx: &mut Context<'_>,
) -> Poll<io::Result<()>> {
    loop {
        std::task::ready!(poll_settle(stream, cx, &mut |_| {}))?;
        let Some(staged) = stream.take_staged() else {
            return Poll::Ready(Ok(()));
        };
        std::task::ready!(submit_staged(stream, cx, staged))?;
    }
}

/// The opening handshake's writes (nothing else is in flight beside
/// them): `bufs` copied into one write, polled to its completion.
pub(crate) fn poll_write_through<S: CompletionWrite>(
    stream: &mut S,
    cx: &mut Context<'_>,
    bufs: &[IoSlice<'_>],
) -> Poll<io::Result<usize>> {
    let owned = (!stream.write_in_flight()).then(|| stream.owned_copy(bufs));
    match stream.poll_write_owned(cx, owned) {
        Completion::Done(written, _) => Poll::Ready(written),
        Completion::Pending(_) => Poll::Pending,
    }
}

fn refused() -> io::Error {
    io::Error::other("a stream that keeps no write in flight refused the rest of one")
}
