//! WebSockets on connections hyper 1 upgraded: HTTP/1.1 `Upgrade:
//! websocket` and HTTP/2 extended CONNECT (RFC 8441), server and client.
//!
//! The handshake decisions are lockgate's sans-IO ones
//! ([`upgrade_response_with_deflate`], [`extended_connect_response`],
//! [`ExtendedConnect`]); this module moves them through hyper and wraps the
//! upgraded connection. The axum extractor ([`crate::axum`]) is built on
//! it.
//!
//! Serving plain hyper: answer the request with [`accept_response`], and
//! once hyper has sent it, [`accepted`] gives the WebSocket.
//!
//! Every request's `Origin` is checked against the settings'
//! [`OriginPolicy`] (by default: no `Origin`, or the server's own, as the
//! `Host` or `:authority` names it); any other is refused with 403, so
//! that no other site's page can open a WebSocket with the user's
//! cookies.
//!
//! ```no_run
//! use http_body_util::Full;
//! use hyper::body::{Bytes, Incoming};
//! use tokio_lockgate::upgrade::{UpgradeSettings, accept_response, accepted};
//!
//! async fn serve(mut request: hyper::Request<Incoming>) -> hyper::Response<Full<Bytes>> {
//!     let settings = UpgradeSettings::default().protocols(["chat.v1"]);
//!     let accept = match accept_response(&mut request, settings) {
//!         Ok(accept) => accept,
//!         // 400, 403 for another site's page, or 426 with
//!         // Sec-WebSocket-Version: 13, in one call.
//!         Err(refusal) => return refusal.to_response().map(Full::from),
//!     };
//!     let response = accept.response.clone().map(|()| Full::default());
//!     tokio::spawn(async move {
//!         let Ok(mut ws) = accepted(accept).await else { return };
//!         while let Ok(message) = ws.read().await {
//!             if message.is_data() && ws.send(message).await.is_err() {
//!                 break;
//!             }
//!         }
//!     });
//!     response
//! }
//! ```

use std::borrow::Cow;
use std::fmt;
use std::io;

use ::hyper::body::Body;
use ::hyper::client::conn::http2::SendRequest;
use ::hyper::ext::Protocol;
use ::hyper::upgrade::{OnUpgrade, Upgraded};
use hyper_util::rt::TokioIo;
use lockgate::deflate::{DeflateConfig, DeflateParams};
use lockgate::handshake::{
    ExtendedConnect, IntoClientRequest, OriginPolicy, WEBSOCKET_PROTOCOL, choose_subprotocol,
    extended_connect_response, is_extended_connect, upgrade_response_with_deflate,
};
use lockgate::http::header::{HeaderValue, SEC_WEBSOCKET_PROTOCOL};
use lockgate::http::{Request, Response, StatusCode, Version};
use lockgate::{Config, Error, HandshakeFailure, Result, Role, WebSocketContext};

pub use crate::h2_dial::{DialedStream, connect_async_h2};
use crate::stream::WebSocketStream;

/// A WebSocket on a connection hyper upgraded (HTTP/1.1) or on an HTTP/2
/// stream (extended CONNECT): what axum handlers and hyper services get.
pub type UpgradedWebSocket = WebSocketStream<TokioIo<Upgraded>>;

/// How a server accepts upgrades: the connection's [`Config`] (whose
/// [`deflate`](Config::deflate) setting decides whether permessage-deflate
/// is accepted), the subprotocols it speaks, in order of preference, and
/// the [`OriginPolicy`] (which pages may open a WebSocket).
#[derive(Debug, Clone, Default)]
pub struct UpgradeSettings {
    config: Config,
    protocols: Vec<Cow<'static, str>>,
    origin: OriginPolicy,
}

