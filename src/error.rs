//! Errors, shaped as tungstenite's.
//!
//! [`Error`], [`ProtocolError`], [`CapacityError`], [`UrlError`] and
//! [`SubProtocolError`] have exactly tungstenite 0.30's variants, with its
//! messages: code that matches them exhaustively ports by renaming the
//! crate, and a condition both libraries report gets the same variant.
//!
//! What lockgate says beyond them travels inside [`Error::Io`], as a
//! [`Detail`] in the [`io::Error`] (with an [`io::ErrorKind`] that fits:
//! `TimedOut` for a deadline, `InvalidData` for a peer's mistake,
//! `InvalidInput` for a caller's): deadlines, the opening handshake's
//! reasons (the status a server answers with, a proxy's refusal), the
//! permessage-deflate and rate-limit failures. [`Error::detail`],
//! [`Error::timeout`] and [`Error::handshake_failure`] reach it without a
//! downcast. Why inside `Io` and not beside it: a variant of our own would
//! break every exhaustive `match` written for tungstenite, and a program
//! that does not know about deadlines or rate limits treats them as
//! tungstenite programs treat any other failure of the connection, as an
//! I/O error that ends it.
//!
//! The detail behind dialling (the TLS libraries' errors, a proxy's or a
//! SOCKS5 proxy's refusal) is defined in the dial module and carried here:
//! [`TlsError`] is re-exported at its old path.

use std::{fmt, io, str, string};

use crate::frame::{CloseCode, Data, OpCode};
use crate::message::Message;

