//! The client side of the opening handshake (RFC 6455 section 4.1).

use bytes::Bytes;
use http::header::{
    CONNECTION, GetAll, HOST, HeaderMap, HeaderValue, SEC_WEBSOCKET_ACCEPT,
    SEC_WEBSOCKET_EXTENSIONS, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_PROTOCOL, SEC_WEBSOCKET_VERSION,
    UPGRADE,
};
use http::{Method, Request, Response, StatusCode, Uri, Version};

use super::accept_key::{derive_accept_key, generate_key};
use super::head::{self, HeadReader};
use super::limits::HandshakeLimits;
use crate::deflate::params::{client_check_response, client_offer};
use crate::deflate::{DeflateConfig, DeflateParams};
use crate::error::{Error, HandshakeFailure, ProtocolError, Result, UrlError};

/// Something a WebSocket client request can be built from: a `ws://` or
/// `wss://` URL (as `&str`, `String` or [`Uri`]) or a complete
/// [`http::Request`].
///
/// The request gets the headers the handshake needs unless the caller set
/// them: `Host` (with the port when it is not the scheme's default),
/// `Connection: Upgrade`, `Upgrade: websocket`,
/// `Sec-WebSocket-Version: 13` and a fresh `Sec-WebSocket-Key`. Every
/// header the caller set is kept as given, so a [`Request`] is the way to
/// offer subprotocols (`Sec-WebSocket-Protocol`), send `Origin`,
/// `Authorization` or cookies, or choose the key.
///
/// # Examples
///
/// ```
/// use lockgate::handshake::IntoClientRequest;
///
/// let request = "ws://example.com:8080/chat?room=1".into_client_request().unwrap();
/// assert_eq!(request.headers()["host"], "example.com:8080");
/// assert_eq!(request.headers()["upgrade"], "websocket");
///
/// let request = http::Request::builder()
///     .uri("wss://example.com/feed")
///     .header("Sec-WebSocket-Protocol", "v2.feed, v1.feed")
///     .body(())
///     .unwrap()
///     .into_client_request()
///     .unwrap();
/// assert_eq!(request.headers()["sec-websocket-protocol"], "v2.feed, v1.feed");
/// assert_eq!(request.headers()["host"], "example.com");
/// ```
pub trait IntoClientRequest {
    /// Builds the upgrade request.
    ///
    /// # Errors
    ///
    /// [`Error::Url`] for a URL that does not parse, a scheme other than
    /// `ws` or `wss`
    /// ([`UrlError::UnsupportedUrlScheme`](crate::error::UrlError::UnsupportedUrlScheme)),
    /// a URL without a host (unless a request carries a `Host` header and
    /// an origin-form target such as `/chat`), a fragment or user
    /// credentials in the URL; [`Error::Protocol`] for a method other than
    /// GET or an HTTP version other than 1.1.
    fn into_client_request(self) -> Result<Request<()>>;
}

impl IntoClientRequest for &str {
    fn into_client_request(self) -> Result<Request<()>> {
        // RFC 6455 section 3: "Fragment identifiers are meaningless in the
        // context of WebSocket URIs and MUST NOT be used on these URIs."
        // `Uri` would drop the fragment silently.
        if self.contains('#') {
            return Err(bad_url(format!(
                "{self:?} has a fragment (escape '#' as %23)"
            )));
        }
        let uri: Uri = self
            .parse()
            .map_err(|e| bad_url(format!("{self:?} is not a URL: {e}")))?;
        uri.into_client_request()
    }
}

impl IntoClientRequest for String {
    fn into_client_request(self) -> Result<Request<()>> {
        self.as_str().into_client_request()
    }
}

impl IntoClientRequest for &String {
    fn into_client_request(self) -> Result<Request<()>> {
        self.as_str().into_client_request()
    }
}

impl IntoClientRequest for Uri {
    fn into_client_request(self) -> Result<Request<()>> {
        let mut request = Request::new(());
        *request.uri_mut() = self;
        request.into_client_request()
    }
}

impl IntoClientRequest for &Uri {
    fn into_client_request(self) -> Result<Request<()>> {
        self.clone().into_client_request()
    }
}

