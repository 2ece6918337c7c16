//! Frame opcodes (RFC 6455 section 5.2).

use std::fmt;

/// The opcode of a frame: what its payload means.
///
/// Reserved opcodes (3–7, 11–15) have no variant: the parser rejects them
/// because no extension we negotiate defines them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpCode {
    /// A continuation of a fragmented message (`0x0`).
    Continuation,
    /// The first frame of a text message (`0x1`).
    Text,
    /// The first frame of a binary message (`0x2`).
    Binary,
    /// A close frame (`0x8`).
    Close,
    /// A ping (`0x9`).
    Ping,
    /// A pong (`0xA`).
    Pong,
}

impl OpCode {
    /// Decodes the low four bits of the first header byte; `None` for a
    /// reserved opcode.
    #[inline]
    pub const fn from_u8(bits: u8) -> Option<Self> {
        Some(match bits {
            0x0 => Self::Continuation,
            0x1 => Self::Text,
            0x2 => Self::Binary,
            0x8 => Self::Close,
            0x9 => Self::Ping,
            0xA => Self::Pong,
            _ => return None,
        })
    }

    /// The four-bit wire value.
    #[inline]
    pub const fn as_u8(self) -> u8 {
        match self {
            Self::Continuation => 0x0,
            Self::Text => 0x1,
            Self::Binary => 0x2,
            Self::Close => 0x8,
            Self::Ping => 0x9,
            Self::Pong => 0xA,
        }
    }

    /// Control frames (close, ping, pong) have the high opcode bit set.
    #[inline]
    pub const fn is_control(self) -> bool {
        self.as_u8() & 0x8 != 0
    }
}

impl fmt::Display for OpCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_defined_opcode_round_trips_and_reserved_ones_are_rejected() {
        for bits in 0u8..16 {
            match OpCode::from_u8(bits) {
                Some(op) => {
                    assert_eq!(op.as_u8(), bits);
                    assert_eq!(op.is_control(), bits >= 8);
                }
                None => assert!(matches!(bits, 3..=7 | 11..=15), "{bits}"),
            }
        }
    }
}
