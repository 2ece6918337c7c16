//! [`Owed`]: what the connection owes the peer (control frames not yet
//! encoded) and the stream (a flush), as one value with one owner.
//!
//! The send path decides when queued control frames move into the out
//! buffer (`send.rs`); the receive path and the timers only say what is
//! owed. Keeping the flags together, behind methods, means no other file
//! reads or sets a flag of its own accord: each change is named for the
//! event that causes it.

use bytes::Bytes;

use crate::codec::OutBuffer;
use crate::config::Settings;
use crate::frame::CloseCode;
use crate::proto::seam::{Next, Operation};

/// Control frames queued for the peer, and the flushes owed to the
/// stream. Sixteen bytes: a pointer, the close code and four flags, so
/// that grouping them costs an idle connection nothing.
#[derive(Debug, Default)]
pub(super) struct Owed {
    /// The pong to send: only the newest unanswered ping is answered.
    /// Boxed, like the other rarely present state: idle connections are
    /// many.
    pong: Option<Box<Bytes>>,
    /// A close frame to send: our reply, or the failure of the
    /// connection. Such frames carry a code (or none) and never a reason.
    close: Option<Option<CloseCode>>,
    /// A keepalive ping is due.
    ping: bool,
    /// A pong, ping or close went into the out buffer and is owed a flush.
    flush: bool,
    /// The caller asked for a flush that has not happened yet.
    flush_requested: bool,
    /// The stream could not take owed output; the next read poll reads on.
    output_blocked: bool,
}

impl Owed {
    /// Whether a pong, keepalive ping or close frame waits to be encoded.
    /// Nearly every poll finds nothing: inlined, it is three loads.
    #[inline]
    pub(super) fn has_queued(&self) -> bool {
        self.pong.is_some() || self.close.is_some() || self.ping
    }

    /// A ping arrived that must be answered: its pong replaces any older
    /// one not yet sent.
    pub(super) fn owe_pong(&mut self, payload: Bytes) {
        self.pong = Some(Box::new(payload));
    }

    /// No pong is to go out any more (a close frame goes first, or the
    /// connection failed).
    #[inline]
    pub(super) fn forget_pong(&mut self) {
        self.pong = None;
    }

    /// The queued pong, taking it.
    pub(super) fn take_pong(&mut self) -> Option<Bytes> {
        self.pong.take().map(|payload| *payload)
    }

    /// A close frame with `code` (or none) is to go out.
    pub(super) fn owe_close(&mut self, code: Option<CloseCode>) {
        self.close = Some(code);
    }

    /// Whether a close frame waits to be encoded.
    pub(super) fn close_queued(&self) -> bool {
        self.close.is_some()
    }

    /// The queued close frame's code, taking it.
    pub(super) fn take_close(&mut self) -> Option<Option<CloseCode>> {
        self.close.take()
    }

    /// The keepalive interval passed without a word from the peer.
    pub(super) fn owe_ping(&mut self) {
        self.ping = true;
    }

    /// Whether a keepalive ping was due, taking it.
    pub(super) fn take_ping(&mut self) -> bool {
        std::mem::take(&mut self.ping)
    }

    /// The stream ended: there is no one left to answer or to ping.
    pub(super) fn stream_ended(&mut self) {
        self.pong = None;
        self.ping = false;
    }

    /// The close timeout passed: neither a pong nor a close reply goes
    /// out any more.
    pub(super) fn close_timed_out(&mut self) {
        self.pong = None;
        self.close = None;
    }

    /// Whether something in the out buffer is owed a flush.
    #[inline]
    pub(super) fn flush_owed(&self) -> bool {
        self.flush
    }

    /// Something went into the out buffer that must not wait for the
    /// caller's flush (a control frame, a close).
    #[inline]
    pub(super) fn owe_flush(&mut self) {
        self.flush = true;
    }

    /// The out buffer went out and was flushed: nothing is owed.
    pub(super) fn flush_paid(&mut self) {
        self.flush = false;
    }

    /// The caller asked for a flush ([`WebSocketContext::flush`](super::WebSocketContext::flush)).
    pub(super) fn request_flush(&mut self) {
        self.flush_requested = true;
    }

    /// The stream was flushed: the caller's request is met.
    pub(super) fn flushed(&mut self) {
        self.flush_requested = false;
    }

    /// The stream could not take owed output; `read_on` says whether the
    /// next read poll skips the output and reads.
    pub(super) fn output_would_block(&mut self, read_on: bool) {
        self.output_blocked = read_on;
    }

    /// Whether this read poll may try the output (it may not right after
    /// a blocked write), clearing the block.
    #[inline]
    pub(super) fn take_may_output(&mut self) -> bool {
        !std::mem::take(&mut self.output_blocked)
    }

    /// What the driver of `op` does next for what writing owes, with
    /// `output` buffered and the buffer size in `settings`: see
    /// [`Operation::Write`] and [`Operation::Flush`]; a read owes nothing
    /// here. A query of the owed flags, so that a poll lends nothing.
    #[inline]
    pub(super) fn output_step(
        &self,
        op: Operation,
        output: &OutBuffer,
        settings: &Settings,
    ) -> Next {
        match op {
            Operation::Flush => self.drain(output, self.flush_requested),
            Operation::Write if self.flush => self.drain(output, false),
            Operation::Write
                if !output.is_empty() && output.len() >= settings.get_write_buffer_size() =>
            {
                Next::Transmit
            }
            Operation::Write | Operation::Read => Next::Done,
        }
    }

    /// The step that delivers a pong, keepalive ping or close frame in
    /// `output`: write it (and whatever data is ahead of it) and flush.
    #[inline]
    pub(super) fn delivery(&self, output: &OutBuffer) -> Option<Next> {
        if !self.flush {
            None
        } else if output.is_empty() {
            Some(Next::Flush)
        } else {
            Some(Next::Transmit)
        }
    }

    /// Write out what is buffered in `output`, then flush if something
    /// owed calls for it (a pong, a ping, a close) or `requested` (an
    /// [`Operation::Flush`](super::Operation::Flush) after a flush was
    /// asked for).
    #[inline]
    pub(super) fn drain(&self, output: &OutBuffer, requested: bool) -> Next {
        if !output.is_empty() {
            Next::Transmit
        } else if requested || self.flush {
            Next::Flush
        } else {
            Next::Done
        }
    }

    /// What the sending half of a split takes: the flushes owed with the
    /// out buffer it takes. Control frames stay queued here.
    pub(super) fn split_off_flushes(&mut self) -> Owed {
        Owed {
            flush: std::mem::take(&mut self.flush),
            flush_requested: std::mem::take(&mut self.flush_requested),
            ..Owed::default()
        }
    }

    /// The sending half rejoins: the flushes it owes are owed here.
    pub(super) fn rejoin_flushes(&mut self, sender: &Owed) {
        self.flush |= sender.flush;
        self.flush_requested |= sender.flush_requested;
    }
}
