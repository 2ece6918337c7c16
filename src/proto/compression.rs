//! [`Compression`]: one connection's permessage-deflate state, as the
//! protocol layer uses it.
//!
//! Without the `deflate` feature the type is uninhabited, so the context's
//! `Option<Compression>` is always `None` and every compressed path
//! compiles away.

#[cfg(feature = "deflate")]
use std::time::Duration;
use std::time::Instant;

use bytes::{Bytes, BytesMut};

use crate::config::Role;
use crate::deflate::{DeflateConfig, DeflateParams};
use crate::error::Error;
#[cfg(feature = "deflate")]
use crate::error::{CapacityError, Detail};
use crate::prepared::CompressionKey;

/// Compression state of a connection that negotiated permessage-deflate.
#[cfg(feature = "deflate")]
#[derive(Debug)]
pub(crate) struct Compression {
    deflater: crate::deflate::raw::Deflater,
    inflater: crate::deflate::raw::Inflater,
    min_size: usize,
    /// With context takeover: how long the connection stays quiet before it
    /// sleeps (`DeflateConfig::sleep_after`). `None` arms nothing.
    sleep_after: Option<Duration>,
    rest: Rest,
    /// A compressed message went either way since `rest` last changed.
    used: bool,
}

/// How far a connection with context takeover is on its way to sleep.
///
/// Like keepalive (`timers.rs`), the deadline does not move while messages
/// flow (that would reset the driver's timer per message): a message only
/// marks the connection as used, and a used connection whose deadline
/// passes is given another interval. It sleeps between one and two
/// intervals after it went quiet.
///
/// ```text
///  Unarmed --quiet wait--> Armed(deadline) --passed, unused--> Asleep
///     ^   (zero interval: straight to Asleep)     |              |
///     +----- output pending at the deadline ------+   used: as Unarmed
/// ```
#[cfg(feature = "deflate")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rest {
    /// No deadline: nothing was quiet yet, or output was pending.
    Unarmed,
    /// Sleeps at this instant unless used meanwhile.
    Armed(Instant),
    /// Only the windows are held (until the next message, which rebuilds
    /// what it needs and marks the connection used).
    Asleep,
}

/// Uninhabited without the `deflate` feature.
#[cfg(not(feature = "deflate"))]
#[derive(Debug)]
pub(crate) enum Compression {}

/// The compression state for a connection: `Some` when permessage-deflate
/// was negotiated (`params`) and the `deflate` feature is on. Local settings
/// (level, minimum size) come from `config`, or the defaults.
pub(crate) fn negotiated(
    role: Role,
    params: Option<&DeflateParams>,
    config: Option<&DeflateConfig>,
) -> Option<Compression> {
    #[cfg(feature = "deflate")]
    {
        let config = config.copied().unwrap_or_default();
        params.map(|params| Compression::new(role, params, &config))
    }
    #[cfg(not(feature = "deflate"))]
    {
        let _ = (role, params, config);
        None
    }
}

/// The most bytes a message payload of `len` bytes takes once compressed:
/// exact, since the compressor falls back to stored blocks for data that
/// does not compress, so `max_write_buffer_size` holds with compression too.
pub(crate) fn compressed_bound(len: usize) -> usize {
    #[cfg(feature = "deflate")]
    {
        crate::deflate::raw::max_compressed_len(len)
    }
    #[cfg(not(feature = "deflate"))]
    {
        len
    }
}

impl Compression {
    /// Trades compressors with `other`: the sending side of a split
    /// connection takes the connection's, with its history, and gives it
    /// back when the halves rejoin. (An inflater must never lose its
    /// history; a deflater that starts afresh only compresses less.)
    pub(crate) fn swap_deflater(&mut self, other: &mut Compression) {
        #[cfg(feature = "deflate")]
        std::mem::swap(&mut self.deflater, &mut other.deflater);
        #[cfg(not(feature = "deflate"))]
        {
            let _ = other;
            match *self {}
        }
    }
}

#[cfg(feature = "deflate")]
impl Compression {
    /// State for `params`, with local settings from `config`. Allocates
    /// nothing until the first compressed message.
    fn new(role: Role, params: &DeflateParams, config: &DeflateConfig) -> Self {
        use crate::deflate::raw::{Deflater, Inflater};
        let mut deflater = Deflater::new(
            config.get_compression_level(),
            params.compress_window_bits(role),
            config.mem_level,
            params.compress_no_context_takeover(role),
        );
        let mut inflater = Inflater::new(
            params.decompress_window_bits(role),
            params.decompress_no_context_takeover(role),
        );
        let takeover = !params.compress_no_context_takeover(role)
            || !params.decompress_no_context_takeover(role);
        let sleep_after = config.get_sleep_after().filter(|_| takeover);
        if sleep_after.is_some() {
            deflater = deflater.keep_window();
            inflater = inflater.keep_window();
        }
        Self {
            deflater,
            inflater,
            min_size: config.get_min_compress_size(),
            sleep_after,
            rest: Rest::Unarmed,
            used: false,
        }
    }

    /// Whether the connection sleeps when quiet (context takeover and a
    /// `sleep_after`): each wait then needs the time, to arm or to sleep.
    pub(crate) fn sleeps(&self) -> bool {
        self.sleep_after.is_some()
    }

