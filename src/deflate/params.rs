//! permessage-deflate negotiation (RFC 7692 section 7.1): the client's
//! offer, the server's choice among offers, the client's check of the
//! answer, and the [`DeflateParams`] both ends agree on.
//!
//! `Sec-WebSocket-Extensions` follows RFC 6455 section 9.1:
//!
//! ```text
//! extension-list = 1#extension
//! extension      = extension-token *( ";" extension-param )
//! extension-param = token [ "=" (token | quoted-string) ]
//! ```
//!
//! A list may span several header lines, commas inside quoted strings do not
//! separate elements, optional whitespace may surround `,`, `;` and `=`, and
//! a quoted value, once unescaped, must be a token. Extension and parameter
//! names are compared ASCII case-insensitively.

use std::borrow::Cow;

use http::HeaderValue;
use http::header::GetAll;

use super::DeflateConfig;
use crate::config::Role;
use crate::error::HandshakeFailure;

/// The extension token of RFC 7692.
const PERMESSAGE_DEFLATE: &str = "permessage-deflate";
const SERVER_NO_CONTEXT_TAKEOVER: &str = "server_no_context_takeover";
const CLIENT_NO_CONTEXT_TAKEOVER: &str = "client_no_context_takeover";
const SERVER_MAX_WINDOW_BITS: &str = "server_max_window_bits";
const CLIENT_MAX_WINDOW_BITS: &str = "client_max_window_bits";

/// The largest LZ77 window, and the one used when nothing limits it.
const MAX_WINDOW_BITS: u8 = 15;

/// The permessage-deflate parameters both ends agreed on in the opening
/// handshake (RFC 7692 section 7.1).
///
/// The server compresses with the `server_*` parameters and the client
/// decompresses with them; the client compresses with the `client_*`
/// parameters and the server decompresses with them. The role helpers
/// ([`compress_window_bits`](Self::compress_window_bits) and the others)
/// pick the right pair for one end.
///
/// Window bits are 8 to 15, recorded as negotiated: 8 is kept as 8 (a
/// compressor that cannot produce an 8-bit window must emit output that
/// is valid for one, such as stored blocks; a decompressor may always use
/// a larger window than its peer compresses with).
///
/// [`Default`] is the agreement on a bare `permessage-deflate`: context
/// takeover in both directions and 15-bit windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeflateParams {
    /// The server compresses every message with an empty window (RFC 7692
    /// section 7.1.1.1): the client may reset its decompressor after each
    /// message.
    pub server_no_context_takeover: bool,
    /// The client compresses every message with an empty window (RFC 7692
    /// section 7.1.1.2): the server may reset its decompressor after each
    /// message.
    pub client_no_context_takeover: bool,
    /// The largest LZ77 window the server compresses with, as a base-2
    /// logarithm, 8 to 15 (RFC 7692 section 7.1.2.1). 15 when nothing
    /// limited it.
    pub server_max_window_bits: u8,
    /// The largest LZ77 window the client compresses with, as a base-2
    /// logarithm, 8 to 15 (RFC 7692 section 7.1.2.2). 15 when nothing
    /// limited it. A client that offered a value and got no value back
    /// records the value it offered, which it committed to.
    pub client_max_window_bits: u8,
}

impl Default for DeflateParams {
    fn default() -> Self {
        Self {
            server_no_context_takeover: false,
            client_no_context_takeover: false,
            server_max_window_bits: MAX_WINDOW_BITS,
            client_max_window_bits: MAX_WINDOW_BITS,
        }
    }
}

impl DeflateParams {
    /// The largest window `role` may compress with: `server_max_window_bits`
    /// for a server, `client_max_window_bits` for a client.
    pub fn compress_window_bits(&self, role: Role) -> u8 {
        match role {
            Role::Server => self.server_max_window_bits,
            Role::Client => self.client_max_window_bits,
        }
    }

    /// The window `role` must be able to decompress with: the peer's
    /// compression window (`client_max_window_bits` for a server,
    /// `server_max_window_bits` for a client).
    pub fn decompress_window_bits(&self, role: Role) -> u8 {
        match role {
            Role::Server => self.client_max_window_bits,
            Role::Client => self.server_max_window_bits,
        }
    }

    /// Whether `role` must compress each message with an empty window:
    /// `server_no_context_takeover` for a server, `client_no_context_takeover`
    /// for a client.
    pub fn compress_no_context_takeover(&self, role: Role) -> bool {
        match role {
            Role::Server => self.server_no_context_takeover,
            Role::Client => self.client_no_context_takeover,
        }
    }

