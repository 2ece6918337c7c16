//! TLS for `wss://` on tokio: the stream type [`MaybeTlsStream`], and
//! `wrap_stream`, which `connect_async*` calls between the TCP connection
//! (and a proxy's tunnel) and the WebSocket handshake.
//!
//! What secures a connection is lockgate's [`Connector`], the same one
//! the blocking driver takes: rustls (features `rustls`,
//! `rustls-tls-webpki-roots`, `rustls-tls-native-roots`) or native-tls
//! (`native-tls`), with your configuration or the default one for
//! `wss://` ([`Connector::for_wss`]).

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll};

use lockgate::stream::Mode;
use lockgate::{Connector, Result};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A stream that is either plain or secured with TLS: what `connect_async`
/// returns inside its `WebSocketStream`, so `ws://` and `wss://` URLs give
/// the same type.
///
/// It reads and writes like the stream it wraps (including vectored
/// writes). [`get_ref`](Self::get_ref) reaches the transport underneath the
/// TLS layer, for example to read the peer address of a `TcpStream`.
#[non_exhaustive]
pub enum MaybeTlsStream<S> {
    /// No TLS: the transport itself (`ws://`).
    Plain(S),
    /// TLS by native-tls (feature `native-tls`).
    #[cfg(feature = "native-tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "native-tls")))]
    NativeTls(tokio_native_tls::TlsStream<S>),
    /// TLS by rustls (feature `rustls`). Boxed: the session is over 1 KiB,
    /// which a plain stream should not carry.
    #[cfg(feature = "rustls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rustls")))]
    Rustls(Box<tokio_rustls::client::TlsStream<S>>),
    /// TLS inside TLS: a `wss://` server reached through an `https://`
    /// proxy, the server's session carried by the proxy's.
    Tunneled(Box<dyn TlsLayer<S>>),
}

/// A TLS session over a [`MaybeTlsStream`] that is itself TLS (the
/// [`Tunneled`](MaybeTlsStream::Tunneled) case), seen down to the
/// transport underneath both.
pub trait TlsLayer<S>: AsyncRead + AsyncWrite + Unpin + Send + Sync {
    /// The transport under every TLS layer.
    fn transport(&self) -> &S;
    /// The transport under every TLS layer, mutably.
    fn transport_mut(&mut self) -> &mut S;
}

#[cfg(feature = "rustls")]
impl<S> TlsLayer<S> for tokio_rustls::client::TlsStream<MaybeTlsStream<S>>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + Sync,
{
    fn transport(&self) -> &S {
        self.get_ref().0.get_ref()
    }

    fn transport_mut(&mut self) -> &mut S {
        self.get_mut().0.get_mut()
    }
}

#[cfg(feature = "native-tls")]
impl<S> TlsLayer<S> for tokio_native_tls::TlsStream<MaybeTlsStream<S>>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + Sync,
{
    fn transport(&self) -> &S {
        self.get_ref().get_ref().get_ref().get_ref()
    }

    fn transport_mut(&mut self) -> &mut S {
        self.get_mut().get_mut().get_mut().get_mut()
    }
}

impl<S> MaybeTlsStream<S> {
    /// The transport: the stream itself when plain, the stream under the
    /// TLS layer otherwise.
    pub fn get_ref(&self) -> &S
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        match self {
            MaybeTlsStream::Plain(stream) => stream,
            #[cfg(feature = "native-tls")]
            MaybeTlsStream::NativeTls(stream) => stream.get_ref().get_ref().get_ref(),
            #[cfg(feature = "rustls")]
            MaybeTlsStream::Rustls(stream) => stream.get_ref().0,
            MaybeTlsStream::Tunneled(stream) => stream.transport(),
        }
    }

    /// The transport, mutably, for its own settings (such as
    /// `TcpStream::set_nodelay`). Reading or writing it directly corrupts the
    /// TLS session and the WebSocket connection above it.
    pub fn get_mut(&mut self) -> &mut S
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        match self {
            MaybeTlsStream::Plain(stream) => stream,
            #[cfg(feature = "native-tls")]
            MaybeTlsStream::NativeTls(stream) => stream.get_mut().get_mut().get_mut(),
            #[cfg(feature = "rustls")]
            MaybeTlsStream::Rustls(stream) => stream.get_mut().0,
            MaybeTlsStream::Tunneled(stream) => stream.transport_mut(),
        }
    }

    /// Whether the stream is secured with TLS.
    pub fn is_tls(&self) -> bool {
        !matches!(self, MaybeTlsStream::Plain(_))
    }

    /// The rustls session of a rustls stream, to inspect the negotiated
    /// protocol version, cipher suite, ALPN protocol or the server's
    /// certificates; `None` otherwise.
    #[cfg(feature = "rustls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rustls")))]
    pub fn tls_connection(&self) -> Option<&lockgate::dial::rustls::ClientConnection> {
        match self {
            MaybeTlsStream::Rustls(stream) => Some(stream.get_ref().1),
            _ => None,
        }
    }
}

