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

use super::limits::HandshakeLimits;
use super::summary::{BODY_SUMMARY, summarize_body};
use crate::error::HandshakeFailure;

/// How many header fields [`parse_fields`] parses into room on the stack;
/// a head with more gets room for exactly its fields on the heap.
const STACK_FIELDS: usize = 32;

/// The head buffer's first capacity: a request line and a header field or
/// two. It doubles from there as the head arrives.
const MIN_HEAD_CAPACITY: usize = 64;

/// A complete head and what followed it.
#[derive(Debug)]
pub(crate) struct Head {
    /// The head, up to and including the empty line that ends it.
    pub(crate) bytes: Vec<u8>,
    /// The bytes that came after the head in the same input: the start of
    /// the frame stream (or of a body). Never dropped.
    pub(crate) leftover: Bytes,
    /// How many header fields it has (within the limit).
    pub(crate) fields: usize,
}

/// Which head a [`HeadReader`] expects: it decides how the first line is
/// checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HeadKind {
    /// `GET <request-target> HTTP/1.1`: what a server reads.
    Request,
    /// `HTTP/1.1 <3 digits>[ <reason>]`: what a client reads.
    Response,
    /// `HTTP/1.0` or `HTTP/1.1`, then as [`HeadKind::Response`]: what an
    /// HTTP proxy answers a CONNECT with (many answer in HTTP/1.0).
    ProxyResponse,
}

/// Where the scan is in the grammar of a head. Every byte other than LF
/// moves it on or is refused; LF ends a line where a line may end.
///
/// ```text
///  Leading --(request)--> Method(0..4) -> Target(n) -SP-> Version(0..8) -> LineEnd
///  Leading --(response)-> Version(0..9) -> Code(0..3) [-SP-> Reason]
///  start line --LF--> Name(0) -tchar-> Name(n) -':'-> Value --LF--> Name(0)
///  Name(0) --LF--> end of the head      Leading --LF--> Leading (skipped)
///  CR where a line may end --> Cr --LF--> as LF;  Cr --anything else--> error
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Grammar {
    /// At the start of a line before the start line: empty lines there are
    /// skipped (RFC 9112 section 2.2).
    Leading,
    /// In the request line, `i` bytes of `GET ` matched.
    Method(usize),
    /// In the request target, `n` bytes long so far.
    Target(usize),
    /// In the version: `i` bytes of `HTTP/1.1` (request line) or of
    /// `HTTP/1.1 ` (status line) matched.
    Version(usize),
    /// After the request line's version: only the line end may follow.
    LineEnd,
    /// In the status code, `i` digits read.
    Code(usize),
    /// In the reason phrase.
    Reason,
    /// In a header field name, `n` bytes long so far (0: at the start of a
    /// line after the start line, where an empty line ends the head).
    Name(usize),
    /// In a header field value.
    Value,
    /// After a CR: only LF may follow. `empty`: the line it ends is empty.
    Cr {
        /// Whether the line this CR ends is empty.
        empty: bool,
    },
}

