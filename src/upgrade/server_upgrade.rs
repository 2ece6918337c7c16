//! The server side of the opening handshake (RFC 6455 section 4.2).

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use http::header::{
    CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, GetAll, HOST, HeaderMap, HeaderValue,
    SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_EXTENSIONS, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_PROTOCOL,
    SEC_WEBSOCKET_VERSION, TRANSFER_ENCODING, UPGRADE,
};
use http::{Request, Response, StatusCode, Uri, Version};

use super::accept_key::derive_accept_key;
use super::head::{self, HeadReader};
use super::limits::HandshakeLimits;
use super::origin::OriginPolicy;
use crate::deflate::params::server_negotiate;
use crate::deflate::{DeflateConfig, DeflateParams};
use crate::error::{Error, HandshakeFailure, ProtocolError, Result};

/// The response a [`Callback`] refuses a request with: any status, headers
/// and an optional text body.
pub type ErrorResponse = Response<Option<String>>;

/// Inspects an upgrade request and shapes the response, or refuses it.
///
/// The callback runs once the request has passed every RFC 6455 check and
/// the [`OriginPolicy`] (a refused request never reaches it). It
/// receives the request and the `101 Switching Protocols` response lockgate
/// will send (with `Connection`, `Upgrade` and `Sec-WebSocket-Accept`), and
/// returns that response, possibly with headers added: typically a
/// `Sec-WebSocket-Protocol` chosen among the client's offers, or cookies.
/// Returning `Err` refuses the handshake with that response, which
/// [`error_response_bytes`] serializes.
///
/// It is implemented for closures with the matching signature (annotate the
/// request parameter's type so the closure accepts any lifetime) and by
/// [`NoCallback`]. The signature is tungstenite's, so callbacks written for
/// it work unchanged.
///
/// The returned response must keep the status 101 and the three handshake
/// headers, and may name only a subprotocol the client offered; otherwise
/// [`ServerUpgrade::receive`] fails with
/// [`HandshakeFailure::InvalidCallbackResponse`] (a server bug, answered with
/// 500).
///
/// The response carries the `Sec-WebSocket-Extensions` lockgate negotiated
/// (see [`ServerUpgrade::with_deflate`]). The callback may remove that
/// header to decline compression for this connection
/// ([`ServerUpgradeDone::deflate`] is then `None`), but may not change it
/// or add one.
///
/// # Examples
///
/// ```
/// use http::{Request, Response, StatusCode};
/// use lockgate::handshake::{ErrorResponse, ServerUpgrade};
///
/// let callback = |request: &Request<()>, mut response: Response<()>| {
///     if request.uri().path() != "/chat" {
///         let mut refusal = ErrorResponse::new(Some("no such endpoint".into()));
///         *refusal.status_mut() = StatusCode::NOT_FOUND;
///         return Err(refusal);
///     }
///     response.headers_mut().insert("x-served-by", "lockgate".parse().unwrap());
///     Ok(response)
/// };
/// let handshake = ServerUpgrade::new(callback);
/// # drop(handshake);
/// ```
#[allow(
    clippy::result_large_err,
    reason = "the signature is tungstenite's, so that callbacks written for it work unchanged"
)]
pub trait Callback: Sized {
    /// Called with the valid upgrade request and the response prepared for
    /// it. Returns the response to send, or the refusal to send instead.
    ///
    /// # Errors
    ///
    /// The [`ErrorResponse`] refuses the handshake: it is reported as
    /// [`Error::Http`] and sent as given (plus
    /// `Connection: close` and `Content-Length`).
    fn on_request(
        self,
        request: &Request<()>,
        response: Response<()>,
    ) -> std::result::Result<Response<()>, ErrorResponse>;
}

#[allow(
    clippy::result_large_err,
    reason = "the signature is tungstenite's, so that callbacks written for it work unchanged"
)]
impl<F> Callback for F
where
    F: FnOnce(&Request<()>, Response<()>) -> std::result::Result<Response<()>, ErrorResponse>,
{
    fn on_request(
        self,
        request: &Request<()>,
        response: Response<()>,
    ) -> std::result::Result<Response<()>, ErrorResponse> {
        self(request, response)
    }
}

/// A [`Callback`] that accepts every valid request with the default
/// response (no subprotocol).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoCallback;

#[allow(
    clippy::result_large_err,
    reason = "the signature is tungstenite's, so that callbacks written for it work unchanged"
)]
impl Callback for NoCallback {
    fn on_request(
        self,
        _request: &Request<()>,
        response: Response<()>,
    ) -> std::result::Result<Response<()>, ErrorResponse> {
        Ok(response)
    }
}

/// The server side of the opening handshake, without I/O.
///
/// The calling contract:
///
/// 1. Pass every chunk read from the connection to
///    [`receive`](Self::receive) until it returns `Ok(Some(done))`;
///    `Ok(None)` means the request head is not complete yet. Bytes are
///    scanned once as they arrive and checked against the
///    [`HandshakeLimits`] (by default a 64 KiB head, 124 header fields)
///    before they are buffered; the head is parsed once, when complete.
/// 2. On `Ok(Some(done))`: write all of
///    [`done.response_bytes`](ServerUpgradeDone::response_bytes) and flush.
///    [`done.leftover`](ServerUpgradeDone::leftover) holds bytes that
///    arrived after the request head (the client's first frames): hand them
///    to the frame reader before reading anything else.
/// 3. On an `Err(e)`: write [`error_response_bytes(&e)`]
///    (it carries the status of [`HandshakeFailure::status`]), flush and close
///    the connection.
///
/// After returning the request or an error, `receive` returns
/// [`Error::AlreadyClosed`].
///
/// The request must be `GET` over HTTP/1.1 with exactly one `Host`, an
/// `Upgrade` list holding `websocket`, a `Connection` list holding
/// `upgrade`, `Sec-WebSocket-Version: 13` (else 426) and a
/// `Sec-WebSocket-Key` of 16 bytes in base64; then its `Origin` must pass
/// the [`OriginPolicy`] (else 403; by default, no `Origin` or the
/// server's own, see [`origin_policy`](Self::origin_policy)). Extension
/// offers are declined, except permessage-deflate when the handshake was
/// started with [`with_deflate`](Self::with_deflate).
///
/// [`error_response_bytes(&e)`]: error_response_bytes
///
/// # Examples
///
/// ```
/// use lockgate::handshake::{NoCallback, ServerUpgrade};
///
/// let mut handshake = ServerUpgrade::new(NoCallback);
/// let request = b"GET /chat HTTP/1.1\r\nHost: example.com\r\nUpgrade: websocket\r\n\
///     Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
///     Sec-WebSocket-Version: 13\r\n\r\n";
/// let (first, rest) = request.split_at(20);
/// assert!(handshake.receive(first).unwrap().is_none());
/// let done = handshake.receive(rest).unwrap().expect("complete");
/// assert_eq!(done.request.uri().path(), "/chat");
/// assert!(done.response_bytes.starts_with(b"HTTP/1.1 101 Switching Protocols\r\n"));
/// ```
pub struct ServerUpgrade<C: Callback> {
    /// `None` once the handshake has finished, either way.
    callback: Option<C>,
    /// What permessage-deflate offers are accepted with, if at all.
    deflate: Option<DeflateConfig>,
    /// Which `Origin`s are accepted.
    origin: OriginPolicy,
    reader: HeadReader,
}

