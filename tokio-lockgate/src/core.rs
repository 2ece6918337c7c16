//! The poll functions every async handle shares: they move bytes between an
//! `AsyncRead + AsyncWrite` stream and the sans-IO `WebSocketContext`.
//! Nothing here knows the protocol; the context decides everything.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use lockgate::{Error, Message, Result, WebSocketContext};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::io::poll_read_buf;

/// The most slices one vectored write hands to the stream.
const MAX_IOVECS: usize = 64;

/// A stream and the protocol state driving it.
///
/// Every poll function keeps its progress in the context (bytes read are
/// committed, bytes written are consumed), so a future built on them can be
/// dropped at any `Pending` without losing anything.
#[derive(Debug)]
pub(crate) struct Core<S> {
    pub(crate) stream: S,
    pub(crate) context: WebSocketContext,
    /// The closing handshake completed; `ConnectionClosed` is reported once
    /// the write side of the stream is shut down.
    shutting_down: bool,
}

impl<S> Core<S> {
    pub(crate) fn new(stream: S, context: WebSocketContext) -> Self {
        Self {
            stream,
            context,
            shutting_down: false,
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> Core<S> {
    /// The next message, answering pings and closes along the way.
    ///
    /// Reads register `cx`; writes (owed pongs and close frames) register
    /// `wcx`, which a split connection uses to wake both halves.
    pub(crate) fn poll_read(
        &mut self,
        cx: &mut Context<'_>,
        wcx: &mut Context<'_>,
    ) -> Poll<Result<Message>> {
        if self.shutting_down {
            return self.poll_shutdown_after_close(wcx);
        }
        loop {
            // A stream that cannot take the owed pong right now must not
            // stop us reading: the peer may be waiting for us to read.
            match self.poll_send_owed(wcx) {
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending if !self.context.wants_input() => return Poll::Pending,
                _ => {}
            }
            match self.context.next_message() {
                Ok(Some(msg)) => {
                    if self.context.has_pending_system_frame() {
                        // Best effort now; an error or a full socket is
                        // retried by the next call, and the message is
                        // not lost.
                        let _ = self.poll_send_owed(wcx);
                    }
                    return Poll::Ready(Ok(msg));
                }
                Ok(None) if self.context.wants_input() => ready!(self.poll_fill_input(cx))?,
                // Closing: what is left is draining our output.
                Ok(None) => ready!(self.poll_flush_output(wcx))?,
                Err(Error::ConnectionClosed) => {
                    self.shutting_down = true;
                    return self.poll_shutdown_after_close(wcx);
                }
                Err(e) => {
                    if e.close_code().is_some() {
                        // Best effort: the connection is failing anyway.
                        let _ = self.poll_send_owed(wcx);
                    }
                    return Poll::Ready(Err(e));
                }
            }
        }
    }

    /// RFC 6455 section 5.5.1: after sending and receiving a Close, an
    /// endpoint "MUST close the underlying TCP connection". Sending our FIN
    /// lets a peer that waits for it (Python `websockets` does) finish, even
    /// while the caller still holds the stream. A failed shutdown changes
    /// nothing: the handshake is complete either way.
    fn poll_shutdown_after_close(&mut self, wcx: &mut Context<'_>) -> Poll<Result<Message>> {
        let _ = ready!(Pin::new(&mut self.stream).poll_shutdown(wcx));
        self.shutting_down = false;
        Poll::Ready(Err(Error::ConnectionClosed))
    }

    /// Whether [`poll_after_write`](Self::poll_after_write) has anything to
    /// do: a pong or close to deliver, or a buffer at `write_buffer_size`.
    #[inline]
    pub(crate) fn write_out_due(&self) -> bool {
        self.context.has_pending_system_frame()
            || self.context.flush_owed()
            || self.context.should_write_out()
    }

    /// After a message was queued: write out if the buffer reached
    /// `write_buffer_size`, write and flush if a pong or close is owed.
    pub(crate) fn poll_after_write(&mut self, cx: &mut Context<'_>) -> Poll<Result<()>> {
        self.context.prepare_output();
        if self.context.flush_owed() {
            self.poll_flush_output(cx)
        } else if self.context.should_write_out() {
            self.poll_write_output(cx)
        } else {
            Poll::Ready(Ok(()))
        }
    }

    /// Queued pongs and close frames into the buffer, then everything out
    /// and flushed.
    pub(crate) fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<Result<()>> {
        self.context.prepare_output();
        self.poll_flush_output(cx)
    }

    /// Writes and flushes an owed pong or close frame (and whatever data is
    /// buffered ahead of it).
    fn poll_send_owed(&mut self, cx: &mut Context<'_>) -> Poll<Result<()>> {
        self.context.prepare_output();
        if !self.context.flush_owed() {
            return Poll::Ready(Ok(()));
        }
        self.poll_flush_output(cx)
    }

    fn poll_flush_output(&mut self, cx: &mut Context<'_>) -> Poll<Result<()>> {
        loop {
            ready!(self.poll_write_output(cx))?;
            ready!(Pin::new(&mut self.stream).poll_flush(cx))?;
            self.context.on_flushed();
            if !self.context.has_pending_system_frame() {
                return Poll::Ready(Ok(()));
            }
            self.context.prepare_output();
        }
    }

    /// Writes the out buffer, with one vectored write per call when it
    /// spans several slices and the stream supports it.
    pub(crate) fn poll_write_output(&mut self, cx: &mut Context<'_>) -> Poll<Result<()>> {
        let Self {
            stream, context, ..
        } = self;
        while context.output_len() > 0 {
            let written = if context.output_chunk_count() > 1 && stream.is_write_vectored() {
                let mut slices = [IoSlice::new(&[]); MAX_IOVECS];
                let n = context.output_chunks(&mut slices);
                ready!(Pin::new(&mut *stream).poll_write_vectored(cx, &slices[..n]))
            } else {
                ready!(Pin::new(&mut *stream).poll_write(cx, context.output_chunk()))
            };
            match written {
                Ok(0) => return Poll::Ready(Err(Error::Io(io::ErrorKind::WriteZero.into()))),
                Ok(n) => context.advance_output(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Poll::Ready(Err(e.into())),
            }
        }
        Poll::Ready(Ok(()))
    }

    /// One read from the stream into the context, straight into the spare
    /// capacity of its buffer (no zeroing; `poll_read_buf` handles the
    /// uninitialised memory).
    fn poll_fill_input(&mut self, cx: &mut Context<'_>) -> Poll<Result<()>> {
        let Self {
            stream, context, ..
        } = self;
        loop {
            let polled = poll_read_buf(Pin::new(&mut *stream), cx, &mut context.input_buffer());
            let n = match polled {
                Poll::Ready(Ok(n)) => n,
                _ => 0,
            };
            context.input_appended(n);
            match polled {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(context.on_eof())),
                Poll::Ready(Ok(_)) => return Poll::Ready(Ok(())),
                Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e.into())),
                Poll::Pending => {
                    context.on_read_wait();
                    return Poll::Pending;
                }
            }
        }
    }
}
