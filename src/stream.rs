//! Streams that are plain or TLS, chosen at run time: what
//! [`connect`](crate::connect) returns for `ws://` and `wss://` alike.
//!
//! The names and shapes are tungstenite's (`stream::{MaybeTlsStream, Mode,
//! NoDelay}`). The TLS variants exist with the `rustls` (or
//! `rustls-tls-*-roots`) and `native-tls` features.

use std::fmt;
use std::io::{self, IoSlice, Read, Write};
use std::net::TcpStream;

use crate::dial::Connector;
use crate::dial::tls::TlsSession;
use crate::error::{Result, TimeoutKind};

/// Plain or TLS, as a URL's scheme says (see
/// [`uri_mode`](crate::client::uri_mode)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `ws://`.
    Plain,
    /// `wss://`.
    Tls,
}

/// Sets `TCP_NODELAY` on a stream, or on the TCP stream under its TLS.
pub trait NoDelay {
    /// Sets `TCP_NODELAY` to `nodelay`.
    ///
    /// # Errors
    ///
    /// The socket option could not be set.
    fn set_nodelay(&mut self, nodelay: bool) -> io::Result<()>;
}

impl NoDelay for TcpStream {
    fn set_nodelay(&mut self, nodelay: bool) -> io::Result<()> {
        TcpStream::set_nodelay(self, nodelay)
    }
}

impl<S: Read + Write + NoDelay> NoDelay for MaybeTlsStream<S> {
    fn set_nodelay(&mut self, nodelay: bool) -> io::Result<()> {
        self.get_mut().set_nodelay(nodelay)
    }
}

/// A stream that is either plain or secured with TLS.
///
/// It reads and writes like the stream it wraps; [`get_ref`](Self::get_ref)
/// and [`get_mut`](Self::get_mut) reach the transport under the TLS layer
/// (to read a `TcpStream`'s peer address, say).
#[non_exhaustive]
#[allow(
    clippy::large_enum_variant,
    reason = "tungstenite's shape: code that matches on the variants ports unchanged"
)]
pub enum MaybeTlsStream<S: Read + Write> {
    /// No TLS (`ws://`).
    Plain(S),
    /// TLS by native-tls (feature `native-tls`).
    #[cfg(feature = "native-tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "native-tls")))]
    NativeTls(native_tls::TlsStream<S>),
    /// TLS by rustls (feature `rustls`).
    #[cfg(feature = "rustls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rustls")))]
    Rustls(rustls::StreamOwned<rustls::ClientConnection, S>),
    /// TLS inside TLS: a `wss://` server reached through an `https://`
    /// proxy, the server's session carried by the proxy's.
    Tunneled(Box<dyn TlsLayer<S>>),
}

/// A TLS session over a [`MaybeTlsStream`] that is itself TLS (the
/// [`Tunneled`](MaybeTlsStream::Tunneled) case), seen down to the
/// transport underneath both.
pub trait TlsLayer<S>: Read + Write + Send + Sync {
    /// The transport under every TLS layer.
    fn transport(&self) -> &S;
    /// The transport under every TLS layer, mutably.
    fn transport_mut(&mut self) -> &mut S;
    /// Sends TLS's close_notify on this session, then on the one under
    /// it.
    ///
    /// # Errors
    ///
    /// Writing it failed.
    fn close_notify(&mut self) -> io::Result<()>;
}

#[cfg(feature = "rustls")]
impl<S> TlsLayer<S> for rustls::StreamOwned<rustls::ClientConnection, MaybeTlsStream<S>>
where
    S: Read + Write + Send + Sync,
{
    fn transport(&self) -> &S {
        self.get_ref().get_ref()
    }

    fn transport_mut(&mut self) -> &mut S {
        self.get_mut().get_mut()
    }

    fn close_notify(&mut self) -> io::Result<()> {
        self.conn.send_close_notify();
        self.flush()?;
        self.sock.close_notify()
    }
}

#[cfg(feature = "native-tls")]
impl<S> TlsLayer<S> for native_tls::TlsStream<MaybeTlsStream<S>>
where
    S: Read + Write + Send + Sync,
{
    fn transport(&self) -> &S {
        self.get_ref().get_ref()
    }

    fn transport_mut(&mut self) -> &mut S {
        self.get_mut().get_mut()
    }

    fn close_notify(&mut self) -> io::Result<()> {
        self.shutdown()?;
        self.get_mut().close_notify()
    }
}