/// A completed server handshake.
#[derive(Debug)]
#[must_use = "the response bytes must be written and the leftover bytes are the start of the frame stream"]
pub struct ServerUpgradeDone {
    /// The client's upgrade request.
    pub request: Request<()>,
    /// The `101 Switching Protocols` response, as the callback returned it.
    pub response: Response<()>,
    /// The response serialized as HTTP/1.1: write all of it, then flush.
    pub response_bytes: Vec<u8>,
    /// Bytes received after the request head: the client's first frames.
    /// Read them before anything else from the connection.
    pub leftover: Bytes,
    /// The permessage-deflate parameters agreed in the response; `None`
    /// when the handshake had no deflate config, the client offered nothing
    /// acceptable, or the callback removed the extension.
    pub deflate: Option<DeflateParams>,
}

impl<C: Callback> ServerUpgrade<C> {
    /// Starts a handshake that will consult `callback` once the request is
    /// complete, valid and from an accepted origin (by default
    /// [`OriginPolicy::same_origin`]). Pass [`NoCallback`] to accept every
    /// such request as is.
    ///
    /// Every extension offer is declined.
    pub fn new(callback: C) -> Self {
        Self::with_deflate(callback, None)
    }

    /// Starts a handshake that accepts permessage-deflate (RFC 7692) with
    /// `deflate`'s settings; with `None` it is [`ServerUpgrade::new`].
    ///
    /// The first permessage-deflate offer of the request (in order across
    /// its `Sec-WebSocket-Extensions` fields) that is well-formed and
    /// compatible with `deflate` is accepted; malformed offers (unknown or
    /// repeated parameters, invalid values) are skipped, as RFC 7692
    /// section 5 requires. The answer grants the no-context-takeover
    /// parameters the client asked for or `deflate` requires, and the
    /// smaller of the offered and configured window bits. An offer without
    /// `client_max_window_bits` is declined when `deflate` limits the
    /// client's window below 15, since the server may not limit it then.
    ///
    /// The callback sees the answer in the response it is given; what was
    /// agreed is [`ServerUpgradeDone::deflate`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "deflate")] {
    /// use lockgate::deflate::DeflateConfig;
    /// use lockgate::handshake::{NoCallback, ServerUpgrade};
    ///
    /// let config = DeflateConfig::default().server_max_window_bits(12);
    /// let mut handshake = ServerUpgrade::with_deflate(NoCallback, Some(config));
    /// let request = b"GET /chat HTTP/1.1\r\nHost: example.com\r\nUpgrade: websocket\r\n\
    ///     Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
    ///     Sec-WebSocket-Version: 13\r\n\
    ///     Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n";
    /// let done = handshake.receive(request).unwrap().expect("complete");
    /// assert_eq!(
    ///     done.response.headers()["sec-websocket-extensions"],
    ///     "permessage-deflate; server_max_window_bits=12",
    /// );
    /// assert_eq!(done.deflate.unwrap().server_max_window_bits, 12);
    /// # }
    /// ```
    pub fn with_deflate(callback: C, deflate: Option<DeflateConfig>) -> Self {
        Self {
            callback: Some(callback),
            deflate: crate::deflate::usable(deflate),
            origin: OriginPolicy::default(),
            reader: HeadReader::request(),
        }
    }

    /// Which pages may open a WebSocket: requests whose `Origin` `policy`
    /// refuses are answered with 403 before the callback runs.
    /// Default: [`OriginPolicy::same_origin`] (no `Origin`, or the
    /// server's own).
    ///
    /// # Examples
    ///
    /// ```
    /// use lockgate::handshake::{NoCallback, OriginPolicy, ServerUpgrade};
    /// use lockgate::{Error, HandshakeFailure};
    ///
    /// let request = b"GET /chat HTTP/1.1\r\nHost: chat.example.com\r\n\
    ///     Origin: https://app.example.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
    ///     Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
    /// let refused = ServerUpgrade::new(NoCallback).receive(request).unwrap_err();
    /// assert!(matches!(refused.handshake_failure(), Some(HandshakeFailure::OriginRefused { .. })));
    ///
    /// let policy = OriginPolicy::allow(["https://*.example.com"]).unwrap();
    /// let mut handshake = ServerUpgrade::new(NoCallback).origin_policy(policy);
    /// assert!(handshake.receive(request).unwrap().is_some());
    /// ```
    pub fn origin_policy(mut self, policy: OriginPolicy) -> Self {
        self.origin = policy;
        self
    }

    /// How large the request head may be: a request over a limit is
    /// refused with 431 as soon as it crosses it. Default:
    /// [`HandshakeLimits::default`] (a 64 KiB head, 124 header fields,
    /// as tungstenite). Call it before the first
    /// [`receive`](Self::receive).
    ///
    /// # Examples
    ///
    /// ```
    /// use lockgate::handshake::{HandshakeLimits, NoCallback, ServerUpgrade};
    /// use lockgate::{Error, HandshakeFailure};
    ///
    /// let request = b"GET /chat HTTP/1.1\r\nHost: example.com\r\nUpgrade: websocket\r\n\
    ///     Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
    ///     Sec-WebSocket-Version: 13\r\n\r\n";
    /// let limits = HandshakeLimits::default().max_headers(4);
    /// let refused = ServerUpgrade::new(NoCallback).handshake_limits(limits).receive(request);
    /// assert!(matches!(refused.as_ref().err().and_then(|e| e.handshake_failure()), Some(HandshakeFailure::HeadTooLarge)));
    /// ```
    pub fn handshake_limits(mut self, limits: HandshakeLimits) -> Self {
        self.reader = HeadReader::request().with_limits(limits);
        self
    }