/// Everything that can go wrong on a WebSocket.
///
/// The variants a caller acts on most: [`Error::ConnectionClosed`] (the
/// closing handshake finished; drop the connection),
/// [`Error::WriteBufferFull`] (flush, then try the same message again) and
/// [`Error::Io`] with [`io::ErrorKind::WouldBlock`] on non-blocking streams
/// (call again once the socket is ready). What lockgate reports beyond
/// tungstenite's variants (a deadline, the reason an opening handshake
/// failed) is an [`Error::Io`] carrying a [`Detail`]: see
/// [`Error::detail`].
///
/// # Examples
///
/// A server that refuses the upgrade, and a client telling that refusal
/// from other failures:
///
/// ```
/// use std::net::TcpListener;
/// use lockgate::handshake::server::{ErrorResponse, Request, Response};
/// use lockgate::{Error, http::StatusCode};
///
/// let listener = TcpListener::bind("127.0.0.1:0")?;
/// let url = format!("ws://{}/admin", listener.local_addr()?);
/// std::thread::spawn(move || {
///     let refuse = |_: &Request, _: Response| -> Result<Response, ErrorResponse> {
///         let mut refusal = ErrorResponse::new(Some("members only".into()));
///         *refusal.status_mut() = StatusCode::FORBIDDEN;
///         Err(refusal)
///     };
///     let _ = lockgate::accept_hdr(listener.accept().unwrap().0, refuse);
/// });
///
/// match lockgate::connect(url.as_str()) {
///     Ok(_) => unreachable!("the server refuses"),
///     // The server answered the upgrade with something other than 101.
///     Err(Error::Http(response)) => {
///         assert_eq!(response.status(), StatusCode::FORBIDDEN);
///         assert_eq!(response.body().as_deref(), Some(&b"members only"[..]));
///     }
///     // The peer broke RFC 6455; a close frame with this code went out.
///     Err(Error::Protocol(e)) => eprintln!("protocol error: {e} ({:?})", e.close_code()),
///     // A deadline passed: the handshake, keepalive or the closing handshake.
///     Err(e) if e.timeout().is_some() => eprintln!("timed out: {e}"),
///     Err(e) => eprintln!("could not connect: {e}"),
/// }
/// # Ok::<(), lockgate::Error>(())
/// ```
#[derive(thiserror::Error)]
pub enum Error {
    /// The closing handshake completed. Returned once by `read`; the
    /// connection can be dropped.
    #[error("Connection closed normally")]
    ConnectionClosed,
    /// The connection was already closed (or failed) and this call cannot do
    /// anything.
    #[error("Trying to work with closed connection")]
    AlreadyClosed,
    /// The underlying stream failed, or would block; or a failure lockgate
    /// describes with a [`Detail`] ([`Error::detail`]): a deadline, the
    /// opening handshake, a rate limit.
    #[error("IO error: {0}")]
    Io(#[from] io::Error),
    /// The TLS layer of a `wss://` connection failed: the certificate was
    /// refused, the server name is not valid, or the TLS library failed.
    #[error("TLS error: {0}")]
    Tls(#[from] TlsError),
    /// A size limit from [`Config`](crate::Config) was exceeded.
    #[error("Space limit exceeded: {0}")]
    Capacity(#[from] CapacityError),
    /// The peer broke RFC 6455. The connection is failing: a close frame with
    /// [`ProtocolError::close_code`] has been queued.
    #[error("WebSocket protocol error: {0}")]
    Protocol(#[from] ProtocolError),
    /// The message did not fit in the out buffer under
    /// `max_write_buffer_size`. It is handed back exactly as given (for
    /// [`write_prepared`](crate::WebSocketContext::write_prepared), the
    /// message it was prepared from); nothing of it was written. Flush,
    /// then write it again.
    #[error("Write buffer is full")]
    WriteBufferFull(Box<Message>),
    /// Bytes that must be UTF-8 are not: a text message or a close reason
    /// from the peer (which fails the connection with 1007), a payload
    /// read with [`Message::to_text`] or [`Message::into_text`], or a
    /// header value (which leave the connection as it was).
    #[error("UTF-8 encoding error: {0}")]
    Utf8(String),
    /// Kept so that code matching tungstenite's errors compiles; lockgate
    /// never returns it: an oversized handshake head is
    /// [`HandshakeFailure::HeadTooLarge`] or
    /// [`CapacityError::TooManyHeaders`].
    #[error("Attack attempt detected")]
    AttackAttempt,
    /// The URL (or request) cannot be used for a WebSocket connection.
    #[error("URL error: {0}")]
    Url(#[from] UrlError),
    /// The opening handshake ended with this HTTP response instead of
    /// `101 Switching Protocols`: the server's refusal as a client
    /// received it, with the start of its body that came with the head
    /// (`None` if none did), or, on a server, the refusal its
    /// [`Callback`](crate::handshake::Callback) returned (as sent).
    #[error("{}", crate::upgrade::summary::refused_upgrade(.0))]
    Http(Box<http::Response<Option<Vec<u8>>>>),
    /// An HTTP type could not be built: an invalid header name or value,
    /// URI or status code (for example in a request built by hand).
    #[error("HTTP format error: {0}")]
    HttpFormat(#[from] http::Error),
}

/// As derived, except that an HTTP response's body shows as a byte string
/// (`b"<html>..."`), not as a list of numbers.
impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::ConnectionClosed => f.write_str("ConnectionClosed"),
            Error::AlreadyClosed => f.write_str("AlreadyClosed"),
            Error::Io(e) => f.debug_tuple("Io").field(e).finish(),
            Error::Tls(e) => f.debug_tuple("Tls").field(e).finish(),
            Error::Capacity(e) => f.debug_tuple("Capacity").field(e).finish(),
            Error::Protocol(e) => f.debug_tuple("Protocol").field(e).finish(),
            Error::WriteBufferFull(m) => f.debug_tuple("WriteBufferFull").field(m).finish(),
            Error::Utf8(e) => f.debug_tuple("Utf8").field(e).finish(),
            Error::AttackAttempt => f.write_str("AttackAttempt"),
            Error::Url(e) => f.debug_tuple("Url").field(e).finish(),
            Error::Http(response) => {
                let body = response
                    .body()
                    .as_deref()
                    .map(bytes::Bytes::copy_from_slice);
                f.debug_tuple("Http")
                    .field(&format_args!(
                        "Response {{ status: {:?}, version: {:?}, headers: {:?}, body: {:?} }}",
                        response.status(),
                        response.version(),
                        response.headers(),
                        body
                    ))
                    .finish()
            }
            Error::HttpFormat(e) => f.debug_tuple("HttpFormat").field(e).finish(),
        }
    }
}

impl From<str::Utf8Error> for Error {
    fn from(error: str::Utf8Error) -> Self {
        Error::Utf8(error.to_string())
    }
}

impl From<string::FromUtf8Error> for Error {
    fn from(error: string::FromUtf8Error) -> Self {
        Error::Utf8(error.to_string())
    }
}

impl From<http::header::InvalidHeaderValue> for Error {
    fn from(error: http::header::InvalidHeaderValue) -> Self {
        Error::HttpFormat(error.into())
    }
}

impl From<http::header::InvalidHeaderName> for Error {
    fn from(error: http::header::InvalidHeaderName) -> Self {
        Error::HttpFormat(error.into())
    }
}

impl From<http::header::ToStrError> for Error {
    fn from(error: http::header::ToStrError) -> Self {
        Error::Utf8(error.to_string())
    }
}

impl From<http::uri::InvalidUri> for Error {
    fn from(error: http::uri::InvalidUri) -> Self {
        Error::HttpFormat(error.into())
    }
}

impl From<http::status::InvalidStatusCode> for Error {
    fn from(error: http::status::InvalidStatusCode) -> Self {
        Error::HttpFormat(error.into())
    }
}

impl From<httparse::Error> for Error {
    fn from(error: httparse::Error) -> Self {
        match error {
            httparse::Error::TooManyHeaders => Error::Capacity(CapacityError::TooManyHeaders),
            error => Error::Protocol(ProtocolError::HttparseError(error)),
        }
    }
}

/// Which deadline passed (see [`Error::timeout`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TimeoutKind {
    /// The opening handshake did not complete within
    /// [`Config::handshake_timeout`](crate::Config::handshake_timeout).
    Handshake,
    /// Nothing arrived within
    /// [`Config::ping_timeout`](crate::Config::ping_timeout) of a keepalive
    /// ping: the peer or the path to it is gone.
    Keepalive,
    /// The peer did not finish the closing handshake within
    /// [`Config::close_timeout`](crate::Config::close_timeout) of our close
    /// frame.
    Close,
}

impl std::fmt::Display for TimeoutKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TimeoutKind::Handshake => "the opening handshake did not complete in time",
            TimeoutKind::Keepalive => "the peer did not answer a keepalive ping in time",
            TimeoutKind::Close => "the peer did not finish the closing handshake in time",
        })
    }
}

