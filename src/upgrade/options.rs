//! The settings of the entry points that accept a connection, defined once
//! for the blocking driver and the tokio adapter.

use std::time::Instant;

use super::driver::HandshakeDriver;
use super::limits::HandshakeLimits;
use super::origin::OriginPolicy;
use super::server_upgrade::{Callback, NoCallback, ServerUpgrade};
use crate::config::Config;

/// How to accept WebSocket connections: the [`Config`] of the connection
/// (its `handshake_timeout` bounds the handshake), the [`OriginPolicy`]
/// (which pages may open a WebSocket; by default none of another site's),
/// the [`HandshakeLimits`] on the request head and the [`Callback`] that
/// inspects each request.
///
/// Finish it with [`accept`](Self::accept) (blocking) or
/// `tokio_lockgate::accept_async_with` (tokio), or drive
/// [`handshake`](Self::handshake) yourself. [`accept`](crate::accept) and
/// [`accept_hdr`](crate::accept_hdr) are shortcuts for the defaults.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use lockgate::handshake::OriginPolicy;
/// use lockgate::{Config, ServerOptions};
///
/// let listener = std::net::TcpListener::bind("127.0.0.1:9001")?;
/// let config = Config::default().handshake_timeout(Some(Duration::from_secs(5)));
/// let origins = OriginPolicy::allow(["https://app.example.com"]).expect("a valid pattern");
/// let options = ServerOptions::new().config(config).origin_policy(origins).callback(
///     |request: &http::Request<()>, response: http::Response<()>| Ok(response),
/// );
/// let (tcp, _) = listener.accept()?;
/// let ws = options.clone().accept(tcp)?;
/// # drop(ws);
/// # Ok::<(), lockgate::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct ServerOptions<C = NoCallback> {
    config: Config,
    origin: OriginPolicy,
    limits: HandshakeLimits,
    callback: C,
}

impl ServerOptions {
    /// The default [`Config`], [`OriginPolicy::same_origin`] and
    /// [`NoCallback`].
    pub fn new() -> Self {
        Self::default()
    }
}

impl<C> ServerOptions<C> {
    /// The connection's settings, and the handshake's deadline
    /// ([`Config::handshake_timeout`]). Default: [`Config::default`].
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Which pages may open a WebSocket: an upgrade whose `Origin`
    /// `policy` refuses is answered with 403 before the callback runs.
    /// Default: [`OriginPolicy::same_origin`], which accepts upgrades
    /// without `Origin` (clients other than browsers) and from the
    /// server's own origin; [`OriginPolicy::any`] checks nothing, as
    /// tungstenite did.
    pub fn origin_policy(mut self, policy: OriginPolicy) -> Self {
        self.origin = policy;
        self
    }

    /// How large a request head may be; one over a limit is answered with
    /// 431. Default: [`HandshakeLimits::default`], a 64 KiB head and 124
    /// header fields (tungstenite's limits).
    pub fn handshake_limits(mut self, limits: HandshakeLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The callback that inspects each request and may shape the response
    /// or refuse it. Default: [`NoCallback`], which accepts every valid
    /// request the origin policy accepts.
    pub fn callback<D: Callback>(self, callback: D) -> ServerOptions<D> {
        ServerOptions {
            config: self.config,
            origin: self.origin,
            limits: self.limits,
            callback,
        }
    }

    /// See [`ServerOptions::config`].
    pub fn get_config(&self) -> &Config {
        &self.config
    }

    /// See [`ServerOptions::origin_policy`].
    pub fn get_origin_policy(&self) -> &OriginPolicy {
        &self.origin
    }

    /// See [`ServerOptions::handshake_limits`].
    pub fn get_handshake_limits(&self) -> &HandshakeLimits {
        &self.limits
    }
}

impl<C: Callback> ServerOptions<C> {
    /// The sans-IO server handshake these options describe, its deadline
    /// counted from `now`, for a driver of your own. It negotiates
    /// permessage-deflate when the config has a deflate setting, and checks
    /// the origin policy and the handshake limits.
    pub fn handshake(self, now: Instant) -> HandshakeDriver<ServerUpgrade<C>> {
        let handshake =
            ServerUpgrade::with_deflate(self.callback, self.config.get_deflate().copied())
                .origin_policy(self.origin)
                .handshake_limits(self.limits);
        HandshakeDriver::server(handshake, self.config, now)
    }
}
