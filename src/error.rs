//! Errors, one enum per layer, gathered in [`Error`].

use std::io;

use crate::frame::{CloseCode, OpCode};
use crate::message::Message;
use crate::prepared::PreparedMessage;

/// Everything that can go wrong on a WebSocket.
///
/// The variants a caller acts on most: [`Error::ConnectionClosed`] (the
/// closing handshake finished; drop the connection),
/// [`Error::WriteBufferFull`] (flush, then try the same message again) and
/// [`Error::Io`] with [`io::ErrorKind::WouldBlock`] on non-blocking streams
/// (call again once the socket is ready).
#[derive(Debug, thiserror::Error)]
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
    /// The peer broke RFC 6455. The connection is failing: a close frame with
    /// [`ProtocolError::close_code`] has been queued.
    #[error("protocol error: {0}")]
    Protocol(#[from] ProtocolError),
    /// A size limit from [`Config`](crate::Config) was exceeded.
    #[error("capacity exceeded: {0}")]
    Capacity(#[from] CapacityError),
    /// The message did not fit in the out buffer under
    /// `max_write_buffer_size`. It is handed back exactly as given; nothing
    /// of it was written. Flush, then write it again.
    #[error("write buffer full")]
    WriteBufferFull(Message),
    /// [`WriteBufferFull`](Error::WriteBufferFull) for
    /// [`write_prepared`](crate::WebSocketContext::write_prepared): the
    /// prepared message is handed back; nothing of it was written.
    #[error("write buffer full")]
    WriteBufferFullPrepared(PreparedMessage),
    /// The opening handshake failed, or could not start (a bad URL, a
    /// proxy's refusal). Its message says which.
    #[error("{0}")]
    Handshake(#[from] HandshakeError),
    /// A payload read as text ([`Message::to_text`],
    /// [`Message::into_text`]) is not UTF-8. The connection is unaffected.
    #[error("the payload is not valid UTF-8")]
    Utf8,
    /// A deadline from [`Config`](crate::Config) passed: the connection is
    /// over (for [`TimeoutKind::Keepalive`], a close frame with 1011 was
    /// queued and sent if the stream took it).
    #[error("timed out: {0}")]
    Timeout(TimeoutKind),
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
            Error::Capacity(e) => Some(e.close_code()),
            Error::Timeout(TimeoutKind::Keepalive) => Some(CloseCode::Error),
            _ => None,
        }
    }
}

/// A violation of RFC 6455 by the peer (or, for the `Send*` variants, a
/// misuse by the caller).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// A server received a frame without a mask.
    #[error("client frame is not masked")]
    UnmaskedFrameFromClient,
    /// A client received a masked frame.
    #[error("server frame is masked")]
    MaskedFrameFromServer,
    /// RSV1, RSV2 or RSV3 was set without an extension that defines it.
    #[error("reserved bits set without a negotiated extension")]
    NonZeroReservedBits,
    /// An opcode the RFC reserves.
    #[error("reserved opcode {0:#x}")]
    ReservedOpCode(u8),
    /// The 64-bit payload length had its most significant bit set.
    #[error("payload length has the most significant bit set")]
    InvalidPayloadLength,
    /// A control frame without FIN.
    #[error("fragmented control frame")]
    FragmentedControlFrame,
    /// A control frame longer than 125 bytes.
    #[error("control frame of {0} bytes (at most 125)")]
    ControlFrameTooLong(u64),
    /// A continuation frame with no message to continue.
    #[error("continuation frame without a message to continue")]
    UnexpectedContinuation,
    /// A new data frame arrived while a fragmented message was open.
    #[error("{0} frame inside a fragmented message")]
    ExpectedContinuation(OpCode),
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
    /// A close frame with a one-byte payload.
    #[error("close frame with a 1-byte payload")]
    InvalidClosePayload,
    /// A close frame with a code that may not be sent on the wire.
    #[error("invalid close code {0}")]
    InvalidCloseCode(u16),
    /// A close frame whose reason is not UTF-8.
    #[error("close reason is not UTF-8")]
    InvalidCloseReason,
    /// The stream ended without a closing handshake.
    #[error("connection reset without a closing handshake")]
    ResetWithoutClosingHandshake,
    /// The caller tried to send a data message after a close frame was sent.
    #[error("sending after a close frame was sent")]
    SendAfterClosing,
    /// The caller tried to send a close frame with a code that may not
    /// appear on the wire (RFC 6455 section 7.4.1: 1005, 1006, 1015, codes
    /// below 1000, reserved 1004 and 1016-2999, 5000 and above). Nothing
    /// was queued and the connection is still open; see
    /// [`CloseCode::is_allowed_on_wire`].
    #[error("close code {0} may not be sent on the wire")]
    SendForbiddenCloseCode(u16),
    /// A data frame arrived after the peer's close frame.
    #[error("frame received after the peer's close frame")]
    ReceivedAfterClosing,
}

