//! TLS for `wss://`: the stream type [`MaybeTlsStream`], the [`Connector`]
//! that chooses how a connection is secured, and `wrap_stream`, which
//! `connect_async*` calls between the TCP connect and the WebSocket
//! handshake.
//!
//! TLS is rustls (ring provider) behind the `rustls` feature. Root
//! certificates come from the caller's [`Connector::Rustls`] configuration,
//! or else from the `webpki-roots` feature (Mozilla's roots, compiled in)
//! and/or the `native-certs` feature (the operating system's store). The
//! core crate knows nothing of TLS: every TLS failure surfaces as
//! [`Error::Io`], as tokio-rustls reports it (the [`io::Error`] wraps a
//! `rustls::Error`, reachable with [`io::Error::get_ref`] and a downcast).
//!
//! [`Connector`] exists in every build so that `connect_async*` can pass
//! one uniformly; without the `rustls` feature its only variant is
//! [`Connector::Plain`]. Both enums are `#[non_exhaustive]`, so enabling the
//! feature adds variants without breaking anyone's `match`, and the trait
//! bounds of [`MaybeTlsStream`] are the same with and without it.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll};

use lockgate::error::UrlError;
use lockgate::{Error, Result};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

#[cfg(feature = "rustls")]
use std::sync::Arc;
#[cfg(feature = "rustls")]
use tokio_rustls::rustls;

/// A stream that is either plain or secured with TLS: what `connect_async`
/// returns inside its `WebSocketStream`, so `ws://` and `wss://` URLs give
/// the same type.
///
/// It reads and writes like the stream it wraps (including vectored
/// writes). [`get_ref`](Self::get_ref) reaches the transport underneath the
/// TLS layer, for example to read the peer address of a `TcpStream`.
#[derive(Debug)]
#[non_exhaustive]
pub enum MaybeTlsStream<S> {
    /// No TLS: the transport itself (`ws://`).
    Plain(S),
    /// TLS by rustls (`wss://`). Boxed: the session is over 1 KiB, which a
    /// plain stream should not carry.
    #[cfg(feature = "rustls")]
    Rustls(Box<tokio_rustls::client::TlsStream<S>>),
}

impl<S> MaybeTlsStream<S> {
    /// The transport: the stream itself when plain, the stream under the
    /// TLS layer otherwise.
    pub fn get_ref(&self) -> &S {
        match self {
            MaybeTlsStream::Plain(stream) => stream,
            #[cfg(feature = "rustls")]
            MaybeTlsStream::Rustls(stream) => stream.get_ref().0,
        }
    }

    /// The transport, mutably, for its own settings (such as
    /// `TcpStream::set_nodelay`). Reading or writing it directly corrupts the
    /// TLS session and the WebSocket connection above it.
    pub fn get_mut(&mut self) -> &mut S {
        match self {
            MaybeTlsStream::Plain(stream) => stream,
            #[cfg(feature = "rustls")]
            MaybeTlsStream::Rustls(stream) => stream.get_mut().0,
        }
    }

    /// Whether the stream is secured with TLS.
    pub fn is_tls(&self) -> bool {
        match self {
            MaybeTlsStream::Plain(_) => false,
            #[cfg(feature = "rustls")]
            MaybeTlsStream::Rustls(_) => true,
        }
    }

    /// The rustls session of a TLS stream, to inspect the negotiated
    /// protocol version, cipher suite, ALPN protocol or the server's
    /// certificates; `None` for a plain stream.
    #[cfg(feature = "rustls")]
    pub fn tls_connection(&self) -> Option<&rustls::ClientConnection> {
        match self {
            MaybeTlsStream::Plain(_) => None,
            MaybeTlsStream::Rustls(stream) => Some(stream.get_ref().1),
        }
    }
}

