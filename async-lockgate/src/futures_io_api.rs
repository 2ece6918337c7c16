//! The names a `futures-io` program uses: the driver instantiated for
//! [`FuturesIo`], under async-tungstenite's names.

use futures_io::{AsyncRead, AsyncWrite};
use lockgate::handshake::client::Response;
use lockgate::handshake::{Callback, IntoClientRequest};
use lockgate::{ClientOptions, Result, ServerOptions, WebSocketConfig};

use crate::driver;
use crate::futures_io::FuturesIo;
use crate::futures_io_connect::MaybeTlsStream;

/// A WebSocket connection over a `futures-io` stream (see
/// [`driver::WebSocketStream`] for its methods).
pub type WebSocketStream<S> = driver::WebSocketStream<S, FuturesIo>;
/// The `send` and `flush` of a [`WebSocketStream`], reached through
/// `Deref` (see [`driver::SendFlush`]).
pub type SendFlush<S> = driver::SendFlush<S, FuturesIo>;
/// The reading half of [`WebSocketStream::into_split`].
pub type WebSocketReadHalf<S> = driver::WebSocketReadHalf<S, FuturesIo>;
/// The writing half of [`WebSocketStream::into_split`].
pub type WebSocketWriteHalf<S> = driver::WebSocketWriteHalf<S, FuturesIo>;

/// Accepts a WebSocket upgrade on `stream` with the default
/// [`Config`](lockgate::Config) (within its 30 s handshake deadline).
///
/// # Errors
///
/// As for [`driver::accept_with`].
pub fn accept_async<S>(stream: S) -> impl Future<Output = Result<WebSocketStream<S>>>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    // Not `async fn`s: the driver's future itself, without a layer that
    // holds the stream a second time (see `driver::accept_with`).
    driver::accept_with(stream, ServerOptions::new())
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
    driver::accept_with(stream, ServerOptions::new().config(config.into()))
}

/// Accepts an upgrade, letting `callback` inspect the request and shape or
/// refuse the response. The Origin policy
/// ([`ServerOptions::origin_policy`]) runs first.
///
/// # Errors
///
/// As for [`accept_async`]; a refusal is
/// [`Error::Http`](lockgate::Error::Http), after the callback's response
/// was written.
pub fn accept_hdr_async<S, C>(
    stream: S,
    callback: C,
) -> impl Future<Output = Result<WebSocketStream<S>>>
where
    S: AsyncRead + AsyncWrite + Unpin,
    C: Callback,
{
    driver::accept_with(stream, ServerOptions::new().callback(callback))
}

/// Accepts a WebSocket upgrade on `stream` with `options` (config,
/// callback, Origin policy), within the config's handshake deadline.
///
/// # Errors
///
/// As for [`driver::accept_with`].
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

/// The client handshake for `request` over an already connected `stream`,
/// with the default [`Config`](lockgate::Config).
///
/// # Errors
///
/// As for [`driver::client_with`].
pub async fn client_async<R, S>(request: R, stream: S) -> Result<(WebSocketStream<S>, Response)>
where
    R: IntoClientRequest,
    S: AsyncRead + AsyncWrite + Unpin,
{
    driver::client_with(request, stream, ClientOptions::new()).await
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
    driver::client_with(request, stream, ClientOptions::new().config(config.into())).await
}

/// The client handshake over `stream` with `options`' config, within its
/// handshake deadline. The stream is used as it is: proxies and TLS are
/// the application's.
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

/// Connects to a `ws://` URL over smol's TCP (with `TCP_NODELAY`), or to
/// a `wss://` URL over TLS with the `rustls` feature, and performs the
/// handshake with the default [`Config`](lockgate::Config), within its
/// 30 s handshake deadline. Like async-tungstenite's, it follows no
/// redirect (a `3xx` is [`Error::Http`](lockgate::Error::Http));
/// [`connect_async_with`] follows [`ClientOptions::max_redirects`].
///
/// `wss://` without a [`ClientOptions::tls`] connector trusts the roots
/// of the `rustls-tls-webpki-roots` or `rustls-tls-native-roots` feature
/// ([`Connector::for_wss`](lockgate::Connector::for_wss)).
///
/// # Errors
///
/// [`Error::Url`](lockgate::Error::Url) for an unusable URL, and
/// [`UrlError::TlsFeatureNotEnabled`](lockgate::error::UrlError::TlsFeatureNotEnabled)
/// for `wss://` without the `rustls` feature; the errors of
/// [`connect_async_with`].
pub async fn connect_async<R>(request: R) -> Result<(WebSocketStream<MaybeTlsStream>, Response)>
where
    R: IntoClientRequest,
{
    connect_async_with(request, ClientOptions::new().max_redirects(0)).await
}

/// [`connect_async`] with a configuration (`None`: the defaults).
///
/// # Errors
///
/// As for [`connect_async`].
pub async fn connect_async_with_config<R>(
    request: R,
    config: Option<WebSocketConfig>,
) -> Result<(WebSocketStream<MaybeTlsStream>, Response)>
where
    R: IntoClientRequest,
{
    let options = ClientOptions::new().config(config.into()).max_redirects(0);
    connect_async_with(request, options).await
}

/// Connects to `request`'s URL with `options`: TCP, the proxy's tunnel if
/// one is set ([`ClientOptions::proxy`], [`ClientOptions::proxy_from_env`]),
/// TLS for `wss://` (the [`ClientOptions::tls`] connector, `rustls`
/// feature), then the handshake, all within the config's handshake deadline (see
/// [`driver::connect`]).
///
/// # Errors
///
/// As for [`driver::connect`].
pub async fn connect_async_with<R>(
    request: R,
    options: ClientOptions,
) -> Result<(WebSocketStream<MaybeTlsStream>, Response)>
where
    R: IntoClientRequest,
{
    driver::connect::<FuturesIo, _>(request, options, true).await
}
