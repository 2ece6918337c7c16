//! The `lockgate.seq.v1` subprotocol: messages with their position in the
//! topic's history, and how a client resumes from one.
//!
//! A client that offers [`SUBPROTOCOL`] to a node with a history receives
//! every data message as one binary frame ([`Sequenced`]): the message's
//! position (8 bytes, big-endian), its kind (1 byte: `1` text, `2`
//! binary), then the payload as published. The 101 response carries the
//! history's epoch in [`EPOCH_HEADER`].
//!
//! A client that reconnects with `?since=EPOCH:POSITION` ([`Since`]) first
//! receives every message after that position that the history holds, then
//! the live ones, with no gap and no duplicate. When the node cannot serve
//! that position (older than the oldest held, or another epoch), it accepts
//! the upgrade and closes at once with [`RESYNC`] and [`RESYNC_REASON`]:
//! the client learns that it missed messages, rather than missing them
//! silently.
//!
//! ```
//! use lockgate_fanout::seq::{Kind, Sequenced, Since};
//!
//! let frame = Sequenced::encode(42, Kind::Text, b"hello");
//! let message = Sequenced::decode(&frame).unwrap();
//! assert_eq!((message.position, message.kind, message.payload), (42, Kind::Text, &b"hello"[..]));
//!
//! let since: Since = "k3x9:42".parse().unwrap();
//! assert_eq!((since.epoch(), since.position()), ("k3x9", 42));
//! assert_eq!(since.to_string(), "k3x9:42");
//! ```

use std::fmt;
use std::str::FromStr;

use bytes::{BufMut, Bytes, BytesMut};
use tokio_lockgate::CloseCode;

/// The subprotocol a client offers to receive positions.
pub const SUBPROTOCOL: &str = "lockgate.seq.v1";

/// The response header (of the 101) that carries the history's epoch.
pub const EPOCH_HEADER: &str = "lockgate-epoch";

/// The close code of a client whose `since` cannot be served.
pub const RESYNC: CloseCode = CloseCode::Library(4001);

/// The close reason that goes with [`RESYNC`].
pub const RESYNC_REASON: &str = "resync";

/// The query parameter that names the position to resume after.
pub const SINCE_PARAM: &str = "since";

/// Bytes before the payload: position and kind.
pub const HEADER_LEN: usize = 9;

/// Whether a message was text or binary when published.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A text message (UTF-8).
    Text,
    /// A binary message.
    Binary,
}

impl Kind {
    /// The kind's byte on the wire.
    pub fn byte(self) -> u8 {
        match self {
            Kind::Text => 1,
            Kind::Binary => 2,
        }
    }

    /// The kind a byte stands for, if any.
    pub fn from_byte(byte: u8) -> Option<Self> {
        match byte {
            1 => Some(Kind::Text),
            2 => Some(Kind::Binary),
            _ => None,
        }
    }
}

/// One message of a `lockgate.seq.v1` connection, borrowed from its frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sequenced<'a> {
    /// Its position in the topic's history: strictly increasing within a
    /// topic, the same on every node, not necessarily contiguous.
    pub position: u64,
    /// Text or binary, as published.
    pub kind: Kind,
    /// The payload, as published.
    pub payload: &'a [u8],
}

impl<'a> Sequenced<'a> {
    /// The frame's message; `None` if it is shorter than its header or its
    /// kind byte is unknown.
    pub fn decode(frame: &'a [u8]) -> Option<Self> {
        let (head, payload) = frame.split_first_chunk::<HEADER_LEN>()?;
        let (position, kind) = head.split_first_chunk::<8>()?;
        Some(Self {
            position: u64::from_be_bytes(*position),
            kind: Kind::from_byte(kind[0])?,
            payload,
        })
    }

    /// The frame of a message: position, kind, payload.
    pub fn encode(position: u64, kind: Kind, payload: &[u8]) -> Bytes {
        let mut frame = BytesMut::with_capacity(HEADER_LEN + payload.len());
        frame.put_u64(position);
        frame.put_u8(kind.byte());
        frame.put_slice(payload);
        frame.freeze()
    }

    /// The position of a frame, without checking the rest.
    pub fn position_of(frame: &[u8]) -> Option<u64> {
        frame.first_chunk::<8>().map(|p| u64::from_be_bytes(*p))
    }
}

/// Where a client resumes: `EPOCH:POSITION`, the value of `?since=`.
/// Position 0 asks for the oldest message held.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Since {
    epoch: String,
    position: u64,
}

impl Since {
    /// After `position` of `epoch`. `None` if `epoch` is empty, contains
    /// `:`, or is not printable ASCII without spaces (what a header value
    /// and a query carry untouched).
    pub fn new(epoch: &str, position: u64) -> Option<Self> {
        is_valid_epoch(epoch).then(|| Self {
            epoch: epoch.to_owned(),
            position,
        })
    }

    /// The history's epoch the position belongs to.
    pub fn epoch(&self) -> &str {
        &self.epoch
    }

