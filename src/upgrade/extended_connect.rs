//! WebSockets over HTTP/2 (RFC 8441) and HTTP/3 (RFC 9220): the opening
//! handshake as an extended CONNECT request on one stream of a connection
//! an HTTP library owns.
//!
//! The HTTP library (hyper, h2) carries the request and the response;
//! these functions only decide what they say. The `:protocol`
//! pseudo-header is not part of [`http::Request`] (hyper and h2 keep it in
//! the request's extensions as `hyper::ext::Protocol`), so it is passed
//! alongside.

use http::header::{
    CONNECTION, HOST, SEC_WEBSOCKET_EXTENSIONS, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_VERSION, UPGRADE,
};
use http::uri::{Authority, Scheme};
use http::{Method, Request, Response, StatusCode, Uri, Version};

use super::client_upgrade::{check_extensions, check_protocol, complete_request};
use super::head;
use super::origin::OriginPolicy;
use super::server_upgrade::negotiate_extensions;
use crate::deflate::params::client_offer;
use crate::deflate::{DeflateConfig, DeflateParams};
use crate::error::{Error, HandshakeFailure, Result, UrlError};

/// The `:protocol` value of a WebSocket extended CONNECT (RFC 8441
/// section 4).
pub const WEBSOCKET_PROTOCOL: &str = "websocket";

/// Checks a WebSocket request over HTTP/2 (RFC 8441) or HTTP/3 (RFC
/// 9220), an extended CONNECT with `:protocol` = `protocol`, and builds
/// its `200 OK` response, accepting permessage-deflate with `deflate`'s
/// settings as [`upgrade_response_with_deflate`] does.
///
/// The request must be CONNECT over HTTP/2 or later with `:protocol`
/// `websocket` and `Sec-WebSocket-Version: 13`; there is no key and no
/// accept (RFC 8441 section 5). Its `Origin` must then pass `origin`
/// ([`OriginPolicy::default`]: no `Origin`, or the server's own, compared
/// with the request URI's authority, i.e. `:authority`). The response carries the
/// `Sec-WebSocket-Extensions` answer if an offer was accepted; add a
/// `Sec-WebSocket-Protocol` chosen among the client's offers (see
/// [`choose_subprotocol`](super::choose_subprotocol)). Once the HTTP
/// library has sent it, the stream's body in both directions is the
/// WebSocket connection: hand it to
/// [`WebSocketContext::with_deflate`](crate::WebSocketContext::with_deflate)
/// with [`Role::Server`](crate::Role::Server).
///
/// The HTTP/2 server must advertise `SETTINGS_ENABLE_CONNECT_PROTOCOL`
/// (hyper: `http2().enable_connect_protocol()`), or clients never send
/// such a request.
///
/// [`upgrade_response_with_deflate`]: super::upgrade_response_with_deflate
///
/// # Errors
///
/// [`HandshakeFailure::BadRequest`] (400) for anything else,
/// [`HandshakeFailure::UnsupportedVersion`] for a version other than 13 (see
/// [`HandshakeFailure::to_response`] for the answer over HTTP/2), and
/// [`HandshakeFailure::OriginRefused`] (403) for an `Origin` the policy
/// refuses.
///
/// # Examples
///
/// ```
/// use lockgate::handshake::{OriginPolicy, WEBSOCKET_PROTOCOL, extended_connect_response};
///
/// let request = http::Request::connect("https://example.com/chat")
///     .version(http::Version::HTTP_2)
///     .header("sec-websocket-version", "13")
///     .header("origin", "https://example.com")
///     .body(())
///     .unwrap();
/// let policy = OriginPolicy::default();
/// let (response, deflate) =
///     extended_connect_response(&request, Some(WEBSOCKET_PROTOCOL), None, &policy).unwrap();
/// assert_eq!(response.status(), 200);
/// assert!(deflate.is_none());
/// ```
pub fn extended_connect_response<B>(
    request: &Request<B>,
    protocol: Option<&str>,
    deflate: Option<&DeflateConfig>,
    origin: &OriginPolicy,
) -> Result<(Response<()>, Option<DeflateParams>), HandshakeFailure> {
    check_extended_connect(request, protocol)?;
    origin.check(request)?;
    let deflate = crate::deflate::usable(deflate.copied());
    let mut response = Response::new(());
    // RFC 8441 section 5: a 2xx accepts.
    *response.status_mut() = StatusCode::OK;
    *response.version_mut() = request.version();
    let extensions = negotiate_extensions(
        request.headers().get_all(SEC_WEBSOCKET_EXTENSIONS),
        deflate.as_ref(),
    );
    let params = extensions.map(|(params, answer)| {
        response
            .headers_mut()
            .insert(SEC_WEBSOCKET_EXTENSIONS, answer);
        params
    });
    Ok((response, params))
}