impl UpgradeSettings {
    /// The connection's configuration. Default: [`Config::default`], which
    /// does not accept permessage-deflate.
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Accepts permessage-deflate with default settings (`true`), or never
    /// (`false`). [`config`](Self::config) with a
    /// [`DeflateConfig`] chooses the settings.
    pub fn deflate(mut self, on: bool) -> Self {
        let deflate = on.then(|| {
            self.config
                .get_deflate()
                .copied()
                .unwrap_or_else(DeflateConfig::default)
        });
        self.config = self.config.deflate(deflate);
        self
    }

    /// The subprotocols the server speaks, most preferred first: the first
    /// one the client offers is chosen. Without a match the connection has
    /// no subprotocol.
    pub fn protocols<I>(mut self, protocols: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<Cow<'static, str>>,
    {
        self.protocols = protocols.into_iter().map(Into::into).collect();
        self
    }

    /// Which pages may open a WebSocket: a request whose `Origin` `policy`
    /// refuses is answered with 403. Default:
    /// [`OriginPolicy::same_origin`] (no `Origin`, or the server's own:
    /// the host and port of `Host` over HTTP/1.1, of `:authority` over
    /// HTTP/2).
    pub fn origin_policy(mut self, policy: OriginPolicy) -> Self {
        self.origin = policy;
        self
    }

    /// See [`config`](Self::config).
    pub fn get_config(&self) -> &Config {
        &self.config
    }

    /// See [`protocols`](Self::protocols).
    pub fn get_protocols(&self) -> &[Cow<'static, str>] {
        &self.protocols
    }

    /// See [`origin_policy`](Self::origin_policy).
    pub fn get_origin_policy(&self) -> &OriginPolicy {
        &self.origin
    }
}

/// A request found to be a valid WebSocket upgrade, with the response to
/// send for it; [`accepted`] waits for hyper to hand over the connection.
#[must_use = "send `response`, then await `accepted`"]
pub struct Accept {
    /// The response to send: `101 Switching Protocols` over HTTP/1.1,
    /// `200 OK` over HTTP/2, with the chosen subprotocol and the
    /// permessage-deflate answer. Headers may be added.
    pub response: Response<()>,
    on_upgrade: OnUpgrade,
    context: WebSocketContext,
}

impl Accept {
    /// The subprotocol the response chose, if any.
    pub fn subprotocol(&self) -> Option<&str> {
        self.context.subprotocol()
    }

    /// The permessage-deflate parameters the response agreed to.
    pub fn deflate(&self) -> Option<&DeflateParams> {
        self.context.deflate()
    }
}

impl fmt::Debug for Accept {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Accept")
            .field("response", &self.response)
            .field("subprotocol", &self.subprotocol())
            .finish_non_exhaustive()
    }
}

/// Why a request was not accepted as a WebSocket, with what to answer it.
#[derive(Debug)]
pub struct Refusal {
    error: RefusalKind,
    version: Version,
}

#[derive(Debug)]
enum RefusalKind {
    Handshake(HandshakeFailure),
    /// hyper did not attach an `OnUpgrade`: a server set up without
    /// upgrades, or a request that was already upgraded.
    NotUpgradable,
}

impl Refusal {
    pub(crate) fn new(error: HandshakeFailure, version: Version) -> Self {
        // The one place an upgrade that lockgate's handshake driver did not
        // run is refused: counted and traced as a handshake failure.
        #[cfg(any(feature = "metrics", feature = "tracing"))]
        lockgate::observe::record_upgrade_refusal(&error);
        Self {
            error: RefusalKind::Handshake(error),
            version,
        }
    }

    /// The HTTP status of [`to_response`](Self::to_response).
    pub fn status(&self) -> StatusCode {
        self.to_response().status()
    }

    /// The handshake error, if the request itself was at fault.
    pub fn handshake_error(&self) -> Option<&HandshakeFailure> {
        match &self.error {
            RefusalKind::Handshake(error) => Some(error),
            RefusalKind::NotUpgradable => None,
        }
    }

