//! [`DeflateConfig`]: what this end offers or accepts for permessage-deflate.

use std::time::Duration;

/// permessage-deflate (RFC 7692) settings of one endpoint.
///
/// A client offers these parameters; a server accepts the first offer it
/// can honour, adjusted to these limits. What was agreed is a
/// [`DeflateParams`](crate::deflate::DeflateParams).
///
/// # Memory
///
/// Compression state is allocated on the first compressed message, not at
/// connect time, and in a direction without context takeover released
/// between bursts (the decompressor after each message, the compressor once
/// written messages are flushed), so an idle connection holds none. Measured with the
/// zlib-rs backend (counting allocator): a compressor takes 245 KiB at 9
/// window bits up to 371 KiB at 15; a decompressor takes 46 KiB whatever
/// the window bits. A connection with context takeover in both directions
/// therefore holds about 417 KiB once it has compressed and decompressed a
/// message; with `server_no_context_takeover` and
/// `client_no_context_takeover`, nothing between messages. With context
/// takeover, a connection quiet for [`sleep_after`](Self::sleep_after)
/// keeps only the windows (at most 2^window_bits bytes per direction) and
/// drops the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeflateConfig {
    // Small types: every connection holds its config.
    compression_level: u8,
    // `u32::MAX` stands for every size from there up: nothing is compressed.
    min_compress_size: u32,
    pub(crate) mem_level: u8,
    pub(crate) server_no_context_takeover: bool,
    pub(crate) client_no_context_takeover: bool,
    pub(crate) server_max_window_bits: u8,
    pub(crate) client_max_window_bits: u8,
    // In units of SLEEP_UNIT, `u16::MAX` for never: fits the padding, so
    // the config (and the context holding it) does not grow.
    sleep_after: u16,
}

/// What an endpoint can actually offer or accept: nothing without the
/// `deflate` feature, whatever the configuration says.
pub(crate) fn usable(config: Option<DeflateConfig>) -> Option<DeflateConfig> {
    if cfg!(feature = "deflate") {
        config
    } else {
        None
    }
}

/// Resolution of [`DeflateConfig::sleep_after`].
const SLEEP_UNIT: Duration = Duration::from_millis(10);

/// See [`DeflateConfig::sleep_after`]: one second.
const DEFAULT_SLEEP_AFTER: u16 = 100;

impl Default for DeflateConfig {
    fn default() -> Self {
        Self {
            compression_level: 1,
            min_compress_size: 64,
            mem_level: 8,
            server_no_context_takeover: false,
            client_no_context_takeover: false,
            server_max_window_bits: 15,
            client_max_window_bits: 15,
            sleep_after: DEFAULT_SLEEP_AFTER,
        }
    }
}

impl DeflateConfig {
    /// zlib compression level, 0 (store) to 9 (smallest). Default 1: most
    /// of the size reduction on chatty JSON at a fraction of the CPU.
    /// Values above 9 are treated as 9.
    pub fn compression_level(mut self, level: u32) -> Self {
        self.compression_level = level.min(9) as u8;
        self
    }

    /// Messages shorter than this are sent uncompressed (compressing them
    /// costs CPU and rarely saves bytes). Default 64 bytes. From 4 GiB up,
    /// nothing is compressed.
    pub fn min_compress_size(mut self, bytes: usize) -> Self {
        self.min_compress_size = u32::try_from(bytes).unwrap_or(u32::MAX);
        self
    }

    /// zlib memory level of the compressor, 1 to 9. Default 8. Accepted for
    /// zlib compatibility; the zlib-rs backend always uses 8.
    pub fn mem_level(mut self, level: u8) -> Self {
        self.mem_level = level.clamp(1, 9);
        self
    }

    /// Ask (client) or require (server) that the server compress each
    /// message independently: less memory on both ends, worse ratio.
    /// Default `false`.
    pub fn server_no_context_takeover(mut self, yes: bool) -> Self {
        self.server_no_context_takeover = yes;
        self
    }

