//! [`Config`] and [`Role`].

use std::time::Duration;

use crate::deflate::DeflateConfig;
use crate::proto::RateLimit;

/// Which end of the connection this is. Clients mask what they send and
/// servers require masked frames (RFC 6455 section 5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// The end that sent the upgrade request.
    Client,
    /// The end that accepted it.
    Server,
}

/// Limits and buffer sizes of one connection.
///
/// Build it with [`Config::default`] and the by-value setters:
///
/// ```
/// let config = lockgate::Config::default()
///     .max_message_size(Some(1 << 20))
///     .write_buffer_size(64 * 1024);
/// assert_eq!(config.get_max_message_size(), Some(1 << 20));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Config {
    settings: Settings,
    // By value: a configuration is the caller's to copy; a connection
    // keeps only `settings`, and the limit with its buckets, behind the
    // pointer it has for rare state, so one without a limit holds nothing
    // for it.
    rate_limit: Option<RateLimit>,
}

/// A [`Config`] without its rate limit: what a connection keeps of its
/// configuration (every connection holds one, so it stays small).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Settings {
    // Buffer sizes as `u32`, `u32::MAX` for everything from there up
    // (`usize::MAX` reads back): every connection holds its settings.
    read_buffer_size: u32,
    write_buffer_size: u32,
    max_write_buffer_size: u32,
    // `usize::MAX` for no limit: half the size of an `Option<usize>`.
    max_message_size: usize,
    max_frame_size: usize,
    // `u32::MAX` for no limit.
    max_fragments: u32,
    accept_unmasked_frames: bool,
    // Millisecond resolution keeps these small: every connection holds
    // its settings.
    handshake_timeout: Millis,
    ping_interval: Millis,
    ping_timeout: Millis,
    close_timeout: Millis,
    deflate: Option<DeflateConfig>,
}

/// An optional duration in whole milliseconds (rounded up, at most about
/// 49 days), in a quarter of the space of an `Option<Duration>`.
/// A buffer size as stored: sizes from `u32::MAX` up (none of which a
/// buffer reaches) become `u32::MAX`.
fn size_to_u32(bytes: usize) -> u32 {
    u32::try_from(bytes).unwrap_or(u32::MAX)
}