/// Dispatches to the stream inside, whichever it is.
macro_rules! each {
    ($self:expr, $stream:ident => $body:expr) => {
        match $self {
            MaybeTlsStream::Plain($stream) => $body,
            #[cfg(feature = "native-tls")]
            MaybeTlsStream::NativeTls($stream) => $body,
            #[cfg(feature = "rustls")]
            MaybeTlsStream::Rustls($stream) => {
                let $stream = &mut **$stream;
                $body
            }
            MaybeTlsStream::Tunneled($stream) => {
                let $stream = &mut **$stream;
                $body
            }
        }
    };
}

// The bounds are those TLS needs, in every build, so that enabling a TLS
// feature cannot break a caller.
impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for MaybeTlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        each!(&mut *self, stream => Pin::new(stream).poll_read(cx, buf))
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for MaybeTlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        each!(&mut *self, stream => Pin::new(stream).poll_write(cx, buf))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        each!(&mut *self, stream => Pin::new(stream).poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            MaybeTlsStream::Plain(stream) => stream.is_write_vectored(),
            #[cfg(feature = "native-tls")]
            MaybeTlsStream::NativeTls(stream) => stream.is_write_vectored(),
            #[cfg(feature = "rustls")]
            MaybeTlsStream::Rustls(stream) => stream.is_write_vectored(),
            MaybeTlsStream::Tunneled(stream) => stream.is_write_vectored(),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(&mut *self, stream => Pin::new(stream).poll_flush(cx))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(&mut *self, stream => Pin::new(stream).poll_shutdown(cx))
    }
}

impl<S: std::fmt::Debug + AsyncRead + AsyncWrite + Unpin> std::fmt::Debug for MaybeTlsStream<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self {
            MaybeTlsStream::Plain(_) => "Plain",
            #[cfg(feature = "native-tls")]
            MaybeTlsStream::NativeTls(_) => "NativeTls",
            #[cfg(feature = "rustls")]
            MaybeTlsStream::Rustls(_) => "Rustls",
            MaybeTlsStream::Tunneled(_) => "Tunneled",
        };
        f.debug_tuple(kind).field(self.get_ref()).finish()
    }
}

/// Secures `stream` as `mode` and `connector` ask: plain for `ws://`, TLS
/// for `wss://`, verifying the server as `host`, the URL's host (an IPv6
/// literal may keep its brackets: `[::1]`). `connector` is `None` for the
/// default ([`Connector::for_wss`]).
///
/// # Errors
///
/// [`Error::Url`](lockgate::Error::Url) for `wss://` that this build or
/// the connector cannot serve; [`Error::Tls`](lockgate::Error::Tls) for a
/// host that is not a server name and for a TLS failure;
/// [`Error::Io`](lockgate::Error::Io) when the connection fails during
/// the TLS handshake.
pub(crate) async fn wrap_stream<S>(
    stream: S,
    mode: Mode,
    host: &str,
    connector: Option<Connector>,
) -> Result<MaybeTlsStream<S>>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    if mode == Mode::Plain {
        return Ok(MaybeTlsStream::Plain(stream));
    }
    let connector = match connector {
        Some(connector) => connector,
        None => Connector::for_wss()?,
    };
    start(connector, stream, host)
        .await
        .map(Session::into_stream)
}

/// Secures a connection to `host` with TLS through `connector`, over TLS
/// if it already is (the server's session inside an `https://` proxy's).
///
/// # Errors
///
/// As for [`wrap_stream`].
pub(crate) async fn secure<S>(
    stream: MaybeTlsStream<S>,
    host: &str,
    connector: Connector,
) -> Result<MaybeTlsStream<S>>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static,
{
    match stream {
        MaybeTlsStream::Plain(stream) => start(connector, stream, host)
            .await
            .map(Session::into_stream),
        secured => start(connector, secured, host)
            .await
            .map(Session::into_tunneled),
    }
}

/// A TLS session over `T`, by one of the TLS libraries built.
enum Session<T> {
    #[cfg(feature = "native-tls")]
    Native(tokio_native_tls::TlsStream<T>),
    #[cfg(feature = "rustls")]
    Rustls(Box<tokio_rustls::client::TlsStream<T>>),
    #[cfg(not(any(feature = "native-tls", feature = "rustls")))]
    #[allow(dead_code, reason = "keeps T used in builds without TLS")]
    None(std::convert::Infallible, std::marker::PhantomData<T>),
}