/// What lockgate reports beyond tungstenite's variants, carried inside
/// [`Error::Io`] (see the [module docs](self) for why). Reach it with
/// [`Error::detail`].
///
/// ```
/// use lockgate::error::{Detail, TimeoutKind};
/// use lockgate::Error;
///
/// let error = Error::from(TimeoutKind::Keepalive);
/// assert!(matches!(&error, Error::Io(e) if e.kind() == std::io::ErrorKind::TimedOut));
/// assert_eq!(error.timeout(), Some(TimeoutKind::Keepalive));
/// assert!(matches!(error.detail(), Some(Detail::Timeout(TimeoutKind::Keepalive))));
/// assert_eq!(error.close_code(), Some(lockgate::CloseCode::Error));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Detail {
    /// A deadline from [`Config`](crate::Config) passed: the connection is
    /// over (for [`TimeoutKind::Keepalive`], a close frame with 1011 was
    /// queued and sent if the stream took it). The `io::ErrorKind` is
    /// `TimedOut`.
    #[error("timed out: {0}")]
    Timeout(TimeoutKind),
    /// The opening handshake failed for a reason lockgate describes on its
    /// own: a malformed request or response, a head too large, a refused
    /// `Origin`, a proxy's refusal.
    #[error("{0}")]
    Handshake(HandshakeFailure),
    /// The peer sent a 64-bit payload length with its most significant bit
    /// set. Closes with 1002.
    #[error("WebSocket protocol error: payload length has the most significant bit set")]
    InvalidPayloadLength,
    /// A compressed message (RSV1 with permessage-deflate) whose payload is
    /// not valid DEFLATE data. Closes with 1007 for text, 1002 for binary.
    #[error(
        "WebSocket protocol error: invalid compressed data in a {} message",
        if *.text { "text" } else { "binary" }
    )]
    InvalidCompressedData {
        /// Whether the message was text.
        text: bool,
    },
    /// The peer's close frame has a code that may not be sent on the wire.
    /// Closes with 1002.
    #[error("WebSocket protocol error: invalid close code {0}")]
    InvalidCloseCode(u16),
    /// The caller tried to send a close frame with a code that may not
    /// appear on the wire (RFC 6455 section 7.4.1: 1005, 1006, 1015, codes
    /// below 1000, reserved 1004 and 1016-2999, 5000 and above). Nothing
    /// was queued and the connection is still open; see
    /// [`CloseCode::is_allowed_on_wire`]. The `io::ErrorKind` is
    /// `InvalidInput`.
    #[error("close code {0} may not be sent on the wire")]
    SendForbiddenCloseCode(u16),
    /// A message in more frames than `max_fragments` allows. Closes with
    /// 1008 (policy): the size is fine, the framing is not.
    #[error("Space limit exceeded: message in more than {max} frames")]
    TooManyFragments {
        /// The configured limit.
        max: usize,
    },
    /// The peer sent more messages than the connection's
    /// [`RateLimit`](crate::RateLimit) allows, under
    /// [`RatePolicy::Close`](crate::RatePolicy::Close). Closes with 1008
    /// (policy). The message that overran the limit was dropped.
    #[error("message rate exceeded: more than {per_second} per second (burst {burst})")]
    MessageRateExceeded {
        /// The configured rate.
        per_second: u64,
        /// The configured burst.
        burst: u64,
    },
    /// The peer sent more payload bytes than the connection's
    /// [`RateLimit`](crate::RateLimit) allows, under
    /// [`RatePolicy::Close`](crate::RatePolicy::Close). Closes with 1008
    /// (policy). The message that overran the limit was dropped.
    #[error("byte rate exceeded: more than {per_second} bytes per second (burst {burst})")]
    ByteRateExceeded {
        /// The configured rate.
        per_second: u64,
        /// The configured burst.
        burst: u64,
    },
    /// The URL (or request, or proxy URL) cannot be used for reasons
    /// tungstenite's [`UrlError`] has no variant for (it has a fragment or
    /// credentials, a proxy URL is wrong, a redirect's `Location` is not
    /// text...): the message says what. The `io::ErrorKind` is
    /// `InvalidInput`.
    #[error("URL error: {0}")]
    InvalidUrl(String),
}

