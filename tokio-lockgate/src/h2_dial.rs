//! [`connect_async_h2`]: a client dial that opens the WebSocket as an
//! HTTP/2 extended CONNECT stream (RFC 8441) when the server offers that,
//! and as an HTTP/1.1 upgrade otherwise. Its items are re-exported from
//! [`crate::upgrade`].
//!
//! The dial is `connect_async_with`'s (the route's steps: TCP, a proxy's
//! tunnel and its TLS) up to the TLS to the server, which offers ALPN `h2`
//! and `http/1.1`; what follows depends on the server's answers:
//!
//! ```text
//!  ws://                                   HTTP/1.1 upgrade
//!  wss://  ALPN http/1.1 (or none)         HTTP/1.1 upgrade on that connection
//!  wss://  ALPN h2, SETTINGS with          extended CONNECT stream
//!          ENABLE_CONNECT_PROTOCOL = 1
//!  wss://  ALPN h2, SETTINGS without it    new connection, ALPN http/1.1 only,
//!                                          HTTP/1.1 upgrade
//! ```
//!
//! All of it, the second connection included, within the handshake
//! deadline.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use ::hyper::client::conn::http2;
use ::hyper::upgrade::Upgraded;
use hyper_util::rt::{TokioExecutor, TokioIo};
use lockgate::dial::{DialStep, Route};
use lockgate::handshake::IntoClientRequest;
use lockgate::handshake::client::Response;
use lockgate::http::Request;
use lockgate::{ClientOptions, Config, Connector, Error, Result, TimeoutKind};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

use crate::connect::{finish_client, now, until};
use crate::runtime::Tokio;
use crate::stream::WebSocketStream;
use crate::tls::{MaybeTlsStream, secure};
use crate::upgrade::{extended_connect, hyper_error};

/// ALPN's name for HTTP/2 over TLS.
#[cfg(any(feature = "rustls", feature = "native-tls"))]
const H2: &str = "h2";
/// ALPN's name for HTTP/1.1.
#[cfg(any(feature = "rustls", feature = "native-tls"))]
const HTTP1: &str = "http/1.1";

/// The stream of a WebSocket dialled by [`connect_async_h2`]: an HTTP/2
/// stream (extended CONNECT, RFC 8441), or the connection itself for
/// HTTP/1.1.
///
/// It reads and writes like the stream inside, vectored writes included.
#[derive(Debug)]
#[non_exhaustive]
pub enum DialedStream {
    /// HTTP/1.1: the connection, plain (`ws://`) or TLS (`wss://`), as
    /// [`connect_async`](crate::connect_async) gives it.
    Http1(MaybeTlsStream<TcpStream>),
    /// HTTP/2: the extended CONNECT stream. hyper drives the connection
    /// under it on a task of its own, which ends with the stream.
    Http2(TokioIo<Upgraded>),
}

impl DialedStream {
    /// Whether the WebSocket is an HTTP/2 stream.
    pub fn is_http2(&self) -> bool {
        matches!(self, DialedStream::Http2(_))
    }
}

/// Dispatches to the stream inside, whichever it is.
macro_rules! each {
    ($self:expr, $stream:ident => $body:expr) => {
        match $self {
            DialedStream::Http1($stream) => $body,
            DialedStream::Http2($stream) => $body,
        }
    };
}

impl AsyncRead for DialedStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        each!(self.get_mut(), stream => Pin::new(stream).poll_read(cx, buf))
    }
}

impl AsyncWrite for DialedStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        each!(self.get_mut(), stream => Pin::new(stream).poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        each!(self.get_mut(), stream => Pin::new(stream).poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        each!(self, stream => stream.is_write_vectored())
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            DialedStream::Http1(stream) => Pin::new(stream).poll_flush(cx),
            DialedStream::Http2(stream) => Pin::new(stream).poll_flush(cx).map(graceful_reset_ok),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            DialedStream::Http1(stream) => Pin::new(stream).poll_shutdown(cx),
            DialedStream::Http2(stream) => {
                Pin::new(stream).poll_shutdown(cx).map(graceful_reset_ok)
            }
        }
    }
}

