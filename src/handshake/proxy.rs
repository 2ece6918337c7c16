//! Clients through HTTP proxies: a CONNECT tunnel (RFC 9110 section
//! 9.3.6) to the WebSocket server, sans-IO, run by the same driver loop as
//! the handshake and under the same deadline.

use std::fmt;
use std::net::IpAddr;
use std::time::Instant;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::header::{HOST, HeaderValue, PROXY_AUTHORIZATION};
use http::{StatusCode, Uri};

use super::driver::{Exchange, Step};
use super::head::{self, HeadReader, MAX_HEADERS};
use super::progress::Progress;
use crate::error::{
    BODY_SUMMARY, Error, HandshakeFailure, ProtocolError, Result, UrlError, summarize_body,
};

/// An HTTP proxy that clients reach their server through with CONNECT,
/// with optional basic authentication.
///
/// Set one on [`ClientOptions::proxy`](super::ClientOptions::proxy), or
/// ask for the environment's with
/// [`ClientOptions::proxy_from_env`](super::ClientOptions::proxy_from_env)
/// (see [`Proxy::from_env`]).
///
/// # Examples
///
/// ```no_run
/// use lockgate::ClientOptions;
/// use lockgate::handshake::Proxy;
///
/// let proxy = Proxy::http("http://alice:s3cret@proxy.internal:3128")?;
/// let (ws, _) = ClientOptions::new().proxy(proxy).connect("ws://example.com/feed")?;
/// # drop(ws);
/// # Ok::<(), lockgate::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Proxy {
    host: String,
    port: u16,
    authorization: Option<HeaderValue>,
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Proxy")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("authorization", &self.authorization.as_ref().map(|_| "…"))
            .finish()
    }
}

/// The port of a proxy address without one, as curl assumes.
const DEFAULT_PROXY_PORT: u16 = 1080;

impl Proxy {
    /// The proxy at `url`: `http://[user:password@]host[:port]`, or
    /// `host[:port]`. Without a port, 1080 (curl's choice). Percent-encoded
    /// credentials are decoded and sent as `Proxy-Authorization: Basic`.
    ///
    /// # Errors
    ///
    /// [`Error::Url`] for anything else, including `https://`
    /// proxies (TLS to the proxy itself is not supported).
    pub fn http(url: &str) -> Result<Proxy> {
        let bad = |why: &str| bad_url(format!("proxy {url:?}: {why}"));
        let with_scheme = if url.contains("://") {
            url.to_owned()
        } else {
            format!("http://{url}")
        };
        let uri: Uri = with_scheme.parse().map_err(|_| bad("not a URL"))?;
        if !uri
            .scheme_str()
            .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http"))
        {
            return Err(bad("only http:// proxies are supported"));
        }
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
            host: host.to_owned(),
            port: authority.port_u16().unwrap_or(DEFAULT_PROXY_PORT),
            authorization: None,
        };
        if let Some((userinfo, _)) = authority.as_str().rsplit_once('@') {
            let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
            let user = percent_decode(user).ok_or_else(|| bad("bad percent-encoding"))?;
            let password = percent_decode(password).ok_or_else(|| bad("bad percent-encoding"))?;
            proxy = proxy.basic_auth(&user, &password);
        }
        Ok(proxy)
    }

    /// Sends `Proxy-Authorization: Basic` with `user` and `password`.
    #[must_use]
    pub fn basic_auth(mut self, user: &str, password: &str) -> Proxy {
        let token = STANDARD.encode(format!("{user}:{password}"));
        let mut value = HeaderValue::try_from(format!("Basic {token}"))
            .expect("base64 is a valid header value");
        value.set_sensitive(true);
        self.authorization = Some(value);
        self
    }

    /// The proxy's host name or IP address.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The proxy's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The proxy the environment names for a connection to `target` (a
    /// `ws://` or `wss://` URL), the way curl and most HTTP clients read
    /// it: `https_proxy`/`HTTPS_PROXY` for `wss://`,
    /// `http_proxy`/`HTTP_PROXY` for `ws://`, else `all_proxy`/`ALL_PROXY`
    /// (lower case first; an empty value is unset), unless
    /// `no_proxy`/`NO_PROXY` matches the target (see [`Proxy::bypasses`]).
    ///
    /// # Errors
    ///
    /// As for [`Proxy::http`], when the variable holds no usable proxy.
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
        Proxy::http(url.trim()).map(Some)
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

    /// The CONNECT exchange through this proxy to `host:port`, under
    /// `deadline` (the handshake's).
    pub fn tunnel(&self, host: &str, port: u16, deadline: Option<Instant>) -> ProxyTunnel {
        ProxyTunnel::new(self, host, port, deadline)
    }

    /// `host:port`, with brackets around an IPv6 address.
    fn address(&self) -> String {
        authority(&self.host, self.port)
    }
}

