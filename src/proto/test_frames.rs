//! Frames as a peer sends them and as the context writes them, for the
//! unit tests of the protocol context.

use std::time::Instant;

use crate::frame::{FrameHeader, HeaderParse, OpCode, apply_mask};
use crate::proto::context::WebSocketContext;

/// What a driver does before each wait, as one call for the tests.
pub(super) trait WaitAt {
    /// Tells the context it is `now` ([`WebSocketContext::handle_timeout`]),
    /// then asks for the deadline to wait until
    /// ([`WebSocketContext::poll_timeout`]).
    fn wait_at(&mut self, now: Instant) -> Option<Instant>;
}

impl WaitAt for WebSocketContext {
    fn wait_at(&mut self, now: Instant) -> Option<Instant> {
        self.handle_timeout(now);
        let deadline = self.poll_timeout();
        assert_eq!(self.poll_timeout(), deadline, "a pure query");
        deadline
    }
}

/// A frame from a client (masked, with a zero key), as a server context
/// receives it.
pub(super) fn client_frame(opcode: OpCode, payload: &[u8]) -> Vec<u8> {
    let mut frame = vec![0x80 | opcode.as_u8()];
    match payload.len() {
        n @ 0..=125 => frame.push(0x80 | n as u8),
        n @ 126..=0xffff => {
            frame.push(0x80 | 126);
            frame.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            frame.push(0x80 | 127);
            frame.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    frame.extend_from_slice(&[0; 4]);
    frame.extend_from_slice(payload);
    frame
}

/// A short frame from a server (unmasked), as a client context receives it.
pub(super) fn server_frame(opcode: OpCode, payload: &[u8]) -> Vec<u8> {
    assert!(payload.len() <= 125, "a short frame");
    let mut frame = vec![0x80 | opcode.as_u8(), payload.len() as u8];
    frame.extend_from_slice(payload);
    frame
}

/// The frames in `wire`, unmasked: opcode and payload. Every frame must be
/// complete.
pub(super) fn parse_frames(wire: &[u8]) -> Vec<(OpCode, Vec<u8>)> {
    let mut frames = Vec::new();
    let mut rest = wire;
    while !rest.is_empty() {
        let Ok(HeaderParse::Complete(header, head_len)) = FrameHeader::decode(rest) else {
            panic!("a frame cut short: {rest:?}");
        };
        let end = head_len + header.payload_len as usize;
        let mut payload = rest[head_len..end].to_vec();
        if let Some(mask) = header.mask {
            apply_mask(&mut payload, mask);
        }
        frames.push((header.opcode, payload));
        rest = &rest[end..];
    }
    frames
}
