//! The lingering close: once a connection failed and our close frame is
//! out, the read that reports the failure first shuts down the write side
//! ([`Next::Shutdown`]), then reads and discards input
//! ([`Next::Discard`]) until the peer's FIN or the close timeout, and only
//! then returns the error.
//!
//! # Why
//!
//! RFC 1122 section 4.2.2.13: "If such a host issues a CLOSE call while
//! received data is still pending in TCP, or if new data is received after
//! CLOSE is called, its TCP SHOULD send a RST to show that data was lost."
//! A reset makes the peer's kernel drop what its application has not read
//! yet, our close frame included. A peer that keeps sending (a flood
//! under a rate limit, the rest of an oversized message, frames behind a
//! protocol error) always has bytes in flight when the server drops the
//! connection on the error, so it saw a reset, never the 1008, 1009 or
//! 1002 that says why.
//!
//! # Decisions
//!
//! - **Inside the failing read.** The error is returned after the linger,
//!   so a server that drops the connection on its first error (the usual
//!   read loop, every server in this repository) needs no change, and the
//!   read is held at most the close timeout.
//! - **FIN or deadline, not the peer's close frame.** After a failure the
//!   framing of what follows cannot be trusted (a header we refused, an
//!   oversized payload we stopped reading in the middle), so looking for a
//!   close frame means parsing bytes of unknown alignment. A peer that
//!   answers our close also closes its side once it reads our FIN (RFC
//!   6455 section 7.1.1: the server closes the TCP connection first), so
//!   the FIN comes soon after its close. Discarding then costs one read
//!   into one reused buffer, no parsing, and O(1) memory: the receive
//!   buffer is emptied after each read, and the message in assembly is
//!   dropped.
//! - **The deadline is [`Config::close_timeout`](crate::Config::close_timeout)**,
//!   counted from the first wait of the linger, or what is left of the
//!   closing handshake's when our close went out earlier. `None` waits for
//!   the FIN, as the closing handshake waits for the peer's close. A peer
//!   that never stops sending holds the read no longer: the driver checks
//!   the deadline before every read of the linger, not only when the
//!   stream has nothing to read.
//! - **Only a close that is out lingers.** If the stream would not take
//!   the close frame (a peer that stopped reading), there is nothing in
//!   flight to protect: the failure is reported at once, as before.
//! - **Timeouts do not linger.** A keepalive timeout means nothing arrived
//!   (nothing unread for a reset), and the close timeout's deadline is the
//!   linger's.
//! - **A driver that cannot wait within the deadline** (a non-blocking
//!   stream, or a blocking one whose reads it cannot time out) reports the
//!   read that would block through [`io_error`](crate::WebSocketContext::io_error),
//!   which ends the linger and hands over the failure.
//!
//! The closing handshake itself is unchanged: after the peer's close
//! nothing more is expected, and the read that reports
//! [`Error::ConnectionClosed`](crate::Error::ConnectionClosed) shuts down
//! the write side as before.

#[cfg(doc)]
use crate::proto::seam::Next;