// The bounds are those TLS needs, in every build, so that enabling the
// `rustls` feature cannot break a caller.
impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for MaybeTlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut *self {
            MaybeTlsStream::Plain(stream) => Pin::new(stream).poll_read(cx, buf),
            #[cfg(feature = "rustls")]
            MaybeTlsStream::Rustls(stream) => Pin::new(&mut **stream).poll_read(cx, buf),
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for MaybeTlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut *self {
            MaybeTlsStream::Plain(stream) => Pin::new(stream).poll_write(cx, buf),
            #[cfg(feature = "rustls")]
            MaybeTlsStream::Rustls(stream) => Pin::new(&mut **stream).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match &mut *self {
            MaybeTlsStream::Plain(stream) => Pin::new(stream).poll_write_vectored(cx, bufs),
            #[cfg(feature = "rustls")]
            MaybeTlsStream::Rustls(stream) => Pin::new(&mut **stream).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            MaybeTlsStream::Plain(stream) => stream.is_write_vectored(),
            #[cfg(feature = "rustls")]
            MaybeTlsStream::Rustls(stream) => stream.is_write_vectored(),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut *self {
            MaybeTlsStream::Plain(stream) => Pin::new(stream).poll_flush(cx),
            #[cfg(feature = "rustls")]
            MaybeTlsStream::Rustls(stream) => Pin::new(&mut **stream).poll_flush(cx),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut *self {
            MaybeTlsStream::Plain(stream) => Pin::new(stream).poll_shutdown(cx),
            #[cfg(feature = "rustls")]
            MaybeTlsStream::Rustls(stream) => Pin::new(&mut **stream).poll_shutdown(cx),
        }
    }
}

/// How a client connection is secured.
///
/// Passing no connector lets the URL decide: `ws://` stays plain and
/// `wss://` uses rustls with the roots of the `webpki-roots` and/or
/// `native-certs` features (built once per process, ALPN `http/1.1`).
/// A connector overrides that for `wss://`; a `ws://` URL is always plain,
/// whatever the connector.
///
/// Without the `rustls` feature the only variant is [`Connector::Plain`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Connector {
    /// Never TLS. A `wss://` URL is then an error rather than a silent
    /// downgrade to plain text.
    Plain,
    /// TLS with this rustls configuration: your root certificates, client
    /// certificates, ALPN protocols (set `http/1.1` if the server needs
    /// one; the configuration is used as given) and crypto provider. The
    /// server name is the URL's host: a DNS name or an IP address.
    #[cfg(feature = "rustls")]
    Rustls(Arc<rustls::ClientConfig>),
}

/// Secures `stream` as the URL scheme and `connector` ask: plain for `ws://`,
/// TLS for `wss://` (`scheme_is_tls`), verifying the server as `domain`, the
/// URL's host (an IPv6 literal may keep its brackets: `[::1]`).
///
/// `connector` is `None` for "the default for the scheme"; see
/// [`Connector`]. The signature is the same in every build.
///
/// # Errors
///
/// - [`Error::Url`] for `wss://` that this build or the
///   connector cannot serve: the `rustls` feature is off, the connector is
///   [`Connector::Plain`], or no connector was given and no root
///   certificate feature is on; also for a host that is not a valid TLS
///   server name.
/// - [`Error::Io`] for a failed TLS handshake (an untrusted certificate, a
///   name mismatch, an alert from the server, the connection dropping) or
///   when the operating system's store gave no root certificate.
pub(crate) async fn wrap_stream<S>(
    stream: S,
    scheme_is_tls: bool,
    domain: &str,
    connector: Option<Connector>,
) -> Result<MaybeTlsStream<S>>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    if !scheme_is_tls {
        return Ok(MaybeTlsStream::Plain(stream));
    }
    match connector {
        Some(Connector::Plain) => Err(bad_url(
            "a wss:// URL with Connector::Plain: use a ws:// URL for a plain connection, \
             or a TLS connector",
        )),
        #[cfg(feature = "rustls")]
        Some(Connector::Rustls(config)) => rustls_connect(stream, domain, config).await,
        #[cfg(feature = "rustls")]
        None => rustls_connect(stream, domain, default_client_config()?).await,
        #[cfg(not(feature = "rustls"))]
        None => {
            let _ = (stream, domain);
            Err(bad_url(
                "wss:// needs TLS: enable the `rustls` feature of tokio-lockgate",
            ))
        }
    }
}

fn bad_url(message: impl Into<String>) -> Error {
    UrlError::Invalid(message.into()).into()
}

/// Runs the TLS handshake over `stream`.
#[cfg(feature = "rustls")]
async fn rustls_connect<S>(
    stream: S,
    domain: &str,
    config: Arc<rustls::ClientConfig>,
) -> Result<MaybeTlsStream<S>>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let name = server_name(domain)?;
    let stream = tokio_rustls::TlsConnector::from(config)
        .connect(name, stream)
        .await?;
    Ok(MaybeTlsStream::Rustls(Box::new(stream)))
}