    /// Takes bytes read from the connection. Returns `Ok(None)` while the
    /// request head is incomplete, and the request with the response to
    /// send once it is complete, valid and accepted by the callback.
    ///
    /// # Errors
    ///
    /// All are a [`HandshakeFailure`](crate::HandshakeFailure) ([`Error::handshake_failure`](crate::Error::handshake_failure)); [`HandshakeFailure::status`] gives the
    /// status to answer with and [`error_response_bytes`] the whole answer.
    ///
    /// - [`HandshakeFailure::HeadTooLarge`] (431): the head exceeds a
    ///   [`handshake_limits`](Self::handshake_limits) limit (by default 64
    ///   KiB, 124 header fields).
    /// - [`HandshakeFailure::Parse`] (400): the head is not HTTP.
    /// - [`HandshakeFailure::BadRequest`] (400): not a WebSocket upgrade (a
    ///   method other than GET, a version other than HTTP/1.1, no or several `Host`, `Upgrade`
    ///   without `websocket`, `Connection` without `upgrade`, no valid
    ///   `Sec-WebSocket-Key`).
    /// - [`HandshakeFailure::UnsupportedVersion`] (426): the
    ///   `Sec-WebSocket-Version` is not 13.
    /// - [`HandshakeFailure::OriginRefused`] (403): the
    ///   [`origin_policy`](Self::origin_policy) refused the `Origin`; the
    ///   callback did not run.
    /// - [`Error::Http`] (the callback's status): the callback
    ///   refused the request.
    /// - [`HandshakeFailure::InvalidCallbackResponse`] (500): the callback
    ///   returned a response that breaks the handshake.
    ///
    /// The request line and each header line are checked byte by byte as
    /// they arrive: input that cannot be a `GET ... HTTP/1.1` request (a
    /// control byte, a method other than GET, a version other than
    /// HTTP/1.1, a misplaced CR...) fails with the first byte that shows
    /// it, without waiting for the end of the head.
    ///
    /// After returning the request or an error, further calls return
    /// [`Error::AlreadyClosed`].
    pub fn receive(&mut self, input: &[u8]) -> Result<Option<ServerUpgradeDone>> {
        let Some(callback) = self.callback.take() else {
            return Err(Error::AlreadyClosed);
        };
        match self.reader.push(input) {
            Ok(None) => {
                self.callback = Some(callback);
                Ok(None)
            }
            Ok(Some(head)) => Ok(Some(accept(
                head,
                callback,
                self.deflate.as_ref(),
                &self.origin,
            )?)),
            Err(error) => Err(error.into()),
        }
    }

    /// Bytes examined so far, to prove the reading is linear.
    #[cfg(test)]
    fn scanned(&self) -> usize {
        self.reader.scanned()
    }
}

impl<C: Callback> fmt::Debug for ServerUpgrade<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerUpgrade")
            .field("reader", &self.reader)
            .field("origin", &self.origin)
            .field("finished", &self.callback.is_none())
            .finish_non_exhaustive()
    }
}

/// Checks an upgrade request that an HTTP server (hyper, axum, ...) has
/// already parsed, and builds the `101 Switching Protocols` response to
/// send before handing the upgraded connection to
/// [`WebSocket::from_raw_socket`](crate::WebSocket::from_raw_socket) or the
/// tokio adapter.
///
/// The checks are those [`ServerUpgrade`] applies: GET, HTTP/1.1 or
/// later, one `Host`, `Upgrade: websocket`, `Connection: upgrade`,
/// `Sec-WebSocket-Version: 13`, a key of 16 base64-encoded bytes, and the
/// default [`OriginPolicy`] (no `Origin`, or the server's own;
/// [`upgrade_response_with_deflate`] takes another).
/// Subprotocol or extra headers can be added to the returned response.
///
/// # Errors
///
/// The [`HandshakeFailure`] whose [`status`](HandshakeFailure::status) to
/// answer with (400, 403 for a refused `Origin`, or 426 for a version
/// other than 13; see [`HandshakeFailure::to_response`]).
///
/// # Examples
///
/// ```
/// let request = http::Request::get("/ws")
///     .header("host", "example.com")
///     .header("upgrade", "websocket")
///     .header("connection", "Upgrade")
///     .header("sec-websocket-version", "13")
///     .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
///     .body(())
///     .unwrap();
/// let response = lockgate::handshake::upgrade_response(&request).unwrap();
/// assert_eq!(response.status(), 101);
/// assert_eq!(response.headers()["sec-websocket-accept"], "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
/// ```
pub fn upgrade_response<B>(request: &Request<B>) -> Result<Response<()>, HandshakeFailure> {
    Ok(upgrade_response_with_deflate(request, None, &OriginPolicy::default())?.0)
}

/// [`upgrade_response`] that also accepts permessage-deflate (RFC 7692)
/// with `deflate`'s settings, as [`ServerUpgrade::with_deflate`] does,
/// and checks the `Origin` against `origin` instead of the default.
///
/// Returns the 101 response, carrying the `Sec-WebSocket-Extensions`
/// answer if an offer was accepted, and the agreed parameters. If the
/// caller removes that header from the response before sending it, the
/// connection must run without compression.
///
/// # Errors
///
/// As for [`upgrade_response`].
///
/// # Examples
///
/// ```
/// # #[cfg(feature = "deflate")] {
/// use lockgate::deflate::DeflateConfig;
///
/// let request = http::Request::get("/ws")
///     .header("host", "example.com")
///     .header("upgrade", "websocket")
///     .header("connection", "Upgrade")
///     .header("sec-websocket-version", "13")
///     .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
///     .header("sec-websocket-extensions", "permessage-deflate; client_max_window_bits")
///     .body(())
///     .unwrap();
/// let config = DeflateConfig::default().client_no_context_takeover(true);
/// let origin = lockgate::handshake::OriginPolicy::default();
/// let (response, deflate) =
///     lockgate::handshake::upgrade_response_with_deflate(&request, Some(&config), &origin)
///         .unwrap();
/// assert_eq!(
///     response.headers()["sec-websocket-extensions"],
///     "permessage-deflate; client_no_context_takeover",
/// );
/// assert!(deflate.unwrap().client_no_context_takeover);
/// # }
/// ```
pub fn upgrade_response_with_deflate<B>(
    request: &Request<B>,
    deflate: Option<&DeflateConfig>,
    origin: &OriginPolicy,
) -> Result<(Response<()>, Option<DeflateParams>), HandshakeFailure> {
    // RFC 6455 section 4.2.1: "An HTTP/1.1 or higher GET request".
    if request.method() != http::Method::GET {
        return Err(HandshakeFailure::BadRequest("the method is not GET"));
    }
    if request.version() < Version::HTTP_11 {
        return Err(HandshakeFailure::BadRequest("HTTP/1.1 is required"));
    }
    let deflate = crate::deflate::usable(deflate.copied());
    let (response, _accept, extensions) = switching_protocols(request, deflate.as_ref())?;
    origin.check(request)?;
    Ok((response, extensions.map(|(params, _)| params)))
}