impl Detail {
    /// The close code the connection was (or will be) failed with, for the
    /// details that fail an open connection.
    pub fn close_code(&self) -> Option<CloseCode> {
        match self {
            Detail::Timeout(TimeoutKind::Keepalive) => Some(CloseCode::Error),
            Detail::InvalidCompressedData { text: true } => Some(CloseCode::Invalid),
            Detail::InvalidPayloadLength
            | Detail::InvalidCompressedData { text: false }
            | Detail::InvalidCloseCode(_) => Some(CloseCode::Protocol),
            Detail::TooManyFragments { .. }
            | Detail::MessageRateExceeded { .. }
            | Detail::ByteRateExceeded { .. } => Some(CloseCode::Policy),
            _ => None,
        }
    }

    /// The [`io::ErrorKind`] of the [`Error::Io`] that carries it.
    pub fn io_kind(&self) -> io::ErrorKind {
        match self {
            Detail::Timeout(_) => io::ErrorKind::TimedOut,
            Detail::Handshake(HandshakeFailure::OriginRefused { .. }) => {
                io::ErrorKind::PermissionDenied
            }
            Detail::Handshake(
                HandshakeFailure::ProxyRefused(_) | HandshakeFailure::Socks5Refused(_),
            ) => io::ErrorKind::ConnectionRefused,
            Detail::SendForbiddenCloseCode(_) | Detail::InvalidUrl(_) => {
                io::ErrorKind::InvalidInput
            }
            Detail::MessageRateExceeded { .. } | Detail::ByteRateExceeded { .. } => {
                io::ErrorKind::Other
            }
            _ => io::ErrorKind::InvalidData,
        }
    }
}

/// Whether an I/O error is one of ours, carrying a [`Detail`] (and not the
/// stream's, which a caller may wrap with where it happened).
pub(crate) fn carries_detail(error: &io::Error) -> bool {
    error.get_ref().is_some_and(|inner| inner.is::<Detail>())
}

impl From<Detail> for Error {
    fn from(detail: Detail) -> Self {
        Error::Io(io::Error::new(detail.io_kind(), detail))
    }
}

impl From<TimeoutKind> for Error {
    fn from(kind: TimeoutKind) -> Self {
        Detail::Timeout(kind).into()
    }
}

/// tungstenite's variant where it has one for the failure (a method other
/// than GET is `WrongHttpMethod` there too), else the failure as a
/// [`Detail`].
impl From<HandshakeFailure> for Error {
    fn from(failure: HandshakeFailure) -> Self {
        match failure.tungstenite_variant() {
            Some(error) => error,
            None => Detail::Handshake(failure).into(),
        }
    }
}

impl Error {
    /// What lockgate says beyond tungstenite's variants, if this is such
    /// an error: an [`Error::Io`] carrying a [`Detail`].
    pub fn detail(&self) -> Option<&Detail> {
        match self {
            Error::Io(error) => error.get_ref()?.downcast_ref::<Detail>(),
            _ => None,
        }
    }

    /// The [`Detail`] this error carries, by value (a proxy's refusal, say,
    /// to keep), or the error itself if it carries none.
    pub fn into_detail(self) -> Result<Detail, Error> {
        match self {
            Error::Io(error) if carries_detail(&error) => {
                let inner = error.into_inner().expect("checked: a custom error");
                Ok(*inner.downcast::<Detail>().expect("checked: a Detail"))
            }
            other => Err(other),
        }
    }

    /// Which deadline passed, if this error is a timeout
    /// ([`Detail::Timeout`]).
    pub fn timeout(&self) -> Option<TimeoutKind> {
        match self.detail()? {
            Detail::Timeout(kind) => Some(*kind),
            _ => None,
        }
    }

    /// Why the opening handshake failed, where lockgate says more than
    /// tungstenite's variants ([`Detail::Handshake`]); a server answers
    /// with its [`status`](HandshakeFailure::status).
    pub fn handshake_failure(&self) -> Option<&HandshakeFailure> {
        match self.detail()? {
            Detail::Handshake(failure) => Some(failure),
            _ => None,
        }
    }

    /// Whether the out buffer refused a message
    /// ([`WriteBufferFull`](Error::WriteBufferFull)): flush, then write it
    /// again.
    pub fn is_write_buffer_full(&self) -> bool {
        matches!(self, Error::WriteBufferFull(_))
    }

    /// Whether this is an I/O "would block": the call can be repeated later
    /// and nothing was lost.
    pub fn is_would_block(&self) -> bool {
        matches!(self, Error::Io(e) if e.kind() == io::ErrorKind::WouldBlock)
    }

