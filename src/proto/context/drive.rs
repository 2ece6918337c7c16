//! The context's side of the driver seam (`seam.rs`): what
//! the driver of an operation does next ([`WebSocketContext::poll`]), the
//! outcomes it reports, and its waits (`handle_timeout`, `poll_timeout`).
//! Every protocol decision is here; drivers only move bytes and wait.

use std::io;
use std::time::Instant;

use super::WebSocketContext;
use crate::error::{Error, Result, TimeoutKind};
use crate::proto::seam::{Next, Operation, Output};
use crate::proto::send::SendSide;
use crate::proto::state::State;
use crate::proto::timers::{Fired, Stage};

impl WebSocketContext {
    /// What the driver of `op` does next. See [`Next`] for the contract.
    ///
    /// # Errors
    ///
    /// Those of the operation: for [`Operation::Read`], the errors of
    /// [`next_message`](Self::next_message) (a failing connection reports
    /// its error after its close frame was given a chance to go out and,
    /// once it went out, after a lingering close: [`Next::Discard`]), a
    /// passed deadline as a timeout ([`Error::timeout`](crate::Error::timeout)), a peer over a rate limit
    /// whose policy is [`RatePolicy::Close`](crate::RatePolicy::Close)
    /// (1008), and the end of the stream. [`Operation::Write`] and [`Operation::Flush`] do not
    /// fail here.
    #[inline]
    pub fn poll(&mut self, op: Operation) -> Result<Next> {
        self.prepare_output();
        match op {
            Operation::Read => self.poll_read(),
            op => Ok(self.owed.output_step(op, &self.output, &self.settings)),
        }
    }

    /// The caller asked for a flush: the next [`Operation::Flush`] writes
    /// everything out and flushes the stream (once, even if nothing is
    /// buffered: the stream may hold bytes of its own). Only that
    /// operation carries it out; a write never does.
    pub fn flush(&mut self) {
        self.owed.request_flush();
    }