/// The 101 response for a request that passes [`check_request`], with the
/// accept key, and the negotiated permessage-deflate parameters with the
/// `Sec-WebSocket-Extensions` value the response carries for them.
#[allow(
    clippy::type_complexity,
    reason = "a private helper returning its three results"
)]
fn switching_protocols<B>(
    request: &Request<B>,
    deflate: Option<&DeflateConfig>,
) -> Result<
    (
        Response<()>,
        HeaderValue,
        Option<(DeflateParams, HeaderValue)>,
    ),
    HandshakeFailure,
> {
    let key = check_request(request)?;
    let accept =
        HeaderValue::try_from(derive_accept_key(key)).expect("base64 is a valid header value");
    let mut response = Response::new(());
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(SEC_WEBSOCKET_ACCEPT, accept.clone());
    let extensions =
        negotiate_extensions(request.headers().get_all(SEC_WEBSOCKET_EXTENSIONS), deflate);
    if let Some((_, answer)) = &extensions {
        headers.insert(SEC_WEBSOCKET_EXTENSIONS, answer.clone());
    }
    Ok((response, accept, extensions))
}

/// Parses and checks a complete request head and its origin, consults the
/// callback and builds the response.
fn accept(
    head: head::Head,
    callback: impl Callback,
    deflate: Option<&DeflateConfig>,
    origin: &OriginPolicy,
) -> Result<ServerUpgradeDone> {
    let (request, leftover) = parse_request(head)?;
    let (response, accept, extensions) = switching_protocols(&request, deflate)?;
    origin.check(&request)?;
    let response = callback
        .on_request(&request, response)
        .map_err(refusal_error)?;
    let deflate = check_callback_response(request.headers(), &response, &accept, extensions)?;
    let response_bytes = serialize_response(&response);
    Ok(ServerUpgradeDone {
        request,
        response,
        response_bytes,
        leftover,
        deflate,
    })
}

/// The error for a callback's refusal: [`Error::Http`] with the refusal.
/// A refusal must be a final response: a 1xx status would tell the client
/// the request is still in progress (101 even that the upgrade
/// succeeded), so it is a server bug (500).
fn refusal_error(refusal: ErrorResponse) -> Error {
    if refusal.status().is_informational() {
        HandshakeFailure::InvalidCallbackResponse(
            "a refusal needs a final status (4xx or 5xx), not 1xx",
        )
        .into()
    } else {
        let (parts, body) = refusal.into_parts();
        Error::Http(Box::new(Response::from_parts(
            parts,
            body.map(String::into_bytes),
        )))
    }
}

/// Parses a complete request head. Rejects methods other than GET and
/// versions other than HTTP/1.1 on the way, since they need the parse.
fn parse_request(head: head::Head) -> Result<(Request<()>, Bytes), HandshakeFailure> {
    let (request, len) = head::parse_fields(head.fields, |room| parse_request_fields(&head, room))?;
    Ok((request, head.into_leftover(len)))
}

/// [`parse_request`] with `room` for the head's header fields: the
/// request, and the length of the head.
fn parse_request_fields<'b>(
    head: &'b head::Head,
    room: &mut [httparse::Header<'b>],
) -> Result<(Request<()>, usize), HandshakeFailure> {
    let mut parsed = httparse::Request::new(room);
    let len = match parsed.parse(&head.bytes)? {
        httparse::Status::Complete(len) => len,
        httparse::Status::Partial => {
            return Err(HandshakeFailure::BadRequest("incomplete request head"));
        }
    };
    // RFC 6455 section 4.2.1: "An HTTP/1.1 or higher GET request".
    if parsed.method != Some("GET") {
        return Err(HandshakeFailure::BadRequest("the method is not GET"));
    }
    if parsed.version != Some(1) {
        return Err(HandshakeFailure::BadRequest("HTTP/1.1 is required"));
    }
    let uri: Uri = parsed
        .path
        .and_then(|target| target.parse().ok())
        .ok_or(HandshakeFailure::BadRequest("invalid request target"))?;
    let headers = head::header_map(parsed.headers)
        .ok_or(HandshakeFailure::BadRequest("invalid header field"))?;
    let mut request = Request::new(());
    *request.uri_mut() = uri;
    *request.version_mut() = Version::HTTP_11;
    *request.headers_mut() = headers;
    Ok((request, len))
}

/// The checks of RFC 6455 section 4.2.1 on a GET HTTP/1.1 request. Returns
/// the `Sec-WebSocket-Key`.
fn check_request<B>(request: &Request<B>) -> Result<&[u8], HandshakeFailure> {
    let headers = request.headers();
    // RFC 9112 section 3.2: "A server MUST respond with a 400 (Bad Request)
    // status code to any HTTP/1.1 request message that lacks a Host header
    // field and to any that contains more than one Host header field line".
    if head::single_value(headers, HOST).is_none() {
        return Err(HandshakeFailure::BadRequest("Host is missing or repeated"));
    }
    if !head::has_token(headers, UPGRADE, "websocket") {
        return Err(HandshakeFailure::BadRequest(
            "Upgrade is missing or lacks websocket",
        ));
    }
    if !head::has_token(headers, CONNECTION, "upgrade") {
        return Err(HandshakeFailure::BadRequest(
            "Connection is missing or lacks upgrade",
        ));
    }
    // Section 4.2.2: "If this version does not match a version understood
    // by the server, the server MUST abort the WebSocket handshake described
    // in this section and instead send an appropriate HTTP error code (such
    // as 426 Upgrade Required) and a |Sec-WebSocket-Version| header field
    // indicating the version(s) the server is capable of understanding."
    if head::single_value(headers, SEC_WEBSOCKET_VERSION) != Some(b"13") {
        return Err(HandshakeFailure::UnsupportedVersion);
    }
    let key = head::single_value(headers, SEC_WEBSOCKET_KEY).ok_or(
        HandshakeFailure::BadRequest("Sec-WebSocket-Key is missing or repeated"),
    )?;
    // Section 4.2.1: "a base64-encoded value that, when decoded, is 16 bytes
    // in length". Sixteen bytes always encode to 24 characters.
    if key.len() != 24 || STANDARD.decode(key).map_or(true, |nonce| nonce.len() != 16) {
        return Err(HandshakeFailure::BadRequest(
            "Sec-WebSocket-Key is not 16 bytes in base64",
        ));
    }
    Ok(key)
}