impl<T> Session<T> {
    fn into_stream(self) -> MaybeTlsStream<T> {
        match self {
            #[cfg(feature = "native-tls")]
            Session::Native(stream) => MaybeTlsStream::NativeTls(stream),
            #[cfg(feature = "rustls")]
            Session::Rustls(stream) => MaybeTlsStream::Rustls(stream),
            #[cfg(not(any(feature = "native-tls", feature = "rustls")))]
            Session::None(never, _) => match never {},
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static> Session<MaybeTlsStream<S>> {
    fn into_tunneled(self) -> MaybeTlsStream<S> {
        match self {
            #[cfg(feature = "native-tls")]
            Session::Native(stream) => MaybeTlsStream::Tunneled(Box::new(stream)),
            #[cfg(feature = "rustls")]
            Session::Rustls(stream) => MaybeTlsStream::Tunneled(stream),
            #[cfg(not(any(feature = "native-tls", feature = "rustls")))]
            Session::None(never, _) => match never {},
        }
    }
}

/// Runs a TLS handshake with `host` over `stream` through `connector`.
async fn start<T: AsyncRead + AsyncWrite + Unpin>(
    connector: Connector,
    stream: T,
    host: &str,
) -> Result<Session<T>> {
    let _ = (&stream, host);
    match connector {
        Connector::Plain => Err(Connector::plain_cannot_secure()),
        #[cfg(feature = "native-tls")]
        Connector::NativeTls(connector) => {
            let host = host.trim_start_matches('[').trim_end_matches(']');
            let stream = tokio_native_tls::TlsConnector::from(connector)
                .connect(host, stream)
                .await
                .map_err(|error| lockgate::Error::Tls(error.into()))?;
            Ok(Session::Native(stream))
        }
        #[cfg(feature = "rustls")]
        Connector::Rustls(config) => {
            let name = lockgate::dial::server_name(host)?;
            let stream = tokio_rustls::TlsConnector::from(config)
                .connect(name, stream)
                .await
                .map_err(lockgate::dial::rustls_io_error)?;
            Ok(Session::Rustls(Box::new(stream)))
        }
        // Connector is non-exhaustive: a TLS library this build does not
        // know of cannot come from it.
        #[allow(unreachable_patterns, reason = "variants of features that are off")]
        _ => Err(lockgate::error::UrlError::TlsFeatureNotEnabled.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockgate::error::Detail;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn bad_url_message(result: Result<MaybeTlsStream<tokio::io::DuplexStream>>) -> String {
        match result {
            Err(error) => match error.detail() {
                Some(Detail::InvalidUrl(message)) => message.clone(),
                _ => panic!("expected Detail::InvalidUrl, got {error:?}"),
            },
            Ok(stream) => panic!("expected Detail::InvalidUrl, got {stream:?}"),
        }
    }

    #[tokio::test]
    async fn ws_is_plain_whatever_the_connector() {
        let (client, mut server) = tokio::io::duplex(64);
        let mut stream = wrap_stream(client, Mode::Plain, "example.com", Some(Connector::Plain))
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
    }

    #[tokio::test]
    async fn wss_with_the_plain_connector_is_refused() {
        let (client, _server) = tokio::io::duplex(64);
        let result = wrap_stream(client, Mode::Tls, "example.com", Some(Connector::Plain)).await;
        let message = bad_url_message(result);
        assert!(message.contains("Connector::Plain"), "{message}");
    }

    #[cfg(not(any(feature = "rustls", feature = "native-tls")))]
    #[tokio::test]
    async fn wss_without_a_tls_feature_says_so() {
        let (client, _server) = tokio::io::duplex(64);
        let result = wrap_stream(client, Mode::Tls, "example.com", None).await;
        assert!(
            matches!(
                result,
                Err(lockgate::Error::Url(
                    lockgate::error::UrlError::TlsFeatureNotEnabled
                ))
            ),
            "{result:?}"
        );
    }

    #[cfg(feature = "rustls")]
    #[tokio::test]
    async fn a_bad_host_fails_before_any_byte_is_sent() {
        let (client, mut server) = tokio::io::duplex(64);
        let config = lockgate::dial::client_config(lockgate::dial::rustls::RootCertStore::empty());
        let connector = Connector::Rustls(std::sync::Arc::new(config.unwrap()));
        let result = wrap_stream(client, Mode::Tls, "bad host", Some(connector)).await;
        assert!(
            matches!(
                result,
                Err(lockgate::Error::Tls(
                    lockgate::error::TlsError::InvalidDnsName
                ))
            ),
            "{result:?}"
        );
        // The client half was dropped without writing a ClientHello.
        let mut rest = Vec::new();
        server.read_to_end(&mut rest).await.unwrap();
        assert!(rest.is_empty());
    }
}
