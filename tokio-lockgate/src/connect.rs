//! Async entry points: lockgate's sans-IO [`HandshakeDriver`] run over a
//! tokio stream.
//!
//! The loop only moves bytes and waits: each read or write races the
//! handshake deadline (one timer), and when the deadline wins the driver
//! is told so. `connect_async` fits the TCP connection, a proxy's tunnel
//! and TLS in the same deadline.
//!
//! Each function has tokio-tungstenite's name and signature; the `_with`
//! forms take lockgate's [`ServerOptions`] / [`ClientOptions`], which hold
//! everything the others spell as arguments (config, callback, connector,
//! proxy).
//!
//! [`HandshakeDriver`]: lockgate::handshake::HandshakeDriver

use std::time::Instant;

use async_lockgate::driver;

use lockgate::handshake::client::Response;
use lockgate::handshake::{Callback, Exchange, IntoClientRequest};
use lockgate::protocol::WebSocketConfig;
use lockgate::{ClientOptions, Connector, Error, Result, ServerOptions, TimeoutKind};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use crate::runtime::Tokio;
use crate::stream::WebSocketStream;
use crate::tls::{MaybeTlsStream, wrap_stream};

/// Accepts a WebSocket upgrade on `stream` with the default
/// [`Config`](lockgate::Config) (within its 30 s handshake deadline).
///
/// # Errors
///
/// a [`HandshakeFailure`](lockgate::HandshakeFailure) ([`Error::handshake_failure`]) or [`Error::Protocol`] for a bad request (the
/// matching HTTP error response was written), a timeout ([`Error::timeout`]) if the
/// request did not arrive in time, [`Error::Io`].
///
/// # Examples
///
/// ```no_run
/// use tokio::net::TcpListener;
/// use tokio_lockgate::accept_async;
///
/// # async fn serve() -> tokio_lockgate::Result<()> {
/// let listener = TcpListener::bind("127.0.0.1:9001").await?;
/// loop {
///     let (tcp, _) = listener.accept().await?;
///     tokio::spawn(async move {
///         let Ok(mut ws) = accept_async(tcp).await else { return };
///         while let Ok(msg) = ws.read().await {
///             if msg.is_data() && ws.send(msg).await.is_err() {
///                 break;
///             }
///         }
///     });
/// }
/// # }
/// ```
pub fn accept_async<S>(stream: S) -> impl Future<Output = Result<WebSocketStream<S>>>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    accept_async_with(stream, ServerOptions::new())
}

/// [`accept_async`] with a configuration (`None`: the defaults).
///
/// # Errors
///
/// As for [`accept_async`].
pub fn accept_async_with_config<S>(
    stream: S,
    config: Option<WebSocketConfig>,
) -> impl Future<Output = Result<WebSocketStream<S>>>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    accept_async_with(stream, ServerOptions::new().config(config.into()))
}

/// Accepts an upgrade, letting `callback` inspect the request and shape or
/// refuse the response (subprotocols, extra headers, authentication). The Origin policy
/// ([`ServerOptions::origin_policy`]) runs first.
///
/// # Errors
///
/// As for [`accept_async`]; a refusal is [`Error::Http`], after the
/// callback's response was written.
pub fn accept_hdr_async<S, C>(
    stream: S,
    callback: C,
) -> impl Future<Output = Result<WebSocketStream<S>>>
where
    S: AsyncRead + AsyncWrite + Unpin,
    C: Callback,
{
    accept_async_with(stream, ServerOptions::new().callback(callback))
}

/// [`accept_hdr_async`] with a configuration (`None`: the defaults).
///
/// # Errors
///
/// As for [`accept_hdr_async`].
pub fn accept_hdr_async_with_config<S, C>(
    stream: S,
    callback: C,
    config: Option<WebSocketConfig>,
) -> impl Future<Output = Result<WebSocketStream<S>>>
where
    S: AsyncRead + AsyncWrite + Unpin,
    C: Callback,
{
    let options = ServerOptions::new()
        .config(config.into())
        .callback(callback);
    accept_async_with(stream, options)
}

/// Accepts a WebSocket upgrade on `stream` with `options` (config and
/// callback), within the config's handshake deadline (counted from the
/// first poll).
///
/// The `accept` functions are not `async fn`s: each returns the one
/// future that does the work, which holds the stream and the handshake
/// once. A task that accepts and then serves the connection is as large
/// as that future for as long as the connection lives.
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
pub fn accept_async_with<S, C>(
    stream: S,
    options: ServerOptions<C>,
) -> impl Future<Output = Result<WebSocketStream<S>>>
where
    S: AsyncRead + AsyncWrite + Unpin,
    C: Callback,
{
    driver::accept_with(stream, options)
}

