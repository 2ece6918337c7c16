//! Rate limits on what a connection receives ([`RateLimit`], set with
//! [`Config::rate_limit`](crate::Config::rate_limit)): token buckets kept
//! in the context, with time as an input like every other deadline.
//!
//! # What the limits mean
//!
//! - **What counts.** Every message `read` hands over costs one message:
//!   text, binary, ping and pong. A close frame costs nothing (it ends the
//!   connection; holding it back would only delay that), and neither does
//!   the pong to a keepalive ping, which `read` never hands over. Bytes are
//!   the payload of text and binary messages as `read` hands them over
//!   (inflated, with permessage-deflate: what the application receives and
//!   `max_message_size` bounds). Control frames carry at most 125 bytes
//!   and count as messages only.
//! - **When.** A message is charged once it is complete, before it is
//!   handed over, so the application never sees more than the limit,
//!   whatever the peer sent and however much of it is already buffered.
//! - **Throttle** ([`RatePolicy::Throttle`], the default): the complete
//!   message that does not fit is held (that one only: what follows stays
//!   unparsed in the receive buffer), the context stops asking for input
//!   ([`Next::Wait`] where it would answer [`Next::Receive`]) and its
//!   deadline ([`poll_timeout`](crate::WebSocketContext::poll_timeout)) is the instant the
//!   message fits. The driver reads nothing meanwhile, so the socket's
//!   receive buffer fills and TCP's flow control pushes back on the peer.
//!   Owed pongs and close replies still go out.
//! - **Close** ([`RatePolicy::Close`]): the message that does not fit is
//!   dropped and fails the connection with
//!   [`Detail::MessageRateExceeded`] or
//!   [`Detail::ByteRateExceeded`], close code 1008 (policy).
//! - **A message larger than the byte burst** fits once the bucket is
//!   full, and leaves it in debt for the excess. It is not refused (bounding
//!   sizes is `max_message_size`'s job), it cannot wait forever, and the
//!   average holds: what follows waits until the debt is repaid.
//! - **Keepalive.** A throttled context does not read, so the peer's
//!   silence would be of our making: a throttle counts as hearing from the
//!   peer (its bucket ran dry because the peer sent), and the keepalive
//!   timeout never fires because of one. A throttled connection sends no
//!   keepalive pings either; everything else about deadlines is unchanged
//!   (the close timeout still bounds a closing handshake).
//! - **Time.** Messages are charged at the latest instant a driver passed
//!   in ([`handle_timeout`](crate::WebSocketContext::handle_timeout)), never later
//!   than the real time, so a stale clock only makes a limit stricter.
//!   When a bucket looks empty the context answers [`Next::Wait`]; the
//!   driver's `handle_timeout(now)` brings the clock up to date and, if the
//!   message fits by then, the deadline has already passed and the read
//!   goes on at once. No clock is read per message.
//!
//! # The buckets
//!
//! Each bucket holds whole tokens, at most its burst (below zero after a
//! message larger than the burst), and earns them at its rate. The part of
//! a token not yet earned is kept exactly: time counts in nanoseconds times
//! the rate, so that a token is 10^9 units whatever the rate. Tokens are
//! earned when the driver passes the time in, not per message, so a
//! message costs a comparison and a subtraction per bucket; arithmetic on
//! time (a 128-bit multiplication and division per bucket) happens once
//! per wait, and when a message is held back.
//!
//! # Cost
//!
//! A connection without a limit holds nothing for it: [`Config`] holds the
//! limit by value, but the context keeps only the rest of the
//! configuration, and the limit with its buckets lives behind the pointer
//! it already has for rare state (`negotiated`), so reading a message
//! costs one test of that pointer. There is no process-wide state: each
//! connection's limit is its own, freed with it.
//! With a limit: one allocation per connection, O(1) integer arithmetic
//! per message, none on the heap.
//!
//! [`Config`]: crate::Config

use std::time::{Duration, Instant};

use crate::error::{Detail, Error};
use crate::message::Message;
#[cfg(doc)]
use crate::proto::seam::Next;

/// A limit on how fast a connection receives: messages per second, bytes
/// per second, or both, each a token bucket with a burst; and what happens
/// to a peer that sends faster ([`RatePolicy`]). Set it with
/// [`Config::rate_limit`](crate::Config::rate_limit); connections have
/// none by default.
///
/// A bucket holds up to its burst and refills at its rate: a peer may send
/// a burst's worth at once, then the rate on average. Over any interval of
/// `T` seconds the application is handed at most `burst + rate × T`
/// messages (and as many bytes, for messages no larger than the byte
/// burst). What counts, and when, is listed on
/// [`RatePolicy::Throttle`].
///
/// ```
/// use lockgate::{Config, RateLimit, RatePolicy};
///
/// // 100 messages a second, bursts of up to 200; 1 MiB a second, bursts
/// // of up to 4 MiB; a peer that sends faster is closed with 1008.
/// let limit = RateLimit::messages_per_second(100)
///     .message_burst(200)
///     .with_bytes_per_second(1 << 20)
///     .byte_burst(4 << 20)
///     .policy(RatePolicy::Close);
/// let config = Config::default().rate_limit(limit);
/// assert_eq!(config.get_rate_limit(), Some(limit));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RateLimit {
    /// 0: no limit on messages.
    messages_per_second: u32,
    /// `None`: one second's worth.
    message_burst: Option<u32>,
    /// 0: no limit on bytes.
    bytes_per_second: u64,
    /// `None`: one second's worth.
    byte_burst: Option<u64>,
    policy: RatePolicy,
}

