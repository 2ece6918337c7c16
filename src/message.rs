//! [`Message`] and [`CloseFrame`]: what `read` returns and `write` takes.

use std::fmt;

use bytes::Bytes;

use crate::error::Error;
use crate::frame::CloseCode;
use crate::frame::Frame;
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
    /// The code, and the reason in parentheses if there is one:
    /// `1000` or `1001 (server restart)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.reason.is_empty() {
            write!(f, "{}", self.code)
        } else {
            write!(f, "{} ({})", self.code, self.reason)
        }
    }
}

/// A WebSocket message.
///
/// Data messages are `Text` and `Binary`. `read` also hands over the control
/// messages a caller may want to see: a `Ping` (the pong is queued for you),
/// a `Pong` answering a ping you sent, and the peer's `Close` (the reply is
/// queued for you). `Frame` is only ever written: a raw frame, sent as
/// given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// A UTF-8 text message.
    Text(Utf8Bytes),
    /// A binary message.
    Binary(Bytes),
    /// A ping, with at most 125 bytes of payload.
    Ping(Bytes),
    /// A pong, with at most 125 bytes of payload. `read` returns the
    /// pongs to your own pings and unsolicited ones; a pong answering a
    /// keepalive ping (see [`Config::ping_interval`](crate::Config::ping_interval))
    /// is consumed by the connection and never returned.
    Pong(Bytes),
    /// A close frame, with an optional code and reason.
    Close(Option<CloseFrame>),
    /// A raw frame to write as it is (tungstenite's escape hatch, to send
    /// a fragment of a message, say). `read` never returns one. A client
    /// masks it with a fresh key and a server sends it unmasked, whatever
    /// its header says; a raw close frame starts the closing handshake as
    /// [`close`](crate::WebSocket::close) would.
    Frame(Frame),
}

impl Message {
    /// A text message, from a `String`, `&str` or [`Utf8Bytes`]. For
    /// bytes that should be text (a `Bytes` or `Vec<u8>`), use
    /// [`try_text`](Self::try_text), which checks them.
    pub fn text(text: impl Into<Utf8Bytes>) -> Self {
        Message::Text(text.into())
    }

    /// A text message from bytes that must be UTF-8, checked without a
    /// copy: `Message::try_text(bytes)?` where tungstenite code has
    /// `Message::text(Utf8Bytes::try_from(bytes)?)`.
    ///
    /// # Errors
    ///
    /// [`Error::Utf8`](crate::Error::Utf8) if `data` is not UTF-8.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockgate::{Bytes, Message};
    ///
    /// let text = Message::try_text(Bytes::from_static(b"caf\xc3\xa9")).unwrap();
    /// assert_eq!(text, Message::text("café"));
    /// assert!(Message::try_text(vec![0xff]).is_err());
    /// ```
    pub fn try_text(data: impl Into<Bytes>) -> crate::error::Result<Self> {
        Utf8Bytes::try_from(data.into())
            .map(Message::Text)
            .map_err(crate::error::Error::from)
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
        matches!(
            self,
            Message::Ping(_) | Message::Pong(_) | Message::Close(_)
        )
    }

    /// Whether this is a `Text` message.
    pub fn is_text(&self) -> bool {
        matches!(self, Message::Text(_))
    }

    /// Whether this is a `Binary` message.
    pub fn is_binary(&self) -> bool {
        matches!(self, Message::Binary(_))
    }

    /// Whether this is a `Ping`.
    pub fn is_ping(&self) -> bool {
        matches!(self, Message::Ping(_))
    }

    /// Whether this is a `Pong`.
    pub fn is_pong(&self) -> bool {
        matches!(self, Message::Pong(_))
    }

    /// Whether this is a `Close`.
    pub fn is_close(&self) -> bool {
        matches!(self, Message::Close(_))
    }

    /// The length of the payload in bytes (for `Close`, code plus reason).
    pub fn len(&self) -> usize {
        match self {
            Message::Text(t) => t.len(),
            Message::Binary(b) | Message::Ping(b) | Message::Pong(b) => b.len(),
            Message::Close(None) => 0,
            Message::Close(Some(frame)) => 2 + frame.reason.len(),
            Message::Frame(frame) => frame.len(),
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
            Message::Frame(frame) => frame.into_payload(),
        }
    }