    /// The close code the connection was (or will be) failed with, for
    /// errors that fail the connection. For [`Error::Utf8`] it is 1007,
    /// which the connection was failed with when the bytes were the peer's
    /// text message or close reason; the other `Utf8` errors (a payload
    /// read as text by the application, a header value) leave the
    /// connection as it was.
    pub fn close_code(&self) -> Option<CloseCode> {
        match self {
            Error::Protocol(e) => e.close_code(),
            Error::Capacity(e) => e.close_code(),
            Error::Utf8(_) => Some(CloseCode::Invalid),
            Error::Io(_) => self.detail().and_then(Detail::close_code),
            _ => None,
        }
    }

    /// The non-UTF-8 error of a payload read as text.
    pub(crate) fn not_utf8(bytes: &[u8]) -> Error {
        match str::from_utf8(bytes) {
            Err(error) => error.into(),
            Ok(_) => Error::Utf8("invalid UTF-8".to_owned()),
        }
    }

    /// The error for a text message (or close reason) from the peer that
    /// is not UTF-8: it fails the connection with 1007.
    pub(crate) fn peer_not_utf8(what: &str) -> Error {
        Error::Utf8(format!("invalid UTF-8 in {what}"))
    }
}

/// A violation of RFC 6455 by the peer (or, for
/// [`SendAfterClosing`](Self::SendAfterClosing), a misuse by the caller).
///
/// The variants and messages are tungstenite's. Variants marked *opening
/// handshake* describe a request or response that is not a valid upgrade;
/// the rest fail an open connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// *Opening handshake*: a method other than GET.
    #[error("Unsupported HTTP method used - only GET is allowed")]
    WrongHttpMethod,
    /// *Opening handshake*: an HTTP version other than 1.1.
    #[error("HTTP version must be 1.1 or higher")]
    WrongHttpVersion,
    /// *Opening handshake*: no `Connection: upgrade`.
    #[error("No \"Connection: upgrade\" header")]
    MissingConnectionUpgradeHeader,
    /// *Opening handshake*: no `Upgrade: websocket`.
    #[error("No \"Upgrade: websocket\" header")]
    MissingUpgradeWebSocketHeader,
    /// *Opening handshake*: no `Sec-WebSocket-Version: 13`.
    #[error("No \"Sec-WebSocket-Version: 13\" header")]
    MissingSecWebSocketVersionHeader,
    /// *Opening handshake*: no `Sec-WebSocket-Key`.
    #[error("No \"Sec-WebSocket-Key\" header")]
    MissingSecWebSocketKey,
    /// *Opening handshake*: a `Sec-WebSocket-Key` that is not 16 bytes in
    /// base64.
    #[error("Invalid \"Sec-WebSocket-Key\" header value")]
    InvalidSecWebSocketKey,
    /// *Opening handshake*: the server's `Sec-WebSocket-Accept` is missing
    /// or does not match the key.
    #[error("Key mismatch in \"Sec-WebSocket-Accept\" header")]
    SecWebSocketAcceptKeyMismatch,
    /// *Opening handshake*: the server's `Sec-WebSocket-Protocol` does not
    /// fit what the client offered.
    #[error("SubProtocol error: {0}")]
    SecWebSocketSubProtocolError(SubProtocolError),
    /// *Opening handshake*: kept so that code matching tungstenite's
    /// errors compiles; lockgate never returns it: bytes after the request
    /// head are the client's first frames, and are read as such.
    #[error("Junk after client request")]
    JunkAfterRequest,
    /// *Opening handshake*: a server callback refused with a 2xx status.
    #[error("Custom response must not be successful")]
    CustomResponseSuccessful,
    /// *Opening handshake*: a header is missing, repeated or invalid.
    #[error("Missing, duplicated or incorrect header {0}")]
    InvalidHeader(Box<http::HeaderName>),
    /// *Opening handshake*: the connection ended before the head was
    /// complete.
    #[error("Handshake not finished")]
    HandshakeIncomplete,
    /// *Opening handshake*: the head is not HTTP.
    #[error("httparse error: {0}")]
    HttparseError(httparse::Error),
    /// The caller tried to send a data message after a close frame was sent.
    #[error("Sending after closing is not allowed")]
    SendAfterClosing,
    /// A data frame arrived after the peer's close frame.
    #[error("Remote sent after having closed")]
    ReceivedAfterClosing,
    /// RSV1, RSV2 or RSV3 was set without an extension that defines it.
    #[error("Reserved bits are non-zero")]
    NonZeroReservedBits,
    /// A server received a frame without a mask.
    #[error("Received an unmasked frame from client")]
    UnmaskedFrameFromClient,
    /// A client received a masked frame.
    #[error("Received a masked frame from server")]
    MaskedFrameFromServer,
    /// A control frame without FIN.
    #[error("Fragmented control frame")]
    FragmentedControlFrame,
    /// A control frame longer than 125 bytes.
    #[error("Control frame too big (payload must be 125 bytes or less)")]
    ControlFrameTooBig,
    /// A reserved control opcode (0xB-0xF).
    #[error("Unknown control frame type: {0}")]
    UnknownControlFrameType(u8),
    /// A reserved data opcode (0x3-0x7).
    #[error("Unknown data frame type: {0}")]
    UnknownDataFrameType(u8),
    /// A continuation frame with no message to continue.
    #[error("Continue frame but nothing to continue")]
    UnexpectedContinueFrame,
    /// A new data frame arrived while a fragmented message was open.
    #[error("While waiting for more fragments received: {0}")]
    ExpectedFragment(Data),
    /// The connection ended without a closing handshake.
    #[error("Connection reset without closing handshake")]
    ResetWithoutClosingHandshake,
    /// Kept so that code matching tungstenite's errors compiles; lockgate
    /// reports reserved opcodes as
    /// [`UnknownDataFrameType`](Self::UnknownDataFrameType) or
    /// [`UnknownControlFrameType`](Self::UnknownControlFrameType).
    #[error("Encountered invalid opcode: {0}")]
    InvalidOpcode(u8),
    /// A close frame with a one-byte payload.
    #[error("Invalid close sequence")]
    InvalidCloseSequence,
}

