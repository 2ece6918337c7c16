//! Where an exchange of HTTP heads is, shared by every [`Exchange`]: the
//! bytes to send first, the deadline, and the outcome once it is known.
//! The exchanges differ only in what they make of the peer's head (or,
//! for SOCKS5, of its several short messages, each answered with
//! [`Progress::send`] while reading goes on).
//!
//! [`Exchange`]: super::Exchange

use std::time::Instant;

use super::exchange::Step;
use crate::error::{Error, Result, TimeoutKind};

/// ```text
///  Reading --head complete, or failed, or deadline--> Finishing --poll--> Finished
/// ```
enum State<T> {
    /// Waiting for the peer's head.
    Reading,
    /// The outcome is known; the bytes to send go first.
    Finishing(Result<T>),
    /// `Done` was returned.
    Finished,
}

/// An exchange's progress: what to send, until when, and how it ended.
pub(crate) struct Progress<T> {
    /// Bytes to send before anything else happens.
    out: Vec<u8>,
    deadline: Option<Instant>,
    state: State<T>,
}

impl<T> Progress<T> {
    /// Reading, with `out` to send first.
    pub(crate) fn new(out: Vec<u8>, deadline: Option<Instant>) -> Self {
        Self {
            out,
            deadline,
            state: State::Reading,
        }
    }

    /// The next step: send what is owed, then read or report the outcome.
    /// `now` at or past the deadline ends an unfinished exchange first.
    pub(crate) fn poll(&mut self, now: Instant) -> Step<Result<T>> {
        self.handle_timeout(now);
        if !self.out.is_empty() {
            return Step::Transmit(std::mem::take(&mut self.out));
        }
        match std::mem::replace(&mut self.state, State::Finished) {
            State::Reading => {
                self.state = State::Reading;
                Step::Receive {
                    deadline: self.deadline,
                }
            }
            State::Finishing(result) => Step::Done(result),
            State::Finished => Step::Done(Err(Error::AlreadyClosed)),
        }
    }

    /// Whether the peer's head is still awaited: input counts only then.
    /// Passes the deadline first, as every input does.
    pub(crate) fn reading(&mut self, now: Instant) -> bool {
        self.handle_timeout(now);
        matches!(self.state, State::Reading)
    }

    /// Queues `bytes` after what is owed while the peer's messages are
    /// still awaited: an exchange of several rounds (SOCKS5: greeting,
    /// authentication, CONNECT) answers each of the peer's messages and
    /// goes on reading. Once the outcome is known nothing more is queued.
    pub(crate) fn send(&mut self, bytes: Vec<u8>) {
        if !matches!(self.state, State::Reading) {
            return;
        }
        if self.out.is_empty() {
            self.out = bytes;
        } else {
            self.out.extend_from_slice(&bytes);
        }
    }

    /// The outcome is known; `reply` is sent before it is reported.
    pub(crate) fn finish(&mut self, result: Result<T>, reply: Vec<u8>) {
        self.out = reply;
        self.state = State::Finishing(result);
    }

    /// A read failed at `now`.
    pub(crate) fn read_failed(&mut self, error: Error, now: Instant) {
        if self.reading(now) {
            self.finish(Err(error), Vec::new());
        }
    }

    /// Sending failed: an outcome that was already a failure (an error
    /// response being sent) stays the outcome.
    pub(crate) fn transmit_failed(&mut self, error: Error) {
        self.out.clear();
        if !matches!(self.state, State::Finishing(Err(_)) | State::Finished) {
            self.state = State::Finishing(Err(error));
        }
    }

    /// At or past the deadline, an exchange that has not failed yet fails
    /// with [`TimeoutKind::Handshake`] and owed bytes are dropped.
    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        if self.deadline.is_none_or(|deadline| now < deadline) {
            return;
        }
        if matches!(self.state, State::Reading | State::Finishing(Ok(_))) {
            self.out.clear();
            self.state = State::Finishing(Err(TimeoutKind::Handshake.into()));
        }
    }

    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Bytes still to send.
    pub(crate) fn owed(&self) -> &[u8] {
        &self.out
    }

    /// For `Debug`: "reading", "opened", "failed" or "finished".
    pub(crate) fn describe(&self) -> &'static str {
        match self.state {
            State::Reading => "reading",
            State::Finishing(Ok(_)) => "opened",
            State::Finishing(Err(_)) => "failed",
            State::Finished => "finished",
        }
    }
}