/// What a connection does to a peer that sends faster than its
/// [`RateLimit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum RatePolicy {
    /// Stop reading until the bucket refills (the default): the message
    /// that does not fit is held, nothing more is read from the stream,
    /// and the read waits (blocking driver: sleeps; tokio: its timer) until
    /// the message fits. The socket's receive buffer fills and TCP pushes
    /// back on the peer, who is slowed to the limit and never disconnected
    /// for it.
    ///
    /// - Counted: each message `read` returns (text, binary, ping, pong)
    ///   as one message; the payload of text and binary messages (inflated
    ///   if compressed) as bytes. Not counted: close frames, and the pongs
    ///   to keepalive pings (never returned).
    /// - Charged when complete, before it is returned: messages already
    ///   received but not yet read count too, so the application sees at
    ///   most the limit.
    /// - A message larger than the byte burst goes through when the bucket
    ///   is full and leaves it in debt: the messages after it wait.
    /// - Pongs and close replies still go out while reading waits, and the
    ///   keepalive timeout never fires because of it (the throttle counts
    ///   as hearing from the peer).
    ///
    /// The trade-off: a throttled peer holds its connection (and the
    /// socket's receive buffer) for as long as it keeps sending; a peer
    /// that is not to be served at all is better closed.
    #[default]
    Throttle,
    /// Fail the connection on the first message that does not fit: it is
    /// not returned; `read` fails with
    /// [`Detail::MessageRateExceeded`](crate::Detail::MessageRateExceeded)
    /// or [`ByteRateExceeded`](crate::Detail::ByteRateExceeded)
    /// and a close frame with 1008 (policy) is sent. For peers that have
    /// no business sending that fast; a burst is all the slack they get.
    Close,
}

/// Which bucket of a [`RateLimit`] a message overran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RateUnit {
    Messages,
    Bytes,
}

impl RateLimit {
    /// At most `n` messages a second, in bursts of up to `n` (change it
    /// with [`message_burst`](Self::message_burst)); bytes are not limited
    /// unless [`with_bytes_per_second`](Self::with_bytes_per_second) says
    /// so. Policy: [`RatePolicy::Throttle`].
    ///
    /// A whole number per second: slower rates are not expressible.
    ///
    /// # Panics
    ///
    /// If `n` is 0 (no message would ever be read).
    pub fn messages_per_second(n: u32) -> Self {
        Self::unlimited().with_messages_per_second(n)
    }

    /// At most `n` payload bytes a second, in bursts of up to `n` (change
    /// it with [`byte_burst`](Self::byte_burst)); the number of messages is
    /// not limited unless
    /// [`with_messages_per_second`](Self::with_messages_per_second) says
    /// so. Policy: [`RatePolicy::Throttle`].
    ///
    /// # Panics
    ///
    /// If `n` is 0 (no data message would ever be read).
    pub fn bytes_per_second(n: u64) -> Self {
        Self::unlimited().with_bytes_per_second(n)
    }

    fn unlimited() -> Self {
        Self {
            messages_per_second: 0,
            message_burst: None,
            bytes_per_second: 0,
            byte_burst: None,
            policy: RatePolicy::Throttle,
        }
    }

    /// Limits messages too (or changes their rate): at most `n` a second.
    ///
    /// # Panics
    ///
    /// If `n` is 0.
    pub fn with_messages_per_second(mut self, n: u32) -> Self {
        assert!(n > 0, "a rate limit of 0 messages per second reads nothing");
        self.messages_per_second = n;
        self
    }

    /// Limits bytes too (or changes their rate): at most `n` payload bytes
    /// a second.
    ///
    /// # Panics
    ///
    /// If `n` is 0.
    pub fn with_bytes_per_second(mut self, n: u64) -> Self {
        assert!(n > 0, "a rate limit of 0 bytes per second reads nothing");
        self.bytes_per_second = n;
        self
    }

    /// The most messages read at once after a quiet spell. Default: one
    /// second's worth (the message rate).
    ///
    /// A larger burst lets a client catch up after a stall (a reconnect
    /// replaying what it queued, a tab coming back from the background)
    /// without being throttled, at the price of letting the same burst
    /// through from a peer that floods. 0 and 1 both mean messages are
    /// spaced evenly at the rate. No effect without a message rate.
    pub fn message_burst(mut self, n: u32) -> Self {
        self.message_burst = Some(n);
        self
    }

    /// The most payload bytes read at once after a quiet spell. Default:
    /// one second's worth (the byte rate).
    ///
    /// A message larger than this is not refused: it goes through when
    /// the bucket is full and the messages after it wait until the excess
    /// is repaid (bound message sizes with `max_message_size`). So a burst
    /// at least as large as the usual large message keeps those from
    /// waiting on an empty bucket; a smaller one paces them. No effect
    /// without a byte rate.
    pub fn byte_burst(mut self, n: u64) -> Self {
        self.byte_burst = Some(n);
        self
    }

