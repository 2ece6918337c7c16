//! Deadlines: keepalive pings, the keepalive timeout and the close
//! timeout (and the end of a rate limit's throttle, `rate_limit.rs`).
//! Time is an input: the context never reads a clock.
//!
//! The keepalive deadline does not move while bytes arrive (that would
//! cost a timer reset per read): input only marks the connection as
//! heard from, and when the deadline passes a heard-from connection is
//! simply given another interval. A silent peer is therefore pinged
//! between one and two intervals after it went quiet.
//!
//! # Keepalive pongs
//!
//! The application never asked for a keepalive ping, so it is not handed
//! the pong that answers one. tokio-tungstenite sends no pings of its own,
//! so every pong it hands over was asked for or volunteered by the peer,
//! and ported code relies on that: a chat server that relayed every
//! `Pong` as a message sent each client an empty message 20 s after a peer
//! went idle. The decision is made on the payload, which RFC 6455 section
//! 5.5.3 makes the pong echo: "A Pong frame sent in response to a Ping
//! frame must have identical 'Application data' as found in the message
//! body of the Ping frame being replied to." Keepalive ping number `n`
//! (counted per connection from 1, saturating at 255) carries
//! `lockgate keepalive nnn` (three decimal digits, 22 bytes: not empty, as
//! applications' own pings often are, and readable in a capture), and a
//! pong is consumed exactly when its payload is one of those this
//! connection has sent, that is a number from 1 to the count. Only the
//! count is kept, in a byte that was padding; no payload is stored.
//!
//! - The pong to the keepalive ping: consumed. It still counts as hearing
//!   from the peer, so it satisfies the keepalive like any other bytes.
//! - The same pong again, or a pong to an earlier keepalive ping arriving
//!   after a newer one went out (a stalled peer answering a backlog), or
//!   when no keepalive ping is outstanding any more: consumed too. Its
//!   payload is one only our keepalive put on the wire, so it answers a
//!   ping the application never sent, however late or often (a ported
//!   peer that pongs every ping by hand on top of the automatic pong sends
//!   two); handing it over is the reported bug, just rarer.
//! - A peer that answers only the latest of several pings (which section
//!   5.5.3 allows): if that is a keepalive ping, its pong is consumed and
//!   the application's earlier ping gets none, as with any such peer; if it
//!   is the application's ping, its pong is returned and the keepalive is
//!   satisfied all the same, since any bytes from the peer count.
//! - The pong to the application's own ping, and an unsolicited pong
//!   (section 5.5.3: "A Pong frame MAY be sent unsolicited. This serves as
//!   a unidirectional heartbeat."): returned, as is a pong that merely
//!   looks like ours (a number never sent, a malformed one).
//!
//! The one pong that is consumed although the application asked for it is
//! the answer to an application ping whose payload is itself one of ours
//! (a proxy forwarding another lockgate's keepalive pings verbatim, say).
//! The payload format is therefore reserved; such a forwarded ping was
//! already answered on the connection it came from.

use std::time::Instant;

use bytes::Bytes;

use crate::config::Settings;
use crate::error::TimeoutKind;
use crate::proto::state::State;

/// The connection's one deadline, what it means, and how many keepalive
/// pings went out. Only this module reads or sets it. Its three small
/// fields pad the deadline to three words, which the context affords
/// since the text validator packs into the receive path.
#[derive(Debug, Default)]
pub(crate) struct Timer {
    /// The deadline the connection waits on; `phase` says what it means.
    deadline: Option<Instant>,
    phase: Phase,
    /// Bytes arrived since the deadline was set.
    heard: bool,
    /// Keepalive pings sent, saturating at 255: keepalive ping `n` carries
    /// [`keepalive_payload`]`(n)`, so the payloads this connection sent are
    /// those of `1..=pings` (see the module docs). Saturating rather than
    /// wrapping keeps that exact: past 255 every ping carries 255.
    pings: u8,
}

/// The fixed start of a keepalive ping's payload.
const KEEPALIVE_TAG: &[u8] = b"lockgate keepalive ";

/// The length of a keepalive ping's payload: the tag and three digits.
const KEEPALIVE_LEN: usize = KEEPALIVE_TAG.len() + 3;

