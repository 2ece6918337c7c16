//! Metrics (feature `metrics`) and tracing (feature `tracing`): what every
//! connection reports, through the [`metrics`](https://docs.rs/metrics)
//! facade and [`tracing`](https://docs.rs/tracing), and when.
//!
//! Without the features none of this is compiled: a connection has no
//! field and no branch for it.
//!
//! # Metrics
//!
//! | name | type | labels | counts |
//! |---|---|---|---|
//! | `lockgate_connections_opened_total` | counter | | connections opened |
//! | `lockgate_connections_open` | gauge | | connections open now |
//! | `lockgate_closes_total` | counter | `code`, `by` | connections closed, by close code and by the side that closed first |
//! | `lockgate_handshake_failures_total` | counter | `reason` | opening handshakes that failed |
//! | `lockgate_messages_received_total` | counter | | data messages received complete (the one a rate limit's `RatePolicy::Close` refuses included) |
//! | `lockgate_messages_sent_total` | counter | | data messages sent |
//! | `lockgate_bytes_received_total` | counter | | their payload bytes (inflated) |
//! | `lockgate_bytes_sent_total` | counter | | their payload bytes (before deflate) |
//! | `lockgate_timeouts_total` | counter | `kind` | deadlines passed: `handshake`, `keepalive`, `close` |
//! | `lockgate_write_buffer_full_total` | counter | | writes refused with `WriteBufferFull` |
//! | `lockgate_rate_limit_actions_total` | counter | `action` | `throttled`, `closed` |
//!
//! The module `names` (feature `metrics`) has them as constants;
//! tokio-lockgate's hub adds its own (`tokio_lockgate::hub::metrics`).
//!
//! - A connection is *opened* when its [`WebSocketContext`] is made (by a
//!   handshake, or for a stream already upgraded), and stops being *open*
//!   when it ends (the closing handshake completed, it failed, the stream
//!   ended) or is dropped.
//! - `lockgate_closes_total` counts each connection once, when it leaves
//!   the open state: `code` is the code of the first close frame, sent
//!   (`by="local"`) or received (`by="peer"`), `1005` for a close frame
//!   without a code; a connection that fails (a protocol error, a size
//!   limit, the keepalive timeout) counts with the code of the close frame
//!   it sends, `by="local"`. One that ends without a close frame counts as
//!   `1006`: `by="peer"` when the stream ended, `by="local"` when it was
//!   dropped while open (after an I/O error, say). `code` is any code a
//!   close frame may carry (at most about 2,000 values, 3000-4999 being
//!   the applications').
//! - `reason` of a handshake failure is one of `bad_request`,
//!   `bad_response`, `malformed`, `too_large`, `version`, `origin`,
//!   `callback`, `refused` (an HTTP refusal: a server's callback, or the
//!   server a client asked), `incomplete` (the peer left mid-handshake),
//!   `timeout`, `io`, `tls`, `url`, `proxy`, `other`.
//!
//! ## When counts reach the recorder
//!
//! Messages and bytes are counted in plain integers in the connection (32
//! bytes of it) and handed to the recorder per burst, not per message:
//! when a read returns the last complete message of what was received,
//! when the received bytes hold no further complete frame (the driver
//! reads next), when the driver is about to wait
//! (`WebSocketContext::handle_timeout`), when a flush completes, and when the
//! connection ends or is dropped. Once traffic stops the counts are
//! exact: nothing is left behind after a read returns with no more
//! received bytes buffered, after a flush, or at the close. (A message is
//! counted as sent when `write` accepts it; it reaches the recorder with
//! the flush that sends it.) Everything else (opens, closes, timeouts,
//! refusals) is rare and counted when it happens.
//!
//! The handles are registered once per recorder, the first time lockgate
//! reports to it (with descriptions and units), so a count is one atomic
//! add. Install a global recorder (`metrics::set_global_recorder`, or an
//! exporter's `install`) before connections open: a thread-local recorder
//! is supported only while there are few of them.
//!
//! ## From the first scrape
//!
//! Registering is what makes a series exist, at zero: every series of the
//! table without labels, and those whose labels are known in advance
//! (`lockgate_timeouts_total` by `kind`, `lockgate_handshake_failures_total`
//! by `reason`, `lockgate_rate_limit_actions_total` by `action`; not
//! `lockgate_closes_total`, whose codes appear as connections close).
//! That happens by itself when lockgate first reports to a recorder (the
//! first connection opens, or the first handshake fails); call
//! [`register_metrics`] right after installing a recorder so the series
//! are there before that, from the first scrape: an alert on `rate()` or
//! `absent()` then sees zeros, not nothing.
//!
//! # Tracing
//!
//! Each connection has a `websocket` span (target `lockgate`, level DEBUG)
//! with the fields `role`, `peer` (the socket's peer address, recorded by
//! the drivers when the stream is a TCP socket, also under TLS: the
//! blocking driver for every stream it knows, tokio-lockgate's
//! `connect_async*`; a custom driver calls
//! `WebSocketContext::record_peer_addr`) and `subprotocol`. It is made
//! a child of the current span when the connection opens, and is never
//! entered: the events name it as their parent. Events, at DEBUG, only
//! at the rare moments: `closed` (fields `code`, `by`), `timed out`
//! (`kind`), `protocol error` (`error`, `code`), `rate limited`
//! (`action`), and `handshake failed` (`role`, `reason`, `error`; no
//! connection span yet). Each state change is a `state` event at TRACE.
//! None is emitted per message or per poll.
//!
//! [`WebSocketContext`]: crate::WebSocketContext

