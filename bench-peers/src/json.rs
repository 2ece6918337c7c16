//! The JSON-like payloads of the compression scenarios: the generator of
//! `benches/deflate.rs` and the codec's unit tests, so the ratios agree.

/// Deterministic JSON-like text of exactly `len` bytes: an array of event
/// records with varying numbers and a handful of repeated keys and values,
/// as chat or market data feeds send. Distinct seeds give distinct texts.
pub(crate) fn json_like(len: usize, seed: u64) -> String {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    const NAMES: [&str; 8] = [
        "alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi",
    ];
    const EVENTS: [&str; 5] = ["login", "logout", "purchase", "view", "update"];
    let mut out = String::with_capacity(len + 256);
    out.push('[');
    while out.len() < len {
        let r = next();
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str(&format!(
            "{{\"id\":{},\"user\":\"{}\",\"event\":\"{}\",\"ts\":{},\"active\":{},\
             \"score\":{}.{:02},\"tags\":[\"t{}\",\"t{}\"]}}",
            r % 100_000,
            NAMES[(r >> 20) as usize % NAMES.len()],
            EVENTS[(r >> 24) as usize % EVENTS.len()],
            1_700_000_000 + (r >> 32) % 10_000_000,
            (r >> 40) & 1 == 1,
            (r >> 41) % 1000,
            (r >> 51) % 100,
            (r >> 8) % 16,
            (r >> 12) % 16,
        ));
    }
    out.truncate(len);
    out
}