// A control frame's payload is at most 125 bytes (RFC 6455 section 5.5).
const _: () = assert!(KEEPALIVE_LEN <= crate::frame::MAX_CONTROL_PAYLOAD);

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
    /// The connection failed and its read discards input after our close
    /// frame (`linger.rs`): at the deadline, stop and report the failure.
    Lingering,
}

/// Where the connection is, as far as its deadline goes: each stage arms
/// its own (see [`Timer::arm`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stage {
    /// Open: keepalive.
    Open,
    /// Our close frame is out, or the peer's is being answered: the close
    /// timeout.
    Closing,
    /// Failed, discarding input after our close frame (`linger.rs`): what
    /// is left of the close timeout, or all of it.
    Lingering,
    /// Over: nothing to wait for.
    Over,
}

impl Stage {
    /// The stage of a connection in `state`, lingering or not.
    pub(super) fn of(state: State, lingering: bool) -> Self {
        match state {
            State::Active => Stage::Open,
            State::ClosedByUs | State::ClosedByPeer | State::CloseAcknowledged => Stage::Closing,
            State::Terminated if lingering => Stage::Lingering,
            State::Terminated => Stage::Over,
        }
    }
}

/// What a deadline that passed calls for (from [`Timer::fire`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fired {
    /// Nothing: the peer was heard from, and keepalive starts over.
    Nothing,
    /// Send a keepalive ping.
    Ping,
    /// Fail the connection: the keepalive or the close timeout passed.
    TimedOut(TimeoutKind),
    /// The lingering close is over: report the failure.
    LingerOver,
}

impl Timer {
    /// Bytes arrived (if `arrived`): the peer was heard from. On every
    /// read, so inlined to a single `or`.
    #[inline]
    pub(super) fn heard_if(&mut self, arrived: bool) {
        self.heard |= arrived;
    }

    /// The armed deadline, if it means something in `stage`: one armed
    /// for an earlier stage (keepalive, when our close has gone out since)
    /// is re-armed before it can fire.
    pub(super) fn deadline(&self, stage: Stage) -> Option<Instant> {
        self.deadline.filter(|_| self.fits(stage))
    }

    fn fits(&self, stage: Stage) -> bool {
        match stage {
            Stage::Open => self.phase != Phase::Unarmed,
            Stage::Closing => self.phase == Phase::Closing,
            Stage::Lingering => self.phase == Phase::Lingering,
            Stage::Over => false,
        }
    }

    /// Whether nothing was ever armed.
    pub(super) fn is_unarmed(&self) -> bool {
        self.phase == Phase::Unarmed
    }

    /// Arms the deadline `stage` calls for, from `now`, if it is not armed
    /// already.
    pub(super) fn arm(&mut self, stage: Stage, now: Instant, settings: &Settings) {
        match stage {
            Stage::Open => {
                if self.phase == Phase::Unarmed {
                    self.idle_from(now, settings);
                }
            }
            Stage::Closing => {
                if self.phase != Phase::Closing {
                    self.phase = Phase::Closing;
                    self.deadline = settings.get_close_timeout().map(|t| now + t);
                }
            }
            Stage::Lingering => {
                if self.phase != Phase::Lingering {
                    // What is left of the closing handshake's deadline, if
                    // our close went out before the failure.
                    if self.phase != Phase::Closing {
                        self.deadline = settings.get_close_timeout().map(|t| now + t);
                    }
                    self.phase = Phase::Lingering;
                }
            }
            Stage::Over => {}
        }
    }

    /// If the deadline of `stage` passed by `now`: what it calls for, the
    /// next deadline armed. `held` says a rate limit holds a message back,
    /// which counts as hearing from the peer: we are the ones not reading
    /// (`rate_limit.rs`).
    pub(super) fn fire(
        &mut self,
        stage: Stage,
        now: Instant,
        held: bool,
        settings: &Settings,
    ) -> Fired {
        if self.deadline(stage).is_none_or(|deadline| deadline > now) {
            return Fired::Nothing;
        }
        let heard = std::mem::take(&mut self.heard) | held;
        match self.phase {
            Phase::Unarmed => Fired::Nothing,
            Phase::Idle | Phase::AwaitingPong if heard => {
                self.idle_from(now, settings);
                Fired::Nothing
            }
            Phase::Idle => {
                match settings.get_ping_timeout() {
                    Some(timeout) => {
                        self.phase = Phase::AwaitingPong;
                        self.deadline = Some(now + timeout);
                    }
                    None => self.idle_from(now, settings),
                }
                Fired::Ping
            }
            Phase::AwaitingPong => {
                self.deadline = None;
                Fired::TimedOut(TimeoutKind::Keepalive)
            }
            Phase::Lingering => Fired::LingerOver,
            Phase::Closing => {
                self.deadline = None;
                Fired::TimedOut(TimeoutKind::Close)
            }
        }
    }

