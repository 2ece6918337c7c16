//! Which proxy a client goes through: [`Proxy`], from a URL or from the
//! environment as curl reads it, and the exchange that opens its tunnel.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::Uri;
use http::header::HeaderValue;

use super::authority::authority;
use super::http_connect::ProxyTunnel;
use super::socks5::{Socks5Target, Socks5Tunnel};
use super::tunnel::Tunnel;
use crate::error::{Error, Result, UrlError};

/// A proxy that clients reach their server through: HTTP CONNECT in clear
/// (`http://`) or over TLS (`https://`), or SOCKS5 with the client
/// resolving the server's name (`socks5://`) or the proxy resolving it
/// (`socks5h://`); each with an optional user name and password.
///
/// Set one on [`ClientOptions::proxy`](crate::ClientOptions::proxy), or
/// ask for the environment's with
/// [`ClientOptions::proxy_from_env`](crate::ClientOptions::proxy_from_env)
/// (see [`Proxy::from_env`]). Both drivers take every kind, for `ws://`
/// and `wss://` alike; the TLS to an `https://` proxy uses the client's
/// [`Connector`](crate::Connector), whose roots verify the proxy too.
///
/// # Examples
///
/// ```no_run
/// use lockgate::ClientOptions;
/// use lockgate::handshake::Proxy;
///
/// let proxy = Proxy::from_url("socks5h://alice:s3cret@proxy.internal:1080")?;
/// let (ws, _) = ClientOptions::new().proxy(proxy).connect("wss://example.com/feed")?;
/// # drop(ws);
/// # Ok::<(), lockgate::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Proxy {
    scheme: ProxyScheme,
    host: String,
    port: u16,
    credentials: Option<Credentials>,
}

/// How a client talks to its [`Proxy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProxyScheme {
    /// `http://`: HTTP CONNECT.
    Http,
    /// `https://`: TLS to the proxy, then HTTP CONNECT inside it.
    Https,
    /// `socks5://`: SOCKS5; the client resolves the server's name.
    Socks5,
    /// `socks5h://`: SOCKS5; the proxy resolves the server's name.
    Socks5h,
}

impl ProxyScheme {
    /// The scheme's name in a URL.
    pub fn as_str(self) -> &'static str {
        match self {
            ProxyScheme::Http => "http",
            ProxyScheme::Https => "https",
            ProxyScheme::Socks5 => "socks5",
            ProxyScheme::Socks5h => "socks5h",
        }
    }

    /// The port of a proxy URL without one: curl's choices (1080, but 443
    /// for `https://`).
    fn default_port(self) -> u16 {
        match self {
            ProxyScheme::Https => 443,
            _ => 1080,
        }
    }

    fn parse(scheme: &str) -> Option<ProxyScheme> {
        [
            ProxyScheme::Http,
            ProxyScheme::Https,
            ProxyScheme::Socks5,
            ProxyScheme::Socks5h,
        ]
        .into_iter()
        .find(|known| scheme.eq_ignore_ascii_case(known.as_str()))
    }
}

/// A user name and password, never shown by `Debug`.
#[derive(Clone, PartialEq, Eq)]
struct Credentials {
    user: String,
    password: String,
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Proxy")
            .field("scheme", &self.scheme)
            .field("host", &self.host)
            .field("port", &self.port)
            .field("user", &self.credentials.as_ref().map(|c| c.user.as_str()))
            .finish_non_exhaustive()
    }
}