/// `host:port` as an authority, bracketing IPv6 addresses.
fn authority(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
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
    UrlError::Invalid(message).into()
}

/// Why an HTTP proxy did not open the tunnel: its address, the target,
/// the status it answered, and the start of its body.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProxyRefusal {
    /// The proxy, as `host:port`.
    pub proxy: String,
    /// The CONNECT target, as `host:port`.
    pub target: String,
    /// The proxy's status: 407 asks for (other) credentials.
    pub status: StatusCode,
    /// What of the body had arrived with the head, as one line of text,
    /// at most 120 characters.
    pub body: String,
}

impl ProxyRefusal {
    /// Whether the proxy wants credentials: none were set, or they were
    /// refused. That is 407, and 401, which some proxies (tinyproxy among
    /// them) answer CONNECT with.
    pub fn needs_authentication(&self) -> bool {
        self.status == StatusCode::PROXY_AUTHENTICATION_REQUIRED
            || self.status == StatusCode::UNAUTHORIZED
    }
}

impl fmt::Display for ProxyRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "proxy {} refused CONNECT {}: {}",
            self.proxy, self.target, self.status
        )?;
        if self.needs_authentication() {
            f.write_str(" (credentials missing or refused)")?;
        }
        if !self.body.is_empty() {
            write!(f, ": {}", self.body)?;
        }
        Ok(())
    }
}

/// The CONNECT exchange with an HTTP proxy, sans-IO: transmit the
/// request, read the proxy's answer; a 2xx leaves the connection a tunnel
/// to the target. Run it like a [`HandshakeDriver`](super::HandshakeDriver)
/// (it is an [`Exchange`]), then run the WebSocket handshake (after TLS,
/// for `wss://`) on the same connection.
pub struct ProxyTunnel {
    reader: HeadReader,
    proxy: String,
    target: String,
    /// The request to send, the deadline, the outcome.
    progress: Progress<()>,
}

impl fmt::Debug for ProxyTunnel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxyTunnel")
            .field("proxy", &self.proxy)
            .field("target", &self.target)
            .field("deadline", &self.progress.deadline())
            .field("state", &self.progress.describe())
            .finish_non_exhaustive()
    }
}

impl ProxyTunnel {
    fn new(proxy: &Proxy, host: &str, port: u16, deadline: Option<Instant>) -> Self {
        let target = authority(host, port);
        let mut tunnel = Self {
            reader: HeadReader::proxy_response(),
            proxy: proxy.address(),
            target,
            progress: Progress::new(Vec::new(), deadline),
        };
        let Ok(host) = HeaderValue::try_from(tunnel.target.as_str()) else {
            let target = &tunnel.target;
            let invalid = bad_url(format!("{target:?} is not a valid CONNECT target"));
            tunnel.progress.finish(Err(invalid), Vec::new());
            return tunnel;
        };
        let mut out = Vec::with_capacity(128);
        out.extend_from_slice(b"CONNECT ");
        out.extend_from_slice(tunnel.target.as_bytes());
        out.extend_from_slice(b" HTTP/1.1\r\n");
        head::write_header(&mut out, &HOST, &host);
        if let Some(authorization) = &proxy.authorization {
            head::write_header(&mut out, &PROXY_AUTHORIZATION, authorization);
        }
        out.extend_from_slice(b"\r\n");
        tunnel.progress = Progress::new(out, deadline);
        tunnel
    }