    /// Drops the armed deadline: what it was for is over (a linger that
    /// ended); the next arming sets the stage's own, if any.
    pub(super) fn disarm(&mut self) {
        self.deadline = None;
    }

    /// Starts a keepalive interval at `now`.
    fn idle_from(&mut self, now: Instant, settings: &Settings) {
        self.phase = Phase::Idle;
        self.heard = false;
        self.deadline = settings.get_ping_interval().map(|i| now + i);
    }

    /// The payload of the keepalive ping being encoded now, counting it as
    /// sent. Counted here rather than when the ping falls due, so a ping
    /// that never goes out (the connection closed first) is not counted.
    pub(super) fn next_keepalive_payload(&mut self) -> Bytes {
        self.pings = self.pings.saturating_add(1);
        Bytes::copy_from_slice(&keepalive_payload(self.pings))
    }

    /// Whether a pong with this payload echoes a keepalive ping this
    /// connection sent, and is to be consumed rather than returned (see
    /// the module docs for why each case is decided so).
    pub(super) fn answers_keepalive(&self, payload: &[u8]) -> bool {
        keepalive_number(payload).is_some_and(|n| (1..=self.pings).contains(&n))
    }
}

/// The payload of keepalive ping number `n`: `lockgate keepalive nnn`.
fn keepalive_payload(n: u8) -> [u8; KEEPALIVE_LEN] {
    let mut payload = [0; KEEPALIVE_LEN];
    let (tag, digits) = payload.split_at_mut(KEEPALIVE_TAG.len());
    tag.copy_from_slice(KEEPALIVE_TAG);
    digits.copy_from_slice(&[b'0' + n / 100, b'0' + n / 10 % 10, b'0' + n % 10]);
    payload
}

