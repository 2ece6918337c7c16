//! Parsing and encoding close frame payloads (RFC 6455 section 5.5.1).

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::{Detail, Error, ProtocolError};
use crate::frame::CloseCode;
use crate::message::CloseFrame;
use crate::utf8_bytes::Utf8Bytes;

/// The longest reason that fits a control frame after the 2-byte code.
pub(crate) const MAX_REASON_LEN: usize = 123;

/// Decodes a received close payload: empty, or a valid code plus a UTF-8
/// reason.
pub(crate) fn parse_close(payload: Bytes) -> Result<Option<CloseFrame>, Error> {
    match payload.len() {
        0 => Ok(None),
        1 => Err(ProtocolError::InvalidCloseSequence.into()),
        _ => {
            let raw = u16::from_be_bytes([payload[0], payload[1]]);
            let code = CloseCode::from(raw);
            if !code.is_allowed_on_wire() {
                return Err(Detail::InvalidCloseCode(raw).into());
            }
            let reason = Utf8Bytes::try_from(payload.slice(2..))
                .map_err(|_| Error::peer_not_utf8("a close reason"))?;
            Ok(Some(CloseFrame { code, reason }))
        }
    }
}

/// Encodes a close payload, cutting an over-long reason at a character
/// boundary so the frame stays within the 125-byte control frame limit.
pub(crate) fn encode_close(frame: Option<&CloseFrame>) -> Bytes {
    let Some(frame) = frame else {
        return Bytes::new();
    };
    let reason = frame.reason.as_str();
    let mut cut = reason.len().min(MAX_REASON_LEN);
    while !reason.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut buf = BytesMut::with_capacity(2 + cut);
    buf.put_u16(frame.code.into());
    buf.put_slice(&reason.as_bytes()[..cut]);
    buf.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_validates() {
        let frame = CloseFrame::new(CloseCode::Normal, "bye");
        assert_eq!(
            parse_close(encode_close(Some(&frame))).ok(),
            Some(Some(frame))
        );
        assert_eq!(parse_close(Bytes::new()).ok(), Some(None));
        assert!(matches!(
            parse_close(Bytes::from_static(&[3])),
            Err(Error::Protocol(ProtocolError::InvalidCloseSequence))
        ));
        let error = parse_close(Bytes::from_static(&[3, 0xE7])).unwrap_err();
        assert!(
            matches!(error.detail(), Some(Detail::InvalidCloseCode(999))),
            "{error:?}"
        );
        let error = parse_close(Bytes::from_static(&[3, 0xE8, 0xFF])).unwrap_err();
        assert!(matches!(error, Error::Utf8(_)), "{error:?}");
        assert_eq!(error.close_code(), Some(CloseCode::Invalid));
    }

    #[test]
    fn long_reasons_are_cut_on_a_char_boundary() {
        let frame = CloseFrame::new(CloseCode::Away, "é".repeat(100));
        let payload = encode_close(Some(&frame));
        assert!(payload.len() <= 125);
        assert!(parse_close(payload).is_ok());
    }
}