impl ProtocolError {
    /// The close code this violation fails the connection with (1002),
    /// `None` where no close frame is sent (the stream ended, the caller
    /// misused the API, or the opening handshake failed).
    pub fn close_code(&self) -> Option<CloseCode> {
        match self {
            ProtocolError::NonZeroReservedBits
            | ProtocolError::UnmaskedFrameFromClient
            | ProtocolError::MaskedFrameFromServer
            | ProtocolError::FragmentedControlFrame
            | ProtocolError::ControlFrameTooBig
            | ProtocolError::UnknownControlFrameType(_)
            | ProtocolError::UnknownDataFrameType(_)
            | ProtocolError::UnexpectedContinueFrame
            | ProtocolError::ExpectedFragment(_)
            | ProtocolError::InvalidOpcode(_)
            | ProtocolError::InvalidCloseSequence => Some(CloseCode::Protocol),
            _ => None,
        }
    }

    /// The error for a reserved opcode, by its range.
    pub(crate) fn reserved_opcode(bits: u8) -> ProtocolError {
        if bits & 0x8 == 0 {
            ProtocolError::UnknownDataFrameType(bits)
        } else {
            ProtocolError::UnknownControlFrameType(bits)
        }
    }

    /// The error for a data frame that arrived inside a fragmented message.
    pub(crate) fn expected_fragment(opcode: OpCode) -> ProtocolError {
        ProtocolError::ExpectedFragment(match opcode {
            OpCode::Text => Data::Text,
            OpCode::Binary => Data::Binary,
            OpCode::Continuation => Data::Continue,
            other => Data::Reserved(other.as_u8()),
        })
    }
}

/// What was wrong with the server's `Sec-WebSocket-Protocol` answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SubProtocolError {
    /// The server chose a subprotocol although the client offered none.
    #[error("Server sent a subprotocol but none was requested")]
    ServerSentSubProtocolNoneRequested,
    /// The server chose a subprotocol the client did not offer.
    #[error("Server sent an invalid subprotocol")]
    InvalidSubProtocol,
    /// Kept so that code matching tungstenite's errors compiles; lockgate
    /// never returns it: a server may accept without a subprotocol (RFC
    /// 6455 section 4.2.2), and the connection then has none.
    #[error("Server sent no subprotocol")]
    NoSubProtocol,
}

/// A configured size limit was exceeded. The connection fails with 1009.
/// (Too many fragments and the rate limits, which fail it with 1008, are
/// [`Detail`]s.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CapacityError {
    /// An opening handshake head with more header fields than allowed
    /// ([`HandshakeLimits`](crate::handshake::HandshakeLimits)). A server
    /// answers 431.
    #[error("Too many headers")]
    TooManyHeaders,
    /// A message (the sum of its fragments, or its inflated size) over
    /// `max_message_size`, or a frame that announced a payload over
    /// `max_frame_size` (nothing was allocated for it).
    #[error("Message too long: {size} > {max_size}")]
    MessageTooLong {
        /// The size reached when the limit was crossed (for a frame, its
        /// announced length).
        size: usize,
        /// The configured limit.
        max_size: usize,
    },
}

impl CapacityError {
    /// [`CloseCode::Size`] (1009) for sizes, `None` for
    /// [`CapacityError::TooManyHeaders`] (the connection never opened).
    pub fn close_code(&self) -> Option<CloseCode> {
        match self {
            CapacityError::TooManyHeaders => None,
            CapacityError::MessageTooLong { .. } => Some(CloseCode::Size),
        }
    }
}