/// The number of a payload written by [`keepalive_payload`], if it is one
/// (exactly: the tag, then three decimal digits of a number up to 255).
fn keepalive_number(payload: &[u8]) -> Option<u8> {
    let &[a, b, c] = payload.strip_prefix(KEEPALIVE_TAG)? else {
        return None;
    };
    let digit = |d: u8| d.is_ascii_digit().then(|| u16::from(d - b'0'));
    let n = digit(a)? * 100 + digit(b)? * 10 + digit(c)?;
    u8::try_from(n).ok()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::config::{Config, Role};
    use crate::error::Error;
    use crate::frame::OpCode;
    use crate::message::Message;
    use crate::proto::context::WebSocketContext;
    use crate::proto::seam::{Next, Operation};
    use crate::proto::test_frames::WaitAt;
    use crate::proto::test_frames::{parse_frames, server_frame};
    use bytes::Buf;

    const SECOND: Duration = Duration::from_secs(1);

    fn keepalive(interval: u64, timeout: u64) -> WebSocketContext {
        let config = Config::default()
            .ping_interval(Some(SECOND * interval as u32))
            .ping_timeout(Some(SECOND * timeout as u32));
        WebSocketContext::new(Role::Client, config)
    }

    /// Writes out and flushes what is owed, as a driver would; the frames
    /// written, unmasked.
    fn drain_frames(ctx: &mut WebSocketContext) -> Vec<(OpCode, Vec<u8>)> {
        let mut wire = Vec::new();
        ctx.flush();
        loop {
            match ctx.poll(Operation::Flush) {
                Ok(Next::Transmit) => {
                    let mut out = ctx.output();
                    wire.extend_from_slice(&out.copy_to_bytes(out.remaining()));
                }
                Ok(Next::Flush) => ctx.flushed(),
                _ => break,
            }
        }
        parse_frames(&wire)
    }

    /// The opcode of each frame [`drain_frames`] writes out.
    fn drain_opcodes(ctx: &mut WebSocketContext) -> Vec<u8> {
        let frames = drain_frames(ctx);
        frames.iter().map(|(opcode, _)| opcode.as_u8()).collect()
    }

    /// What the next read hands over from what was fed: a message, or
    /// `None` if it needs more bytes.
    fn read(ctx: &mut WebSocketContext) -> Option<Message> {
        loop {
            match ctx.poll(Operation::Read).unwrap() {
                Next::Message(msg) => return Some(msg),
                Next::Receive => return None,
                Next::Transmit => {
                    let mut out = ctx.output();
                    out.advance(out.remaining());
                }
                Next::Flush => ctx.flushed(),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn a_silent_peer_is_pinged_then_given_up() {
        let t0 = Instant::now();
        let mut ctx = keepalive(1, 1);
        assert_eq!(ctx.poll(Operation::Read).unwrap(), Next::Receive);
        assert_eq!(ctx.wait_at(t0), Some(t0 + SECOND));
        ctx.handle_timeout(t0 + SECOND / 2);
        assert!(
            drain_opcodes(&mut ctx).is_empty(),
            "nothing before the deadline"
        );
        ctx.handle_timeout(t0 + SECOND);
        assert_eq!(drain_opcodes(&mut ctx), vec![0x9], "a ping");
        assert_eq!(ctx.wait_at(t0 + SECOND), Some(t0 + 2 * SECOND));
        ctx.handle_timeout(t0 + 2 * SECOND);
        // The 1011 close goes out, then the error is reported.
        assert_eq!(drain_opcodes(&mut ctx), vec![0x8]);
        let error = ctx.poll(Operation::Read).unwrap_err();
        assert!(error.timeout() == Some(TimeoutKind::Keepalive), "{error:?}");
        assert!(matches!(
            ctx.poll(Operation::Read),
            Err(Error::AlreadyClosed)
        ));
        assert_eq!(ctx.wait_at(t0 + 3 * SECOND), None);
    }

    #[test]
    fn a_peer_that_answers_stays_connected_and_its_pongs_are_consumed() {
        let t0 = Instant::now();
        let mut ctx = keepalive(1, 1);
        let _ = ctx.wait_at(t0);
        let mut pings = 0;
        for second in 1..=20u32 {
            let now = t0 + SECOND * second;
            ctx.handle_timeout(now);
            for (opcode, payload) in drain_frames(&mut ctx) {
                assert_eq!(opcode, OpCode::Ping);
                pings += 1;
                // The pong arrives, and the read sees nothing.
                ctx.feed(&server_frame(OpCode::Pong, &payload));
                assert_eq!(read(&mut ctx), None, "at {second} s");
            }
            assert!(ctx.wait_at(now).is_some_and(|d| d > now));
        }
        // A ping every other second: one interval quiet, then the pong
        // satisfies the timeout and the next interval starts.
        assert_eq!(pings, 10);
        assert!(!ctx.is_terminated());
    }

    /// A client context that has sent `pings` keepalive pings, by the
    /// real path: each interval passes with the peer silent.
    fn after_keepalive_pings(pings: u32) -> WebSocketContext {
        let t0 = Instant::now();
        let config = Config::default()
            .ping_interval(Some(SECOND))
            .ping_timeout(None);
        let mut ctx = WebSocketContext::new(Role::Client, config);
        let _ = ctx.wait_at(t0);
        for n in 1..=pings {
            ctx.handle_timeout(t0 + SECOND * n);
            assert_eq!(drain_opcodes(&mut ctx), [OpCode::Ping.as_u8()]);
        }
        ctx
    }

    #[test]
    fn each_keepalive_ping_carries_its_number() {
        let mut ctx = after_keepalive_pings(0);
        let now = Instant::now();
        let _ = ctx.wait_at(now);
        let mut payloads = Vec::new();
        for n in 1..=3 {
            ctx.handle_timeout(now + SECOND * n);
            payloads.extend(drain_frames(&mut ctx).into_iter().map(|(_, p)| p));
        }
        let expected: [&[u8]; 3] = [
            b"lockgate keepalive 001",
            b"lockgate keepalive 002",
            b"lockgate keepalive 003",
        ];
        assert_eq!(payloads, expected);
    }

    #[test]
    fn past_255_the_keepalive_count_saturates() {
        // Saturating keeps "sent" exact: every number up to the count was.
        let mut timer = Timer {
            pings: 254,
            ..Timer::default()
        };
        for _ in 0..3 {
            assert_eq!(
                &timer.next_keepalive_payload()[..],
                b"lockgate keepalive 255"
            );
        }
        assert!(timer.answers_keepalive(b"lockgate keepalive 001"));
        assert!(timer.answers_keepalive(b"lockgate keepalive 255"));
    }

    #[test]
    fn keepalive_numbers_are_read_exactly() {
        let cases: [(&[u8], Option<u8>); 10] = [
            (b"lockgate keepalive 001", Some(1)),
            (b"lockgate keepalive 042", Some(42)),
            (b"lockgate keepalive 255", Some(255)),
            (b"lockgate keepalive 000", Some(0)),
            (b"lockgate keepalive 256", None),
            (b"lockgate keepalive 01", None),
            (b"lockgate keepalive 0001", None),
            (b"lockgate keepalive +01", None),
            (b"lockgate keepalive  01", None),
            (b"Lockgate keepalive 001", None),
        ];
        for (payload, number) in cases {
            let name = String::from_utf8_lossy(payload);
            assert_eq!(keepalive_number(payload), number, "{name}");
            if let Some(n) = number {
                assert_eq!(keepalive_payload(n), payload, "{name}");
            }
        }
    }

    #[test]
    fn which_pongs_a_read_consumes() {
        struct Case {
            name: &'static str,
            /// Keepalive pings sent before the pongs arrive.
            pings: u32,
            /// The pongs' payloads, in order of arrival.
            pongs: &'static [&'static [u8]],
            /// The payloads of the pongs the read returns.
            returned: &'static [&'static [u8]],
        }
        let cases = [
            Case {
                name: "the pong to the keepalive ping",
                pings: 1,
                pongs: &[b"lockgate keepalive 001"],
                returned: &[],
            },
            Case {
                name: "the same pong twice (a peer that also pongs by hand)",
                pings: 1,
                pongs: &[b"lockgate keepalive 001", b"lockgate keepalive 001"],
                returned: &[],
            },
            Case {
                name: "a backlog answered in full after a stall",
                pings: 3,
                pongs: &[
                    b"lockgate keepalive 001",
                    b"lockgate keepalive 002",
                    b"lockgate keepalive 003",
                ],
                returned: &[],
            },
            Case {
                name: "a backlog answered by its latest ping only",
                pings: 3,
                pongs: &[b"lockgate keepalive 003"],
                returned: &[],
            },
            Case {
                name: "every number once the count saturated",
                pings: 300,
                pongs: &[b"lockgate keepalive 001", b"lockgate keepalive 255"],
                returned: &[],
            },
            Case {
                name: "unsolicited heartbeats, empty or not",
                pings: 1,
                pongs: &[b"", b"heartbeat"],
                returned: &[b"", b"heartbeat"],
            },
            Case {
                name: "ours and not ours interleaved",
                pings: 2,
                pongs: &[b"app", b"lockgate keepalive 002", b""],
                returned: &[b"app", b""],
            },
            Case {
                name: "our payload before any keepalive ping went out",
                pings: 0,
                pongs: &[b"lockgate keepalive 001"],
                returned: &[b"lockgate keepalive 001"],
            },
            Case {
                name: "a number this connection never sent",
                pings: 2,
                pongs: &[b"lockgate keepalive 003", b"lockgate keepalive 000"],
                returned: &[b"lockgate keepalive 003", b"lockgate keepalive 000"],
            },
            Case {
                name: "our tag without a well-formed number",
                pings: 2,
                pongs: &[b"lockgate keepalive ", b"lockgate keepalive 1"],
                returned: &[b"lockgate keepalive ", b"lockgate keepalive 1"],
            },
        ];
        for case in cases {
            let name = case.name;
            let mut ctx = after_keepalive_pings(case.pings);
            for pong in case.pongs {
                ctx.feed(&server_frame(OpCode::Pong, pong));
            }
            let mut returned = Vec::new();
            while let Some(msg) = read(&mut ctx) {
                match msg {
                    Message::Pong(payload) => returned.push(payload),
                    other => panic!("{name}: {other:?}"),
                }
            }
            assert_eq!(returned, case.returned, "{name}");
            assert_eq!(ctx.buffered_input(), 0, "{name}: all read");
            assert!(!ctx.is_terminated(), "{name}");
        }
    }

    #[test]
    fn an_application_ping_while_a_keepalive_ping_is_out() {
        let t0 = Instant::now();
        let mut ctx = keepalive(1, 1);
        let _ = ctx.wait_at(t0);
        ctx.handle_timeout(t0 + SECOND);
        let keepalive_ping = drain_frames(&mut ctx).remove(0).1;
        ctx.write(Message::Ping(Bytes::from_static(b"app")))
            .unwrap();
        assert_eq!(drain_frames(&mut ctx), [(OpCode::Ping, b"app".to_vec())]);

        // The peer answers only the latest ping, the application's: that
        // pong is returned, and it satisfies the keepalive.
        ctx.feed(&server_frame(OpCode::Pong, b"app"));
        assert_eq!(read(&mut ctx), Some(Message::Pong("app".into())));
        ctx.handle_timeout(t0 + 2 * SECOND);
        assert!(drain_frames(&mut ctx).is_empty(), "no failure, no ping");
        assert_eq!(ctx.wait_at(t0 + 2 * SECOND), Some(t0 + 3 * SECOND));

        // The keepalive ping's pong, late, when no keepalive ping is out:
        // consumed, and the peer counts as heard from again.
        ctx.feed(&server_frame(OpCode::Pong, &keepalive_ping));
        assert_eq!(read(&mut ctx), None);
        ctx.handle_timeout(t0 + 3 * SECOND);
        assert!(drain_frames(&mut ctx).is_empty(), "heard from: no ping");

        // The application pings, a keepalive ping follows, and the peer
        // answers only that one: consumed, and the application gets no
        // pong, as from any peer that answers only the latest ping.
        ctx.write(Message::Ping(Bytes::from_static(b"app 2")))
            .unwrap();
        let _ = drain_frames(&mut ctx);
        ctx.handle_timeout(t0 + 4 * SECOND);
        let (opcode, second) = drain_frames(&mut ctx).remove(0);
        assert_eq!(
            (opcode, &second[..]),
            (OpCode::Ping, &b"lockgate keepalive 002"[..])
        );
        ctx.feed(&server_frame(OpCode::Pong, &second));
        assert_eq!(read(&mut ctx), None);
        ctx.handle_timeout(t0 + 5 * SECOND);
        assert!(drain_frames(&mut ctx).is_empty(), "answered: no failure");
        assert!(!ctx.is_terminated());
    }

    #[test]
    fn a_keepalive_pong_between_fragments_leaves_the_message_whole() {
        let mut ctx = after_keepalive_pings(1);
        let mut first = server_frame(OpCode::Text, b"hel");
        first[0] &= 0x7f; // not the last fragment
        ctx.feed(&first);
        ctx.feed(&server_frame(OpCode::Pong, b"lockgate keepalive 001"));
        assert_eq!(read(&mut ctx), None);
        ctx.feed(&server_frame(OpCode::Continuation, b"lo"));
        assert_eq!(read(&mut ctx), Some(Message::text("hello")));
    }

    #[test]
    fn traffic_postpones_the_ping() {
        let t0 = Instant::now();
        let mut ctx = keepalive(1, 1);
        let _ = ctx.wait_at(t0);
        ctx.feed(&[0x82, 0x00]);
        assert!(matches!(
            ctx.poll(Operation::Read).unwrap(),
            Next::Message(_)
        ));
        ctx.handle_timeout(t0 + SECOND);
        assert!(drain_opcodes(&mut ctx).is_empty(), "heard from: no ping");
        assert_eq!(ctx.wait_at(t0 + SECOND), Some(t0 + 2 * SECOND));
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
        assert_eq!(ctx.wait_at(t0), Some(t0 + SECOND));
        ctx.handle_timeout(t0 + SECOND);
        let error = ctx.poll(Operation::Read).unwrap_err();
        assert!(error.timeout() == Some(TimeoutKind::Close), "{error:?}");
        assert!(ctx.is_terminated());
    }

    #[test]
    fn no_deadlines_when_disabled() {
        let config = Config::default().ping_interval(None).close_timeout(None);
        let mut ctx = WebSocketContext::new(Role::Server, config);
        assert_eq!(ctx.wait_at(Instant::now()), None);
        ctx.close(None).unwrap();
        assert_eq!(ctx.wait_at(Instant::now()), None);
    }
}
