//! Frame opcodes (RFC 6455 section 5.2), in tungstenite's shape: a data or
//! a control opcode, reserved values included.

use std::fmt;

/// The opcode of a frame: what its payload means.
///
/// The shape is tungstenite's (`OpCode::Data(Data::Text)`), so that code
/// ported from it compiles; lockgate's own code names the six defined
/// opcodes through the constants [`OpCode::Text`], [`OpCode::Binary`],
/// [`OpCode::Continuation`], [`OpCode::Close`], [`OpCode::Ping`] and
/// [`OpCode::Pong`], which also work as patterns. The reserved values
/// (3–7, 11–15) exist so that a raw frame can carry one; the parser
/// ([`FrameHeader::decode`](crate::frame::FrameHeader::decode)) refuses
/// them, because no extension we negotiate defines them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpCode {
    /// A data opcode (`0x0`–`0x7`).
    Data(Data),
    /// A control opcode (`0x8`–`0xF`).
    Control(Control),
}

/// A data opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Data {
    /// `0x0`: the continuation of a fragmented message.
    Continue,
    /// `0x1`: the first frame of a text message.
    Text,
    /// `0x2`: the first frame of a binary message.
    Binary,
    /// `0x3`–`0x7`: reserved.
    Reserved(u8),
}

/// A control opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Control {
    /// `0x8`: close.
    Close,
    /// `0x9`: ping.
    Ping,
    /// `0xA`: pong.
    Pong,
    /// `0xB`–`0xF`: reserved.
    Reserved(u8),
}

// The defined opcodes by their RFC names. Constants rather than functions
// so that they work in patterns (`OpCode::Text | OpCode::Binary`), where
// the read path matches on them; named like variants because that is how
// every caller reads them.
#[allow(
    non_upper_case_globals,
    reason = "named like the variants they stand for"
)]
impl OpCode {
    /// A continuation of a fragmented message (`0x0`).
    pub const Continuation: OpCode = OpCode::Data(Data::Continue);
    /// The first frame of a text message (`0x1`).
    pub const Text: OpCode = OpCode::Data(Data::Text);
    /// The first frame of a binary message (`0x2`).
    pub const Binary: OpCode = OpCode::Data(Data::Binary);
    /// A close frame (`0x8`).
    pub const Close: OpCode = OpCode::Control(Control::Close);
    /// A ping (`0x9`).
    pub const Ping: OpCode = OpCode::Control(Control::Ping);
    /// A pong (`0xA`).
    pub const Pong: OpCode = OpCode::Control(Control::Pong);
}

impl OpCode {
    /// Decodes the low four bits of the first header byte; `None` for a
    /// reserved opcode (the parser's view: [`From<u8>`](#impl-From<u8>-for-OpCode)
    /// keeps reserved values).
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

    /// The four-bit wire value (the low four bits of a reserved value).
    #[inline]
    pub const fn as_u8(self) -> u8 {
        match self {
            Self::Data(Data::Continue) => 0x0,
            Self::Data(Data::Text) => 0x1,
            Self::Data(Data::Binary) => 0x2,
            Self::Control(Control::Close) => 0x8,
            Self::Control(Control::Ping) => 0x9,
            Self::Control(Control::Pong) => 0xA,
            Self::Data(Data::Reserved(bits)) | Self::Control(Control::Reserved(bits)) => {
                bits & 0x0F
            }
        }
    }

    /// Control frames (close, ping, pong and the reserved 11–15).
    #[inline]
    pub const fn is_control(self) -> bool {
        matches!(self, Self::Control(_))
    }
}

/// tungstenite's names: `TEXT`, `PING`, `RESERVED_DATA_3`, ...
impl fmt::Display for Data {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Data::Continue => f.write_str("CONTINUE"),
            Data::Text => f.write_str("TEXT"),
            Data::Binary => f.write_str("BINARY"),
            Data::Reserved(bits) => write!(f, "RESERVED_DATA_{bits}"),
        }
    }
}

/// tungstenite's names: `CLOSE`, `PING`, `PONG`, `RESERVED_CONTROL_11`, ...
impl fmt::Display for Control {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Control::Close => f.write_str("CLOSE"),
            Control::Ping => f.write_str("PING"),
            Control::Pong => f.write_str("PONG"),
            Control::Reserved(bits) => write!(f, "RESERVED_CONTROL_{bits}"),
        }
    }
}

/// As [`Data`] or [`Control`] displays.
impl fmt::Display for OpCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpCode::Data(data) => data.fmt(f),
            OpCode::Control(control) => control.fmt(f),
        }
    }
}

impl From<OpCode> for u8 {
    #[inline]
    fn from(code: OpCode) -> u8 {
        code.as_u8()
    }
}

/// The low four bits of `byte`, reserved values kept (tungstenite panics
/// on a byte over 15; the high bits are ignored here).
impl From<u8> for OpCode {
    #[inline]
    fn from(byte: u8) -> OpCode {
        match byte & 0x0F {
            bits @ 0x0..=0x7 => OpCode::from_u8(bits).unwrap_or(OpCode::Data(Data::Reserved(bits))),
            bits => OpCode::from_u8(bits).unwrap_or(OpCode::Control(Control::Reserved(bits))),
        }
    }
}

impl From<Data> for OpCode {
    fn from(data: Data) -> OpCode {
        OpCode::Data(data)
    }
}

impl From<Control> for OpCode {
    fn from(control: Control) -> OpCode {
        OpCode::Control(control)
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
                    assert_eq!(OpCode::from(bits), op);
                }
                None => assert!(matches!(bits, 3..=7 | 11..=15), "{bits}"),
            }
        }
    }

    #[test]
    fn every_nibble_round_trips_through_u8_reserved_included() {
        for bits in 0u8..16 {
            let code = OpCode::from(bits);
            assert_eq!(u8::from(code), bits);
            assert_eq!(code.is_control(), bits & 0x8 != 0, "{code}");
            let reserved = matches!(
                code,
                OpCode::Data(Data::Reserved(_)) | OpCode::Control(Control::Reserved(_))
            );
            assert_eq!(reserved, OpCode::from_u8(bits).is_none(), "{code}");
        }
    }

    #[test]
    fn the_named_constants_are_the_variants() {
        assert!(matches!(OpCode::Text, OpCode::Data(Data::Text)));
        assert!(matches!(OpCode::Pong, OpCode::Control(Control::Pong)));
        assert_eq!(OpCode::Continuation.to_string(), "CONTINUE");
    }
}
