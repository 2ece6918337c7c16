//! Opcodes and close codes under tungstenite's names: [`OpCode`] split
//! into [`Data`] and [`Control`], and [`CloseCode`] (lockgate's own).

use std::fmt;

pub use crate::frame::CloseCode;

/// A frame's opcode, as tungstenite models it: a data or a control opcode,
/// reserved values included (lockgate's own
/// [`frame::OpCode`](crate::frame::OpCode) has no reserved values, which
/// the parser refuses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpCode {
    /// A data opcode (0x0-0x7).
    Data(Data),
    /// A control opcode (0x8-0xF).
    Control(Control),
}

/// A data opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Data {
    /// 0x0: the continuation of a fragmented message.
    Continue,
    /// 0x1: the first frame of a text message.
    Text,
    /// 0x2: the first frame of a binary message.
    Binary,
    /// 0x3-0x7: reserved.
    Reserved(u8),
}

/// A control opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// 0x8: close.
    Close,
    /// 0x9: ping.
    Ping,
    /// 0xA: pong.
    Pong,
    /// 0xB-0xF: reserved.
    Reserved(u8),
}

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

impl fmt::Display for OpCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpCode::Data(data) => data.fmt(f),
            OpCode::Control(control) => control.fmt(f),
        }
    }
}

impl From<OpCode> for u8 {
    fn from(code: OpCode) -> u8 {
        match code {
            OpCode::Data(Data::Continue) => 0,
            OpCode::Data(Data::Text) => 1,
            OpCode::Data(Data::Binary) => 2,
            OpCode::Data(Data::Reserved(bits)) | OpCode::Control(Control::Reserved(bits)) => bits,
            OpCode::Control(Control::Close) => 8,
            OpCode::Control(Control::Ping) => 9,
            OpCode::Control(Control::Pong) => 10,
        }
    }
}

/// The low four bits of `byte` (tungstenite panics on a byte over 15;
/// the high bits are ignored here).
impl From<u8> for OpCode {
    fn from(byte: u8) -> OpCode {
        match byte & 0x0F {
            0 => OpCode::Data(Data::Continue),
            1 => OpCode::Data(Data::Text),
            2 => OpCode::Data(Data::Binary),
            bits @ 3..=7 => OpCode::Data(Data::Reserved(bits)),
            8 => OpCode::Control(Control::Close),
            9 => OpCode::Control(Control::Ping),
            10 => OpCode::Control(Control::Pong),
            bits => OpCode::Control(Control::Reserved(bits)),
        }
    }
}

impl From<crate::frame::OpCode> for OpCode {
    fn from(code: crate::frame::OpCode) -> OpCode {
        OpCode::from(code.as_u8())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_nibble_round_trips_and_agrees_with_lockgates_opcode() {
        for bits in 0u8..16 {
            let code = OpCode::from(bits);
            assert_eq!(u8::from(code), bits);
            assert_eq!(
                matches!(code, OpCode::Control(_)),
                bits & 0x8 != 0,
                "{code}"
            );
            if let Some(own) = crate::frame::OpCode::from_u8(bits) {
                assert_eq!(OpCode::from(own), code);
            }
        }
    }
}
