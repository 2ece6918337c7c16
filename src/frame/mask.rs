//! Payload masking (RFC 6455 section 5.3).
//!
//! Masking is an XOR with a repeating 4-byte key. Buffers of 64 bytes and
//! more use AVX2 where the CPU has it (`mask_simd.rs`); the portable path
//! works a machine word at a time (the compiler vectorises it with the
//! baseline instruction set) and needs no `unsafe`.

/// XORs `buf` with `mask`, as if `buf` started at byte `offset` of the
/// payload. The offset lets a payload be unmasked in pieces as it arrives.
#[inline]
pub fn apply_mask_at(buf: &mut [u8], mask: [u8; 4], offset: usize) {
    let rotated = rotate_mask(mask, offset);
    apply_mask(buf, rotated);
}

/// XORs `buf` with `mask`, starting at payload byte 0.
#[inline]
pub fn apply_mask(buf: &mut [u8], mask: [u8; 4]) {
    if !super::mask_simd::try_apply_mask(buf, mask) {
        apply_mask_words(buf, mask);
    }
}

/// The portable implementation: 8 bytes at a time, then byte by byte.
#[inline]
pub(super) fn apply_mask_words(buf: &mut [u8], mask: [u8; 4]) {
    // Fixed 8-byte chunks let the compiler vectorise the loop without any
    // alignment tricks; every chunk starts at a multiple of 4, so the key
    // needs no rotation inside the loop.
    let mask_u32 = u32::from_ne_bytes(mask);
    let mask_u64 = (u64::from(mask_u32) << 32) | u64::from(mask_u32);
    let mut chunks = buf.chunks_exact_mut(8);
    for chunk in &mut chunks {
        let word = u64::from_ne_bytes(chunk.try_into().expect("chunk of 8")) ^ mask_u64;
        chunk.copy_from_slice(&word.to_ne_bytes());
    }
    for (i, byte) in chunks.into_remainder().iter_mut().enumerate() {
        // The remainder starts at a multiple of 8, so the key index is `i % 4`.
        *byte ^= mask[i & 3];
    }
}

/// Payloads up to this size are unmasked by [`unmask_and_check_ascii`] in
/// one scalar pass; above it, the SIMD masking and UTF-8 validation win.
pub(crate) const FUSED_CHECK_MAX: usize = 256;

/// Unmasks `buf` (from payload byte 0) with `mask`, if any, and reports
/// whether every unmasked byte is ASCII. For small payloads, where calling
/// the SIMD masking and then the UTF-8 validator costs more than the work,
/// one pass over the data does both: ASCII text is valid UTF-8, so most
/// small text messages need no further validation.
#[inline]
pub(crate) fn unmask_and_check_ascii(buf: &mut [u8], mask: Option<[u8; 4]>) -> bool {
    let Some(mask) = mask else {
        return buf.is_ascii();
    };
    let mask_u32 = u32::from_ne_bytes(mask);
    let mask_u64 = (u64::from(mask_u32) << 32) | u64::from(mask_u32);
    let mut high_bits = 0u64;
    let mut chunks = buf.chunks_exact_mut(8);
    for chunk in &mut chunks {
        let word = u64::from_ne_bytes(chunk.try_into().expect("chunk of 8")) ^ mask_u64;
        chunk.copy_from_slice(&word.to_ne_bytes());
        high_bits |= word;
    }
    let mut tail = 0u8;
    for (i, byte) in chunks.into_remainder().iter_mut().enumerate() {
        *byte ^= mask[i & 3];
        tail |= *byte;
    }
    high_bits & 0x8080_8080_8080_8080 == 0 && tail < 0x80
}

/// Rotates a key so that applying it at payload offset 0 equals applying
/// the original at `offset`.
#[inline]
fn rotate_mask(mask: [u8; 4], offset: usize) -> [u8; 4] {
    let s = offset & 3;
    [
        mask[s],
        mask[(s + 1) & 3],
        mask[(s + 2) & 3],
        mask[(s + 3) & 3],
    ]
}

