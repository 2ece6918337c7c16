//! Async entry points: the sans-IO handshake from lockgate, driven over a
//! tokio stream, within `Config::handshake_timeout`.

use std::future::Future;
use std::io;

use lockgate::handshake::{
    Callback, ClientHandshake, ClientHandshakeDone, IntoClientRequest, NoCallback, ServerHandshake,
    error_response_bytes,
};
use lockgate::{Config, Error, HandshakeError, Result, Role, WebSocketContext, http};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::stream::WebSocketStream;
use crate::tls::{Connector, MaybeTlsStream, wrap_stream};

/// How much one handshake read asks for.
const HANDSHAKE_READ: usize = 4096;

/// Runs `handshake` within the configured timeout.
async fn within<T>(config: &Config, handshake: impl Future<Output = Result<T>>) -> Result<T> {
    match config.get_handshake_timeout() {
        None => handshake.await,
        Some(limit) => match tokio::time::timeout(limit, handshake).await {
            Ok(result) => result,
            Err(_) => Err(Error::Io(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("WebSocket handshake did not complete within {limit:?}"),
            ))),
        },
    }
}

async fn read_some<S: AsyncRead + Unpin>(stream: &mut S, buf: &mut [u8]) -> Result<usize> {
    match stream.read(buf).await? {
        0 => Err(HandshakeError::UnexpectedEof.into()),
        n => Ok(n),
    }
}

async fn write_all_and_flush<S: AsyncWrite + Unpin>(
    stream: &mut S,
    bytes: &[u8],
) -> io::Result<()> {
    stream.write_all(bytes).await?;
    stream.flush().await
}

/// Accepts a WebSocket upgrade on `stream` with the default [`Config`].
///
/// # Errors
///
/// [`Error::Handshake`] for a bad request (the matching HTTP error response
/// was written), [`Error::Io`] (including a timeout).
pub async fn accept_async<S>(stream: S) -> Result<WebSocketStream<S>>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    accept_hdr_async_with_config(stream, NoCallback, Config::default()).await
}

/// [`accept_async`] with a [`Config`].
///
/// # Errors
///
/// As for [`accept_async`].
pub async fn accept_async_with_config<S>(stream: S, config: Config) -> Result<WebSocketStream<S>>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    accept_hdr_async_with_config(stream, NoCallback, config).await
}

/// Accepts an upgrade, letting `callback` inspect the request and shape or
/// refuse the response (subprotocols, extra headers, origin checks).
///
/// # Errors
///
/// As for [`accept_async`]; a refusal is [`HandshakeError::Rejected`],
/// after the callback's response was written.
pub async fn accept_hdr_async<S, C>(stream: S, callback: C) -> Result<WebSocketStream<S>>
where
    S: AsyncRead + AsyncWrite + Unpin,
    C: Callback,
{
    accept_hdr_async_with_config(stream, callback, Config::default()).await
}

/// [`accept_hdr_async`] with a [`Config`].
///
/// # Errors
///
/// As for [`accept_hdr_async`].
pub async fn accept_hdr_async_with_config<S, C>(
    mut stream: S,
    callback: C,
    config: Config,
) -> Result<WebSocketStream<S>>
where
    S: AsyncRead + AsyncWrite + Unpin,
    C: Callback,
{
    let (deflate, leftover) = within(&config, async {
        let mut handshake = ServerHandshake::with_deflate(callback, config.get_deflate().copied());
        let mut buf = vec![0u8; HANDSHAKE_READ];
        loop {
            let n = read_some(&mut stream, &mut buf).await?;
            match handshake.receive(&buf[..n]) {
                Ok(None) => {}
                Ok(Some(done)) => {
                    write_all_and_flush(&mut stream, &done.response_bytes).await?;
                    return Ok((done.deflate, done.leftover));
                }
                Err(Error::Handshake(e)) => {
                    // The peer should learn why; failing to tell it changes
                    // nothing.
                    let _ = write_all_and_flush(&mut stream, &error_response_bytes(&e)).await;
                    return Err(e.into());
                }
                Err(e) => return Err(e),
            }
        }
    })
    .await?;
    let context = WebSocketContext::after_handshake(Role::Server, config, deflate, &leftover);
    Ok(WebSocketStream::from_context(stream, context))
}

