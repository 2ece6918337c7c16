//! Where a client connects for a URL, and the steps that get it there.

use std::net::IpAddr;
use std::time::Instant;

use super::authority::authority;
use super::proxy::Proxy;
use super::tunnel::Tunnel;

/// Where a client connects for a URL: the server's host and port, whether
/// it is `wss://`, and the proxy to go through, if any; and, decided from
/// that once for every driver, the [`steps`](Self::steps) of the dial.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Route {
    /// The server's host (IPv6 addresses without brackets).
    pub host: String,
    /// The server's port.
    pub port: u16,
    /// `wss://`: TLS to the server (through the tunnel, if any).
    pub secure: bool,
    /// The proxy to tunnel through.
    pub proxy: Option<Proxy>,
}

/// One step of a client's dial, in the order [`Route::steps`] gives them.
/// A driver does each, all under the handshake's deadline. (Not
/// `non_exhaustive`: a driver must know every step there is.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DialStep<'r> {
    /// Open a TCP connection to `host:port`: the proxy's, or the server's.
    Connect {
        /// The host name or IP address.
        host: &'r str,
        /// The port.
        port: u16,
    },
    /// Secure the connection so far with TLS through the client's
    /// [`Connector`](crate::Connector), verifying `host`: the proxy's
    /// (`https://` proxies) or the server's (`wss://`, inside the tunnel
    /// if there is one).
    Tls {
        /// The name the certificate must match.
        host: &'r str,
    },
    /// Resolve `host:port` to the address the proxy is to connect to
    /// (`socks5://`: the client resolves).
    Resolve {
        /// The server's host name.
        host: &'r str,
        /// The server's port.
        port: u16,
    },
    /// Run the proxy's [`tunnel`](Route::tunnel) exchange on the
    /// connection.
    Tunnel,
    /// Run the WebSocket opening handshake on the connection.
    Handshake,
}

