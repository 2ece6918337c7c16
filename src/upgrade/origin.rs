//! Which pages may open a WebSocket: the `Origin` check of the server
//! handshake (RFC 6455 section 10.2, RFC 6454).

use std::fmt;
use std::net::Ipv6Addr;
use std::sync::Arc;

use http::Request;
use http::header::{HOST, ORIGIN};

use super::head;
use super::summary::{BODY_SUMMARY, summarize_body};
use crate::error::HandshakeFailure;

/// Which web pages may open a WebSocket to the server: the check of the
/// request's `Origin` that every server handshake makes once the request
/// is a valid upgrade and before the [`Callback`](super::Callback) runs,
/// refusing with `403 Forbidden`
/// ([`HandshakeFailure::OriginRefused`]).
///
/// A browser attaches the site's cookies to a WebSocket upgrade whichever
/// page opened it, and the same-origin policy does not apply to
/// WebSockets: without this check any page a user visits can open a
/// WebSocket to the server with the user's credentials and read the
/// answers (cross-site WebSocket hijacking). Browsers always send
/// `Origin` on an upgrade and pages cannot change it; other clients send
/// none (or one they choose), so the check protects browser users and
/// stands in the way of nothing else.
///
/// # The default: [`same_origin`](Self::same_origin)
///
/// An upgrade is accepted when it has no `Origin` field, or when its
/// `Origin` is the server's own: the same host and port as the request's
/// authority, which is the request target's authority when it has one (over
/// HTTP/2 and HTTP/3 that is `:authority`; over HTTP/1.1 an absolute-form
/// target, RFC 9112 section 3.2.2) and otherwise the `Host` field. Every
/// other upgrade is refused. In detail:
///
/// - Host names (and IPv4 addresses) compare ASCII case-insensitively;
///   IPv6 addresses are written in brackets (`[::1]:8080`) and compare as
///   addresses (`[::1]` is `[0:0::1]`). Nothing else is normalized: no
///   trailing-dot folding, no IDN decoding (browsers send punycode).
/// - An `Origin` without a port has its scheme's default port: 80 for
///   `http`, 443 for `https`. An authority with a port matches an `Origin`
///   on that port only; an authority without a port matches an `Origin`
///   on port 80 or 443, since the server cannot tell whether the client
///   used TLS (a proxy may terminate it in front of the server). For the
///   same reason the schemes are not compared, but the `Origin`'s must be
///   `http` or `https` (any other needs a pattern of its own).
/// - `Origin: null` (sandboxed frames, `file:` pages, some redirects) is
///   cross-origin: any site can make a page whose origin is null.
/// - A malformed `Origin` is refused: anything but `scheme://host[:port]`
///   (a path or a trailing slash, user info, a port above 65535 or empty,
///   an IPv6 address without brackets, characters other than ASCII
///   letters, digits, `-`, `.` and `_` in a name, a list of origins), and
///   a request with more than one `Origin` field.
///
/// Behind a reverse proxy the authority is what the proxy sends: forward
/// the browser's `Host` (nginx: `proxy_set_header Host $host`), or allow
/// the public origin with [`allow`](Self::allow). `X-Forwarded-Host` and
/// `Forwarded` are not consulted.
///
/// # Allowing other origins: [`allow`](Self::allow)
///
/// An allow-list accepts what [`same_origin`](Self::same_origin) accepts
/// and also origins that match one of its patterns. A pattern is
/// `[scheme://]host[:port]`:
///
/// - scheme: compared case-insensitively. Without one, `http` and
///   `https` match.
/// - host: a name or IPv4 address (case-insensitive), an IPv6 address in
///   brackets, or `*.` and a domain: any name ending in `.domain`, at any
///   depth, but not the domain itself (list it too if it is wanted).
/// - port: a number, or `*` for any port. Without one, only the scheme's
///   default port: another port is another origin, often another service.
///
/// No path, query, user info or trailing slash; ASCII only. `*` alone
/// allows every origin: the policy is then [`any`](Self::any). `null`
/// cannot be allowed by a pattern, since any site can produce it.
///
/// | pattern | matches | does not match |
/// |---|---|---|
/// | `https://app.example.com` | `https://app.example.com`, `https://app.example.com:443` | `http://app.example.com`, `https://app.example.com:8443`, `https://example.com` |
/// | `https://*.example.com` | `https://a.example.com`, `https://a.b.example.com` | `https://example.com`, `http://a.example.com`, `https://a.example.com:8443` |
/// | `example.com:8443` | `http://example.com:8443`, `https://example.com:8443` | `https://example.com`, `ws://example.com:8443` |
/// | `*.example.com` | `http://a.example.com`, `https://a.b.example.com:443` | `https://example.com`, `https://a.example.com:8443` |
/// | `http://localhost:*` | `http://localhost`, `http://localhost:5173` | `https://localhost:5173` |
/// | `http://[::1]:3000` | `http://[::1]:3000`, `http://[0:0::1]:3000` | `http://[::2]:3000` |
/// | `chrome-extension://abcdefgh` | `chrome-extension://abcdefgh` | `chrome-extension://other` |
///
/// # Everything: [`any`](Self::any)
///
/// No check at all, as in tungstenite: for servers whose clients
/// authenticate otherwise than with cookies (a token in the URL or in the
/// first message) or that check `Origin` in their callback.
///
/// # Examples
///
/// ```
/// use lockgate::handshake::OriginPolicy;
///
/// let upgrade = |origin: &str| {
///     http::Request::get("/chat")
///         .header("host", "chat.example.com")
///         .header("origin", origin)
///         .body(())
///         .unwrap()
/// };
/// let default = OriginPolicy::default();
/// assert!(default.check(&upgrade("https://chat.example.com")).is_ok());
/// let refused = default.check(&upgrade("https://evil.example")).unwrap_err();
/// assert_eq!(refused.status(), 403);
///
/// let policy = OriginPolicy::allow(["https://*.example.com", "http://localhost:*"])?;
/// assert!(policy.check(&upgrade("https://app.example.com")).is_ok());
/// assert!(policy.check(&upgrade("http://localhost:5173")).is_ok());
/// assert!(policy.check(&upgrade("https://example.com.evil.example")).is_err());
/// # Ok::<(), lockgate::handshake::OriginPatternError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OriginPolicy {
    rule: Rule,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum Rule {
    /// No `Origin`, or the request's own.
    #[default]
    SameOrigin,
    /// No check.
    Any,
    /// [`Rule::SameOrigin`], or an origin matching one of these (shared by
    /// the clones a server makes per connection).
    Allow(Arc<[OriginPattern]>),
}