    /// The last position the client has; 0 for "from the oldest held".
    pub fn position(&self) -> u64 {
        self.position
    }

    /// The `since` of a request's query string (`a=b&since=E:P`): `None`
    /// when there is none, `Some(Err)` when it is malformed. A client that
    /// sends two is refused, not guessed at.
    pub fn from_query(query: &str) -> Option<Result<Self, SinceError>> {
        let mut found = None;
        for pair in query.split('&') {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            if key == SINCE_PARAM {
                if found.is_some() {
                    return Some(Err(SinceError(())));
                }
                found = Some(value.parse());
            }
        }
        found
    }
}

/// Whether `epoch` can be an epoch: 1 to 64 bytes of printable ASCII
/// without space, `:`, `&`, `%` or `#`.
pub fn is_valid_epoch(epoch: &str) -> bool {
    (1..=64).contains(&epoch.len())
        && epoch
            .bytes()
            .all(|b| b.is_ascii_graphic() && !matches!(b, b':' | b'&' | b'%' | b'#'))
}

impl fmt::Display for Since {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.epoch, self.position)
    }
}

/// A `since` that is not `EPOCH:POSITION`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinceError(());

impl fmt::Display for SinceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("`since` must be EPOCH:POSITION (the epoch from the Lockgate-Epoch header, a position received)")
    }
}

impl std::error::Error for SinceError {}

impl FromStr for Since {
    type Err = SinceError;

    fn from_str(s: &str) -> Result<Self, SinceError> {
        let (epoch, position) = s.split_once(':').ok_or(SinceError(()))?;
        // Digits only: no sign, no spaces, no overflow.
        if position.is_empty() || !position.bytes().all(|b| b.is_ascii_digit()) {
            return Err(SinceError(()));
        }
        let position = position.parse().map_err(|_| SinceError(()))?;
        Self::new(epoch, position).ok_or(SinceError(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_short_or_unknown_ones_are_refused() {
        for (position, kind, payload) in [
            (1, Kind::Text, &b""[..]),
            (u64::MAX, Kind::Binary, &b"\x00\x01"[..]),
            (7, Kind::Text, "é".as_bytes()),
        ] {
            let frame = Sequenced::encode(position, kind, payload);
            assert_eq!(frame.len(), HEADER_LEN + payload.len());
            assert_eq!(Sequenced::position_of(&frame), Some(position));
            assert_eq!(
                Sequenced::decode(&frame),
                Some(Sequenced {
                    position,
                    kind,
                    payload
                })
            );
        }
        assert_eq!(
            &Sequenced::encode(258, Kind::Binary, b"x")[..],
            b"\0\0\0\0\0\0\x01\x02\x02x"
        );
        for bad in [&b""[..], b"\0\0\0\0\0\0\0\x01", b"\0\0\0\0\0\0\0\x01\x03"] {
            assert_eq!(Sequenced::decode(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn since_parses_epoch_colon_digits_only() {
        for (text, parsed) in [
            ("e1:0", Some(("e1", 0))),
            ("e1:18446744073709551615", Some(("e1", u64::MAX))),
            ("AbC-9_z.~:12", Some(("AbC-9_z.~", 12))),
            ("e1:18446744073709551616", None),
            ("e1:", None),
            (":5", None),
            ("e1:+5", None),
            ("e1:-5", None),
            ("e1: 5", None),
            ("e1:5:6", None),
            ("e 1:5", None),
            ("e1", None),
            ("", None),
        ] {
            let got = text.parse::<Since>().ok();
            assert_eq!(
                got.as_ref().map(|s| (s.epoch(), s.position())),
                parsed,
                "{text:?}"
            );
            if let Some(since) = got {
                assert_eq!(since.to_string(), text);
            }
        }
    }

    #[test]
    fn since_comes_from_the_query_once() {
        let parse = |q: &str| Since::from_query(q).map(|r| r.map(|s| s.to_string()));
        assert_eq!(parse("since=e:3"), Some(Ok("e:3".into())));
        assert_eq!(parse("a=1&since=e:3&b"), Some(Ok("e:3".into())));
        assert_eq!(parse("a=1"), None);
        assert_eq!(parse(""), None);
        assert!(matches!(parse("since=e:3&since=e:4"), Some(Err(_))));
        assert!(matches!(parse("since"), Some(Err(_))));
        assert!(matches!(parse("since=e%3A3"), Some(Err(_))));
    }

    proptest::proptest! {
        #[test]
        fn any_frame_or_query_decodes_without_panicking(bytes: Vec<u8>, query in "\\PC{0,80}") {
            if let Some(m) = Sequenced::decode(&bytes) {
                proptest::prop_assert_eq!(&Sequenced::encode(m.position, m.kind, m.payload)[..], &bytes[..]);
            }
            if let Some(Ok(since)) = Since::from_query(&query) {
                proptest::prop_assert_eq!(since.to_string().parse::<Since>().ok(), Some(since));
            }
        }
    }
}
