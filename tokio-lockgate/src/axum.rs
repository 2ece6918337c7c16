//! axum 0.8 integration: the [`WebSocketUpgrade`] extractor, over
//! HTTP/1.1 upgrades and HTTP/2 extended CONNECT (RFC 8441) alike.
//!
//! The shape is axum's own `WebSocketUpgrade`, so handlers move over by
//! changing the import; what the handler gets is a tokio-lockgate
//! [`WebSocketStream`](crate::WebSocketStream) with explicit write/flush.
//! `axum::serve` advertises extended CONNECT, so browsers that hold an
//! HTTP/2 connection to the server open WebSockets on it.
//!
//! The extractor refuses an upgrade from another site's page with 403
//! before the handler runs: by default only requests without `Origin`
//! and from the server's own origin are accepted (see [`OriginPolicy`]).
//! To accept other origins, add the policy to the routes as an
//! [`Extension`](::axum::Extension) layer, as below.
//!
//! Runnable: `examples/axum.rs` (an echo over HTTP/1.1, h2c and TLS) and
//! `examples/production.rs` (with a hub, limits, metrics, tracing and a
//! drain on SIGTERM, through `on_upgrade_registered`).
//!
//! ```no_run
//! use axum::response::Response;
//! use axum::routing::any;
//! use axum::{Extension, Router};
//! use tokio_lockgate::axum::{WebSocket, WebSocketUpgrade};
//! use tokio_lockgate::handshake::OriginPolicy;
//!
//! async fn ws(upgrade: WebSocketUpgrade) -> Response {
//!     upgrade
//!         .protocols(["echo.v1"])
//!         .deflate(true)
//!         .on_upgrade(|mut ws: WebSocket| async move {
//!             while let Ok(message) = ws.read().await {
//!                 if message.is_data() && ws.send(message).await.is_err() {
//!                     break;
//!                 }
//!             }
//!         })
//! }
//!
//! # async fn run() -> std::io::Result<()> {
//! // Pages of app.example.com may connect too, besides the server's own.
//! let origins = OriginPolicy::allow(["https://app.example.com"]).expect("a valid pattern");
//! // `any`: HTTP/1.1 upgrades are GET, HTTP/2 ones CONNECT.
//! let app = Router::new()
//!     .route("/ws", any(ws))
//!     .layer(Extension(origins));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! axum::serve(listener, app).await
//! # }
//! ```

use std::fmt;
use std::future::Future;

use ::axum::body::Body;
use ::axum::extract::FromRequestParts;
use ::axum::response::{IntoResponse, Response};
use lockgate::handshake::OriginPolicy;
use lockgate::http::request::Parts;
use lockgate::http::{Request, Version};
use lockgate::{Config, HandshakeFailure};

use crate::drain::{Drain, Registered};
use crate::upgrade::{Accept, Refusal, UpgradeSettings, accept_response, accepted, check_request};

/// The WebSocket a handler's [`WebSocketUpgrade::on_upgrade`] callback
/// gets ([`UpgradedWebSocket`](crate::upgrade::UpgradedWebSocket)).
pub type WebSocket = crate::upgrade::UpgradedWebSocket;

/// Extracts a WebSocket upgrade: an HTTP/1.1 `GET` with `Upgrade:
/// websocket`, or an HTTP/2 `CONNECT` with `:protocol` `websocket`. Route
/// it with `any(..)` (or `get(..).connect(..)`) to take both.
///
/// A request that is not a valid upgrade is refused before the handler
/// runs: 400, or 426 with `Sec-WebSocket-Version: 13` for another version
/// (400 with that header over HTTP/2). So is one whose `Origin` the
/// [`OriginPolicy`] refuses, with 403: the policy is the one in the
/// request's extensions (an [`Extension`](::axum::Extension) layer on the
/// router or route), by default [`OriginPolicy::same_origin`] (no `Origin`,
/// or the server's own: `Host` over HTTP/1.1, `:authority` over HTTP/2).
/// The policy is read when the request is extracted, so that a refused
/// request never reaches the handler, which may act on its cookies.
///
/// Configure with [`protocols`](Self::protocols),
/// [`config`](Self::config) and [`deflate`](Self::deflate), then answer
/// with [`on_upgrade`](Self::on_upgrade).
#[must_use = "the upgrade happens only if on_upgrade's response is returned"]
pub struct WebSocketUpgrade<F = LogFailedUpgrade> {
    /// The request's method, target, version and headers, with hyper's
    /// upgrade handle and `:protocol` in its extensions.
    request: Request<()>,
    settings: UpgradeSettings,
    on_failed_upgrade: F,
}

impl<F> fmt::Debug for WebSocketUpgrade<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebSocketUpgrade")
            .field("method", self.request.method())
            .field("version", &self.request.version())
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// What happens when hyper could not complete an upgrade after the
/// response was sent (the client went away, say); see
/// [`WebSocketUpgrade::on_failed_upgrade`].
pub trait OnFailedUpgrade: Send + 'static {
    /// Called with the error, instead of the `on_upgrade` callback.
    fn call(self, error: lockgate::Error);
}

impl<F: FnOnce(lockgate::Error) + Send + 'static> OnFailedUpgrade for F {
    fn call(self, error: lockgate::Error) {
        self(error);
    }
}

/// The default [`OnFailedUpgrade`]: writes the error to standard error.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct LogFailedUpgrade;

impl OnFailedUpgrade for LogFailedUpgrade {
    fn call(self, error: lockgate::Error) {
        eprintln!("tokio-lockgate: WebSocket upgrade failed after the response: {error}");
    }
}