/// A stored buffer size: `u32::MAX` is "no limit", `usize::MAX`.
#[inline]
fn size_from_u32(bytes: u32) -> usize {
    match bytes {
        u32::MAX => usize::MAX,
        bytes => bytes as usize,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Millis(u32);

impl Millis {
    const NONE: u32 = u32::MAX;

    pub(crate) fn get(self) -> Option<Duration> {
        (self.0 != Self::NONE).then(|| Duration::from_millis(self.0.into()))
    }
}

impl From<Option<Duration>> for Millis {
    fn from(duration: Option<Duration>) -> Self {
        Self(match duration {
            None => Self::NONE,
            Some(d) => {
                let ms = d.as_nanos().div_ceil(1_000_000);
                u32::try_from(ms)
                    .unwrap_or(Self::NONE - 1)
                    .min(Self::NONE - 1)
            }
        })
    }
}

/// A size limit of `usize::MAX` is no limit (`None`).
const NO_LIMIT: usize = usize::MAX;

/// 64 MiB: the largest message accepted by default.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 64 << 20;
/// 16 MiB: the largest frame accepted by default.
pub const DEFAULT_MAX_FRAME_SIZE: usize = 16 << 20;
/// 72 MiB: room for one maximum-size message plus 8 MiB of smaller ones.
pub const DEFAULT_MAX_WRITE_BUFFER_SIZE: usize = 72 << 20;

/// 131,072: the most frames one incoming message may arrive in by default.
/// Twice what a 4 MiB message cut into 64-byte fragments needs (the most
/// finely cut message of the Autobahn suite); senders that fragment at all
/// usually cut kilobytes at a time.
pub const DEFAULT_MAX_FRAGMENTS: usize = 1 << 17;

/// 30 s: how long an opening handshake may take by default.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// 20 s: how long a connection may be silent before a keepalive ping.
pub const DEFAULT_PING_INTERVAL: Duration = Duration::from_secs(20);

/// 20 s: how long after a keepalive ping a silent peer is given up.
pub const DEFAULT_PING_TIMEOUT: Duration = Duration::from_secs(20);

/// 10 s: how long the peer may take to answer our close frame.
pub const DEFAULT_CLOSE_TIMEOUT: Duration = Duration::from_secs(10);

impl Default for Settings {
    fn default() -> Self {
        Self {
            read_buffer_size: 8 * 1024,
            write_buffer_size: 128 * 1024,
            max_write_buffer_size: size_to_u32(DEFAULT_MAX_WRITE_BUFFER_SIZE),
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            max_frame_size: DEFAULT_MAX_FRAME_SIZE,
            max_fragments: DEFAULT_MAX_FRAGMENTS as u32,
            accept_unmasked_frames: false,
            handshake_timeout: Millis::from(Some(DEFAULT_HANDSHAKE_TIMEOUT)),
            ping_interval: Millis::from(Some(DEFAULT_PING_INTERVAL)),
            ping_timeout: Millis::from(Some(DEFAULT_PING_TIMEOUT)),
            close_timeout: Millis::from(Some(DEFAULT_CLOSE_TIMEOUT)),
            deflate: None,
        }
    }
}

impl Config {
    /// The size of the first and of the smallest socket read. Default 8 KiB.
    ///
    /// Reads then adapt: they double while they fill what they ask for (up
    /// to 128 KiB between frames, 1 MiB inside a frame larger than that)
    /// and halve when they use little of it. The buffer only exists while
    /// bytes are pending (it is released when the driver waits for the
    /// peer), so an idle connection does not hold it.
    pub fn read_buffer_size(mut self, bytes: usize) -> Self {
        self.settings.read_buffer_size = size_to_u32(bytes.max(1));
        self
    }

    /// The out-buffer level at which `write` starts writing to the socket
    /// (without flushing). Default 128 KiB.
    ///
    /// Below it, `write` only encodes. `0` writes on every `write` call,
    /// which still never flushes; 4 GiB or more (`usize::MAX` when read
    /// back) writes only when flushed.
    pub fn write_buffer_size(mut self, bytes: usize) -> Self {
        self.settings.write_buffer_size = size_to_u32(bytes);
        self
    }

    /// The most bytes the out buffer may hold. Default 72 MiB
    /// ([`DEFAULT_MAX_WRITE_BUFFER_SIZE`]).
    ///
    /// A message that would take the buffer past it is refused with
    /// [`Error::WriteBufferFull`](crate::Error::WriteBufferFull) and handed
    /// back; pongs and close replies are exempt (they are small and bounded).
    /// A message that is larger than this on its own is refused with
    /// [`CapacityError::MessageTooLong`](crate::CapacityError::MessageTooLong).
    /// 4 GiB or more means no limit (`usize::MAX` when read back).
    pub fn max_write_buffer_size(mut self, bytes: usize) -> Self {
        self.settings.max_write_buffer_size = size_to_u32(bytes);
        self
    }

    /// The largest incoming message, summed over its fragments (inflated,
    /// with permessage-deflate). Default 64 MiB; `None` for no limit.
    /// Exceeding it fails the connection with 1009 before the excess is
    /// buffered.
    ///
    /// It bounds what a message costs, not only its payload: a message in
    /// assembly holds its bytes in one buffer whatever its fragmentation
    /// (at most about twice the bytes received while it grows, never more
    /// than this limit), and small messages never keep a read buffer alive.
    pub fn max_message_size(mut self, bytes: Option<usize>) -> Self {
        self.settings.max_message_size = bytes.unwrap_or(NO_LIMIT);
        self
    }

    /// The most frames one incoming message may arrive in. Default
    /// 131,072 ([`DEFAULT_MAX_FRAGMENTS`]); `None` for no limit. Exceeding
    /// it fails the connection with 1008 (policy) and
    /// [`Detail::TooManyFragments`](crate::Detail::TooManyFragments).
    ///
    /// Fragments cost no memory beyond their bytes, but each costs work, and
    /// empty ones would let a message stay open forever without reaching
    /// `max_message_size`. From `u32::MAX` up, no limit.
    pub fn max_fragments(mut self, frames: Option<usize>) -> Self {
        self.settings.max_fragments =
            frames.map_or(u32::MAX, |n| u32::try_from(n).unwrap_or(u32::MAX));
        self
    }

    /// The largest incoming frame payload. Default 16 MiB; `None` for no
    /// limit. Checked on the header, before anything is allocated.
    pub fn max_frame_size(mut self, bytes: Option<usize>) -> Self {
        self.settings.max_frame_size = bytes.unwrap_or(NO_LIMIT);
        self
    }

    /// Lets a server accept unmasked frames from clients, which RFC 6455
    /// forbids. Default `false`. Only for peers known to break the rule.
    pub fn accept_unmasked_frames(mut self, accept: bool) -> Self {
        self.settings.accept_unmasked_frames = accept;
        self
    }

    /// The longest an opening handshake may take, so a silent or trickling
    /// peer cannot hold a connection slot forever. Default 30 s
    /// ([`DEFAULT_HANDSHAKE_TIMEOUT`]); `None` waits forever.
    ///
    /// Both roles enforce it: the handshake fails with
    /// an error whose [`timeout`](crate::Error::timeout) is [`TimeoutKind::Handshake`](crate::TimeoutKind::Handshake).
    /// The tokio adapter does so on any stream; the blocking entry points on
    /// a `TcpStream` or `UnixStream` (as a read timeout set to the time left
    /// before each read and cleared afterwards, unless the caller set a
    /// read timeout of its own), and on other streams when a read returns
    /// after the deadline. For `connect` and `connect_async`
    /// the deadline covers the TCP connection (and TLS) too.
    pub fn handshake_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.settings.handshake_timeout = Millis::from(timeout);
        self
    }

    /// Keepalive: after this long without receiving anything, send a ping
    /// (timeouts have millisecond resolution).
    /// Default 20 s ([`DEFAULT_PING_INTERVAL`]); `None` never pings.
    ///
    /// A peer that vanished without closing (NAT state dropped, cable
    /// pulled, host powered off) sends no FIN, so without a ping the
    /// connection waits forever. Each ping costs a few bytes on an idle
    /// connection; shorter intervals find dead peers sooner and keep NAT
    /// mappings alive, at the price of more wake-ups per idle connection.
    /// The ping is housekeeping: it is flushed on its own, like a pong, and
    /// its pong is consumed by the connection (it shows the peer is alive),
    /// never returned by `read`. The ping carries `lockgate keepalive nnn`
    /// (its number on this connection) so that pong is told apart exactly:
    /// the pongs to your own pings, and unsolicited pongs, are returned.
    pub fn ping_interval(mut self, interval: Option<Duration>) -> Self {
        self.settings.ping_interval = Millis::from(interval);
        self
    }

    /// Keepalive: if nothing at all arrives this long after a keepalive
    /// ping, the connection fails with
    /// an error whose [`timeout`](crate::Error::timeout) is [`TimeoutKind::Keepalive`](crate::TimeoutKind::Keepalive)
    /// and a close frame with 1011 is sent if the stream takes it. Default
    /// 20 s ([`DEFAULT_PING_TIMEOUT`]); `None` pings but never gives up.
    ///
    /// Any bytes from the peer count, not only the pong: a peer busy
    /// sending a large message is alive. Too short a timeout drops peers
    /// on slow or congested links; too long holds dead connections.
    pub fn ping_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.settings.ping_timeout = Millis::from(timeout);
        self
    }

    /// How long the peer may take to finish the closing handshake after we
    /// sent our close frame; then reading fails with
    /// an error whose [`timeout`](crate::Error::timeout) is [`TimeoutKind::Close`](crate::TimeoutKind::Close)
    /// and the connection can be dropped. Default 10 s
    /// ([`DEFAULT_CLOSE_TIMEOUT`]); `None` waits as long as the peer does.
    pub fn close_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.settings.close_timeout = Millis::from(timeout);
        self
    }

    /// permessage-deflate (RFC 7692): `Some` to offer it (client) or accept
    /// it (server) with these settings. Default `None`: compression costs
    /// CPU and memory per connection, so it is opt-in.
    pub fn deflate(mut self, deflate: Option<DeflateConfig>) -> Self {
        self.settings.deflate = deflate;
        self
    }

    /// Limits how fast the peer may send: messages and payload bytes per
    /// second, each a token bucket with a burst, and what to do with a
    /// peer that sends faster: throttle it (stop reading until the bucket
    /// refills, so TCP pushes back on it) or close with 1008. Default
    /// `None`: no limit. `None` removes a limit set before. See
    /// [`RateLimit`] and [`RatePolicy`](crate::RatePolicy) for what counts
    /// and the defaults of its fields.
    ///
    /// Without a limit a connection holds nothing for it; with one, its
    /// buckets take one allocation (about 200 bytes) and reading a message
    /// a few integer operations.
    ///
    /// ```
    /// use lockgate::{Config, RateLimit};
    ///
    /// let config = Config::default().rate_limit(RateLimit::messages_per_second(50));
    /// assert_eq!(config.get_rate_limit().unwrap().get_message_burst(), Some(50));
    /// ```
    pub fn rate_limit(mut self, limit: impl Into<Option<RateLimit>>) -> Self {
        self.rate_limit = limit.into();
        self
    }

    /// See [`Config::rate_limit`].
    pub fn get_rate_limit(&self) -> Option<RateLimit> {
        self.rate_limit
    }

    /// What a connection keeps of this configuration: all but the rate
    /// limit.
    pub(crate) fn settings(&self) -> Settings {
        self.settings
    }

    /// The configuration a connection with `settings` and `rate_limit`
    /// was given.
    pub(crate) fn from_parts(settings: Settings, rate_limit: Option<RateLimit>) -> Self {
        Self {
            settings,
            rate_limit,
        }
    }

    /// See [`Config::deflate`].
    pub fn get_deflate(&self) -> Option<&DeflateConfig> {
        self.settings.get_deflate()
    }

    /// See [`Config::handshake_timeout`].
    pub fn get_handshake_timeout(&self) -> Option<Duration> {
        self.settings.get_handshake_timeout()
    }

    /// See [`Config::ping_interval`].
    pub fn get_ping_interval(&self) -> Option<Duration> {
        self.settings.get_ping_interval()
    }

    /// See [`Config::ping_timeout`].
    pub fn get_ping_timeout(&self) -> Option<Duration> {
        self.settings.get_ping_timeout()
    }

    /// See [`Config::close_timeout`].
    pub fn get_close_timeout(&self) -> Option<Duration> {
        self.settings.get_close_timeout()
    }

    /// See [`Config::read_buffer_size`].
    #[inline]
    pub fn get_read_buffer_size(&self) -> usize {
        self.settings.get_read_buffer_size()
    }

    /// See [`Config::write_buffer_size`].
    #[inline]
    pub fn get_write_buffer_size(&self) -> usize {
        self.settings.get_write_buffer_size()
    }

    /// See [`Config::max_write_buffer_size`].
    #[inline]
    pub fn get_max_write_buffer_size(&self) -> usize {
        self.settings.get_max_write_buffer_size()
    }

    /// See [`Config::max_message_size`].
    pub fn get_max_message_size(&self) -> Option<usize> {
        self.settings.get_max_message_size()
    }

    /// See [`Config::max_frame_size`].
    pub fn get_max_frame_size(&self) -> Option<usize> {
        self.settings.get_max_frame_size()
    }

    /// See [`Config::max_fragments`].
    pub fn get_max_fragments(&self) -> Option<usize> {
        self.settings.get_max_fragments()
    }

    /// See [`Config::accept_unmasked_frames`].
    pub fn get_accept_unmasked_frames(&self) -> bool {
        self.settings.get_accept_unmasked_frames()
    }
}

