//! Masking keys for client frames.
//!
//! RFC 6455 section 5.3 asks for keys from a strong source of entropy that
//! the peer cannot predict. Every key comes from [`rand::rng`]: a
//! cryptographically secure generator, reseeded from the OS, that already
//! hands out its output from a buffered block, so a key costs a few loads.
//! lockgate keeps no key buffer of its own: no state outlives the call.

use rand::RngCore;

/// A fresh, unpredictable masking key.
#[inline]
pub(crate) fn mask_key() -> [u8; 4] {
    rand::rng().next_u32().to_ne_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_do_not_repeat() {
        let keys: Vec<[u8; 4]> = (0..192).map(|_| mask_key()).collect();
        let mut unique = keys.clone();
        unique.sort_unstable();
        unique.dedup();
        // 192 draws of 32 random bits: a repeat has probability ~4e-6.
        assert!(unique.len() >= keys.len() - 1, "keys repeat: {keys:?}");
        assert!(keys.iter().any(|k| *k != [0; 4]), "keys are drawn");
    }
}