    /// Whether the peer of `role` compresses each message with an empty
    /// window, so `role` may reset its decompressor after each message.
    pub fn decompress_no_context_takeover(&self, role: Role) -> bool {
        match role {
            Role::Server => self.client_no_context_takeover,
            Role::Client => self.server_no_context_takeover,
        }
    }
}

/// The client's `Sec-WebSocket-Extensions` offer for `config`.
///
/// It always announces `client_max_window_bits` (so the server may limit
/// the client's window), with `=N` when the client limits its own window
/// below 15; `server_max_window_bits=N` when the server's window should be
/// below 15; and the no-context-takeover parameters that are set.
pub(crate) fn client_offer(config: &DeflateConfig) -> HeaderValue {
    let mut offer = format!("{PERMESSAGE_DEFLATE}; {CLIENT_MAX_WINDOW_BITS}");
    if config.client_max_window_bits < MAX_WINDOW_BITS {
        offer.push_str(&format!("={}", config.client_max_window_bits));
    }
    if config.server_max_window_bits < MAX_WINDOW_BITS {
        offer.push_str(&format!(
            "; {SERVER_MAX_WINDOW_BITS}={}",
            config.server_max_window_bits
        ));
    }
    if config.server_no_context_takeover {
        offer.push_str(&format!("; {SERVER_NO_CONTEXT_TAKEOVER}"));
    }
    if config.client_no_context_takeover {
        offer.push_str(&format!("; {CLIENT_NO_CONTEXT_TAKEOVER}"));
    }
    HeaderValue::try_from(offer).expect("tokens and digits are a valid header value")
}

/// Checks the server's `Sec-WebSocket-Extensions` answer to
/// [`client_offer`]`(config)` and returns what was agreed: `None` when the
/// server accepted no extension (no field, or only empty ones).
///
/// The answer must be one `permessage-deflate` with known parameters, each
/// at most once, valueless no-context-takeover parameters, window bits of
/// 8 to 15 (token or quoted), `server_max_window_bits` no larger than asked
/// for and `client_max_window_bits` no larger than offered. When the client
/// asked for `server_no_context_takeover` or a `server_max_window_bits`,
/// the answer must grant it (RFC 7692 sections 7.1.1.1 and 7.1.2.1: the
/// server accepts such an offer by including the parameter). A
/// `client_no_context_takeover` the client offered applies even if the
/// server does not repeat it, and so does an offered
/// `client_max_window_bits` value.
pub(crate) fn client_check_response(
    config: &DeflateConfig,
    answers: GetAll<'_, HeaderValue>,
) -> Result<Option<DeflateParams>, HandshakeFailure> {
    let bad = HandshakeFailure::BadResponse;
    let mut accepted = None;
    for value in answers.iter() {
        for element in list_elements(value.as_bytes()) {
            let extension = parse_extension(element).map_err(bad)?;
            if !extension
                .name
                .eq_ignore_ascii_case(PERMESSAGE_DEFLATE.as_bytes())
            {
                return Err(bad("the server accepted an extension that was not offered"));
            }
            if accepted.is_some() {
                return Err(bad("the server accepted permessage-deflate more than once"));
            }
            accepted = Some(extension);
        }
    }
    let Some(extension) = accepted else {
        return Ok(None);
    };
    let answer = read_params(&extension.params).map_err(bad)?;

    if config.server_no_context_takeover && !answer.server_no_context_takeover {
        return Err(bad(
            "permessage-deflate: server_no_context_takeover was requested but not granted",
        ));
    }
    let server_max_window_bits = match answer.server_max_window_bits {
        Some(bits) if bits > config.server_max_window_bits => {
            return Err(bad(
                "permessage-deflate: server_max_window_bits is larger than requested",
            ));
        }
        Some(bits) => bits,
        None if config.server_max_window_bits < MAX_WINDOW_BITS => {
            return Err(bad(
                "permessage-deflate: server_max_window_bits was requested but not answered",
            ));
        }
        None => MAX_WINDOW_BITS,
    };
    let client_max_window_bits = match answer.client_max_window_bits {
        Some(None) => {
            return Err(bad(
                "permessage-deflate: client_max_window_bits in a response needs a value",
            ));
        }
        Some(Some(bits)) if bits > config.client_max_window_bits => {
            return Err(bad(
                "permessage-deflate: client_max_window_bits is larger than offered",
            ));
        }
        Some(Some(bits)) => bits,
        None => config.client_max_window_bits,
    };
    Ok(Some(DeflateParams {
        server_no_context_takeover: answer.server_no_context_takeover,
        client_no_context_takeover: answer.client_no_context_takeover
            || config.client_no_context_takeover,
        server_max_window_bits,
        client_max_window_bits,
    }))
}

