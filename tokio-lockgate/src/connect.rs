//! Async entry points: lockgate's sans-IO [`HandshakeDriver`] run over a
//! tokio stream.
//!
//! The loop only moves bytes and waits: each read or write races the
//! handshake deadline (one timer), and when the deadline wins the driver
//! is told so. `connect_async` fits the TCP connection and TLS in the same
//! deadline.

use std::future::Future;
use std::io;
use std::time::Instant;

use lockgate::handshake::{Callback, Exchange, IntoClientRequest, Step};
use lockgate::{ClientOptions, Error, Result, ServerOptions, TimeoutKind, http};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::stream::WebSocketStream;
use crate::tls::{Connector, MaybeTlsStream, wrap_stream};

/// How much one handshake read asks for.
const HANDSHAKE_READ: usize = 4096;

/// Accepts a WebSocket upgrade on `stream` with the default
/// [`Config`](lockgate::Config) (within its 30 s handshake deadline).
///
/// Use [`accept_async_with`] for another config.
///
/// # Errors
///
/// [`Error::Handshake`] for a bad request (the matching HTTP error response
/// was written), [`Error::Timeout`] if the request did not arrive in time,
/// [`Error::Io`].
pub async fn accept_async<S>(stream: S) -> Result<WebSocketStream<S>>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    accept_async_with(stream, ServerOptions::new()).await
}

/// Accepts an upgrade, letting `callback` inspect the request and shape or
/// refuse the response (subprotocols, extra headers, origin checks).
///
/// Use [`accept_async_with`] for another config.
///
/// # Errors
///
/// As for [`accept_async`]; a refusal is [`Error::Http`](crate::Error::Http),
/// after the callback's response was written.
pub async fn accept_hdr_async<S, C>(stream: S, callback: C) -> Result<WebSocketStream<S>>
where
    S: AsyncRead + AsyncWrite + Unpin,
    C: Callback,
{
    accept_async_with(stream, ServerOptions::new().callback(callback)).await
}

/// Accepts a WebSocket upgrade on `stream` with `options` (config and
/// callback), within the config's handshake deadline.
///
/// # Errors
///
/// As for [`accept_async`] and [`accept_hdr_async`].
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use tokio_lockgate::{Config, ServerOptions, accept_async_with};
///
/// # async fn serve(tcp: tokio::net::TcpStream) -> tokio_lockgate::Result<()> {
/// let config = Config::default().handshake_timeout(Some(Duration::from_secs(5)));
/// let ws = accept_async_with(tcp, ServerOptions::new().config(config)).await?;
/// # drop(ws); Ok(()) }
/// ```
pub async fn accept_async_with<S, C>(
    mut stream: S,
    options: ServerOptions<C>,
) -> Result<WebSocketStream<S>>
where
    S: AsyncRead + AsyncWrite + Unpin,
    C: Callback,
{
    let opened = drive(&mut stream, options.handshake(now())).await?;
    Ok(WebSocketStream::from_context(stream, opened.context))
}

/// Performs the client handshake for `request` over an already connected
/// `stream` (TCP, TLS, anything `AsyncRead + AsyncWrite`) with the default
/// [`Config`](lockgate::Config).
///
/// Use [`client_async_with`] for another config.
///
/// # Errors
///
/// [`Error::Handshake`] for a bad URL or response, [`Error::Timeout`] if
/// the response did not arrive in time, [`Error::Io`].
pub async fn client_async<R, S>(
    request: R,
    stream: S,
) -> Result<(WebSocketStream<S>, http::Response<()>)>
where
    R: IntoClientRequest,
    S: AsyncRead + AsyncWrite + Unpin,
{
    client_async_with(request, stream, ClientOptions::new()).await
}

/// [`client_async`] with `options`' config. The stream is already
/// connected, so the options' TLS setting is not used.
///
/// # Errors
///
/// As for [`client_async`].
pub async fn client_async_with<R, S, T>(
    request: R,
    mut stream: S,
    options: ClientOptions<T>,
) -> Result<(WebSocketStream<S>, http::Response<()>)>
where
    R: IntoClientRequest,
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (options, _tls) = options.split_tls();
    let opened = drive(&mut stream, options.handshake(request, now())?).await?;
    Ok((
        WebSocketStream::from_context(stream, opened.context),
        opened.response,
    ))
}

/// Connects to a `ws://` URL (or `wss://` with the `rustls` feature) over
/// TCP with `TCP_NODELAY`, and performs the handshake, with the default
/// [`Config`](lockgate::Config) and TLS roots.
///
/// Use [`connect_async_with`] for another config or TLS [`Connector`].
///
/// # Errors
///
/// [`Error::Url`](crate::Error::Url) for an unusable URL (or `wss://` without
/// TLS support), [`Error::Io`] for resolution, connection and TLS
/// failures, [`Error::Timeout`] when the deadline passes, and the errors of
/// [`client_async`].
pub async fn connect_async<R>(
    request: R,
) -> Result<(
    WebSocketStream<MaybeTlsStream<TcpStream>>,
    http::Response<()>,
)>
where
    R: IntoClientRequest,
{
    connect_async_with(request, ClientOptions::new()).await
}

