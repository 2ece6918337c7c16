//! The settings of the entry points that open a client connection,
//! defined once for the blocking driver and the tokio adapter: they name
//! the dial's proxy and TLS [`Connector`] beside the handshake's settings.

use std::time::Instant;

use super::proxy::Proxy;
use super::route::Route;
use super::tls::Connector;
use crate::config::Config;
use crate::error::Result;
use crate::upgrade::{ClientUpgrade, HandshakeDriver, HandshakeLimits, IntoClientRequest};

/// How to open WebSocket connections as a client: the [`Config`] of the
/// connection (its `handshake_timeout` bounds the handshake, and for the
/// `connect` forms the TCP connection, the proxy and TLS too), the TLS
/// [`Connector`] for `wss://`, the proxy, the [`HandshakeLimits`] on the
/// response head, and how many redirects `connect` follows.
///
/// Finish with [`client`](Self::client) (over a stream you connected) or
/// [`connect`](Self::connect) (the whole dial); tokio-lockgate's
/// `client_async_with` and `connect_async_with` take the same options.
/// [`client`](crate::client()) and [`connect`](crate::connect()) are
/// shortcuts for the defaults.
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
#[derive(Debug, Clone)]
pub struct ClientOptions {
    config: Config,
    connector: Option<Connector>,
    proxy: ProxySetting,
    limits: HandshakeLimits,
    max_redirects: u8,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            config: Config::default(),
            connector: None,
            proxy: ProxySetting::default(),
            limits: HandshakeLimits::default(),
            max_redirects: DEFAULT_MAX_REDIRECTS,
        }
    }
}

/// How many redirects `connect` follows unless told otherwise
/// (tungstenite's number).
const DEFAULT_MAX_REDIRECTS: u8 = 3;

/// Which proxy [`ClientOptions`] connect through.
#[derive(Debug, Clone, Default)]
enum ProxySetting {
    /// Straight to the server.
    #[default]
    Direct,
    /// Through this one.
    Explicit(Proxy),
    /// Through the one the environment names for the URL, if any.
    FromEnv,
}

impl ClientOptions {
    /// The default [`Config`] and no TLS setting.
    pub fn new() -> Self {
        Self::default()
    }
}

impl ClientOptions {
    /// The connection's settings, and the handshake's deadline
    /// ([`Config::handshake_timeout`]). Default: [`Config::default`].
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// How `wss://` connections are secured (both drivers'
    /// `connect`). Default: the [`Connector::for_wss`] of the enabled TLS
    /// features. A `ws://` URL stays plain whatever the connector.
    pub fn tls(mut self, connector: Connector) -> Self {
        self.connector = Some(connector);
        self
    }

    /// How many redirects (`3xx` with `Location`) `connect` (and the async
    /// drivers' `connect_async_with`) follows before it reports the
    /// redirect as [`Error::Http`](crate::Error::Http). Default: 3.
    ///
    /// Every redirect is dialled within what is left of the one handshake
    /// deadline, and one to another origin (scheme, host or port) goes
    /// without the `Authorization`, `Cookie` and `Proxy-Authorization`
    /// headers: the credentials were for the first server.
    pub fn max_redirects(mut self, max_redirects: u8) -> Self {
        self.max_redirects = max_redirects;
        self
    }

    /// See [`ClientOptions::max_redirects`].
    pub fn get_max_redirects(&self) -> u8 {
        self.max_redirects
    }

    /// How large the server's response head may be; one over a limit
    /// fails the handshake with
    /// [`HandshakeFailure::HeadTooLarge`](crate::HandshakeFailure::HeadTooLarge).
    /// Default: [`HandshakeLimits::default`], a 64 KiB head and 124 header
    /// fields (tungstenite's limits). An HTTP proxy's answer to CONNECT is
    /// read with the defaults.
    pub fn handshake_limits(mut self, limits: HandshakeLimits) -> Self {
        self.limits = limits;
        self
    }

    /// See [`ClientOptions::handshake_limits`].
    pub fn get_handshake_limits(&self) -> &HandshakeLimits {
        &self.limits
    }

    /// See [`ClientOptions::tls`].
    pub fn get_connector(&self) -> Option<&Connector> {
        self.connector.as_ref()
    }

    /// Connects through `proxy` (HTTP or HTTPS CONNECT, SOCKS5; see
    /// [`Proxy::from_url`]), for `ws://` and `wss://` alike. TLS to an
    /// `https://` proxy uses this options' [`Connector`]. The proxy's
    /// exchange counts against the handshake deadline. Default: no proxy.
    pub fn proxy(mut self, proxy: Proxy) -> Self {
        self.proxy = ProxySetting::Explicit(proxy);
        self
    }

    /// Connects through the proxy the environment names for each URL
    /// ([`Proxy::from_env`]: `https_proxy`, `http_proxy`, `all_proxy`,
    /// `no_proxy` and their upper-case forms), directly if none. Not the
    /// default: the environment is read only when asked.
    pub fn proxy_from_env(mut self) -> Self {
        self.proxy = ProxySetting::FromEnv;
        self
    }

    /// Where to connect for `uri`, a `ws://` or `wss://` URL (the request
    /// of a handshake from [`handshake`](ClientOptions::handshake)).
    ///
    /// # Errors
    ///
    /// [`Error::Url`](crate::Error::Url) for a URL
    /// without a host or with another scheme, and for an unusable proxy in
    /// the environment.
    pub fn route(&self, uri: &http::Uri) -> Result<Route> {
        let bad = |why: &str| -> crate::error::Error {
            crate::error::UrlError::invalid(format!("{uri}: {why}"))
        };
        let secure = match uri.scheme_str() {
            Some(s) if s.eq_ignore_ascii_case("ws") => false,
            Some(s) if s.eq_ignore_ascii_case("wss") => true,
            _ => return Err(bad("expected ws:// or wss://")),
        };
        let host = uri
            .host()
            .filter(|host| !host.is_empty())
            .ok_or_else(|| bad("no host"))?;
        let proxy = match &self.proxy {
            ProxySetting::Direct => None,
            ProxySetting::Explicit(proxy) => Some(proxy.clone()),
            ProxySetting::FromEnv => Proxy::from_env(uri)?,
        };
        Ok(Route {
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            port: uri.port_u16().unwrap_or(if secure { 443 } else { 80 }),
            secure,
            proxy,
        })
    }

    /// See [`ClientOptions::config`].
    pub fn get_config(&self) -> &Config {
        &self.config
    }

    /// The sans-IO client handshake for `request` these options describe,
    /// its deadline counted from `now`, for a driver of your own. It offers
    /// permessage-deflate when the config has a deflate setting, and checks
    /// the response against the handshake limits.
    ///
    /// # Errors
    ///
    /// [`Error::Url`](crate::Error::Url) as for
    /// [`ClientUpgrade::new`].
    pub fn handshake(
        self,
        request: impl IntoClientRequest,
        now: Instant,
    ) -> Result<HandshakeDriver<ClientUpgrade>> {
        let handshake = ClientUpgrade::with_deflate(request, self.config.get_deflate().copied())?
            .handshake_limits(self.limits);
        Ok(HandshakeDriver::client(handshake, self.config, now))
    }
}
