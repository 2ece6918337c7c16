//! `FrameHeader::decode` on arbitrary bytes.
//!
//! Invariants: the result depends only on the bytes the header occupies
//! (every shorter prefix is `Partial`, the header alone parses the same);
//! `Partial` only when the input is shorter than the header it starts;
//! errors only for a reserved opcode or a 64-bit length with its top bit
//! set; `encode` gives bytes that parse back to the same header, and the
//! same bytes as the input when the input used the shortest length form.
//! tungstenite's `FrameHeader::parse` (the skin's, over a `Cursor`) agrees
//! with `decode` and moves the cursor by exactly the header, and
//! `FrameHeader::format` writes what `encode` writes.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use lockgate::frame::{FrameHeader, HeaderParse, MAX_HEADER_LEN, OpCode};
use lockgate::{Detail, ProtocolError};

/// The header length the first two bytes announce.
fn needed(data: &[u8]) -> usize {
    let extended = match data[1] & 0x7F {
        126 => 2,
        127 => 8,
        _ => 0,
    };
    2 + extended + if data[1] & 0x80 != 0 { 4 } else { 0 }
}

/// The skin's `parse` against the core's `decode`: the same header and
/// length, the cursor past the header, or unmoved on a partial header.
fn check_skin_parse(data: &[u8], decoded: &Result<HeaderParse, lockgate::Error>) {
    let mut cursor = Cursor::new(data);
    let parsed = FrameHeader::parse(&mut cursor);
    match (decoded, parsed) {
        (Ok(HeaderParse::Complete(header, n)), Ok(Some((parsed, len)))) => {
            assert_eq!((&parsed, len), (header, header.payload_len));
            assert_eq!(cursor.position(), *n as u64);
            let mut formatted = Vec::new();
            parsed.format(len, &mut formatted).expect("a Vec takes it");
            let mut encoded = [0; MAX_HEADER_LEN];
            let m = header.encode(&mut encoded);
            assert_eq!(formatted, &encoded[..m]);
        }
        (Ok(HeaderParse::Partial), Ok(None)) => assert_eq!(cursor.position(), 0),
        // The same refusal, whichever enum carries it.
        (Err(decoded), Err(parsed)) if decoded.to_string() == parsed.to_string() => {}
        (decoded, parsed) => panic!("decode {decoded:?} but parse {parsed:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let decoded = FrameHeader::decode(data);
    check_skin_parse(data, &decoded);
    match decoded {
        Ok(HeaderParse::Partial) => {
            assert!(data.len() < 2 || data.len() < needed(data));
            if let Some(&first) = data.first() {
                assert!(OpCode::from_u8(first & 0x0F).is_some());
            }
        }
        Ok(HeaderParse::Complete(header, n)) => {
            assert!(data.len() >= 2);
            assert_eq!(n, needed(data));
            assert!(n <= data.len() && n <= MAX_HEADER_LEN);
            assert_eq!(
                FrameHeader::decode(&data[..n]).ok(),
                Some(HeaderParse::Complete(header, n))
            );
            for k in 0..n {
                assert_eq!(
                    FrameHeader::decode(&data[..k]).ok(),
                    Some(HeaderParse::Partial)
                );
            }
            assert!(header.payload_len >> 63 == 0);
            assert_eq!(header.opcode.as_u8(), data[0] & 0x0F);

            let mut encoded = [0; MAX_HEADER_LEN];
            let m = header.encode(&mut encoded);
            assert_eq!(m, header.encoded_len());
            assert_eq!(
                FrameHeader::decode(&encoded[..m]).ok(),
                Some(HeaderParse::Complete(header, m))
            );
            let shortest = match data[1] & 0x7F {
                126 => header.payload_len >= 126,
                127 => header.payload_len > 0xFFFF,
                _ => true,
            };
            if shortest {
                assert_eq!(&encoded[..m], &data[..n]);
            } else {
                assert!(m < n);
            }
        }
        Err(lockgate::Error::Protocol(
            ProtocolError::UnknownDataFrameType(op) | ProtocolError::UnknownControlFrameType(op),
        )) => {
            assert_eq!(op, data[0] & 0x0F);
            assert!(OpCode::from_u8(op).is_none());
        }
        Err(error) if matches!(error.detail(), Some(Detail::InvalidPayloadLength)) => {
            assert!(OpCode::from_u8(data[0] & 0x0F).is_some());
            assert!(data[1] & 0x7F == 127 && data[2] & 0x80 != 0);
            assert!(data.len() >= needed(data));
        }
        Err(other) => panic!("unexpected error {other:?}"),
    }
});