/// Whether `request` is a WebSocket extended CONNECT (RFC 8441 section 4
/// and 5) rather than an HTTP/1.1 upgrade: CONNECT over HTTP/2 or later.
/// It may still be an invalid one; [`extended_connect_response`] says.
pub fn is_extended_connect<B>(request: &Request<B>) -> bool {
    request.method() == Method::CONNECT && request.version() >= Version::HTTP_2
}

/// RFC 8441 sections 4 and 5 on a request as an HTTP library parsed it.
fn check_extended_connect<B>(
    request: &Request<B>,
    protocol: Option<&str>,
) -> Result<(), HandshakeFailure> {
    if request.method() != Method::CONNECT {
        return Err(HandshakeFailure::BadRequest(
            "a WebSocket over HTTP/2 is an extended CONNECT",
        ));
    }
    if request.version() < Version::HTTP_2 {
        return Err(HandshakeFailure::BadRequest(
            "extended CONNECT needs HTTP/2 or later",
        ));
    }
    if !protocol.is_some_and(|p| p.eq_ignore_ascii_case(WEBSOCKET_PROTOCOL)) {
        return Err(HandshakeFailure::BadRequest(
            ":protocol is missing or not websocket",
        ));
    }
    // RFC 8441 section 5: "the Sec-WebSocket-Version [...] header fields
    // are used as defined in RFC 6455".
    if head::single_value(request.headers(), SEC_WEBSOCKET_VERSION) != Some(b"13") {
        return Err(HandshakeFailure::UnsupportedVersion);
    }
    Ok(())
}

/// The client side of a WebSocket over HTTP/2 (RFC 8441): the extended
/// CONNECT request to send through an HTTP/2 client, and the check of its
/// response.
///
/// The request is built from a `ws://`/`wss://` URL or a request as for
/// [`ClientUpgrade`](super::ClientUpgrade) (subprotocol offers and
/// other headers are kept), as CONNECT over HTTP/2 with the URL's path,
/// `:scheme` `http` or `https` and its authority; `Host`, `Connection`,
/// `Upgrade` and `Sec-WebSocket-Key` are left out, since HTTP/2 forbids
/// the first three and RFC 8441 does without the key. Send it with
/// `:protocol` [`WEBSOCKET_PROTOCOL`] (hyper: the
/// `hyper::ext::Protocol` extension), pass the response head to
/// [`check_response`](Self::check_response), and the stream's body is the
/// connection, for a [`WebSocketContext`](crate::WebSocketContext) with
/// [`Role::Client`](crate::Role::Client) and the negotiated deflate
/// parameters.
///
/// # Examples
///
/// ```
/// use lockgate::handshake::ExtendedConnect;
///
/// let connect = ExtendedConnect::new("wss://example.com/chat", None).unwrap();
/// let request = connect.request();
/// assert_eq!(request.method(), http::Method::CONNECT);
/// assert_eq!(request.version(), http::Version::HTTP_2);
/// assert_eq!(request.uri(), "https://example.com/chat");
/// assert!(request.headers().get("sec-websocket-key").is_none());
///
/// let response = http::Response::builder()
///     .version(http::Version::HTTP_2)
///     .body(())
///     .unwrap();
/// assert!(connect.check_response(&response).unwrap().is_none());
/// ```
#[derive(Debug, Clone)]
pub struct ExtendedConnect {
    request: Request<()>,
    deflate: Option<DeflateConfig>,
}