impl OriginPolicy {
    /// Accepts upgrades without `Origin` and from the server's own origin;
    /// the default. See the [rules](Self#the-default-same_origin).
    pub fn same_origin() -> Self {
        Self::default()
    }

    /// Accepts every upgrade, whatever its `Origin` (tungstenite's
    /// behaviour). Only for servers that do not rely on cookies or other
    /// credentials the browser adds on its own.
    pub fn any() -> Self {
        Self { rule: Rule::Any }
    }

    /// Accepts what [`same_origin`](Self::same_origin) accepts, and
    /// origins matching one of `patterns` (see
    /// [the rules](Self#allowing-other-origins-allow)). A `*` among them
    /// makes it [`any`](Self::any).
    ///
    /// # Errors
    ///
    /// [`OriginPatternError`] for the first pattern that is not
    /// `[scheme://]host[:port]` as described.
    pub fn allow<I>(patterns: I) -> Result<Self, OriginPatternError>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        patterns
            .into_iter()
            .try_fold(Self::same_origin(), |policy, pattern| {
                policy.allow_origin(pattern.as_ref())
            })
    }

    /// This policy, also accepting origins that match `pattern` (`*`:
    /// every origin).
    ///
    /// # Errors
    ///
    /// [`OriginPatternError`] if `pattern` is not `[scheme://]host[:port]`
    /// as [`allow`](Self::allow) describes.
    pub fn allow_origin(self, pattern: &str) -> Result<Self, OriginPatternError> {
        if pattern == "*" {
            return Ok(Self::any());
        }
        let pattern = OriginPattern::parse(pattern).map_err(|reason| OriginPatternError {
            pattern: pattern.to_owned(),
            reason,
        })?;
        let rule = match self.rule {
            Rule::Any => Rule::Any,
            Rule::SameOrigin => Rule::Allow(Arc::new([pattern])),
            Rule::Allow(patterns) => {
                Rule::Allow(patterns.iter().cloned().chain([pattern]).collect())
            }
        };
        Ok(Self { rule })
    }

    /// Whether this policy accepts every origin ([`any`](Self::any)).
    pub fn is_any(&self) -> bool {
        matches!(self.rule, Rule::Any)
    }

    /// Checks `request`'s `Origin` against this policy, for an upgrade
    /// request an HTTP server parsed. The server handshakes call it for
    /// you ([`ServerUpgrade`](super::ServerUpgrade),
    /// [`upgrade_response`](super::upgrade_response),
    /// [`extended_connect_response`](super::extended_connect_response)).
    ///
    /// # Errors
    ///
    /// [`HandshakeFailure::OriginRefused`] (403, see
    /// [`HandshakeFailure::to_response`]) when the policy does not accept
    /// the request.
    pub fn check<B>(&self, request: &Request<B>) -> Result<(), HandshakeFailure> {
        let patterns: &[OriginPattern] = match &self.rule {
            Rule::Any => return Ok(()),
            Rule::SameOrigin => &[],
            Rule::Allow(patterns) => patterns,
        };
        let headers = request.headers();
        let mut values = headers.get_all(ORIGIN).into_iter();
        let Some(value) = values.next() else {
            return Ok(());
        };
        if values.next().is_none() {
            if let Some(origin) = Origin::parse(value.as_bytes().trim_ascii()) {
                if origin.is_same_as(request_authority(request))
                    || patterns.iter().any(|pattern| pattern.matches(&origin))
                {
                    return Ok(());
                }
            }
        }
        // The values as one line, enough of them for the summary (at
        // most four bytes a character).
        let enough = 4 * BODY_SUMMARY;
        let mut shown = Vec::new();
        for value in headers.get_all(ORIGIN) {
            if !shown.is_empty() {
                shown.extend_from_slice(b", ");
            }
            let value = value.as_bytes();
            shown.extend_from_slice(&value[..value.len().min(enough)]);
            if shown.len() >= enough {
                break;
            }
        }
        Err(HandshakeFailure::OriginRefused {
            origin: summarize_body(&shown, BODY_SUMMARY).into_boxed_str(),
        })
    }
}