/// Chooses among the client's extension offers: the first
/// `permessage-deflate` offer, in order across all `offers` fields, that is
/// well-formed and that `config` can honour. Returns what was agreed and the
/// `Sec-WebSocket-Extensions` value to answer with, or `None` to decline.
///
/// Offers of other extensions are ignored. An offer with an unknown or
/// repeated parameter or an invalid value is declined (RFC 7692 section 5),
/// and so is one without `client_max_window_bits` when `config` limits the
/// client's window below 15 (the server may only send the parameter if the
/// client offered it).
///
/// The answer grants the no-context-takeover parameters offered or required
/// by `config`; `server_max_window_bits` is the smaller of the offered
/// value and `config`'s, and is sent when offered or below 15;
/// `client_max_window_bits` is the smaller of the offered value (15 without
/// one) and `config`'s, sent when offered and below 15.
pub(crate) fn server_negotiate(
    config: &DeflateConfig,
    offers: GetAll<'_, HeaderValue>,
) -> Option<(DeflateParams, HeaderValue)> {
    offers
        .iter()
        .flat_map(|value| list_elements(value.as_bytes()))
        .filter_map(|element| parse_extension(element).ok())
        .filter(|offer| {
            offer
                .name
                .eq_ignore_ascii_case(PERMESSAGE_DEFLATE.as_bytes())
        })
        .filter_map(|offer| read_params(&offer.params).ok())
        .find_map(|offer| accept_offer(config, &offer))
}

/// The answer to one well-formed permessage-deflate offer, `None` if
/// `config` cannot honour it.
fn accept_offer(config: &DeflateConfig, offer: &Params) -> Option<(DeflateParams, HeaderValue)> {
    let client_max_window_bits = match offer.client_max_window_bits {
        // Without the parameter in the offer, the server cannot limit the
        // client's window (RFC 7692 section 7.1.2.2).
        None if config.client_max_window_bits < MAX_WINDOW_BITS => return None,
        None => MAX_WINDOW_BITS,
        Some(offered) => offered
            .unwrap_or(MAX_WINDOW_BITS)
            .min(config.client_max_window_bits),
    };
    let server_max_window_bits = offer
        .server_max_window_bits
        .unwrap_or(MAX_WINDOW_BITS)
        .min(config.server_max_window_bits);
    let params = DeflateParams {
        server_no_context_takeover: offer.server_no_context_takeover
            || config.server_no_context_takeover,
        client_no_context_takeover: offer.client_no_context_takeover
            || config.client_no_context_takeover,
        server_max_window_bits,
        client_max_window_bits,
    };

    let mut answer = PERMESSAGE_DEFLATE.to_owned();
    if params.server_no_context_takeover {
        answer.push_str(&format!("; {SERVER_NO_CONTEXT_TAKEOVER}"));
    }
    if params.client_no_context_takeover {
        answer.push_str(&format!("; {CLIENT_NO_CONTEXT_TAKEOVER}"));
    }
    // A server accepts an offered server_max_window_bits by answering it
    // (RFC 7692 section 7.1.2.1), even with 15.
    if offer.server_max_window_bits.is_some() || server_max_window_bits < MAX_WINDOW_BITS {
        answer.push_str(&format!(
            "; {SERVER_MAX_WINDOW_BITS}={server_max_window_bits}"
        ));
    }
    if client_max_window_bits < MAX_WINDOW_BITS {
        answer.push_str(&format!(
            "; {CLIENT_MAX_WINDOW_BITS}={client_max_window_bits}"
        ));
    }
    let answer = HeaderValue::try_from(answer).expect("tokens and digits are a valid header value");
    Some((params, answer))
}

/// The permessage-deflate parameters of one offer or answer, as written.
#[derive(Debug, Default, PartialEq, Eq)]
struct Params {
    server_no_context_takeover: bool,
    client_no_context_takeover: bool,
    server_max_window_bits: Option<u8>,
    /// `Some(None)`: the parameter without a value (allowed in an offer).
    client_max_window_bits: Option<Option<u8>>,
}

