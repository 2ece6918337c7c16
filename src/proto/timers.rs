//! Deadlines: keepalive pings, the keepalive timeout and the close
//! timeout. Time is an input: the context never reads a clock.
//!
//! The keepalive deadline does not move while bytes arrive (that would
//! cost a timer reset per read): input only marks the connection as
//! heard from, and when the deadline passes a heard-from connection is
//! simply given another interval. A silent peer is therefore pinged
//! between one and two intervals after it went quiet.

use std::time::Instant;

use crate::error::{Error, TimeoutKind};
use crate::proto::context::WebSocketContext;
use crate::proto::state::State;

/// What the connection's one deadline (`WebSocketContext::deadline`,
/// kept apart so the two bytes here pack with the context's flags) means.
#[derive(Debug, Default)]
pub(crate) struct Timer {
    phase: Phase,
    /// Bytes arrived since the deadline was set.
    pub(super) heard: bool,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Nothing armed yet.
    #[default]
    Unarmed,
    /// At the deadline, ping unless the peer was heard from.
    Idle,
    /// A keepalive ping is out: at the deadline, fail unless the peer was
    /// heard from.
    AwaitingPong,
    /// Our close frame is out, or the peer's is being answered: at the
    /// deadline, give up on the closing handshake.
    Closing,
}

impl WebSocketContext {
    /// The driver is about to wait for the stream (a read found no data,
    /// or a blocking read is next). Returns the deadline to wait until:
    /// when it passes with nothing received, call
    /// [`handle_timeout`](Self::handle_timeout) and poll again.
    ///
    /// Drained buffers are given back here, so an idle connection holds
    /// almost no memory; while messages flow, they are kept and reused.
    pub fn waiting(&mut self, now: Instant) -> Option<Instant> {
        self.codec.input.release_if_drained();
        self.codec.output.release_if_drained();
        if let Some(compression) = self.compression_mut() {
            compression.release_idle();
        }
        match self.state {
            State::Terminated => None,
            State::Active => {
                if self.timer.phase == Phase::Unarmed {
                    self.idle_from(now);
                }
                self.deadline
            }
            State::ClosedByUs | State::ClosedByPeer | State::CloseAcknowledged => {
                if self.timer.phase != Phase::Closing {
                    self.timer.phase = Phase::Closing;
                    self.deadline = self.config.get_close_timeout().map(|t| now + t);
                }
                self.deadline
            }
        }
    }

    /// The deadline from [`waiting`](Self::waiting) may have passed: send
    /// the keepalive ping, or fail the connection with
    /// [`Error::Timeout`] (reported by the next
    /// [`poll`](Self::poll) of a read). Does nothing before the deadline.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.deadline.is_none_or(|deadline| now < deadline) {
            return;
        }
        let heard = std::mem::take(&mut self.timer.heard);
        match self.timer.phase {
            Phase::Unarmed => {}
            Phase::Idle | Phase::AwaitingPong if heard => self.idle_from(now),
            Phase::Idle => {
                self.pending_ping = true;
                match self.config.get_ping_timeout() {
                    Some(timeout) => {
                        self.timer.phase = Phase::AwaitingPong;
                        self.deadline = Some(now + timeout);
                    }
                    None => self.idle_from(now),
                }
            }
            Phase::AwaitingPong => {
                self.deadline = None;
                self.deliver_failure(Error::Timeout(TimeoutKind::Keepalive));
            }
            Phase::Closing => {
                self.deadline = None;
                self.pending_pong = None;
                self.pending_close = None;
                self.deliver_failure(Error::Timeout(TimeoutKind::Close));
            }
        }
    }
}