impl IntoClientRequest for Request<()> {
    fn into_client_request(self) -> Result<Request<()>> {
        complete_request(self)
    }
}

#[cfg(feature = "url")]
#[cfg_attr(docsrs, doc(cfg(feature = "url")))]
impl IntoClientRequest for url::Url {
    fn into_client_request(self) -> Result<Request<()>> {
        self.as_str().into_client_request()
    }
}

#[cfg(feature = "url")]
#[cfg_attr(docsrs, doc(cfg(feature = "url")))]
impl IntoClientRequest for &url::Url {
    fn into_client_request(self) -> Result<Request<()>> {
        self.as_str().into_client_request()
    }
}

fn bad_url(message: String) -> Error {
    UrlError::invalid(message)
}

/// Checks `request` and adds the handshake headers it lacks.
pub(super) fn complete_request(mut request: Request<()>) -> Result<Request<()>> {
    if request.method() != Method::GET {
        return Err(ProtocolError::WrongHttpMethod.into());
    }
    if request.version() != Version::HTTP_11 {
        return Err(ProtocolError::WrongHttpVersion.into());
    }
    let uri = request.uri();
    let default_port = match uri.scheme_str() {
        Some(scheme) if scheme.eq_ignore_ascii_case("ws") => 80,
        Some(scheme) if scheme.eq_ignore_ascii_case("wss") => 443,
        Some(_) => return Err(UrlError::UnsupportedUrlScheme.into()),
        None if uri.authority().is_some() => {
            return Err(bad_url(format!("{uri} has no ws or wss scheme")));
        }
        None if !uri.path().starts_with('/') => return Err(bad_url(format!("{uri} is not a URL"))),
        // An origin-form target ("/chat"): the Host header must say where.
        None => 0,
    };
    if uri
        .authority()
        .is_some_and(|authority| authority.as_str().contains('@'))
    {
        return Err(bad_url(
            "credentials in the URL are not supported; send an Authorization header".into(),
        ));
    }
    if !request.headers().contains_key(HOST) {
        let host = host_header(uri, default_port)?;
        request.headers_mut().insert(HOST, host);
    }
    let headers = request.headers_mut();
    headers
        .entry(CONNECTION)
        .or_insert(HeaderValue::from_static("Upgrade"));
    headers
        .entry(UPGRADE)
        .or_insert(HeaderValue::from_static("websocket"));
    headers
        .entry(SEC_WEBSOCKET_VERSION)
        .or_insert(HeaderValue::from_static("13"));
    if !headers.contains_key(SEC_WEBSOCKET_KEY) {
        let key = HeaderValue::try_from(generate_key()).expect("base64 is a valid header value");
        headers.insert(SEC_WEBSOCKET_KEY, key);
    }
    Ok(request)
}

/// The `Host` header for `uri`: its host, and its port unless it is the
/// scheme's default (RFC 6455 section 4.1, RFC 9110 section 7.2).
fn host_header(uri: &Uri, default_port: u16) -> Result<HeaderValue> {
    let host = match uri.host() {
        Some(host) if !host.is_empty() => host,
        Some(_) => return Err(UrlError::EmptyHostName.into()),
        None => return Err(UrlError::NoHostName.into()),
    };
    let value = match uri.port_u16() {
        Some(port) if port != default_port => format!("{host}:{port}"),
        _ => host.to_owned(),
    };
    HeaderValue::try_from(value).map_err(|_| bad_url(format!("{uri} has an invalid host")))
}

/// The request target: the path and query, never empty (RFC 6455 section
/// 4.1 step 7 of the request requirements).
fn request_target(uri: &Uri) -> String {
    match uri.path_and_query().map(|pq| pq.as_str()) {
        Some(target) if target.starts_with('/') => target.to_owned(),
        Some(target) => format!("/{target}"),
        None => "/".to_owned(),
    }
}

