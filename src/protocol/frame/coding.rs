//! Opcodes and close codes under tungstenite's path: [`OpCode`] split
//! into [`Data`] and [`Control`], and [`CloseCode`]. All four are the
//! core's own types ([`crate::frame`]), re-exported.

pub use crate::frame::{CloseCode, Control, Data, OpCode};