/// An origin pattern [`OriginPolicy::allow`] could not use: the pattern
/// and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid origin pattern {pattern:?}: {reason}")]
pub struct OriginPatternError {
    pattern: String,
    reason: &'static str,
}

impl OriginPatternError {
    /// The pattern, as given.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// What is wrong with it.
    pub fn reason(&self) -> &'static str {
        self.reason
    }
}

/// The authority an upgrade request is addressed to: its target's (always
/// there over HTTP/2, where it is `:authority`; over HTTP/1.1 in an
/// absolute-form target, which RFC 9112 section 3.2.2 says wins over
/// `Host`), else its single `Host` field.
fn request_authority<B>(request: &Request<B>) -> Option<&[u8]> {
    match request.uri().authority() {
        Some(authority) => {
            let text = authority.as_str();
            let host_port = text.rsplit_once('@').map_or(text, |(_, rest)| rest);
            Some(host_port.as_bytes())
        }
        None => head::single_value(request.headers(), HOST),
    }
}

/// The default port of the schemes whose origins can be same-origin.
fn default_port(scheme: &[u8]) -> Option<u16> {
    if scheme.eq_ignore_ascii_case(b"http") {
        Some(80)
    } else if scheme.eq_ignore_ascii_case(b"https") {
        Some(443)
    } else {
        None
    }
}

/// A request's `Origin`, borrowed from the header value.
#[derive(Debug)]
struct Origin<'a> {
    scheme: &'a [u8],
    host: Host<'a>,
    /// As written: `None` when the origin has no port.
    port: Option<u16>,
}

/// A host as an origin or an authority names it.
#[derive(Debug, Clone, Copy)]
enum Host<'a> {
    /// A registered name or an IPv4 address, as written.
    Name(&'a [u8]),
    /// An IPv6 address (written in brackets).
    V6(Ipv6Addr),
}

impl<'a> Origin<'a> {
    /// `scheme "://" host [ ":" port ]` (RFC 6454 section 6.2), or `None`:
    /// `null` and anything malformed.
    fn parse(value: &'a [u8]) -> Option<Self> {
        let at = value.windows(3).position(|window| window == b"://")?;
        let scheme = &value[..at];
        if !valid_scheme(scheme) {
            return None;
        }
        let (host, port) = parse_host_port(&value[at + 3..])?;
        Some(Self { scheme, host, port })
    }

    /// The port, or the scheme's default.
    fn effective_port(&self) -> Option<u16> {
        self.port.or_else(|| default_port(self.scheme))
    }

    /// Whether this is the origin of `authority` (a `Host` value or a
    /// URI's authority).
    fn is_same_as(&self, authority: Option<&[u8]>) -> bool {
        // Only web pages' schemes: another has no default port to match
        // an authority without one, and is another kind of client.
        let Some(default) = default_port(self.scheme) else {
            return false;
        };
        let port = self.port.unwrap_or(default);
        let Some((host, authority_port)) = authority.and_then(parse_host_port) else {
            return false;
        };
        same_host(self.host, host)
            && match authority_port {
                Some(authority_port) => port == authority_port,
                None => port == 80 || port == 443,
            }
    }
}