    /// The pending output as one [`Buf`](bytes::Buf): write its chunks (all of them at
    /// once with `chunks_vectored`, as tokio's `poll_write_buf` does) and
    /// `advance` it by what the stream took.
    pub fn output(&mut self) -> Output<'_> {
        Output::new(&mut self.output)
    }

    /// The stream could not take output now while running `op`. Returns `true` if the driver
    /// must wait for it (return `Pending` or the would-block error), `false`
    /// if it should ask again at once: a read goes on reading while an
    /// owed pong waits, since the peer may be waiting for us to read.
    pub fn write_would_block(&mut self, op: Operation) -> bool {
        let read_on = op == Operation::Read
            && (self.receiving.holds_result() || self.lifecycle.state().can_receive());
        self.owed.output_would_block(read_on);
        !read_on
    }

    /// Whether a [`Next::Receive`] must check the deadline
    /// ([`poll_timeout`](Self::poll_timeout)) before it reads, not only when the read
    /// would wait: once our close frame is out, a peer that never stops
    /// sending must not hold reads past the close timeout (each read finds
    /// data, so none would ever wait). If the deadline passed, call
    /// [`handle_timeout`](Self::handle_timeout) and poll again instead of
    /// reading. [`Next::Discard`] always asks for this check.
    pub fn deadline_bounds_every_read(&self) -> bool {
        self.lifecycle.state() == State::ClosedByUs || self.lifecycle.is_lingering()
    }

    /// The stream was flushed.
    pub fn flushed(&mut self) {
        self.sending().flushed();
    }

    /// The stream's write side was shut down (or could not be, or has no
    /// such thing).
    pub fn shut_down(&mut self) {
        self.lifecycle.shut_down();
    }

    /// An I/O operation failed: the error to report. A connection that is
    /// failing for a protocol error reports that error, not the failure to
    /// tell the peer (or to linger: see [`Next::Discard`]); a message
    /// already parsed stays for the next read.
    pub fn io_error(&mut self, error: io::Error) -> Error {
        if self.lifecycle.is_lingering() {
            self.end_linger();
        }
        self.lifecycle.report_next();
        self.receiving.take_held_error().unwrap_or(Error::Io(error))
    }

    #[inline]
    fn poll_read(&mut self) -> Result<Next> {
        // Only the poll right after a blocked write skips the output.
        let may_output = self.owed.take_may_output();
        if may_output {
            if let Some(next) = self.owed.delivery(&self.output) {
                return Ok(next);
            }
        }
        if let Some(next) = self.poll_ending() {
            return Ok(next);
        }
        if let Some(held) = self.receiving.deliver() {
            return held.map(Next::Message);
        }
        let parsed = self.next_message_within_limit();
        if let Ok(Next::Message(_)) = parsed {
            self.prepare_output();
            if may_output && self.owed.delivery(&self.output).is_some() {
                return Ok(self.deliver_before(parsed));
            }
            // Returned as the parse built it: looked at, not moved apart
            // and rebuilt (which cost a copy of the message per read).
            return parsed;
        }
        match parsed {
            // A rate limit holds the next message back: read nothing until
            // it fits (a pong it queued goes out meanwhile).
            Ok(_) if self.negotiated.is_throttled() => {
                self.prepare_output();
                match self.owed.delivery(&self.output) {
                    Some(next) if may_output => Ok(next),
                    _ => Ok(Next::Wait),
                }
            }
            Ok(_) if self.lifecycle.state().can_receive() => Ok(Next::Receive),
            // Closing: what is left is draining our output.
            Ok(_) => Ok(self.owed.drain(&self.output, false)),
            Err(Error::ConnectionClosed) => {
                self.receiving.hold(Err(Error::ConnectionClosed));
                self.lifecycle.end_with_shutdown();
                Ok(Next::Shutdown)
            }
            // The connection failed and our close frame is queued (or went
            // out earlier, if we were closing): it goes out, best effort,
            // then the read lingers before it reports the error.
            Err(error) if error.close_code().is_some() => {
                self.prepare_output();
                self.receiving.hold(Err(error));
                self.begin_linger();
                Ok(self.owed.delivery(&self.output).unwrap_or(Next::Shutdown))
            }
            Err(error) => Err(error),
        }
    }

    /// A read parsed a message and queued its answer (a pong, a close
    /// reply): the answer goes out before the message is returned, unless
    /// the stream is full. Out of line: most reads answer nothing.
    #[cold]
    #[inline(never)]
    fn deliver_before(&mut self, parsed: Result<Next>) -> Next {
        let (Ok(Next::Message(msg)), Some(next)) = (parsed, self.owed.delivery(&self.output))
        else {
            unreachable!("called for a parsed message with output owed")
        };
        self.receiving.hold(Ok(msg));
        next
    }

    /// The connection failed for a close-coded error and our close frame
    /// is queued or went out earlier: the read that reports it shuts down
    /// the write side and lingers first (`linger.rs`). What was being
    /// received is dropped: nothing of it will be handed over.
    fn begin_linger(&mut self) {
        self.lifecycle.linger();
        self.receiving.drop_message();
        self.input.discard();
    }

    /// What the read does before it reports, once its owed output had its
    /// chance: shut down, discard, or nothing (`None`). A linger whose
    /// close frame did not go out (the stream would not take it) ends
    /// here: there is nothing in flight to protect. Empties the receive
    /// buffer of what the last read of a linger brought, keeping its
    /// allocation.
    fn poll_ending(&mut self) -> Option<Next> {
        if self.lifecycle.is_lingering() && (!self.output.is_empty() || self.owed.flush_owed()) {
            self.end_linger();
        }
        let step = self.lifecycle.ending_step();
        if matches!(step, Some(Next::Discard)) {
            self.input.discard();
        }
        step
    }

    /// The peer's FIN arrived, the deadline passed, or the stream failed:
    /// the read reports the failure next.
    pub(super) fn end_linger(&mut self) {
        self.lifecycle.report_next();
        self.timer.disarm();
    }

    /// The next deadline: when it passes, call
    /// [`handle_timeout`](Self::handle_timeout) and poll again. A pure
    /// query: call [`handle_timeout`](Self::handle_timeout) with the time
    /// first (before each wait), which arms the deadlines for the state the
    /// connection is in. It is the keepalive ping, the keepalive timeout,
    /// the close timeout, the instant a message held back by a rate
    /// limit ([`Config::rate_limit`](crate::Config::rate_limit)) fits, or
    /// the end of a compressed connection's quiet interval
    /// ([`DeflateConfig::sleep_after`](crate::deflate::DeflateConfig::sleep_after)),
    /// whichever comes first; `None` to wait as long as it takes. It may
    /// already have passed (a held message that fits by now).
    pub fn poll_timeout(&self) -> Option<Instant> {
        // A deadline armed for an earlier state means nothing now (the
        // next `handle_timeout` arms the state's own).
        let mut deadline = self.timer.deadline(self.stage());
        if self.lifecycle.is_terminated() {
            return deadline;
        }
        if let Some(at) = self
            .negotiated
            .compression()
            .and_then(|c| c.sleep_deadline())
        {
            deadline = Some(deadline.map_or(at, |d| d.min(at)));
        }
        match self.negotiated.throttled_until() {
            Some(until) => Some(deadline.map_or(until, |d| d.min(until))),
            None => deadline,
        }
    }

    /// Time is `now`: do what is due. The driver calls it before each wait
    /// (then asks [`poll_timeout`](Self::poll_timeout) how long to wait),
    /// and when that deadline passed (then polls again).
    ///
    /// What was due by `now` happens: the keepalive ping is queued, or the
    /// connection fails with a timeout ([`Error::timeout`](crate::Error::timeout)) (reported by the next
    /// [`poll`](Self::poll) of a read). Then the housekeeping of a wait:
    /// drained buffers are given back (so an idle connection holds almost
    /// no memory; while messages flow they are kept and reused; a quiet
    /// compressed connection sleeps once its interval is over), counts go
    /// to the `metrics` recorder, the deadlines of the state the connection
    /// is now in are armed from `now`, and a rate limit's buckets earn what
    /// the time brought (`now` is the time it charges messages at).
    pub fn handle_timeout(&mut self, now: Instant) {
        self.negotiated.tell_time(now);
        // About to wait without reading: the peer's silence meanwhile is
        // ours, even if the hold ends before the keepalive deadline.
        let throttled = !self.lifecycle.is_terminated() && self.negotiated.is_throttled();
        if throttled {
            self.timer.heard_if(true);
        }
        let held = self.negotiated.is_throttled();
        match self.timer.fire(self.stage(), now, held, &self.settings) {
            Fired::Nothing => {}
            Fired::Ping => self.owed.owe_ping(),
            Fired::TimedOut(kind) => {
                if kind == TimeoutKind::Close {
                    self.owed.close_timed_out();
                }
                self.deliver_failure(kind.into());
            }
            Fired::LingerOver => self.end_linger(),
        }
        self.tidy_for_wait();
        if let Some(compression) = self.negotiated.compression_mut() {
            let quiet = self.output.is_empty() && self.lifecycle.state().can_receive();
            compression.sleep_if_due_else_arm(now, quiet);
        }
        let unarmed = self.timer.is_unarmed();
        self.timer.arm(self.stage(), now, &self.settings);
        if throttled && unarmed {
            // Arming keepalive just now forgot the hold.
            self.timer.heard_if(true);
        }
    }

    /// The driver is about to wait again, its timer armed for `armed`, and
    /// that timer has not fired. If `armed` is still the next deadline
    /// ([`poll_timeout`](Self::poll_timeout)) and the wait needs nothing
    /// of the time (no rate limit charges by it, no compressor with
    /// context takeover counts its quiet by it, the deadline of the
    /// connection's state is armed, and reads are not bounded by it as
    /// after our close), this does the housekeeping of a wait
    /// that [`handle_timeout`](Self::handle_timeout) does and returns
    /// `true`: wait on the timer, no clock read needed. Otherwise it does
    /// nothing and returns `false`: call
    /// [`handle_timeout`](Self::handle_timeout) with the time.
    ///
    /// A deadline does not change while messages flow (keepalive moves
    /// once per interval), so most waits take the first answer.
    #[must_use = "false: the wait needs handle_timeout"]
    pub fn handle_wait(&mut self, armed: Instant) -> bool {
        // After our close, every read checks the clock (see
        // `deadline_bounds_every_read`): a timer fires only when the
        // runtime gets to it.
        if self.negotiated.rate_limiter().is_some()
            || self.deadline_bounds_every_read()
            || self.negotiated.compression().is_some_and(|c| c.sleeps())
            || self.poll_timeout() != Some(armed)
        {
            return false;
        }
        self.tidy_for_wait();
        true
    }

    /// The housekeeping of every wait: drained buffers are given back (so
    /// an idle connection holds almost no memory; while messages flow they
    /// are kept and reused) and counts go to the `metrics` recorder.
    fn tidy_for_wait(&mut self) {
        self.lifecycle.report_counts();
        if !self.lifecycle.is_lingering() {
            // A lingering read reads again at once: its buffer is reused.
            self.input.release_if_drained();
        }
        self.output.release_if_drained();
        if let Some(compression) = self.negotiated.compression_mut() {
            compression.release_idle();
        }
    }

    /// Where the connection is, as far as its deadline goes.
    fn stage(&self) -> Stage {
        Stage::of(self.lifecycle.state(), self.lifecycle.is_lingering())
    }

    /// The connection failed (a deadline passed): `read` reports `error`
    /// once the close frame, if any, had its chance to go out.
    pub(super) fn deliver_failure(&mut self, error: Error) {
        if let Some(kind) = error.timeout() {
            self.lifecycle.observe_timeout(kind);
        }
        let error = self.fail(error);
        self.receiving.hold(Err(error));
        self.lifecycle.timed_out();
    }
}
