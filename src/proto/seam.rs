//! The driver seam's vocabulary: the [`Operation`] a driver runs for its
//! caller, the [`Next`] step the context answers, and the [`Output`] it
//! writes from. The context's side of it is in `drive.rs`.

use std::io::IoSlice;

use bytes::Buf;

use crate::codec::OutBuffer;
use crate::message::Message;

/// The operation a driver is running for its caller; see
/// [`WebSocketContext::poll`](crate::WebSocketContext::poll).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Operation {
    /// `read`: the next message. Owed pongs and close replies go out on the
    /// way; keepalive and close deadlines apply while it waits, and the
    /// pong to a keepalive ping is consumed on the way, never returned.
    #[default]
    Read,
    /// What `write` owes: the out buffer written out (not flushed) once it
    /// reached `write_buffer_size`; written and flushed only if a pong,
    /// keepalive ping or close frame is in it. Never the flush the caller
    /// asked for: a [`flush`](crate::WebSocketContext::flush) that failed or was
    /// cancelled is not carried out by the next write.
    Write,
    /// What `flush`, `send` and `close` owe: after
    /// [`flush`](crate::WebSocketContext::flush), the out buffer written out and
    /// the stream flushed (once, even if nothing is buffered).
    Flush,
}

/// What the driver does next; the answer of [`WebSocketContext::poll`](crate::WebSocketContext::poll).
///
/// After doing it, the driver reports the outcome and asks again:
///
/// | answer | do | then report |
/// |---|---|---|
/// | `Transmit` | write [`output`](crate::WebSocketContext::output) to the stream (one write, vectored if it can) | `Buf::advance` on the output |
/// | `Flush` | flush the stream | [`flushed`](crate::WebSocketContext::flushed) |
/// | `Receive` | if [`deadline_bounds_every_read`](crate::WebSocketContext::deadline_bounds_every_read) and the deadline ([`poll_timeout`](crate::WebSocketContext::poll_timeout)) passed, [`handle_timeout`](crate::WebSocketContext::handle_timeout) instead; else read from the stream into [`input_buffer`](crate::WebSocketContext::input_buffer) or [`input_spare`](crate::WebSocketContext::input_spare) | [`input_appended`](crate::WebSocketContext::input_appended) / [`commit_input`](crate::WebSocketContext::commit_input), or [`input_ended`](crate::WebSocketContext::input_ended) on end of stream |
/// | `Shutdown` | shut down the stream's write side (no-op if it has none) | [`shut_down`](crate::WebSocketContext::shut_down) |
/// | `Discard` | unless the deadline ([`poll_timeout`](crate::WebSocketContext::poll_timeout)) passed, read as for `Receive` (no later than that deadline) | as for `Receive`; if it passed, [`handle_timeout`](crate::WebSocketContext::handle_timeout) instead of reading |
/// | `Wait` | read nothing; wait until the deadline ([`poll_timeout`](crate::WebSocketContext::poll_timeout)) | [`handle_timeout`](crate::WebSocketContext::handle_timeout) |
/// | `Message` | return it | - |
/// | `Done` | return | - |
///
/// When the stream cannot take output now, call
/// [`write_would_block`](crate::WebSocketContext::write_would_block); when it has
/// no input, wait for it, no later than the deadline: before each wait,
/// tell the context the time with
/// [`handle_timeout`](crate::WebSocketContext::handle_timeout), then ask
/// [`poll_timeout`](crate::WebSocketContext::poll_timeout). If the deadline the
/// driver last saw had passed, what it meant has now happened: poll again
/// instead of waiting. An I/O error goes through
/// [`io_error`](crate::WebSocketContext::io_error).
#[must_use = "the driver must act on the answer and ask again"]
#[derive(Debug, PartialEq)]
pub enum Next {
    /// Write the pending output to the stream.
    Transmit,
    /// The output is written: flush the stream.
    Flush,
    /// More bytes from the peer are needed.
    Receive,
    /// The closing handshake is complete, or the connection failed and
    /// our close frame is out: shut down the write side, so a peer
    /// waiting for our FIN can finish (RFC 6455 section 5.5.1).
    Shutdown,
    /// [`Operation::Read`] of a connection that failed, after our close
    /// frame went out and the write side was shut down: a lingering close.
    /// Read from the stream and report what arrived as for
    /// [`Receive`](Self::Receive); the context throws it away. The read
    /// reports the failure once the peer's FIN arrives or the deadline
    /// ([`poll_timeout`](crate::WebSocketContext::poll_timeout), the close
    /// timeout) passes,
    /// so that input still arriving never makes the kernel answer with a
    /// reset, which would discard the close frame before the peer read it.
    ///
    /// Check the deadline before **every** read, not only when the stream
    /// has nothing to read: if the deadline
    /// ([`poll_timeout`](crate::WebSocketContext::poll_timeout)) passed, call
    /// [`handle_timeout`](crate::WebSocketContext::handle_timeout) and poll again
    /// instead of reading (a peer that never stops sending must not hold
    /// the read past it). A driver that cannot wait for input within the
    /// deadline (a non-blocking stream) reports the read that would block
    /// through [`io_error`](crate::WebSocketContext::io_error), which ends the
    /// linger and returns the failure.
    Discard,
    /// [`Operation::Read`] produced a message.
    Message(Message),
    /// [`Operation::Read`] must not read now: a rate limit
    /// ([`Config::rate_limit`](crate::Config::rate_limit)) holds the next
    /// message back. Wait, without reading, until the deadline
    /// ([`poll_timeout`](crate::WebSocketContext::poll_timeout), after
    /// [`handle_timeout`](crate::WebSocketContext::handle_timeout) with the time;
    /// always `Some` here, and it may already have passed), then call
    /// [`handle_timeout`](crate::WebSocketContext::handle_timeout) and poll
    /// again. Never answered without a rate limit.
    Wait,
    /// The operation is complete.
    Done,
}

/// The pending output of a [`WebSocketContext`](crate::WebSocketContext) or a
/// [`SendHalf`](crate::SendHalf), as a [`Buf`] whose `advance` records
/// what the stream took.
#[derive(Debug)]
pub struct Output<'a> {
    output: &'a mut OutBuffer,
}

impl<'a> Output<'a> {
    pub(super) fn new(output: &'a mut OutBuffer) -> Self {
        Self { output }
    }
}

impl Buf for Output<'_> {
    #[inline]
    fn remaining(&self) -> usize {
        self.output.remaining()
    }

    #[inline]
    fn chunk(&self) -> &[u8] {
        self.output.chunk()
    }

    #[inline]
    fn chunks_vectored<'b>(&'b self, dst: &mut [IoSlice<'b>]) -> usize {
        self.output.chunks_vectored(dst)
    }

    /// # Panics
    ///
    /// If `cnt` exceeds what remains.
    #[inline]
    fn advance(&mut self, cnt: usize) {
        self.output.advance(cnt);
    }
}