/// A flush or shutdown of an HTTP/2 stream the server reset with
/// `NO_ERROR` succeeded: the server has finished and needs nothing more
/// (RFC 9113, section 8.1), which h2 says once a server has ended its side
/// while the client's is open: after the closing handshake, as soon as
/// the server has the client's close frame. hyper reads it as the end of
/// the stream, but fails a flush still waiting then; the bytes were
/// handed to the stream, and the server's close frame is still to be
/// read. Any other error stays one.
fn graceful_reset_ok(result: io::Result<()>) -> io::Result<()> {
    match result {
        Err(error) if is_graceful_reset(&error) => Ok(()),
        other => other,
    }
}

/// Whether `error` is hyper's report of a stream reset with `NO_ERROR`.
fn is_graceful_reset(error: &io::Error) -> bool {
    let reason = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<::hyper::Error>())
        .and_then(std::error::Error::source)
        .and_then(|cause| cause.downcast_ref::<h2::Error>())
        .and_then(h2::Error::reason);
    reason == Some(h2::Reason::NO_ERROR)
}

/// Connects to a `ws://` or `wss://` URL as
/// [`connect_async_with`](crate::connect_async_with) does (TCP with
/// `TCP_NODELAY`, the proxy's tunnel, TLS), but for `wss://` offers HTTP/2
/// to the server and, if the server enables extended CONNECT (RFC 8441,
/// `SETTINGS_ENABLE_CONNECT_PROTOCOL`), opens the WebSocket as an HTTP/2
/// stream; otherwise as an HTTP/1.1 upgrade. Everything within the
/// config's handshake deadline.
///
/// - `ws://` is HTTP/1.1: no HTTP/2 without TLS is tried.
/// - `wss://`: the TLS to the server offers ALPN `h2` and `http/1.1`. A
///   server choosing `http/1.1` (or no protocol) gets the HTTP/1.1 upgrade
///   on that connection. A server choosing `h2` without enabling extended
///   CONNECT in its first SETTINGS frame costs a second connection,
///   offering `http/1.1` alone, for the HTTP/1.1 upgrade.
/// - ALPN: without a [`Connector`] the default one is used, asking for
///   `h2` and `http/1.1`. A `Connector::Rustls` whose ALPN list is empty
///   or just `http/1.1` (that of `lockgate::dial::client_config`) is used
///   with `h2` and `http/1.1` instead; any other list is used as given
///   (and without `h2` for a second connection). A `Connector::NativeTls`
///   of yours is used as given: it offers `h2` only if you asked it to.
/// - Through an `https://` proxy the server's TLS runs inside the proxy's,
///   where its ALPN answer cannot be read: `h2` is not offered there.
///
/// The request's subprotocols and the config's deflate setting are
/// offered either way. The response has no body: `200` with the HTTP/2
/// response's headers, or the `101` of HTTP/1.1.
///
/// Use [`connect_async_with`](crate::connect_async_with) for a
/// `WebSocketStream<MaybeTlsStream<TcpStream>>` (HTTP/1.1 only), whose
/// [`MaybeTlsStream::get_ref`] reaches the `TcpStream`; an HTTP/2 stream
/// has none of its own.
///
/// # Errors
///
/// As for [`connect_async_with`](crate::connect_async_with): [`Error::Url`],
/// [`Error::Io`], [`Error::Tls`], the proxy's refusals, [`Error::Http`] for
/// a refusal (a status other than 2xx over HTTP/2, other than 101 over
/// HTTP/1.1), [`HandshakeFailure::BadResponse`](lockgate::HandshakeFailure::BadResponse),
/// and a timeout ([`Error::timeout`] is `Some(TimeoutKind::Handshake)`) when the deadline
/// passes, whichever step it catches. Once the server has enabled
/// extended CONNECT there is no fallback: a failure of the HTTP/2
/// connection is [`Error::Io`]. [`Error::Url`] too when the second
/// connection chose `h2` again (a native-tls connector of yours that asks
/// for it).
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use tokio_lockgate::upgrade::connect_async_h2;
/// use tokio_lockgate::{ClientOptions, Config, Message};
///
/// # async fn run() -> tokio_lockgate::Result<()> {
/// let config = Config::default().handshake_timeout(Some(Duration::from_secs(5)));
/// let options = ClientOptions::new().config(config);
/// let (mut ws, response) = connect_async_h2("wss://example.com/feed", options).await?;
/// println!("{:?}, HTTP/2: {}", response.status(), ws.get_ref().is_http2());
/// ws.send(Message::text("hello")).await?;
/// # Ok(()) }
/// ```
pub async fn connect_async_h2(
    request: impl IntoClientRequest,
    options: ClientOptions,
) -> Result<(WebSocketStream<DialedStream>, Response)> {
    let request = request.into_client_request()?;
    let route = options.route(request.uri())?;
    let steps = route.steps();
    let (shared, server_tls) = split_steps(&route, &steps);
    let given = options.get_connector().cloned();
    let config = *options.get_config();
    let connect = server_tls.is_some().then(|| request.clone());
    let handshake = options.handshake(request, now())?;
    let deadline = handshake.deadline();
    // On the heap, as connect_async's dial: TLS and HTTP/2 state is large.
    let dial = Box::pin(async {
        let tls_before = shared
            .iter()
            .any(|step| matches!(step, DialStep::Tls { .. }));
        let proxy_connector = match tls_before {
            true => Some(given_or_default(given.as_ref())?),
            false => None,
        };
        let transport = async_lockgate::driver::open::<Tokio>(
            &route,
            shared,
            proxy_connector.as_ref(),
            true,
            deadline,
        )
        .await?;
        let (Some(host), Some(request)) = (server_tls, connect) else {
            return finish_client(DialedStream::Http1(transport), handshake).await;
        };
        let offer_h2 = !transport.is_tls();
        let connector = server_connector(given.as_ref(), offer_h2)?;
        let stream = secure(transport, host, connector).await?;
        if !chose_h2(&stream) {
            return finish_client(DialedStream::Http1(stream), handshake).await;
        }
        if let Some(opened) = over_h2(stream, request, config).await? {
            return Ok(opened);
        }
        // HTTP/2 without WebSockets: HTTP/1.1 on a connection of its own.
        let transport = async_lockgate::driver::open::<Tokio>(
            &route,
            shared,
            proxy_connector.as_ref(),
            true,
            deadline,
        )
        .await?;
        let connector = server_connector(given.as_ref(), false)?;
        let stream = secure(transport, host, connector).await?;
        if chose_h2(&stream) {
            return Err(h2_only());
        }
        finish_client(DialedStream::Http1(stream), handshake).await
    });
    until(deadline, dial)
        .await
        .ok_or(Error::from(TimeoutKind::Handshake))?
}

