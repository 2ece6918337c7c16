//! TLS for `wss://`: the [`Connector`] that says how a client connection is
//! secured, used by the blocking driver and by tokio-lockgate. The
//! blocking driver turns the `TlsSession` a connector starts into its
//! `MaybeTlsStream` (`src/stream.rs`); tungstenite's `client_tls` lives
//! with the blocking client (`src/client_tls.rs`).
//!
//! Two TLS libraries, each behind a feature: rustls (`rustls`, or with
//! root certificates `rustls-tls-webpki-roots` / `rustls-tls-native-roots`)
//! and native-tls (`native-tls`, `native-tls-vendored`). Without a
//! connector, `wss://` uses native-tls when that feature is on, else
//! rustls with the roots of the enabled root features.
//!
//! rustls needs a crypto provider. lockgate uses the process's default
//! provider if one was installed (`CryptoProvider::install_default`), and
//! otherwise ring, which it links: the choice is made the same way however
//! many providers the process links, and never panics.

use std::io::{Read, Write};
#[cfg(feature = "rustls")]
use std::sync::Arc;

#[cfg(feature = "native-tls")]
#[cfg_attr(docsrs, doc(cfg(feature = "native-tls")))]
pub use native_tls;
#[cfg(feature = "rustls")]
#[cfg_attr(docsrs, doc(cfg(feature = "rustls")))]
pub use rustls;

#[cfg(any(feature = "rustls", feature = "native-tls"))]
use super::error::TlsError;
use crate::error::{Error, Result, UrlError};

/// How a client connection is secured: plain, or TLS through one of the
/// enabled TLS libraries, with your settings (root certificates, client
/// certificates, ALPN).
///
/// Passing none lets the URL decide: `ws://` is plain and `wss://` uses
/// the default TLS setup ([`Connector::for_wss`]: native-tls when that
/// feature is on, else rustls with the roots of the enabled root
/// features). A connector decides only for `wss://`: a `ws://` URL is
/// always plain. The same connector secures the connection to an
/// `https://` proxy.
///
/// rustls needs a crypto provider: lockgate uses the process's default
/// provider if one was installed (`CryptoProvider::install_default`), and
/// otherwise ring, which it links, so the choice is the same however many
/// providers the process links, and never a panic.
///
/// # Examples
///
/// Trusting a private certificate authority whose certificate is in a PEM
/// file (feature `rustls`); tokio-lockgate's `examples/private-ca.rs` runs
/// the same against a server whose certificate it has that CA sign:
///
/// ```no_run
/// # #[cfg(feature = "rustls")] {
/// use std::sync::Arc;
/// use lockgate::dial::rustls::RootCertStore;
/// use lockgate::dial::rustls::pki_types::CertificateDer;
/// use lockgate::dial::rustls::pki_types::pem::PemObject;
/// use lockgate::{ClientOptions, Connector};
///
/// let mut roots = RootCertStore::empty();
/// for certificate in CertificateDer::pem_file_iter("ca.pem")? {
///     roots.add(certificate?)?;
/// }
/// let config = lockgate::dial::client_config(roots)?;
/// let options = ClientOptions::new().tls(Connector::Rustls(Arc::new(config)));
/// let (ws, _response) = options.connect("wss://internal.example:8443/feed")?;
/// # drop(ws);
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub enum Connector {
    /// Never TLS: a `wss://` URL is then an error rather than a silent
    /// downgrade to plain text.
    Plain,
    /// TLS by native-tls with this connector (feature `native-tls`).
    #[cfg(feature = "native-tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "native-tls")))]
    NativeTls(native_tls::TlsConnector),
    /// TLS by rustls with this configuration, used as given (set ALPN
    /// `http/1.1` if your server needs one) (feature `rustls`).
    #[cfg(feature = "rustls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rustls")))]
    Rustls(Arc<rustls::ClientConfig>),
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Connector::Plain => f.write_str("Plain"),
            #[cfg(feature = "native-tls")]
            Connector::NativeTls(_) => f.write_str("NativeTls(..)"),
            #[cfg(feature = "rustls")]
            Connector::Rustls(config) => f.debug_tuple("Rustls").field(config).finish(),
        }
    }
}