fn same_host(a: Host<'_>, b: Host<'_>) -> bool {
    match (a, b) {
        (Host::Name(a), Host::Name(b)) => a.eq_ignore_ascii_case(b),
        (Host::V6(a), Host::V6(b)) => a == b,
        _ => false,
    }
}

/// `host [ ":" port ]` with an IPv6 host in brackets, or `None`.
fn parse_host_port(text: &[u8]) -> Option<(Host<'_>, Option<u16>)> {
    let (host, port) = match text.strip_prefix(b"[") {
        Some(rest) => {
            let end = rest.iter().position(|&b| b == b']')?;
            let (address, after) = (&rest[..end], &rest[end + 1..]);
            (Host::V6(parse_ipv6(address)?), after)
        }
        None => {
            let end = text.iter().position(|&b| b == b':').unwrap_or(text.len());
            let (name, after) = text.split_at(end);
            if !valid_name(name) {
                return None;
            }
            (Host::Name(name), after)
        }
    };
    let port = match port {
        [] => None,
        [b':', digits @ ..] => Some(parse_port(digits)?),
        _ => return None,
    };
    Some((host, port))
}

fn parse_ipv6(address: &[u8]) -> Option<Ipv6Addr> {
    std::str::from_utf8(address).ok()?.parse().ok()
}