#[cfg(feature = "metrics")]
pub(crate) mod counters;
#[cfg(feature = "metrics")]
mod per_recorder;
#[cfg(feature = "tracing")]
pub(crate) mod spans;

#[cfg(feature = "metrics")]
pub(crate) use counters::Counters;
#[cfg(feature = "metrics")]
pub use counters::names;
#[cfg(feature = "metrics")]
pub use per_recorder::PerRecorder;
#[cfg(feature = "tracing")]
pub(crate) use spans::ConnectionSpan;

use crate::config::Role;
use crate::error::{CapacityError, Error, HandshakeFailure, ProtocolError};
pub(crate) use crate::proto::RateLimitAction;

/// Registers and describes (help text, unit) lockgate's metrics with the
/// current recorder, each at zero: every series of the
/// [table](crate::observe#metrics) without labels, and those whose labels are known
/// in advance (see [From the first scrape](crate::observe#from-the-first-scrape)).
///
/// Call it right after installing a recorder, so that a scrape before the
/// first connection already lists them. Calling it again, or opening
/// connections, registers nothing twice: the handles are kept per
/// recorder. Without it they are registered when lockgate first reports
/// to the recorder.
///
/// # Examples
///
/// ```
/// use lockgate::observe::names;
/// use metrics_util::debugging::{DebugValue, DebuggingRecorder};
///
/// // A recorder (an exporter's `install` makes a global one), then:
/// let recorder = DebuggingRecorder::new();
/// let snapshotter = recorder.snapshotter();
/// metrics::with_local_recorder(&recorder, lockgate::observe::register_metrics);
///
/// // No connection yet, and the counters are there, at zero.
/// let snapshot = snapshotter.snapshot().into_vec();
/// let received = snapshot
///     .iter()
///     .find(|(key, ..)| key.key().name() == names::MESSAGES_RECEIVED)
///     .expect("registered");
/// assert_eq!(received.3, DebugValue::Counter(0));
/// ```
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub fn register_metrics() {
    counters::register();
}

/// Which side closed a connection first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum By {
    Local,
    Peer,
}

impl By {
    pub(crate) const fn label(self) -> &'static str {
        match self {
            By::Local => "local",
            By::Peer => "peer",
        }
    }
}

/// Why an opening handshake failed, as a short label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HandshakeReason {
    BadRequest,
    BadResponse,
    Malformed,
    TooLarge,
    Version,
    Origin,
    Callback,
    Refused,
    Incomplete,
    Timeout,
    Io,
    Tls,
    Url,
    Proxy,
    Other,
}

impl HandshakeReason {
    /// Every reason, in discriminant order.
    #[cfg(feature = "metrics")]
    pub(crate) const ALL: [HandshakeReason; 15] = [
        HandshakeReason::BadRequest,
        HandshakeReason::BadResponse,
        HandshakeReason::Malformed,
        HandshakeReason::TooLarge,
        HandshakeReason::Version,
        HandshakeReason::Origin,
        HandshakeReason::Callback,
        HandshakeReason::Refused,
        HandshakeReason::Incomplete,
        HandshakeReason::Timeout,
        HandshakeReason::Io,
        HandshakeReason::Tls,
        HandshakeReason::Url,
        HandshakeReason::Proxy,
        HandshakeReason::Other,
    ];