impl Connector {
    /// The error of a driver asked to secure a stream (a `wss://` URL, an
    /// `https://` proxy) with [`Connector::Plain`], which cannot: every
    /// driver reports this same [`Error::Url`].
    pub fn plain_cannot_secure() -> Error {
        UrlError::invalid(
            "a wss:// URL with Connector::Plain: use a ws:// URL for a plain connection, \
             or a TLS connector"
                .to_owned(),
        )
    }

    /// The connector `wss://` uses when none is given: native-tls's
    /// default when the `native-tls` feature is on, else rustls trusting
    /// the roots of the `rustls-tls-webpki-roots` and
    /// `rustls-tls-native-roots` features, with ALPN `http/1.1` (built once
    /// per process and shared).
    ///
    /// # Errors
    ///
    /// [`UrlError::TlsFeatureNotEnabled`] without a TLS feature;
    /// [`Error::Url`] when rustls has no root certificate feature;
    /// [`Error::Io`] when the operating system's store gave no root
    /// certificate; [`Error::Tls`] when native-tls cannot start.
    pub fn for_wss() -> Result<Connector> {
        #[cfg(feature = "native-tls")]
        {
            let connector = native_tls::TlsConnector::new().map_err(TlsError::from)?;
            Ok(Connector::NativeTls(connector))
        }
        #[cfg(all(feature = "rustls", not(feature = "native-tls")))]
        {
            Ok(Connector::Rustls(rustls_default::config()?))
        }
        #[cfg(not(any(feature = "rustls", feature = "native-tls")))]
        {
            Err(UrlError::TlsFeatureNotEnabled.into())
        }
    }

    /// A TLS session to `host` over `stream`, by this connector's library.
    /// native-tls runs its handshake here: on a stream that would block,
    /// after each `wait` (which fails the handshake with its error: the
    /// driver decides what a blocked handshake means).
    pub(crate) fn start<T: Read + Write + 'static>(
        self,
        stream: T,
        host: &str,
        wait: &mut dyn FnMut() -> Result<()>,
    ) -> Result<TlsSession<T>> {
        let _ = (&stream, host, &wait);
        match self {
            Connector::Plain => Err(Connector::plain_cannot_secure()),
            #[cfg(feature = "native-tls")]
            Connector::NativeTls(connector) => {
                let host = host.trim_start_matches('[').trim_end_matches(']');
                let mut handshake = connector.connect(host, stream);
                loop {
                    match handshake {
                        Ok(stream) => return Ok(TlsSession::Native(stream)),
                        Err(native_tls::HandshakeError::Failure(error)) => {
                            return Err(Error::Tls(error.into()));
                        }
                        Err(native_tls::HandshakeError::WouldBlock(mid)) => {
                            wait()?;
                            handshake = mid.handshake();
                        }
                    }
                }
            }
            #[cfg(feature = "rustls")]
            Connector::Rustls(config) => {
                let name = server_name(host)?;
                let connection =
                    rustls::ClientConnection::new(config, name).map_err(TlsError::from)?;
                Ok(TlsSession::Rustls(rustls::StreamOwned::new(
                    connection, stream,
                )))
            }
        }
    }
}

/// A TLS session over `T`, by one of the TLS libraries built: what a
/// [`Connector`] starts, and a driver turns into its own stream type.
/// Unboxed: it is moved once, into the stream it becomes.
#[allow(clippy::large_enum_variant, reason = "moved once, into its stream")]
pub(crate) enum TlsSession<T: Read + Write> {
    #[cfg(feature = "native-tls")]
    Native(native_tls::TlsStream<T>),
    #[cfg(feature = "rustls")]
    Rustls(rustls::StreamOwned<rustls::ClientConnection, T>),
    #[cfg(not(any(feature = "native-tls", feature = "rustls")))]
    #[allow(dead_code, reason = "keeps T used in builds without TLS")]
    None(std::convert::Infallible, std::marker::PhantomData<T>),
}