/// Performs the client handshake for `request` over an already connected
/// `stream` (TCP, TLS, anything `AsyncRead + AsyncWrite`).
///
/// # Errors
///
/// [`Error::Handshake`] for a bad URL or response, [`Error::Io`] (including
/// a timeout).
pub async fn client_async<R, S>(
    request: R,
    stream: S,
) -> Result<(WebSocketStream<S>, http::Response<()>)>
where
    R: IntoClientRequest,
    S: AsyncRead + AsyncWrite + Unpin,
{
    client_async_with_config(request, stream, Config::default()).await
}

/// [`client_async`] with a [`Config`].
///
/// # Errors
///
/// As for [`client_async`].
pub async fn client_async_with_config<R, S>(
    request: R,
    mut stream: S,
    config: Config,
) -> Result<(WebSocketStream<S>, http::Response<()>)>
where
    R: IntoClientRequest,
    S: AsyncRead + AsyncWrite + Unpin,
{
    let done = within(&config, client_handshake(request, &mut stream, &config)).await?;
    let context =
        WebSocketContext::after_handshake(Role::Client, config, done.deflate, &done.leftover);
    Ok((
        WebSocketStream::from_context(stream, context),
        done.response,
    ))
}

/// The client handshake itself, without a time limit.
async fn client_handshake<R, S>(
    request: R,
    stream: &mut S,
    config: &Config,
) -> Result<ClientHandshakeDone>
where
    R: IntoClientRequest,
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut handshake = ClientHandshake::with_deflate(request, config.get_deflate().copied())?;
    write_all_and_flush(stream, handshake.request_bytes()).await?;
    let mut buf = vec![0u8; HANDSHAKE_READ];
    loop {
        let n = read_some(stream, &mut buf).await?;
        if let Some(done) = handshake.receive(&buf[..n])? {
            return Ok(done);
        }
    }
}

/// Connects to a `ws://` URL (or `wss://` with the `rustls` feature) over
/// TCP with `TCP_NODELAY`, and performs the handshake.
///
/// # Errors
///
/// [`HandshakeError::BadUrl`] for an unusable URL (or `wss://` without
/// TLS support), [`Error::Io`] for resolution, connection, TLS and timeout
/// failures, and the errors of [`client_async`].
pub async fn connect_async<R>(
    request: R,
) -> Result<(
    WebSocketStream<MaybeTlsStream<TcpStream>>,
    http::Response<()>,
)>
where
    R: IntoClientRequest,
{
    connect_async_tls_with_config(request, Config::default(), None).await
}

/// [`connect_async`] with a [`Config`].
///
/// # Errors
///
/// As for [`connect_async`].
pub async fn connect_async_with_config<R>(
    request: R,
    config: Config,
) -> Result<(
    WebSocketStream<MaybeTlsStream<TcpStream>>,
    http::Response<()>,
)>
where
    R: IntoClientRequest,
{
    connect_async_tls_with_config(request, config, None).await
}

/// [`connect_async`] with a [`Config`] and a TLS [`Connector`] (`None`
/// picks the default: the roots compiled in by the `webpki-roots` or
/// `native-certs` feature).
///
/// # Errors
///
/// As for [`connect_async`].
pub async fn connect_async_tls_with_config<R>(
    request: R,
    config: Config,
    connector: Option<Connector>,
) -> Result<(
    WebSocketStream<MaybeTlsStream<TcpStream>>,
    http::Response<()>,
)>
where
    R: IntoClientRequest,
{
    let request = request.into_client_request()?;
    let uri = request.uri();
    let secure = match uri.scheme_str() {
        Some(s) if s.eq_ignore_ascii_case("ws") => false,
        Some(s) if s.eq_ignore_ascii_case("wss") => true,
        _ => return Err(HandshakeError::BadUrl(format!("{uri}: expected ws:// or wss://")).into()),
    };
    let host = uri
        .host()
        .ok_or_else(|| HandshakeError::BadUrl(format!("{uri}: no host")))?;
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = uri.port_u16().unwrap_or(if secure { 443 } else { 80 });
    // One limit for the whole connection: TCP, TLS and the upgrade.
    let (stream, done) = within(&config, async {
        let tcp = TcpStream::connect((host.as_str(), port)).await?;
        tcp.set_nodelay(true)?;
        let mut stream = wrap_stream(tcp, secure, &host, connector).await?;
        let done = client_handshake(request, &mut stream, &config).await?;
        Ok((stream, done))
    })
    .await?;
    let context =
        WebSocketContext::after_handshake(Role::Client, config, done.deflate, &done.leftover);
    let ws = WebSocketStream::from_context(stream, context);
    Ok((ws, done.response))
}