/// The steps of `route` this dial shares with `connect_async`'s: all
/// before the TLS to the server (`wss://`, whose name comes second) or, for
/// `ws://`, before the handshake.
fn split_steps<'s, 'r>(
    route: &Route,
    steps: &'s [DialStep<'r>],
) -> (&'s [DialStep<'r>], Option<&'r str>) {
    // Route::steps ends [.., Tls { server }, Handshake] for wss:// and
    // [.., Handshake] for ws://.
    match steps {
        [shared @ .., DialStep::Tls { host }, DialStep::Handshake] if route.secure => {
            (shared, Some(*host))
        }
        [shared @ .., DialStep::Handshake] => (shared, None),
        _ => unreachable!("Route::steps ends with the handshake"),
    }
}

/// The WebSocket as an extended CONNECT stream on `stream`, whose ALPN
/// chose `h2`, once the server's first SETTINGS frame has arrived; `None`
/// if it does not enable extended CONNECT, or if the connection ended
/// before it came.
async fn over_h2(
    stream: MaybeTlsStream<TcpStream>,
    request: Request<()>,
    config: Config,
) -> Result<Option<(WebSocketStream<DialedStream>, Response)>> {
    let (stream, preface) = PrefaceWatch::new(stream);
    // Any body type will do: a CONNECT's body is not sent, its stream is
    // the upgrade.
    let (mut sender, connection) = http2::Builder::new(TokioExecutor::new())
        .handshake::<_, String>(TokioIo::new(stream))
        .await
        .map_err(hyper_error)?;
    // hyper drives the connection's I/O on a task of its own;
    // `connection` only hands it requests, and knows the server's
    // settings.
    let applied = matches!(preface.await, Ok(Preface::Applied));
    if !(applied && connection.is_extended_connect_protocol_enabled()) {
        // Dropping both ends the connection (GOAWAY).
        return Ok(None);
    }
    tokio::spawn(connection);
    let (upgraded, context, response) = extended_connect(&mut sender, request, config).await?;
    Ok(Some((
        WebSocketStream::from_context(DialedStream::Http2(upgraded), context),
        response.map(|()| None),
    )))
}