impl ExtendedConnect {
    /// The extended CONNECT for `request`, offering permessage-deflate with
    /// `deflate`'s settings (`None`: no extension).
    ///
    /// # Errors
    ///
    /// [`Error::Url`] as for
    /// [`ClientUpgrade::with_deflate`](super::ClientUpgrade::with_deflate).
    pub fn new(
        request: impl super::client_upgrade::IntoClientRequest,
        deflate: Option<DeflateConfig>,
    ) -> Result<Self> {
        let request = complete_request(request.into_client_request()?)?;
        let deflate = crate::deflate::usable(deflate);
        let (mut parts, ()) = request.into_parts();
        let uri = &parts.uri;
        let scheme = match uri.scheme_str() {
            Some(s) if s.eq_ignore_ascii_case("wss") => Scheme::HTTPS,
            Some(_) => Scheme::HTTP,
            // An origin-form target: the Host header names the authority.
            None => Scheme::HTTPS,
        };
        let authority = match uri.authority() {
            Some(authority) => authority.clone(),
            None => parts
                .headers
                .get(HOST)
                .and_then(|host| Authority::try_from(host.as_bytes()).ok())
                .ok_or_else(|| bad_url(format!("{uri} has no authority")))?,
        };
        let mut builder = Uri::builder().scheme(scheme).authority(authority);
        if let Some(target) = uri.path_and_query() {
            builder = builder.path_and_query(target.clone());
        } else {
            builder = builder.path_and_query("/");
        }
        parts.uri = builder
            .build()
            .map_err(|e| bad_url(format!("{uri}: {e}")))?;
        parts.method = Method::CONNECT;
        parts.version = Version::HTTP_2;
        for name in [HOST, CONNECTION, UPGRADE, SEC_WEBSOCKET_KEY] {
            parts.headers.remove(name);
        }
        if let Some(config) = &deflate {
            if parts.headers.contains_key(SEC_WEBSOCKET_EXTENSIONS) {
                return Err(bad_url(
                    "the request already has Sec-WebSocket-Extensions; \
                     lockgate writes the permessage-deflate offer itself"
                        .into(),
                ));
            }
            parts
                .headers
                .insert(SEC_WEBSOCKET_EXTENSIONS, client_offer(config));
        }
        Ok(Self {
            request: Request::from_parts(parts, ()),
            deflate,
        })
    }

    /// The request to send (with `:protocol` [`WEBSOCKET_PROTOCOL`]).
    pub fn request(&self) -> &Request<()> {
        &self.request
    }

    /// Checks the server's answer (RFC 8441 section 5: a 2xx status
    /// accepts) and returns the agreed permessage-deflate parameters.
    ///
    /// # Errors
    ///
    /// [`Error::Http`] for a status other than 2xx
    /// (without a body: the HTTP library has it), and
    /// [`HandshakeFailure::BadResponse`] for a subprotocol or an extension
    /// that was not offered.
    pub fn check_response<B>(&self, response: &Response<B>) -> Result<Option<DeflateParams>> {
        if !response.status().is_success() {
            let mut refusal = Response::new(None);
            *refusal.status_mut() = response.status();
            *refusal.version_mut() = response.version();
            *refusal.headers_mut() = response.headers().clone();
            return Err(Error::Http(Box::new(refusal)));
        }
        check_protocol(self.request.headers(), response.headers())?;
        Ok(check_extensions(
            self.request.headers().get_all(SEC_WEBSOCKET_EXTENSIONS),
            response.headers().get_all(SEC_WEBSOCKET_EXTENSIONS),
            self.deflate.as_ref(),
        )?)
    }
}

fn bad_url(message: String) -> Error {
    UrlError::invalid(message)
}

#[cfg(test)]
mod tests {
    use http::header::SEC_WEBSOCKET_PROTOCOL;

    use super::*;

    fn connect(version: &str) -> Request<()> {
        Request::connect("https://example.com/chat?room=1")
            .version(Version::HTTP_2)
            .header(SEC_WEBSOCKET_VERSION, version)
            .header(SEC_WEBSOCKET_PROTOCOL, "chat.v2, chat.v1")
            .header(
                SEC_WEBSOCKET_EXTENSIONS,
                "permessage-deflate; client_max_window_bits",
            )
            .body(())
            .unwrap()
    }

