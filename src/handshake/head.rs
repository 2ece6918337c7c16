//! Reading an HTTP head incrementally, and helpers over its header fields.
//!
//! [`HeadReader`] finds where a head ends without parsing it: bytes arrive in
//! pieces of any size, each piece is scanned once, and the size limits are
//! checked before anything is buffered. Only the complete head is handed to
//! `httparse`, once, so a peer that sends one byte at a time costs O(n)
//! instead of O(n²).

use std::fmt;

use bytes::Bytes;
use http::header::{AsHeaderName, HeaderMap, HeaderName, HeaderValue};

use crate::error::HandshakeError;

/// The largest head (start line, header fields and the empty line that ends
/// them) accepted, in bytes.
pub(crate) const MAX_HEAD_SIZE: usize = 64 * 1024;

/// The longest line of a head, in bytes, not counting its line terminator.
pub(crate) const MAX_LINE_SIZE: usize = 8 * 1024;

/// The most header fields a head may have (the start line not counted).
pub(crate) const MAX_HEADERS: usize = 100;

/// A complete head and what followed it.
#[derive(Debug)]
pub(crate) struct Head {
    /// The head, up to and including the empty line that ends it.
    pub(crate) bytes: Vec<u8>,
    /// The bytes that came after the head in the same input: the start of
    /// the frame stream (or of a body). Never dropped.
    pub(crate) leftover: Bytes,
}

/// Accumulates the bytes of an HTTP head until the empty line that ends it.
///
/// A line ends with LF, optionally preceded by CR (httparse accepts both);
/// the head ends with the first empty line after a non-empty one. Empty
/// lines before the start line are skipped, as RFC 9112 section 2.2 allows
/// and httparse does.
///
/// Each [`push`](Self::push) scans only the bytes it is given, keeping the
/// position within the current line as state, so the total work is linear
/// in the size of the head however it is split. The limits
/// ([`MAX_HEAD_SIZE`], [`MAX_LINE_SIZE`], [`MAX_HEADERS`]) are checked while
/// scanning, before the new bytes are copied into the buffer.
#[derive(Default)]
pub(crate) struct HeadReader {
    /// The head so far: every byte pushed, none of them past the end.
    buf: Vec<u8>,
    /// Bytes of the current line seen so far, not counting its LF.
    line_len: usize,
    /// Whether the last byte of the current line so far is CR.
    last_cr: bool,
    /// Non-empty lines completed: the start line, then header fields.
    lines: usize,
    /// Bytes examined by [`HeadReader::push`], to prove linearity.
    #[cfg(test)]
    scanned: usize,
}

impl HeadReader {
    /// An empty reader.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Adds `input`. Returns the head and the bytes after it once the empty
    /// line that ends it has arrived, `Ok(None)` while more bytes are
    /// needed.
    ///
    /// # Errors
    ///
    /// [`HandshakeError::HeadTooLarge`] as soon as a limit is crossed; the
    /// offending bytes are not buffered. The reader must not be used after
    /// an error or after it returned the head.
    pub(crate) fn push(&mut self, input: &[u8]) -> Result<Option<Head>, HandshakeError> {
        match self.scan(input)? {
            None => {
                self.buf.extend_from_slice(input);
                Ok(None)
            }
            Some(end) => {
                let mut bytes = std::mem::take(&mut self.buf);
                bytes.extend_from_slice(&input[..end]);
                let leftover = Bytes::copy_from_slice(&input[end..]);
                Ok(Some(Head { bytes, leftover }))
            }
        }
    }

    /// How many bytes `push` has examined in total.
    #[cfg(test)]
    pub(crate) fn scanned(&self) -> usize {
        self.scanned
    }

