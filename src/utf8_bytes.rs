//! [`Utf8Bytes`]: text payloads that are `Bytes` underneath.

use std::fmt;
use std::ops::Deref;

use bytes::Bytes;

/// A UTF-8 string stored in [`Bytes`]: cloning and slicing are cheap, and a
/// received text message larger than a few hundred bytes is handed over
/// without copying.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Utf8Bytes(Bytes);

impl Utf8Bytes {
    /// A string known at compile time; no allocation.
    pub const fn from_static(text: &'static str) -> Self {
        Self(Bytes::from_static(text.as_bytes()))
    }

    /// The text.
    #[inline]
    pub fn as_str(&self) -> &str {
        // Re-validating here would make every `Deref` O(n) on the hot path.
        #[allow(unsafe_code)]
        // SAFETY: every constructor takes a `&str`/`String`, validates the
        // bytes, or (`from_validated`) receives bytes the protocol layer has
        // validated; the field is private and `Bytes` is immutable.
        unsafe {
            std::str::from_utf8_unchecked(&self.0)
        }
    }

    /// The underlying bytes.
    #[inline]
    pub fn as_bytes(&self) -> &Bytes {
        &self.0
    }

    /// Gives up the wrapper.
    #[inline]
    pub fn into_bytes(self) -> Bytes {
        self.0
    }

    /// Wraps bytes the caller has already validated.
    #[inline]
    pub(crate) fn from_validated(bytes: Bytes) -> Self {
        debug_assert!(simdutf8::basic::from_utf8(&bytes).is_ok());
        Self(bytes)
    }
}

impl Deref for Utf8Bytes {
    type Target = str;
    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Utf8Bytes {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<[u8]> for Utf8Bytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Utf8Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Utf8Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<String> for Utf8Bytes {
    fn from(s: String) -> Self {
        Self(Bytes::from(s))
    }
}

impl From<&str> for Utf8Bytes {
    fn from(s: &str) -> Self {
        Self(Bytes::copy_from_slice(s.as_bytes()))
    }
}

impl From<&String> for Utf8Bytes {
    fn from(s: &String) -> Self {
        s.as_str().into()
    }
}

impl From<Utf8Bytes> for Bytes {
    fn from(s: Utf8Bytes) -> Bytes {
        s.0
    }
}

/// Checks the bytes (SIMD); only a failure pays for the standard
/// library's error, which says where the first bad byte is.
impl TryFrom<Bytes> for Utf8Bytes {
    type Error = std::str::Utf8Error;
    fn try_from(bytes: Bytes) -> Result<Self, Self::Error> {
        if simdutf8::basic::from_utf8(&bytes).is_err() {
            std::str::from_utf8(&bytes)?;
        }
        Ok(Self(bytes))
    }
}

impl TryFrom<Vec<u8>> for Utf8Bytes {
    type Error = std::str::Utf8Error;
    fn try_from(bytes: Vec<u8>) -> Result<Self, Self::Error> {
        Bytes::from(bytes).try_into()
    }
}

impl TryFrom<bytes::BytesMut> for Utf8Bytes {
    type Error = std::str::Utf8Error;
    fn try_from(bytes: bytes::BytesMut) -> Result<Self, Self::Error> {
        bytes.freeze().try_into()
    }
}

impl AsRef<Bytes> for Utf8Bytes {
    fn as_ref(&self) -> &Bytes {
        &self.0
    }
}

/// Hashed as the `str` it is, so that a map keyed by `Utf8Bytes` finds
/// `&str` keys (`Borrow<str>` requires the two hashes to agree).
impl std::hash::Hash for Utf8Bytes {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl std::borrow::Borrow<str> for Utf8Bytes {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq<str> for Utf8Bytes {
    fn eq(&self, other: &str) -> bool {
        self.0 == other.as_bytes()
    }
}

impl PartialEq<&str> for Utf8Bytes {
    fn eq(&self, other: &&str) -> bool {
        self.0 == other.as_bytes()
    }
}

impl PartialEq<String> for Utf8Bytes {
    fn eq(&self, other: &String) -> bool {
        self.0 == other.as_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_keyed_by_utf8_bytes_finds_str_keys() {
        let mut map = std::collections::HashMap::new();
        map.insert(Utf8Bytes::from("topic"), 1);
        assert_eq!(map.get("topic"), Some(&1));
    }

    #[test]
    fn rejects_invalid_utf8_and_keeps_valid_text_without_copying() {
        assert!(Utf8Bytes::try_from(Bytes::from_static(b"\xff")).is_err());
        let bytes = Bytes::from_static("héllo".as_bytes());
        let text = Utf8Bytes::try_from(bytes.clone()).unwrap();
        assert_eq!(text, "héllo");
        assert_eq!(text.as_bytes().as_ptr(), bytes.as_ptr());
    }
}