/// The byte-at-a-time reference the fast paths are tested against.
#[cfg(test)]
pub(crate) fn apply_mask_reference(buf: &mut [u8], mask: [u8; 4], offset: usize) {
    for (i, byte) in buf.iter_mut().enumerate() {
        *byte ^= mask[(offset + i) & 3];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fused_unmask_matches_reference_and_spots_every_non_ascii_byte() {
        let mask = [0x6d, 0xb6, 0xb2, 0x80];
        let ascii: Vec<u8> = (0..=FUSED_CHECK_MAX as u32)
            .map(|i| (i * 7 % 128) as u8)
            .collect();
        for len in 0..=FUSED_CHECK_MAX {
            let plain = &ascii[..len];
            let mut masked = plain.to_vec();
            apply_mask_reference(&mut masked, mask, 0);
            let mut buf = masked.clone();
            assert!(unmask_and_check_ascii(&mut buf, Some(mask)), "len {len}");
            assert_eq!(buf, plain, "len {len}");
            // One high byte anywhere (in a word or in the tail) is seen.
            for at in 0..len {
                let mut text = plain.to_vec();
                text[at] = 0xC3;
                let mut buf = text.clone();
                apply_mask_reference(&mut buf, mask, 0);
                assert!(
                    !unmask_and_check_ascii(&mut buf, Some(mask)),
                    "len {len} at {at}"
                );
                assert_eq!(buf, text, "len {len} at {at}");
            }
            let mut unmasked = plain.to_vec();
            assert!(unmask_and_check_ascii(&mut unmasked, None));
            assert_eq!(unmasked, plain);
        }
    }

    #[test]
    fn matches_reference_at_every_alignment_length_and_offset() {
        let mask = [0x6d, 0xb6, 0xb2, 0x80];
        let source: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
        for start in 0..8 {
            for len in 0..=257 {
                for offset in 0..4 {
                    let mut fast = source.clone();
                    let mut slow = source.clone();
                    apply_mask_at(&mut fast[start..start + len], mask, offset);
                    apply_mask_reference(&mut slow[start..start + len], mask, offset);
                    assert_eq!(fast, slow, "start {start} len {len} offset {offset}");
                }
            }
        }
    }

    #[test]
    fn simd_and_portable_paths_agree_at_every_alignment_and_length() {
        let mask = [0xA5, 0x01, 0xFF, 0x3C];
        let source: Vec<u8> = (0..1200u32).map(|i| (i * 13 + 1) as u8).collect();
        for start in 0..32 {
            for len in (0..=257).chain([511, 512, 513, 1024, 1100]) {
                let mut dispatched = source.clone();
                let mut portable = source.clone();
                let mut reference = source.clone();
                apply_mask(&mut dispatched[start..start + len], mask);
                apply_mask_words(&mut portable[start..start + len], mask);
                apply_mask_reference(&mut reference[start..start + len], mask, 0);
                assert_eq!(dispatched, reference, "dispatch: start {start} len {len}");
                assert_eq!(portable, reference, "portable: start {start} len {len}");
            }
        }
    }

    #[test]
    fn unmasking_in_pieces_equals_unmasking_whole() {
        let mask = [1, 2, 3, 4];
        let data: Vec<u8> = (0..=255).collect();
        let mut whole = data.clone();
        apply_mask(&mut whole, mask);
        let mut pieces = data.clone();
        let mut pos = 0;
        for step in [1, 2, 3, 5, 8, 13, 21, 34, 55, 73, 41] {
            let end = (pos + step).min(pieces.len());
            apply_mask_at(&mut pieces[pos..end], mask, pos);
            pos = end;
        }
        assert_eq!(pos, 256);
        assert_eq!(whole, pieces);
    }

    #[test]
    fn rfc_example_hello() {
        // RFC 6455 section 5.7: a masked "Hello".
        let mut payload = [0x7f, 0x9f, 0x4d, 0x51, 0x58];
        apply_mask(&mut payload, [0x37, 0xfa, 0x21, 0x3d]);
        assert_eq!(&payload, b"Hello");
    }
}