/// The answer to the client's extension offers: the permessage-deflate
/// parameters and the `Sec-WebSocket-Extensions` value, if an offer was
/// accepted.
///
/// permessage-deflate is the only extension lockgate implements, and only
/// with a deflate config; every other offer is declined (RFC 6455 section
/// 9.1 lets the server ignore offers).
pub(super) fn negotiate_extensions(
    offers: GetAll<'_, HeaderValue>,
    deflate: Option<&DeflateConfig>,
) -> Option<(DeflateParams, HeaderValue)> {
    server_negotiate(deflate?, offers)
}

/// Refuses a callback response that would make the handshake fail or the
/// connection misbehave. Such a response is a bug in the server, reported
/// with 500 rather than sent. Returns the permessage-deflate parameters the
/// response still carries: the callback may remove the negotiated
/// `Sec-WebSocket-Extensions` to decline them.
fn check_callback_response(
    request: &HeaderMap,
    response: &Response<()>,
    accept: &HeaderValue,
    extensions: Option<(DeflateParams, HeaderValue)>,
) -> Result<Option<DeflateParams>, HandshakeFailure> {
    let headers = response.headers();
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        return Err(HandshakeFailure::InvalidCallbackResponse(
            "the status is not 101; refuse a request by returning Err",
        ));
    }
    let intact = head::single_value(headers, SEC_WEBSOCKET_ACCEPT) == Some(accept.as_bytes())
        && head::single_value(headers, UPGRADE)
            .is_some_and(|value| value.eq_ignore_ascii_case(b"websocket"))
        && head::has_token(headers, CONNECTION, "upgrade");
    if !intact {
        return Err(HandshakeFailure::InvalidCallbackResponse(
            "Connection, Upgrade or Sec-WebSocket-Accept was changed",
        ));
    }
    // RFC 6455 section 4.2.2: the server's subprotocol is "one of the
    // values from the |Sec-WebSocket-Protocol| field in the client's
    // handshake".
    let mut chosen = headers.get_all(SEC_WEBSOCKET_PROTOCOL).into_iter();
    if let Some(protocol) = chosen.next() {
        if chosen.next().is_some() {
            return Err(HandshakeFailure::InvalidCallbackResponse(
                "more than one Sec-WebSocket-Protocol",
            ));
        }
        let protocol = protocol.as_bytes().trim_ascii();
        if !head::list_elements(request, SEC_WEBSOCKET_PROTOCOL).any(|offer| offer == protocol) {
            return Err(HandshakeFailure::InvalidCallbackResponse(
                "the subprotocol was not offered by the client",
            ));
        }
    }
    let mut answers = headers.get_all(SEC_WEBSOCKET_EXTENSIONS).into_iter();
    match (answers.next(), extensions) {
        // Nothing negotiated and nothing added, or the callback removed
        // the answer to decline.
        (None, _) => Ok(None),
        (Some(answer), Some((params, negotiated)))
            if *answer == negotiated && answers.next().is_none() =>
        {
            Ok(Some(params))
        }
        (Some(_), _) => Err(HandshakeFailure::InvalidCallbackResponse(
            "Sec-WebSocket-Extensions was changed; lockgate negotiates extensions itself",
        )),
    }
}

