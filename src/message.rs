//! [`Message`] and [`CloseFrame`]: what `read` returns and `write` takes.

use std::fmt;

use bytes::Bytes;

use crate::frame::CloseCode;
use crate::utf8_bytes::Utf8Bytes;

/// The payload of a close frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloseFrame {
    /// Why the connection is closing.
    pub code: CloseCode,
    /// A human-readable reason; at most 123 bytes on the wire.
    pub reason: Utf8Bytes,
}

impl CloseFrame {
    /// A close frame with `code` and `reason`.
    pub fn new(code: CloseCode, reason: impl Into<Utf8Bytes>) -> Self {
        Self {
            code,
            reason: reason.into(),
        }
    }
}

impl fmt::Display for CloseFrame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.code, self.reason)
    }
}

/// A WebSocket message.
///
/// Data messages are `Text` and `Binary`. `read` also hands over the control
/// messages a caller may want to see: a `Ping` (the pong is queued for you),
/// a `Pong`, and the peer's `Close` (the reply is queued for you).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// A UTF-8 text message.
    Text(Utf8Bytes),
    /// A binary message.
    Binary(Bytes),
    /// A ping, with at most 125 bytes of payload.
    Ping(Bytes),
    /// A pong, with at most 125 bytes of payload.
    Pong(Bytes),
    /// A close frame, with an optional code and reason.
    Close(Option<CloseFrame>),
}

impl Message {
    /// A text message.
    pub fn text(text: impl Into<Utf8Bytes>) -> Self {
        Message::Text(text.into())
    }

    /// A binary message.
    pub fn binary(data: impl Into<Bytes>) -> Self {
        Message::Binary(data.into())
    }

    /// Whether this is `Text` or `Binary`.
    pub fn is_data(&self) -> bool {
        matches!(self, Message::Text(_) | Message::Binary(_))
    }

    /// Whether this is `Ping`, `Pong` or `Close`.
    pub fn is_control(&self) -> bool {
        !self.is_data()
    }

    /// The length of the payload in bytes (for `Close`, code plus reason).
    pub fn len(&self) -> usize {
        match self {
            Message::Text(t) => t.len(),
            Message::Binary(b) | Message::Ping(b) | Message::Pong(b) => b.len(),
            Message::Close(None) => 0,
            Message::Close(Some(frame)) => 2 + frame.reason.len(),
        }
    }

    /// Whether the payload is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The payload as bytes (empty for `Close`).
    pub fn into_data(self) -> Bytes {
        match self {
            Message::Text(t) => t.into_bytes(),
            Message::Binary(b) | Message::Ping(b) | Message::Pong(b) => b,
            Message::Close(_) => Bytes::new(),
        }
    }

    /// The payload as text, if it is a text message.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Message::Text(t) => Some(t.as_str()),
            _ => None,
        }
    }
}

impl From<String> for Message {
    fn from(s: String) -> Self {
        Message::text(s)
    }
}

impl From<&str> for Message {
    fn from(s: &str) -> Self {
        Message::text(s)
    }
}

impl From<Utf8Bytes> for Message {
    fn from(s: Utf8Bytes) -> Self {
        Message::Text(s)
    }
}

impl From<Bytes> for Message {
    fn from(b: Bytes) -> Self {
        Message::Binary(b)
    }
}

impl From<Vec<u8>> for Message {
    fn from(b: Vec<u8>) -> Self {
        Message::Binary(b.into())
    }
}

impl From<&[u8]> for Message {
    fn from(b: &[u8]) -> Self {
        Message::Binary(Bytes::copy_from_slice(b))
    }
}