impl<F: OnFailedUpgrade> WebSocketUpgrade<F> {
    /// The subprotocols the server speaks, most preferred first; the
    /// first the client offers is chosen and answered in
    /// `Sec-WebSocket-Protocol`.
    pub fn protocols<I>(mut self, protocols: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<std::borrow::Cow<'static, str>>,
    {
        self.settings = self.settings.protocols(protocols);
        self
    }

    /// The connection's configuration (limits, deadlines, and with
    /// [`Config::deflate`] the permessage-deflate settings).
    pub fn config(mut self, config: Config) -> Self {
        self.settings = self.settings.config(config);
        self
    }

    /// Accepts permessage-deflate (`true`, with the config's settings or
    /// the defaults) or not (`false`). Off unless set.
    pub fn deflate(mut self, on: bool) -> Self {
        self.settings = self.settings.deflate(on);
        self
    }

    /// The subprotocol that will be chosen, as soon as the protocols are
    /// set: the first of [`protocols`](Self::protocols) the client offered.
    pub fn selected_protocol(&self) -> Option<&str> {
        lockgate::handshake::choose_subprotocol(&self.request, self.settings.get_protocols())
    }

    /// Whether the request came over HTTP/2 (extended CONNECT) rather
    /// than as an HTTP/1.1 upgrade.
    pub fn is_http2(&self) -> bool {
        self.request.version() >= Version::HTTP_2
    }

    /// Replaces what happens when the upgrade fails after the response was
    /// sent (by default the error is written to standard error).
    pub fn on_failed_upgrade<G: OnFailedUpgrade>(self, callback: G) -> WebSocketUpgrade<G> {
        WebSocketUpgrade {
            request: self.request,
            settings: self.settings,
            on_failed_upgrade: callback,
        }
    }

    /// Answers the request (101 over HTTP/1.1, 200 over HTTP/2) and, once
    /// the connection is handed over, runs `callback` with the WebSocket
    /// on a new task.
    ///
    /// If the settings cannot be answered (a subprotocol that is not a
    /// valid header value), the response is the refusal instead.
    pub fn on_upgrade<C, Fut>(mut self, callback: C) -> Response
    where
        C: FnOnce(WebSocket) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let accept: Accept = match accept_response(&mut self.request, self.settings) {
            Ok(accept) => accept,
            Err(refusal) => return refusal_response(&refusal),
        };
        let response = accept.response.clone();
        let on_failed_upgrade = self.on_failed_upgrade;
        tokio::spawn(async move {
            match accepted(accept).await {
                Ok(ws) => callback(ws).await,
                Err(error) => on_failed_upgrade.call(error),
            }
        });
        response.map(|()| Body::empty())
    }

    /// [`on_upgrade`](Self::on_upgrade) for a server that drains: the
    /// connection is registered with `drain` before the response goes out,
    /// and `callback` gets it [`Registered`], so that its `read` closes it
    /// at its turn. While `drain` is draining, the answer is 503 with
    /// `Retry-After` instead ([`Refused`](crate::drain::Refused)).
    pub fn on_upgrade_registered<C, Fut>(self, drain: &Drain, callback: C) -> Response
    where
        C: FnOnce(Registered<WebSocket>) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        match drain.register() {
            Ok(registration) => self.on_upgrade(move |ws| callback(registration.guard(ws))),
            Err(refused) => refused.to_response().map(Body::from),
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for WebSocketUpgrade<LogFailedUpgrade> {
    type Rejection = WebSocketUpgradeRejection;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let mut request = Request::new(());
        *request.method_mut() = parts.method.clone();
        *request.uri_mut() = parts.uri.clone();
        *request.version_mut() = parts.version;
        *request.headers_mut() = parts.headers.clone();
        // hyper's upgrade handle and HTTP/2 `:protocol`.
        if let Some(on_upgrade) = parts.extensions.remove::<::hyper::upgrade::OnUpgrade>() {
            request.extensions_mut().insert(on_upgrade);
        }
        if let Some(protocol) = parts.extensions.get::<::hyper::ext::Protocol>() {
            request.extensions_mut().insert(protocol.clone());
        }
        let origin = parts
            .extensions
            .get::<OriginPolicy>()
            .cloned()
            .unwrap_or_default();
        let settings = UpgradeSettings::default().origin_policy(origin);
        // Checked now, so that a bad request, or one from a page the
        // policy refuses, never reaches the handler; the answer is built
        // in on_upgrade, with the settings.
        check_request(&request, &settings).map_err(WebSocketUpgradeRejection)?;
        Ok(WebSocketUpgrade {
            request,
            settings,
            on_failed_upgrade: LogFailedUpgrade,
        })
    }
}

/// Why [`WebSocketUpgrade`] refused a request; as a response, the matching
/// 400, 403 (a refused `Origin`) or 426 (or 500 for a server that cannot
/// upgrade connections).
#[derive(Debug)]
pub struct WebSocketUpgradeRejection(Refusal);

impl WebSocketUpgradeRejection {
    /// The handshake error, if the request itself was at fault.
    pub fn handshake_error(&self) -> Option<&HandshakeFailure> {
        self.0.handshake_error()
    }
}

impl fmt::Display for WebSocketUpgradeRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for WebSocketUpgradeRejection {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl IntoResponse for WebSocketUpgradeRejection {
    fn into_response(self) -> Response {
        refusal_response(&self.0)
    }
}

fn refusal_response(refusal: &Refusal) -> Response {
    refusal.to_response().map(Body::from)
}