/// `HTTP/1.1 <code> <reason>` and CRLF. The reason phrase is the canonical
/// one, or empty for unknown codes (the space stays, RFC 9112 section 4).
fn write_status_line(out: &mut Vec<u8>, status: StatusCode) {
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(status.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(status.canonical_reason().unwrap_or("").as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// A response head as HTTP/1.1 bytes, headers as given.
fn serialize_response(response: &Response<()>) -> Vec<u8> {
    let mut out = Vec::with_capacity(160);
    write_status_line(&mut out, response.status());
    for (name, value) in response.headers() {
        head::write_header(&mut out, name, value);
    }
    out.extend_from_slice(b"\r\n");
    out
}

impl HandshakeFailure {
    /// The HTTP response a server answers this failure with, for an HTTP
    /// server that writes responses itself (hyper, axum): one call from an
    /// [`upgrade_response`] or [`extended_connect_response`] error to what
    /// to send. `version` is the request's: over HTTP/2 and later, where a
    /// response cannot carry `Upgrade`, a version other than 13 is answered
    /// with 400 instead of 426.
    ///
    /// - [`HandshakeFailure::UnsupportedVersion`]: 426 with
    ///   `Sec-WebSocket-Version: 13` (RFC 6455 section 4.2.2) and, over
    ///   HTTP/1.1, `Upgrade: websocket` with `Connection: Upgrade` (RFC 9110
    ///   section 15.5.22 requires a 426 to carry `Upgrade`).
    /// - [`HandshakeFailure::OriginRefused`]: 403 Forbidden, the body
    ///   naming the refused `Origin`.
    /// - Any other error: [`status`](Self::status) with a `text/plain` body
    ///   naming the problem, or just the reason phrase for a 5xx.
    ///
    /// [`extended_connect_response`]: super::extended_connect_response
    ///
    /// # Examples
    ///
    /// With hyper, whose body types convert from `String`:
    ///
    /// ```
    /// use lockgate::handshake::upgrade_response;
    ///
    /// let request = http::Request::get("/ws")
    ///     .header("host", "example.com")
    ///     .header("upgrade", "websocket")
    ///     .header("connection", "upgrade")
    ///     .header("sec-websocket-version", "8")
    ///     .body(())
    ///     .unwrap();
    /// let error = upgrade_response(&request).unwrap_err();
    /// let response = error.to_response(request.version()); // .map(Full::from) for hyper
    /// assert_eq!(response.status(), 426);
    /// assert_eq!(response.headers()["sec-websocket-version"], "13");
    /// ```
    pub fn to_response(&self, version: Version) -> Response<String> {
        let over_http2 = version >= Version::HTTP_2;
        let status = match self {
            HandshakeFailure::UnsupportedVersion if over_http2 => StatusCode::BAD_REQUEST,
            _ => self.status(),
        };
        let mut response = text_response(status, self);
        if matches!(self, HandshakeFailure::UnsupportedVersion) {
            let headers = response.headers_mut();
            headers.insert(SEC_WEBSOCKET_VERSION, HeaderValue::from_static("13"));
            if !over_http2 {
                headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
                headers.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
            }
        }
        response
    }
}

/// `status` with a `text/plain` body naming `error`, or only the reason
/// phrase for a 5xx (a server's internal trouble is its own).
fn text_response(status: StatusCode, error: &dyn fmt::Display) -> Response<String> {
    let body = if status.is_server_error() {
        format!("{}\n", status.canonical_reason().unwrap_or("Server Error"))
    } else {
        format!("{error}\n")
    };
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// The bytes a server writes back before closing the connection when its
/// handshake failed with `error`, as HTTP/1.1 with a reason phrase,
/// `Connection: close` (`Upgrade, close` on a 426) and a `Content-Length`:
///
/// - [`Error::Http`], a [`Callback`]'s refusal: that response as given,
///   without its `Connection`, `Content-Length` and `Transfer-Encoding`
///   (set here), and with 500 instead of a 1xx status;
/// - a [`HandshakeFailure`] ([`Error::handshake_failure`]): as
///   [`HandshakeFailure::to_response`] says;
/// - [`CapacityError::TooManyHeaders`](crate::CapacityError::TooManyHeaders):
///   431; any other error: 400.
///
/// It is meant for the errors of [`ServerUpgrade::receive`].
///
/// # Examples
///
/// ```
/// use lockgate::{Error, HandshakeFailure};
/// use lockgate::handshake::error_response_bytes;
///
/// let error = Error::from(HandshakeFailure::UnsupportedVersion);
/// let text = String::from_utf8(error_response_bytes(&error)).unwrap();
/// assert!(text.starts_with("HTTP/1.1 426 Upgrade Required\r\n"));
/// assert!(text.contains("\r\nSec-WebSocket-Version: 13\r\n"));
/// ```
pub fn error_response_bytes(error: &Error) -> Vec<u8> {
    // The failure whose own answer to send: lockgate's, or the version
    // other than 13 that tungstenite names MissingSecWebSocketVersionHeader.
    let failure = match error {
        Error::Protocol(ProtocolError::MissingSecWebSocketVersionHeader) => {
            Some(&HandshakeFailure::UnsupportedVersion)
        }
        other => other.handshake_failure(),
    };
    let (status, mut headers, body) = match (error, failure) {
        (_, Some(failure)) => {
            let (parts, body) = failure.to_response(Version::HTTP_11).into_parts();
            (parts.status, parts.headers, body.into_bytes())
        }
        (Error::Http(refusal), None) if !refusal.status().is_informational() => {
            let mut headers = refusal.headers().clone();
            for name in [CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING] {
                headers.remove(name);
            }
            let body = refusal.body().clone().unwrap_or_default();
            (refusal.status(), headers, body)
        }
        (Error::Http(_), None) => {
            let response = text_response(StatusCode::INTERNAL_SERVER_ERROR, error);
            let (parts, body) = response.into_parts();
            (parts.status, parts.headers, body.into_bytes())
        }
        (other, None) => {
            let status = match other {
                Error::Capacity(crate::error::CapacityError::TooManyHeaders) => {
                    StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
                }
                _ => StatusCode::BAD_REQUEST,
            };
            let (parts, body) = text_response(status, other).into_parts();
            (parts.status, parts.headers, body.into_bytes())
        }
    };
    if matches!(failure, Some(HandshakeFailure::UnsupportedVersion)) {
        headers.insert(CONNECTION, HeaderValue::from_static("Upgrade, close"));
    } else {
        headers.insert(CONNECTION, HeaderValue::from_static("close"));
    }
    // RFC 9110 section 8.6: no Content-Length (and no body) in a 1xx or 204.
    let bodyless = status.is_informational() || status == StatusCode::NO_CONTENT;
    if !bodyless {
        headers.insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
    }
    let mut out = Vec::with_capacity(256 + body.len());
    write_status_line(&mut out, status);
    for (name, value) in &headers {
        head::write_header(&mut out, name, value);
    }
    out.extend_from_slice(b"\r\n");
    if !bodyless {
        out.extend_from_slice(&body);
    }
    out
}

/// The subprotocol to answer an upgrade request with: the first of
/// `supported` (the server's order of preference) that the client offered
/// in `Sec-WebSocket-Protocol`, compared exactly. `None` if there is none
/// in common; the connection then has no subprotocol (or refuse it, if
/// one is required).
///
/// Put the result in the response's `Sec-WebSocket-Protocol`; the axum
/// integration of tokio-lockgate does this for you.
///
/// # Examples
///
/// ```
/// use lockgate::handshake::choose_subprotocol;
///
/// let request = http::Request::get("/ws")
///     .header("sec-websocket-protocol", "chat.v1, chat.v2")
///     .body(())
///     .unwrap();
/// assert_eq!(choose_subprotocol(&request, &["chat.v2", "chat.v1"]), Some("chat.v2"));
/// assert_eq!(choose_subprotocol(&request, &["mqtt"]), None);
/// ```
pub fn choose_subprotocol<'s, B, P: AsRef<str>>(
    request: &Request<B>,
    supported: &'s [P],
) -> Option<&'s str> {
    supported.iter().map(AsRef::as_ref).find(|protocol| {
        head::list_elements(request.headers(), SEC_WEBSOCKET_PROTOCOL)
            .any(|offer| offer == protocol.as_bytes())
    })
}

#[cfg(test)]
#[allow(
    clippy::result_large_err,
    reason = "callbacks return ErrorResponse by value"
)]
mod tests {
    use super::*;

    const REQUEST: &str = "GET /chat?room=1 HTTP/1.1\r\nHost: example.com\r\nUpgrade: websocket\r\n\
                           Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
                           Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: chat, superchat\r\n\r\n";

    fn request_with(replace: &str, with: &str) -> String {
        assert!(REQUEST.contains(replace), "{replace}");
        REQUEST.replacen(replace, with, 1)
    }

    fn receive_with(callback: impl Callback, input: &[u8]) -> Result<Option<ServerUpgradeDone>> {
        ServerUpgrade::new(callback).receive(input)
    }

