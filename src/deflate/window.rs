//! [`Window`]: the last bytes of one direction's uncompressed stream, kept
//! so a sleeping connection can drop its zlib state and rebuild it later
//! with a preset dictionary (`raw.rs`).

/// The last `min(bytes seen, limit)` bytes pushed, in a ring that never
/// holds more than `limit` bytes.
///
/// A push copies at most `limit` bytes (the end of what is pushed), once;
/// the ring is made contiguous only when it is read, on wake.
#[derive(Debug)]
pub(crate) struct Window {
    /// Grows (doubling, capped at `limit`) until full, then is overwritten
    /// from `start`.
    buf: Vec<u8>,
    /// Where the oldest byte is once `buf` is full; 0 before.
    start: usize,
    /// 2^window_bits: the furthest a DEFLATE distance can reach.
    limit: usize,
}

impl Window {
    /// An empty window of `1 << bits` bytes. Allocates nothing.
    pub(crate) fn new(bits: u8) -> Self {
        Self {
            buf: Vec::new(),
            start: 0,
            limit: 1 << bits,
        }
    }

    /// Appends `data`, forgetting what falls out of the window.
    pub(crate) fn push(&mut self, data: &[u8]) {
        let mut data = &data[data.len().saturating_sub(self.limit)..];
        if self.buf.len() < self.limit {
            let take = data.len().min(self.limit - self.buf.len());
            let needed = self.buf.len() + take;
            if needed > self.buf.capacity() {
                // Doubling keeps the copies linear; capping keeps the
                // memory within the window.
                let cap = needed.max(self.buf.capacity() * 2).min(self.limit);
                self.buf.reserve_exact(cap - self.buf.len());
            }
            self.buf.extend_from_slice(&data[..take]);
            data = &data[take..];
        }
        if data.is_empty() {
            return;
        }
        // Full: overwrite the oldest bytes, wrapping at the end.
        let first = (self.limit - self.start).min(data.len());
        self.buf[self.start..self.start + first].copy_from_slice(&data[..first]);
        let rest = data.len() - first;
        self.buf[..rest].copy_from_slice(&data[first..]);
        self.start = (self.start + data.len()) % self.limit;
    }

    /// The window, oldest byte first. Rotates the ring in place (once per
    /// wake, so not worth a second buffer).
    pub(crate) fn make_contiguous(&mut self) -> &[u8] {
        self.buf.rotate_left(self.start);
        self.start = 0;
        &self.buf
    }

    /// Whether nothing was pushed (or everything was forgotten).
    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Forgets everything and frees the buffer.
    pub(crate) fn clear(&mut self) {
        self.buf = Vec::new();
        self.start = 0;
    }

    /// Bytes allocated: never more than the window.
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.buf.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn holds_the_last_bytes_within_the_limit(
            bits in 1u8..8,
            pushes in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..600), 0..20),
        ) {
            let mut window = Window::new(bits);
            let mut all = Vec::new();
            for push in &pushes {
                window.push(push);
                all.extend_from_slice(push);
                prop_assert!(window.capacity() <= 1 << bits);
                if all.len() % 3 == 0 {
                    // Reading in between must not change what follows.
                    let tail = &all[all.len().saturating_sub(1 << bits)..];
                    prop_assert_eq!(window.make_contiguous(), tail);
                }
            }
            let tail = &all[all.len().saturating_sub(1 << bits)..];
            prop_assert_eq!(window.is_empty(), tail.is_empty());
            prop_assert_eq!(window.make_contiguous(), tail);
        }
    }
}