/// Interprets the parameters of a permessage-deflate element. Fails on an
/// unknown or repeated parameter, a value on a no-context-takeover
/// parameter, and a missing or invalid `server_max_window_bits` value or an
/// invalid `client_max_window_bits` value.
fn read_params(params: &[Param<'_>]) -> Result<Params, &'static str> {
    let mut read = Params::default();
    let mut seen = [false; 4];
    for param in params {
        let name = param.name;
        let index = [
            SERVER_NO_CONTEXT_TAKEOVER,
            CLIENT_NO_CONTEXT_TAKEOVER,
            SERVER_MAX_WINDOW_BITS,
            CLIENT_MAX_WINDOW_BITS,
        ]
        .iter()
        .position(|known| name.eq_ignore_ascii_case(known.as_bytes()))
        .ok_or("permessage-deflate: unknown parameter")?;
        if std::mem::replace(&mut seen[index], true) {
            return Err("permessage-deflate: a parameter appears twice");
        }
        let value = param.value.as_deref();
        match index {
            0 | 1 => {
                if value.is_some() {
                    return Err("permessage-deflate: a no_context_takeover parameter has a value");
                }
                if index == 0 {
                    read.server_no_context_takeover = true;
                } else {
                    read.client_no_context_takeover = true;
                }
            }
            2 => {
                let value =
                    value.ok_or("permessage-deflate: server_max_window_bits needs a value")?;
                read.server_max_window_bits = Some(window_bits(value)?);
            }
            _ => {
                read.client_max_window_bits = Some(value.map(window_bits).transpose()?);
            }
        }
    }
    Ok(read)
}

/// A window-bits value: a decimal integer from 8 to 15 without leading
/// zeroes (RFC 7692 sections 7.1.2.1 and 7.1.2.2).
fn window_bits(value: &[u8]) -> Result<u8, &'static str> {
    const INVALID: &str = "permessage-deflate: window bits must be an integer from 8 to 15";
    let well_formed =
        matches!(value.len(), 1 | 2) && value[0] != b'0' && value.iter().all(u8::is_ascii_digit);
    if !well_formed {
        return Err(INVALID);
    }
    let bits = value
        .iter()
        .fold(0u8, |bits, digit| bits * 10 + (digit - b'0'));
    if (8..=MAX_WINDOW_BITS).contains(&bits) {
        Ok(bits)
    } else {
        Err(INVALID)
    }
}

/// One element of an extension list.
#[derive(Debug, PartialEq, Eq)]
struct Extension<'a> {
    name: &'a [u8],
    params: Vec<Param<'a>>,
}

/// One extension parameter; a quoted value is unescaped.
#[derive(Debug, PartialEq, Eq)]
struct Param<'a> {
    name: &'a [u8],
    value: Option<Cow<'a, [u8]>>,
}

/// The non-empty elements of the comma-separated list in one header value.
/// Commas inside quoted strings (where `\` escapes the next byte) do not
/// separate; an unterminated quoted string runs to the end of the value
/// (and fails to parse).
fn list_elements(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = Some(value);
    std::iter::from_fn(move || {
        let input = rest?;
        let mut quoted = false;
        let mut escaped = false;
        let mut end = input.len();
        for (i, &byte) in input.iter().enumerate() {
            if quoted {
                if escaped {
                    escaped = false;
                } else if byte == b'\\' {
                    escaped = true;
                } else if byte == b'"' {
                    quoted = false;
                }
            } else if byte == b'"' {
                quoted = true;
            } else if byte == b',' {
                end = i;
                break;
            }
        }
        rest = input.get(end + 1..);
        Some(&input[..end])
    })
    .filter(|element| !element.trim_ascii().is_empty())
}

/// Parses one list element: `token *( OWS ";" OWS token [ OWS "=" OWS
/// ( token / quoted-string ) ] )`, surrounded by optional whitespace.
fn parse_extension(element: &[u8]) -> Result<Extension<'_>, &'static str> {
    const MALFORMED: &str = "malformed Sec-WebSocket-Extensions";
    let mut cursor = Cursor {
        input: element,
        pos: 0,
    };
    cursor.skip_ows();
    let name = cursor.token().ok_or(MALFORMED)?;
    let mut params = Vec::new();
    loop {
        cursor.skip_ows();
        if cursor.at_end() {
            return Ok(Extension { name, params });
        }
        if !cursor.eat(b';') {
            return Err(MALFORMED);
        }
        cursor.skip_ows();
        let name = cursor.token().ok_or(MALFORMED)?;
        cursor.skip_ows();
        let value = if cursor.eat(b'=') {
            cursor.skip_ows();
            let value = if cursor.peek() == Some(b'"') {
                let value = cursor.quoted_string().ok_or(MALFORMED)?;
                // RFC 6455 section 9.1: "the value after quoted-string
                // unescaping MUST conform to the 'token' ABNF."
                if value.is_empty() || !value.iter().copied().all(is_tchar) {
                    return Err(MALFORMED);
                }
                value
            } else {
                Cow::Borrowed(cursor.token().ok_or(MALFORMED)?)
            };
            Some(value)
        } else {
            None
        };
        params.push(Param { name, value });
    }
}