    /// The answer: 400, 403 for an `Origin` the policy refuses, 426 with
    /// `Sec-WebSocket-Version: 13` (400 with it over HTTP/2), or 500 if the
    /// server cannot upgrade connections. See
    /// [`HandshakeFailure::to_response`].
    pub fn to_response(&self) -> Response<String> {
        match &self.error {
            RefusalKind::Handshake(error) => error.to_response(self.version),
            RefusalKind::NotUpgradable => {
                let mut response = Response::new(
                    "this connection cannot be upgraded; serve it with upgrades enabled \
                     (hyper: serve_connection(..).with_upgrades(); HTTP/2: \
                     enable_connect_protocol())\n"
                        .to_owned(),
                );
                *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
                response
            }
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.error {
            RefusalKind::Handshake(error) => write!(f, "WebSocket upgrade refused: {error}"),
            RefusalKind::NotUpgradable => f.write_str(
                "WebSocket upgrade impossible: the HTTP server did not make the connection upgradable",
            ),
        }
    }
}

impl std::error::Error for Refusal {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.error {
            RefusalKind::Handshake(error) => Some(error),
            RefusalKind::NotUpgradable => None,
        }
    }
}

/// Checks `request`, an HTTP/1.1 upgrade or an HTTP/2 extended CONNECT
/// (its `:protocol` read from hyper's [`Protocol`] extension), and its
/// `Origin` against the settings' [`OriginPolicy`], and builds the
/// response to send, choosing a subprotocol and accepting
/// permessage-deflate as `settings` say. It takes hyper's upgrade handle
/// out of the request's extensions.
///
/// # Errors
///
/// A [`Refusal`] to answer with ([`Refusal::to_response`]).
pub fn accept_response<B>(
    request: &mut Request<B>,
    settings: UpgradeSettings,
) -> std::result::Result<Accept, Refusal> {
    let version = request.version();
    let (mut response, params) =
        negotiate(request, settings.config.get_deflate(), &settings.origin)?;
    let chosen = choose_subprotocol(request, &settings.protocols);
    if let Some(protocol) = chosen {
        let value = HeaderValue::from_str(protocol).map_err(|_| {
            Refusal::new(
                HandshakeFailure::InvalidCallbackResponse(
                    "a subprotocol is not a valid header value",
                ),
                version,
            )
        })?;
        response.headers_mut().insert(SEC_WEBSOCKET_PROTOCOL, value);
    }
    let on_upgrade = request
        .extensions_mut()
        .remove::<OnUpgrade>()
        .ok_or(Refusal {
            error: RefusalKind::NotUpgradable,
            version,
        })?;
    let mut context = WebSocketContext::with_deflate(Role::Server, settings.config, params);
    context.set_subprotocol(chosen);
    Ok(Accept {
        response,
        on_upgrade,
        context,
    })
}

/// Checks that `request` is a valid WebSocket upgrade from an origin
/// `settings` accept, that hyper can hand over, without answering it yet:
/// what [`accept_response`] with these settings refuses, but for
/// subprotocols that are not valid header values.
///
/// # Errors
///
/// The [`Refusal`] [`accept_response`] would give.
pub fn check_request<B>(
    request: &Request<B>,
    settings: &UpgradeSettings,
) -> std::result::Result<(), Refusal> {
    negotiate(request, None, &settings.origin)?;
    if request.extensions().get::<OnUpgrade>().is_none() {
        return Err(Refusal {
            error: RefusalKind::NotUpgradable,
            version: request.version(),
        });
    }
    Ok(())
}

/// The core's checks (the origin's included) and response for either kind
/// of upgrade.
fn negotiate<B>(
    request: &Request<B>,
    deflate: Option<&DeflateConfig>,
    origin: &OriginPolicy,
) -> std::result::Result<(Response<()>, Option<DeflateParams>), Refusal> {
    if is_extended_connect(request) {
        let protocol = request.extensions().get::<Protocol>().map(Protocol::as_str);
        extended_connect_response(request, protocol, deflate, origin)
    } else {
        upgrade_response_with_deflate(request, deflate, origin)
    }
    .map_err(|error| Refusal::new(error, request.version()))
}