impl<S: Read + Write> MaybeTlsStream<S> {
    /// The transport: the stream itself when plain, the stream under the
    /// TLS layer otherwise.
    pub fn get_ref(&self) -> &S {
        match self {
            MaybeTlsStream::Plain(stream) => stream,
            #[cfg(feature = "native-tls")]
            MaybeTlsStream::NativeTls(stream) => stream.get_ref(),
            #[cfg(feature = "rustls")]
            MaybeTlsStream::Rustls(stream) => stream.get_ref(),
            MaybeTlsStream::Tunneled(stream) => stream.transport(),
        }
    }

    /// The transport, mutably, for its own settings. Reading or writing it
    /// directly corrupts the TLS session above it.
    pub fn get_mut(&mut self) -> &mut S {
        match self {
            MaybeTlsStream::Plain(stream) => stream,
            #[cfg(feature = "native-tls")]
            MaybeTlsStream::NativeTls(stream) => stream.get_mut(),
            #[cfg(feature = "rustls")]
            MaybeTlsStream::Rustls(stream) => stream.get_mut(),
            MaybeTlsStream::Tunneled(stream) => stream.transport_mut(),
        }
    }

    /// Sends TLS's close_notify (on every TLS layer, innermost session
    /// first), so the peer knows the end of the stream is not a
    /// truncation; nothing for a plain stream. The transport stays open:
    /// end its write side after this.
    ///
    /// # Errors
    ///
    /// Writing the alert failed.
    pub fn close_notify(&mut self) -> io::Result<()> {
        match self {
            MaybeTlsStream::Plain(_) => Ok(()),
            #[cfg(feature = "native-tls")]
            MaybeTlsStream::NativeTls(stream) => stream.shutdown(),
            #[cfg(feature = "rustls")]
            MaybeTlsStream::Rustls(stream) => {
                stream.conn.send_close_notify();
                stream.flush()
            }
            MaybeTlsStream::Tunneled(stream) => stream.close_notify(),
        }
    }

    /// Whether the stream is secured with TLS.
    pub fn is_tls(&self) -> bool {
        !matches!(self, MaybeTlsStream::Plain(_))
    }
}

impl<S: Read + Write + fmt::Debug> fmt::Debug for MaybeTlsStream<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MaybeTlsStream::Plain(stream) => f.debug_tuple("Plain").field(stream).finish(),
            #[cfg(feature = "native-tls")]
            MaybeTlsStream::NativeTls(stream) => f.debug_tuple("NativeTls").field(stream).finish(),
            #[cfg(feature = "rustls")]
            MaybeTlsStream::Rustls(stream) => f
                .debug_struct("Rustls")
                .field("conn", &stream.conn)
                .field("sock", &stream.sock)
                .finish(),
            MaybeTlsStream::Tunneled(stream) => f
                .debug_struct("Tunneled")
                .field("transport", stream.transport())
                .finish_non_exhaustive(),
        }
    }
}

impl<S: Read + Write> Read for MaybeTlsStream<S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            MaybeTlsStream::Plain(stream) => stream.read(buf),
            #[cfg(feature = "native-tls")]
            MaybeTlsStream::NativeTls(stream) => stream.read(buf),
            #[cfg(feature = "rustls")]
            MaybeTlsStream::Rustls(stream) => stream.read(buf),
            MaybeTlsStream::Tunneled(stream) => stream.read(buf),
        }
    }
}

impl<S: Read + Write> Write for MaybeTlsStream<S> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            MaybeTlsStream::Plain(stream) => stream.write(buf),
            #[cfg(feature = "native-tls")]
            MaybeTlsStream::NativeTls(stream) => stream.write(buf),
            #[cfg(feature = "rustls")]
            MaybeTlsStream::Rustls(stream) => stream.write(buf),
            MaybeTlsStream::Tunneled(stream) => stream.write(buf),
        }
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            MaybeTlsStream::Plain(stream) => stream.write_vectored(bufs),
            #[cfg(feature = "native-tls")]
            MaybeTlsStream::NativeTls(stream) => stream.write_vectored(bufs),
            #[cfg(feature = "rustls")]
            MaybeTlsStream::Rustls(stream) => stream.write_vectored(bufs),
            MaybeTlsStream::Tunneled(stream) => stream.write_vectored(bufs),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            MaybeTlsStream::Plain(stream) => stream.flush(),
            #[cfg(feature = "native-tls")]
            MaybeTlsStream::NativeTls(stream) => stream.flush(),
            #[cfg(feature = "rustls")]
            MaybeTlsStream::Rustls(stream) => stream.flush(),
            MaybeTlsStream::Tunneled(stream) => stream.flush(),
        }
    }
}