    /// lockgate's reason for a bad request, or tungstenite's variant
    /// where it has one for the condition.
    fn bad_request(result: Result<Option<ServerUpgradeDone>>) -> String {
        match result.map_err(Error::into_detail) {
            Err(Ok(crate::error::Detail::Handshake(HandshakeFailure::BadRequest(why)))) => {
                why.into()
            }
            Err(Err(Error::Protocol(error))) => format!("{error:?}"),
            other => panic!("expected a bad request, got {other:?}"),
        }
    }

    fn failure(result: Result<Option<ServerUpgradeDone>>) -> HandshakeFailure {
        match result.map_err(Error::into_detail) {
            Err(Ok(crate::error::Detail::Handshake(error))) => error,
            other => panic!("expected a handshake error, got {other:?}"),
        }
    }

    fn with_protocol(protocol: &'static str) -> impl Callback {
        move |_: &Request<()>, mut response: Response<()>| {
            response
                .headers_mut()
                .append(SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static(protocol));
            Ok(response)
        }
    }

    #[test]
    fn accepts_and_answers() {
        let done = receive_with(NoCallback, REQUEST.as_bytes())
            .unwrap()
            .unwrap();
        assert_eq!(done.request.uri(), "/chat?room=1");
        assert_eq!(
            done.response_bytes,
            b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
              Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"
        );
        assert!(done.leftover.is_empty());
    }

    #[test]
    fn every_header_name_goes_out_in_canonical_case() {
        let callback = |_: &Request<()>, mut response: Response<()>| {
            let headers = response.headers_mut();
            headers.append("x-request-id", HeaderValue::from_static("42"));
            headers.append("set-cookie", HeaderValue::from_static("a=1"));
            headers.append("www-authenticate", HeaderValue::from_static("Basic"));
            Ok(response)
        };
        let done = receive_with(callback, REQUEST.as_bytes()).unwrap().unwrap();
        assert_eq!(
            std::str::from_utf8(&done.response_bytes).unwrap(),
            "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
             Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nX-Request-Id: 42\r\n\
             Set-Cookie: a=1\r\nWWW-Authenticate: Basic\r\n\r\n"
        );
    }

    #[test]
    fn one_byte_at_a_time_is_linear() {
        // ~60 KiB of head in 100 header fields, each byte on its own.
        let mut request = REQUEST.trim_end_matches("\r\n").to_owned() + "\r\n";
        for i in 0..(100 - 6) {
            request.push_str(&format!("X-Filler-{i:03}: {}\r\n", "f".repeat(640)));
        }
        request.push_str("\r\n");
        let mut input = request.into_bytes();
        let head_len = input.len();
        assert!(head_len > 59 * 1024 && head_len < 64 * 1024, "{head_len}");
        input.extend_from_slice(b"\x81\x85frame");
        let mut handshake = ServerUpgrade::new(NoCallback);
        let mut done = None;
        for (i, byte) in input.iter().enumerate() {
            if let Some(d) = handshake.receive(std::slice::from_ref(byte)).unwrap() {
                assert_eq!(i + 1, head_len, "completes on the last head byte");
                done = Some(d);
                break;
            }
        }
        let done = done.expect("complete");
        assert_eq!(done.request.headers().len(), 100);
        assert_eq!(handshake.scanned(), head_len, "each byte scanned once");
    }

    #[test]
    fn bad_requests() {
        let cases = [
            (request_with("GET", "POST"), "WrongHttpMethod"),
            (request_with("HTTP/1.1", "HTTP/1.0"), "WrongHttpVersion"),
            (
                request_with("Host: example.com\r\n", ""),
                "Host is missing or repeated",
            ),
            (
                request_with("Host: example.com\r\n", "Host: a\r\nHost: b\r\n"),
                "Host is missing or repeated",
            ),
            (
                request_with("Upgrade: websocket", "Upgrade: h2c"),
                "MissingUpgradeWebSocketHeader",
            ),
            (
                request_with("Connection: Upgrade", "Connection: keep-alive"),
                "MissingConnectionUpgradeHeader",
            ),
            (
                request_with("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n", ""),
                "MissingSecWebSocketKey",
            ),
            (
                request_with("dGhlIHNhbXBsZSBub25jZQ==", "dGhlIHNhbXBsZSBub25jZQ"),
                "InvalidSecWebSocketKey",
            ),
            (
                request_with("dGhlIHNhbXBsZSBub25jZQ==", "dGhlIHNhbXBsZSBub25jZXM="),
                "InvalidSecWebSocketKey",
            ),
            (
                request_with("dGhlIHNhbXBsZSBub25jZQ==", "!GhlIHNhbXBsZSBub25jZQ=="),
                "InvalidSecWebSocketKey",
            ),
        ];
        for (request, expected) in cases {
            let reason = bad_request(receive_with(NoCallback, request.as_bytes()));
            assert_eq!(reason, expected, "{request:?}");
        }
    }