impl WebSocketContext {
    /// Starts a keepalive interval at `now`.
    fn idle_from(&mut self, now: Instant) {
        self.timer.phase = Phase::Idle;
        self.timer.heard = false;
        self.deadline = self.config.get_ping_interval().map(|i| now + i);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::config::{Config, Role};
    use crate::proto::drive::{Next, Operation};
    use bytes::Buf;

    const SECOND: Duration = Duration::from_secs(1);

    fn keepalive(interval: u64, timeout: u64) -> WebSocketContext {
        let config = Config::default()
            .ping_interval(Some(SECOND * interval as u32))
            .ping_timeout(Some(SECOND * timeout as u32));
        WebSocketContext::new(Role::Client, config)
    }

    /// Writes out and flushes what is owed, as a driver would; the first
    /// opcode of each write.
    fn drain_opcodes(ctx: &mut WebSocketContext) -> Vec<u8> {
        let mut opcodes = Vec::new();
        ctx.flush();
        loop {
            match ctx.poll(Operation::Write) {
                Ok(Next::Transmit) => {
                    let mut out = ctx.output();
                    let bytes = out.copy_to_bytes(out.remaining());
                    opcodes.push(bytes[0] & 0x0f);
                }
                Ok(Next::Flush) => ctx.flushed(),
                _ => return opcodes,
            }
        }
    }

    #[test]
    fn a_silent_peer_is_pinged_then_given_up() {
        let t0 = Instant::now();
        let mut ctx = keepalive(1, 1);
        assert_eq!(ctx.poll(Operation::Read).unwrap(), Next::Receive);
        assert_eq!(ctx.waiting(t0), Some(t0 + SECOND));
        ctx.handle_timeout(t0 + SECOND / 2);
        assert!(
            drain_opcodes(&mut ctx).is_empty(),
            "nothing before the deadline"
        );
        ctx.handle_timeout(t0 + SECOND);
        assert_eq!(drain_opcodes(&mut ctx), vec![0x9], "a ping");
        assert_eq!(ctx.waiting(t0 + SECOND), Some(t0 + 2 * SECOND));
        ctx.handle_timeout(t0 + 2 * SECOND);
        // The 1011 close goes out, then the error is reported.
        assert_eq!(drain_opcodes(&mut ctx), vec![0x8]);
        let error = ctx.poll(Operation::Read).unwrap_err();
        assert!(
            matches!(error, Error::Timeout(TimeoutKind::Keepalive)),
            "{error:?}"
        );
        assert!(matches!(
            ctx.poll(Operation::Read),
            Err(Error::AlreadyClosed)
        ));
        assert_eq!(ctx.waiting(t0 + 3 * SECOND), None);
    }

    #[test]
    fn a_peer_that_answers_stays_connected() {
        let t0 = Instant::now();
        let mut ctx = keepalive(1, 1);
        let _ = ctx.waiting(t0);
        for second in 1..=20u32 {
            let now = t0 + SECOND * second;
            ctx.handle_timeout(now);
            let sent = drain_opcodes(&mut ctx);
            if !sent.is_empty() {
                assert_eq!(sent, vec![0x9]);
                // The pong arrives.
                ctx.feed(&[0x8a, 0x00]);
                assert!(matches!(
                    ctx.poll(Operation::Read).unwrap(),
                    Next::Message(crate::Message::Pong(_))
                ));
            }
            assert!(ctx.waiting(now).is_some_and(|d| d > now));
        }
        assert!(!ctx.is_terminated());
    }

    #[test]
    fn traffic_postpones_the_ping() {
        let t0 = Instant::now();
        let mut ctx = keepalive(1, 1);
        let _ = ctx.waiting(t0);
        ctx.feed(&[0x82, 0x00]);
        assert!(matches!(
            ctx.poll(Operation::Read).unwrap(),
            Next::Message(_)
        ));
        ctx.handle_timeout(t0 + SECOND);
        assert!(drain_opcodes(&mut ctx).is_empty(), "heard from: no ping");
        assert_eq!(ctx.waiting(t0 + SECOND), Some(t0 + 2 * SECOND));
        ctx.handle_timeout(t0 + 2 * SECOND);
        assert_eq!(drain_opcodes(&mut ctx), vec![0x9]);
    }

    #[test]
    fn an_unanswered_close_times_out() {
        let t0 = Instant::now();
        let config = Config::default().close_timeout(Some(SECOND));
        let mut ctx = WebSocketContext::new(Role::Client, config);
        ctx.close(None).unwrap();
        assert_eq!(drain_opcodes(&mut ctx), vec![0x8]);
        assert_eq!(ctx.poll(Operation::Read).unwrap(), Next::Receive);
        assert_eq!(ctx.waiting(t0), Some(t0 + SECOND));
        ctx.handle_timeout(t0 + SECOND);
        let error = ctx.poll(Operation::Read).unwrap_err();
        assert!(
            matches!(error, Error::Timeout(TimeoutKind::Close)),
            "{error:?}"
        );
        assert!(ctx.is_terminated());
    }

    #[test]
    fn no_deadlines_when_disabled() {
        let config = Config::default().ping_interval(None).close_timeout(None);
        let mut ctx = WebSocketContext::new(Role::Server, config);
        assert_eq!(ctx.waiting(Instant::now()), None);
        ctx.close(None).unwrap();
        assert_eq!(ctx.waiting(Instant::now()), None);
    }
}
