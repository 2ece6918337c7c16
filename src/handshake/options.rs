//! The settings of the entry points that open a connection, defined once
//! for the blocking driver and the tokio adapter.

use std::time::Instant;

use super::client::{ClientHandshake, IntoClientRequest};
use super::driver::HandshakeDriver;
use super::server::{Callback, NoCallback, ServerHandshake};
use crate::config::Config;
use crate::error::Result;

/// How to accept WebSocket connections: the [`Config`] of the connection
/// (its `handshake_timeout` bounds the handshake) and the [`Callback`]
/// that inspects each request.
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
/// use lockgate::{Config, ServerOptions};
///
/// let listener = std::net::TcpListener::bind("127.0.0.1:9001")?;
/// let config = Config::default().handshake_timeout(Some(Duration::from_secs(5)));
/// let options = ServerOptions::new().config(config).callback(
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
    callback: C,
}

impl ServerOptions {
    /// The default [`Config`] and [`NoCallback`].
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

    /// The callback that inspects each request and may shape the response
    /// or refuse it. Default: [`NoCallback`], which accepts every valid
    /// request.
    pub fn callback<D: Callback>(self, callback: D) -> ServerOptions<D> {
        ServerOptions {
            config: self.config,
            callback,
        }
    }

    /// See [`ServerOptions::config`].
    pub fn get_config(&self) -> &Config {
        &self.config
    }
}

impl<C: Callback> ServerOptions<C> {
    /// The sans-IO server handshake these options describe, its deadline
    /// counted from `now`, for a driver of your own. It negotiates
    /// permessage-deflate when the config has a deflate setting.
    pub fn handshake(self, now: Instant) -> HandshakeDriver<ServerHandshake<C>> {
        let handshake = ServerHandshake::with_deflate(self.callback, self.config.deflate);
        HandshakeDriver::server(handshake, self.config, now)
    }
}

/// How to open WebSocket connections as a client: the [`Config`] of the
/// connection (its `handshake_timeout` bounds the handshake, and for the
/// `connect` forms the TCP connection and TLS too) and, for drivers that
/// make the connection themselves, its TLS setting `T`.
///
/// The blocking driver has no TLS and takes `ClientOptions<()>`:
/// finish with [`client`](Self::client) or [`connect`](Self::connect). The
/// tokio adapter's `client_async_with` and `connect_async_with` take the
/// options with a `tokio_lockgate::Connector` set by
/// [`tls`](Self::tls), or without. [`client`](crate::client) and
/// [`connect`](crate::connect) are shortcuts for the defaults.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use lockgate::{ClientOptions, Config};
///
/// let config = Config::default().handshake_timeout(Some(Duration::from_secs(5)));
/// let (ws, response) = ClientOptions::new().config(config).connect("ws://127.0.0.1:9001")?;
/// # drop((ws, response));
/// # Ok::<(), lockgate::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct ClientOptions<T = ()> {
    config: Config,
    tls: T,
}

impl ClientOptions {
    /// The default [`Config`] and no TLS setting.
    pub fn new() -> Self {
        Self::default()
    }
}

impl<T> ClientOptions<T> {
    /// The connection's settings, and the handshake's deadline
    /// ([`Config::handshake_timeout`]). Default: [`Config::default`].
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// How a driver that makes the connection secures it: for tokio-lockgate,
    /// a `Connector`. lockgate itself has no TLS and ignores it.
    pub fn tls<U>(self, tls: U) -> ClientOptions<U> {
        ClientOptions {
            config: self.config,
            tls,
        }
    }

    /// See [`ClientOptions::config`].
    pub fn get_config(&self) -> &Config {
        &self.config
    }

    /// The TLS setting, taken out; the rest stays.
    pub fn split_tls(self) -> (ClientOptions, T) {
        (
            ClientOptions {
                config: self.config,
                tls: (),
            },
            self.tls,
        )
    }

    /// The sans-IO client handshake for `request` these options describe,
    /// its deadline counted from `now`, for a driver of your own. It offers
    /// permessage-deflate when the config has a deflate setting.
    ///
    /// # Errors
    ///
    /// [`HandshakeError::BadUrl`](crate::HandshakeError::BadUrl) as for
    /// [`ClientHandshake::new`].
    pub fn handshake(
        self,
        request: impl IntoClientRequest,
        now: Instant,
    ) -> Result<HandshakeDriver<ClientHandshake>> {
        let handshake = ClientHandshake::with_deflate(request, self.config.deflate)?;
        Ok(HandshakeDriver::client(handshake, self.config, now))
    }
}
