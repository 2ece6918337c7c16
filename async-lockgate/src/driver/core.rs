//! The one loop every async handle runs: it asks the sans-IO
//! `WebSocketContext` what to do next, does that to the stream, and waits
//! when the stream (or a deadline) says so. Nothing here knows the
//! protocol; the context decides everything.

use std::fmt;
use std::future::Future;
use std::io::{self, IoSlice};
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use lockgate::{Buf, Error, Message, Next, Operation, Output, Result, SendHalf, WebSocketContext};

use crate::runtime::{Runtime, Transport, WriteTransport};

/// The most slices one vectored write hands the stream (the usual
/// operating systems' limit is 1,024; a burst of small frames is one
/// slice).
const MAX_SLICES: usize = 64;

/// A stream, the protocol state driving it, and the timer for its next
/// deadline, on runtime `R`.
///
/// All progress lives in the context (bytes read are committed, bytes
/// written are consumed), so a future built on [`Core::poll_read`] or
/// [`Core::poll_write`] can be dropped at any `Pending` without losing
/// anything.
pub(crate) struct Core<S, R: Runtime> {
    pub(crate) stream: S,
    pub(crate) context: WebSocketContext,
    timer: DeadlineTimer<R>,
}

impl<S: fmt::Debug, R: Runtime> fmt::Debug for Core<S, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Core")
            .field("stream", &self.stream)
            .field("context", &self.context)
            .field("timer", &self.timer)
            .finish()
    }
}

impl<S, R: Runtime> Core<S, R> {
    pub(crate) fn new(stream: S, context: WebSocketContext) -> Self {
        Self {
            stream,
            context,
            timer: DeadlineTimer::default(),
        }
    }

    pub(crate) fn into_parts(self) -> (S, WebSocketContext) {
        (self.stream, self.context)
    }
}

/// The timer of a read that waits: armed for its context's next deadline.
pub(crate) struct DeadlineTimer<R: Runtime> {
    /// Boxed: a timer need not be `Unpin`, and a connection without
    /// deadlines never allocates it.
    timer: Option<Pin<Box<R::Timer>>>,
    /// The runtime's functions only: no `R` is held, so the timer is
    /// `Send` and `Sync` whatever `R` is.
    runtime: PhantomData<fn() -> R>,
}

impl<R: Runtime> Default for DeadlineTimer<R> {
    fn default() -> Self {
        Self {
            timer: None,
            runtime: PhantomData,
        }
    }
}

impl<R: Runtime> fmt::Debug for DeadlineTimer<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeadlineTimer")
            .field("armed", &self.timer.is_some())
            .finish()
    }
}

/// What one write hands a stream.
pub(crate) enum Chunks<'a> {
    /// One contiguous chunk: a plain write.
    One(&'a [u8]),
    /// Several: one vectored write.
    Many(&'a [IoSlice<'a>]),
}

/// One write of `output` to a stream: one contiguous chunk (the usual
/// burst of small frames) with a plain write, several with one vectored
/// write. Advances the output by what the stream took.
pub(crate) fn transmit(
    output: &mut Output<'_>,
    write: impl FnOnce(Chunks<'_>) -> Poll<io::Result<usize>>,
) -> Poll<io::Result<()>> {
    let written = if output.chunk().len() == output.remaining() {
        write(Chunks::One(output.chunk()))
    } else {
        let mut slices = [IoSlice::new(&[]); MAX_SLICES];
        let filled = output.chunks_vectored(&mut slices);
        write(Chunks::Many(&slices[..filled]))
    };
    written.map(|written| match written? {
        0 => Err(io::ErrorKind::WriteZero.into()),
        n => {
            output.advance(n);
            Ok(())
        }
    })
}

/// The side of a connection that writes to the stream: a whole context,
/// or the send half split off one. The output steps below need no more.
pub(crate) trait Writer {
    fn output(&mut self) -> Output<'_>;
    fn flushed(&mut self);
    fn io_error(&mut self, error: io::Error) -> Error;
}

impl Writer for WebSocketContext {
    fn output(&mut self) -> Output<'_> {
        WebSocketContext::output(self)
    }

    fn flushed(&mut self) {
        WebSocketContext::flushed(self);
    }

    fn io_error(&mut self, error: io::Error) -> Error {
        WebSocketContext::io_error(self, error)
    }
}

