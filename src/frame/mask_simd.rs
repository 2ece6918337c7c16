//! Runtime-detected SIMD masking: the crate's only `unsafe` besides the
//! unchecked `&str` view in `Utf8Bytes::as_str`.
//!
//! On x86_64 with AVX2 (detected once at run time, cached by `std`),
//! payloads are XORed 32 bytes per instruction; everything else falls back
//! to the safe word-at-a-time loop in `mask.rs`. Under Miri the SIMD path is
//! compiled out, so Miri checks the safe path and the dispatch.
#![allow(unsafe_code)]

/// Smallest buffer for which the AVX2 path pays off over the word loop.
const AVX2_MIN_LEN: usize = 64;

/// XORs `buf` with `mask` using AVX2 when the CPU has it. Returns `false`
/// (touching nothing) when the caller must use the portable loop.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[inline]
pub(super) fn try_apply_mask(buf: &mut [u8], mask: [u8; 4]) -> bool {
    if buf.len() < AVX2_MIN_LEN || !std::is_x86_feature_detected!("avx2") {
        return false;
    }
    // SAFETY: the AVX2 feature was detected on this CPU just above, which is
    // the only requirement `#[target_feature(enable = "avx2")]` adds.
    unsafe { apply_mask_avx2(buf, mask) };
    true
}

/// The portable build: no SIMD path.
#[cfg(not(all(target_arch = "x86_64", not(miri))))]
#[inline]
pub(super) fn try_apply_mask(_buf: &mut [u8], _mask: [u8; 4]) -> bool {
    false
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
#[target_feature(enable = "avx2")]
unsafe fn apply_mask_avx2(buf: &mut [u8], mask: [u8; 4]) {
    use std::arch::x86_64::{
        __m256i, _mm256_loadu_si256, _mm256_set1_epi32, _mm256_storeu_si256, _mm256_xor_si256,
    };

    let key = _mm256_set1_epi32(i32::from_ne_bytes(mask));
    let mut chunks = buf.chunks_exact_mut(32);
    for chunk in &mut chunks {
        let ptr = chunk.as_mut_ptr().cast::<__m256i>();
        // SAFETY: `chunk` is exactly 32 bytes, in bounds and exclusively
        // borrowed; the unaligned load/store intrinsics accept any address.
        unsafe { _mm256_storeu_si256(ptr, _mm256_xor_si256(_mm256_loadu_si256(ptr), key)) };
    }
    // The remainder starts at a multiple of 32, so the key is not rotated.
    super::mask::apply_mask_words(chunks.into_remainder(), mask);
}