    /// Scans `input` as the continuation of the head. Returns the index just
    /// past the head's final LF if the head ends inside `input`.
    fn scan(&mut self, input: &[u8]) -> Result<Option<usize>, HandshakeError> {
        let mut pos = 0;
        while pos < input.len() {
            let rest = &input[pos..];
            // Never look further than the limits allow: a line may hold
            // MAX_LINE_SIZE bytes, a CR and its LF, and the head as a whole
            // MAX_HEAD_SIZE bytes.
            let line_room = (MAX_LINE_SIZE + 2).saturating_sub(self.line_len);
            let head_room = MAX_HEAD_SIZE.saturating_sub(self.buf.len() + pos);
            let window = rest.len().min(line_room).min(head_room);
            let Some(lf) = rest[..window].iter().position(|&b| b == b'\n') else {
                #[cfg(test)]
                {
                    self.scanned += window;
                }
                if window < rest.len() {
                    return Err(HandshakeError::HeadTooLarge);
                }
                self.line_len += window;
                self.last_cr = rest.last() == Some(&b'\r');
                // A trailing CR may still turn out to end the line.
                if self.line_len - usize::from(self.last_cr) > MAX_LINE_SIZE {
                    return Err(HandshakeError::HeadTooLarge);
                }
                return Ok(None);
            };
            #[cfg(test)]
            {
                self.scanned += lf + 1;
            }
            let ends_with_cr = if lf > 0 {
                rest[lf - 1] == b'\r'
            } else {
                self.last_cr
            };
            let content = self.line_len + lf - usize::from(ends_with_cr);
            if content > MAX_LINE_SIZE {
                return Err(HandshakeError::HeadTooLarge);
            }
            pos += lf + 1;
            self.line_len = 0;
            self.last_cr = false;
            if content == 0 {
                if self.lines > 0 {
                    return Ok(Some(pos));
                }
            } else {
                self.lines += 1;
                if self.lines > MAX_HEADERS + 1 {
                    return Err(HandshakeError::HeadTooLarge);
                }
            }
        }
        Ok(None)
    }
}

impl Head {
    /// The bytes after the first `parsed_len` bytes of the head, which
    /// httparse found to be the whole head: normally just the leftover.
    pub(crate) fn into_leftover(self, parsed_len: usize) -> Bytes {
        match self.bytes.get(parsed_len..) {
            None | Some([]) => self.leftover,
            Some(rest) => {
                let mut joined = Vec::with_capacity(rest.len() + self.leftover.len());
                joined.extend_from_slice(rest);
                joined.extend_from_slice(&self.leftover);
                Bytes::from(joined)
            }
        }
    }
}

impl fmt::Debug for HeadReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeadReader")
            .field("buffered", &self.buf.len())
            .field("lines", &self.lines)
            .finish_non_exhaustive()
    }
}

/// Converts httparse's header fields into a [`HeaderMap`], keeping their
/// order and repetitions. `None` if a name or value is not acceptable to
/// `http`.
pub(crate) fn header_map(headers: &[httparse::Header<'_>]) -> Option<HeaderMap> {
    let mut map = HeaderMap::with_capacity(headers.len());
    for header in headers {
        let name = HeaderName::from_bytes(header.name.as_bytes()).ok()?;
        let value = HeaderValue::from_bytes(header.value).ok()?;
        map.append(name, value);
    }
    Some(map)
}

/// The elements of the comma-separated list formed by every `name` field of
/// `headers` (RFC 9110 section 5.3), trimmed, empty elements skipped.
pub(crate) fn list_elements<'a>(
    headers: &'a HeaderMap,
    name: impl AsHeaderName,
) -> impl Iterator<Item = &'a [u8]> + 'a {
    headers
        .get_all(name)
        .into_iter()
        .flat_map(|value| value.as_bytes().split(|&b| b == b','))
        .map(<[u8]>::trim_ascii)
        .filter(|element| !element.is_empty())
}

/// Whether the list formed by the `name` fields of `headers` holds `token`,
/// compared ASCII case-insensitively (as `Connection` and `Upgrade` tokens
/// are).
pub(crate) fn has_token(headers: &HeaderMap, name: impl AsHeaderName, token: &str) -> bool {
    list_elements(headers, name).any(|element| element.eq_ignore_ascii_case(token.as_bytes()))
}

/// The value of the single `name` field of `headers`, trimmed. `None` if
/// the field is absent or repeated.
pub(crate) fn single_value(headers: &HeaderMap, name: impl AsHeaderName) -> Option<&[u8]> {
    let mut values = headers.get_all(name).into_iter();
    let first = values.next()?;
    match values.next() {
        None => Some(first.as_bytes().trim_ascii()),
        Some(_) => None,
    }
}