impl Route {
    /// What a driver does, in order, to open the connection:
    ///
    /// ```text
    ///  direct:        Connect(server)                       [Tls(server)] Handshake
    ///  http proxy:    Connect(proxy)              Tunnel    [Tls(server)] Handshake
    ///  https proxy:   Connect(proxy) Tls(proxy)   Tunnel    [Tls(server)] Handshake
    ///  socks5h proxy: Connect(proxy)              Tunnel    [Tls(server)] Handshake
    ///  socks5 proxy:  Connect(proxy) Resolve(server) Tunnel [Tls(server)] Handshake
    /// ```
    ///
    /// (`Tls(server)` for `wss://` only.)
    ///
    /// # Examples
    ///
    /// ```
    /// use lockgate::ClientOptions;
    /// use lockgate::dial::{DialStep, Proxy};
    ///
    /// let proxy = Proxy::from_url("https://proxy.example:8443")?;
    /// let route = ClientOptions::new().proxy(proxy).route(&"wss://example.com/".parse()?)?;
    /// assert_eq!(
    ///     route.steps(),
    ///     [
    ///         DialStep::Connect { host: "proxy.example", port: 8443 },
    ///         DialStep::Tls { host: "proxy.example" },
    ///         DialStep::Tunnel,
    ///         DialStep::Tls { host: "example.com" },
    ///         DialStep::Handshake,
    ///     ]
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn steps(&self) -> Vec<DialStep<'_>> {
        let mut steps = Vec::with_capacity(6);
        let (host, port) = self.first_hop();
        steps.push(DialStep::Connect { host, port });
        if let Some(proxy) = &self.proxy {
            if proxy.is_tls() {
                steps.push(DialStep::Tls { host: proxy.host() });
            }
            if proxy.resolves_locally() {
                steps.push(DialStep::Resolve {
                    host: &self.host,
                    port: self.port,
                });
            }
            steps.push(DialStep::Tunnel);
        }
        if self.secure {
            steps.push(DialStep::Tls { host: &self.host });
        }
        steps.push(DialStep::Handshake);
        steps
    }

    /// The exchange that opens the proxy's tunnel to the server under
    /// `deadline`, to `resolved` if the client resolved the server's name
    /// ([`DialStep::Resolve`]); `None` without a proxy.
    pub fn tunnel(&self, resolved: Option<IpAddr>, deadline: Option<Instant>) -> Option<Tunnel> {
        let proxy = self.proxy.as_ref()?;
        Some(proxy.tunnel(&self.host, self.port, resolved, deadline))
    }

    /// The address the TCP connection goes to: the proxy's, or the
    /// server's.
    pub fn first_hop(&self) -> (&str, u16) {
        match &self.proxy {
            Some(proxy) => (proxy.host(), proxy.port()),
            None => (&self.host, self.port),
        }
    }

    /// `error`, from resolving or connecting to the first hop, with the
    /// hop named in its message ("connecting to proxy proxy:3128 for
    /// example.com:443: Connection refused"). The kind is kept.
    pub fn connect_error(&self, error: std::io::Error) -> crate::error::Error {
        let (host, port) = self.first_hop();
        let hop = authority(host, port);
        let message = match &self.proxy {
            Some(proxy) => format!(
                "connecting to {} proxy {hop} for {}: {error}",
                proxy.scheme().as_str(),
                authority(&self.host, self.port)
            ),
            None => format!("connecting to {hop}: {error}"),
        };
        crate::error::Error::Io(std::io::Error::new(error.kind(), message))
    }

    /// `error`, from resolving the server's name for a `socks5://` proxy,
    /// with the name in its message. The kind is kept.
    pub fn resolve_error(&self, error: std::io::Error) -> crate::error::Error {
        let message = format!(
            "resolving {} for the SOCKS5 proxy: {error}",
            authority(&self.host, self.port)
        );
        crate::error::Error::Io(std::io::Error::new(error.kind(), message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(proxy: Option<&str>, secure: bool) -> Route {
        Route {
            host: "example.com".to_owned(),
            port: 443,
            secure,
            proxy: proxy.map(|url| Proxy::from_url(url).unwrap()),
        }
    }

    #[test]
    fn the_steps_of_every_route() {
        use DialStep::*;
        let server = Connect {
            host: "example.com",
            port: 443,
        };
        let proxy = Connect { host: "p", port: 1 };
        let server_tls = Tls {
            host: "example.com",
        };
        let resolve = Resolve {
            host: "example.com",
            port: 443,
        };
        let cases: &[(Option<&str>, bool, &[DialStep<'_>])] = &[
            (None, false, &[server, Handshake]),
            (None, true, &[server, server_tls, Handshake]),
            (Some("http://p:1"), false, &[proxy, Tunnel, Handshake]),
            (
                Some("http://p:1"),
                true,
                &[proxy, Tunnel, server_tls, Handshake],
            ),
            (
                Some("https://p:1"),
                true,
                &[proxy, Tls { host: "p" }, Tunnel, server_tls, Handshake],
            ),
            (Some("socks5h://p:1"), false, &[proxy, Tunnel, Handshake]),
            (
                Some("socks5://p:1"),
                true,
                &[proxy, resolve, Tunnel, server_tls, Handshake],
            ),
        ];
        for &(proxy_url, secure, steps) in cases {
            assert_eq!(
                route(proxy_url, secure).steps(),
                steps,
                "{proxy_url:?} {secure}"
            );
        }
    }

    #[test]
    fn connection_errors_name_the_hop() {
        let refused = || std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let direct = route(None, true).connect_error(refused());
        assert!(
            direct
                .to_string()
                .starts_with("IO error: connecting to example.com:443: ")
        );
        let socks = route(Some("socks5h://[::1]:9"), true).connect_error(refused());
        assert!(
            socks
                .to_string()
                .starts_with("IO error: connecting to socks5h proxy [::1]:9 for example.com:443: "),
            "{socks}"
        );
    }
}