/// Waits until hyper has sent `accept.response` and handed over the
/// connection, and returns the WebSocket on it.
///
/// # Errors
///
/// [`Error::Io`] if the connection ended before the upgrade completed.
pub async fn accepted(accept: Accept) -> Result<UpgradedWebSocket> {
    let upgraded = accept.on_upgrade.await.map_err(hyper_error)?;
    Ok(WebSocketStream::from_context(
        TokioIo::new(upgraded),
        accept.context,
    ))
}

/// Opens a WebSocket over an HTTP/2 connection (RFC 8441) that hyper's
/// client holds: one extended CONNECT stream, next to the connection's
/// other requests. The server must have enabled extended CONNECT.
///
/// `request` is a `ws://`/`wss://` URL or request as for
/// [`connect_async`](crate::connect_async) (the scheme only picks
/// `:scheme`; the connection is the one `sender` drives), and `config`'s
/// deflate setting decides whether permessage-deflate is offered.
///
/// # Errors
///
/// [`Error::Http`] for a status other than 2xx,
/// [`HandshakeFailure::BadResponse`] for an answer that breaks the
/// handshake, and [`Error::Io`] for a failure of the HTTP/2 connection
/// (including a server without extended CONNECT).
///
/// # Examples
///
/// ```no_run
/// use http_body_util::Empty;
/// use hyper::body::Bytes;
/// use hyper_util::rt::{TokioExecutor, TokioIo};
/// use tokio_lockgate::{Config, Message};
///
/// # async fn run() -> tokio_lockgate::Result<()> {
/// let tcp = tokio::net::TcpStream::connect("127.0.0.1:3000").await?;
/// let (mut sender, connection) =
///     hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
///         .await
///         .map_err(std::io::Error::other)?;
/// tokio::spawn(connection);
/// let (mut ws, _response) = tokio_lockgate::upgrade::connect_h2::<Empty<Bytes>>(
///     &mut sender,
///     "ws://127.0.0.1:3000/ws",
///     Config::default(),
/// )
/// .await?;
/// ws.send(Message::text("over HTTP/2")).await?;
/// # Ok(()) }
/// ```
pub async fn connect_h2<B>(
    sender: &mut SendRequest<B>,
    request: impl IntoClientRequest,
    config: Config,
) -> Result<(UpgradedWebSocket, Response<()>)>
where
    B: Body + Default + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (upgraded, context, response) = extended_connect(sender, request, config).await?;
    Ok((WebSocketStream::from_context(upgraded, context), response))
}

/// [`connect_h2`]'s extended CONNECT: the stream, the connection's
/// context and the response.
pub(crate) async fn extended_connect<B>(
    sender: &mut SendRequest<B>,
    request: impl IntoClientRequest,
    config: Config,
) -> Result<(TokioIo<Upgraded>, WebSocketContext, Response<()>)>
where
    B: Body + Default + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let connect = ExtendedConnect::new(request, config.get_deflate().copied())?;
    let mut outgoing = connect.request().clone().map(|()| B::default());
    outgoing
        .extensions_mut()
        .insert(Protocol::from_static(WEBSOCKET_PROTOCOL));
    sender.ready().await.map_err(hyper_error)?;
    let mut response = sender.send_request(outgoing).await.map_err(hyper_error)?;
    let deflate = connect.check_response(&response)?;
    let upgraded = ::hyper::upgrade::on(&mut response)
        .await
        .map_err(hyper_error)?;
    let (parts, _body) = response.into_parts();
    let response = Response::from_parts(parts, ());
    let mut context = WebSocketContext::with_deflate(Role::Client, config, deflate);
    let chosen = response.headers().get(SEC_WEBSOCKET_PROTOCOL);
    context.set_subprotocol(chosen.and_then(|value| value.to_str().ok()));
    Ok((TokioIo::new(upgraded), context, response))
}

/// hyper's errors as I/O errors: they are failures of the connection.
pub(crate) fn hyper_error(error: ::hyper::Error) -> Error {
    Error::Io(io::Error::other(error))
}
