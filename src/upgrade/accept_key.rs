//! `Sec-WebSocket-Key` and `Sec-WebSocket-Accept` (RFC 6455 sections 4.1
//! and 4.2.2).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rand::Rng;
use sha1::{Digest, Sha1};

/// The GUID that RFC 6455 section 1.3 appends to the key.
const GUID: &[u8] = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// The `Sec-WebSocket-Accept` value that answers the `Sec-WebSocket-Key`
/// value `key`: the base64 of the SHA-1 of `key` followed by the RFC 6455
/// GUID.
///
/// `key` is the header value as sent, still base64-encoded; it is not
/// decoded.
///
/// # Examples
///
/// ```
/// use lockgate::handshake::derive_accept_key;
///
/// // The example of RFC 6455 section 1.3.
/// let accept = derive_accept_key(b"dGhlIHNhbXBsZSBub25jZQ==");
/// assert_eq!(accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
/// ```
pub fn derive_accept_key(key: &[u8]) -> String {
    let mut sha1 = Sha1::new();
    sha1.update(key);
    sha1.update(GUID);
    STANDARD.encode(sha1.finalize())
}

/// A fresh `Sec-WebSocket-Key`: 16 random bytes, base64-encoded (24
/// characters).
///
/// The bytes come from [`rand::rng`], a cryptographically secure generator
/// seeded by the operating system, as RFC 6455 section 4.1 asks ("randomly
/// selected").
pub fn generate_key() -> String {
    let mut nonce = [0u8; 16];
    rand::rng().fill(&mut nonce);
    STANDARD.encode(nonce)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_6455_example() {
        assert_eq!(
            derive_accept_key(b"dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn accept_key_depends_on_every_key_byte() {
        let a = derive_accept_key(b"dGhlIHNhbXBsZSBub25jZQ==");
        let b = derive_accept_key(b"dGhlIHNhbXBsZSBub25jZQ=");
        assert_ne!(a, b);
        assert_eq!(a.len(), 28, "base64 of a 20-byte SHA-1");
    }

    #[test]
    fn generated_key_is_16_random_bytes_in_base64() {
        let key = generate_key();
        assert_eq!(key.len(), 24);
        assert_eq!(STANDARD.decode(&key).unwrap().len(), 16);
        // Two draws colliding would mean the generator is not random.
        assert_ne!(key, generate_key());
    }
}