/// Whether the server chose HTTP/2 (ALPN `h2`) on `stream`. (A session
/// inside an `https://` proxy's is not asked: `h2` is not offered there.)
fn chose_h2(stream: &MaybeTlsStream<TcpStream>) -> bool {
    match stream {
        #[cfg(feature = "rustls")]
        MaybeTlsStream::Rustls(tls) => tls.get_ref().1.alpn_protocol() == Some(H2.as_bytes()),
        #[cfg(feature = "native-tls")]
        MaybeTlsStream::NativeTls(tls) => tls
            .get_ref()
            .negotiated_alpn()
            .ok()
            .flatten()
            .is_some_and(|protocol| protocol == H2.as_bytes()),
        _ => false,
    }
}

/// The error for a server that chose `h2` again, on the connection meant
/// for HTTP/1.1: a native-tls connector of the caller's that offers it.
fn h2_only() -> Error {
    lockgate::error::Detail::InvalidUrl(
        "the server chose HTTP/2 (ALPN h2) without extended CONNECT (RFC 8441), and the \
         TLS connector offers h2 on every connection: give connect_async_h2 a connector \
         without ALPN h2, or use connect_async_with"
            .to_owned(),
    )
    .into()
}

/// The connector for TLS before the server's (an `https://` proxy's), as
/// `connect_async` chooses it: the caller's, or the default.
fn given_or_default(given: Option<&Connector>) -> Result<Connector> {
    given.cloned().map_or_else(Connector::for_wss, Ok)
}

/// The connector for the TLS to the server: offering `h2` and `http/1.1`
/// (`offer_h2`) where the caller left ALPN to us, or never `h2`.
fn server_connector(given: Option<&Connector>, offer_h2: bool) -> Result<Connector> {
    // The default is native-tls's when that feature is on (as
    // Connector::for_wss), built here to ask for the protocols.
    #[cfg(feature = "native-tls")]
    if given.is_none() && offer_h2 {
        let connector = lockgate::dial::native_tls::TlsConnector::builder()
            .request_alpns(&[H2, HTTP1])
            .build()
            .map_err(lockgate::error::TlsError::from)?;
        return Ok(Connector::NativeTls(connector));
    }
    Ok(with_alpn(given_or_default(given)?, offer_h2))
}