impl Settings {
    /// See [`Config::deflate`].
    pub(crate) fn get_deflate(&self) -> Option<&DeflateConfig> {
        self.deflate.as_ref()
    }

    /// See [`Config::handshake_timeout`].
    pub(crate) fn get_handshake_timeout(&self) -> Option<Duration> {
        self.handshake_timeout.get()
    }

    /// See [`Config::ping_interval`].
    pub(crate) fn get_ping_interval(&self) -> Option<Duration> {
        self.ping_interval.get()
    }

    /// See [`Config::ping_timeout`].
    pub(crate) fn get_ping_timeout(&self) -> Option<Duration> {
        self.ping_timeout.get()
    }

    /// See [`Config::close_timeout`].
    pub(crate) fn get_close_timeout(&self) -> Option<Duration> {
        self.close_timeout.get()
    }

    /// See [`Config::read_buffer_size`].
    #[inline]
    pub(crate) fn get_read_buffer_size(&self) -> usize {
        size_from_u32(self.read_buffer_size)
    }

    /// See [`Config::write_buffer_size`].
    #[inline]
    pub(crate) fn get_write_buffer_size(&self) -> usize {
        size_from_u32(self.write_buffer_size)
    }

    /// See [`Config::max_write_buffer_size`].
    #[inline]
    pub(crate) fn get_max_write_buffer_size(&self) -> usize {
        size_from_u32(self.max_write_buffer_size)
    }