    /// Ask (client) or require (server) that the client compress each
    /// message independently. Default `false`.
    pub fn client_no_context_takeover(mut self, yes: bool) -> Self {
        self.client_no_context_takeover = yes;
        self
    }

    /// The largest LZ77 window the server may use, 8 to 15 bits. Default 15.
    pub fn server_max_window_bits(mut self, bits: u8) -> Self {
        self.server_max_window_bits = bits.clamp(8, 15);
        self
    }

    /// The largest LZ77 window the client may use, 8 to 15 bits. Default 15.
    pub fn client_max_window_bits(mut self, bits: u8) -> Self {
        self.client_max_window_bits = bits.clamp(8, 15);
        self
    }

    /// How long a connection with context takeover must be quiet (no
    /// compressed message either way, a flushed out buffer, waiting for
    /// input) before it sleeps: it keeps only the last 2^window_bits bytes
    /// each direction carried and frees its compressor and decompressor,
    /// which the next message rebuilds from those bytes (a zlib preset
    /// dictionary). The connection keeps sending and receiving the same
    /// messages. At compression levels other than 7 and 8 a rebuilt
    /// compressor may pick other matches (it has hashed every position of
    /// the window, where the running one hashed only some), which changes
    /// compressed bytes, never the messages: over a conversation the size
    /// moves by under 1 %, mostly down; a message repeating the one before
    /// it exactly can come out a few bytes longer.
    ///
    /// The trade: a wake costs a new zlib state plus hashing the window
    /// (about as much as compressing a message of the window's size),
    /// against about 300 KiB held by every idle connection. Default one
    /// second: a connection in a burst or a chatty exchange never sleeps,
    /// one that pauses longer pays at most one wake per second of quiet.
    /// Like keepalive, the deadline does not move with every message: a
    /// connection sleeps between one and two intervals after it went
    /// quiet.
    /// `Duration::ZERO` sleeps whenever the connection waits quietly for
    /// input (the least memory, a rebuild per message); `None` never
    /// sleeps. Kept in steps of 10 ms (rounded down), at most 655.34 s
    /// (longer intervals are that).
    ///
    /// The interval is a deadline of the connection
    /// ([`WebSocketContext::poll_timeout`](crate::WebSocketContext::poll_timeout)).
    /// Connections without context takeover free their state after every
    /// burst already; they arm nothing.
    pub fn sleep_after(mut self, quiet: Option<Duration>) -> Self {
        self.sleep_after = quiet.map_or(u16::MAX, |d| {
            let units = d.as_millis() / SLEEP_UNIT.as_millis();
            u16::try_from(units).map_or(u16::MAX - 1, |u| u.min(u16::MAX - 1))
        });
        self
    }

    /// See [`DeflateConfig::sleep_after`].
    pub fn get_sleep_after(&self) -> Option<Duration> {
        match self.sleep_after {
            u16::MAX => None,
            units => Some(SLEEP_UNIT * units.into()),
        }
    }

    /// See [`DeflateConfig::compression_level`].
    pub fn get_compression_level(&self) -> u32 {
        self.compression_level.into()
    }

    /// See [`DeflateConfig::min_compress_size`].
    pub fn get_min_compress_size(&self) -> usize {
        match self.min_compress_size {
            u32::MAX => usize::MAX,
            bytes => bytes as usize,
        }
    }

    /// See [`DeflateConfig::mem_level`].
    pub fn get_mem_level(&self) -> u8 {
        self.mem_level
    }

    /// See [`DeflateConfig::server_no_context_takeover`].
    pub fn get_server_no_context_takeover(&self) -> bool {
        self.server_no_context_takeover
    }

    /// See [`DeflateConfig::client_no_context_takeover`].
    pub fn get_client_no_context_takeover(&self) -> bool {
        self.client_no_context_takeover
    }

    /// See [`DeflateConfig::server_max_window_bits`].
    pub fn get_server_max_window_bits(&self) -> u8 {
        self.server_max_window_bits
    }

    /// See [`DeflateConfig::client_max_window_bits`].
    pub fn get_client_max_window_bits(&self) -> u8 {
        self.client_max_window_bits
    }
}