impl Proxy {
    /// The proxy at `url`: `[scheme://][user[:password]@]host[:port]`, the
    /// scheme one of `http` (also when there is none, as curl assumes),
    /// `https`, `socks5` and `socks5h`. Without a port, 1080 (443 for
    /// `https`), as curl. Percent-encoded credentials are decoded.
    ///
    /// # Errors
    ///
    /// [`Error::Url`] for another scheme, a path, no host, bad
    /// percent-encoding, or (for SOCKS5) a user name or password over 255
    /// bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockgate::dial::{Proxy, ProxyScheme};
    ///
    /// let proxy = Proxy::from_url("socks5h://user:pass@127.0.0.1:1080")?;
    /// assert_eq!(proxy.scheme(), ProxyScheme::Socks5h);
    /// assert_eq!((proxy.host(), proxy.port()), ("127.0.0.1", 1080));
    /// assert_eq!(Proxy::from_url("https://proxy.example")?.port(), 443);
    /// assert_eq!(Proxy::from_url("proxy.example:3128")?.scheme(), ProxyScheme::Http);
    /// # Ok::<(), lockgate::Error>(())
    /// ```
    pub fn from_url(url: &str) -> Result<Proxy> {
        let bad = |why: &str| bad_url(format!("proxy {}: {why}", redacted(url)));
        let with_scheme = if url.contains("://") {
            url.to_owned()
        } else {
            format!("http://{url}")
        };
        let uri: Uri = with_scheme.parse().map_err(|_| bad("not a URL"))?;
        let scheme = uri
            .scheme_str()
            .and_then(ProxyScheme::parse)
            .ok_or_else(|| bad("the scheme is not http, https, socks5 or socks5h"))?;
        if uri.path_and_query().is_some_and(|pq| pq.as_str() != "/") {
            return Err(bad("a proxy URL has no path"));
        }
        let authority = uri.authority().ok_or_else(|| bad("no host"))?;
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let mut proxy = Proxy {
            scheme,
            host: host.to_owned(),
            port: authority.port_u16().unwrap_or(scheme.default_port()),
            credentials: None,
        };
        if let Some((userinfo, _)) = authority.as_str().rsplit_once('@') {
            let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
            let user = percent_decode(user).ok_or_else(|| bad("bad percent-encoding"))?;
            let password = percent_decode(password).ok_or_else(|| bad("bad percent-encoding"))?;
            proxy = proxy.basic_auth(&user, &password);
        }
        proxy.check_credentials()?;
        Ok(proxy)
    }

    /// The HTTP proxy at `url`: [`Proxy::from_url`] for `http://` URLs
    /// (and `host[:port]`) only.
    ///
    /// # Errors
    ///
    /// As for [`Proxy::from_url`], and [`Error::Url`] for another scheme.
    pub fn http(url: &str) -> Result<Proxy> {
        let proxy = Proxy::from_url(url)?;
        if proxy.scheme != ProxyScheme::Http {
            return Err(bad_url(format!(
                "proxy {}: not an http:// proxy (Proxy::from_url takes the others)",
                redacted(url)
            )));
        }
        Ok(proxy)
    }

    /// Authenticates with `user` and `password`: `Proxy-Authorization:
    /// Basic` for an HTTP proxy, RFC 1929 for SOCKS5.
    #[must_use]
    pub fn basic_auth(mut self, user: &str, password: &str) -> Proxy {
        self.credentials = Some(Credentials {
            user: user.to_owned(),
            password: password.to_owned(),
        });
        self
    }

    /// How the client talks to the proxy.
    pub fn scheme(&self) -> ProxyScheme {
        self.scheme
    }

    /// The proxy's host name or IP address.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The proxy's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether the client speaks TLS to the proxy itself (`https://`).
    pub fn is_tls(&self) -> bool {
        self.scheme == ProxyScheme::Https
    }

    /// Whether the proxy is told the server's address rather than its name
    /// (`socks5://`), so the client resolves it first.
    pub fn resolves_locally(&self) -> bool {
        self.scheme == ProxyScheme::Socks5
    }

    /// The exchange that opens this proxy's tunnel to `host:port`, under
    /// `deadline` (the handshake's): a CONNECT for HTTP(S) proxies, SOCKS5
    /// otherwise, to `resolved` when the client resolved the name
    /// ([`resolves_locally`](Self::resolves_locally)).
    pub fn tunnel(
        &self,
        host: &str,
        port: u16,
        resolved: Option<IpAddr>,
        deadline: Option<Instant>,
    ) -> Tunnel {
        match self.scheme {
            ProxyScheme::Http | ProxyScheme::Https => Tunnel::Http(ProxyTunnel::new(
                self.address(),
                self.authorization(),
                host,
                port,
                deadline,
            )),
            ProxyScheme::Socks5 | ProxyScheme::Socks5h => {
                let target = match resolved {
                    Some(ip) => Socks5Target::Ip(SocketAddr::new(ip, port)),
                    None => Socks5Target::Domain(host.to_owned(), port),
                };
                let credentials = self
                    .credentials
                    .as_ref()
                    .map(|c| (c.user.clone(), c.password.clone()));
                Tunnel::Socks5(Socks5Tunnel::new(
                    self.address(),
                    credentials,
                    target,
                    deadline,
                ))
            }
        }
    }

    /// `Proxy-Authorization: Basic` for the credentials, if any.
    fn authorization(&self) -> Option<HeaderValue> {
        let credentials = self.credentials.as_ref()?;
        let token = STANDARD.encode(format!("{}:{}", credentials.user, credentials.password));
        let mut value = HeaderValue::try_from(format!("Basic {token}"))
            .expect("base64 is a valid header value");
        value.set_sensitive(true);
        Some(value)
    }