    /// See [`Config::max_message_size`].
    pub(crate) fn get_max_message_size(&self) -> Option<usize> {
        (self.max_message_size != NO_LIMIT).then_some(self.max_message_size)
    }

    /// See [`Config::max_frame_size`].
    pub(crate) fn get_max_frame_size(&self) -> Option<usize> {
        (self.max_frame_size != NO_LIMIT).then_some(self.max_frame_size)
    }

    /// See [`Config::max_fragments`].
    pub(crate) fn get_max_fragments(&self) -> Option<usize> {
        (self.max_fragments != u32::MAX).then_some(self.max_fragments as usize)
    }

    /// `max_message_size`, or no limit.
    pub(crate) fn message_limit(&self) -> usize {
        self.max_message_size
    }

    /// See [`Config::accept_unmasked_frames`].
    pub(crate) fn get_accept_unmasked_frames(&self) -> bool {
        self.accept_unmasked_frames
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_round_up_to_milliseconds_and_keep_none() {
        let cases = [
            (None, None),
            (Some(Duration::ZERO), Some(Duration::ZERO)),
            (
                Some(Duration::from_micros(1)),
                Some(Duration::from_millis(1)),
            ),
            (
                Some(Duration::from_millis(1500)),
                Some(Duration::from_millis(1500)),
            ),
            (
                Some(Duration::MAX),
                Some(Duration::from_millis(u64::from(u32::MAX - 1))),
            ),
        ];
        for (given, kept) in cases {
            let config = Config::default().ping_interval(given);
            assert_eq!(config.get_ping_interval(), kept, "{given:?}");
        }
    }
}