    /// The CONNECT request's bytes (before they are transmitted).
    pub fn request_bytes(&self) -> &[u8] {
        self.progress.owed()
    }

    /// The outcome of the proxy's complete response head.
    fn answer(&self, head: head::Head) -> Result<()> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut parsed = httparse::Response::new(&mut headers);
        let len = match parsed.parse(&head.bytes).map_err(HandshakeFailure::from)? {
            httparse::Status::Complete(len) => len,
            httparse::Status::Partial => {
                return Err(HandshakeFailure::BadResponse("incomplete proxy response").into());
            }
        };
        let status = parsed
            .code
            .and_then(|code| StatusCode::from_u16(code).ok())
            .ok_or(HandshakeFailure::BadResponse(
                "the proxy's status is invalid",
            ))?;
        let leftover = head.into_leftover(len);
        if !status.is_success() {
            return Err(HandshakeFailure::ProxyRefused(Box::new(ProxyRefusal {
                proxy: self.proxy.clone(),
                target: self.target.clone(),
                status,
                body: summarize_body(&leftover, BODY_SUMMARY),
            }))
            .into());
        }
        // The server speaks only after the client (the upgrade request, or
        // TLS's ClientHello): anything here came from the proxy.
        if !leftover.is_empty() {
            return Err(HandshakeFailure::BadResponse(
                "the proxy sent bytes after accepting CONNECT, before the server could speak",
            )
            .into());
        }
        Ok(())
    }
}

impl Exchange for ProxyTunnel {
    type Outcome = Result<()>;

    fn poll(&mut self, now: Instant) -> Step<Result<()>> {
        self.progress.poll(now)
    }

    fn receive(&mut self, input: &[u8], now: Instant) {
        if !self.progress.reading(now) {
            return;
        }
        if input.is_empty() {
            let eof = Err(ProtocolError::HandshakeIncomplete.into());
            return self.progress.finish(eof, Vec::new());
        }
        match self.reader.push(input) {
            Ok(None) => {}
            Ok(Some(head)) => {
                let outcome = self.answer(head);
                self.progress.finish(outcome, Vec::new());
            }
            Err(error) => self.progress.finish(Err(error.into()), Vec::new()),
        }
    }

    fn read_failed(&mut self, error: Error, now: Instant) {
        self.progress.read_failed(error, now);
    }

    fn transmit_failed(&mut self, error: Error) {
        self.progress.transmit_failed(error);
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.progress.handle_timeout(now);
    }

