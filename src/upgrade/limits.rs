//! [`HandshakeLimits`]: how large an opening handshake's HTTP head may be.

/// 64 KiB: the largest head accepted by default (tungstenite's limit on
/// what a handshake may read).
pub const DEFAULT_MAX_HEAD_SIZE: usize = 64 * 1024;

/// 64 KiB: the longest line of a head accepted by default, the same as
/// the head, so a single long field (a large `Cookie`) is refused only
/// when the head is; tungstenite has no limit of its own on lines.
pub const DEFAULT_MAX_LINE_SIZE: usize = DEFAULT_MAX_HEAD_SIZE;

/// 124: the most header fields a head may have by default (tungstenite's
/// `MAX_HEADERS`).
pub const DEFAULT_MAX_HEADERS: usize = 124;

/// The limits on the HTTP head of an opening handshake: the request a
/// server reads and the response a client reads.
///
/// Each is checked on every byte as it arrives, before the byte is
/// buffered: a head that crosses one is refused at that byte, having cost
/// at most what arrived of it, and a header field past
/// [`max_headers`](Self::max_headers) is refused at its first byte. A
/// server answers a refused request with 431 Request Header Fields Too
/// Large ([`HandshakeFailure::HeadTooLarge`](crate::HandshakeFailure::HeadTooLarge));
/// a client fails with the same error.
///
/// The defaults are at least as permissive as tungstenite's: a 64 KiB
/// head, no line limit of its own (64 KiB), 124 header fields. Set them on
/// [`ServerOptions::handshake_limits`](crate::ServerOptions::handshake_limits)
/// and [`ClientOptions::handshake_limits`](crate::ClientOptions::handshake_limits),
/// or on the sans-IO [`ServerUpgrade`](super::ServerUpgrade) and
/// [`ClientUpgrade`](super::ClientUpgrade). An HTTP proxy's answer to
/// CONNECT is read with the defaults.
///
/// # Examples
///
/// ```
/// use lockgate::ServerOptions;
/// use lockgate::handshake::HandshakeLimits;
///
/// let limits = HandshakeLimits::default().max_headers(200).max_line_size(16 * 1024);
/// let options = ServerOptions::new().handshake_limits(limits);
/// assert_eq!(options.get_handshake_limits().get_max_headers(), 200);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct HandshakeLimits {
    max_head_size: usize,
    max_line_size: usize,
    max_headers: usize,
}

impl Default for HandshakeLimits {
    fn default() -> Self {
        Self {
            max_head_size: DEFAULT_MAX_HEAD_SIZE,
            max_line_size: DEFAULT_MAX_LINE_SIZE,
            max_headers: DEFAULT_MAX_HEADERS,
        }
    }
}

impl HandshakeLimits {
    /// The largest head, in bytes: the start line, the header fields and
    /// the empty line that ends them (not what follows the head). Default
    /// [`DEFAULT_MAX_HEAD_SIZE`], 64 KiB. A handshake in progress holds
    /// at most this much of its head, and its buffer grows with what
    /// arrives, so a larger limit costs only peers that send more.
    pub fn max_head_size(mut self, bytes: usize) -> Self {
        self.max_head_size = bytes;
        self
    }

    /// The longest line of a head, in bytes, not counting its line
    /// terminator. Default [`DEFAULT_MAX_LINE_SIZE`], 64 KiB: no limit
    /// beyond the head's. A lower one refuses a long request target or
    /// field early.
    pub fn max_line_size(mut self, bytes: usize) -> Self {
        self.max_line_size = bytes;
        self
    }

    /// The most header fields a head may have (the start line not
    /// counted). Default [`DEFAULT_MAX_HEADERS`], 124. Parsing the
    /// complete head takes room for the fields it has, not for this many.
    pub fn max_headers(mut self, fields: usize) -> Self {
        self.max_headers = fields;
        self
    }

    /// See [`HandshakeLimits::max_head_size`].
    pub fn get_max_head_size(&self) -> usize {
        self.max_head_size
    }

    /// See [`HandshakeLimits::max_line_size`].
    pub fn get_max_line_size(&self) -> usize {
        self.max_line_size
    }

    /// See [`HandshakeLimits::max_headers`].
    pub fn get_max_headers(&self) -> usize {
        self.max_headers
    }
}