/// `connector` offering `h2` and `http/1.1` (`offer_h2`) if its ALPN list
/// is empty or just `http/1.1` (the default's), or without `h2`. Only
/// rustls's configuration can be read and copied; anything else is used
/// as it is.
fn with_alpn(connector: Connector, offer_h2: bool) -> Connector {
    match connector {
        #[cfg(feature = "rustls")]
        Connector::Rustls(config) => {
            let alpn = &config.alpn_protocols;
            let protocols = if offer_h2 {
                let left_to_us = alpn.is_empty() || *alpn == [HTTP1.as_bytes()];
                if !left_to_us {
                    return Connector::Rustls(config);
                }
                vec![H2.into(), HTTP1.into()]
            } else {
                if !alpn.iter().any(|protocol| protocol == H2.as_bytes()) {
                    return Connector::Rustls(config);
                }
                let without_h2 = alpn.iter().filter(|protocol| *protocol != H2.as_bytes());
                without_h2.cloned().collect()
            };
            // A copy shares the caller's session cache, verifier and
            // provider (all behind `Arc`s).
            let mut copy = lockgate::dial::rustls::ClientConfig::clone(&config);
            copy.alpn_protocols = protocols;
            Connector::Rustls(std::sync::Arc::new(copy))
        }
        #[allow(unreachable_patterns, reason = "without rustls this is the only arm")]
        other => {
            let _ = offer_h2;
            other
        }
    }
}

/// What [`PrefaceWatch`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Preface {
    /// The server's first SETTINGS frame is in force.
    Applied,
    /// The connection ended or failed first, or its first frame was not
    /// a SETTINGS frame.
    Broken,
}

/// The transport under an HTTP/2 client connection, reporting when the
/// server's connection preface is in force: a SETTINGS frame, which "MUST
/// be the first frame the server sends" (RFC 9113, section 3.4), and
/// which says whether extended CONNECT is enabled.
///
/// h2 applies (and acknowledges) a SETTINGS frame before it reads again
/// (its `Settings::recv_settings`: "We always ACK before reading more
/// frames"). So once the frame's bytes have been read, the next read
/// means its settings are in force; hyper's
/// `Connection::is_extended_connect_protocol_enabled` then answers for
/// the server. After the report, reads pass straight through.
struct PrefaceWatch<S> {
    io: S,
    /// Where to report, until it has been.
    report: Option<oneshot::Sender<Preface>>,
    /// The first frame's header, as far as it has arrived.
    header: [u8; FRAME_HEADER],
    /// How many bytes have been read (saturating).
    seen: usize,
}

/// The size of an HTTP/2 frame header (RFC 9113, section 4.1).
const FRAME_HEADER: usize = 9;

impl<S> PrefaceWatch<S> {
    /// `io`, watched, and where its report arrives.
    fn new(io: S) -> (Self, oneshot::Receiver<Preface>) {
        let (report, receiver) = oneshot::channel();
        let watch = PrefaceWatch {
            io,
            report: Some(report),
            header: [0; FRAME_HEADER],
            seen: 0,
        };
        (watch, receiver)
    }

    /// Counts `bytes`, just read, keeping the first frame's header.
    fn observe(&mut self, bytes: &[u8]) {
        if self.seen < FRAME_HEADER {
            let n = (FRAME_HEADER - self.seen).min(bytes.len());
            self.header[self.seen..self.seen + n].copy_from_slice(&bytes[..n]);
            if self.seen + n == FRAME_HEADER && !is_settings(&self.header) {
                self.settle(Preface::Broken);
            }
        }
        self.seen = self.seen.saturating_add(bytes.len());
    }

    /// Whether the whole first frame has been read.
    fn preface_read(&self) -> bool {
        let length = u32::from_be_bytes([0, self.header[0], self.header[1], self.header[2]]);
        self.seen >= FRAME_HEADER && self.seen - FRAME_HEADER >= length as usize
    }

    /// Reports `preface`, once.
    fn settle(&mut self, preface: Preface) {
        if let Some(report) = self.report.take() {
            // The dial may have given up waiting; nothing to do then.
            let _ = report.send(preface);
        }
    }
}