    fn deadline(&self) -> Option<Instant> {
        self.progress.deadline()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::error::TimeoutKind;

    fn run(proxy: &Proxy, responses: &[&[u8]]) -> (Vec<u8>, Result<()>) {
        let now = Instant::now();
        let mut tunnel = proxy.tunnel("example.com", 443, Some(now + Duration::from_secs(5)));
        let Step::Transmit(request) = tunnel.poll(now) else {
            panic!("the request goes first")
        };
        let mut inputs = responses.iter();
        loop {
            match tunnel.poll(now) {
                Step::Transmit(_) => panic!("one request"),
                Step::Receive { .. } => tunnel.receive(inputs.next().copied().unwrap_or(b""), now),
                Step::Done(result) => return (request, result),
            }
        }
    }

    #[test]
    fn the_request_names_the_target_and_carries_credentials() {
        let proxy = Proxy::http("http://al%40ice:p%3Ass@proxy.test:3128").unwrap();
        assert_eq!((proxy.host(), proxy.port()), ("proxy.test", 3128));
        let (request, _) = run(&proxy, &[b"HTTP/1.1 200 OK\r\n\r\n"]);
        let expected = format!(
            "CONNECT example.com:443 HTTP/1.1\r\nhost: example.com:443\r\n\
             proxy-authorization: Basic {}\r\n\r\n",
            STANDARD.encode("al@ice:p:ss")
        );
        assert_eq!(
            String::from_utf8(request).unwrap().to_lowercase(),
            expected.to_lowercase()
        );
        let v6 = Proxy::http("[::1]:8080").unwrap();
        let tunnel = v6.tunnel("::1", 9001, None);
        assert!(
            tunnel
                .request_bytes()
                .starts_with(b"CONNECT [::1]:9001 HTTP/1.1\r\n")
        );
        assert_eq!(Proxy::http("proxy").unwrap().port(), DEFAULT_PROXY_PORT);
    }

    #[test]
    fn a_2xx_opens_the_tunnel_however_the_answer_is_split() {
        let proxy = Proxy::http("proxy:1").unwrap();
        for answer in [
            &b"HTTP/1.1 200 Connection established\r\n\r\n"[..],
            b"HTTP/1.0 200 Connection established\r\nProxy-agent: test\r\n\r\n",
        ] {
            for split in 1..answer.len() {
                let (_, result) = run(&proxy, &[&answer[..split], &answer[split..]]);
                assert!(result.is_ok(), "{split}: {result:?}");
            }
        }
    }

    #[test]
    fn refusals_and_bad_answers() {
        let proxy = Proxy::http("proxy:1").unwrap();
        let refused = |answer: &[u8]| match run(&proxy, &[answer]).1 {
            Err(Error::Handshake(HandshakeFailure::ProxyRefused(refusal))) => *refusal,
            other => panic!("{other:?}"),
        };
        let auth = refused(b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n");
        assert!(auth.needs_authentication());
        let forbidden = refused(
            b"HTTP/1.0 403 Forbidden\r\nContent-Length: 20\r\n\r\n<b>Access\x01 denied</b>",
        );
        assert_eq!(forbidden.status, 403);
        assert_eq!(forbidden.body, "<b>Access\\u{1} denied</b>");
        assert_eq!(
            forbidden.to_string(),
            "proxy proxy:1 refused CONNECT example.com:443: 403 Forbidden: <b>Access\\u{1} denied</b>"
        );
        let bad = [
            &b"SSH-2.0-OpenSSH\r\n"[..],
            b"HTTP/2 200\r\n\r\n",
            b"HTTP/1.1 200 OK\r\n\r\nearly",
            b"HTTP/1.1 200 OK\r\n",
        ];
        for answer in bad {
            assert!(run(&proxy, &[answer]).1.is_err(), "{answer:?}");
        }
    }

    #[test]
    fn the_deadline_ends_a_silent_proxy() {
        let proxy = Proxy::http("proxy:1").unwrap();
        let start = Instant::now();
        let mut tunnel = proxy.tunnel("example.com", 80, Some(start + Duration::from_secs(1)));
        assert!(matches!(tunnel.poll(start), Step::Transmit(_)));
        assert!(matches!(tunnel.poll(start), Step::Receive { .. }));
        tunnel.handle_timeout(start + Duration::from_secs(1));
        assert!(matches!(
            tunnel.poll(start),
            Step::Done(Err(Error::Timeout(TimeoutKind::Handshake)))
        ));
    }

    #[test]
    fn proxy_urls() {
        for bad in [
            "https://proxy:1",
            "ftp://proxy",
            "http://proxy:1/path",
            "http://:1",
            "[]",
            "http://a%zz@proxy",
        ] {
            assert!(Proxy::http(bad).is_err(), "{bad}");
        }
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
        assert!(Proxy::from_vars(&ws, vars(&[("http_proxy", "https://p:1")])).is_err());
    }

    #[test]
    fn body_summaries_are_one_short_line() {
        assert_eq!(summarize_body(b"  a\r\n\r\n  b\t", 50), "a b");
        assert_eq!(summarize_body(&[b'x'; 300], 5), "xxxxx…");
        assert_eq!(summarize_body(b"\xff\x07", 10), "\u{fffd}\\u{7}");
    }
}