/// What a read still owes the stream once the connection is over, before
/// it reports how it ended. Part of the connection's
/// lifecycle (`lifecycle.rs`), which alone moves it.
///
/// ```text
///   closing handshake complete ──▶ ShutDown ──────────────▶ Report
///   failed, our close out ───▶ ShutDownThenLinger ──▶ Linger ──▶ Report
///                                                 FIN, deadline, I/O error
/// ```
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// Nothing: the read reports what it has.
    #[default]
    Report,
    /// Shut down the write side ([`Next::Shutdown`]), then report.
    ShutDown,
    /// Shut down the write side, then linger.
    ShutDownThenLinger,
    /// Discard input ([`Next::Discard`]) until the peer's FIN or the
    /// deadline, then report.
    Linger,
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use bytes::Buf;

    use crate::config::{Config, Role};
    use crate::error::{CapacityError, Error, ProtocolError, TimeoutKind};
    use crate::frame::OpCode;
    use crate::proto::context::WebSocketContext;
    use crate::proto::seam::{Next, Operation};
    use crate::proto::test_frames::WaitAt;
    use crate::proto::test_frames::{client_frame, parse_frames};
    use crate::{RateLimit, RatePolicy};

    const SECOND: Duration = Duration::from_secs(1);
    const MS: Duration = Duration::from_millis(1);

    /// A server whose peer's messages may be at most 100 bytes.
    fn server(close_timeout: Option<Duration>) -> WebSocketContext {
        let config = Config::default()
            .max_message_size(Some(100))
            .ping_interval(None)
            .close_timeout(close_timeout);
        WebSocketContext::new(Role::Server, config)
    }

    /// What a read driven to its end did, in simulated time.
    #[derive(Debug)]
    struct Linger {
        /// The frames written, unmasked.
        written: Vec<(OpCode, Vec<u8>)>,
        /// Shut down before the first discard read.
        shut_down_first: bool,
        /// Reads of the linger (each brought `chunk` bytes).
        discard_reads: u32,
        /// The most input the context held after a poll.
        most_buffered: usize,
        /// When the read reported.
        at: Instant,
        error: Error,
    }

    /// Runs a read of `ctx` as a driver does, from `t0`: what it owes is
    /// written, the write side shut down, and every discard read brings
    /// `chunk` bytes 1 ms after the previous one (a peer that never stops
    /// sending), the deadline checked before each, as [`Next::Discard`]
    /// asks. After `fin_after` reads, the stream ends instead.
    fn read_to_the_end(
        ctx: &mut WebSocketContext,
        t0: Instant,
        chunk: usize,
        fin_after: Option<u32>,
    ) -> Linger {
        let mut now = t0;
        let mut wire = Vec::new();
        let mut shut_down = false;
        let mut shut_down_first = false;
        let mut discard_reads = 0;
        let mut most_buffered = 0;
        for _ in 0..1_000_000 {
            let next = ctx.poll(Operation::Read);
            most_buffered = most_buffered.max(ctx.buffered_input());
            match next {
                Ok(Next::Transmit) => {
                    let mut out = ctx.output();
                    wire.extend_from_slice(&out.copy_to_bytes(out.remaining()));
                }
                Ok(Next::Flush) => ctx.flushed(),
                Ok(Next::Shutdown) => {
                    shut_down = true;
                    ctx.shut_down();
                }
                Ok(Next::Discard) => {
                    shut_down_first |= shut_down && discard_reads == 0;
                    // As a driver does: a deadline that had passed is
                    // handled, then the context polled again.
                    let passed = ctx.poll_timeout().is_some_and(|deadline| deadline <= now);
                    if ctx.wait_at(now).is_some_and(|deadline| deadline <= now) || passed {
                        continue;
                    }
                    if fin_after == Some(discard_reads) {
                        ctx.input_ended();
                        continue;
                    }
                    ctx.feed(&vec![0x82; chunk]);
                    discard_reads += 1;
                    now += MS;
                }
                Err(error) => {
                    return Linger {
                        written: parse_frames(&wire),
                        shut_down_first,
                        discard_reads,
                        most_buffered,
                        at: now,
                        error,
                    };
                }
                other => panic!("{other:?}"),
            }
        }
        panic!("the read never ended");
    }

    fn close_code(frame: &(OpCode, Vec<u8>)) -> Option<u16> {
        (frame.0 == OpCode::Close).then(|| u16::from_be_bytes([frame.1[0], frame.1[1]]))
    }

    #[test]
    fn a_flood_after_a_failure_is_discarded_until_the_close_timeout() {
        let t0 = Instant::now();
        let mut ctx = server(Some(SECOND));
        ctx.feed(&client_frame(OpCode::Binary, &[0; 101]));
        let linger = read_to_the_end(&mut ctx, t0, 16 * 1024, None);
        assert!(
            matches!(
                linger.error,
                Error::Capacity(CapacityError::MessageTooLong { .. })
            ),
            "{linger:?}"
        );
        assert_eq!(linger.written.len(), 1);
        assert_eq!(close_code(&linger.written[0]), Some(1009));
        assert!(
            linger.shut_down_first,
            "FIN after the close, before reading"
        );
        // One read a millisecond for the close timeout, then the error,
        // however much more the peer had to send.
        assert_eq!(linger.discard_reads, 1000);
        assert_eq!(linger.at, t0 + SECOND);
        // Nothing of it was kept: one read's worth at most.
        assert!(linger.most_buffered <= 16 * 1024, "{linger:?}");
        assert!(matches!(
            ctx.poll(Operation::Read),
            Err(Error::AlreadyClosed)
        ));
        assert_eq!(ctx.wait_at(t0 + 2 * SECOND), None);
    }

    #[test]
    fn the_peers_fin_ends_the_linger() {
        let t0 = Instant::now();
        let mut ctx = server(Some(SECOND));
        // A reserved opcode: a protocol error, 1002.
        ctx.feed(&[0x83, 0x80, 0, 0, 0, 0]);
        let linger = read_to_the_end(&mut ctx, t0, 100, Some(3));
        assert!(
            matches!(
                linger.error,
                Error::Protocol(ProtocolError::UnknownDataFrameType(3))
            ),
            "{linger:?}"
        );
        assert_eq!(close_code(&linger.written[0]), Some(1002));
        assert_eq!(linger.discard_reads, 3);
        assert_eq!(linger.at, t0 + 3 * MS);
    }

    #[test]
    fn the_rate_limits_close_policy_lingers_too() {
        let t0 = Instant::now();
        let limit = RateLimit::messages_per_second(1)
            .message_burst(1)
            .policy(RatePolicy::Close);
        let config = Config::default()
            .ping_interval(None)
            .close_timeout(Some(SECOND))
            .rate_limit(limit);
        let mut ctx = WebSocketContext::new(Role::Server, config);
        let _ = ctx.wait_at(t0);
        ctx.feed(&client_frame(OpCode::Ping, b"1").repeat(2));
        assert!(matches!(ctx.poll(Operation::Read), Ok(Next::Transmit)));
        let mut out = ctx.output();
        out.advance(out.remaining());
        ctx.flushed();
        assert!(matches!(ctx.poll(Operation::Read), Ok(Next::Message(_))));
        let linger = read_to_the_end(&mut ctx, t0, 100, None);
        assert!(
            matches!(
                linger.error.detail(),
                Some(crate::error::Detail::MessageRateExceeded { .. })
            ),
            "{linger:?}"
        );
        assert_eq!(close_code(&linger.written[0]), Some(1008));
        assert_eq!(linger.discard_reads, 1000);
    }

    #[test]
    fn a_failure_while_closing_lingers_for_what_is_left_of_the_close_timeout() {
        let t0 = Instant::now();
        let mut ctx = server(Some(SECOND));
        ctx.close(None).unwrap();
        let _ = read_to_the_end_of_output(&mut ctx);
        assert_eq!(ctx.poll(Operation::Read).unwrap(), Next::Receive);
        assert_eq!(ctx.wait_at(t0), Some(t0 + SECOND));
        // 400 ms later the peer breaks the protocol.
        ctx.feed(&[0x83, 0x80, 0, 0, 0, 0]);
        let linger = read_to_the_end(&mut ctx, t0 + 400 * MS, 100, None);
        assert!(matches!(linger.error, Error::Protocol(_)), "{linger:?}");
        assert!(linger.written.is_empty(), "our close went out before");
        assert_eq!(linger.at, t0 + SECOND);
        assert_eq!(linger.discard_reads, 600);
    }

    /// Writes out and flushes what the connection owes.
    fn read_to_the_end_of_output(ctx: &mut WebSocketContext) -> Vec<u8> {
        let mut wire = Vec::new();
        ctx.flush();
        loop {
            match ctx.poll(Operation::Flush).unwrap() {
                Next::Transmit => {
                    let mut out = ctx.output();
                    wire.extend_from_slice(&out.copy_to_bytes(out.remaining()));
                }
                Next::Flush => ctx.flushed(),
                _ => return wire,
            }
        }
    }

    #[test]
    fn no_close_timeout_lingers_until_the_fin() {
        let t0 = Instant::now();
        let mut ctx = server(None);
        ctx.feed(&client_frame(OpCode::Binary, &[0; 101]));
        let linger = read_to_the_end(&mut ctx, t0, 100, Some(5000));
        assert!(matches!(linger.error, Error::Capacity(_)), "{linger:?}");
        assert_eq!(linger.discard_reads, 5000);
    }

    #[test]
    fn a_close_the_stream_would_not_take_is_not_lingered_on() {
        let mut ctx = server(Some(SECOND));
        ctx.feed(&client_frame(OpCode::Binary, &[0; 101]));
        assert_eq!(ctx.poll(Operation::Read).unwrap(), Next::Transmit);
        // The peer stopped reading: the close stays in the out buffer.
        assert!(!ctx.write_would_block(Operation::Read));
        let error = ctx.poll(Operation::Read).unwrap_err();
        assert!(matches!(error, Error::Capacity(_)), "{error:?}");
    }

    #[test]
    fn a_stream_that_cannot_wait_ends_the_linger_with_the_failure() {
        let mut ctx = server(Some(SECOND));
        ctx.feed(&client_frame(OpCode::Binary, &[0; 101]));
        assert_eq!(ctx.poll(Operation::Read).unwrap(), Next::Transmit);
        let mut out = ctx.output();
        out.advance(out.remaining());
        assert_eq!(ctx.poll(Operation::Read).unwrap(), Next::Flush);
        ctx.flushed();
        assert_eq!(ctx.poll(Operation::Read).unwrap(), Next::Shutdown);
        ctx.shut_down();
        assert_eq!(ctx.poll(Operation::Read).unwrap(), Next::Discard);
        let error = ctx.io_error(std::io::ErrorKind::WouldBlock.into());
        assert!(matches!(error, Error::Capacity(_)), "{error:?}");
        assert!(matches!(
            ctx.poll(Operation::Read),
            Err(Error::AlreadyClosed)
        ));
    }

    #[test]
    fn a_keepalive_timeout_does_not_linger() {
        let t0 = Instant::now();
        let config = Config::default()
            .ping_interval(Some(SECOND))
            .ping_timeout(Some(SECOND));
        let mut ctx = WebSocketContext::new(Role::Server, config);
        assert_eq!(ctx.poll(Operation::Read).unwrap(), Next::Receive);
        let _ = ctx.wait_at(t0);
        ctx.handle_timeout(t0 + SECOND);
        let _ = read_to_the_end_of_output(&mut ctx);
        let _ = ctx.wait_at(t0 + SECOND);
        ctx.handle_timeout(t0 + 2 * SECOND);
        let linger = read_to_the_end(&mut ctx, t0 + 2 * SECOND, 100, None);
        assert!(
            linger.error.timeout() == Some(TimeoutKind::Keepalive),
            "{linger:?}"
        );
        assert_eq!(close_code(&linger.written[0]), Some(1011));
        assert_eq!(linger.discard_reads, 0);
    }
}