impl Writer for SendHalf {
    fn output(&mut self) -> Output<'_> {
        SendHalf::output(self)
    }

    fn flushed(&mut self) {
        SendHalf::flushed(self);
    }

    fn io_error(&mut self, error: io::Error) -> Error {
        SendHalf::io_error(self, error)
    }
}

/// Carries out an output step the context asked for ([`Next::Transmit`],
/// [`Next::Flush`]) on `stream` (a whole stream, or a split's write
/// part), registering `wcx`.
pub(crate) fn poll_output_step<W, R: WriteTransport<W>>(
    stream: Pin<&mut W>,
    context: &mut impl Writer,
    next: &Next,
    wcx: &mut Context<'_>,
) -> Poll<io::Result<()>> {
    match next {
        Next::Transmit => R::poll_transmit(stream, wcx, &mut context.output()),
        Next::Flush => R::poll_flush(stream, wcx).map_ok(|()| context.flushed()),
        other => unreachable!("{other:?} is not an output step"),
    }
}

/// What a step's I/O came to: go on (`Ready(Ok)`: done, or interrupted
/// and to be retried), the error the context makes of a failure (which
/// fails the connection), or wait.
pub(crate) fn settle(polled: Poll<io::Result<()>>, context: &mut impl Writer) -> Poll<Result<()>> {
    match polled {
        Poll::Ready(Err(e)) if e.kind() != io::ErrorKind::Interrupted => {
            Poll::Ready(Err(context.io_error(e)))
        }
        Poll::Ready(_) => Poll::Ready(Ok(())),
        Poll::Pending => Poll::Pending,
    }
}

impl<S: Unpin, R: Transport<S>> Core<S, R> {
    /// Runs a read until it has a message or must wait.
    ///
    /// The read and the timer register `cx`; output owed on the way
    /// registers `wcx`, which a split connection uses to wake both halves.
    /// A message already buffered (the usual case) is answered inline, and
    /// the loop is entered only when there is I/O to do; it is moved
    /// straight into the result, not through an `Option` (measured faster:
    /// a wider reload of narrower stores stalled there).
    #[inline]
    pub(crate) fn poll_read(
        &mut self,
        cx: &mut Context<'_>,
        wcx: &mut Context<'_>,
    ) -> Poll<Result<Message>> {
        match self.context.poll(Operation::Read)? {
            Next::Message(msg) => Poll::Ready(Ok(msg)),
            next => self
                .poll_from(Operation::Read, next, cx, wcx)
                .map_ok(|msg| msg.expect("a read ends with a message")),
        }
    }

    /// Runs what a write owes until it is done or must wait; the stream
    /// registers `wcx`. Most writes only queue: that answer is checked
    /// inline.
    #[inline]
    pub(crate) fn poll_write(&mut self, wcx: &mut Context<'_>) -> Poll<Result<()>> {
        self.poll_output(Operation::Write, wcx)
    }

    /// Runs a flush (and what `send` and `close` owe) until it is done or
    /// must wait. Asks the context for the flush on every poll, so a
    /// future dropped before it completed leaves nothing for the next
    /// write to carry out.
    pub(crate) fn poll_flush(&mut self, wcx: &mut Context<'_>) -> Poll<Result<()>> {
        self.context.flush();
        self.poll_output(Operation::Flush, wcx)
    }

    #[inline]
    fn poll_output(&mut self, op: Operation, wcx: &mut Context<'_>) -> Poll<Result<()>> {
        match self.context.poll(op)? {
            Next::Done => Poll::Ready(Ok(())),
            next => {
                let mut cx = Context::from_waker(wcx.waker());
                self.poll_from(op, next, &mut cx, wcx).map_ok(drop)
            }
        }
    }

