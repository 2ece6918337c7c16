//! Errors, one enum per layer, gathered in [`Error`].
//!
//! The variants tungstenite has keep its names and shapes (`Error::Http`,
//! `Error::Url`, `Error::Utf8(String)`, `ProtocolError::*`,
//! `CapacityError::MessageTooLong`), so code that matches on them ports by
//! renaming the crate; lockgate's own (`Timeout`, `Handshake`,
//! `WriteBufferFullPrepared`) sit beside them.
//!
//! The detail behind dialling (the TLS libraries' errors, a proxy's or a
//! SOCKS5 proxy's refusal) is defined in the dial module and carried here:
//! [`TlsError`] is re-exported at its old path.

use std::{fmt, io, str, string};

use crate::frame::{CloseCode, Data, OpCode};
use crate::message::Message;
use crate::prepared::PreparedMessage;

/// Everything that can go wrong on a WebSocket.
///
/// The variants a caller acts on most: [`Error::ConnectionClosed`] (the
/// closing handshake finished; drop the connection),
/// [`Error::WriteBufferFull`] (flush, then try the same message again) and
/// [`Error::Io`] with [`io::ErrorKind::WouldBlock`] on non-blocking streams
/// (call again once the socket is ready).
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
///     Err(Error::Timeout(kind)) => eprintln!("timed out: {kind:?}"),
///     Err(e) => eprintln!("could not connect: {e}"),
/// }
/// # Ok::<(), lockgate::Error>(())
/// ```
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The closing handshake completed. Returned once by `read`; the
    /// connection can be dropped.
    #[error("connection closed normally")]
    ConnectionClosed,
    /// The connection was already closed (or failed) and this call cannot do
    /// anything.
    #[error("the connection is already closed")]
    AlreadyClosed,
    /// The underlying stream failed, or would block.
    #[error("i/o error: {0}")]
    Io(#[from] io::Error),
    /// The TLS layer of a `wss://` connection failed: the certificate was
    /// refused, the server name is not valid, or the TLS library failed.
    #[error("TLS error: {0}")]
    Tls(#[from] TlsError),
    /// A size limit from [`Config`](crate::Config) was exceeded.
    #[error("capacity exceeded: {0}")]
    Capacity(#[from] CapacityError),
    /// The peer broke RFC 6455. The connection is failing: a close frame with
    /// [`ProtocolError::close_code`] has been queued.
    #[error("protocol error: {0}")]
    Protocol(#[from] ProtocolError),
    /// The message did not fit in the out buffer under
    /// `max_write_buffer_size`. It is handed back exactly as given; nothing
    /// of it was written. Flush, then write it again.
    #[error("write buffer full")]
    WriteBufferFull(Box<Message>),
    /// [`WriteBufferFull`](Error::WriteBufferFull) for
    /// [`write_prepared`](crate::WebSocketContext::write_prepared): the
    /// prepared message is handed back; nothing of it was written.
    #[error("write buffer full")]
    WriteBufferFullPrepared(PreparedMessage),
    /// Bytes read as text are not UTF-8: a payload read with
    /// [`Message::to_text`] or [`Message::into_text`], or a header value.
    /// The connection is unaffected. (A text message from the peer that
    /// is not UTF-8 fails the connection with
    /// [`ProtocolError::InvalidUtf8`] instead.)
    #[error("UTF-8 encoding error: {0}")]
    Utf8(String),
    /// Kept so that code matching tungstenite's errors compiles; lockgate
    /// never returns it: an oversized handshake head is
    /// [`HandshakeFailure::HeadTooLarge`] or
    /// [`CapacityError::TooManyHeaders`].
    #[error("attack attempt detected")]
    AttackAttempt,
    /// The URL (or request) cannot be used for a WebSocket connection.
    #[error("invalid WebSocket URL: {0}")]
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
    /// The opening handshake failed for a reason lockgate describes on its
    /// own: a malformed request or response, a head too large, a proxy's
    /// refusal. Its message says which.
    #[error("{0}")]
    Handshake(#[from] HandshakeFailure),
    /// A deadline from [`Config`](crate::Config) passed: the connection is
    /// over (for [`TimeoutKind::Keepalive`], a close frame with 1011 was
    /// queued and sent if the stream took it).
    #[error("timed out: {0}")]
    Timeout(TimeoutKind),
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
            Error::WriteBufferFullPrepared(m) => {
                f.debug_tuple("WriteBufferFullPrepared").field(m).finish()
            }
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
            Error::Handshake(e) => f.debug_tuple("Handshake").field(e).finish(),
            Error::Timeout(kind) => f.debug_tuple("Timeout").field(kind).finish(),
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

/// Which deadline passed (see [`Error::Timeout`]).
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

impl Error {
    /// Whether the out buffer refused a message
    /// ([`WriteBufferFull`](Error::WriteBufferFull) or
    /// [`WriteBufferFullPrepared`](Error::WriteBufferFullPrepared)): flush,
    /// then write it again.
    pub fn is_write_buffer_full(&self) -> bool {
        matches!(
            self,
            Error::WriteBufferFull(_) | Error::WriteBufferFullPrepared(_)
        )
    }

    /// Whether this is an I/O "would block": the call can be repeated later
    /// and nothing was lost.
    pub fn is_would_block(&self) -> bool {
        matches!(self, Error::Io(e) if e.kind() == io::ErrorKind::WouldBlock)
    }

    /// The close code the connection was (or will be) failed with, for
    /// errors that fail the connection.
    pub fn close_code(&self) -> Option<CloseCode> {
        match self {
            Error::Protocol(e) => e.close_code(),
            Error::Capacity(e) => e.close_code(),
            Error::Timeout(TimeoutKind::Keepalive) => Some(CloseCode::Error),
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
}

/// A violation of RFC 6455 by the peer (or, for the `Send*` variants, a
/// misuse by the caller).
///
/// The names are tungstenite's where the meaning is the same. Variants
/// marked *opening handshake* describe a request or response that is not a
/// valid upgrade; the rest fail an open connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// *Opening handshake*: a method other than GET.
    #[error("unsupported HTTP method (a WebSocket upgrade uses GET)")]
    WrongHttpMethod,
    /// *Opening handshake*: an HTTP version other than 1.1.
    #[error("HTTP version must be 1.1")]
    WrongHttpVersion,
    /// *Opening handshake*: no `Connection: upgrade`.
    #[error("no \"Connection: upgrade\" header")]
    MissingConnectionUpgradeHeader,
    /// *Opening handshake*: no `Upgrade: websocket`.
    #[error("no \"Upgrade: websocket\" header")]
    MissingUpgradeWebSocketHeader,
    /// *Opening handshake*: no `Sec-WebSocket-Version: 13`.
    #[error("no \"Sec-WebSocket-Version: 13\" header")]
    MissingSecWebSocketVersionHeader,
    /// *Opening handshake*: no `Sec-WebSocket-Key`.
    #[error("no \"Sec-WebSocket-Key\" header")]
    MissingSecWebSocketKey,
    /// *Opening handshake*: a `Sec-WebSocket-Key` that is not 16 bytes in
    /// base64.
    #[error("invalid \"Sec-WebSocket-Key\" header value")]
    InvalidSecWebSocketKey,
    /// *Opening handshake*: the server's `Sec-WebSocket-Accept` is missing
    /// or does not match the key.
    #[error("key mismatch in \"Sec-WebSocket-Accept\" header")]
    SecWebSocketAcceptKeyMismatch,
    /// *Opening handshake*: the server's `Sec-WebSocket-Protocol` does not
    /// fit what the client offered.
    #[error("subprotocol error: {0}")]
    SecWebSocketSubProtocolError(SubProtocolError),
    /// *Opening handshake*: kept so that code matching tungstenite's
    /// errors compiles; lockgate never returns it: bytes after the request
    /// head are the client's first frames, and are read as such.
    #[error("junk after client request")]
    JunkAfterRequest,
    /// *Opening handshake*: a server callback refused with a 2xx status.
    #[error("a refusal must not have a successful status")]
    CustomResponseSuccessful,
    /// *Opening handshake*: a header is missing, repeated or invalid.
    #[error("missing, duplicated or incorrect header {0}")]
    InvalidHeader(Box<http::HeaderName>),
    /// *Opening handshake*: the connection ended before the head was
    /// complete.
    #[error("the connection ended during the WebSocket handshake")]
    HandshakeIncomplete,
    /// *Opening handshake*: the head is not HTTP.
    #[error("malformed HTTP in the WebSocket handshake: {0}")]
    HttparseError(httparse::Error),
    /// The caller tried to send a data message after a close frame was sent.
    #[error("sending after a close frame was sent")]
    SendAfterClosing,
    /// A data frame arrived after the peer's close frame.
    #[error("frame received after the peer's close frame")]
    ReceivedAfterClosing,
    /// RSV1, RSV2 or RSV3 was set without an extension that defines it.
    #[error("reserved bits set without a negotiated extension")]
    NonZeroReservedBits,
    /// A server received a frame without a mask.
    #[error("client frame is not masked")]
    UnmaskedFrameFromClient,
    /// A client received a masked frame.
    #[error("server frame is masked")]
    MaskedFrameFromServer,
    /// A control frame without FIN.
    #[error("fragmented control frame")]
    FragmentedControlFrame,
    /// A control frame longer than 125 bytes.
    #[error("control frame too big (at most 125 bytes)")]
    ControlFrameTooBig,
    /// A reserved control opcode (0xB-0xF).
    #[error("unknown control frame type {0:#x}")]
    UnknownControlFrameType(u8),
    /// A reserved data opcode (0x3-0x7).
    #[error("unknown data frame type {0:#x}")]
    UnknownDataFrameType(u8),
    /// A continuation frame with no message to continue.
    #[error("continuation frame without a message to continue")]
    UnexpectedContinueFrame,
    /// A new data frame arrived while a fragmented message was open.
    #[error("{0} frame inside a fragmented message")]
    ExpectedFragment(Data),
    /// The connection ended without a closing handshake.
    #[error("connection reset without a closing handshake")]
    ResetWithoutClosingHandshake,
    /// Kept so that code matching tungstenite's errors compiles; lockgate
    /// reports reserved opcodes as
    /// [`UnknownDataFrameType`](Self::UnknownDataFrameType) or
    /// [`UnknownControlFrameType`](Self::UnknownControlFrameType).
    #[error("invalid opcode {0:#x}")]
    InvalidOpcode(u8),
    /// A close frame with a one-byte payload.
    #[error("invalid close sequence (a close payload of 1 byte)")]
    InvalidCloseSequence,
    /// The 64-bit payload length had its most significant bit set.
    #[error("payload length has the most significant bit set")]
    InvalidPayloadLength,
    /// A text message (or close reason) that is not UTF-8.
    #[error("invalid UTF-8 in a text message")]
    InvalidUtf8,
    /// A compressed message (RSV1 with permessage-deflate) whose payload is
    /// not valid DEFLATE data. Closes with 1007 for text, 1002 for binary.
    #[error("invalid compressed data in a {} message", if *.text { "text" } else { "binary" })]
    InvalidCompressedData {
        /// Whether the message was text.
        text: bool,
    },
    /// A close frame with a code that may not be sent on the wire.
    #[error("invalid close code {0}")]
    InvalidCloseCode(u16),
    /// A close frame whose reason is not UTF-8.
    #[error("close reason is not UTF-8")]
    InvalidCloseReason,
    /// The caller tried to send a close frame with a code that may not
    /// appear on the wire (RFC 6455 section 7.4.1: 1005, 1006, 1015, codes
    /// below 1000, reserved 1004 and 1016-2999, 5000 and above). Nothing
    /// was queued and the connection is still open; see
    /// [`CloseCode::is_allowed_on_wire`].
    #[error("close code {0} may not be sent on the wire")]
    SendForbiddenCloseCode(u16),
}

impl ProtocolError {
    /// The close code this violation fails the connection with: 1007 for
    /// bad UTF-8, 1002 for other peer violations, `None` where no close
    /// frame is sent (the stream ended, the caller misused the API, or the
    /// opening handshake failed).
    pub fn close_code(&self) -> Option<CloseCode> {
        match self {
            ProtocolError::InvalidCompressedData { text: true } => Some(CloseCode::Invalid),
            ProtocolError::InvalidUtf8 | ProtocolError::InvalidCloseReason => {
                Some(CloseCode::Invalid)
            }
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
            | ProtocolError::InvalidCloseSequence
            | ProtocolError::InvalidPayloadLength
            | ProtocolError::InvalidCompressedData { text: false }
            | ProtocolError::InvalidCloseCode(_) => Some(CloseCode::Protocol),
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
    #[error("the server sent a subprotocol but none was requested")]
    ServerSentSubProtocolNoneRequested,
    /// The server chose a subprotocol the client did not offer.
    #[error("the server sent a subprotocol that was not offered")]
    InvalidSubProtocol,
    /// Kept so that code matching tungstenite's errors compiles; lockgate
    /// never returns it: a server may accept without a subprotocol (RFC
    /// 6455 section 4.2.2), and the connection then has none.
    #[error("the server sent no subprotocol")]
    NoSubProtocol,
}

/// A configured limit was exceeded. The connection fails with 1009 (1008
/// for too many fragments or a rate limit).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CapacityError {
    /// An opening handshake head with more header fields than allowed
    /// ([`HandshakeLimits`](crate::handshake::HandshakeLimits)). A server
    /// answers 431.
    #[error("too many headers")]
    TooManyHeaders,
    /// A message (the sum of its fragments, or its inflated size) over
    /// `max_message_size`.
    #[error("message too long: {size} > {max_size}")]
    MessageTooLong {
        /// The size reached when the limit was crossed.
        size: usize,
        /// The configured limit.
        max_size: usize,
    },
    /// A frame announced a payload over `max_frame_size`. Nothing was
    /// allocated for it.
    #[error("frame of {size} bytes exceeds the limit of {max_size}")]
    FrameTooLarge {
        /// The announced payload length.
        size: u64,
        /// The configured limit.
        max_size: usize,
    },
    /// A message in more frames than `max_fragments` allows. Closes with
    /// 1008 (policy): the size is fine, the framing is not.
    #[error("message in more than {max} frames")]
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
}

impl CapacityError {
    /// [`CloseCode::Size`] (1009) for sizes, [`CloseCode::Policy`] (1008)
    /// for [`CapacityError::TooManyFragments`] and the rate limits
    /// ([`CapacityError::MessageRateExceeded`],
    /// [`CapacityError::ByteRateExceeded`]), `None` for
    /// [`CapacityError::TooManyHeaders`] (the connection never opened).
    pub fn close_code(&self) -> Option<CloseCode> {
        match self {
            CapacityError::TooManyHeaders => None,
            CapacityError::TooManyFragments { .. }
            | CapacityError::MessageRateExceeded { .. }
            | CapacityError::ByteRateExceeded { .. } => Some(CloseCode::Policy),
            _ => Some(CloseCode::Size),
        }
    }
}

/// Why a URL (or request) cannot be used for a WebSocket connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlError {
    /// A `wss://` URL, and this build has no TLS: enable the `rustls-tls-*`
    /// or `native-tls` feature, or pass a [`Connector`](crate::Connector).
    #[error(
        "wss:// needs TLS support: enable the `rustls-tls-webpki-roots`, `rustls-tls-native-roots` or `native-tls` feature"
    )]
    TlsFeatureNotEnabled,
    /// The URL has no host, and the request no `Host` header.
    #[error("no host name in the URL")]
    NoHostName,
    /// No address of the host could be connected to.
    #[error("unable to connect to {0}")]
    UnableToConnect(String),
    /// A scheme other than `ws` or `wss`.
    #[error("URL scheme not supported (use ws:// or wss://)")]
    UnsupportedUrlScheme,
    /// The host name is empty.
    #[error("URL contains an empty host name")]
    EmptyHostName,
    /// The URL has no path or query.
    #[error("no path or query in the URL")]
    NoPathOrQuery,
    /// Anything else that makes the URL or request unusable (it does not
    /// parse, it has a fragment or credentials, a proxy URL is wrong...):
    /// the message says what.
    #[error("{0}")]
    Invalid(String),
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
            "the WebSocket upgrade was refused with 403 Forbidden: \
             <html> <h1>Forbidden</h1> </html>"
        );
        // The body reads as bytes, not as a list of numbers.
        assert!(format!("{error:?}").contains(r#"b"<html>"#), "{error:?}");

        let url = crate::upgrade::ClientUpgrade::new("ftp://example.com/").unwrap_err();
        assert_eq!(
            url.to_string(),
            "invalid WebSocket URL: URL scheme not supported (use ws:// or wss://)"
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
        assert_eq!(code(ProtocolError::InvalidUtf8), Some(CloseCode::Invalid));
        assert_eq!(
            code(ProtocolError::InvalidCloseReason),
            Some(CloseCode::Invalid)
        );
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