    /// What happens to a peer that sends faster. Default
    /// [`RatePolicy::Throttle`].
    pub fn policy(mut self, policy: RatePolicy) -> Self {
        self.policy = policy;
        self
    }

    /// See [`messages_per_second`](Self::messages_per_second); `None`: no
    /// limit on messages.
    pub fn get_messages_per_second(&self) -> Option<u32> {
        (self.messages_per_second > 0).then_some(self.messages_per_second)
    }

    /// See [`message_burst`](Self::message_burst); `None` without a
    /// message rate.
    pub fn get_message_burst(&self) -> Option<u32> {
        let rate = self.get_messages_per_second()?;
        Some(self.message_burst.unwrap_or(rate))
    }

    /// See [`bytes_per_second`](Self::bytes_per_second); `None`: no limit
    /// on bytes.
    pub fn get_bytes_per_second(&self) -> Option<u64> {
        (self.bytes_per_second > 0).then_some(self.bytes_per_second)
    }

    /// See [`byte_burst`](Self::byte_burst); `None` without a byte rate.
    pub fn get_byte_burst(&self) -> Option<u64> {
        let rate = self.get_bytes_per_second()?;
        Some(self.byte_burst.unwrap_or(rate))
    }

    /// See [`policy`](Self::policy).
    pub fn get_policy(&self) -> RatePolicy {
        self.policy
    }
}

// ----- the buckets -----

const NANOS_PER_SECOND: u128 = 1_000_000_000;

/// One token bucket (see the module docs).
#[derive(Debug)]
struct Bucket {
    per_second: u64,
    /// At most `i64::MAX`.
    burst: i64,
    /// At most `burst`; below 0 after a message larger than the burst.
    tokens: i64,
    /// How far time was turned into tokens: nanoseconds since the
    /// limiter's origin, times `per_second` (the part of a token not yet
    /// earned stays in it).
    stamp: u128,
}

impl Bucket {
    fn new(per_second: u64, burst: u64) -> Self {
        let burst = i64::try_from(burst).unwrap_or(i64::MAX);
        Self {
            per_second,
            burst,
            tokens: burst,
            stamp: 0,
        }
    }

    /// Time is `now` (nanoseconds since the origin): add the tokens it
    /// earned, up to the burst (a full bucket earns nothing).
    fn refill(&mut self, now: u64) {
        let now = u128::from(now) * u128::from(self.per_second);
        let room = u128::try_from(i128::from(self.burst) - i128::from(self.tokens)).unwrap_or(0);
        let earned = now.saturating_sub(self.stamp) / NANOS_PER_SECOND;
        if earned >= room {
            self.tokens = self.burst;
            self.stamp = now;
        } else {
            // Less than the room, which is at most 2^64.
            self.tokens = self.tokens.saturating_add(earned as i64);
            self.stamp += earned * NANOS_PER_SECOND;
        }
    }

    /// The tokens a message of `cost` needs: its cost, or a full bucket if
    /// it costs more than the burst.
    fn need(&self, cost: u64) -> i64 {
        i64::try_from(cost).unwrap_or(i64::MAX).min(self.burst)
    }

    /// Whether `cost` fits now: the per-message test, no arithmetic on time.
    #[inline]
    fn fits(&self, cost: u64) -> bool {
        cost == 0 || self.tokens >= self.need(cost)
    }

    #[inline]
    fn charge(&mut self, cost: u64) {
        let cost = i64::try_from(cost).unwrap_or(i64::MAX);
        self.tokens = self.tokens.saturating_sub(cost);
    }

    /// The first time (nanoseconds since the origin) at which `cost` fits,
    /// given the tokens as of the last refill.
    fn fits_at(&self, cost: u64) -> u64 {
        // As in `fits`: what costs nothing fits at once, debt or not.
        if cost == 0 {
            return 0;
        }
        let missing = i128::from(self.need(cost)) - i128::from(self.tokens);
        let Ok(missing @ 1..) = u128::try_from(missing) else {
            return 0;
        };
        let due = self.stamp.saturating_add(missing * NANOS_PER_SECOND);
        u64::try_from(due.div_ceil(u128::from(self.per_second))).unwrap_or(u64::MAX)
    }
}

/// A connection's rate limit at work: its buckets, the time as the driver
/// last told it, and the message waiting for room.
#[derive(Debug)]
pub(super) struct RateLimiter {
    limit: RateLimit,
    /// The first instant the driver passed in: time zero.
    origin: Option<Instant>,
    /// The latest instant the driver passed in, in nanoseconds since
    /// `origin`.
    now: u64,
    messages: Option<Bucket>,
    bytes: Option<Bucket>,
    /// The complete message that did not fit yet (policy `Throttle`).
    held: Option<Message>,
}

impl RateLimiter {
    /// A limiter for `limit`, its buckets full.
    pub(super) fn new(limit: RateLimit) -> Self {
        let mut limiter = Self {
            limit,
            origin: None,
            now: 0,
            messages: None,
            bytes: None,
            held: None,
        };
        limiter.fill(limit);
        limiter
    }