/// What a [`ClientOptions`]' TLS setting may be for [`connect_async_with`]:
/// `()` (the default: the roots compiled in by the `webpki-roots` or
/// `native-certs` feature), a [`Connector`], or an `Option<Connector>`
/// (`None` is the default).
pub trait IntoConnector {
    /// The connector to use; `None` for the default.
    fn into_connector(self) -> Option<Connector>;
}

impl IntoConnector for () {
    fn into_connector(self) -> Option<Connector> {
        None
    }
}

impl IntoConnector for Connector {
    fn into_connector(self) -> Option<Connector> {
        Some(self)
    }
}

impl IntoConnector for Option<Connector> {
    fn into_connector(self) -> Option<Connector> {
        self
    }
}

/// [`connect_async`] with `options`: their config, and their TLS
/// [`Connector`] if one was set with
/// [`ClientOptions::tls`](lockgate::ClientOptions::tls). The TCP
/// connection, TLS and the upgrade all fit in the config's handshake
/// deadline.
///
/// # Errors
///
/// As for [`connect_async`].
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use tokio_lockgate::{ClientOptions, Config, Connector, connect_async_with};
///
/// # async fn run() -> tokio_lockgate::Result<()> {
/// let config = Config::default().handshake_timeout(Some(Duration::from_secs(5)));
/// let options = ClientOptions::new().config(config).tls(Connector::Plain);
/// let (ws, response) = connect_async_with("ws://127.0.0.1:9001", options).await?;
/// # drop((ws, response)); Ok(()) }
/// ```
pub async fn connect_async_with<R, T>(
    request: R,
    options: ClientOptions<T>,
) -> Result<(
    WebSocketStream<MaybeTlsStream<TcpStream>>,
    http::Response<()>,
)>
where
    R: IntoClientRequest,
    T: IntoConnector,
{
    let (options, tls) = options.split_tls();
    let planner = options.clone();
    let handshake = options.handshake(request, now())?;
    let route = planner.route(handshake.get_ref().request().uri())?;
    let deadline = handshake.deadline();
    // On the heap: a TLS handshake's state is large, and a task that
    // connects and then serves the connection would carry it for life.
    let connection = Box::pin(async {
        let (hop_host, hop_port) = route.first_hop();
        let tcp = TcpStream::connect((hop_host, hop_port))
            .await
            .map_err(|error| route.connect_error(error))?;
        tcp.set_nodelay(true)?;
        let mut tcp = tcp;
        if let Some(proxy) = &route.proxy {
            drive(&mut tcp, proxy.tunnel(&route.host, route.port, deadline)).await?;
        }
        wrap_stream(tcp, route.secure, &route.host, tls.into_connector()).await
    });
    let mut stream = until(handshake.deadline(), connection)
        .await
        .ok_or(Error::Timeout(TimeoutKind::Handshake))??;
    let opened = drive(&mut stream, handshake).await?;
    Ok((
        WebSocketStream::from_context(stream, opened.context),
        opened.response,
    ))
}

/// The one loop for every exchange (a handshake, or a proxy's CONNECT):
/// does what each step says, reports what happened.
async fn drive<S, E>(stream: &mut S, mut handshake: E) -> E::Outcome
where
    S: AsyncRead + AsyncWrite + Unpin,
    E: Exchange,
{
    // On the heap: a future holding the buffer would keep its size for
    // the life of the task that awaited it.
    let mut buf = vec![0u8; HANDSHAKE_READ];
    loop {
        match handshake.poll(now()) {
            Step::Transmit(bytes) => {
                match until(handshake.deadline(), write_all_and_flush(stream, &bytes)).await {
                    Some(Ok(())) => {}
                    Some(Err(error)) => handshake.transmit_failed(error.into()),
                    None => handshake.handle_timeout(now()),
                }
            }
            Step::Receive { deadline } => match until(deadline, stream.read(&mut buf)).await {
                Some(Ok(n)) => handshake.receive(&buf[..n], now()),
                Some(Err(error)) => handshake.read_failed(error.into(), now()),
                None => handshake.handle_timeout(now()),
            },
            Step::Done(result) => return result,
        }
    }
}

/// Runs `future` to its end or until `deadline`, whichever comes first
/// (`None` for the deadline).
async fn until<F: Future>(deadline: Option<Instant>, future: F) -> Option<F::Output> {
    match deadline {
        None => Some(future.await),
        Some(deadline) => tokio::time::timeout_at(deadline.into(), future).await.ok(),
    }
}

/// Now on tokio's clock, which tests may pause and advance: the same clock
/// as the timer, so the handshake and the timer agree on the deadline.
fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

async fn write_all_and_flush<S: AsyncWrite + Unpin>(
    stream: &mut S,
    bytes: &[u8],
) -> io::Result<()> {
    stream.write_all(bytes).await?;
    stream.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A task that awaits a handshake and then serves the connection keeps
    /// the handshake future's size for its whole life: keep it small (the
    /// read buffer and the opened connection state are on the heap).
    #[tokio::test]
    async fn handshake_futures_stay_small() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let tcp = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let accept = accept_async(tcp);
        assert!(size_of_val(&accept) <= 2048, "{}", size_of_val(&accept));
        let connect = connect_async("ws://127.0.0.1:1/");
        assert!(size_of_val(&connect) <= 3072, "{}", size_of_val(&connect));
    }
}
