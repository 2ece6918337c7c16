//! [`Utf8Stream`]: UTF-8 validation of a message that arrives in pieces.

/// Validates text fed in arbitrary pieces (partial frames, fragments),
/// failing on the first byte that can no longer begin or continue valid
/// UTF-8, without waiting for the message to complete.
#[derive(Debug, Default, Clone)]
pub(crate) struct Utf8Stream {
    /// The start of a code point cut off at the end of the last piece.
    pending: [u8; 4],
    pending_len: u8,
}

/// The text is not UTF-8.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InvalidUtf8;

impl Utf8Stream {
    /// Validates the next piece.
    pub(crate) fn feed(&mut self, mut input: &[u8]) -> Result<(), InvalidUtf8> {
        if self.pending_len > 0 {
            input = self.complete_pending(input)?;
        }
        // The common case, a piece of complete characters, takes the faster
        // check that does not locate errors.
        if simdutf8::basic::from_utf8(input).is_ok() {
            return Ok(());
        }
        match simdutf8::compat::from_utf8(input) {
            Ok(_) => Ok(()),
            Err(e) if e.error_len().is_none() => {
                // The piece ends inside a code point that may still be valid.
                let tail = &input[e.valid_up_to()..];
                self.pending[..tail.len()].copy_from_slice(tail);
                self.pending_len = tail.len() as u8;
                Ok(())
            }
            Err(_) => Err(InvalidUtf8),
        }
    }

    /// Whether no code point is cut off at the end of what was fed.
    #[inline]
    pub(crate) fn at_char_boundary(&self) -> bool {
        self.pending_len == 0
    }

    /// Declares the end of the text; a code point still cut off is invalid.
    pub(crate) fn finish(&mut self) -> Result<(), InvalidUtf8> {
        let complete = self.pending_len == 0;
        self.pending_len = 0;
        if complete { Ok(()) } else { Err(InvalidUtf8) }
    }

    /// Completes the cut-off code point from the front of `input` and returns
    /// the rest of `input`.
    fn complete_pending<'a>(&mut self, input: &'a [u8]) -> Result<&'a [u8], InvalidUtf8> {
        let have = usize::from(self.pending_len);
        let need = utf8_len(self.pending[0]).ok_or(InvalidUtf8)?;
        let take = (need - have).min(input.len());
        self.pending[have..have + take].copy_from_slice(&input[..take]);
        let now = have + take;
        match simdutf8::compat::from_utf8(&self.pending[..now]) {
            Ok(_) => {
                self.pending_len = 0;
                Ok(&input[take..])
            }
            Err(e) if e.error_len().is_none() && now < need => {
                self.pending_len = now as u8;
                Ok(&input[take..])
            }
            Err(_) => Err(InvalidUtf8),
        }
    }
}

/// The length of the code point a leading byte announces.
fn utf8_len(lead: u8) -> Option<usize> {
    match lead {
        0x00..=0x7F => Some(1),
        0xC2..=0xDF => Some(2),
        0xE0..=0xEF => Some(3),
        0xF0..=0xF4 => Some(4),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid_in_pieces(bytes: &[u8], step: usize) -> bool {
        let mut v = Utf8Stream::default();
        bytes.chunks(step.max(1)).all(|c| v.feed(c).is_ok()) && v.finish().is_ok()
    }

    #[test]
    fn agrees_with_std_for_every_split() {
        let samples: &[&[u8]] = &[
            "κόσμε".as_bytes(),
            "Hello-µ@ßöäüàá-UTF-8!!".as_bytes(),
            "\u{10FFFF}\u{FFFF}\u{0800}\u{0080}a".as_bytes(),
            b"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\xed\xa0\x80edited",
            b"\xf4\x90\x80\x80",
            b"\xc0\xaf",
            b"\xe0\x80\xaf",
            b"\xf0\x9f\x98",
            b"\xed\x9f\xbf",
            b"\x80",
            b"abc\xff",
        ];
        for sample in samples {
            let expected = std::str::from_utf8(sample).is_ok();
            for step in 1..=sample.len().max(1) {
                assert_eq!(
                    valid_in_pieces(sample, step),
                    expected,
                    "{sample:?} step {step}"
                );
            }
        }
    }

    #[test]
    fn fails_fast_on_the_first_impossible_byte() {
        // Autobahn 6.4.x: the invalid byte arrives, the rest of the message
        // has not; the validator must already say no.
        let mut v = Utf8Stream::default();
        assert!(v.feed("κόσμε".as_bytes()).is_ok());
        assert_eq!(v.feed(b"\xf4\x90"), Err(InvalidUtf8));
        let mut v = Utf8Stream::default();
        assert!(v.feed(b"\xce").is_ok());
        assert_eq!(v.feed(b"A"), Err(InvalidUtf8));
    }

    #[test]
    fn a_cut_off_code_point_at_the_end_is_invalid() {
        let mut v = Utf8Stream::default();
        assert!(v.feed(b"ok\xe2\x82").is_ok());
        assert_eq!(v.finish(), Err(InvalidUtf8));
    }
}
