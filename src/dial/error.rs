//! The detail of a failed dial: why a proxy refused the tunnel and what
//! the TLS library said. [`Error`](crate::Error) carries them
//! ([`Error::Tls`](crate::Error::Tls),
//! [`HandshakeFailure`](crate::HandshakeFailure)'s proxy variants); they
//! live here, with the dial, so that the crate's error module knows
//! neither SOCKS5 nor the TLS libraries. A leaf: it imports nothing of the
//! crate.

use std::fmt;

use http::StatusCode;

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

/// Why a SOCKS5 proxy did not open the tunnel.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Socks5Refusal {
    /// The proxy, as `host:port`.
    pub proxy: String,
    /// The CONNECT target, as `host:port`.
    pub target: String,
    /// What the proxy answered.
    pub reason: Socks5Reason,
    /// Whether username/password authentication was offered (what a
    /// refusal of every method offered means depends on it).
    pub(super) offered_credentials: bool,
}

/// What a SOCKS5 proxy answered instead of opening the tunnel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Socks5Reason {
    /// The proxy accepts none of the authentication methods offered
    /// (METHOD X'FF'): username/password when credentials were set, "no
    /// authentication" otherwise.
    NoAcceptableMethod,
    /// The proxy refused the user name and password (RFC 1929 status
    /// other than 0).
    AuthenticationFailed,
    /// The proxy answered CONNECT with this reply code (REP), never 0:
    /// 1 general failure, 2 not allowed by its rules, 3 network
    /// unreachable, 4 host unreachable, 5 connection refused, 6 TTL
    /// expired, 7 command not supported, 8 address type not supported.
    Reply(u8),
}

impl Socks5Refusal {
    /// Whether the proxy wants (other) credentials: it accepts no
    /// unauthenticated client and none were set, or it refused the ones
    /// that were.
    pub fn needs_authentication(&self) -> bool {
        match self.reason {
            Socks5Reason::NoAcceptableMethod => !self.offered_credentials,
            Socks5Reason::AuthenticationFailed => true,
            Socks5Reason::Reply(_) => false,
        }
    }
}

impl fmt::Display for Socks5Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SOCKS5 proxy {} refused CONNECT {}: ",
            self.proxy, self.target
        )?;
        match self.reason {
            Socks5Reason::NoAcceptableMethod if self.offered_credentials => {
                f.write_str("no acceptable authentication method (username/password was offered)")
            }
            Socks5Reason::NoAcceptableMethod => {
                f.write_str("no acceptable authentication method (credentials missing or refused)")
            }
            Socks5Reason::AuthenticationFailed => f.write_str(
                "username/password authentication failed (credentials missing or refused)",
            ),
            Socks5Reason::Reply(code) => write!(f, "{} (reply {code})", reply_words(code)),
        }
    }
}

/// RFC 1928 section 6's reply codes in words.
fn reply_words(code: u8) -> &'static str {
    match code {
        0x00 => "succeeded",
        0x01 => "general SOCKS server failure",
        0x02 => "connection not allowed by ruleset",
        0x03 => "network unreachable",
        0x04 => "host unreachable",
        0x05 => "connection refused",
        0x06 => "TTL expired",
        0x07 => "command not supported",
        0x08 => "address type not supported",
        _ => "unassigned reply code",
    }
}

/// A failure of the TLS layer. Its variants depend on the TLS features
/// enabled (it exists in every build, so that matching on
/// [`Error::Tls`](crate::Error::Tls) does not depend on them).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// An error of native-tls (feature `native-tls`).
    #[cfg(feature = "native-tls")]
    #[error("native-tls error: {0}")]
    Native(#[source] Box<native_tls::Error>),
    /// An error of rustls (features `rustls-tls-*`).
    #[cfg(feature = "rustls")]
    #[error("rustls error: {0}")]
    Rustls(#[source] Box<rustls::Error>),
    /// The URL's host is not a valid TLS server name.
    #[error("invalid DNS name")]
    InvalidDnsName,
}

#[cfg(feature = "native-tls")]
impl From<native_tls::Error> for TlsError {
    fn from(error: native_tls::Error) -> Self {
        TlsError::Native(Box::new(error))
    }
}

#[cfg(feature = "rustls")]
impl From<rustls::Error> for TlsError {
    fn from(error: rustls::Error) -> Self {
        TlsError::Rustls(Box::new(error))
    }
}