    /// The limit it enforces.
    pub(super) fn limit(&self) -> RateLimit {
        self.limit
    }

    /// Whether a message is held back until it fits.
    pub(super) fn holds(&self) -> bool {
        self.held.is_some()
    }

    /// The message held back, taking it.
    pub(super) fn take_held(&mut self) -> Option<Message> {
        self.held.take()
    }

    /// Full buckets for `limit`.
    pub(super) fn fill(&mut self, limit: RateLimit) {
        self.limit = limit;
        self.messages = limit
            .get_messages_per_second()
            .zip(limit.get_message_burst())
            .map(|(rate, burst)| Bucket::new(rate.into(), burst.into()));
        self.bytes = limit
            .get_bytes_per_second()
            .zip(limit.get_byte_burst())
            .map(|(rate, burst)| Bucket::new(rate, burst));
    }

    /// The driver says it is `instant`: the buckets earn what the time
    /// since the last instant brings (time only moves forward).
    pub(super) fn observe(&mut self, instant: Instant) {
        let origin = *self.origin.get_or_insert(instant);
        let since = instant.saturating_duration_since(origin).as_nanos();
        let now = u64::try_from(since).unwrap_or(u64::MAX);
        if now > self.now {
            self.now = now;
            for bucket in [&mut self.messages, &mut self.bytes].into_iter().flatten() {
                bucket.refill(now);
            }
        }
    }

    /// What `msg` costs in messages and bytes; `None` if it is free.
    fn costs(msg: &Message) -> Option<(u64, u64)> {
        match msg {
            Message::Close(_) => None,
            Message::Ping(_) | Message::Pong(_) => Some((1, 0)),
            Message::Text(_) | Message::Binary(_) | Message::Frame(_) => {
                Some((1, msg.len() as u64))
            }
        }
    }

    /// When `msg` fits (nanoseconds since the origin).
    fn fits_at(&self, msg: &Message) -> u64 {
        let Some((messages, bytes)) = Self::costs(msg) else {
            return 0;
        };
        let by_messages = self.messages.as_ref().map_or(0, |b| b.fits_at(messages));
        let by_bytes = self.bytes.as_ref().map_or(0, |b| b.fits_at(bytes));
        by_messages.max(by_bytes)
    }

    /// `msg`, charged now, if it fits; if it does not, what the policy
    /// says: hold it back until it fits, or fail the connection.
    pub(super) fn admit_or_hold(&mut self, msg: Message) -> Admission {
        let unit = match self.admit(&msg) {
            Ok(()) => return Admission::Admitted(msg),
            Err(unit) => unit,
        };
        match self.limit.policy {
            RatePolicy::Throttle => {
                self.held = Some(msg);
                Admission::Held
            }
            RatePolicy::Close => Admission::Exceeded(self.exceeded(unit)),
        }
    }

    /// Charges `msg` now if it fits; otherwise the bucket it overran.
    fn admit(&mut self, msg: &Message) -> std::result::Result<(), RateUnit> {
        let Some((messages, bytes)) = Self::costs(msg) else {
            return Ok(());
        };
        if !self.messages.as_ref().is_none_or(|b| b.fits(messages)) {
            return Err(RateUnit::Messages);
        }
        if !self.bytes.as_ref().is_none_or(|b| b.fits(bytes)) {
            return Err(RateUnit::Bytes);
        }
        if let Some(bucket) = self.messages.as_mut() {
            bucket.charge(messages);
        }
        if let Some(bucket) = self.bytes.as_mut() {
            bucket.charge(bytes);
        }
        Ok(())
    }

    /// When the held message fits.
    pub(super) fn until(&self) -> Option<Instant> {
        let at = self.fits_at(self.held.as_ref()?);
        self.origin?.checked_add(Duration::from_nanos(at))
    }

    fn exceeded(&self, unit: RateUnit) -> Error {
        let (per_second, burst) = match unit {
            RateUnit::Messages => self.messages.as_ref(),
            RateUnit::Bytes => self.bytes.as_ref(),
        }
        .map_or((0, 0), |b| (b.per_second, b.burst.unsigned_abs()));
        // Two variants rather than one with a field naming the bucket: an
        // enum field would lend `Error` a niche, which changed the code
        // generated for every read (measured: 0.8% more instructions).
        match unit {
            RateUnit::Messages => Detail::MessageRateExceeded { per_second, burst },
            RateUnit::Bytes => Detail::ByteRateExceeded { per_second, burst },
        }
        .into()
    }
}

/// What a rate limit makes of a message read
/// ([`RateLimiter::admit_or_hold`]).
#[derive(Debug)]
pub(super) enum Admission {
    /// It fits: deliver it.
    Admitted(Message),
    /// It does not fit yet and is held back (policy `Throttle`).
    Held,
    /// It does not fit and the policy is `Close`: fail the connection.
    Exceeded(Error),
}

#[cfg(test)]
mod tests {
    use bytes::{Buf, Bytes};

    use crate::proto::test_frames::{WaitAt, client_frame, parse_frames};

    use super::*;
    use crate::config::{Config, Role};
    use crate::error::TimeoutKind;
    use crate::frame::{CloseCode, OpCode};
    use crate::proto::context::WebSocketContext;
    use crate::proto::seam::{Next, Operation};

