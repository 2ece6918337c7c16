//! Close status codes (RFC 6455 section 7.4).

use std::fmt;

/// The status code of a close frame.
///
/// Codes that may not appear on the wire (1005, 1006, 1015) exist so that an
/// application can describe what happened; [`CloseCode::is_allowed_on_wire`]
/// tells which ones a peer may send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CloseCode {
    /// 1000: the purpose of the connection was fulfilled.
    Normal,
    /// 1001: an endpoint is going away (server shutdown, page navigation).
    Away,
    /// 1002: the peer broke the protocol.
    Protocol,
    /// 1003: a data type the endpoint cannot accept.
    Unsupported,
    /// 1005: no status code was present (never sent on the wire).
    Status,
    /// 1006: the connection dropped without a close frame (never sent).
    Abnormal,
    /// 1007: message data not consistent with its type (bad UTF-8).
    Invalid,
    /// 1008: the message violates the endpoint's policy.
    Policy,
    /// 1009: a message too big to process.
    Size,
    /// 1010: the client expected an extension the server did not negotiate.
    Extension,
    /// 1011: the server hit an unexpected condition.
    Error,
    /// 1012: the service is restarting.
    Restart,
    /// 1013: try again later.
    Again,
    /// 1014: a gateway received an invalid response upstream.
    BadGateway,
    /// 1015: the TLS handshake failed (never sent on the wire).
    Tls,
    /// 1004 and 1016–2999: reserved by the RFC, not valid on the wire.
    Reserved(u16),
    /// 3000–3999: registered with IANA for libraries and frameworks.
    Iana(u16),
    /// 4000–4999: private use by applications.
    Library(u16),
    /// 0–999 and 5000 and above: never valid.
    Bad(u16),
}

impl CloseCode {
    /// Whether a peer may send this code in a close frame. Receiving any other
    /// code is a protocol error (1002).
    pub fn is_allowed_on_wire(self) -> bool {
        !matches!(
            self,
            Self::Status | Self::Abnormal | Self::Tls | Self::Reserved(_) | Self::Bad(_)
        )
    }

    /// [`is_allowed_on_wire`](Self::is_allowed_on_wire), under tungstenite's
    /// name.
    pub fn is_allowed(self) -> bool {
        self.is_allowed_on_wire()
    }
}

impl From<u16> for CloseCode {
    fn from(code: u16) -> Self {
        match code {
            1000 => Self::Normal,
            1001 => Self::Away,
            1002 => Self::Protocol,
            1003 => Self::Unsupported,
            1005 => Self::Status,
            1006 => Self::Abnormal,
            1007 => Self::Invalid,
            1008 => Self::Policy,
            1009 => Self::Size,
            1010 => Self::Extension,
            1011 => Self::Error,
            1012 => Self::Restart,
            1013 => Self::Again,
            1014 => Self::BadGateway,
            1015 => Self::Tls,
            1004 | 1016..=2999 => Self::Reserved(code),
            3000..=3999 => Self::Iana(code),
            4000..=4999 => Self::Library(code),
            _ => Self::Bad(code),
        }
    }
}

impl From<CloseCode> for u16 {
    fn from(code: CloseCode) -> u16 {
        match code {
            CloseCode::Normal => 1000,
            CloseCode::Away => 1001,
            CloseCode::Protocol => 1002,
            CloseCode::Unsupported => 1003,
            CloseCode::Status => 1005,
            CloseCode::Abnormal => 1006,
            CloseCode::Invalid => 1007,
            CloseCode::Policy => 1008,
            CloseCode::Size => 1009,
            CloseCode::Extension => 1010,
            CloseCode::Error => 1011,
            CloseCode::Restart => 1012,
            CloseCode::Again => 1013,
            CloseCode::BadGateway => 1014,
            CloseCode::Tls => 1015,
            CloseCode::Reserved(c)
            | CloseCode::Iana(c)
            | CloseCode::Library(c)
            | CloseCode::Bad(c) => c,
        }
    }
}

impl From<&CloseCode> for u16 {
    fn from(code: &CloseCode) -> u16 {
        (*code).into()
    }
}

impl fmt::Display for CloseCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", u16::from(*self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_u16() {
        for code in 0..=u16::MAX {
            assert_eq!(u16::from(CloseCode::from(code)), code);
        }
    }

    #[test]
    fn wire_validity_matches_rfc_6455_section_7_4() {
        let allowed = |c: u16| CloseCode::from(c).is_allowed_on_wire();
        for c in 0..1000 {
            assert!(!allowed(c), "{c}");
        }
        for c in [
            1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014,
        ] {
            assert!(allowed(c), "{c}");
        }
        for c in [1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535] {
            assert!(!allowed(c), "{c}");
        }
        for c in [3000, 3999, 4000, 4999] {
            assert!(allowed(c), "{c}");
        }
    }
}