/// 1 to 5 digits, at most 65535.
fn parse_port(digits: &[u8]) -> Option<u16> {
    if digits.is_empty() || digits.len() > 5 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )` (RFC 3986 section 3.1).
fn valid_scheme(scheme: &[u8]) -> bool {
    scheme.first().is_some_and(u8::is_ascii_alphabetic)
        && scheme
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

/// Dot-separated labels of ASCII letters, digits, `-` and `_`, none
/// empty but for one trailing dot.
fn valid_name(name: &[u8]) -> bool {
    let name = name.strip_suffix(b".").unwrap_or(name);
    !name.is_empty()
        && name.split(|&b| b == b'.').all(|label| {
            !label.is_empty()
                && label
                    .iter()
                    .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
        })
}

/// One pattern of an allow-list, parsed.
#[derive(Clone, PartialEq, Eq)]
struct OriginPattern {
    /// As given, for `Debug`.
    text: Box<str>,
    /// In lower case; `None`: `http` or `https`.
    scheme: Option<Box<str>>,
    host: HostPattern,
    port: PortPattern,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPattern {
    /// A name or IPv4 address, in lower case.
    Name(Box<str>),
    V6(Ipv6Addr),
    /// `*.` and this domain (lower case): its subdomains at any depth.
    Subdomains(Box<str>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PortPattern {
    /// The scheme's default port (an origin without a port).
    Default,
    Exact(u16),
    /// `*`.
    Any,
}

impl fmt::Debug for OriginPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.text, f)
    }
}

impl OriginPattern {
    fn parse(text: &str) -> Result<Self, &'static str> {
        if text == "null" {
            return Err(
                "a null origin cannot be allowed: any site can make a page whose \
                        origin is null (use OriginPolicy::any() and check in the callback)",
            );
        }
        if !text.is_ascii() {
            return Err("write international names in ASCII (punycode), as browsers send them");
        }
        let (scheme, rest) = match text.split_once("://") {
            Some((scheme, rest)) => {
                if !valid_scheme(scheme.as_bytes()) {
                    return Err("the scheme is not a URL scheme");
                }
                (Some(scheme.to_ascii_lowercase().into_boxed_str()), rest)
            }
            None => (None, text),
        };
        if rest
            .bytes()
            .any(|b| matches!(b, b'/' | b'?' | b'#' | b'@') || b.is_ascii_whitespace())
        {
            return Err(
                "a pattern is [scheme://]host[:port], without a path (or a trailing \
                        slash), a query, user info or spaces",
            );
        }
        let (host, port) = match rest.strip_prefix('[') {
            Some(bracketed) => {
                let (address, after) = bracketed
                    .split_once(']')
                    .ok_or("an IPv6 address lacks its closing bracket")?;
                let address = parse_ipv6(address.as_bytes()).ok_or("not an IPv6 address")?;
                (HostPattern::V6(address), after)
            }
            None => {
                let (name, after) = rest.split_at(rest.find(':').unwrap_or(rest.len()));
                (name_pattern(name)?, after)
            }
        };
        let port = match port {
            "" => PortPattern::Default,
            ":*" => PortPattern::Any,
            _ => port
                .strip_prefix(':')
                .and_then(|digits| parse_port(digits.as_bytes()))
                .map(PortPattern::Exact)
                .ok_or("the port is not a number up to 65535 or *")?,
        };
        Ok(Self {
            text: text.into(),
            scheme,
            host,
            port,
        })
    }

    fn matches(&self, origin: &Origin<'_>) -> bool {
        let scheme = match &self.scheme {
            Some(scheme) => origin.scheme.eq_ignore_ascii_case(scheme.as_bytes()),
            None => default_port(origin.scheme).is_some(),
        };
        let host = match (&self.host, origin.host) {
            (HostPattern::Name(name), Host::Name(host)) => {
                host.eq_ignore_ascii_case(name.as_bytes())
            }
            (HostPattern::V6(address), Host::V6(host)) => *address == host,
            (HostPattern::Subdomains(domain), Host::Name(host)) => host
                .len()
                .checked_sub(domain.len() + 1)
                .filter(|&dot| dot > 0 && host[dot] == b'.')
                .is_some_and(|dot| host[dot + 1..].eq_ignore_ascii_case(domain.as_bytes())),
            _ => false,
        };
        let port = match self.port {
            PortPattern::Default => {
                origin.port.is_none() || origin.port == default_port(origin.scheme)
            }
            PortPattern::Exact(port) => origin.effective_port() == Some(port),
            PortPattern::Any => true,
        };
        scheme && host && port
    }
}

/// A name, or `*.` and a domain.
fn name_pattern(name: &str) -> Result<HostPattern, &'static str> {
    let (wildcard, domain) = match name.strip_prefix("*.") {
        Some(domain) => (true, domain),
        None => (false, name),
    };
    if domain.contains('*') {
        return Err("a * stands only for subdomains, as in *.example.com, or alone for any origin");
    }
    if !valid_name(domain.as_bytes()) {
        return Err("the host is not a host name, an IPv4 address or an IPv6 address in brackets");
    }
    let domain = domain.to_ascii_lowercase().into_boxed_str();
    Ok(if wildcard {
        HostPattern::Subdomains(domain)
    } else {
        HostPattern::Name(domain)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_origins() {
        /// The value, and its scheme and port if it is an origin.
        type Case = (&'static str, Option<(&'static str, Option<u16>)>);
        let cases: &[Case] = &[
            ("https://example.com", Some(("https", None))),
            ("HTTP://Example.COM:8080", Some(("HTTP", Some(8080)))),
            ("http://[::1]:3000", Some(("http", Some(3000)))),
            ("http://127.0.0.1", Some(("http", None))),
            (
                "chrome-extension://abcdef",
                Some(("chrome-extension", None)),
            ),
            ("https://example.com.", Some(("https", None))),
            ("null", None),
            ("", None),
            ("https://", None),
            ("https://example.com/", None),
            ("https://example.com:", None),
            ("https://example.com:65536", None),
            ("https://example.com:123456", None),
            ("https://user@example.com", None),
            ("https://::1", None),
            ("https://[::1", None),
            ("https://[::1]x", None),
            ("https://[fe80::1%25eth0]", None),
            ("https://a..b", None),
            ("https://.example.com", None),
            ("https://exa mple.com", None),
            ("https://a.example, https://b.example", None),
            ("1http://example.com", None),
            ("//example.com", None),
            ("example.com", None),
            ("https://bücher.example", None),
        ];
        for (value, expected) in cases {
            let parsed = Origin::parse(value.as_bytes());
            let got = parsed
                .as_ref()
                .map(|o| (std::str::from_utf8(o.scheme).unwrap(), o.port));
            assert_eq!(got, *expected, "{value:?}");
        }
    }

    #[test]
    fn pattern_errors() {
        for pattern in [
            "null",
            "",
            "https://",
            "https://example.com/",
            "https://example.com/app",
            "https://user@example.com",
            "https://example.com:",
            "https://example.com:99999",
            "https://example.com:**",
            "*example.com",
            "app.*.example.com",
            "https://*",
            "*.",
            "*:8080",
            "https://[::1",
            "https://[nope]",
            "1https://example.com",
            "bücher.example",
            " example.com",
        ] {
            let error = OriginPolicy::allow([pattern]).unwrap_err();
            assert_eq!(error.pattern(), pattern);
        }
    }
}