    /// RFC 1929's limits, checked where the URL is read rather than when a
    /// connection is made.
    fn check_credentials(&self) -> Result<()> {
        let socks = matches!(self.scheme, ProxyScheme::Socks5 | ProxyScheme::Socks5h);
        match &self.credentials {
            Some(c) if socks && (c.user.is_empty() || c.user.len() > 255) => Err(bad_url(format!(
                "proxy {}: a SOCKS5 user name is 1 to 255 bytes",
                self.address()
            ))),
            Some(c) if socks && c.password.len() > 255 => Err(bad_url(format!(
                "proxy {}: a SOCKS5 password is at most 255 bytes",
                self.address()
            ))),
            _ => Ok(()),
        }
    }

    /// The proxy the environment names for a connection to `target` (a
    /// `ws://` or `wss://` URL), the way curl and most HTTP clients read
    /// it: `https_proxy`/`HTTPS_PROXY` for `wss://`,
    /// `http_proxy`/`HTTP_PROXY` for `ws://`, else `all_proxy`/`ALL_PROXY`
    /// (lower case first; an empty value is unset), unless
    /// `no_proxy`/`NO_PROXY` matches the target (see [`Proxy::bypasses`]).
    ///
    /// The variables may name any kind of proxy (`socks5h://...` in
    /// `ALL_PROXY`, say).
    ///
    /// # Errors
    ///
    /// As for [`Proxy::from_url`], when the variable holds no usable proxy.
    pub fn from_env(target: &Uri) -> Result<Option<Proxy>> {
        Self::from_vars(target, |name| std::env::var(name).ok())
    }

    /// [`Proxy::from_env`] with the variables read through `var` instead
    /// of from the process environment.
    ///
    /// # Errors
    ///
    /// As for [`Proxy::from_env`].
    ///
    /// # Examples
    ///
    /// ```
    /// use lockgate::handshake::Proxy;
    ///
    /// let vars = |name: &str| match name {
    ///     "https_proxy" => Some("http://proxy:3128".to_owned()),
    ///     "no_proxy" => Some("localhost,.internal".to_owned()),
    ///     _ => None,
    /// };
    /// let target = "wss://example.com/".parse().unwrap();
    /// assert_eq!(Proxy::from_vars(&target, vars).unwrap().unwrap().port(), 3128);
    /// let inside = "wss://api.internal/".parse().unwrap();
    /// assert!(Proxy::from_vars(&inside, vars).unwrap().is_none());
    /// let plain = "ws://example.com/".parse().unwrap();
    /// assert!(Proxy::from_vars(&plain, vars).unwrap().is_none());
    /// ```
    pub fn from_vars(target: &Uri, var: impl Fn(&str) -> Option<String>) -> Result<Option<Proxy>> {
        let get = |names: [&str; 2]| {
            names
                .into_iter()
                .filter_map(&var)
                .find(|value| !value.trim().is_empty())
        };
        let secure = target
            .scheme_str()
            .is_some_and(|scheme| scheme.eq_ignore_ascii_case("wss"));
        let scheme_var = if secure {
            get(["https_proxy", "HTTPS_PROXY"])
        } else {
            get(["http_proxy", "HTTP_PROXY"])
        };
        let Some(url) = scheme_var.or_else(|| get(["all_proxy", "ALL_PROXY"])) else {
            return Ok(None);
        };
        let host = target
            .host()
            .unwrap_or("")
            .trim_start_matches('[')
            .trim_end_matches(']');
        let port = target.port_u16().unwrap_or(if secure { 443 } else { 80 });
        if let Some(no_proxy) = get(["no_proxy", "NO_PROXY"]) {
            if Self::bypasses(&no_proxy, host, port) {
                return Ok(None);
            }
        }
        Proxy::from_url(url.trim()).map(Some)
    }

