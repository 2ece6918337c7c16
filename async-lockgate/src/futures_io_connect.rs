//! `connect_async` for [`FuturesIo`]: TCP and name lookups through
//! async-net (smol's sockets), on async-lockgate's one dial sequence.
//! TLS is not built in: a `wss://` URL or an `https://` proxy fails with
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

/// The connection [`connect_async`](crate::connect_async) returns. Only
/// TCP for now; non-exhaustive so TLS can join it.
#[derive(Debug)]
#[non_exhaustive]
pub enum MaybeTlsStream {
    /// Plain TCP (`ws://`).
    Plain(TcpStream),
}

impl MaybeTlsStream {
    /// The TCP stream.
    pub fn get_ref(&self) -> &TcpStream {
        match self {
            MaybeTlsStream::Plain(tcp) => tcp,
        }
    }

    /// Whether the connection is under TLS.
    pub fn is_tls(&self) -> bool {
        false
    }

    fn pinned(self: Pin<&mut Self>) -> Pin<&mut TcpStream> {
        match self.get_mut() {
            MaybeTlsStream::Plain(tcp) => Pin::new(tcp),
        }
    }
}

impl AsyncRead for MaybeTlsStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        self.pinned().poll_read(cx, buf)
    }
}

impl AsyncWrite for MaybeTlsStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.pinned().poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.pinned().poll_write_vectored(cx, bufs)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.pinned().poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.pinned().poll_close(cx)
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

    async fn secure(_: MaybeTlsStream, _: &str, _: Connector) -> Result<MaybeTlsStream> {
        Err(UrlError::TlsFeatureNotEnabled.into())
    }

    fn peer_addr(stream: &MaybeTlsStream) -> Option<SocketAddr> {
        stream.get_ref().peer_addr().ok()
    }
}