/// A position in a list element.
struct Cursor<'a> {
    input: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn at_end(&self) -> bool {
        self.pos == self.input.len()
    }

    fn peek(&self) -> Option<u8> {
        self.input.get(self.pos).copied()
    }

    /// Consumes `byte` if it is next.
    fn eat(&mut self, byte: u8) -> bool {
        let next = self.peek() == Some(byte);
        self.pos += usize::from(next);
        next
    }

    /// Skips spaces and tabs.
    fn skip_ows(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
    }

    /// A non-empty token (RFC 9110 section 5.6.2).
    fn token(&mut self) -> Option<&'a [u8]> {
        let start = self.pos;
        while self.peek().is_some_and(is_tchar) {
            self.pos += 1;
        }
        (self.pos > start).then(|| &self.input[start..self.pos])
    }

    /// A quoted string (RFC 9110 section 5.6.4), unescaped. The cursor is
    /// on the opening quote.
    fn quoted_string(&mut self) -> Option<Cow<'a, [u8]>> {
        debug_assert_eq!(self.peek(), Some(b'"'));
        self.pos += 1;
        let start = self.pos;
        let mut unescaped: Option<Vec<u8>> = None;
        loop {
            let byte = self.peek()?;
            self.pos += 1;
            match byte {
                b'"' => {
                    let raw = &self.input[start..self.pos - 1];
                    return Some(unescaped.map_or(Cow::Borrowed(raw), Cow::Owned));
                }
                b'\\' => {
                    let escaped = self
                        .peek()
                        .filter(|&b| is_qdtext(b) || b == b'"' || b == b'\\')?;
                    self.pos += 1;
                    unescaped
                        .get_or_insert_with(|| self.input[start..self.pos - 2].to_vec())
                        .push(escaped);
                }
                byte if is_qdtext(byte) => {
                    if let Some(unescaped) = &mut unescaped {
                        unescaped.push(byte);
                    }
                }
                _ => return None,
            }
        }
    }
}

