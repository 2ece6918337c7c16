//! `connect_async` for [`FuturesIo`]: TCP and name lookups through
//! async-net (smol's sockets), on async-lockgate's one dial sequence, and
//! TLS through futures-rustls with the `rustls` feature. Without it, a
//! `wss://` URL or an `https://` proxy fails with
//! [`UrlError::TlsFeatureNotEnabled`]; connect the TLS stream yourself and
//! hand it to [`client_async`](crate::client_async).

use std::io::{self, IoSlice};
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll};

use async_net::TcpStream;
use futures_io::{AsyncRead, AsyncWrite};
use lockgate::error::UrlError;
use lockgate::{Connector, Result};

use crate::driver::first_address;
use crate::futures_io::FuturesIo;
use crate::runtime::Connect;

/// The connection [`connect_async`](crate::connect_async) returns: TCP,
/// or TLS over it with the `rustls` feature. Non-exhaustive so other TLS
/// libraries can join it.
#[derive(Debug)]
#[non_exhaustive]
pub enum MaybeTlsStream {
    /// Plain TCP (`ws://`).
    Plain(TcpStream),
    /// TLS over TCP (`wss://`, or an `https://` proxy's tunnel).
    #[cfg(feature = "rustls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rustls")))]
    Rustls(Box<futures_rustls::client::TlsStream<TcpStream>>),
    /// TLS to the server inside the TLS session with an `https://` proxy.
    #[cfg(feature = "rustls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rustls")))]
    Tunneled(Box<futures_rustls::client::TlsStream<MaybeTlsStream>>),
}

impl MaybeTlsStream {
    /// The TCP stream under any TLS.
    pub fn get_ref(&self) -> &TcpStream {
        match self {
            MaybeTlsStream::Plain(tcp) => tcp,
            #[cfg(feature = "rustls")]
            MaybeTlsStream::Rustls(tls) => tls.get_ref().0,
            #[cfg(feature = "rustls")]
            MaybeTlsStream::Tunneled(tls) => tls.get_ref().0.get_ref(),
        }
    }

    /// Whether the connection is under TLS.
    pub fn is_tls(&self) -> bool {
        !matches!(self, MaybeTlsStream::Plain(_))
    }

    /// The rustls session with the server (what was negotiated: protocol
    /// version, cipher suite, ALPN, the server's certificates), or `None`
    /// for plain TCP.
    #[cfg(feature = "rustls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rustls")))]
    pub fn tls_connection(&self) -> Option<&lockgate::dial::rustls::ClientConnection> {
        match self {
            MaybeTlsStream::Plain(_) => None,
            MaybeTlsStream::Rustls(tls) => Some(tls.get_ref().1),
            MaybeTlsStream::Tunneled(tls) => Some(tls.get_ref().1),
        }
    }
}

/// `$body` with `$stream` bound to the innermost layer's `Pin<&mut _>`.
macro_rules! each {
    ($self:expr, $stream:ident => $body:expr) => {
        match $self.get_mut() {
            MaybeTlsStream::Plain(tcp) => {
                let $stream = Pin::new(tcp);
                $body
            }
            #[cfg(feature = "rustls")]
            MaybeTlsStream::Rustls(tls) => {
                let $stream = Pin::new(&mut **tls);
                $body
            }
            #[cfg(feature = "rustls")]
            MaybeTlsStream::Tunneled(tls) => {
                let $stream = Pin::new(&mut **tls);
                $body
            }
        }
    };
}

impl AsyncRead for MaybeTlsStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        each!(self, stream => stream.poll_read(cx, buf))
    }
}

impl AsyncWrite for MaybeTlsStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        each!(self, stream => stream.poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        each!(self, stream => stream.poll_write_vectored(cx, bufs))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(self, stream => stream.poll_flush(cx))
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(self, stream => stream.poll_close(cx))
    }
}

impl Connect for FuturesIo {
    type Stream = MaybeTlsStream;

    async fn tcp(host: &str, port: u16, nodelay: bool) -> io::Result<MaybeTlsStream> {
        let tcp = TcpStream::connect((host, port)).await?;
        tcp.set_nodelay(nodelay)?;
        Ok(MaybeTlsStream::Plain(tcp))
    }

    async fn lookup(host: &str, port: u16) -> io::Result<IpAddr> {
        first_address(async_net::resolve((host, port)).await?.into_iter())
    }

    async fn secure(
        stream: MaybeTlsStream,
        host: &str,
        connector: Connector,
    ) -> Result<MaybeTlsStream> {
        let _ = (&stream, host);
        match connector {
            Connector::Plain => Err(Connector::plain_cannot_secure()),
            #[cfg(feature = "rustls")]
            Connector::Rustls(config) => {
                let name = lockgate::dial::server_name(host)?;
                let tls = futures_rustls::TlsConnector::from(config);
                Ok(match stream {
                    MaybeTlsStream::Plain(tcp) => MaybeTlsStream::Rustls(Box::new(
                        tls.connect(name, tcp)
                            .await
                            .map_err(lockgate::dial::rustls_io_error)?,
                    )),
                    secured => MaybeTlsStream::Tunneled(Box::new(
                        tls.connect(name, secured)
                            .await
                            .map_err(lockgate::dial::rustls_io_error)?,
                    )),
                })
            }
            // native-tls, or a library this build does not know of.
            #[allow(unreachable_patterns, reason = "variants of features that are off")]
            _ => Err(UrlError::TlsFeatureNotEnabled.into()),
        }
    }

    fn peer_addr(stream: &MaybeTlsStream) -> Option<SocketAddr> {
        stream.get_ref().peer_addr().ok()
    }
}