/// Why a URL (or request) cannot be used for a WebSocket connection.
/// (What else makes one unusable is [`Detail::InvalidUrl`].)
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// A `wss://` URL, and this build has no TLS: enable the `rustls-tls-*`
    /// or `native-tls` feature, or pass a [`Connector`](crate::Connector).
    #[error(
        "TLS support not compiled in: enable the `rustls-tls-webpki-roots`, `rustls-tls-native-roots` or `native-tls` feature"
    )]
    TlsFeatureNotEnabled,
    /// The URL has no host, and the request no `Host` header.
    #[error("No host name in the URL")]
    NoHostName,
    /// No address of the host could be connected to.
    #[error("Unable to connect to {0}")]
    UnableToConnect(String),
    /// A scheme other than `ws` or `wss`.
    #[error("URL scheme not supported (use ws:// or wss://)")]
    UnsupportedUrlScheme,
    /// The host name is empty.
    #[error("URL contains empty host name")]
    EmptyHostName,
    /// The URL has no path or query.
    #[error("No path/query in URL")]
    NoPathOrQuery,
}

impl UrlError {
    /// The error for a URL unusable for a reason this enum has no variant
    /// for ([`Detail::InvalidUrl`]).
    pub(crate) fn invalid(message: String) -> Error {
        Detail::InvalidUrl(message).into()
    }
}

// The detail of a failed dial lives with the dial; the enums here carry it.
pub use crate::dial::error::TlsError;
use crate::dial::error::{ProxyRefusal, Socks5Refusal};