    #[test]
    fn accepts_a_websocket_extended_connect() {
        let request = connect("13");
        assert!(is_extended_connect(&request));
        for protocol in ["websocket", "WebSocket"] {
            let (response, _) =
                extended_connect_response(&request, Some(protocol), None, &OriginPolicy::default())
                    .unwrap();
            assert_eq!(response.status(), StatusCode::OK);
            assert_eq!(response.version(), Version::HTTP_2);
            assert!(response.headers().get(SEC_WEBSOCKET_EXTENSIONS).is_none());
        }
    }

    #[cfg(feature = "deflate")]
    #[test]
    fn negotiates_deflate_as_over_http1() {
        let config = DeflateConfig::default();
        let (response, params) = extended_connect_response(
            &connect("13"),
            Some("websocket"),
            Some(&config),
            &OriginPolicy::default(),
        )
        .unwrap();
        assert!(params.is_some());
        assert_eq!(
            response.headers()[SEC_WEBSOCKET_EXTENSIONS],
            "permessage-deflate"
        );
    }

    #[test]
    fn refusals() {
        let get = Request::get("https://example.com/")
            .version(Version::HTTP_2)
            .header(SEC_WEBSOCKET_VERSION, "13")
            .body(())
            .unwrap();
        let mut http11 = connect("13");
        *http11.version_mut() = Version::HTTP_11;
        let cases: [(&str, Request<()>, Option<&str>, u16); 6] = [
            ("GET", get, Some("websocket"), 400),
            ("HTTP/1.1", http11, Some("websocket"), 400),
            ("no :protocol", connect("13"), None, 400),
            ("other :protocol", connect("13"), Some("webtransport"), 400),
            ("version 8", connect("8"), Some("websocket"), 426),
            ("empty version", connect(""), Some("websocket"), 426),
        ];
        for (name, request, protocol, status) in cases {
            let error =
                extended_connect_response(&request, protocol, None, &OriginPolicy::default())
                    .unwrap_err();
            assert_eq!(error.status(), status, "{name}: {error}");
        }
    }

    #[test]
    fn client_request_is_an_extended_connect() {
        let request = Request::get("ws://example.com:8080/feed?x=1")
            .header(SEC_WEBSOCKET_PROTOCOL, "feed.v1")
            .header("authorization", "Bearer t")
            .body(())
            .unwrap();
        let connect = ExtendedConnect::new(request, None).unwrap();
        let request = connect.request();
        assert_eq!(request.method(), Method::CONNECT);
        assert_eq!(request.version(), Version::HTTP_2);
        assert_eq!(request.uri(), "http://example.com:8080/feed?x=1");
        let headers = request.headers();
        for absent in [HOST, CONNECTION, UPGRADE, SEC_WEBSOCKET_KEY] {
            assert!(headers.get(&absent).is_none(), "{absent}");
        }
        assert_eq!(headers[SEC_WEBSOCKET_VERSION], "13");
        assert_eq!(headers[SEC_WEBSOCKET_PROTOCOL], "feed.v1");
        assert_eq!(headers["authorization"], "Bearer t");
    }

    #[test]
    fn client_checks_the_response() {
        let request = Request::get("wss://example.com/")
            .header(SEC_WEBSOCKET_PROTOCOL, "a, b")
            .body(())
            .unwrap();
        let connect = ExtendedConnect::new(request, None).unwrap();
        let respond = |status: u16, protocol: Option<&str>, extension: Option<&str>| {
            let mut response = Response::builder().status(status).version(Version::HTTP_2);
            if let Some(protocol) = protocol {
                response = response.header(SEC_WEBSOCKET_PROTOCOL, protocol);
            }
            if let Some(extension) = extension {
                response = response.header(SEC_WEBSOCKET_EXTENSIONS, extension);
            }
            connect.check_response(&response.body(()).unwrap())
        };
        assert!(respond(200, Some("b"), None).unwrap().is_none());
        assert!(respond(200, None, None).is_ok());
        match respond(403, None, None) {
            Err(Error::Http(response)) => {
                assert_eq!(response.status(), 403);
            }
            other => panic!("{other:?}"),
        }
        assert!(respond(200, Some("c"), None).is_err());
        assert!(respond(200, None, Some("permessage-deflate")).is_err());
    }
}
