//! Masking keys for client frames, drawn in batches.
//!
//! RFC 6455 section 5.3 asks for keys from a strong source of entropy that
//! the peer cannot predict. Every key still comes from [`rand::rng`] (a
//! cryptographically secure generator reseeded from the OS); drawing them 64
//! at a time into a per-thread buffer spares each small client message the
//! generator's per-call bookkeeping.

use std::cell::{Cell, RefCell};

use rand::RngCore;

/// Keys drawn per refill.
const BATCH: usize = 64;

thread_local! {
    static KEYS: RefCell<[u8; BATCH * 4]> = const { RefCell::new([0; BATCH * 4]) };
    /// How many keys of `KEYS` are left, taken from the end.
    static LEFT: Cell<usize> = const { Cell::new(0) };
}

/// A fresh, unpredictable masking key. Never hands out the same buffered
/// key twice.
#[inline]
pub(crate) fn mask_key() -> [u8; 4] {
    let left = LEFT.get();
    let at = if left == 0 {
        KEYS.with_borrow_mut(|keys| rand::rng().fill_bytes(keys));
        BATCH - 1
    } else {
        left - 1
    };
    LEFT.set(at);
    KEYS.with_borrow(|keys| {
        let key = &keys[at * 4..at * 4 + 4];
        [key[0], key[1], key[2], key[3]]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_differ_across_refills() {
        let keys: Vec<[u8; 4]> = (0..3 * BATCH).map(|_| mask_key()).collect();
        let mut unique = keys.clone();
        unique.sort_unstable();
        unique.dedup();
        // 192 draws of 32 random bits: a repeat has probability ~4e-6.
        assert!(unique.len() >= keys.len() - 1, "keys repeat: {keys:?}");
        assert!(keys.iter().any(|k| *k != [0; 4]), "the buffer was filled");
    }
}