/// `tchar` (RFC 9110 section 5.6.2), of which methods and field names are
/// made.
fn is_tchar(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// What a request target may hold (httparse's rule: visible ASCII and
/// bytes above 0x7f; no space, no control byte).
fn is_target_byte(byte: u8) -> bool {
    matches!(byte, b'!'..=0x7e | 0x80..=0xff)
}

/// What a field value or a reason phrase may hold: HTAB, SP, visible ASCII
/// and obs-text (RFC 9110 section 5.5); no other control byte.
fn is_text_byte(byte: u8) -> bool {
    matches!(byte, b'\t' | b' '..=0x7e | 0x80..=0xff)
}

/// The only method and version a WebSocket upgrade request may have (RFC
/// 6455 section 4.2.1), with the separator that follows the method.
const REQUEST_METHOD: &[u8] = b"GET ";
const REQUEST_VERSION: &[u8] = b"HTTP/1.1";
/// How a response to an upgrade request must start (section 4.1).
const STATUS_VERSION: &[u8] = b"HTTP/1.1 ";

/// Accumulates the bytes of an HTTP head until the empty line that ends
/// it, refusing it at the first byte that cannot belong to it.
///
/// A line ends with LF, optionally preceded by CR (httparse accepts both);
/// a CR anywhere else is an error. The head ends with the first empty line
/// after a non-empty one. Empty lines before the start line are skipped,
/// as RFC 9112 section 2.2 allows and httparse does.
///
/// Each [`push`](Self::push) examines each byte it is given once, keeping
/// the position in the grammar as state, so the total work is linear in
/// the size of the head however it is split. The [`HandshakeLimits`] and
/// the grammar are checked on each byte before the input is buffered (a
/// header field past the limit is refused at its first byte):
///
/// - a request line is `GET`, SP, a request target (visible ASCII or
///   obs-text), SP, `HTTP/1.1` and the line end. A method other than GET
///   fails as [`HandshakeFailure::BadRequest`] at its first byte that differs
///   from `GET `, and so does `HTTP/1.0` at its `0`; any other byte out of
///   place is [`HandshakeFailure::Parse`];
/// - a status line starts with `HTTP/1.1 ` (else
///   [`HandshakeFailure::BadResponse`] at the first byte that differs), then
///   three digits and an optional SP and reason phrase;
/// - a header field line is a name of `tchar`s, `:`, and a value of HTAB,
///   SP, visible ASCII and obs-text. A line starting with whitespace
///   (obsolete line folding) is refused, as httparse refuses it.
///
/// So a peer that is not speaking HTTP/1.1 (random bytes, TLS, another
/// protocol) is refused at once instead of when the limits or the deadline
/// run out. The complete head is still parsed by httparse, which is never
/// more lenient than this scan.
pub(crate) struct HeadReader {
    kind: HeadKind,
    limits: HandshakeLimits,
    /// The head so far: every byte pushed, none of them past the end.
    buf: Vec<u8>,
    /// Bytes of the current line seen so far, not counting its LF.
    line_len: usize,
    /// Where the next byte falls.
    grammar: Grammar,
    /// Non-empty lines completed: the start line, then header fields.
    lines: usize,
    /// Bytes examined by [`HeadReader::push`], to prove linearity.
    #[cfg(test)]
    scanned: usize,
}

impl HeadReader {
    /// An empty reader for a request head (what a server reads), with the
    /// default limits.
    pub(crate) fn request() -> Self {
        Self::new(HeadKind::Request)
    }

    /// An empty reader for a response head (what a client reads), with
    /// the default limits.
    pub(crate) fn response() -> Self {
        Self::new(HeadKind::Response)
    }

    /// An empty reader for an HTTP proxy's response to CONNECT, with the
    /// default limits.
    pub(crate) fn proxy_response() -> Self {
        Self::new(HeadKind::ProxyResponse)
    }

    fn new(kind: HeadKind) -> Self {
        Self {
            kind,
            limits: HandshakeLimits::default(),
            buf: Vec::new(),
            line_len: 0,
            grammar: Grammar::Leading,
            lines: 0,
            #[cfg(test)]
            scanned: 0,
        }
    }

    /// The same reader with `limits` instead; before the first
    /// [`push`](Self::push).
    pub(crate) fn with_limits(mut self, limits: HandshakeLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Adds `input`. Returns the head and the bytes after it once the empty
    /// line that ends it has arrived, `Ok(None)` while more bytes are
    /// needed.
    ///
    /// # Errors
    ///
    /// [`HandshakeFailure::HeadTooLarge`] as soon as a limit is crossed, and
    /// the errors listed on [`HeadReader`] as soon as a byte breaks the
    /// grammar; the offending bytes are not buffered. The reader must not
    /// be used after an error or after it returned the head.
    pub(crate) fn push(&mut self, input: &[u8]) -> Result<Option<Head>, HandshakeFailure> {
        match self.scan(input)? {
            None => {
                self.reserve(input.len());
                self.buf.extend_from_slice(input);
                Ok(None)
            }
            Some(end) => {
                // The head's final size: no room for more.
                self.buf.reserve_exact(end);
                let mut bytes = std::mem::take(&mut self.buf);
                bytes.extend_from_slice(&input[..end]);
                let leftover = Bytes::copy_from_slice(&input[end..]);
                Ok(Some(Head {
                    bytes,
                    leftover,
                    fields: self.lines - 1,
                }))
            }
        }
    }

    /// Makes room for `more` bytes that passed the scan (so the head stays
    /// within the head size limit): the capacity doubles from
    /// [`MIN_HEAD_CAPACITY`], whatever sizes the pieces come in, and never
    /// passes the limit. A head that stalls costs about what arrived of
    /// it, and one that arrives a byte at a time is copied O(n) times.
    fn reserve(&mut self, more: usize) {
        let needed = self.buf.len() + more;
        if needed > self.buf.capacity() {
            let target = needed
                .next_power_of_two()
                .max(MIN_HEAD_CAPACITY)
                .min(self.limits.get_max_head_size())
                .max(needed);
            self.buf.reserve_exact(target - self.buf.len());
        }
    }

    /// What arrived so far, this `input` included, as one line of text
    /// for an error message: the start of the head, up to its first line
    /// end.
    fn arrived(&self, input: &[u8]) -> String {
        let room = BODY_SUMMARY.saturating_sub(self.buf.len());
        let taken = &input[..input.len().min(room)];
        let start: Vec<u8> = self.buf.iter().chain(taken).copied().collect();
        let first_line = start.split(|&b| b == b'\n').next().unwrap_or_default();
        summarize_body(first_line, BODY_SUMMARY)
    }

    /// How many bytes `push` has examined in total.
    #[cfg(test)]
    pub(crate) fn scanned(&self) -> usize {
        self.scanned
    }

    /// Scans `input` as the continuation of the head. Returns the index just
    /// past the head's final LF if the head ends inside `input`.
    fn scan(&mut self, input: &[u8]) -> Result<Option<usize>, HandshakeFailure> {
        for (pos, &byte) in input.iter().enumerate() {
            #[cfg(test)]
            {
                self.scanned += 1;
            }
            if self.buf.len() + pos >= self.limits.get_max_head_size() {
                return Err(HandshakeFailure::HeadTooLarge);
            }
            // A byte other than a line end at the start of a line after the
            // start line begins a header field: one too many is refused
            // here, before any of it is buffered.
            if self.grammar == Grammar::Name(0)
                && byte != b'\n'
                && byte != b'\r'
                && self.lines > self.limits.get_max_headers()
            {
                return Err(HandshakeFailure::HeadTooLarge);
            }
            if byte == b'\n' {
                if self.end_line()? {
                    return Ok(Some(pos + 1));
                }
            } else {
                // A line holds at most max_line_size bytes before its CR.
                if self.line_len >= self.limits.get_max_line_size() && byte != b'\r' {
                    return Err(HandshakeFailure::HeadTooLarge);
                }
                self.line_len += 1;
                self.grammar = match self.step(byte) {
                    Ok(grammar) => grammar,
                    Err(HandshakeFailure::NotHttp(_)) => {
                        return Err(HandshakeFailure::NotHttp(self.arrived(input)));
                    }
                    Err(error) => return Err(error),
                };
            }
        }
        Ok(None)
    }

    /// Where `byte` (not LF) takes the grammar.
    fn step(&self, byte: u8) -> Result<Grammar, HandshakeFailure> {
        use Grammar as G;
        use httparse::Error as E;
        if byte == b'\r' {
            return match self.grammar {
                G::Leading | G::Name(0) => Ok(G::Cr { empty: true }),
                G::LineEnd | G::Code(3) | G::Reason | G::Value => Ok(G::Cr { empty: false }),
                _ => Err(self.misplaced_line_end()),
            };
        }
        Ok(match self.grammar {
            G::Cr { .. } => return Err(E::NewLine.into()),
            G::Leading if self.kind == HeadKind::Request => method(0, byte)?,
            G::Leading => status_version(self.kind, 0, byte)?,
            G::Method(i) => method(i, byte)?,
            G::Target(n) if is_target_byte(byte) => G::Target(n + 1),
            G::Target(n) if byte == b' ' && n > 0 => G::Version(0),
            G::Target(_) => return Err(E::Token.into()),
            G::Version(i) if self.kind == HeadKind::Request => request_version(i, byte)?,
            G::Version(i) => status_version(self.kind, i, byte)?,
            G::LineEnd => return Err(E::NewLine.into()),
            G::Code(i) if i < 3 && byte.is_ascii_digit() => G::Code(i + 1),
            G::Code(3) if byte == b' ' => G::Reason,
            G::Reason if is_text_byte(byte) => G::Reason,
            G::Code(_) | G::Reason => return Err(E::Status.into()),
            G::Name(n) if is_tchar(byte) => G::Name(n + 1),
            G::Name(n) if byte == b':' && n > 0 => G::Value,
            G::Name(_) => return Err(E::HeaderName.into()),
            G::Value if is_text_byte(byte) => G::Value,
            G::Value => return Err(E::HeaderValue.into()),
        })
    }

    /// The error for a CR or LF where the current line cannot end.
    fn misplaced_line_end(&self) -> HandshakeFailure {
        use httparse::Error as E;
        match self.grammar {
            Grammar::Version(_) if self.kind != HeadKind::Request => not_http11_response(),
            Grammar::Version(_) => E::Version.into(),
            Grammar::Code(_) => E::Status.into(),
            Grammar::Name(_) => E::HeaderName.into(),
            Grammar::Cr { .. } => E::NewLine.into(),
            _ => E::Token.into(),
        }
    }

    /// Ends the current line at an LF. Returns whether it ended the head.
    fn end_line(&mut self) -> Result<bool, HandshakeFailure> {
        let empty = match self.grammar {
            Grammar::Cr { empty } => empty,
            Grammar::Leading | Grammar::Name(0) => true,
            Grammar::LineEnd | Grammar::Code(3) | Grammar::Reason | Grammar::Value => false,
            _ => return Err(self.misplaced_line_end()),
        };
        self.line_len = 0;
        if empty {
            if self.lines > 0 {
                return Ok(true);
            }
            self.grammar = Grammar::Leading;
            return Ok(false);
        }
        self.lines += 1;
        self.grammar = Grammar::Name(0);
        Ok(false)
    }
}

/// The request line's method, `i` bytes of `GET ` matched, taking `byte`.
fn method(i: usize, byte: u8) -> Result<Grammar, HandshakeFailure> {
    if REQUEST_METHOD[i] == byte {
        return Ok(if i + 1 == REQUEST_METHOD.len() {
            Grammar::Target(0)
        } else {
            Grammar::Method(i + 1)
        });
    }
    if is_tchar(byte) || (byte == b' ' && i > 0) {
        // Some other method: RFC 6455 section 4.2.1, "An HTTP/1.1 or
        // higher GET request".
        Err(HandshakeFailure::BadRequest("the method is not GET"))
    } else {
        Err(httparse::Error::Token.into())
    }
}

/// The request line's version, `i` bytes of `HTTP/1.1` matched, taking
/// `byte`.
fn request_version(i: usize, byte: u8) -> Result<Grammar, HandshakeFailure> {
    match REQUEST_VERSION.get(i) {
        Some(&expected) if expected == byte => Ok(if i + 1 == REQUEST_VERSION.len() {
            Grammar::LineEnd
        } else {
            Grammar::Version(i + 1)
        }),
        _ if i + 1 == REQUEST_VERSION.len() && byte == b'0' => {
            Err(HandshakeFailure::BadRequest("HTTP/1.1 is required"))
        }
        _ => Err(httparse::Error::Version.into()),
    }
}

/// The status line's version, `i` bytes of `HTTP/1.1 ` matched, taking
/// `byte`.
/// A proxy's may also be `HTTP/1.0 `.
fn status_version(kind: HeadKind, i: usize, byte: u8) -> Result<Grammar, HandshakeFailure> {
    let http10 = kind == HeadKind::ProxyResponse && i == 7 && byte == b'0';
    match STATUS_VERSION.get(i) {
        Some(&expected) if expected == byte || http10 => Ok(if i + 1 == STATUS_VERSION.len() {
            Grammar::Code(0)
        } else {
            Grammar::Version(i + 1)
        }),
        _ => Err(not_http11_response()),
    }
}

/// RFC 6455 section 4.1: the client expects an HTTP/1.1 response; any
/// other start fails the handshake without waiting for the rest. What
/// arrived is filled in by [`HeadReader::scan`], which has the bytes.
fn not_http11_response() -> HandshakeFailure {
    HandshakeFailure::NotHttp(String::new())
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
            .field("kind", &self.kind)
            .field("buffered", &self.buf.len())
            .field("lines", &self.lines)
            .finish_non_exhaustive()
    }
}

/// Runs `parse` (an httparse parse of a complete head) with room for
/// exactly `fields` header fields ([`Head::fields`]): on the stack for a
/// usual head, on the heap for one with more than [`STACK_FIELDS`]. So the
/// room is what the head holds, never what the limit would allow.
pub(crate) fn parse_fields<'b, R>(
    fields: usize,
    parse: impl FnOnce(&mut [httparse::Header<'b>]) -> R,
) -> R {
    if fields <= STACK_FIELDS {
        let mut room: [httparse::Header<'b>; STACK_FIELDS] = [httparse::EMPTY_HEADER; STACK_FIELDS];
        parse(&mut room[..fields])
    } else {
        let mut room: Vec<httparse::Header<'b>> = vec![httparse::EMPTY_HEADER; fields];
        parse(&mut room)
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

/// Appends `name: value` and CRLF: the name in canonical case
/// ([`write_name`]), the value as given. Every HTTP/1.1 head lockgate
/// writes (requests, responses, refusals, CONNECT) writes its fields
/// through here.
pub(crate) fn write_header(out: &mut Vec<u8>, name: &HeaderName, value: &HeaderValue) {
    write_name(out, name.as_str());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// Names whose registered spelling is not what the word rule of
/// [`write_name`] gives them, in lower case (as `http` stores names) and
/// as written.
const SPELLED: [(&str, &str); 5] = [
    ("www-authenticate", "WWW-Authenticate"),
    ("content-md5", "Content-MD5"),
    ("etag", "ETag"),
    ("te", "TE"),
    ("dnt", "DNT"),
];

/// Appends the field name `name` in canonical case: each `-`-separated
/// word capitalised (`proxy-authorization` as `Proxy-Authorization`,
/// `x-request-id` as `X-Request-Id`), the word `websocket` as `WebSocket`
/// (`Sec-WebSocket-Key`, as RFC 6455 spells it), and the few names of
/// [`SPELLED`] as registered (`WWW-Authenticate`, `Content-MD5`, `ETag`,
/// `TE`, `DNT`).
///
/// Field names are case-insensitive (RFC 9110 section 5.1), but `http`
/// keeps them in lower case and some peers compare them case-sensitively:
/// pproxy, for one, does not see a `proxy-authorization` field and answers
/// 407 to correct credentials. Written straight into `out`: nothing is
/// allocated for a name.
pub(crate) fn write_name(out: &mut Vec<u8>, name: &str) {
    if let Some((_, spelled)) = SPELLED.iter().find(|(lower, _)| *lower == name) {
        out.extend_from_slice(spelled.as_bytes());
        return;
    }
    for (i, word) in name.split('-').enumerate() {
        if i > 0 {
            out.push(b'-');
        }
        if word == "websocket" {
            out.extend_from_slice(b"WebSocket");
            continue;
        }
        let mut bytes = word.bytes();
        if let Some(first) = bytes.next() {
            out.push(first.to_ascii_uppercase());
        }
        out.extend(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upgrade::limits::{DEFAULT_MAX_HEAD_SIZE as MAX_HEAD_SIZE, DEFAULT_MAX_HEADERS};

    /// The line limit of the tests of lines: below the head's.
    const LINE: usize = 8 * 1024;

    /// A request reader whose lines are limited to [`LINE`].
    fn short_lines() -> HeadReader {
        HeadReader::request().with_limits(HandshakeLimits::default().max_line_size(LINE))
    }

    const REQUEST: &[u8] = b"GET /chat HTTP/1.1\r\nHost: example.com\r\nUpgrade: websocket\r\n\r\n";

    /// Feeds `input` in `chunk`-byte pieces; returns the head on completion.
    fn push_chunked(
        input: &[u8],
        chunk: usize,
    ) -> (Result<Option<Head>, HandshakeFailure>, HeadReader) {
        push_chunked_to(HeadReader::request(), input, chunk)
    }

    /// As [`push_chunked`], to `reader`.
    fn push_chunked_to(
        mut reader: HeadReader,
        input: &[u8],
        chunk: usize,
    ) -> (Result<Option<Head>, HandshakeFailure>, HeadReader) {
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
        let head = HeadReader::request().push(&input).unwrap().unwrap();
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
        let mut reader = HeadReader::request();
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
        let head = HeadReader::request().push(input).unwrap().unwrap();
        assert_eq!(head.bytes, b"GET / HTTP/1.1\nHost: a\n\n");
        assert_eq!(&head.leftover[..], b"rest");
    }

    #[test]
    fn leading_empty_lines_are_skipped() {
        let input = b"\r\n\r\nGET / HTTP/1.1\r\n\r\n";
        let head = HeadReader::request().push(input).unwrap().unwrap();
        assert_eq!(head.bytes, input);
    }

    /// What a reader of `kind` makes of `input`, pushed whole and byte by
    /// byte (the two must agree, but for how much of what arrived a
    /// `NotHttp` shows), with how many bytes it examined.
    fn refusal(kind: HeadKind, input: &[u8]) -> (String, usize) {
        let mut whole = HeadReader::new(kind);
        let error = whole.push(input).expect_err("refused");
        let mut reader = HeadReader::new(kind);
        let bytewise = input
            .iter()
            .find_map(|byte| reader.push(std::slice::from_ref(byte)).err())
            .expect("refused byte by byte");
        match (&error, &bytewise) {
            (HandshakeFailure::NotHttp(whole), HandshakeFailure::NotHttp(bytewise)) => {
                assert!(
                    whole.starts_with(bytewise.as_str()),
                    "{whole:?} {bytewise:?}"
                );
            }
            _ => assert_eq!(format!("{error:?}"), format!("{bytewise:?}")),
        }
        assert_eq!(whole.scanned(), reader.scanned());
        assert!(
            whole.buf.is_empty(),
            "nothing of the refused input buffered"
        );
        (format!("{error:?}"), whole.scanned())
    }

    #[test]
    fn input_that_cannot_be_a_head_fails_at_the_first_byte_that_shows_it() {
        use HeadKind::{Request, Response};
        const NOT_GET: &str = "BadRequest(\"the method is not GET\")";
        const NOT_11: &str = "BadRequest(\"HTTP/1.1 is required\")";
        const TOKEN: &str = "Parse(Token)";
        const VERSION: &str = "Parse(Version)";
        const NEWLINE: &str = "Parse(NewLine)";
        const NAME: &str = "Parse(HeaderName)";
        const VALUE: &str = "Parse(HeaderValue)";
        const STATUS: &str = "Parse(Status)";
        // (kind, input, error, the 1-based index of the refused byte)
        let cases: &[(HeadKind, &[u8], &str, usize)] = &[
            (Request, b"\x16\x03\x01\x02\x00", TOKEN, 1),
            (Request, b"\0GET / HTTP/1.1\r\n", TOKEN, 1),
            (Request, b"\r\n\r\n\x01", TOKEN, 5),
            (Request, b" GET", TOKEN, 1),
            (Request, b"POST / HTTP/1.1\r\n", NOT_GET, 1),
            (Request, b"GETS / HTTP/1.1\r\n", NOT_GET, 4),
            (Request, b"GET\r\n", TOKEN, 4),
            (Request, b"GET  / HTTP/1.1\r\n", TOKEN, 5),
            (Request, b"GET /a\0b HTTP/1.1\r\n", TOKEN, 7),
            (Request, b"GET /\x7f HTTP/1.1\r\n", TOKEN, 6),
            (Request, b"GET /\r\n", TOKEN, 6),
            (Request, b"GET / HTTP/1.0\r\n", NOT_11, 14),
            (Request, b"GET / HTTP/2\r\n", VERSION, 12),
            (Request, b"GET / http/1.1\r\n", VERSION, 7),
            (Request, b"GET / HTTP/1.1 \r\n", NEWLINE, 15),
            (Request, b"GET / HTTP/1.1\rX", NEWLINE, 16),
            (Request, b"GET / HTTP/1.1\r\n Host: a\r\n", NAME, 17),
            (Request, b"GET / HTTP/1.1\r\nHost : a\r\n", NAME, 21),
            (Request, b"GET / HTTP/1.1\r\nHost\r\n", NAME, 21),
            (Request, b"GET / HTTP/1.1\r\n: a\r\n", NAME, 17),
            (Request, b"GET / HTTP/1.1\r\nA: \x01\r\n", VALUE, 20),
            (Request, b"GET / HTTP/1.1\r\nA: \r\r\n", NEWLINE, 21),
            (
                Response,
                b"SSH-2.0-OpenSSH\r\nmore",
                "NotHttp(\"SSH-2.0-OpenSSH\")",
                1,
            ),
            (
                Response,
                b"HTTP/1.0 101 OK\r\n",
                "NotHttp(\"HTTP/1.0 101 OK\")",
                8,
            ),
            (Response, b"HTTP/1.1\r\n", "NotHttp(\"HTTP/1.1\")", 9),
            (Response, b"HTTP/1.1 1o1 OK\r\n", STATUS, 11),
            (Response, b"HTTP/1.1 1010 OK\r\n", STATUS, 13),
            (Response, b"HTTP/1.1 10\r\n", STATUS, 12),
            (Response, b"HTTP/1.1 101 OK\x00\r\n", STATUS, 16),
        ];
        for &(kind, input, error, at) in cases {
            let shown = String::from_utf8_lossy(input);
            assert_eq!(refusal(kind, input), (error.to_owned(), at), "{shown:?}");
        }
    }

    #[test]
    fn valid_start_lines_pass() {
        let cases: &[(HeadKind, &[u8])] = &[
            (
                HeadKind::Request,
                b"GET /chat?x=%20&y=\xc3\xa9 HTTP/1.1\r\n\r\n",
            ),
            (
                HeadKind::Request,
                b"GET http://a.example/ HTTP/1.1\nA:\t b \x80\n\n",
            ),
            (HeadKind::Response, b"HTTP/1.1 101\r\n\r\n"),
            (HeadKind::Response, b"HTTP/1.1 101 \r\nA: b\r\n\r\n"),
            (
                HeadKind::Response,
                b"\r\nHTTP/1.1 404 Not\tFound \xff\r\n\r\n",
            ),
        ];
        for &(kind, input) in cases {
            let head = HeadReader::new(kind).push(input);
            assert!(
                matches!(head, Ok(Some(_))),
                "{:?}: {head:?}",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn one_byte_at_a_time_is_linear() {
        // ~60 KiB in 100 header fields, every byte pushed on its own.
        let head = big_head(100, 620);
        assert!(head.len() > 59 * 1024 && head.len() <= MAX_HEAD_SIZE);
        let (result, reader) = push_chunked(&head, 1);
        assert_eq!(result.unwrap().unwrap().bytes, head);
        assert_eq!(reader.scanned(), head.len());
    }

    #[test]
    fn the_buffer_grows_with_the_head_and_stays_within_the_limit() {
        // Whatever the pieces, the capacity is the next power of two of
        // what arrived (at least 64 bytes), and the largest head fits a
        // buffer of exactly the limit.
        let head = big_head(99, 600);
        let mut exact = head.clone();
        exact.splice(
            20..20,
            std::iter::repeat_n(b'b', MAX_HEAD_SIZE - head.len()),
        );
        for chunk in [1, 59, 1000, 4096] {
            let mut reader = HeadReader::request();
            for piece in exact[..exact.len() - 1].chunks(chunk) {
                assert!(reader.push(piece).unwrap().is_none());
                let len = reader.buf.len();
                let expected = len.next_power_of_two().max(MIN_HEAD_CAPACITY);
                assert_eq!(
                    reader.buf.capacity(),
                    expected,
                    "chunk {chunk}, {len} bytes"
                );
            }
            let done = reader.push(b"\n").unwrap().expect("complete");
            assert_eq!(done.bytes.len(), MAX_HEAD_SIZE);
            assert_eq!(done.bytes.capacity(), MAX_HEAD_SIZE, "chunk {chunk}");
        }
    }

    #[test]
    fn a_huge_input_is_not_scanned_past_the_limit() {
        let mut input = b"GET /".to_vec();
        input.resize(1 << 20, b'a');
        let mut reader = short_lines();
        assert!(matches!(
            reader.push(&input),
            Err(HandshakeFailure::HeadTooLarge)
        ));
        assert!(reader.scanned() <= LINE + 2);
        assert!(reader.buf.is_empty(), "nothing buffered");
        // Without a line limit of its own, the head's stops it.
        let mut reader = HeadReader::request();
        assert!(matches!(
            reader.push(&input),
            Err(HandshakeFailure::HeadTooLarge)
        ));
        assert!(reader.scanned() <= MAX_HEAD_SIZE + 1);
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
                matches!(result, Err(HandshakeFailure::HeadTooLarge)),
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
                let ok = line(LINE, end);
                assert!(
                    push_chunked_to(short_lines(), &ok, chunk)
                        .0
                        .unwrap()
                        .is_some(),
                    "chunk {chunk}"
                );
                // The default is no line limit beyond the head's.
                let too_long = line(LINE + 1, end);
                assert!(push_chunked(&too_long, chunk).0.unwrap().is_some());
                let result = push_chunked_to(short_lines(), &too_long, chunk).0;
                assert!(
                    matches!(result, Err(HandshakeFailure::HeadTooLarge)),
                    "chunk {chunk}"
                );
            }
        }
    }

    #[test]
    fn an_unfinished_long_line_fails_before_its_end() {
        let mut reader = short_lines();
        assert!(reader.push(b"GET / HTTP/1.1\r\nX: ").unwrap().is_none());
        assert!(reader.push(&[b'v'; LINE - 3]).unwrap().is_none());
        // A CR could still end the line within the limit.
        assert!(reader.push(b"\r").unwrap().is_none());
        assert!(matches!(
            reader.push(b"v"),
            Err(HandshakeFailure::HeadTooLarge)
        ));
    }

    #[test]
    fn header_count_limit() {
        // (the limit, None for the default)
        for limit in [None, Some(0), Some(3), Some(500)] {
            let max = limit.unwrap_or(DEFAULT_MAX_HEADERS);
            let reader = || {
                let limits = HandshakeLimits::default();
                let limits = limit.map_or(limits, |max| limits.max_headers(max));
                HeadReader::request().with_limits(limits)
            };
            let ok = big_head(max, 20);
            let head = push_chunked_to(reader(), &ok, 1).0.unwrap();
            assert_eq!(head.expect("complete").fields, max, "{limit:?}");
            let too_many = big_head(max + 1, 20);
            // The field past the limit is refused at its first byte.
            let refused_at = too_many.len() - 2 - (20 + 2);
            for chunk in [1, too_many.len()] {
                let (result, reader) = push_chunked_to(reader(), &too_many, chunk);
                assert!(
                    matches!(result, Err(HandshakeFailure::HeadTooLarge)),
                    "{limit:?}, chunk {chunk}"
                );
                assert_eq!(reader.scanned(), refused_at + 1, "{limit:?}");
                assert!(reader.buf.len() <= refused_at, "{limit:?}");
            }
        }
    }

    #[test]
    fn fields_are_parsed_in_room_for_what_arrived() {
        for fields in [0, 1, STACK_FIELDS, STACK_FIELDS + 1, DEFAULT_MAX_HEADERS] {
            let head = big_head(fields, 20);
            let head = HeadReader::request().push(&head).unwrap().unwrap();
            assert_eq!(head.fields, fields);
            let parsed = parse_fields(head.fields, |room| {
                assert_eq!(room.len(), fields);
                let mut request = httparse::Request::new(room);
                let status = request.parse(&head.bytes).unwrap();
                (status.is_complete(), request.headers.len())
            });
            assert_eq!(parsed, (true, fields));
        }
    }

    #[test]
    fn leftover_after_a_shorter_parse() {
        let head = Head {
            bytes: b"ab\n\ncd".to_vec(),
            leftover: Bytes::from_static(b"ef"),
            fields: 0,
        };
        assert_eq!(&head.into_leftover(4)[..], b"cdef");
        let head = Head {
            bytes: b"ab\n\n".to_vec(),
            leftover: Bytes::from_static(b"ef"),
            fields: 0,
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
        assert_eq!(out, b"Sec-WebSocket-Accept: x==\r\nX-Custom: A b\r\n");
    }

    #[test]
    fn names_are_written_in_canonical_case() {
        // (the name as `http` stores it, as written on the wire)
        let cases = [
            ("host", "Host"),
            ("proxy-authorization", "Proxy-Authorization"),
            ("authorization", "Authorization"),
            ("cookie", "Cookie"),
            ("origin", "Origin"),
            ("user-agent", "User-Agent"),
            ("x-request-id", "X-Request-Id"),
            ("sec-websocket-key", "Sec-WebSocket-Key"),
            ("sec-websocket-accept", "Sec-WebSocket-Accept"),
            ("sec-websocket-version", "Sec-WebSocket-Version"),
            ("sec-websocket-protocol", "Sec-WebSocket-Protocol"),
            ("sec-websocket-extensions", "Sec-WebSocket-Extensions"),
            ("content-length", "Content-Length"),
            ("www-authenticate", "WWW-Authenticate"),
            ("proxy-authenticate", "Proxy-Authenticate"),
            ("content-md5", "Content-MD5"),
            ("etag", "ETag"),
            ("te", "TE"),
            ("dnt", "DNT"),
            ("x", "X"),
            ("x--y", "X--Y"),
            ("-x-", "-X-"),
            ("x_y.z", "X_y.z"),
            ("1st-try", "1st-Try"),
        ];
        let mut out = Vec::with_capacity(64);
        for (lower, canonical) in cases {
            out.clear();
            write_name(&mut out, lower);
            assert_eq!(String::from_utf8_lossy(&out), canonical, "{lower}");
            assert!(out.eq_ignore_ascii_case(lower.as_bytes()), "{lower}");
        }
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