/// The blocking driver's side of a [`Connector`]: the sessions it starts
/// become [`MaybeTlsStream`]s here, so the dial module knows no driver's
/// stream type.
impl Connector {
    /// Secures `stream` for a connection to `host` as `mode` asks: as it is
    /// for [`Mode::Plain`], else with TLS through this connector. The TLS
    /// handshake itself runs on the first read or write (for rustls) or
    /// here (for native-tls).
    ///
    /// # Errors
    ///
    /// [`Error::Url`](crate::Error::Url) for [`Mode::Tls`] with [`Connector::Plain`];
    /// [`InvalidDnsName`](crate::error::TlsError::InvalidDnsName)
    /// for a host that is not a server name; [`Error::Tls`](crate::Error::Tls) and
    /// [`Error::Io`](crate::Error::Io) for a failed native-tls handshake.
    pub fn wrap_stream<S: Read + Write + 'static>(
        self,
        stream: S,
        host: &str,
        mode: Mode,
    ) -> Result<MaybeTlsStream<S>> {
        if mode == Mode::Plain {
            return Ok(MaybeTlsStream::Plain(stream));
        }
        // Without a waiter, a native-tls handshake that would block is a
        // timeout on a socket whose read timeout bounds the dial, and an
        // error otherwise (the stream had to be blocking).
        #[cfg(feature = "native-tls")]
        let timed = crate::std_stream::read_timeout_of(&stream).is_some();
        #[cfg(not(feature = "native-tls"))]
        let timed = false;
        let mut blocked = || -> Result<()> {
            if timed {
                return Err(TimeoutKind::Handshake.into());
            }
            Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                "the native-tls handshake needs a blocking stream",
            )
            .into())
        };
        self.start(stream, host, &mut blocked).map(into_stream)
    }

    /// Secures a connection to `host` with TLS, over TLS if it already is
    /// (the server's session inside an `https://` proxy's), and completes
    /// the TLS handshake on a non-blocking transport, calling `wait` each
    /// time it would block (`wait` fails the handshake with its error,
    /// when the deadline has passed).
    ///
    /// # Errors
    ///
    /// As for [`wrap_stream`](Self::wrap_stream); [`Error::Tls`](crate::Error::Tls) for a
    /// handshake that failed; `wait`'s.
    pub(crate) fn secure<S>(
        self,
        stream: MaybeTlsStream<S>,
        host: &str,
        wait: &mut dyn FnMut() -> Result<()>,
    ) -> Result<MaybeTlsStream<S>>
    where
        S: Read + Write + Send + Sync + 'static,
    {
        match stream {
            MaybeTlsStream::Plain(stream) => Ok(into_stream(
                self.start(stream, host, &mut *wait)?.completed(wait)?,
            )),
            secured => Ok(into_tunneled(
                self.start(secured, host, &mut *wait)?.completed(wait)?,
            )),
        }
    }
}

/// The driver's stream over a TLS session a connector started.
fn into_stream<T: Read + Write>(session: TlsSession<T>) -> MaybeTlsStream<T> {
    match session {
        #[cfg(feature = "native-tls")]
        TlsSession::Native(stream) => MaybeTlsStream::NativeTls(stream),
        #[cfg(feature = "rustls")]
        TlsSession::Rustls(stream) => MaybeTlsStream::Rustls(stream),
        #[cfg(not(any(feature = "native-tls", feature = "rustls")))]
        TlsSession::None(never, _) => match never {},
    }
}

/// The driver's stream over a session inside an `https://` proxy's.
fn into_tunneled<S>(session: TlsSession<MaybeTlsStream<S>>) -> MaybeTlsStream<S>
where
    S: Read + Write + Send + Sync + 'static,
{
    match session {
        #[cfg(feature = "native-tls")]
        TlsSession::Native(stream) => MaybeTlsStream::Tunneled(Box::new(stream)),
        #[cfg(feature = "rustls")]
        TlsSession::Rustls(stream) => MaybeTlsStream::Tunneled(Box::new(stream)),
        #[cfg(not(any(feature = "native-tls", feature = "rustls")))]
        TlsSession::None(never, _) => match never {},
    }
}