    fn poll_from(
        &mut self,
        op: Operation,
        first: Next,
        cx: &mut Context<'_>,
        wcx: &mut Context<'_>,
    ) -> Poll<Result<Option<Message>>> {
        let mut first = Some(first);
        loop {
            let next = match first.take() {
                Some(next) => next,
                None => self.context.poll(op)?,
            };
            let Self {
                stream, context, ..
            } = self;
            let stream = Pin::new(stream);
            let polled = match next {
                Next::Message(msg) => return Poll::Ready(Ok(Some(msg))),
                Next::Done => return Poll::Ready(Ok(None)),
                Next::Transmit | Next::Flush => {
                    poll_output_step::<S, R>(stream, context, &next, wcx)
                }
                // After our close (and while lingering after a failure)
                // the deadline is checked before every read, so a peer
                // that never stops sending cannot hold the task past it.
                Next::Receive | Next::Discard => {
                    let bounded =
                        matches!(next, Next::Discard) || context.deadline_bounds_every_read();
                    if bounded && self.timer.poll(context, cx) {
                        continue;
                    }
                    R::poll_receive(stream, cx, context).map_ok(|n| {
                        if n == 0 {
                            context.input_ended();
                        }
                    })
                }
                // A failed shutdown changes nothing: the closing handshake
                // is complete either way.
                Next::Shutdown => R::poll_shutdown(stream, wcx).map(|_| {
                    context.shut_down();
                    Ok(())
                }),
                // A rate limit holds the next message back: no read, only
                // the timer, armed below for the instant it fits.
                Next::Wait => Poll::Pending,
            };
            if settle(polled, &mut self.context)?.is_pending() {
                // Output the stream took but has not handed to the kernel
                // (io_uring's, staged behind a write in flight) is waited
                // for, as a socket's would be taken before reading on.
                let unsent = R::holds_unsent_output(&self.stream);
                let read_on = matches!(next, Next::Transmit | Next::Flush)
                    && !unsent
                    && !self.context.write_would_block(op);
                let go_on =
                    read_on || (op == Operation::Read && self.timer.poll(&mut self.context, cx));
                if !go_on {
                    return Poll::Pending;
                }
            }
        }
    }
}

impl<R: Runtime> DeadlineTimer<R> {
    /// A read is about to wait: arm the timer for `context`'s next
    /// deadline. Returns `true` if it passed (and was handled), so the read
    /// goes on.
    ///
    /// The timer is only reset when the deadline changes, which the context
    /// does once per keepalive interval, not per message (once per message
    /// read while a rate limit throttles).
    pub(crate) fn poll(&mut self, context: &mut WebSocketContext, cx: &mut Context<'_>) -> bool {
        // Armed for the deadline the context still has: the timer's own
        // registration says when it passes, so the clock is not read.
        if let Some(timer) = self.timer.as_mut() {
            let armed = R::deadline(timer);
            if context.handle_wait(armed) {
                if timer.as_mut().poll(cx).is_pending() {
                    return false;
                }
                context.handle_timeout(R::now().max(armed));
                return true;
            }
        }
        // The runtime's clock, so tests with a paused clock drive deadlines.
        let now = R::now();
        // What is due happens, and the deadlines of the wait ahead are
        // armed; a deadline that had passed means the context is polled
        // again before any wait.
        let passed = context.poll_timeout().is_some_and(|d| d <= now);
        context.handle_timeout(now);
        if passed {
            return true;
        }
        let Some(deadline) = context.poll_timeout() else {
            return false;
        };
        // No timer to wait on (tokio's, polled outside a runtime): a
        // deadline is handled once it passed, when the read is polled again.
        let Some(timer) = self.armed_for(deadline) else {
            if deadline > now {
                return false;
            }
            context.handle_timeout(now);
            return true;
        };
        if deadline > now && timer.poll(cx).is_pending() {
            return false;
        }
        // The timer fired, so the deadline passed, whatever rounding the
        // clock reading below suffers.
        context.handle_timeout(R::now().max(deadline));
        true
    }

    /// The timer, made for `deadline` or moved to it (only when it
    /// changed); `None` where the runtime has no timer to give.
    pub(crate) fn armed_for(&mut self, deadline: Instant) -> Option<Pin<&mut R::Timer>> {
        if self.timer.is_none() {
            self.timer = Some(Box::pin(R::timer_at(deadline)?));
        }
        let timer = self.timer.as_mut()?;
        if R::deadline(timer) != deadline {
            R::reset(timer.as_mut(), deadline);
        }
        Some(timer.as_mut())
    }
}

#[cfg(test)]
mod wait_counts;