/// Performs the client handshake for `request` over an already connected
/// `stream` (TCP, TLS, anything `AsyncRead + AsyncWrite`), with the
/// default [`Config`](lockgate::Config).
///
/// # Errors
///
/// [`Error::Url`] for a bad URL, [`Error::Http`] for a refusal,
/// a [`HandshakeFailure`](lockgate::HandshakeFailure) ([`Error::handshake_failure`]) for a bad response, a timeout ([`Error::timeout`]) if the
/// response did not arrive in time, [`Error::Io`].
pub async fn client_async<R, S>(request: R, stream: S) -> Result<(WebSocketStream<S>, Response)>
where
    R: IntoClientRequest,
    S: AsyncRead + AsyncWrite + Unpin,
{
    client_async_with(request, stream, ClientOptions::new()).await
}

/// [`client_async`] with a configuration (`None`: the defaults).
///
/// # Errors
///
/// As for [`client_async`].
pub async fn client_async_with_config<R, S>(
    request: R,
    stream: S,
    config: Option<WebSocketConfig>,
) -> Result<(WebSocketStream<S>, Response)>
where
    R: IntoClientRequest,
    S: AsyncRead + AsyncWrite + Unpin,
{
    client_async_with(request, stream, ClientOptions::new().config(config.into())).await
}

/// The client handshake over `stream` with `options`' config, within its
/// handshake deadline. The stream is used as it is: TLS and proxies are
/// for [`connect_async_with`].
///
/// # Errors
///
/// As for [`client_async`].
pub async fn client_async_with<R, S>(
    request: R,
    stream: S,
    options: ClientOptions,
) -> Result<(WebSocketStream<S>, Response)>
where
    R: IntoClientRequest,
    S: AsyncRead + AsyncWrite + Unpin,
{
    driver::client_with(request, stream, options).await
}

/// [`client_async`] over `stream` secured first with TLS for a `wss://`
/// URL (the default [`Connector`]).
///
/// # Errors
///
/// As for [`client_async_tls_with_config`].
pub async fn client_async_tls<R, S>(
    request: R,
    stream: S,
) -> Result<(WebSocketStream<MaybeTlsStream<S>>, Response)>
where
    R: IntoClientRequest,
    S: AsyncRead + AsyncWrite + Unpin,
{
    client_async_tls_with_config(request, stream, None, None).await
}

/// [`client_async_tls`] with a configuration and a [`Connector`] (`None`:
/// the default for the URL's scheme).
///
/// # Errors
///
/// [`Error::Url`] for `wss://` without a TLS feature or with
/// [`Connector::Plain`]; [`Error::Tls`] for a TLS failure; and the errors of
/// [`client_async`].
pub async fn client_async_tls_with_config<R, S>(
    request: R,
    stream: S,
    config: Option<WebSocketConfig>,
    connector: Option<Connector>,
) -> Result<(WebSocketStream<MaybeTlsStream<S>>, Response)>
where
    R: IntoClientRequest,
    S: AsyncRead + AsyncWrite + Unpin,
{
    let request = request.into_client_request()?;
    let uri = request.uri();
    let mode = lockgate::client::uri_mode(uri)?;
    let host = uri
        .host()
        .ok_or(Error::Url(lockgate::error::UrlError::NoHostName))?
        .to_owned();
    let options = ClientOptions::new().config(config.into());
    let handshake = options.handshake(request, now())?;
    let stream = until(
        handshake.deadline(),
        wrap_stream(stream, mode, &host, connector),
    )
    .await
    .ok_or(Error::from(TimeoutKind::Handshake))??;
    finish_client(stream, handshake).await
}

/// Connects to a `ws://` or `wss://` URL and performs the handshake with
/// the default [`Config`](lockgate::Config): TCP (with `TCP_NODELAY`),
/// TLS for `wss://` (with a TLS feature), then the handshake, all within
/// its 30 s handshake deadline. As tokio-tungstenite's, it follows no
/// redirect (a `3xx` is [`Error::Http`]); [`connect_async_with`] follows
/// [`ClientOptions::max_redirects`].
///
/// # Errors
///
/// [`Error::Url`] for an unusable URL (or `wss://` without a TLS feature),
/// [`Error::Io`] for resolution and connection failures, [`Error::Tls`],
/// a timeout ([`Error::timeout`]) when the deadline passes, and the errors of
/// [`client_async`].
///
/// # Examples
///
/// ```
/// use tokio::net::TcpListener;
/// use tokio_lockgate::{Message, accept_async, connect_async};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> tokio_lockgate::Result<()> {
/// // An echo server on a free port, for one connection.
/// let listener = TcpListener::bind("127.0.0.1:0").await?;
/// let url = format!("ws://{}/chat", listener.local_addr()?);
/// let server = tokio::spawn(async move {
///     let mut ws = accept_async(listener.accept().await?.0).await?;
///     while let Ok(msg) = ws.read().await {
///         if msg.is_data() {
///             ws.send(msg).await?;
///         }
///     }
///     Ok::<(), tokio_lockgate::Error>(())
/// });
///
/// let (mut ws, response) = connect_async(url).await?;
/// assert_eq!(response.status(), 101);
/// ws.send(Message::text("hello")).await?;
/// assert_eq!(ws.read().await?, Message::text("hello"));
/// ws.close(None).await?;
/// while ws.read().await.is_ok() {} // until the server's close arrives
/// server.await.unwrap()?;
/// # Ok(()) }
/// ```
pub async fn connect_async<R>(
    request: R,
) -> Result<(WebSocketStream<MaybeTlsStream<TcpStream>>, Response)>
where
    R: IntoClientRequest,
{
    connect_async_tls_with_config(request, None, true, None).await
}