    const SECOND: Duration = Duration::from_secs(1);
    const MS: Duration = Duration::from_millis(1);

    fn server(config: Config) -> WebSocketContext {
        WebSocketContext::new(Role::Server, config.ping_interval(None))
    }

    /// A peer that sends `count` messages of `size` bytes, one every
    /// `every` from `t0` (all at once for a zero `every`).
    struct Peer {
        t0: Instant,
        every: Duration,
        size: usize,
        count: usize,
        fed: usize,
    }

    impl Peer {
        /// A peer that sends nothing more (what it sent was fed already).
        fn silent(t0: Instant) -> Self {
            Self {
                t0,
                every: Duration::ZERO,
                size: 0,
                count: 0,
                fed: 0,
            }
        }

        fn flood(t0: Instant, every: Duration, size: usize) -> Self {
            Self {
                t0,
                every,
                size,
                count: usize::MAX,
                fed: 0,
            }
        }

        /// How many it sent by `now`.
        fn sent_by(&self, now: Instant) -> usize {
            if self.every.is_zero() {
                return self.count;
            }
            let n = (now - self.t0).as_nanos() / self.every.as_nanos() + 1;
            usize::try_from(n).unwrap_or(usize::MAX).min(self.count)
        }

        /// When it sends its next message, if it has one left.
        fn next_send(&self) -> Option<Instant> {
            (self.fed < self.count).then(|| self.t0 + self.every * self.fed as u32)
        }
    }

    /// What a simulated run saw.
    #[derive(Debug, Default)]
    struct Run {
        /// When each message was handed over.
        delivered: Vec<(Instant, Message)>,
        waits: usize,
        error: Option<Error>,
        /// The frames the context wrote, unmasked: opcode and payload.
        written: Vec<(OpCode, Vec<u8>)>,
        /// The simulated time when the run stopped.
        ended: Option<Instant>,
    }

    impl Run {
        /// When each message was handed over, from `t0`.
        fn times(&self, t0: Instant) -> Vec<Duration> {
            self.delivered.iter().map(|(at, _)| *at - t0).collect()
        }
    }

    /// Drives `ctx` as a driver would, in simulated time from `t0` to
    /// `end`: the peer's bytes arrive when the context asks for input;
    /// time moves to the next deadline or the peer's next message when
    /// there is nothing to do.
    fn run(ctx: &mut WebSocketContext, peer: &mut Peer, t0: Instant, end: Instant) -> Run {
        let mut now = t0;
        let mut seen = Run::default();
        let mut wire = Vec::new();
        for _ in 0..1_000_000 {
            match ctx.poll(Operation::Read) {
                Ok(Next::Message(msg)) => seen.delivered.push((now, msg)),
                Ok(Next::Transmit) => {
                    let mut out = ctx.output();
                    wire.extend_from_slice(&out.copy_to_bytes(out.remaining()));
                }
                Ok(Next::Flush) => ctx.flushed(),
                Ok(Next::Shutdown) => ctx.shut_down(),
                // A lingering close after the Close policy failed the
                // connection: the peer closes at once.
                Ok(Next::Discard) => ctx.input_ended(),
                Ok(Next::Receive) => {
                    assert!(!ctx.is_throttled(), "no input is asked for while throttled");
                    let sent = peer.sent_by(now);
                    if sent > peer.fed {
                        for _ in peer.fed..sent {
                            ctx.feed(&client_frame(OpCode::Binary, &vec![b'x'; peer.size]));
                        }
                        peer.fed = sent;
                        continue;
                    }
                    let deadline = ctx.wait_at(now);
                    let Some(next) = [deadline, peer.next_send()].into_iter().flatten().min()
                    else {
                        break;
                    };
                    if next > end {
                        break;
                    }
                    now = now.max(next);
                    ctx.handle_timeout(now);
                }
                Ok(Next::Wait) => {
                    seen.waits += 1;
                    let deadline = ctx.wait_at(now).expect("a throttle has a deadline");
                    if deadline > end {
                        break;
                    }
                    now = now.max(deadline);
                    ctx.handle_timeout(now);
                }
                Ok(Next::Done) => panic!("a read ended without a message"),
                Err(error) => {
                    seen.error = Some(error);
                    break;
                }
            }
        }
        seen.ended = Some(now);
        seen.written = parse_frames(&wire);
        seen
    }

    /// How many messages were handed over in `[from, to)`.
    fn count_between(run: &Run, from: Instant, to: Instant) -> usize {
        run.delivered
            .iter()
            .filter(|(at, _)| (from..to).contains(at))
            .count()
    }

