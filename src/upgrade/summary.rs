//! What a refusing peer sent, as one line of an error message: the
//! summaries the handshake and the dial put in their errors. A leaf: it
//! imports nothing of the crate, so `error.rs` can use it for
//! [`Error::Http`](crate::Error::Http)'s message without a circle.

/// "HTTP error: 403 Forbidden (the WebSocket upgrade was refused): <body>".
pub(crate) fn refused_upgrade(response: &http::Response<Option<Vec<u8>>>) -> String {
    let mut message = format!(
        "HTTP error: {} (the WebSocket upgrade was refused)",
        response.status()
    );
    if let Some(body) = response.body().as_deref().filter(|body| !body.is_empty()) {
        message.push_str(": ");
        message.push_str(&summarize_body(body, BODY_SUMMARY));
    }
    message
}

/// At most this many characters of a body appear in an error message.
pub(crate) const BODY_SUMMARY: usize = 120;

/// A body as one line of text for an error message: lossy UTF-8, control
/// characters escaped, whitespace runs folded, cut at `max` characters.
///
/// Decoded as it goes, and only as far as the summary reaches: the body
/// is whatever a refusing peer sent along with its head (a whole read),
/// and decoding all of it at once would cost up to three bytes per byte
/// it sent (each invalid byte becomes a 3-byte U+FFFD).
pub(crate) fn summarize_body(body: &[u8], max: usize) -> String {
    // The same characters as `String::from_utf8_lossy`: one U+FFFD per
    // invalid sequence.
    let chars = body.utf8_chunks().flat_map(|chunk| {
        let invalid = !chunk.invalid().is_empty();
        chunk
            .valid()
            .chars()
            .chain(invalid.then_some(char::REPLACEMENT_CHARACTER))
    });
    let mut out = String::new();
    let mut length = 0;
    let mut last_space = true;
    for c in chars {
        let space = c.is_whitespace();
        if space && last_space {
            continue;
        }
        last_space = space;
        let fitted = if space {
            push_piece(&mut out, &mut length, max, [' '].into_iter())
        } else if c.is_control() {
            push_piece(&mut out, &mut length, max, c.escape_default())
        } else {
            push_piece(&mut out, &mut length, max, [c].into_iter())
        };
        if !fitted {
            break;
        }
    }
    out.truncate(out.trim_end().len());
    out
}

/// Appends `piece` if `length` plus its characters stays within `max`;
/// otherwise ends `out` with an ellipsis and returns `false`.
fn push_piece(
    out: &mut String,
    length: &mut usize,
    max: usize,
    piece: impl ExactSizeIterator<Item = char>,
) -> bool {
    if *length + piece.len() > max {
        out.push('…');
        return false;
    }
    *length += piece.len();
    out.extend(piece);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `summarize_body` written the obvious way, decoding the whole body
    /// first: the reference the incremental one must match.
    fn summarize_whole(body: &[u8], max: usize) -> String {
        let mut out = String::new();
        let mut length = 0;
        let mut last_space = true;
        for c in String::from_utf8_lossy(body).chars() {
            let piece = match c {
                c if c.is_whitespace() && last_space => continue,
                c if c.is_whitespace() => " ".to_owned(),
                c if c.is_control() => c.escape_default().to_string(),
                c => c.to_string(),
            };
            last_space = piece == " ";
            if length + piece.chars().count() > max {
                out.push('…');
                break;
            }
            length += piece.chars().count();
            out.push_str(&piece);
        }
        out.trim_end().to_owned()
    }

    #[test]
    fn body_summaries_decode_as_lossy_utf8_does() {
        let bodies: [&[u8]; 12] = [
            b"",
            b"   ",
            b"plain text",
            b"  two\r\n\r\n  lines\t ",
            b"\xff\xfe\xfd",
            b"\xf0\x90\x80 truncated four-byte sequence",
            b"\xed\xa0\x80 an encoded surrogate",
            b"\xc0\xaf an overlong slash",
            "caf\u{e9} \u{1f600} \u{2028}".as_bytes(),
            b"\x00\x07\x1b[31m escapes \x7f",
            b"ends in the middle of \xe2\x82",
            b"x \xff y \xf0\x9f z",
        ];
        for body in bodies {
            for max in [0, 1, 3, 10, 120] {
                assert_eq!(
                    summarize_body(body, max),
                    summarize_whole(body, max),
                    "{body:?}, {max}"
                );
            }
        }
    }
}