/// Why an opening handshake failed, where lockgate says more than
/// tungstenite's errors do (see also [`Error::Http`], [`Error::Url`] and
/// the handshake variants of [`ProtocolError`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HandshakeFailure {
    /// The HTTP message could not be parsed.
    #[error("malformed HTTP in the WebSocket handshake: {0}")]
    Parse(#[from] httparse::Error),
    /// The request head is larger than the server accepts (431).
    #[error("the WebSocket upgrade request's head is too large")]
    HeadTooLarge,
    /// The request is not a valid WebSocket upgrade (400).
    #[error("bad WebSocket upgrade request: {0}")]
    BadRequest(&'static str),
    /// The client asked for a WebSocket version other than 13 (426).
    #[error("unsupported Sec-WebSocket-Version (only 13 is spoken)")]
    UnsupportedVersion,
    /// The server's [`OriginPolicy`](crate::handshake::OriginPolicy) does
    /// not accept the request's `Origin` (403): a page of another site
    /// (whose request would carry the user's cookies), or an `Origin`
    /// that is `null`, malformed or repeated. `origin` is the value (the
    /// values, comma-separated), as one line of at most 120 characters.
    #[error("Origin {origin} is not allowed to open a WebSocket on this server")]
    OriginRefused {
        /// The refused `Origin`, shortened. (A `Box<str>`, not a
        /// `String`: it keeps `Error`, and so every read's result, at its
        /// size.)
        origin: Box<str>,
    },
    /// The server's callback returned a response that would break the
    /// handshake: a status other than 101, a changed `Connection`, `Upgrade`
    /// or `Sec-WebSocket-Accept`, a subprotocol the client did not offer, or
    /// a `Sec-WebSocket-Extensions` lockgate did not negotiate. A bug in the
    /// server (500).
    #[error("invalid response from the handshake callback: {0}")]
    InvalidCallbackResponse(&'static str),
    /// The 101 response broke the protocol (missing headers, a subprotocol
    /// or extension that was not offered).
    #[error("bad WebSocket upgrade response: {0}")]
    BadResponse(&'static str),
    /// A proxy answered something its protocol does not allow (HTTP
    /// CONNECT or SOCKS5): what was wrong.
    #[error("bad answer from the proxy: {0}")]
    BadProxyAnswer(&'static str),
    /// The server's answer does not start like an HTTP/1.1 response: what
    /// arrived, as one line of text (at most 120 characters).
    #[error("the server's answer is not an HTTP/1.1 response: it starts with {0:?}")]
    NotHttp(String),
    /// The HTTP proxy did not open a tunnel to the server: its status
    /// (407: credentials missing or refused) and the start of its body.
    #[error("{0}")]
    ProxyRefused(Box<ProxyRefusal>),
    /// The SOCKS5 proxy did not open a tunnel to the server: which proxy,
    /// which target, and why.
    #[error("{0}")]
    Socks5Refused(Box<Socks5Refusal>),
}

impl HandshakeFailure {
    /// The error tungstenite reports for the same condition, if it has one.
    /// The reasons are lockgate's own words (the constants of the
    /// handshake's checks), matched here in one place.
    fn tungstenite_variant(&self) -> Option<Error> {
        use ProtocolError as P;
        let protocol = match self {
            HandshakeFailure::Parse(error) => return Some(Error::from(*error)),
            HandshakeFailure::UnsupportedVersion => P::MissingSecWebSocketVersionHeader,
            HandshakeFailure::BadRequest(why) | HandshakeFailure::BadResponse(why) => match *why {
                "the method is not GET" => P::WrongHttpMethod,
                "HTTP/1.1 is required" | "the 101 response is not HTTP/1.1" => P::WrongHttpVersion,
                "incomplete request head" | "incomplete HTTP head" => P::HandshakeIncomplete,
                "Upgrade is missing or lacks websocket" | "Upgrade is missing or not websocket" => {
                    P::MissingUpgradeWebSocketHeader
                }
                "Connection is missing or lacks upgrade"
                | "Connection is missing or lacks the upgrade token" => {
                    P::MissingConnectionUpgradeHeader
                }
                "Sec-WebSocket-Key is missing or repeated" => P::MissingSecWebSocketKey,
                "Sec-WebSocket-Key is not 16 bytes in base64" => P::InvalidSecWebSocketKey,
                "Sec-WebSocket-Accept is missing or repeated"
                | "Sec-WebSocket-Accept does not match the key" => P::SecWebSocketAcceptKeyMismatch,
                "a subprotocol was chosen but none was offered" => P::SecWebSocketSubProtocolError(
                    SubProtocolError::ServerSentSubProtocolNoneRequested,
                ),
                "the chosen subprotocol was not offered"
                | "more than one Sec-WebSocket-Protocol" => {
                    P::SecWebSocketSubProtocolError(SubProtocolError::InvalidSubProtocol)
                }
                _ => return None,
            },
            _ => return None,
        };
        Some(Error::Protocol(protocol))
    }

    /// The HTTP status a server answers this failure with.
    pub fn status(&self) -> http::StatusCode {
        match self {
            HandshakeFailure::HeadTooLarge => http::StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            HandshakeFailure::UnsupportedVersion => http::StatusCode::UPGRADE_REQUIRED,
            HandshakeFailure::OriginRefused { .. } => http::StatusCode::FORBIDDEN,
            HandshakeFailure::InvalidCallbackResponse(_) => http::StatusCode::INTERNAL_SERVER_ERROR,
            _ => http::StatusCode::BAD_REQUEST,
        }
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_failed() {
        let mut refusal =
            http::Response::new(Some(b"<html>\r\n  <h1>Forbidden</h1>\r\n</html>".to_vec()));
        *refusal.status_mut() = http::StatusCode::FORBIDDEN;
        let error = Error::Http(Box::new(refusal));
        assert_eq!(
            error.to_string(),
            "HTTP error: 403 Forbidden (the WebSocket upgrade was refused): \
             <html> <h1>Forbidden</h1> </html>"
        );
        // The body reads as bytes, not as a list of numbers.
        assert!(format!("{error:?}").contains(r#"b"<html>"#), "{error:?}");

        let url = crate::upgrade::ClientUpgrade::new("ftp://example.com/").unwrap_err();
        assert_eq!(
            url.to_string(),
            "URL error: URL scheme not supported (use ws:// or wss://)"
        );
    }

    #[test]
    fn error_stays_small() {
        // Result<Message, Error> is on every read; keep the error no bigger
        // than a message plus a tag.
        assert!(
            std::mem::size_of::<Error>() <= 56,
            "{}",
            std::mem::size_of::<Error>()
        );
        // And no bigger than a message: then a read's result costs nothing
        // over the message (measured: 8 more bytes cost ~30 instructions per
        // read, in the `?`s that move it).
        assert!(
            std::mem::size_of::<Result<Message>>() <= std::mem::size_of::<Message>(),
            "Result<Message> is {} bytes, Message {}",
            std::mem::size_of::<Result<Message>>(),
            std::mem::size_of::<Message>()
        );
    }

    #[test]
    fn close_codes_follow_the_rfc() {
        let code = |e: ProtocolError| e.close_code();
        assert_eq!(
            Error::peer_not_utf8("a text message").close_code(),
            Some(CloseCode::Invalid)
        );
        assert_eq!(
            Error::from(Detail::InvalidPayloadLength).close_code(),
            Some(CloseCode::Protocol)
        );
        assert_eq!(
            Error::from(Detail::TooManyFragments { max: 1 }).close_code(),
            Some(CloseCode::Policy)
        );
        assert_eq!(Error::from(TimeoutKind::Close).close_code(), None);
        assert_eq!(
            code(ProtocolError::UnknownDataFrameType(3)),
            Some(CloseCode::Protocol)
        );
        assert_eq!(code(ProtocolError::ResetWithoutClosingHandshake), None);
        let cap = CapacityError::MessageTooLong {
            size: 2,
            max_size: 1,
        };
        assert_eq!(Error::from(cap).close_code(), Some(CloseCode::Size));
    }
}