    #[test]
    fn a_peer_at_ten_times_the_limit_gets_the_limit_without_a_close() {
        let t0 = Instant::now();
        let limit = RateLimit::messages_per_second(10);
        let mut ctx = server(Config::default().rate_limit(limit));
        // 100 messages a second for a minute.
        let mut peer = Peer::flood(t0, 10 * MS, 16);
        let seen = run(&mut ctx, &mut peer, t0, t0 + 60 * SECOND);
        assert!(seen.error.is_none(), "{:?}", seen.error);
        assert!(seen.written.is_empty(), "no close: {:?}", seen.written);
        assert!(!ctx.is_terminated());
        // The burst (ten) arrives in the first 100 ms at the peer's pace;
        // from then on, one message every 100 ms, exactly.
        for second in 1..60 {
            let from = t0 + SECOND * second;
            assert_eq!(
                count_between(&seen, from, from + SECOND),
                10,
                "second {second}"
            );
        }
        // Over the whole run: at most the burst plus the rate times the time.
        let total = seen.delivered.len();
        assert_eq!(
            total,
            10 + 10 * 60,
            "burst + rate x 60 s (the one at 60 s included)"
        );
        assert!(seen.waits > 0, "it was throttled");
        // Input was asked for only while nothing was held back (checked
        // in `run`), so the rest of the peer's 6,000 stayed unread.
        assert!(peer.fed < 6000 / 4, "read {} for {total}", peer.fed);
    }

    #[test]
    fn messages_already_buffered_wait_their_turn() {
        let t0 = Instant::now();
        let limit = RateLimit::messages_per_second(2).message_burst(5);
        let mut ctx = server(Config::default().rate_limit(limit));
        // Twenty messages in one read, at t0.
        let mut peer = Peer {
            t0,
            every: Duration::ZERO,
            size: 3,
            count: 20,
            fed: 0,
        };
        let seen = run(&mut ctx, &mut peer, t0, t0 + 3 * SECOND);
        let times = seen.times(t0);
        let ms = |n: u64| Duration::from_millis(n);
        // The burst at once, then one every 500 ms; the rest stay buffered.
        assert_eq!(
            times,
            [0, 0, 0, 0, 0, 500, 1000, 1500, 2000, 2500, 3000].map(ms)
        );
        assert!(ctx.buffered_input() > 0);
    }

    #[test]
    fn a_bytes_limit_paces_by_payload() {
        let t0 = Instant::now();
        let limit = RateLimit::bytes_per_second(1000);
        let mut ctx = server(Config::default().rate_limit(limit));
        // 100-byte messages, 100 a second: ten times the byte rate.
        let mut peer = Peer::flood(t0, 10 * MS, 100);
        let seen = run(&mut ctx, &mut peer, t0, t0 + 10 * SECOND);
        assert!(seen.error.is_none());
        // The 1000-byte burst, then ten 100-byte messages a second.
        assert_eq!(seen.delivered.len(), 10 + 10 * 10);
        for second in 1..10 {
            let from = t0 + SECOND * second;
            assert_eq!(
                count_between(&seen, from, from + SECOND),
                10,
                "second {second}"
            );
        }
    }

    #[test]
    fn a_message_larger_than_the_burst_goes_through_and_leaves_a_debt() {
        let t0 = Instant::now();
        let limit = RateLimit::bytes_per_second(1000).byte_burst(1000);
        let mut ctx = server(Config::default().rate_limit(limit));
        ctx.feed(&client_frame(OpCode::Binary, &[0; 5000]));
        ctx.feed(&client_frame(OpCode::Binary, &[0; 100]));
        let _ = ctx.wait_at(t0);
        let mut peer = Peer::silent(t0);
        let seen = run(&mut ctx, &mut peer, t0, t0 + 10 * SECOND);
        let times = seen.times(t0);
        // 5000 bytes at once (the bucket was full), then 4000 bytes of
        // debt and 100 more: the next fits at 4.1 s.
        assert_eq!(times, [Duration::ZERO, Duration::from_millis(4100)]);
    }

    #[test]
    fn the_close_policy_closes_with_1008() {
        let t0 = Instant::now();
        let limit = RateLimit::messages_per_second(10).policy(RatePolicy::Close);
        let mut ctx = server(Config::default().rate_limit(limit));
        let mut peer = Peer::flood(t0, 10 * MS, 4);
        let seen = run(&mut ctx, &mut peer, t0, t0 + 10 * SECOND);
        let error = seen.error.expect("closed");
        assert!(
            matches!(
                error.detail(),
                Some(crate::error::Detail::MessageRateExceeded {
                    per_second: 10,
                    burst: 10,
                })
            ),
            "{error:?}"
        );
        assert_eq!(error.close_code(), Some(CloseCode::Policy));
        assert_eq!(
            error.to_string(),
            "IO error: message rate exceeded: more than 10 per second (burst 10)"
        );
        // The burst and the rate: eleven messages in the first 100 ms (ten
        // plus 100 ms' worth); the twelfth, at 110 ms, was 90 ms early.
        assert_eq!(seen.delivered.len(), 11);
        assert_eq!(seen.waits, 0, "never throttled");
        let close = 1008u16.to_be_bytes().to_vec();
        assert_eq!(seen.written, [(OpCode::Close, close)]);
        assert!(matches!(
            ctx.poll(Operation::Read),
            Err(Error::AlreadyClosed)
        ));
    }