    /// Whether a `NO_PROXY` list sends a connection to `host:port` direct:
    /// comma-separated entries, `*` for every host; a name matches itself
    /// and its subdomains (a leading `.` or `*.` is optional); an IP
    /// address matches itself, and `address/bits` a network; an entry
    /// with `:port` applies to that port only. Names compare without case.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockgate::handshake::Proxy;
    ///
    /// let list = "localhost, .corp.example, 10.0.0.0/8, example.org:8443";
    /// assert!(Proxy::bypasses(list, "api.corp.example", 443));
    /// assert!(Proxy::bypasses(list, "10.1.2.3", 80));
    /// assert!(Proxy::bypasses(list, "example.org", 8443));
    /// assert!(!Proxy::bypasses(list, "example.org", 443));
    /// assert!(!Proxy::bypasses(list, "notcorp.example", 443));
    /// ```
    pub fn bypasses(no_proxy: &str, host: &str, port: u16) -> bool {
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .trim_end_matches('.');
        let host_ip = host.parse::<IpAddr>().ok();
        no_proxy
            .split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .any(|entry| {
                if entry == "*" {
                    return true;
                }
                let (pattern, entry_port) = split_port(entry);
                if entry_port.is_some_and(|entry_port| entry_port != port) {
                    return false;
                }
                if let (Some((network, bits)), Some(ip)) = (pattern.split_once('/'), host_ip) {
                    return in_network(ip, network, bits);
                }
                if let (Ok(entry_ip), Some(ip)) = (pattern.parse::<IpAddr>(), host_ip) {
                    return entry_ip == ip;
                }
                let name = pattern
                    .trim_start_matches("*.")
                    .trim_start_matches('.')
                    .trim_end_matches('.');
                !name.is_empty()
                    && (host.eq_ignore_ascii_case(name)
                        || host.len() > name.len()
                            && host.as_bytes()[host.len() - name.len() - 1] == b'.'
                            && host[host.len() - name.len()..].eq_ignore_ascii_case(name))
            })
    }

    /// `host:port`, with brackets around an IPv6 address.
    pub(crate) fn address(&self) -> String {
        authority(&self.host, self.port)
    }
}

/// A `NO_PROXY` entry's pattern and optional port.
fn split_port(entry: &str) -> (&str, Option<u16>) {
    if let Some(rest) = entry.strip_prefix('[') {
        // [v6] or [v6]:port
        return match rest.split_once(']') {
            Some((address, tail)) => (address, tail.strip_prefix(':').and_then(|p| p.parse().ok())),
            None => (entry, None),
        };
    }
    match entry.rsplit_once(':') {
        // One colon: name:port or v4:port. More: a bare IPv6 address.
        Some((pattern, port)) if !pattern.contains(':') => match port.parse() {
            Ok(port) => (pattern, Some(port)),
            Err(_) => (entry, None),
        },
        _ => (entry, None),
    }
}