/// The name the server's certificate must match: the URL's host as a DNS
/// name or an IP address (an IPv6 literal without its brackets).
#[cfg(feature = "rustls")]
fn server_name(domain: &str) -> Result<rustls_pki_types::ServerName<'static>> {
    use rustls_pki_types::{IpAddr, ServerName};

    let invalid = || bad_url(format!("{domain:?} is not a valid TLS server name"));
    match domain
        .strip_prefix('[')
        .and_then(|literal| literal.strip_suffix(']'))
    {
        // Brackets enclose an IPv6 address and nothing else (RFC 3986).
        Some(literal) => match ServerName::try_from(literal.to_owned()) {
            Ok(name @ ServerName::IpAddress(IpAddr::V6(_))) => Ok(name),
            _ => Err(invalid()),
        },
        None => ServerName::try_from(domain.to_owned()).map_err(|_| invalid()),
    }
}

/// The configuration for `wss://` without a connector, built on first use
/// and shared after that (loading the roots is the costly part).
#[cfg(feature = "rustls")]
fn default_client_config() -> Result<Arc<rustls::ClientConfig>> {
    static CONFIG: std::sync::OnceLock<Arc<rustls::ClientConfig>> = std::sync::OnceLock::new();
    if let Some(config) = CONFIG.get() {
        return Ok(Arc::clone(config));
    }
    // A failure is not cached: the next connection tries again.
    let config = Arc::new(build_client_config(root_store()?)?);
    Ok(Arc::clone(CONFIG.get_or_init(|| config)))
}

/// A client configuration trusting `roots`, with the ring provider passed
/// explicitly (no process-level `CryptoProvider` is needed or installed)
/// and ALPN `http/1.1`.
#[cfg(feature = "rustls")]
fn build_client_config(roots: rustls::RootCertStore) -> Result<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// The root certificates of the enabled features: none here.
#[cfg(all(
    feature = "rustls",
    not(any(feature = "webpki-roots", feature = "native-certs"))
))]
fn root_store() -> Result<rustls::RootCertStore> {
    Err(bad_url(
        "wss:// without a Connector needs root certificates: enable the `webpki-roots` or \
         `native-certs` feature of tokio-lockgate, or pass `Connector::Rustls` with your own \
         rustls `ClientConfig`",
    ))
}