    #[test]
    fn keepalive_does_not_fire_while_throttled() {
        let t0 = Instant::now();
        let config = Config::default()
            .rate_limit(RateLimit::bytes_per_second(100))
            .ping_interval(Some(SECOND))
            .ping_timeout(Some(SECOND));
        let mut ctx = WebSocketContext::new(Role::Server, config);
        // Three messages of 10,000 bytes at once: each leaves 100 s of
        // debt, so the last is read at 200 s; ping interval and timeout
        // are 1 s each.
        let mut peer = Peer {
            t0,
            every: Duration::ZERO,
            size: 10_000,
            count: 3,
            fed: 0,
        };
        let seen = run(&mut ctx, &mut peer, t0, t0 + 250 * SECOND);
        let times: Vec<u64> = seen
            .delivered
            .iter()
            .map(|(at, _)| (*at - t0).as_secs())
            .collect();
        assert_eq!(times, [0, 100, 200]);
        // Once the backlog is read the peer is silent (it answers no
        // ping): only then is it pinged, and given up a second later.
        assert!(
            matches!(seen.error, Some(ref e) if e.timeout() == Some(TimeoutKind::Keepalive)),
            "{:?}",
            seen.error
        );
        assert_eq!(seen.ended, Some(t0 + 202 * SECOND));
        let opcodes: Vec<OpCode> = seen.written.iter().map(|(op, _)| *op).collect();
        assert_eq!(opcodes, [OpCode::Ping, OpCode::Close]);
    }

    #[test]
    fn a_hold_that_ended_before_the_keepalive_deadline_still_counts_as_hearing() {
        let t0 = Instant::now();
        let config = Config::default()
            .rate_limit(RateLimit::messages_per_second(1))
            .ping_interval(Some(10 * SECOND))
            .ping_timeout(None);
        let mut ctx = WebSocketContext::new(Role::Server, config);
        // Two messages at once: the second is held until 1 s; then the
        // peer is silent. The keepalive interval armed while the message
        // was held starts again at its deadline (10 s): the first ping
        // goes out at 20 s, not at 10.
        let mut peer = Peer {
            t0,
            every: Duration::ZERO,
            size: 10,
            count: 2,
            fed: 0,
        };
        let seen = run(&mut ctx, &mut peer, t0, t0 + 15 * SECOND);
        assert_eq!(seen.delivered.len(), 2);
        assert!(seen.written.is_empty(), "pinged: {:?}", seen.written);
    }

    #[test]
    fn pings_count_and_close_frames_do_not() {
        let t0 = Instant::now();
        let limit = RateLimit::messages_per_second(1).message_burst(1);
        let mut ctx = server(Config::default().rate_limit(limit));
        ctx.feed(&client_frame(OpCode::Ping, b"a"));
        ctx.feed(&client_frame(OpCode::Ping, b"b"));
        ctx.feed(&client_frame(OpCode::Close, &1000u16.to_be_bytes()));
        let _ = ctx.wait_at(t0);
        let mut peer = Peer::silent(t0);
        let seen = run(&mut ctx, &mut peer, t0, t0 + 5 * SECOND);
        let delivered: Vec<(Duration, Message)> = seen
            .delivered
            .into_iter()
            .map(|(at, msg)| (at - t0, msg))
            .collect();
        assert_eq!(
            delivered,
            [
                (Duration::ZERO, Message::Ping(Bytes::from_static(b"a"))),
                (SECOND, Message::Ping(Bytes::from_static(b"b"))),
                // Not charged: right after the second ping.
                (
                    SECOND,
                    Message::Close(Some(crate::message::CloseFrame::new(CloseCode::Normal, "")))
                ),
            ]
        );
        // Both pings were answered (the second while it was held), then
        // the close was.
        let opcodes: Vec<OpCode> = seen.written.iter().map(|(op, _)| *op).collect();
        assert_eq!(opcodes, [OpCode::Pong, OpCode::Pong, OpCode::Close]);
    }

    #[test]
    fn a_message_without_bytes_does_not_wait_for_the_byte_debt() {
        let t0 = Instant::now();
        let limit = RateLimit::messages_per_second(1)
            .message_burst(1)
            .with_bytes_per_second(100)
            .byte_burst(100);
        let mut ctx = server(Config::default().ping_interval(None).rate_limit(limit));
        let _ = ctx.wait_at(t0);
        // 900 bytes of debt, repaid at 9 s; then a ping, which costs a
        // message (due at 1 s) and no bytes.
        ctx.feed(&client_frame(OpCode::Binary, &[0; 1000]));
        ctx.feed(&client_frame(OpCode::Ping, b""));
        let mut peer = Peer::silent(t0);
        let seen = run(&mut ctx, &mut peer, t0, t0 + 10 * SECOND);
        let times = seen.times(t0);
        assert_eq!(times, [Duration::ZERO, SECOND]);
        assert!(matches!(seen.delivered[1].1, Message::Ping(_)));
    }

    #[test]
    fn next_message_hands_the_held_message_over_first() {
        let t0 = Instant::now();
        let limit = RateLimit::messages_per_second(1).message_burst(1);
        let mut ctx = server(Config::default().rate_limit(limit));
        let _ = ctx.wait_at(t0);
        for text in ["1", "2", "3"] {
            ctx.feed(&client_frame(OpCode::Text, text.as_bytes()));
        }
        assert!(
            matches!(ctx.poll(Operation::Read), Ok(Next::Message(m)) if m == Message::text("1"))
        );
        assert!(matches!(ctx.poll(Operation::Read), Ok(Next::Wait)));
        // "2" is held; the unlimited read keeps the order.
        assert_eq!(ctx.next_message().unwrap(), Some(Message::text("2")));
        assert_eq!(ctx.next_message().unwrap(), Some(Message::text("3")));
    }