/// Whether `ip` is in `network/bits`.
fn in_network(ip: IpAddr, network: &str, bits: &str) -> bool {
    let (Ok(network), Ok(bits)) = (network.parse::<IpAddr>(), bits.parse::<u32>()) else {
        return false;
    };
    match (ip, network) {
        (IpAddr::V4(ip), IpAddr::V4(network)) if bits <= 32 => {
            let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            u32::from(ip) & mask == u32::from(network) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(network)) if bits <= 128 => {
            let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            u128::from(ip) & mask == u128::from(network) & mask
        }
        _ => false,
    }
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn bad_url(message: String) -> Error {
    UrlError::invalid(message)
}

/// `url` with any password replaced, for error messages.
fn redacted(url: &str) -> String {
    let Some((before, after)) = url.rsplit_once('@') else {
        return format!("{url:?}");
    };
    let (scheme, userinfo) = match before.split_once("://") {
        Some((scheme, userinfo)) => (format!("{scheme}://"), userinfo),
        None => (String::new(), before),
    };
    let user = userinfo.split_once(':').map_or(userinfo, |(user, _)| user);
    format!("\"{scheme}{user}:…@{after}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_urls() {
        for bad in [
            "ftp://proxy",
            "socks4://proxy",
            "http://proxy:1/path",
            "http://:1",
            "[]",
            "http://a%zz@proxy",
        ] {
            assert!(Proxy::http(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_scheme_with_its_default_port_and_credentials() {
        // (url, scheme, host, port, user)
        let cases: &[(&str, ProxyScheme, &str, u16, Option<&str>)] = &[
            ("proxy", ProxyScheme::Http, "proxy", 1080, None),
            ("http://proxy:3128", ProxyScheme::Http, "proxy", 3128, None),
            ("HTTPS://proxy", ProxyScheme::Https, "proxy", 443, None),
            (
                "socks5://u:p@proxy",
                ProxyScheme::Socks5,
                "proxy",
                1080,
                Some("u"),
            ),
            (
                "socks5h://[::1]:9050",
                ProxyScheme::Socks5h,
                "::1",
                9050,
                None,
            ),
            (
                "http://al%40ice:p%3Ass@proxy.test:1",
                ProxyScheme::Http,
                "proxy.test",
                1,
                Some("al@ice"),
            ),
        ];
        for &(url, scheme, host, port, user) in cases {
            let proxy = Proxy::from_url(url).unwrap();
            assert_eq!(proxy.scheme(), scheme, "{url}");
            assert_eq!((proxy.host(), proxy.port()), (host, port), "{url}");
            assert_eq!(
                proxy.credentials.as_ref().map(|c| c.user.as_str()),
                user,
                "{url}"
            );
        }
        assert!(Proxy::http("https://proxy").is_err());
        assert!(
            Proxy::from_url("socks5://:pw@proxy").is_err(),
            "an empty SOCKS5 user"
        );
        let long = format!("socks5://{}:p@proxy", "u".repeat(256));
        assert!(Proxy::from_url(&long).is_err());
    }

    #[test]
    fn passwords_stay_out_of_messages_and_debug() {
        let error = Proxy::from_url("ftp://alice:s3cret@proxy").unwrap_err();
        assert!(!error.to_string().contains("s3cret"), "{error}");
        assert!(error.to_string().contains("alice"), "{error}");
        let proxy = Proxy::from_url("socks5://alice:s3cret@proxy").unwrap();
        assert!(!format!("{proxy:?}").contains("s3cret"));
    }

    #[test]
    fn no_proxy_lists() {
        // (list, host, port, bypassed)
        let cases: &[(&str, &str, u16, bool)] = &[
            ("*", "anything", 1, true),
            ("example.com", "example.com", 80, true),
            ("example.com", "EXAMPLE.com", 80, true),
            ("example.com", "api.example.com", 80, true),
            (".example.com", "api.example.com", 80, true),
            ("*.example.com", "example.com", 80, true),
            ("example.com", "badexample.com", 80, false),
            ("example.com:8080", "example.com", 80, false),
            ("example.com:8080", "example.com", 8080, true),
            ("127.0.0.1", "127.0.0.1", 9, true),
            ("127.0.0.1", "127.0.0.2", 9, false),
            ("127.0.0.0/8", "127.9.9.9", 9, true),
            ("10.0.0.0/8", "11.0.0.1", 9, false),
            ("::1", "[::1]", 9, true),
            ("[::1]:9", "::1", 9, true),
            ("[::1]:9", "::1", 10, false),
            ("fd00::/8", "fd12::1", 9, true),
            ("0.0.0.0/0", "1.2.3.4", 9, true),
            (" a.test , b.test ", "b.test", 1, true),
            ("", "example.com", 80, false),
            (",,", "example.com", 80, false),
        ];
        for &(list, host, port, bypassed) in cases {
            assert_eq!(
                Proxy::bypasses(list, host, port),
                bypassed,
                "{list:?} {host} {port}"
            );
        }
    }

    #[test]
    fn environment_selection() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| (*value).to_owned())
            }
        };
        let ws: Uri = "ws://example.com/".parse().unwrap();
        let wss: Uri = "wss://example.com/".parse().unwrap();
        let port = |target: &Uri, env: &'static [(&'static str, &'static str)]| {
            Proxy::from_vars(target, vars(env))
                .unwrap()
                .map(|p| p.port())
        };
        assert_eq!(port(&ws, &[("HTTP_PROXY", "p:1")]), Some(1));
        assert_eq!(
            port(&ws, &[("http_proxy", "p:2"), ("HTTP_PROXY", "p:1")]),
            Some(2)
        );
        assert_eq!(
            port(&ws, &[("http_proxy", ""), ("HTTP_PROXY", "p:1")]),
            Some(1)
        );
        assert_eq!(port(&ws, &[("HTTPS_PROXY", "p:1")]), None);
        assert_eq!(port(&wss, &[("HTTPS_PROXY", "p:3")]), Some(3));
        assert_eq!(port(&wss, &[("ALL_PROXY", "p:4")]), Some(4));
        assert_eq!(
            port(&wss, &[("ALL_PROXY", "p:4"), ("NO_PROXY", "example.com")]),
            None
        );
        assert_eq!(
            port(
                &wss,
                &[("ALL_PROXY", "p:4"), ("no_proxy", "example.com:80")]
            ),
            Some(4)
        );
        assert!(Proxy::from_vars(&ws, vars(&[("http_proxy", "ftp://p:1")])).is_err());
        let socks = Proxy::from_vars(&wss, vars(&[("all_proxy", "socks5h://p:9")]));
        assert_eq!(socks.unwrap().unwrap().scheme(), ProxyScheme::Socks5h);
    }
}