/// The root certificates of the enabled features: Mozilla's compiled in
/// (`webpki-roots`) and/or the operating system's (`native-certs`).
#[cfg(any(feature = "webpki-roots", feature = "native-certs"))]
fn root_store() -> Result<rustls::RootCertStore> {
    #[allow(unused_mut, reason = "mutated only by the root features that are on")]
    let mut roots = rustls::RootCertStore::empty();
    #[cfg(feature = "webpki-roots")]
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    #[cfg(feature = "native-certs")]
    {
        let loaded = rustls_native_certs::load_native_certs();
        // Unparsable certificates are skipped, as are load errors when
        // something was found: one bad file must not stop every connection.
        roots.add_parsable_certificates(loaded.certs);
        if roots.is_empty() {
            let errors: Vec<String> = loaded.errors.iter().map(ToString::to_string).collect();
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "the operating system's certificate store gave no root certificate \
                     (errors: [{}]); enable the `webpki-roots` feature or pass \
                     `Connector::Rustls`",
                    errors.join("; ")
                ),
            )
            .into());
        }
    }
    Ok(roots)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn bad_url_message(result: Result<MaybeTlsStream<tokio::io::DuplexStream>>) -> String {
        match result {
            Err(Error::Url(UrlError::Invalid(message))) => message,
            Err(other) => panic!("expected Error::Url, got {other:?}"),
            Ok(stream) => panic!("expected Error::Url, got {stream:?}"),
        }
    }

    #[tokio::test]
    async fn ws_is_plain_whatever_the_connector() {
        let (client, mut server) = tokio::io::duplex(64);
        let mut stream = wrap_stream(client, false, "example.com", Some(Connector::Plain))
            .await
            .unwrap();
        assert!(!stream.is_tls());
        assert!(matches!(stream, MaybeTlsStream::Plain(_)));

        // Reads, writes (vectored too) and shutdown pass straight through.
        stream.write_all(b"ping").await.unwrap();
        let parts = [IoSlice::new(b"a"), IoSlice::new(b"bc")];
        let written = stream.write_vectored(&parts).await.unwrap();
        assert!(written >= 1);
        stream.flush().await.unwrap();
        let mut got = vec![0u8; 4 + written];
        server.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, &b"pingabc"[..got.len()]);
        assert_eq!(
            stream.is_write_vectored(),
            stream.get_ref().is_write_vectored()
        );
        server.write_all(b"pong").await.unwrap();
        let mut got = [0u8; 4];
        stream.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"pong");
        stream.shutdown().await.unwrap();
        assert_eq!(server.read(&mut got).await.unwrap(), 0);

        #[cfg(feature = "rustls")]
        {
            assert!(stream.tls_connection().is_none());
            let config = build_client_config(rustls::RootCertStore::empty()).unwrap();
            let (client, _server) = tokio::io::duplex(64);
            let connector = Connector::Rustls(Arc::new(config));
            let stream = wrap_stream(client, false, "example.com", Some(connector))
                .await
                .unwrap();
            assert!(!stream.is_tls());
        }
    }

    #[tokio::test]
    async fn wss_with_the_plain_connector_is_refused() {
        let (client, _server) = tokio::io::duplex(64);
        let result = wrap_stream(client, true, "example.com", Some(Connector::Plain)).await;
        let message = bad_url_message(result);
        assert!(message.contains("Connector::Plain"), "{message}");
    }

    #[cfg(not(feature = "rustls"))]
    #[tokio::test]
    async fn wss_without_the_rustls_feature_is_a_bad_url() {
        let (client, _server) = tokio::io::duplex(64);
        let result = wrap_stream(client, true, "example.com", None).await;
        let message = bad_url_message(result);
        assert!(message.contains("`rustls` feature"), "{message}");
    }

    #[cfg(all(
        feature = "rustls",
        not(any(feature = "webpki-roots", feature = "native-certs"))
    ))]
    #[tokio::test]
    async fn wss_without_roots_or_connector_says_to_pass_a_connector() {
        let (client, _server) = tokio::io::duplex(64);
        let result = wrap_stream(client, true, "example.com", None).await;
        let message = bad_url_message(result);
        assert!(message.contains("Connector::Rustls"), "{message}");
    }

    #[cfg(feature = "webpki-roots")]
    #[test]
    fn default_config_has_roots_and_alpn() {
        let config = default_client_config().unwrap();
        assert_eq!(config.alpn_protocols, vec![b"http/1.1".to_vec()]);
        assert!(Arc::ptr_eq(&config, &default_client_config().unwrap()));
    }

    #[cfg(feature = "rustls")]
    #[test]
    fn server_names_from_url_hosts() {
        use rustls_pki_types::{IpAddr, ServerName};

        assert!(matches!(
            server_name("example.com").unwrap(),
            ServerName::DnsName(name) if name.as_ref() == "example.com"
        ));
        assert!(matches!(
            server_name("127.0.0.1").unwrap(),
            ServerName::IpAddress(IpAddr::V4(_))
        ));
        assert!(matches!(
            server_name("[::1]").unwrap(),
            ServerName::IpAddress(IpAddr::V6(_))
        ));
        assert!(matches!(
            server_name("::1").unwrap(),
            ServerName::IpAddress(IpAddr::V6(_))
        ));
        for bad in ["", "exa mple.com", "[example.com]"] {
            match server_name(bad) {
                Err(Error::Url(UrlError::Invalid(message))) => {
                    assert!(message.contains("TLS server name"), "{message}");
                }
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }

    #[cfg(feature = "rustls")]
    #[tokio::test]
    async fn a_bad_host_fails_before_any_byte_is_sent() {
        let (client, mut server) = tokio::io::duplex(64);
        let config = Arc::new(build_client_config(rustls::RootCertStore::empty()).unwrap());
        let result = wrap_stream(client, true, "bad host", Some(Connector::Rustls(config))).await;
        bad_url_message(result);
        // The client half was dropped without writing a ClientHello.
        let mut rest = Vec::new();
        server.read_to_end(&mut rest).await.unwrap();
        assert!(rest.is_empty());
    }
}
