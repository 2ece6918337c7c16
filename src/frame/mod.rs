//! The frame layer: pure functions over bytes, no state and no I/O, and
//! the types they work on: [`FrameHeader`], [`OpCode`] (with [`Data`] and
//! [`Control`]), [`CloseCode`] and the raw [`Frame`]. These are the only
//! ones; the tungstenite-compatible paths re-export them.

mod close_code;
mod header;
mod mask;
mod mask_key;
mod mask_simd;
mod opcode;
mod raw_frame;

pub use close_code::CloseCode;
pub(crate) use header::MAX_CONTROL_PAYLOAD;
pub use header::{FrameHeader, HeaderParse, MAX_HEADER_LEN, encoded_header_len};
pub(crate) use mask::{FUSED_CHECK_MAX, unmask_and_check_ascii};
pub use mask::{apply_mask, apply_mask_at};
pub(crate) use mask_key::mask_key;
pub use opcode::{Control, Data, OpCode};
pub use raw_frame::Frame;