    #[test]
    fn lenient_token_lists() {
        let request = request_with("Upgrade: websocket", "Upgrade: h2c, WebSocket");
        let request = request.replacen("Connection: Upgrade", "Connection: keep-alive, upgrade", 1);
        assert!(
            receive_with(NoCallback, request.as_bytes())
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn unsupported_version() {
        for version in [
            "Sec-WebSocket-Version: 8\r\n",
            "",
            "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Version: 8\r\n",
        ] {
            let request = request_with("Sec-WebSocket-Version: 13\r\n", version);
            // tungstenite's name for it; answered 426 all the same.
            let reason = bad_request(receive_with(NoCallback, request.as_bytes()));
            assert_eq!(reason, "MissingSecWebSocketVersionHeader", "{version:?}");
        }
    }

    #[test]
    fn callback_chooses_an_offered_protocol() {
        let done = receive_with(with_protocol("superchat"), REQUEST.as_bytes())
            .unwrap()
            .unwrap();
        assert_eq!(done.response.headers()[SEC_WEBSOCKET_PROTOCOL], "superchat");
        let text = String::from_utf8(done.response_bytes).unwrap();
        assert!(
            text.contains("\r\nSec-WebSocket-Protocol: superchat\r\n"),
            "{text}"
        );
    }

    #[test]
    fn callback_response_must_stay_a_valid_handshake() {
        let unoffered = failure(receive_with(with_protocol("mqtt"), REQUEST.as_bytes()));
        assert!(
            matches!(unoffered, HandshakeFailure::InvalidCallbackResponse(_)),
            "{unoffered:?}"
        );
        assert_eq!(unoffered.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let no_offer = request_with("Sec-WebSocket-Protocol: chat, superchat\r\n", "");
        let error = failure(receive_with(with_protocol("chat"), no_offer.as_bytes()));
        assert!(
            matches!(error, HandshakeFailure::InvalidCallbackResponse(_)),
            "{error:?}"
        );

        let status_200 = |_: &Request<()>, mut response: Response<()>| {
            *response.status_mut() = StatusCode::OK;
            Ok(response)
        };
        let error = failure(receive_with(status_200, REQUEST.as_bytes()));
        assert!(
            matches!(error, HandshakeFailure::InvalidCallbackResponse(_)),
            "{error:?}"
        );

        let no_accept = |_: &Request<()>, mut response: Response<()>| {
            response.headers_mut().remove(SEC_WEBSOCKET_ACCEPT);
            Ok(response)
        };
        let error = failure(receive_with(no_accept, REQUEST.as_bytes()));
        assert!(
            matches!(error, HandshakeFailure::InvalidCallbackResponse(_)),
            "{error:?}"
        );

        let extension = |_: &Request<()>, mut response: Response<()>| {
            response.headers_mut().insert(
                SEC_WEBSOCKET_EXTENSIONS,
                HeaderValue::from_static("permessage-deflate"),
            );
            Ok(response)
        };
        let error = failure(receive_with(extension, REQUEST.as_bytes()));
        assert!(
            matches!(error, HandshakeFailure::InvalidCallbackResponse(_)),
            "{error:?}"
        );
        let bytes = String::from_utf8(error_response_bytes(&error.into())).unwrap();
        assert!(
            bytes.starts_with("HTTP/1.1 500 Internal Server Error\r\n"),
            "{bytes}"
        );
        assert!(
            !bytes.contains("negotiates"),
            "internal details stay private: {bytes}"
        );
    }

    #[test]
    fn a_refusal_with_an_informational_status_is_a_server_bug() {
        for status in [100, 101, 103, 199] {
            let refuse = move |_: &Request<()>, _: Response<()>| {
                let mut refusal = ErrorResponse::new(Some("go away".into()));
                *refusal.status_mut() = StatusCode::from_u16(status).unwrap();
                Err(refusal)
            };
            let error = failure(receive_with(refuse, REQUEST.as_bytes()));
            assert!(
                matches!(error, HandshakeFailure::InvalidCallbackResponse(_)),
                "{status}: {error:?}"
            );
            assert_eq!(error.status(), StatusCode::INTERNAL_SERVER_ERROR);
            // Even a refusal built by hand is never sent with a 1xx.
            let mut refusal = Response::new(Some(b"go away".to_vec()));
            *refusal.status_mut() = StatusCode::from_u16(status).unwrap();
            let by_hand = Error::Http(Box::new(refusal));
            let bytes = String::from_utf8(error_response_bytes(&by_hand)).unwrap();
            assert!(
                bytes.starts_with("HTTP/1.1 500 Internal Server Error\r\n"),
                "{status}: {bytes}"
            );
            assert!(!bytes.contains("go away"), "{bytes}");
        }
    }

    #[test]
    fn extension_offers_are_declined() {
        let request = request_with(
            "\r\n\r\n",
            "\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n",
        );
        let done = receive_with(NoCallback, request.as_bytes())
            .unwrap()
            .unwrap();
        assert!(
            !done
                .response
                .headers()
                .contains_key(SEC_WEBSOCKET_EXTENSIONS)
        );
    }

    #[test]
    fn error_responses() {
        let text = |error: HandshakeFailure| {
            String::from_utf8(error_response_bytes(&error.into())).unwrap()
        };
        let refused = |refusal: ErrorResponse| {
            let error = refusal_error(refusal);
            String::from_utf8(error_response_bytes(&error)).unwrap()
        };

        let bad = text(HandshakeFailure::BadRequest("the method is not GET"));
        let body = "WebSocket protocol error: Unsupported HTTP method used - only GET is allowed\n";
        assert_eq!(
            bad,
            format!(
                "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n\
                 Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
        );

        let large = text(HandshakeFailure::HeadTooLarge);
        assert!(
            large.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"),
            "{large}"
        );
        assert!(large.contains("\r\nConnection: close\r\n"), "{large}");

        let version = text(HandshakeFailure::UnsupportedVersion);
        assert!(
            version.starts_with("HTTP/1.1 426 Upgrade Required\r\n"),
            "{version}"
        );
        assert!(
            version.contains("\r\nSec-WebSocket-Version: 13\r\n"),
            "{version}"
        );
        assert!(version.contains("\r\nUpgrade: websocket\r\n"), "{version}");

        let mut refusal = ErrorResponse::new(Some("go away".into()));
        *refusal.status_mut() = StatusCode::FORBIDDEN;
        refusal
            .headers_mut()
            .insert("x-reason", HeaderValue::from_static("policy"));
        refusal
            .headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("keep-alive"));
        refusal
            .headers_mut()
            .insert(CONTENT_LENGTH, HeaderValue::from_static("999"));
        let rejected = refused(refusal);
        assert_eq!(
            rejected,
            "HTTP/1.1 403 Forbidden\r\nX-Reason: policy\r\nConnection: close\r\nContent-Length: 7\r\n\r\ngo away"
        );

        let mut odd = ErrorResponse::new(None);
        *odd.status_mut() = StatusCode::from_u16(599).unwrap();
        let odd = refused(odd);
        assert_eq!(
            odd,
            "HTTP/1.1 599 \r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
        );

        let mut no_content = ErrorResponse::new(Some("dropped".into()));
        *no_content.status_mut() = StatusCode::NO_CONTENT;
        let no_content = refused(no_content);
        assert_eq!(
            no_content,
            "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn finished_handshake_refuses_more_input() {
        let mut handshake = ServerUpgrade::new(NoCallback);
        let done = handshake.receive(REQUEST.as_bytes()).unwrap().unwrap();
        assert!(done.leftover.is_empty());
        assert!(matches!(handshake.receive(b"x"), Err(Error::AlreadyClosed)));
        let mut handshake = ServerUpgrade::new(NoCallback);
        assert!(handshake.receive(b"BREW / HTTP/1.1\r\n\r\n").is_err());
        assert!(matches!(
            handshake.receive(REQUEST.as_bytes()),
            Err(Error::AlreadyClosed)
        ));
    }
}