    pub(crate) const fn label(self) -> &'static str {
        match self {
            HandshakeReason::BadRequest => "bad_request",
            HandshakeReason::BadResponse => "bad_response",
            HandshakeReason::Malformed => "malformed",
            HandshakeReason::TooLarge => "too_large",
            HandshakeReason::Version => "version",
            HandshakeReason::Origin => "origin",
            HandshakeReason::Callback => "callback",
            HandshakeReason::Refused => "refused",
            HandshakeReason::Incomplete => "incomplete",
            HandshakeReason::Timeout => "timeout",
            HandshakeReason::Io => "io",
            HandshakeReason::Tls => "tls",
            HandshakeReason::Url => "url",
            HandshakeReason::Proxy => "proxy",
            HandshakeReason::Other => "other",
        }
    }

    /// The reason of `error`, which failed the handshake of `role`.
    pub(crate) fn of(role: Role, error: &Error) -> Self {
        // A head that is not a valid upgrade: the peer's request or
        // response, depending on which side saw it.
        let bad_head = match role {
            Role::Server => HandshakeReason::BadRequest,
            Role::Client => HandshakeReason::BadResponse,
        };
        if let Some(failure) = error.handshake_failure() {
            return Self::of_failure(failure);
        }
        if error.timeout().is_some() {
            return HandshakeReason::Timeout;
        }
        match error {
            Error::Http(_) => HandshakeReason::Refused,
            Error::Protocol(error) => match error {
                ProtocolError::MissingSecWebSocketVersionHeader => HandshakeReason::Version,
                ProtocolError::SecWebSocketAcceptKeyMismatch
                | ProtocolError::SecWebSocketSubProtocolError(_) => HandshakeReason::BadResponse,
                ProtocolError::CustomResponseSuccessful => HandshakeReason::Callback,
                ProtocolError::HandshakeIncomplete => HandshakeReason::Incomplete,
                ProtocolError::HttparseError(_) => HandshakeReason::Malformed,
                ProtocolError::WrongHttpMethod
                | ProtocolError::WrongHttpVersion
                | ProtocolError::MissingConnectionUpgradeHeader
                | ProtocolError::MissingUpgradeWebSocketHeader
                | ProtocolError::MissingSecWebSocketKey
                | ProtocolError::InvalidSecWebSocketKey
                | ProtocolError::InvalidHeader(_)
                | ProtocolError::JunkAfterRequest => bad_head,
                _ => HandshakeReason::Other,
            },
            Error::Capacity(CapacityError::TooManyHeaders) => HandshakeReason::TooLarge,
            Error::Utf8(_) => bad_head,
            Error::Io(_) => HandshakeReason::Io,
            Error::Tls(_) => HandshakeReason::Tls,
            Error::Url(_) => HandshakeReason::Url,
            _ => HandshakeReason::Other,
        }
    }

    /// The reason of a handshake failure lockgate describes.
    pub(crate) fn of_failure(failure: &HandshakeFailure) -> Self {
        match failure {
            HandshakeFailure::Parse(_) | HandshakeFailure::NotHttp(_) => HandshakeReason::Malformed,
            HandshakeFailure::HeadTooLarge => HandshakeReason::TooLarge,
            HandshakeFailure::BadRequest(_) => HandshakeReason::BadRequest,
            HandshakeFailure::UnsupportedVersion => HandshakeReason::Version,
            HandshakeFailure::OriginRefused { .. } => HandshakeReason::Origin,
            HandshakeFailure::InvalidCallbackResponse(_) => HandshakeReason::Callback,
            HandshakeFailure::BadResponse(_) => HandshakeReason::BadResponse,
            HandshakeFailure::BadProxyAnswer(_)
            | HandshakeFailure::ProxyRefused(_)
            | HandshakeFailure::Socks5Refused(_) => HandshakeReason::Proxy,
        }
    }
}

// ----- events with no connection: counted and traced where they happen -----

/// The opening handshake of `role` failed with `error`.
#[cfg(any(feature = "metrics", feature = "tracing"))]
pub(crate) fn handshake_failed(role: Role, error: &Error) {
    let reason = HandshakeReason::of(role, error);
    #[cfg(feature = "metrics")]
    {
        counters::handshake_failed(reason);
        if let Some(kind) = error.timeout() {
            counters::timeout(kind);
        }
    }
    #[cfg(feature = "tracing")]
    spans::handshake_failed(role, reason, error);
}

/// Counts (`lockgate_handshake_failures_total`) and traces the refusal
/// of an upgrade request that a server checked without lockgate's
/// handshake drivers, for example with
/// [`upgrade_response`](crate::handshake::upgrade_response) in an HTTP
/// server's handler. Handshakes that lockgate runs (the blocking and
/// tokio accept and connect functions, [`HandshakeDriver`]) are counted
/// already.
///
/// [`HandshakeDriver`]: crate::handshake::HandshakeDriver
pub fn record_upgrade_refusal(failure: &HandshakeFailure) {
    let reason = HandshakeReason::of_failure(failure);
    #[cfg(feature = "metrics")]
    counters::handshake_failed(reason);
    #[cfg(feature = "tracing")]
    tracing::debug!(
        target: "lockgate",
        role = "server",
        reason = reason.label(),
        error = %failure,
        "handshake failed"
    );
}