impl<T: Read + Write> TlsSession<T> {
    /// The session with its handshake over: rustls's, driven here on a
    /// non-blocking transport, calling `wait` each time it would block
    /// (native-tls's ended in `Connector::start`).
    pub(crate) fn completed(self, wait: &mut dyn FnMut() -> Result<()>) -> Result<Self> {
        let _ = &wait;
        match self {
            #[cfg(feature = "rustls")]
            TlsSession::Rustls(mut stream) => {
                while stream.conn.is_handshaking() {
                    match stream.conn.complete_io(&mut stream.sock) {
                        Ok(_) => {}
                        Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => wait()?,
                        Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(error) => return Err(rustls_io_error(error)),
                    }
                }
                Ok(TlsSession::Rustls(stream))
            }
            #[cfg(any(feature = "native-tls", not(feature = "rustls")))]
            other => Ok(other),
        }
    }
}

/// The name a rustls client verifies the server's certificate against:
/// the URL's host as a DNS name or an IP address (an IPv6 literal may keep
/// its brackets: `[::1]`).
///
/// # Errors
///
/// [`InvalidDnsName`](crate::error::TlsError::InvalidDnsName) for
/// a host that is neither.
#[cfg(feature = "rustls")]
#[cfg_attr(docsrs, doc(cfg(feature = "rustls")))]
pub fn server_name(host: &str) -> Result<rustls::pki_types::ServerName<'static>> {
    use rustls::pki_types::{IpAddr, ServerName};

    let invalid = || Error::Tls(TlsError::InvalidDnsName);
    match host
        .strip_prefix('[')
        .and_then(|literal| literal.strip_suffix(']'))
    {
        // Brackets enclose an IPv6 address and nothing else (RFC 3986).
        Some(literal) => match ServerName::try_from(literal.to_owned()) {
            Ok(name @ ServerName::IpAddress(IpAddr::V6(_))) => Ok(name),
            _ => Err(invalid()),
        },
        None => ServerName::try_from(host.to_owned()).map_err(|_| invalid()),
    }
}

/// The rustls configuration for `wss://` without a connector (when
/// native-tls, which is preferred, is not built).
#[cfg(all(feature = "rustls", not(feature = "native-tls")))]
mod rustls_default {
    use std::sync::{Arc, OnceLock};

    use crate::error::Result;

    /// Built on first use and shared after that (loading the roots is the
    /// costly part); a failure is not kept, so the next call tries again.
    pub(super) fn config() -> Result<Arc<rustls::ClientConfig>> {
        static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
        if let Some(config) = CONFIG.get() {
            return Ok(Arc::clone(config));
        }
        let config = Arc::new(super::client_config(roots()?)?);
        Ok(Arc::clone(CONFIG.get_or_init(|| config)))
    }