/// Whether `header` is that of a SETTINGS frame (type 4) on stream 0
/// without the ACK flag: a server's connection preface.
fn is_settings(header: &[u8; FRAME_HEADER]) -> bool {
    let stream = u32::from_be_bytes([header[5], header[6], header[7], header[8]]) & 0x7fff_ffff;
    header[3] == 0x4 && header[4] & 0x1 == 0 && stream == 0
}

impl<S: AsyncRead + Unpin> AsyncRead for PrefaceWatch<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.report.is_some() && this.preface_read() {
            this.settle(Preface::Applied);
        }
        let (before, room) = (buf.filled().len(), buf.remaining());
        let result = ready!(Pin::new(&mut this.io).poll_read(cx, buf));
        if this.report.is_some() {
            match &result {
                Ok(()) if room > 0 && buf.filled().len() == before => {
                    this.settle(Preface::Broken);
                }
                Ok(()) => this.observe(&buf.filled()[before..]),
                Err(_) => this.settle(Preface::Broken),
            }
        }
        Poll::Ready(result)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for PrefaceWatch<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A frame header: `length`, `kind`, `flags`, `stream`.
    fn header(length: u32, kind: u8, flags: u8, stream: u32) -> Vec<u8> {
        let mut bytes = length.to_be_bytes()[1..].to_vec();
        bytes.extend([kind, flags]);
        bytes.extend(stream.to_be_bytes());
        bytes
    }

    /// Feeds `chunks` through a watch, one read each, then reads once
    /// more; the report, if one was made.
    async fn report_after(chunks: &[&[u8]], end: bool) -> Option<Preface> {
        let (client, mut server) = tokio::io::duplex(1024);
        let (mut watch, mut report) = PrefaceWatch::new(client);
        let mut buf = [0u8; 1024];
        for chunk in chunks {
            server.write_all(chunk).await.unwrap();
            let n = watch.read(&mut buf).await.unwrap();
            assert_eq!(n, chunk.len());
        }
        if end {
            drop(server);
            assert_eq!(watch.read(&mut buf).await.unwrap(), 0);
        } else {
            server.write_all(b"x").await.unwrap();
            assert_eq!(watch.read(&mut buf).await.unwrap(), 1);
        }
        report.try_recv().ok()
    }

    #[tokio::test]
    async fn reports_the_preface_applied_at_the_next_read() {
        let settings = [header(12, 4, 0, 0), vec![0; 12]].concat();
        let empty = header(0, 4, 0, 0);
        // The reads, whether the connection then ends, the report.
        type Case<'a> = (&'a str, Vec<&'a [u8]>, bool, Option<Preface>);
        let cases: [Case<'_>; 7] = [
            ("whole", vec![&settings], false, Some(Preface::Applied)),
            (
                "byte by byte",
                settings.chunks(1).collect(),
                false,
                Some(Preface::Applied),
            ),
            ("header only", vec![&settings[..9]], false, None),
            ("payload short", vec![&settings[..20]], false, None),
            (
                "empty SETTINGS",
                vec![&empty],
                false,
                Some(Preface::Applied),
            ),
            (
                "EOF first",
                vec![&settings[..5]],
                true,
                Some(Preface::Broken),
            ),
            (
                "not SETTINGS",
                vec![b"HTTP/1.1 400 Bad"],
                false,
                Some(Preface::Broken),
            ),
        ];
        for (name, chunks, end, expected) in cases {
            assert_eq!(report_after(&chunks, end).await, expected, "{name}");
        }
        // A SETTINGS ACK, or a frame on a stream, is no server preface.
        for bad in [header(0, 4, 1, 0), header(0, 4, 0, 1)] {
            assert_eq!(report_after(&[&bad], false).await, Some(Preface::Broken));
        }
    }

    #[tokio::test]
    async fn dialling_is_send() {
        fn send<T: Send>(_: &T) {}
        let dial = connect_async_h2("ws://127.0.0.1:1/", ClientOptions::new());
        send(&dial);
    }
}