    /// The payload as text, as tungstenite's `to_text` has it: a text
    /// message's text, any other payload checked as UTF-8, a close frame's
    /// reason (empty without one).
    ///
    /// # Errors
    ///
    /// [`Error::Utf8`] if the payload is not UTF-8.
    pub fn to_text(&self) -> Result<&str, Error> {
        match self {
            Message::Text(t) => Ok(t.as_str()),
            Message::Binary(b) | Message::Ping(b) | Message::Pong(b) => {
                simdutf8::basic::from_utf8(b).map_err(|_| Error::not_utf8(b))
            }
            Message::Close(None) => Ok(""),
            Message::Close(Some(frame)) => Ok(frame.reason.as_str()),
            Message::Frame(frame) => Ok(frame.to_text()?),
        }
    }

    /// The message as text, consuming it, with the meanings of
    /// [`to_text`](Self::to_text) and without copying the payload.
    ///
    /// # Errors
    ///
    /// [`Error::Utf8`] if the payload is not UTF-8.
    pub fn into_text(self) -> Result<Utf8Bytes, Error> {
        match self {
            Message::Text(t) => Ok(t),
            Message::Binary(b) | Message::Ping(b) | Message::Pong(b) => Ok(Utf8Bytes::try_from(b)?),
            Message::Close(None) => Ok(Utf8Bytes::default()),
            Message::Close(Some(frame)) => Ok(frame.reason),
            Message::Frame(frame) => Ok(frame.into_text()?),
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

impl fmt::Display for Message {
    /// The text, as [`to_text`](Message::to_text) reads it, or
    /// `Binary Data<length=N>` for a payload that is not UTF-8 (as
    /// tungstenite prints it).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_text() {
            Ok(text) => f.write_str(text),
            Err(_) => write!(f, "Binary Data<length={}>", self.len()),
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

impl From<Message> for Bytes {
    /// The payload, as [`Message::into_data`].
    fn from(message: Message) -> Bytes {
        message.into_data()
    }
}

impl From<&[u8]> for Message {
    fn from(b: &[u8]) -> Self {
        Message::Binary(Bytes::copy_from_slice(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_predicates_name_exactly_their_variant() {
        let all = [
            Message::text("t"),
            Message::binary(vec![1]),
            Message::Ping(Bytes::new()),
            Message::Pong(Bytes::new()),
            Message::Close(None),
        ];
        for (i, msg) in all.iter().enumerate() {
            let kinds = [
                msg.is_text(),
                msg.is_binary(),
                msg.is_ping(),
                msg.is_pong(),
                msg.is_close(),
            ];
            let expected: Vec<bool> = (0..5).map(|k| k == i).collect();
            assert_eq!(kinds.to_vec(), expected, "{msg:?}");
        }
    }

    #[test]
    fn text_views_follow_tungstenite() {
        let close = |reason: &str| Message::Close(Some(CloseFrame::new(CloseCode::Away, reason)));
        for (msg, text, shown) in [
            (Message::text("héllo"), Some("héllo"), "héllo"),
            (Message::binary(b"bytes".to_vec()), Some("bytes"), "bytes"),
            (Message::Ping(Bytes::from_static(b"p")), Some("p"), "p"),
            (Message::Pong(Bytes::from_static(b"")), Some(""), ""),
            (Message::Close(None), Some(""), ""),
            (close("bye"), Some("bye"), "bye"),
            (
                Message::binary(vec![0xff, 0xfe, 0x00]),
                None,
                "Binary Data<length=3>",
            ),
            (
                Message::Ping(Bytes::from_static(&[0xc3])),
                None,
                "Binary Data<length=1>",
            ),
        ] {
            match text {
                Some(text) => {
                    assert_eq!(msg.to_text().unwrap(), text, "{msg:?}");
                    assert_eq!(msg.clone().into_text().unwrap().as_str(), text, "{msg:?}");
                }
                None => {
                    assert!(matches!(msg.to_text(), Err(Error::Utf8(_))), "{msg:?}");
                    assert!(
                        matches!(msg.clone().into_text(), Err(Error::Utf8(_))),
                        "{msg:?}"
                    );
                }
            }
            assert_eq!(msg.to_string(), shown, "{msg:?}");
        }
    }

    #[test]
    fn a_close_frame_shows_its_reason_only_when_it_has_one() {
        assert_eq!(CloseFrame::new(CloseCode::Normal, "").to_string(), "1000");
        assert_eq!(
            CloseFrame::new(CloseCode::Away, "server restart").to_string(),
            "1001 (server restart)"
        );
    }
}