impl ProtocolError {
    /// The close code this violation fails the connection with: 1007 for
    /// bad UTF-8, 1002 for other peer violations, `None` where no close
    /// frame is sent (the stream ended, or the caller misused the API).
    pub fn close_code(&self) -> Option<CloseCode> {
        match self {
            ProtocolError::InvalidCompressedData { text: true } => Some(CloseCode::Invalid),
            ProtocolError::InvalidUtf8 | ProtocolError::InvalidCloseReason => {
                Some(CloseCode::Invalid)
            }
            ProtocolError::ResetWithoutClosingHandshake
            | ProtocolError::SendAfterClosing
            | ProtocolError::SendForbiddenCloseCode(_)
            | ProtocolError::ReceivedAfterClosing => None,
            _ => Some(CloseCode::Protocol),
        }
    }
}

/// A configured limit was exceeded. The connection fails with 1009 (1008
/// for too many fragments).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CapacityError {
    /// A frame announced a payload over `max_frame_size`. Nothing was
    /// allocated for it.
    #[error("frame of {size} bytes exceeds the limit of {max}")]
    FrameTooLarge {
        /// The announced payload length.
        size: u64,
        /// The configured limit.
        max: usize,
    },
    /// A message (the sum of its fragments) over `max_message_size`.
    #[error("message of at least {size} bytes exceeds the limit of {max}")]
    MessageTooLarge {
        /// The size reached when the limit was crossed.
        size: u64,
        /// The configured limit.
        max: usize,
    },
    /// A message in more frames than `max_fragments` allows. Closes with
    /// 1008 (policy): the size is fine, the framing is not.
    #[error("message in more than {max} frames")]
    TooManyFragments {
        /// The configured limit.
        max: usize,
    },
}

impl CapacityError {
    /// [`CloseCode::Size`] (1009) for sizes, [`CloseCode::Policy`] (1008)
    /// for [`CapacityError::TooManyFragments`].
    pub fn close_code(&self) -> CloseCode {
        match self {
            CapacityError::TooManyFragments { .. } => CloseCode::Policy,
            _ => CloseCode::Size,
        }
    }
}