    /// When the connection sleeps if it stays quiet: a deadline for
    /// `poll_timeout`. `None` without context takeover.
    pub(crate) fn sleep_deadline(&self) -> Option<Instant> {
        match self.rest {
            Rest::Armed(at) => Some(at),
            Rest::Unarmed | Rest::Asleep => None,
        }
    }

    /// Time is `now` and the connection is about to wait, `quiet` if its
    /// output is flushed and it waits for input: sleeps (frees the zlib
    /// states, keeping the windows) if the quiet interval is over, or arms
    /// its deadline if the connection just went quiet. Nothing without
    /// context takeover.
    pub(crate) fn sleep_if_due_else_arm(&mut self, now: Instant, quiet: bool) {
        let Some(after) = self.sleep_after else {
            return;
        };
        let quiet = quiet && !self.inflater.is_mid_message();
        let due = match self.rest {
            Rest::Armed(at) if now < at => return,
            Rest::Asleep if !self.used => return,
            Rest::Armed(_) => !self.used,
            Rest::Unarmed | Rest::Asleep => after.is_zero(),
        };
        self.used = false;
        self.rest = if !quiet {
            // A passed deadline must not outlive the quiet (the driver
            // would wake for it again and again).
            Rest::Unarmed
        } else if due {
            self.deflater.sleep();
            self.inflater.sleep();
            Rest::Asleep
        } else {
            now.checked_add(after).map_or(Rest::Unarmed, Rest::Armed)
        };
    }

    /// Whether a payload of `len` bytes is worth compressing.
    pub(crate) fn wants(&self, len: usize) -> bool {
        len >= self.min_size
    }

    /// Compresses one whole message payload.
    pub(crate) fn compress(&mut self, payload: &[u8]) -> Bytes {
        let mut out = BytesMut::with_capacity(compressed_bound(payload.len()).min(64 * 1024));
        self.deflater.compress(payload, &mut out);
        self.used = true;
        out.freeze()
    }

    /// The key under which a message compressed by this connection can be
    /// shared with others: `None` with context takeover, where the bytes
    /// depend on the messages sent before.
    pub(crate) fn shared_key(&self) -> Option<CompressionKey> {
        self.deflater
            .shared_settings()
            .map(|(level, window_bits)| CompressionKey { level, window_bits })
    }

    /// Compresses `payload` as every connection with `key` (from
    /// [`shared_key`](Self::shared_key)) would, with a compressor of its
    /// own: the payload of a frame those connections share. This
    /// connection's compressor is left alone.
    pub(crate) fn compress_shared(&self, key: CompressionKey, payload: &[u8]) -> Bytes {
        let mut deflater = crate::deflate::raw::Deflater::new(key.level, key.window_bits, 8, true);
        let mut out = BytesMut::with_capacity(compressed_bound(payload.len()).min(64 * 1024));
        deflater.compress(payload, &mut out);
        out.freeze()
    }

    /// Frees compression state no future message can need (see
    /// `Deflater::release` and `Inflater::release`): called once a burst of
    /// writes is flushed and when the connection waits for the peer.
    pub(crate) fn release_idle(&mut self) {
        self.deflater.release();
        self.inflater.release();
    }

    /// Inflates one frame of a compressed message into `out` (the message
    /// so far), under `max` bytes of output.
    pub(crate) fn inflate(
        &mut self,
        payload: &[u8],
        fin: bool,
        out: &mut BytesMut,
        max: usize,
        text: bool,
    ) -> Result<(), Error> {
        use crate::deflate::raw::InflateError;
        self.used = true;
        self.inflater
            .inflate(payload, fin, out, max)
            .map_err(|e| match e {
                InflateError::TooLarge { size, max } => CapacityError::MessageTooLong {
                    size: usize::try_from(size).unwrap_or(usize::MAX),
                    max_size: max,
                }
                .into(),
                InflateError::Invalid => Detail::InvalidCompressedData { text }.into(),
            })
    }
}

#[cfg(not(feature = "deflate"))]
impl Compression {
    pub(crate) fn release_idle(&mut self) {
        match *self {}
    }

    pub(crate) fn sleep_deadline(&self) -> Option<Instant> {
        match *self {}
    }

    pub(crate) fn sleeps(&self) -> bool {
        match *self {}
    }

    pub(crate) fn sleep_if_due_else_arm(&mut self, _: Instant, _: bool) {
        match *self {}
    }

    pub(crate) fn shared_key(&self) -> Option<CompressionKey> {
        match *self {}
    }

    pub(crate) fn compress_shared(&self, _: CompressionKey, _: &[u8]) -> Bytes {
        match *self {}
    }

    pub(crate) fn wants(&self, _: usize) -> bool {
        match *self {}
    }

    pub(crate) fn compress(&mut self, _: &[u8]) -> Bytes {
        match *self {}
    }

    pub(crate) fn inflate(
        &mut self,
        _: &[u8],
        _: bool,
        _: &mut BytesMut,
        _: usize,
        _: bool,
    ) -> Result<(), Error> {
        match *self {}
    }
}