    #[cfg(not(any(
        feature = "rustls-tls-webpki-roots",
        feature = "rustls-tls-native-roots"
    )))]
    fn roots() -> Result<rustls::RootCertStore> {
        Err(crate::error::UrlError::invalid(
            "wss:// without a Connector needs root certificates: enable the \
             `rustls-tls-webpki-roots` or `rustls-tls-native-roots` feature, or pass \
             `Connector::Rustls` with your own rustls `ClientConfig`"
                .to_owned(),
        ))
    }

    #[cfg(any(
        feature = "rustls-tls-webpki-roots",
        feature = "rustls-tls-native-roots"
    ))]
    fn roots() -> Result<rustls::RootCertStore> {
        #[allow(unused_mut, reason = "mutated only by the root features that are on")]
        let mut roots = rustls::RootCertStore::empty();
        #[cfg(feature = "rustls-tls-webpki-roots")]
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        #[cfg(feature = "rustls-tls-native-roots")]
        {
            let loaded = rustls_native_certs::load_native_certs();
            // Unparsable certificates are skipped, as are load errors when
            // something was found: one bad file must not stop every
            // connection.
            roots.add_parsable_certificates(loaded.certs);
            if roots.is_empty() {
                let errors: Vec<String> = loaded.errors.iter().map(ToString::to_string).collect();
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!(
                        "the operating system's certificate store gave no root certificate \
                         (errors: [{}]); enable the `rustls-tls-webpki-roots` feature or pass \
                         `Connector::Rustls`",
                        errors.join("; ")
                    ),
                )
                .into());
            }
        }
        Ok(roots)
    }
}

/// A rustls client configuration trusting `roots`, with ALPN `http/1.1`,
/// on the process's default crypto provider if one was installed and on
/// ring otherwise.
///
/// # Errors
///
/// [`Error::Tls`] if the provider supports no safe protocol version.
#[cfg(feature = "rustls")]
#[cfg_attr(docsrs, doc(cfg(feature = "rustls")))]
pub fn client_config(roots: rustls::RootCertStore) -> Result<rustls::ClientConfig> {
    let provider = rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsError::from)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// What an I/O error of a rustls stream means: the TLS failure inside it
/// (a certificate the roots do not trust, a name that does not match, an
/// alert) as [`Error::Tls`], anything else as [`Error::Io`]. rustls's
/// stream adapters, blocking and async alike, wrap their handshake's
/// failure in an `io::Error`; the async drivers map it with this.
#[cfg(feature = "rustls")]
#[cfg_attr(docsrs, doc(cfg(feature = "rustls")))]
pub fn rustls_io_error(error: std::io::Error) -> Error {
    let is_tls = error
        .get_ref()
        .is_some_and(|inner| inner.is::<rustls::Error>());
    if !is_tls {
        return error.into();
    }
    let inner = error.into_inner().expect("checked above");
    let tls = inner.downcast::<rustls::Error>().expect("checked above");
    Error::Tls(TlsError::from(*tls))
}

#[cfg(all(test, feature = "rustls"))]
mod tests {
    use super::*;
    use rustls::pki_types::{IpAddr, ServerName};

    #[test]
    fn server_names_from_url_hosts() {
        assert!(matches!(
            server_name("example.com").unwrap(),
            ServerName::DnsName(name) if name.as_ref() == "example.com"
        ));
        assert!(matches!(
            server_name("127.0.0.1").unwrap(),
            ServerName::IpAddress(IpAddr::V4(_))
        ));
        for v6 in ["[::1]", "::1"] {
            assert!(matches!(
                server_name(v6).unwrap(),
                ServerName::IpAddress(IpAddr::V6(_))
            ));
        }
        for bad in ["", "exa mple.com", "[example.com]"] {
            assert!(
                matches!(server_name(bad), Err(Error::Tls(TlsError::InvalidDnsName))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn the_default_config_speaks_http_1_1_and_needs_no_installed_provider() {
        // No process-wide provider is installed in this test binary: ring
        // is taken, without a panic.
        let config = client_config(rustls::RootCertStore::empty()).unwrap();
        assert_eq!(config.alpn_protocols, vec![b"http/1.1".to_vec()]);
    }

    #[cfg(all(feature = "rustls-tls-webpki-roots", not(feature = "native-tls")))]
    #[test]
    fn the_default_connector_is_built_once() {
        let (Connector::Rustls(a), Connector::Rustls(b)) =
            (Connector::for_wss().unwrap(), Connector::for_wss().unwrap())
        else {
            panic!("rustls expected");
        };
        assert!(Arc::ptr_eq(&a, &b));
    }
}