/// [`connect_async`] with a configuration (`None`: the defaults), and
/// whether to set `TCP_NODELAY` (`disable_nagle`).
///
/// # Errors
///
/// As for [`connect_async`].
pub async fn connect_async_with_config<R>(
    request: R,
    config: Option<WebSocketConfig>,
    disable_nagle: bool,
) -> Result<(WebSocketStream<MaybeTlsStream<TcpStream>>, Response)>
where
    R: IntoClientRequest,
{
    connect_async_tls_with_config(request, config, disable_nagle, None).await
}

/// [`connect_async_with_config`] with a [`Connector`] (`None`: the default
/// for the URL's scheme).
///
/// # Errors
///
/// As for [`connect_async`].
pub async fn connect_async_tls_with_config<R>(
    request: R,
    config: Option<WebSocketConfig>,
    disable_nagle: bool,
    connector: Option<Connector>,
) -> Result<(WebSocketStream<MaybeTlsStream<TcpStream>>, Response)>
where
    R: IntoClientRequest,
{
    // tokio-tungstenite's functions follow no redirect: a 3xx is
    // `Error::Http`. `connect_async_with` follows as many as its options say.
    let mut options = ClientOptions::new().config(config.into()).max_redirects(0);
    if let Some(connector) = connector {
        options = options.tls(connector);
    }
    dial(request, options, disable_nagle).await
}

/// Connects to `request`'s URL with `options`: TCP (with `TCP_NODELAY`),
/// the proxy's tunnel if one is set ([`ClientOptions::proxy`],
/// [`ClientOptions::proxy_from_env`]), TLS for `wss://` (the
/// [`ClientOptions::tls`] connector, or the default), then the handshake,
/// following up to [`ClientOptions::max_redirects`] redirects, all within
/// the config's one handshake deadline.
///
/// # Errors
///
/// As for [`connect_async`];
/// [`HandshakeFailure::ProxyRefused`](lockgate::HandshakeFailure::ProxyRefused)
/// when the proxy does not open the tunnel.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use tokio_lockgate::{ClientOptions, Config, connect_async_with};
///
/// # async fn run() -> tokio_lockgate::Result<()> {
/// let config = Config::default().handshake_timeout(Some(Duration::from_secs(5)));
/// let options = ClientOptions::new().config(config).proxy_from_env();
/// let (ws, _) = connect_async_with("wss://example.com/feed", options).await?;
/// # drop(ws); Ok(()) }
/// ```
pub async fn connect_async_with<R>(
    request: R,
    options: ClientOptions,
) -> Result<(WebSocketStream<MaybeTlsStream<TcpStream>>, Response)>
where
    R: IntoClientRequest,
{
    dial(request, options, true).await
}

/// The one dial of every `connect_async*`: async-lockgate's, on tokio.
async fn dial<R: IntoClientRequest>(
    request: R,
    options: ClientOptions,
    nodelay: bool,
) -> Result<(WebSocketStream<MaybeTlsStream<TcpStream>>, Response)> {
    driver::connect::<Tokio, _>(request, options, nodelay).await
}

/// Runs a client `handshake` over `stream` and opens the connection.
pub(crate) async fn finish_client<S, E>(
    stream: S,
    handshake: E,
) -> Result<(WebSocketStream<S>, Response)>
where
    S: AsyncRead + AsyncWrite + Unpin,
    E: Exchange<Outcome = Result<Box<lockgate::handshake::Opened>>>,
{
    driver::finish_client(stream, handshake).await
}

/// `future`, unless `deadline` comes first (`None`), on tokio's timer.
pub(crate) async fn until<F: std::future::Future>(
    deadline: Option<Instant>,
    future: F,
) -> Option<F::Output> {
    driver::until::<Tokio, _>(deadline, future).await
}

/// tokio's clock, as the handshake takes it (so paused-clock tests move it).
pub(crate) fn now() -> Instant {
    <Tokio as async_lockgate::runtime::Runtime>::now()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn handshake_futures_stay_small() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let tcp = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let accept = accept_async(tcp);
        // A task that accepts, then serves the connection, is as large as
        // the larger of the two for the connection's whole life: the
        // handshake must not be the larger (its state is boxed, and freed
        // with the upgrade).
        let connection = size_of::<WebSocketStream<TcpStream>>();
        assert!(
            size_of_val(&accept) <= connection,
            "{} > {connection}",
            size_of_val(&accept)
        );
        let connect = connect_async("ws://127.0.0.1:1/");
        assert!(size_of_val(&connect) <= 3072, "{}", size_of_val(&connect));
    }
}