    #[test]
    fn without_a_limit_nothing_changes() {
        assert_eq!(Config::default().get_rate_limit(), None);
        // The configuration holds the limit by value; the context keeps
        // none of it (its idle size is pinned in `context.rs`).
        let t0 = Instant::now();
        let mut ctx = WebSocketContext::new(Role::Server, Config::default());
        assert!(!ctx.holds_negotiated_state(), "no state for a limit");
        let mut peer = Peer::flood(t0, 10 * MS, 16);
        let seen = run(&mut ctx, &mut peer, t0, t0 + 10 * SECOND);
        assert_eq!(seen.waits, 0);
        // Every message as it arrives (the keepalive ping's pong aside:
        // this peer does not answer, but it is never silent).
        assert_eq!(seen.delivered.len(), peer.fed);
        assert!(
            seen.delivered
                .iter()
                .all(|(at, _)| *at - t0 < 10 * SECOND + MS)
        );
        assert_eq!(
            ctx.wait_at(t0 + 10 * SECOND),
            Some(t0 + 20 * SECOND),
            "the keepalive deadline, as before"
        );
    }

    #[test]
    fn removing_the_limit_hands_over_the_held_message() {
        let t0 = Instant::now();
        let limited = Config::default().rate_limit(RateLimit::messages_per_second(1));
        let mut ctx = server(limited);
        let _ = ctx.wait_at(t0);
        for payload in [b"1", b"2"] {
            ctx.feed(&client_frame(OpCode::Binary, payload));
        }
        assert!(matches!(ctx.poll(Operation::Read), Ok(Next::Message(_))));
        assert_eq!(ctx.poll(Operation::Read).unwrap(), Next::Wait);
        assert_eq!(ctx.wait_at(t0), Some(t0 + SECOND));
        // The same limit again changes nothing.
        ctx.set_config(limited);
        assert_eq!(ctx.poll(Operation::Read).unwrap(), Next::Wait);
        ctx.set_config(Config::default().ping_interval(None));
        assert_eq!(
            ctx.poll(Operation::Read).unwrap(),
            Next::Message(Message::Binary(Bytes::from_static(b"2")))
        );
        assert_eq!(ctx.poll(Operation::Read).unwrap(), Next::Receive);
        assert_eq!(ctx.wait_at(t0), None);
    }

    #[test]
    fn any_number_of_distinct_limits_is_fine() {
        // Limits once went through a process-wide table of at most 65,535
        // entries: a server setting per-user limits could panic. Each
        // configuration and connection now holds its own.
        for n in 1..=70_000u32 {
            let limit = RateLimit::messages_per_second(n);
            let config = Config::default().rate_limit(limit);
            assert_eq!(config.get_rate_limit(), Some(limit));
            if n % 10_000 == 0 {
                let ctx = WebSocketContext::new(Role::Server, config);
                assert_eq!(ctx.config(), config, "read back whole");
            }
        }
    }

    #[test]
    fn configs_with_equal_limits_are_equal() {
        let a = RateLimit::messages_per_second(7).with_bytes_per_second(70);
        let b = RateLimit::bytes_per_second(70).with_messages_per_second(7);
        assert_eq!(a, b);
        assert_eq!(
            Config::default().rate_limit(a),
            Config::default().rate_limit(b)
        );
        let c = a.policy(RatePolicy::Close);
        assert_ne!(
            Config::default().rate_limit(a),
            Config::default().rate_limit(c)
        );
        assert_eq!(Config::default().rate_limit(c).get_rate_limit(), Some(c));
        assert_eq!(
            Config::default().rate_limit(a).rate_limit(None),
            Config::default()
        );
        assert!(
            format!("{:?}", Config::default().rate_limit(a)).contains("messages_per_second: 7")
        );
        assert_eq!(a.get_message_burst(), Some(7), "one second's worth");
        assert_eq!(a.message_burst(0).get_message_burst(), Some(0));
        assert_eq!(
            RateLimit::bytes_per_second(5)
                .message_burst(9)
                .get_message_burst(),
            None
        );
    }

    #[test]
    fn the_buckets_are_exact_at_high_rates() {
        // 3 GB/s: a third of a nanosecond per byte, exact nonetheless.
        let mut bucket = Bucket::new(3_000_000_000, 3_000_000_000);
        bucket.charge(3_000_000_000);
        assert_eq!(bucket.fits_at(1), 1);
        assert_eq!(bucket.fits_at(3), 1);
        assert_eq!(bucket.fits_at(4), 2);
        assert_eq!(bucket.fits_at(3_000_000_000), 1_000_000_000);
        bucket.refill(1);
        assert!(bucket.fits(3) && !bucket.fits(4));
        // Far in the future, nothing overflows.
        bucket.charge(u64::MAX);
        bucket.charge(u64::MAX);
        assert_eq!(bucket.fits_at(1), 3_074_457_345_618_258_604);
        bucket.refill(u64::MAX);
        assert!(bucket.fits(u64::MAX), "full again");
    }
}