/// The request as HTTP/1.1 bytes, `Host` first (RFC 9110 section 7.2).
fn serialize_request(request: &Request<()>) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"GET ");
    out.extend_from_slice(request_target(request.uri()).as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    for value in request.headers().get_all(HOST) {
        head::write_header(&mut out, &HOST, value);
    }
    for (name, value) in request.headers() {
        if name != HOST {
            head::write_header(&mut out, name, value);
        }
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// The client side of the opening handshake, without I/O.
///
/// The calling contract:
///
/// 1. [`ClientUpgrade::new`] (or [`with_deflate`](Self::with_deflate),
///    to offer permessage-deflate) builds the request. Write all of
///    [`request_bytes`](Self::request_bytes) to the connection and flush.
/// 2. Pass every chunk read from the connection to
///    [`receive`](Self::receive) until it returns `Ok(Some(done))`;
///    `Ok(None)` means the response head is not complete yet.
/// 3. The connection is open. [`ClientUpgradeDone::leftover`] holds bytes
///    that arrived after the response head (frames the server sent right
///    away): hand them to the frame reader before reading anything else.
///
/// If `receive` fails, the handshake has failed: close the connection.
/// After it returned the response or an error, `receive` returns
/// [`Error::AlreadyClosed`].
///
/// The response must be `101 Switching Protocols` with `Upgrade: websocket`,
/// `Connection: upgrade`, the right `Sec-WebSocket-Accept`, at most one
/// `Sec-WebSocket-Protocol` among those offered, and no
/// `Sec-WebSocket-Extensions` other than a valid answer to the
/// permessage-deflate offer of [`with_deflate`](Self::with_deflate).
///
/// # Examples
///
/// ```
/// use lockgate::handshake::{ClientUpgrade, derive_accept_key};
///
/// let mut handshake = ClientUpgrade::new("ws://example.com/chat").unwrap();
/// assert!(handshake.request_bytes().starts_with(b"GET /chat HTTP/1.1\r\n"));
///
/// let key = handshake.request().headers()["sec-websocket-key"].as_bytes();
/// let response = format!(
///     "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
///      Connection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n",
///     derive_accept_key(key),
/// );
/// let (first, rest) = response.as_bytes().split_at(10);
/// assert!(handshake.receive(first).unwrap().is_none());
/// let done = handshake.receive(rest).unwrap().expect("complete");
/// assert_eq!(done.response.status(), 101);
/// assert!(done.leftover.is_empty());
/// ```
#[derive(Debug)]
pub struct ClientUpgrade {
    request: Request<()>,
    request_bytes: Vec<u8>,
    /// The `Sec-WebSocket-Accept` the server must answer with.
    accept: String,
    /// What was offered, for checking the answer.
    deflate: Option<DeflateConfig>,
    reader: HeadReader,
    finished: bool,
}

/// A completed client handshake: the server's response and what followed
/// it.
#[derive(Debug)]
#[must_use = "the leftover bytes are the start of the frame stream"]
pub struct ClientUpgradeDone {
    /// The `101 Switching Protocols` response. The chosen subprotocol, if
    /// any, is its `Sec-WebSocket-Protocol` header.
    pub response: Response<()>,
    /// Bytes received after the response head: the first frames from the
    /// server. Read them before anything else from the connection.
    pub leftover: Bytes,
    /// The permessage-deflate parameters the server accepted; `None` when
    /// it was not offered ([`ClientUpgrade::new`]) or the server declined
    /// it.
    pub deflate: Option<DeflateParams>,
}

impl ClientUpgrade {
    /// Starts a handshake for `request` (a `ws://`/`wss://` URL or an
    /// [`http::Request`], see [`IntoClientRequest`]).
    ///
    /// No extension is offered (see [`with_deflate`](Self::with_deflate)).
    /// A `Sec-WebSocket-Extensions` header the caller set is sent as given,
    /// but the handshake fails if the server accepts any extension, since
    /// lockgate could not honour it.
    ///
    /// # Errors
    ///
    /// [`Error::Url`] if the request cannot be used (see
    /// [`IntoClientRequest::into_client_request`]) or carries more than one
    /// `Sec-WebSocket-Key`.
    pub fn new(request: impl IntoClientRequest) -> Result<Self> {
        Self::with_deflate(request, None)
    }

    /// Starts a handshake for `request` that offers permessage-deflate
    /// (RFC 7692) with `deflate`'s settings; with `None` it is
    /// [`ClientUpgrade::new`].
    ///
    /// The offer is added as `Sec-WebSocket-Extensions` (see
    /// [`DeflateConfig`] for its parameters). The server's answer is
    /// checked when the response arrives, and what was agreed is
    /// [`ClientUpgradeDone::deflate`].
    ///
    /// # Errors
    ///
    /// As for [`ClientUpgrade::new`], and [`Error::Url`] if
    /// `deflate` is `Some` and the request already has a
    /// `Sec-WebSocket-Extensions` header: lockgate writes the offer itself
    /// and can only honour answers to its own offer.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "deflate")] {
    /// use lockgate::deflate::DeflateConfig;
    /// use lockgate::handshake::ClientUpgrade;
    ///
    /// let config = DeflateConfig::default().client_max_window_bits(12);
    /// let handshake = ClientUpgrade::with_deflate("ws://example.com/", Some(config)).unwrap();
    /// assert_eq!(
    ///     handshake.request().headers()["sec-websocket-extensions"],
    ///     "permessage-deflate; client_max_window_bits=12",
    /// );
    /// # }
    /// ```
    pub fn with_deflate(
        request: impl IntoClientRequest,
        deflate: Option<DeflateConfig>,
    ) -> Result<Self> {
        // Completing again is a no-op for the provided impls and covers
        // user impls that return a bare request.
        let mut request = complete_request(request.into_client_request()?)?;
        let deflate = crate::deflate::usable(deflate);
        if let Some(config) = &deflate {
            if request.headers().contains_key(SEC_WEBSOCKET_EXTENSIONS) {
                return Err(bad_url(
                    "the request already has Sec-WebSocket-Extensions; \
                     lockgate writes the permessage-deflate offer itself"
                        .into(),
                ));
            }
            request
                .headers_mut()
                .insert(SEC_WEBSOCKET_EXTENSIONS, client_offer(config));
        }
        let key = head::single_value(request.headers(), SEC_WEBSOCKET_KEY)
            .ok_or_else(|| bad_url("the request has more than one Sec-WebSocket-Key".into()))?;
        let accept = derive_accept_key(key);
        let request_bytes = serialize_request(&request);
        Ok(Self {
            request,
            request_bytes,
            accept,
            deflate,
            reader: HeadReader::response(),
            finished: false,
        })
    }

    /// How large the response head may be: a response over a limit fails
    /// the handshake with [`HandshakeFailure::HeadTooLarge`] as soon as it
    /// crosses it. Default: [`HandshakeLimits::default`] (a 64 KiB head,
    /// 124 header fields, as tungstenite). Call it before the first
    /// [`receive`](Self::receive).
    pub fn handshake_limits(mut self, limits: HandshakeLimits) -> Self {
        self.reader = HeadReader::response().with_limits(limits);
        self
    }

    /// The request as HTTP/1.1 bytes, ready to be written: request line
    /// with the URL's path and query as target, `Host` first, then the
    /// other headers, then the empty line.
    pub fn request_bytes(&self) -> &[u8] {
        &self.request_bytes
    }

    /// The request, with the headers that were added to it.
    pub fn request(&self) -> &Request<()> {
        &self.request
    }

    /// Moves the request out, for a handshake that has finished.
    pub(super) fn take_request(&mut self) -> Request<()> {
        std::mem::take(&mut self.request)
    }

    /// Takes bytes read from the connection. Returns `Ok(None)` while the
    /// response head is incomplete, and the response once it is complete
    /// and valid.
    ///
    /// # Errors
    ///
    /// All are a [`HandshakeFailure`](crate::HandshakeFailure) ([`Error::handshake_failure`](crate::Error::handshake_failure)):
    ///
    /// - [`HandshakeFailure::HeadTooLarge`]: the head exceeds a
    ///   [`handshake_limits`](Self::handshake_limits) limit (by default 64
    ///   KiB, 124 header fields).
    /// - [`HandshakeFailure::Parse`]: the head is not HTTP, reported at the
    ///   first byte that cannot belong to it.
    /// - [`Error::Http`]: the status is not 101. The
    ///   response's body is the bytes that followed the head in the input
    ///   received so far (`None` if there were none); the rest of the body
    ///   is not waited for.
    /// - [`HandshakeFailure::BadResponse`]: a status line that does not start
    ///   with `HTTP/1.1 ` (reported at the first byte that differs, without
    ///   waiting for the rest of the head), a 101 that breaks RFC 6455, or
    ///   whose `Sec-WebSocket-Extensions` is not a valid answer to the
    ///   offer (RFC 7692).
    ///
    /// After returning the response or an error, further calls return
    /// [`Error::AlreadyClosed`].
    pub fn receive(&mut self, input: &[u8]) -> Result<Option<ClientUpgradeDone>> {
        if self.finished {
            return Err(Error::AlreadyClosed);
        }
        let pushed = self.reader.push(input);
        if !matches!(pushed, Ok(None)) {
            self.finished = true;
        }
        let Some(head) = pushed? else {
            return Ok(None);
        };
        let (response, leftover) = parse_response(head)?;
        if response.status() != StatusCode::SWITCHING_PROTOCOLS {
            let body = (!leftover.is_empty()).then_some(leftover);
            let (parts, ()) = response.into_parts();
            let response = Response::from_parts(parts, body.map(Vec::from));
            return Err(Error::Http(Box::new(response)));
        }
        let deflate = check_response(
            &response,
            self.request.headers(),
            &self.accept,
            self.deflate.as_ref(),
        )?;
        Ok(Some(ClientUpgradeDone {
            response,
            leftover,
            deflate,
        }))
    }
}

/// Parses a complete response head.
fn parse_response(head: head::Head) -> Result<(Response<()>, Bytes), HandshakeFailure> {
    let (response, len) =
        head::parse_fields(head.fields, |room| parse_response_fields(&head, room))?;
    Ok((response, head.into_leftover(len)))
}

/// [`parse_response`] with `room` for the head's header fields: the
/// response, and the length of the head.
fn parse_response_fields<'b>(
    head: &'b head::Head,
    room: &mut [httparse::Header<'b>],
) -> Result<(Response<()>, usize), HandshakeFailure> {
    let mut parsed = httparse::Response::new(room);
    let len = match parsed.parse(&head.bytes)? {
        httparse::Status::Complete(len) => len,
        httparse::Status::Partial => {
            return Err(HandshakeFailure::BadResponse("incomplete HTTP head"));
        }
    };
    let code = parsed
        .code
        .ok_or(HandshakeFailure::BadResponse("no status code"))?;
    let status = StatusCode::from_u16(code)
        .map_err(|_| HandshakeFailure::BadResponse("invalid status code"))?;
    let version = if parsed.version == Some(1) {
        Version::HTTP_11
    } else {
        Version::HTTP_10
    };
    let headers = head::header_map(parsed.headers)
        .ok_or(HandshakeFailure::BadResponse("invalid header field"))?;
    let mut response = Response::new(());
    *response.status_mut() = status;
    *response.version_mut() = version;
    *response.headers_mut() = headers;
    Ok((response, len))
}

/// The checks of RFC 6455 section 4.1 on a 101 response, in its order.
/// Returns the negotiated permessage-deflate parameters.
fn check_response(
    response: &Response<()>,
    request: &HeaderMap,
    accept: &str,
    deflate: Option<&DeflateConfig>,
) -> Result<Option<DeflateParams>, HandshakeFailure> {
    let headers = response.headers();
    if response.version() != Version::HTTP_11 {
        return Err(HandshakeFailure::BadResponse(
            "the 101 response is not HTTP/1.1",
        ));
    }
    // "If the response lacks an |Upgrade| header field or the |Upgrade|
    // header field contains a value that is not an ASCII case-insensitive
    // match for the value "websocket", the client MUST _Fail the WebSocket
    // Connection_."
    if !head::single_value(headers, UPGRADE)
        .is_some_and(|value| value.eq_ignore_ascii_case(b"websocket"))
    {
        return Err(HandshakeFailure::BadResponse(
            "Upgrade is missing or not websocket",
        ));
    }
    // "If the response lacks a |Connection| header field or the
    // |Connection| header field doesn't contain a token that is an ASCII
    // case-insensitive match for the value "Upgrade", the client MUST _Fail
    // the WebSocket Connection_."
    if !head::has_token(headers, CONNECTION, "upgrade") {
        return Err(HandshakeFailure::BadResponse(
            "Connection is missing or lacks the upgrade token",
        ));
    }
    match head::single_value(headers, SEC_WEBSOCKET_ACCEPT) {
        None => {
            return Err(HandshakeFailure::BadResponse(
                "Sec-WebSocket-Accept is missing or repeated",
            ));
        }
        Some(value) if value != accept.as_bytes() => {
            return Err(HandshakeFailure::BadResponse(
                "Sec-WebSocket-Accept does not match the key",
            ));
        }
        Some(_) => {}
    }
    check_protocol(request, headers)?;
    check_extensions(
        request.get_all(SEC_WEBSOCKET_EXTENSIONS),
        headers.get_all(SEC_WEBSOCKET_EXTENSIONS),
        deflate,
    )
}

/// "If the response includes a |Sec-WebSocket-Protocol| header field and
/// this header field indicates the use of a subprotocol that was not
/// present in the client's handshake [...], the client MUST _Fail the
/// WebSocket Connection_."
pub(super) fn check_protocol(
    request: &HeaderMap,
    response: &HeaderMap,
) -> Result<(), HandshakeFailure> {
    let mut answers = response.get_all(SEC_WEBSOCKET_PROTOCOL).into_iter();
    let Some(chosen) = answers.next() else {
        return Ok(());
    };
    if answers.next().is_some() {
        return Err(HandshakeFailure::BadResponse(
            "more than one Sec-WebSocket-Protocol",
        ));
    }
    let chosen = chosen.as_bytes().trim_ascii();
    let mut offered = head::list_elements(request, SEC_WEBSOCKET_PROTOCOL).peekable();
    if offered.peek().is_none() {
        return Err(HandshakeFailure::BadResponse(
            "a subprotocol was chosen but none was offered",
        ));
    }
    if !offered.any(|protocol| protocol == chosen) {
        return Err(HandshakeFailure::BadResponse(
            "the chosen subprotocol was not offered",
        ));
    }
    Ok(())
}

/// Checks the extensions the server accepted against those offered and
/// returns the negotiated permessage-deflate parameters.
///
/// "If the response includes a |Sec-WebSocket-Extensions| header field and
/// this header field indicates the use of an extension that was not
/// present in the client's handshake [...], the client MUST _Fail the
/// WebSocket Connection_." With a deflate config, the request carries
/// lockgate's own offer (see [`ClientUpgrade::with_deflate`]) and the
/// answer is checked against it. Without one, any accepted extension fails
/// the handshake: an offer the caller wrote by hand cannot be honoured.
pub(super) fn check_extensions(
    offered: GetAll<'_, HeaderValue>,
    accepted: GetAll<'_, HeaderValue>,
    deflate: Option<&DeflateConfig>,
) -> Result<Option<DeflateParams>, HandshakeFailure> {
    if let Some(config) = deflate {
        return client_check_response(config, accepted);
    }
    let accepted_any = accepted
        .iter()
        .any(|value| !value.as_bytes().trim_ascii().is_empty());
    if !accepted_any {
        return Ok(None);
    }
    if offered.iter().next().is_none() {
        Err(HandshakeFailure::BadResponse(
            "an extension was accepted but none was offered",
        ))
    } else {
        Err(HandshakeFailure::BadResponse(
            "an extension was accepted that lockgate does not implement",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Detail;

    fn handshake() -> ClientUpgrade {
        let request = Request::builder()
            .uri("ws://example.com/chat")
            .header(SEC_WEBSOCKET_KEY, "dGhlIHNhbXBsZSBub25jZQ==")
            .header(SEC_WEBSOCKET_PROTOCOL, "chat, superchat")
            .header(SEC_WEBSOCKET_PROTOCOL, "v3")
            .body(())
            .unwrap();
        ClientUpgrade::new(request).unwrap()
    }

    const OK: &str = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                      Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n";

    fn respond(extra: &str) -> Result<Option<ClientUpgradeDone>> {
        handshake().receive(format!("{OK}{extra}\r\n").as_bytes())
    }

    /// lockgate's reason, or tungstenite's variant where it has one.
    fn bad_response(result: Result<Option<ClientUpgradeDone>>) -> String {
        match result.map_err(Error::into_detail) {
            Err(Ok(Detail::Handshake(HandshakeFailure::BadResponse(message)))) => message.into(),
            Err(Err(Error::Protocol(error))) => format!("{error:?}"),
            other => panic!("expected BadResponse, got {other:?}"),
        }
    }

    #[test]
    fn url_forms() {
        let request = "ws://example.com:8080/chat?x=1"
            .into_client_request()
            .unwrap();
        assert_eq!(request.headers()[HOST], "example.com:8080");
        assert_eq!(request_target(request.uri()), "/chat?x=1");
        let request = "wss://example.com:443".into_client_request().unwrap();
        assert_eq!(request.headers()[HOST], "example.com");
        assert_eq!(request_target(request.uri()), "/");
        let request = "ws://example.com:443?x".into_client_request().unwrap();
        assert_eq!(request.headers()[HOST], "example.com:443");
        assert_eq!(request_target(request.uri()), "/?x");
        let request = "ws://[::1]:9000/a".into_client_request().unwrap();
        assert_eq!(request.headers()[HOST], "[::1]:9000");
        let request = "WS://Example.com:80/"
            .to_owned()
            .into_client_request()
            .unwrap();
        assert_eq!(request.headers()[HOST], "Example.com");
    }

    #[test]
    fn bad_urls() {
        for url in [
            "http://example.com/",
            "example.com:80",
            "/chat",
            "ws://",
            "ws://a/b#c",
            "ws://u:p@a/",
            "*",
        ] {
            match url.into_client_request() {
                Err(Error::Url(_)) => {}
                Err(error) if matches!(error.detail(), Some(Detail::InvalidUrl(_))) => {}
                other => panic!("{url}: {other:?}"),
            }
        }
        let post = Request::post("ws://example.com/").body(()).unwrap();
        assert!(matches!(
            post.into_client_request(),
            Err(Error::Protocol(ProtocolError::WrongHttpMethod))
        ));
        let http2 = Request::get("ws://example.com/")
            .version(Version::HTTP_2)
            .body(())
            .unwrap();
        assert!(matches!(
            http2.into_client_request(),
            Err(Error::Protocol(ProtocolError::WrongHttpVersion))
        ));
    }

    #[test]
    fn origin_form_with_host_header() {
        let request = Request::get("/chat")
            .header(HOST, "example.com")
            .body(())
            .unwrap();
        let handshake = ClientUpgrade::new(request).unwrap();
        assert!(
            handshake
                .request_bytes()
                .starts_with(b"GET /chat HTTP/1.1\r\nHost: example.com\r\n")
        );
    }

    #[test]
    fn serialized_request() {
        let handshake = handshake();
        let text = std::str::from_utf8(handshake.request_bytes()).unwrap();
        let mut lines = text.split("\r\n");
        assert_eq!(lines.next(), Some("GET /chat HTTP/1.1"));
        assert_eq!(lines.next(), Some("Host: example.com"));
        let rest: Vec<&str> = lines.collect();
        for line in [
            "sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==",
            "sec-websocket-protocol: chat, superchat",
            "sec-websocket-protocol: v3",
            "connection: Upgrade",
            "upgrade: websocket",
            "sec-websocket-version: 13",
        ] {
            assert!(
                rest.iter().any(|l| l.eq_ignore_ascii_case(line)),
                "{line} in {text}"
            );
        }
        assert!(text.ends_with("\r\n\r\n"));
        assert_eq!(
            rest.len(),
            6 + 2,
            "six headers, the empty line and the empty tail"
        );
    }

    #[test]
    fn every_header_name_goes_out_in_canonical_case() {
        let request = Request::builder()
            .uri("ws://example.com/chat")
            .header(SEC_WEBSOCKET_KEY, "dGhlIHNhbXBsZSBub25jZQ==")
            .header("authorization", "Bearer t0ken")
            .header("cookie", "a=1; b=2")
            .header("origin", "https://example.com")
            .header("user-agent", "lockgate-test/1")
            .header("x-request-id", "42")
            .body(())
            .unwrap();
        let handshake = ClientUpgrade::new(request).unwrap();
        assert_eq!(
            std::str::from_utf8(handshake.request_bytes()).unwrap(),
            "GET /chat HTTP/1.1\r\n\
             Host: example.com\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
             Authorization: Bearer t0ken\r\n\
             Cookie: a=1; b=2\r\n\
             Origin: https://example.com\r\n\
             User-Agent: lockgate-test/1\r\n\
             X-Request-Id: 42\r\n\
             Connection: Upgrade\r\n\
             Upgrade: websocket\r\n\
             Sec-WebSocket-Version: 13\r\n\r\n"
        );
    }

    #[test]
    fn accepts_a_valid_response() {
        let done = respond("").unwrap().unwrap();
        assert_eq!(done.response.status(), StatusCode::SWITCHING_PROTOCOLS);
        assert!(done.leftover.is_empty());
        let done = respond("Sec-WebSocket-Protocol: superchat\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(done.response.headers()[SEC_WEBSOCKET_PROTOCOL], "superchat");
        let done = respond("sec-websocket-protocol: v3\r\nconnection: keep-alive, UPGRADE\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(done.response.headers()[SEC_WEBSOCKET_PROTOCOL], "v3");
    }

    #[test]
    fn rejects_bad_responses() {
        assert_eq!(
            bad_response(respond("Upgrade: h2c\r\n")),
            "MissingUpgradeWebSocketHeader"
        );
        assert_eq!(
            bad_response(respond(
                "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
            )),
            "SecWebSocketAcceptKeyMismatch"
        );
        assert_eq!(
            bad_response(respond("Sec-WebSocket-Protocol: chat, v3\r\n")),
            "SecWebSocketSubProtocolError(InvalidSubProtocol)"
        );
        assert_eq!(
            bad_response(respond(
                "Sec-WebSocket-Protocol: chat\r\nSec-WebSocket-Protocol: v3\r\n"
            )),
            "SecWebSocketSubProtocolError(InvalidSubProtocol)"
        );
        assert_eq!(
            bad_response(respond("Sec-WebSocket-Extensions: permessage-deflate\r\n")),
            "an extension was accepted but none was offered"
        );
        let http10 = OK.replace("HTTP/1.1", "HTTP/1.0");
        let result = handshake().receive(format!("{http10}\r\n").as_bytes());
        assert!(
            matches!(result.as_ref().err().and_then(|e| e.handshake_failure()),
                Some(HandshakeFailure::NotHttp(arrived))
                if arrived == "HTTP/1.0 101 Switching Protocols"),
            "{result:?}"
        );
    }

    #[test]
    fn hand_written_extension_offer_cannot_be_accepted() {
        let request = Request::get("ws://example.com/")
            .header(SEC_WEBSOCKET_KEY, "dGhlIHNhbXBsZSBub25jZQ==")
            .header(SEC_WEBSOCKET_EXTENSIONS, "permessage-deflate")
            .body(())
            .unwrap();
        let mut handshake = ClientUpgrade::new(request).unwrap();
        let response = format!("{OK}Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n");
        assert_eq!(
            bad_response(handshake.receive(response.as_bytes())),
            "an extension was accepted that lockgate does not implement"
        );
    }

    #[test]
    fn finished_handshake_refuses_more_input() {
        let mut handshake = handshake();
        let done = handshake
            .receive(format!("{OK}\r\n").as_bytes())
            .unwrap()
            .unwrap();
        assert!(done.leftover.is_empty());
        assert!(matches!(handshake.receive(b"x"), Err(Error::AlreadyClosed)));
        let mut handshake = self::handshake();
        assert!(handshake.receive(b"HTTP/1.1 99999 x\r\n\r\n").is_err());
        assert!(matches!(handshake.receive(b"x"), Err(Error::AlreadyClosed)));
    }
}