/// `tchar` of RFC 9110 section 5.6.2.
fn is_tchar(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// `qdtext` of RFC 9110 section 5.6.4: any visible byte but `"` and `\`,
/// space, tab and obs-text.
fn is_qdtext(byte: u8) -> bool {
    matches!(byte, b'\t' | b' ' | 0x21 | 0x23..=0x5b | 0x5d..=0x7e | 0x80..=0xff)
}

#[cfg(test)]
mod tests {
    use http::HeaderMap;
    use http::header::SEC_WEBSOCKET_EXTENSIONS;

    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for value in values {
            map.append(
                SEC_WEBSOCKET_EXTENSIONS,
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    fn negotiate(config: &DeflateConfig, values: &[&str]) -> Option<(DeflateParams, String)> {
        let map = headers(values);
        server_negotiate(config, map.get_all(SEC_WEBSOCKET_EXTENSIONS))
            .map(|(params, answer)| (params, answer.to_str().unwrap().to_owned()))
    }

    fn check(
        config: &DeflateConfig,
        values: &[&str],
    ) -> Result<Option<DeflateParams>, &'static str> {
        let map = headers(values);
        client_check_response(config, map.get_all(SEC_WEBSOCKET_EXTENSIONS)).map_err(|e| match e {
            HandshakeFailure::BadResponse(message) => message,
            other => panic!("expected BadResponse, got {other:?}"),
        })
    }

    fn params(snct: bool, cnct: bool, smwb: u8, cmwb: u8) -> DeflateParams {
        DeflateParams {
            server_no_context_takeover: snct,
            client_no_context_takeover: cnct,
            server_max_window_bits: smwb,
            client_max_window_bits: cmwb,
        }
    }

    #[test]
    fn role_helpers() {
        let p = params(true, false, 10, 12);
        assert_eq!(p.compress_window_bits(Role::Server), 10);
        assert_eq!(p.decompress_window_bits(Role::Client), 10);
        assert_eq!(p.compress_window_bits(Role::Client), 12);
        assert_eq!(p.decompress_window_bits(Role::Server), 12);
        assert!(p.compress_no_context_takeover(Role::Server));
        assert!(p.decompress_no_context_takeover(Role::Client));
        assert!(!p.compress_no_context_takeover(Role::Client));
        assert!(!p.decompress_no_context_takeover(Role::Server));
        assert_eq!(DeflateParams::default(), params(false, false, 15, 15));
    }

    #[test]
    fn offers() {
        let offer = |config: DeflateConfig| client_offer(&config).to_str().unwrap().to_owned();
        assert_eq!(
            offer(DeflateConfig::default()),
            "permessage-deflate; client_max_window_bits"
        );
        assert_eq!(
            offer(DeflateConfig::default().client_max_window_bits(10)),
            "permessage-deflate; client_max_window_bits=10"
        );
        assert_eq!(
            offer(DeflateConfig::default().server_max_window_bits(8)),
            "permessage-deflate; client_max_window_bits; server_max_window_bits=8"
        );
        assert_eq!(
            offer(
                DeflateConfig::default()
                    .server_no_context_takeover(true)
                    .client_no_context_takeover(true)
                    .client_max_window_bits(9)
                    .server_max_window_bits(12)
            ),
            "permessage-deflate; client_max_window_bits=9; server_max_window_bits=12; \
             server_no_context_takeover; client_no_context_takeover"
        );
    }

    #[test]
    fn every_offer_is_accepted_by_the_same_config() {
        // What our client offers, our server with the same config accepts,
        // and our client accepts the answer; both record the same params.
        for snct in [false, true] {
            for cnct in [false, true] {
                for smwb in 8..=15 {
                    for cmwb in 8..=15 {
                        let config = DeflateConfig::default()
                            .server_no_context_takeover(snct)
                            .client_no_context_takeover(cnct)
                            .server_max_window_bits(smwb)
                            .client_max_window_bits(cmwb);
                        let offer = client_offer(&config);
                        let (server, answer) =
                            negotiate(&config, &[offer.to_str().unwrap()]).expect("accepted");
                        assert_eq!(server, params(snct, cnct, smwb, cmwb), "{offer:?}");
                        let client = check(&config, &[&answer]).unwrap().unwrap();
                        assert_eq!(client, server, "{offer:?} -> {answer}");
                    }
                }
            }
        }
    }

    #[test]
    fn list_splitting() {
        let split = |value: &str| -> Vec<String> {
            list_elements(value.as_bytes())
                .map(|e| String::from_utf8(e.to_vec()).unwrap())
                .collect()
        };
        assert_eq!(split("a, b;c=\"x,y\" ,, c"), ["a", " b;c=\"x,y\" ", " c"]);
        assert_eq!(split("a;b=\"\\\",\""), ["a;b=\"\\\",\""]);
        assert_eq!(split("a;b=\"open, c"), ["a;b=\"open, c"]);
        assert_eq!(split(" , "), Vec::<String>::new());
        assert_eq!(split(""), Vec::<String>::new());
    }

    #[test]
    fn element_parsing() {
        let ext = parse_extension(b" x-foo ;a; b = 1 ;c=\"1\\0\"\t").unwrap();
        assert_eq!(ext.name, b"x-foo");
        let params: Vec<(&[u8], Option<&[u8]>)> = ext
            .params
            .iter()
            .map(|p| (p.name, p.value.as_deref()))
            .collect();
        assert_eq!(
            params,
            [
                (&b"a"[..], None),
                (b"b", Some(&b"1"[..])),
                (b"c", Some(b"10"))
            ]
        );
        for bad in [
            "",
            ";a",
            "x;",
            "x;;a",
            "x a",
            "x;a=",
            "x;a=\"\"",
            "x;a=\"1 0\"",
            "x;a=\"10",
            "x;a=1 2",
            "x;a b",
            "x;a=@",
            "x;=1",
        ] {
            assert!(parse_extension(bad.as_bytes()).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn window_bits_values() {
        for (value, bits) in [("8", 8), ("9", 9), ("10", 10), ("15", 15)] {
            assert_eq!(window_bits(value.as_bytes()), Ok(bits));
        }
        for bad in [
            "7", "16", "0", "08", "010", "abc", "", "+9", "-9", "255", "256", "1e1",
        ] {
            assert!(window_bits(bad.as_bytes()).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn server_accepts_a_plain_offer() {
        let config = DeflateConfig::default();
        let (p, answer) = negotiate(&config, &["permessage-deflate"]).unwrap();
        assert_eq!(p, DeflateParams::default());
        assert_eq!(answer, "permessage-deflate");
        // Case-insensitive names.
        let (p, answer) =
            negotiate(&config, &["Permessage-Deflate; Server_No_Context_Takeover"]).unwrap();
        assert_eq!(p, params(true, false, 15, 15));
        assert_eq!(answer, "permessage-deflate; server_no_context_takeover");
    }

    #[test]
    fn server_answers_each_parameter() {
        let config = DeflateConfig::default();
        let cases = [
            (
                "permessage-deflate; server_no_context_takeover",
                params(true, false, 15, 15),
                "permessage-deflate; server_no_context_takeover",
            ),
            (
                "permessage-deflate; client_no_context_takeover",
                params(false, true, 15, 15),
                "permessage-deflate; client_no_context_takeover",
            ),
            (
                "permessage-deflate; server_max_window_bits=10",
                params(false, false, 10, 15),
                "permessage-deflate; server_max_window_bits=10",
            ),
            (
                "permessage-deflate; server_max_window_bits=15",
                params(false, false, 15, 15),
                "permessage-deflate; server_max_window_bits=15",
            ),
            (
                "permessage-deflate; client_max_window_bits",
                params(false, false, 15, 15),
                "permessage-deflate",
            ),
            (
                "permessage-deflate; client_max_window_bits=8",
                params(false, false, 15, 8),
                "permessage-deflate; client_max_window_bits=8",
            ),
            (
                "permessage-deflate; client_max_window_bits=\"10\"; server_max_window_bits=\"9\"",
                params(false, false, 9, 10),
                "permessage-deflate; server_max_window_bits=9; client_max_window_bits=10",
            ),
        ];
        for (offer, expected, answer) in cases {
            let (p, a) = negotiate(&config, &[offer]).unwrap_or_else(|| panic!("{offer}"));
            assert_eq!(p, expected, "{offer}");
            assert_eq!(a, answer, "{offer}");
        }
    }

    #[test]
    fn server_config_limits_the_answer() {
        let config = DeflateConfig::default()
            .server_max_window_bits(10)
            .client_max_window_bits(11)
            .server_no_context_takeover(true)
            .client_no_context_takeover(true);
        let (p, answer) =
            negotiate(&config, &["permessage-deflate; client_max_window_bits"]).unwrap();
        assert_eq!(p, params(true, true, 10, 11));
        assert_eq!(
            answer,
            "permessage-deflate; server_no_context_takeover; client_no_context_takeover; \
             server_max_window_bits=10; client_max_window_bits=11"
        );
        // The smaller of offered and configured wins.
        let (p, _) = negotiate(
            &config,
            &["permessage-deflate; client_max_window_bits=9; server_max_window_bits=12"],
        )
        .unwrap();
        assert_eq!(p, params(true, true, 10, 9));
        // Without client_max_window_bits the client's window cannot be
        // limited: declined.
        assert_eq!(negotiate(&config, &["permessage-deflate"]), None);
        let relaxed = config.client_max_window_bits(15);
        let (p, answer) = negotiate(&relaxed, &["permessage-deflate"]).unwrap();
        assert_eq!(p, params(true, true, 10, 15));
        assert_eq!(
            answer,
            "permessage-deflate; server_no_context_takeover; client_no_context_takeover; \
             server_max_window_bits=10"
        );
    }

    #[test]
    fn server_takes_the_first_acceptable_offer() {
        let config = DeflateConfig::default();
        // Several offers in one field.
        let (p, _) = negotiate(
            &config,
            &["permessage-deflate; server_max_window_bits=10, permessage-deflate"],
        )
        .unwrap();
        assert_eq!(p.server_max_window_bits, 10);
        // Across fields, with another extension first.
        let (p, answer) = negotiate(
            &config,
            &[
                "x-webkit-deflate-frame; foo=\"a,b\"",
                "permessage-deflate; client_no_context_takeover",
                "permessage-deflate",
            ],
        )
        .unwrap();
        assert_eq!(p, params(false, true, 15, 15));
        assert_eq!(answer, "permessage-deflate; client_no_context_takeover");
        // An invalid first offer is skipped.
        let (p, _) = negotiate(
            &config,
            &["permessage-deflate; server_max_window_bits=16, permessage-deflate; server_max_window_bits=11"],
        )
        .unwrap();
        assert_eq!(p.server_max_window_bits, 11);
        // An offer the config cannot honour is skipped too.
        let strict = DeflateConfig::default().client_max_window_bits(10);
        let (p, _) = negotiate(
            &strict,
            &[
                "permessage-deflate",
                "permessage-deflate; client_max_window_bits=12",
            ],
        )
        .unwrap();
        assert_eq!(p.client_max_window_bits, 10);
        // Nothing offered, or nothing acceptable.
        assert_eq!(negotiate(&config, &[]), None);
        assert_eq!(negotiate(&config, &["x-foo, y-bar; a=1"]), None);
    }

    #[test]
    fn server_declines_invalid_offers() {
        let config = DeflateConfig::default();
        for offer in [
            "permessage-deflate; foo",
            "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
            "permessage-deflate; client_max_window_bits; client_max_window_bits=10",
            "permessage-deflate; server_no_context_takeover=1",
            "permessage-deflate; client_no_context_takeover=\"x\"",
            "permessage-deflate; server_max_window_bits",
            "permessage-deflate; server_max_window_bits=7",
            "permessage-deflate; server_max_window_bits=16",
            "permessage-deflate; server_max_window_bits=abc",
            "permessage-deflate; server_max_window_bits=010",
            "permessage-deflate; client_max_window_bits=7",
            "permessage-deflate; client_max_window_bits=16",
            "permessage-deflate; client_max_window_bits=\"abc\"",
            "permessage-deflate; client_max_window_bits=\"1 0\"",
            "permessage-deflate; client_max_window_bits=\"10",
            "permessage-deflate client_max_window_bits",
            "permessage-deflate;",
        ] {
            assert_eq!(negotiate(&config, &[offer]), None, "{offer}");
        }
    }

    #[test]
    fn client_accepts_valid_answers() {
        let config = DeflateConfig::default();
        assert_eq!(check(&config, &[]), Ok(None));
        assert_eq!(check(&config, &[" ", ","]), Ok(None));
        assert_eq!(
            check(&config, &["permessage-deflate"]),
            Ok(Some(DeflateParams::default()))
        );
        assert_eq!(
            check(
                &config,
                &[
                    "permessage-deflate; server_no_context_takeover; client_no_context_takeover; \
                   server_max_window_bits=\"8\"; client_max_window_bits=\"10\""
                ]
            ),
            Ok(Some(params(true, true, 8, 10)))
        );
        // The client honours its own limits without an echo.
        let limited = DeflateConfig::default()
            .client_max_window_bits(9)
            .client_no_context_takeover(true);
        assert_eq!(
            check(&limited, &["permessage-deflate"]),
            Ok(Some(params(false, true, 15, 9)))
        );
        assert_eq!(
            check(&limited, &["permessage-deflate; client_max_window_bits=8"]),
            Ok(Some(params(false, true, 15, 8)))
        );
        // A smaller server window than asked for is fine.
        let asked = DeflateConfig::default()
            .server_max_window_bits(12)
            .server_no_context_takeover(true);
        assert_eq!(
            check(
                &asked,
                &["permessage-deflate; server_max_window_bits=10; server_no_context_takeover"]
            ),
            Ok(Some(params(true, false, 10, 15)))
        );
    }

    #[test]
    fn client_rejects_invalid_answers() {
        let config = DeflateConfig::default();
        let cases = [
            (
                "x-foo",
                "the server accepted an extension that was not offered",
            ),
            (
                "permessage-deflate, x-foo",
                "the server accepted an extension that was not offered",
            ),
            (
                "permessage-deflate, permessage-deflate",
                "the server accepted permessage-deflate more than once",
            ),
            (
                "permessage-deflate; foo",
                "permessage-deflate: unknown parameter",
            ),
            (
                "permessage-deflate; server_no_context_takeover; Server_No_Context_Takeover",
                "permessage-deflate: a parameter appears twice",
            ),
            (
                "permessage-deflate; client_no_context_takeover=1",
                "permessage-deflate: a no_context_takeover parameter has a value",
            ),
            (
                "permessage-deflate; server_max_window_bits",
                "permessage-deflate: server_max_window_bits needs a value",
            ),
            (
                "permessage-deflate; server_max_window_bits=7",
                "permessage-deflate: window bits must be an integer from 8 to 15",
            ),
            (
                "permessage-deflate; client_max_window_bits=16",
                "permessage-deflate: window bits must be an integer from 8 to 15",
            ),
            (
                "permessage-deflate; client_max_window_bits=\"abc\"",
                "permessage-deflate: window bits must be an integer from 8 to 15",
            ),
            (
                "permessage-deflate; client_max_window_bits=\"1 0\"",
                "malformed Sec-WebSocket-Extensions",
            ),
            (
                "permessage-deflate; client_max_window_bits=x1",
                "permessage-deflate: window bits must be an integer from 8 to 15",
            ),
            (
                "permessage-deflate; client_max_window_bits",
                "permessage-deflate: client_max_window_bits in a response needs a value",
            ),
            ("permessage-deflate;", "malformed Sec-WebSocket-Extensions"),
        ];
        for (answer, expected) in cases {
            assert_eq!(check(&config, &[answer]), Err(expected), "{answer}");
        }
        // Across fields: two acceptances.
        assert_eq!(
            check(&config, &["permessage-deflate", "permessage-deflate"]),
            Err("the server accepted permessage-deflate more than once")
        );

        let limited = DeflateConfig::default()
            .server_max_window_bits(10)
            .client_max_window_bits(10)
            .server_no_context_takeover(true);
        let cases = [
            (
                "permessage-deflate; server_no_context_takeover; server_max_window_bits=11",
                "permessage-deflate: server_max_window_bits is larger than requested",
            ),
            (
                "permessage-deflate; server_no_context_takeover; server_max_window_bits=10; \
                 client_max_window_bits=11",
                "permessage-deflate: client_max_window_bits is larger than offered",
            ),
            (
                "permessage-deflate; server_no_context_takeover",
                "permessage-deflate: server_max_window_bits was requested but not answered",
            ),
            (
                "permessage-deflate; server_max_window_bits=10",
                "permessage-deflate: server_no_context_takeover was requested but not granted",
            ),
        ];
        for (answer, expected) in cases {
            assert_eq!(check(&limited, &[answer]), Err(expected), "{answer}");
        }
    }
}
