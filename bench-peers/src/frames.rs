//! Hand-built frames (inputs for the read scenarios and the raw-TCP rows)
//! and a frame parser used only to verify what libraries wrote. Nothing here
//! is timed.

/// Opcode of a text frame.
pub(crate) const OP_TEXT: u8 = 1;
/// Opcode of a binary frame.
pub(crate) const OP_BINARY: u8 = 2;

/// Appends one final frame to `out`, masked with `mask` if given.
pub(crate) fn encode(out: &mut Vec<u8>, opcode: u8, payload: &[u8], mask: Option<[u8; 4]>) {
    put_header(out, 0x80 | opcode, payload.len(), mask.is_some());
    match mask {
        Some(k) => {
            out.extend_from_slice(&k);
            out.extend(payload.iter().enumerate().map(|(i, b)| b ^ k[i & 3]));
        }
        None => out.extend_from_slice(payload),
    }
}

/// Appends a frame header to `out` up to its masking key: `first` (FIN,
/// RSV and opcode), the mask bit and the length of a `len`-byte payload.
pub(crate) fn put_header(out: &mut Vec<u8>, first: u8, len: usize, masked: bool) {
    out.push(first);
    let mbit = if masked { 0x80 } else { 0 };
    if len < 126 {
        out.push(mbit | len as u8);
    } else if len <= 0xffff {
        out.push(mbit | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(mbit | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
}

/// A deterministic, varying masking key for frame `i`.
pub(crate) fn mask_for(i: usize) -> [u8; 4] {
    ((i as u32).wrapping_mul(0x9E37_79B9) ^ 0x5A5A_A5A5).to_be_bytes()
}

/// Walks every frame in `buf`, calling `f(opcode, fin, masked, payload)` with
/// the payload unmasked. Fails on a truncated frame.
pub(crate) fn for_each_frame(
    mut buf: &[u8],
    mut f: impl FnMut(u8, bool, bool, &[u8]) -> Result<(), String>,
) -> Result<usize, String> {
    let mut scratch = Vec::new();
    let mut count = 0;
    while !buf.is_empty() {
        if buf.len() < 2 {
            return Err("truncated frame header".into());
        }
        let fin = buf[0] & 0x80 != 0;
        let opcode = buf[0] & 0x0f;
        let masked = buf[1] & 0x80 != 0;
        let (len, mut at) = match buf[1] & 0x7f {
            126 if buf.len() >= 4 => (usize::from(u16::from_be_bytes([buf[2], buf[3]])), 4),
            127 if buf.len() >= 10 => {
                let mut b = [0u8; 8];
                b.copy_from_slice(&buf[2..10]);
                (u64::from_be_bytes(b) as usize, 10)
            }
            126 | 127 => return Err("truncated extended length".into()),
            n => (usize::from(n), 2),
        };
        let key = if masked {
            if buf.len() < at + 4 {
                return Err("truncated mask".into());
            }
            let k = [buf[at], buf[at + 1], buf[at + 2], buf[at + 3]];
            at += 4;
            Some(k)
        } else {
            None
        };
        if buf.len() < at + len {
            return Err(format!(
                "truncated payload: need {len}, have {}",
                buf.len() - at
            ));
        }
        let payload = &buf[at..at + len];
        match key {
            Some(k) => {
                scratch.clear();
                scratch.extend(payload.iter().enumerate().map(|(i, b)| b ^ k[i & 3]));
                f(opcode, fin, masked, &scratch)?;
            }
            None => f(opcode, fin, masked, payload)?,
        }
        count += 1;
        buf = &buf[at + len..];
    }
    Ok(count)
}

/// A cheap fingerprint of a payload: its length, first and last 8 bytes, the
/// middle byte and every 4093rd byte. Enough to catch a skipped unmask, a
/// wrong length or a reordered message, at a cost of a few nanoseconds per
/// small message.
pub(crate) fn digest(p: &[u8]) -> u64 {
    let n = p.len();
    let mut h = (n as u64).wrapping_mul(0x100_0000_01b3);
    if n >= 8 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&p[..8]);
        let mut b = [0u8; 8];
        b.copy_from_slice(&p[n - 8..]);
        h ^= u64::from_le_bytes(a).rotate_left(7) ^ u64::from_le_bytes(b).rotate_left(29);
    }
    if n > 0 {
        h ^= u64::from(p[n / 2]) << 48;
    }
    let mut i = 4093;
    while i < n {
        h = h.rotate_left(5) ^ u64::from(p[i]);
        i += 4093;
    }
    h
}

/// Folds per-message digests in order, so a reordering changes the result.
pub(crate) fn fold(acc: u64, d: u64) -> u64 {
    acc.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(d)
}

/// The first eight payload bytes as a number (the message index, in the TCP
/// scenarios' payloads).
pub(crate) fn prefix(p: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&p[..8]);
    u64::from_le_bytes(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_then_parse() {
        let mut buf = Vec::new();
        let big = vec![7u8; 70_000];
        encode(&mut buf, OP_TEXT, b"hello", Some([1, 2, 3, 4]));
        encode(&mut buf, OP_BINARY, &big, None);
        encode(&mut buf, OP_BINARY, &big[..300], Some(mask_for(3)));
        let mut seen = Vec::new();
        let n = for_each_frame(&buf, |op, fin, masked, p| {
            assert!(fin);
            seen.push((op, masked, p.to_vec()));
            Ok(())
        })
        .unwrap();
        assert_eq!(n, 3);
        assert_eq!(seen[0], (OP_TEXT, true, b"hello".to_vec()));
        assert_eq!(seen[1], (OP_BINARY, false, big.clone()));
        assert_eq!(seen[2], (OP_BINARY, true, big[..300].to_vec()));
    }
}
