//! The one loop every async handle runs: it asks the sans-IO
//! `WebSocketContext` what to do next, does that to the stream, and waits
//! when the stream (or a deadline) says so. Nothing here knows the
//! protocol; the context decides everything.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use lockgate::{Buf, Message, Next, Operation, Result, WebSocketContext};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::{Instant, Sleep, sleep_until};
use tokio_util::io::{poll_read_buf, poll_write_buf};

/// A stream, the protocol state driving it, and the timer for its next
/// deadline.
///
/// All progress lives in the context (bytes read are committed, bytes
/// written are consumed), so a future built on [`Core::poll_read`] or
/// [`Core::poll_write`] can be dropped at any `Pending` without losing
/// anything.
#[derive(Debug)]
pub(crate) struct Core<S> {
    pub(crate) stream: S,
    pub(crate) context: WebSocketContext,
    /// Armed for the context's next deadline while a read waits. Boxed:
    /// `Sleep` is not `Unpin`, and a connection without deadlines never
    /// allocates it.
    timer: Option<Pin<Box<Sleep>>>,
}

impl<S> Core<S> {
    pub(crate) fn new(stream: S, context: WebSocketContext) -> Self {
        Self {
            stream,
            context,
            timer: None,
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> Core<S> {
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
                Next::Transmit => {
                    let mut output = context.output();
                    // One contiguous chunk (the usual burst of small
                    // frames) goes out with a plain write, several with one
                    // vectored write.
                    let written = if output.chunk().len() == output.remaining() {
                        stream.poll_write(wcx, output.chunk()).map_ok(|n| {
                            output.advance(n);
                            n
                        })
                    } else {
                        poll_write_buf(stream, wcx, &mut output)
                    };
                    written.map(|written| match written? {
                        0 => Err(io::ErrorKind::WriteZero.into()),
                        _ => Ok(()),
                    })
                }
                Next::Flush => stream.poll_flush(wcx).map_ok(|()| context.flushed()),
                Next::Receive => {
                    let polled = poll_read_buf(stream, cx, &mut context.input_buffer());
                    let n = match polled {
                        Poll::Ready(Ok(n)) => n,
                        _ => 0,
                    };
                    context.input_appended(n);
                    polled.map_ok(|n| {
                        if n == 0 {
                            context.input_ended();
                        }
                    })
                }
                // A failed shutdown changes nothing: the closing handshake
                // is complete either way.
                Next::Shutdown => stream.poll_shutdown(wcx).map(|_| {
                    context.shut_down();
                    Ok(())
                }),
                // A rate limit holds the next message back: no read, only
                // the timer, armed below for the instant it fits.
                Next::Wait => Poll::Pending,
            };
            match polled {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(self.context.io_error(e))),
                Poll::Pending => {
                    let read_on = matches!(next, Next::Transmit | Next::Flush)
                        && !self.context.write_would_block(op);
                    let go_on = read_on || (op == Operation::Read && self.poll_deadline(cx));
                    if !go_on {
                        return Poll::Pending;
                    }
                }
            }
        }
    }

    /// A read is about to wait: arm the timer for the context's next
    /// deadline. Returns `true` if it passed (and was handled), so the read
    /// goes on.
    ///
    /// The timer is only reset when the deadline changes, which the context
    /// does once per keepalive interval, not per message (once per message
    /// read while a rate limit throttles).
    fn poll_deadline(&mut self, cx: &mut Context<'_>) -> bool {
        // tokio's clock, so tests with a paused runtime drive deadlines.
        let now = Instant::now();
        let Some(deadline) = self.context.waiting(now.into_std()) else {
            return false;
        };
        let deadline = Instant::from_std(deadline);
        let timer = match &mut self.timer {
            Some(timer) => {
                if timer.deadline() != deadline {
                    timer.as_mut().reset(deadline);
                }
                timer
            }
            // Polled outside a runtime (a hand-rolled executor): no timer
            // to wait on, so deadlines are handled when a read returns.
            None if tokio::runtime::Handle::try_current().is_err() => return false,
            None => self.timer.insert(Box::pin(sleep_until(deadline))),
        };
        if deadline > now && timer.as_mut().poll(cx).is_pending() {
            return false;
        }
        // The timer fired, so the deadline passed, whatever rounding the
        // clock reading below suffers.
        self.context
            .handle_timeout(Instant::now().max(deadline).into_std());
        true
    }
}