/// Why an opening handshake failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HandshakeError {
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
    /// The server's callback refused the request with this response.
    #[error("WebSocket upgrade request rejected with status {}", .0.status())]
    Rejected(Box<http::Response<Option<String>>>),
    /// The server's callback returned a response that would break the
    /// handshake: a status other than 101, a changed `Connection`, `Upgrade`
    /// or `Sec-WebSocket-Accept`, a subprotocol the client did not offer, or
    /// a `Sec-WebSocket-Extensions` lockgate did not negotiate. A bug in the
    /// server (500).
    #[error("invalid response from the handshake callback: {0}")]
    InvalidCallbackResponse(&'static str),
    /// The server answered with something other than a valid 101 (or, over
    /// HTTP/2, a 2xx): the response, with the start of its body that came
    /// with the head (`None` if none did).
    #[error("{}", unexpected_response(.0))]
    UnexpectedResponse(Box<http::Response<Option<bytes::Bytes>>>),
    /// The 101 response broke the protocol (missing headers, wrong accept
    /// key, a subprotocol or extension that was not offered).
    #[error("bad WebSocket upgrade response: {0}")]
    BadResponse(&'static str),
    /// The URL or request cannot be used for a WebSocket connection.
    #[error("invalid WebSocket URL or request: {0}")]
    BadUrl(String),
    /// The stream ended during the handshake.
    #[error("the connection ended during the WebSocket handshake")]
    UnexpectedEof,
    /// The HTTP proxy did not open a tunnel to the server: its status
    /// (407: credentials missing or refused) and the start of its body.
    #[error("{0}")]
    ProxyRefused(Box<crate::handshake::ProxyRefusal>),
}

impl HandshakeError {
    /// The HTTP status a server answers this failure with.
    pub fn status(&self) -> http::StatusCode {
        match self {
            HandshakeError::HeadTooLarge => http::StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            HandshakeError::UnsupportedVersion => http::StatusCode::UPGRADE_REQUIRED,
            // A 1xx refusal would read as "continue" (or, with 101, as an
            // accepted upgrade): only a final status may refuse.
            HandshakeError::Rejected(resp) if resp.status().is_informational() => {
                http::StatusCode::INTERNAL_SERVER_ERROR
            }
            HandshakeError::Rejected(resp) => resp.status(),
            HandshakeError::InvalidCallbackResponse(_) => http::StatusCode::INTERNAL_SERVER_ERROR,
            _ => http::StatusCode::BAD_REQUEST,
        }
    }
}

/// "the server refused the WebSocket upgrade with 403 Forbidden: <body>".
fn unexpected_response(response: &http::Response<Option<bytes::Bytes>>) -> String {
    let mut message = format!(
        "the server refused the WebSocket upgrade with {}",
        response.status()
    );
    if let Some(body) = response.body().as_deref().filter(|body| !body.is_empty()) {
        message.push_str(": ");
        message.push_str(&summarize_body(body, BODY_SUMMARY));
    }
    message
}

/// At most this many characters of a body appear in an error message.
pub(crate) const BODY_SUMMARY: usize = 120;

/// A body as one line of text for an error message: lossy UTF-8, control
/// characters escaped, whitespace runs folded, cut at `max` characters.
///
/// Decoded as it goes, and only as far as the summary reaches: the body
/// is whatever a refusing peer sent along with its head (a whole read),
/// and decoding all of it at once would cost up to three bytes per byte
/// it sent (each invalid byte becomes a 3-byte U+FFFD).
pub(crate) fn summarize_body(body: &[u8], max: usize) -> String {
    // The same characters as `String::from_utf8_lossy`: one U+FFFD per
    // invalid sequence.
    let chars = body.utf8_chunks().flat_map(|chunk| {
        let invalid = !chunk.invalid().is_empty();
        chunk
            .valid()
            .chars()
            .chain(invalid.then_some(char::REPLACEMENT_CHARACTER))
    });
    let mut out = String::new();
    let mut length = 0;
    let mut last_space = true;
    for c in chars {
        let space = c.is_whitespace();
        if space && last_space {
            continue;
        }
        last_space = space;
        let fitted = if space {
            push_piece(&mut out, &mut length, max, [' '].into_iter())
        } else if c.is_control() {
            push_piece(&mut out, &mut length, max, c.escape_default())
        } else {
            push_piece(&mut out, &mut length, max, [c].into_iter())
        };
        if !fitted {
            break;
        }
    }
    out.truncate(out.trim_end().len());
    out
}

/// Appends `piece` if `length` plus its characters stays within `max`;
/// otherwise ends `out` with an ellipsis and returns `false`.
fn push_piece(
    out: &mut String,
    length: &mut usize,
    max: usize,
    piece: impl ExactSizeIterator<Item = char>,
) -> bool {
    if *length + piece.len() > max {
        out.push('…');
        return false;
    }
    *length += piece.len();
    out.extend(piece);
    true
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// `summarize_body` written the obvious way, decoding the whole body
    /// first: the reference the incremental one must match.
    fn summarize_whole(body: &[u8], max: usize) -> String {
        let mut out = String::new();
        let mut length = 0;
        let mut last_space = true;
        for c in String::from_utf8_lossy(body).chars() {
            let piece = match c {
                c if c.is_whitespace() && last_space => continue,
                c if c.is_whitespace() => " ".to_owned(),
                c if c.is_control() => c.escape_default().to_string(),
                c => c.to_string(),
            };
            last_space = piece == " ";
            if length + piece.chars().count() > max {
                out.push('…');
                break;
            }
            length += piece.chars().count();
            out.push_str(&piece);
        }
        out.trim_end().to_owned()
    }

    #[test]
    fn body_summaries_decode_as_lossy_utf8_does() {
        let bodies: [&[u8]; 12] = [
            b"",
            b"   ",
            b"plain text",
            b"  two\r\n\r\n  lines\t ",
            b"\xff\xfe\xfd",
            b"\xf0\x90\x80 truncated four-byte sequence",
            b"\xed\xa0\x80 an encoded surrogate",
            b"\xc0\xaf an overlong slash",
            "caf\u{e9} \u{1f600} \u{2028}".as_bytes(),
            b"\x00\x07\x1b[31m escapes \x7f",
            b"ends in the middle of \xe2\x82",
            b"x \xff y \xf0\x9f z",
        ];
        for body in bodies {
            for max in [0, 1, 3, 10, 120] {
                assert_eq!(
                    summarize_body(body, max),
                    summarize_whole(body, max),
                    "{body:?}, {max}"
                );
            }
        }
    }

    #[test]
    fn messages_say_what_failed() {
        let mut refusal = http::Response::new(Some(bytes::Bytes::from_static(
            b"<html>\r\n  <h1>Forbidden</h1>\r\n</html>",
        )));
        *refusal.status_mut() = http::StatusCode::FORBIDDEN;
        let error = Error::from(HandshakeError::UnexpectedResponse(Box::new(refusal)));
        assert_eq!(
            error.to_string(),
            "the server refused the WebSocket upgrade with 403 Forbidden: \
             <html> <h1>Forbidden</h1> </html>"
        );
        // The body reads as bytes, not as a list of numbers.
        assert!(format!("{error:?}").contains(r#"b"<html>"#), "{error:?}");

        let url = crate::handshake::ClientHandshake::new("ftp://example.com/").unwrap_err();
        assert_eq!(
            url.to_string(),
            "invalid WebSocket URL or request: unsupported URL scheme \"ftp\" (use ws or wss)"
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
            code(ProtocolError::ReservedOpCode(3)),
            Some(CloseCode::Protocol)
        );
        assert_eq!(code(ProtocolError::ResetWithoutClosingHandshake), None);
        let cap = CapacityError::MessageTooLarge { size: 2, max: 1 };
        assert_eq!(Error::from(cap).close_code(), Some(CloseCode::Size));
    }
}