/// Appends `name: value` and CRLF, the value as given. The fields the
/// handshake uses are written in their usual capitalization (`http` keeps
/// names in lower case), since some peers compare them case-sensitively.
pub(crate) fn write_header(out: &mut Vec<u8>, name: &HeaderName, value: &HeaderValue) {
    let name = match name.as_str() {
        "host" => "Host",
        "connection" => "Connection",
        "upgrade" => "Upgrade",
        "content-length" => "Content-Length",
        "content-type" => "Content-Type",
        "sec-websocket-key" => "Sec-WebSocket-Key",
        "sec-websocket-accept" => "Sec-WebSocket-Accept",
        "sec-websocket-version" => "Sec-WebSocket-Version",
        "sec-websocket-protocol" => "Sec-WebSocket-Protocol",
        "sec-websocket-extensions" => "Sec-WebSocket-Extensions",
        other => other,
    };
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    const REQUEST: &[u8] = b"GET /chat HTTP/1.1\r\nHost: example.com\r\nUpgrade: websocket\r\n\r\n";

    /// Feeds `input` in `chunk`-byte pieces; returns the head on completion.
    fn push_chunked(
        input: &[u8],
        chunk: usize,
    ) -> (Result<Option<Head>, HandshakeError>, HeadReader) {
        let mut reader = HeadReader::new();
        for piece in input.chunks(chunk) {
            match reader.push(piece) {
                Ok(None) => {}
                other => return (other, reader),
            }
        }
        (Ok(None), reader)
    }

    /// A head of `headers` header fields whose lines are `line` bytes long.
    fn big_head(headers: usize, line: usize) -> Vec<u8> {
        let mut head = b"GET / HTTP/1.1\r\n".to_vec();
        for i in 0..headers {
            let name = format!("X-Header-{i:04}: ");
            head.extend_from_slice(name.as_bytes());
            head.resize(head.len() + line - name.len(), b'a');
            head.extend_from_slice(b"\r\n");
        }
        head.extend_from_slice(b"\r\n");
        head
    }

    #[test]
    fn whole_head_with_leftover() {
        let mut input = REQUEST.to_vec();
        input.extend_from_slice(&[0x81, 0x80, 1, 2, 3, 4]);
        let head = HeadReader::new().push(&input).unwrap().unwrap();
        assert_eq!(head.bytes, REQUEST);
        assert_eq!(&head.leftover[..], &[0x81, 0x80, 1, 2, 3, 4]);
    }

    #[test]
    fn every_split_gives_the_same_head() {
        let mut input = REQUEST.to_vec();
        input.extend_from_slice(b"tail");
        for chunk in 1..input.len() {
            let (result, _) = push_chunked(&input, chunk);
            let head = result.unwrap().expect("complete");
            assert_eq!(head.bytes, REQUEST, "chunk {chunk}");
            // The leftover is whatever followed the head in the piece that
            // completed it; the rest was never pushed.
            assert!(b"tail".starts_with(&head.leftover), "chunk {chunk}");
        }
    }

    #[test]
    fn needs_the_empty_line() {
        let mut reader = HeadReader::new();
        assert!(
            reader
                .push(&REQUEST[..REQUEST.len() - 1])
                .unwrap()
                .is_none()
        );
        let head = reader.push(b"\n").unwrap().unwrap();
        assert_eq!(head.bytes, REQUEST);
        assert!(head.leftover.is_empty());
    }

    #[test]
    fn bare_lf_line_endings_end_the_head() {
        let input = b"GET / HTTP/1.1\nHost: a\n\nrest";
        let head = HeadReader::new().push(input).unwrap().unwrap();
        assert_eq!(head.bytes, b"GET / HTTP/1.1\nHost: a\n\n");
        assert_eq!(&head.leftover[..], b"rest");
    }

    #[test]
    fn leading_empty_lines_are_skipped() {
        let input = b"\r\n\r\nGET / HTTP/1.1\r\n\r\n";
        let head = HeadReader::new().push(input).unwrap().unwrap();
        assert_eq!(head.bytes, input);
    }

    #[test]
    fn cr_inside_a_line_does_not_end_it() {
        let mut reader = HeadReader::new();
        assert!(
            reader
                .push(b"GET / HTTP/1.1\r\nA: \r\r\n")
                .unwrap()
                .is_none()
        );
        assert!(reader.push(b"\r\n").unwrap().is_some());
    }

    #[test]
    fn one_byte_at_a_time_is_linear() {
        // ~60 KiB in 100 header fields, every byte pushed on its own.
        let head = big_head(MAX_HEADERS, 620);
        assert!(head.len() > 59 * 1024 && head.len() <= MAX_HEAD_SIZE);
        let (result, reader) = push_chunked(&head, 1);
        assert_eq!(result.unwrap().unwrap().bytes, head);
        assert_eq!(reader.scanned(), head.len());
    }

    #[test]
    fn a_huge_input_is_not_scanned_past_the_limit() {
        let input = vec![b'a'; 1 << 20];
        let mut reader = HeadReader::new();
        assert!(matches!(
            reader.push(&input),
            Err(HandshakeError::HeadTooLarge)
        ));
        assert!(reader.scanned() <= MAX_LINE_SIZE + 2);
        assert!(reader.buf.is_empty(), "nothing buffered");
    }

    #[test]
    fn head_size_limit() {
        // 100 header lines of 662 bytes: over 64 KiB.
        let head = big_head(100, 660);
        assert!(head.len() > MAX_HEAD_SIZE);
        for chunk in [1, 7, 4096, head.len()] {
            let (result, reader) = push_chunked(&head, chunk);
            assert!(
                matches!(result, Err(HandshakeError::HeadTooLarge)),
                "chunk {chunk}"
            );
            assert!(reader.buf.len() <= MAX_HEAD_SIZE);
        }
        // Exactly at the limit is fine.
        let mut exact = big_head(99, 600);
        let pad = MAX_HEAD_SIZE - exact.len();
        exact.splice(20..20, std::iter::repeat_n(b'b', pad));
        assert_eq!(exact.len(), MAX_HEAD_SIZE);
        assert!(push_chunked(&exact, 3).0.unwrap().is_some());
    }

    #[test]
    fn line_size_limit() {
        let line = |len: usize, end: &[u8]| {
            let mut head = b"GET / HTTP/1.1\r\nX: ".to_vec();
            head.resize(head.len() + len - 3, b'v');
            head.extend_from_slice(end);
            head.extend_from_slice(b"\r\n");
            head
        };
        for end in [&b"\r\n"[..], b"\n"] {
            for chunk in [1, 5, 100_000] {
                let ok = line(MAX_LINE_SIZE, end);
                assert!(
                    push_chunked(&ok, chunk).0.unwrap().is_some(),
                    "chunk {chunk}"
                );
                let too_long = line(MAX_LINE_SIZE + 1, end);
                let result = push_chunked(&too_long, chunk).0;
                assert!(
                    matches!(result, Err(HandshakeError::HeadTooLarge)),
                    "chunk {chunk}"
                );
            }
        }
    }

    #[test]
    fn an_unfinished_long_line_fails_before_its_end() {
        let mut reader = HeadReader::new();
        assert!(reader.push(b"GET / HTTP/1.1\r\nX: ").unwrap().is_none());
        assert!(reader.push(&[b'v'; MAX_LINE_SIZE - 3]).unwrap().is_none());
        // A CR could still end the line within the limit.
        assert!(reader.push(b"\r").unwrap().is_none());
        assert!(matches!(
            reader.push(b"v"),
            Err(HandshakeError::HeadTooLarge)
        ));
    }

    #[test]
    fn header_count_limit() {
        let ok = big_head(MAX_HEADERS, 20);
        assert!(push_chunked(&ok, 1).0.unwrap().is_some());
        let too_many = big_head(MAX_HEADERS + 1, 20);
        for chunk in [1, too_many.len()] {
            let result = push_chunked(&too_many, chunk).0;
            assert!(
                matches!(result, Err(HandshakeError::HeadTooLarge)),
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn leftover_after_a_shorter_parse() {
        let head = Head {
            bytes: b"ab\n\ncd".to_vec(),
            leftover: Bytes::from_static(b"ef"),
        };
        assert_eq!(&head.into_leftover(4)[..], b"cdef");
        let head = Head {
            bytes: b"ab\n\n".to_vec(),
            leftover: Bytes::from_static(b"ef"),
        };
        assert_eq!(&head.into_leftover(4)[..], b"ef");
    }

    #[test]
    fn header_serialization() {
        let mut out = Vec::new();
        write_header(
            &mut out,
            &http::header::SEC_WEBSOCKET_ACCEPT,
            &HeaderValue::from_static("x=="),
        );
        write_header(
            &mut out,
            &HeaderName::from_static("x-custom"),
            &HeaderValue::from_static("A b"),
        );
        assert_eq!(out, b"Sec-WebSocket-Accept: x==\r\nx-custom: A b\r\n");
    }

    #[test]
    fn token_lists() {
        let mut headers = HeaderMap::new();
        headers.append(
            "connection",
            HeaderValue::from_static("keep-alive, Upgrade"),
        );
        headers.append("upgrade", HeaderValue::from_static("h2c"));
        headers.append("upgrade", HeaderValue::from_static(" ,WebSocket ,"));
        assert!(has_token(&headers, "connection", "upgrade"));
        assert!(!has_token(&headers, "connection", "close"));
        assert!(has_token(&headers, "upgrade", "websocket"));
        assert!(!has_token(&headers, "upgrade", "web"));
        let elements: Vec<&[u8]> = list_elements(&headers, "upgrade").collect();
        assert_eq!(elements, [&b"h2c"[..], b"WebSocket"]);
        assert_eq!(
            single_value(&headers, "connection"),
            Some(&b"keep-alive, Upgrade"[..])
        );
        assert_eq!(single_value(&headers, "upgrade"), None);
        assert_eq!(single_value(&headers, "host"), None);
    }
}
