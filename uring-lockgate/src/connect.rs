//! Opening connections: lockgate's sans-IO handshake run over a stream
//! with owned-buffer I/O, by async-lockgate's driver.

use async_lockgate::driver;
use lockgate::handshake::Callback;
use lockgate::handshake::IntoClientRequest;
use lockgate::handshake::client::Response;
use lockgate::{ClientOptions, Result, ServerOptions};

use crate::WebSocketStream;
use crate::completion::{CompletionRead, CompletionWrite};

/// Accepts a WebSocket upgrade on `stream` with the default
/// [`Config`](lockgate::Config) (within its 30 s handshake deadline).
///
/// # Errors
///
/// A [`HandshakeFailure`](lockgate::HandshakeFailure) or
/// [`Error::Protocol`](lockgate::Error::Protocol) for a bad request (the
/// matching HTTP error response was written), a timeout
/// ([`Error::timeout`](lockgate::Error::timeout)) if the request did not
/// arrive in time, [`Error::Io`](lockgate::Error::Io).
pub fn accept_async<S>(stream: S) -> impl Future<Output = Result<WebSocketStream<S>>>
where
    S: CompletionRead + CompletionWrite + Unpin,
{
    accept_async_with(stream, ServerOptions::new())
}

/// Accepts a WebSocket upgrade on `stream` with `options` (config and
/// callback), within the config's handshake deadline.
///
/// # Errors
///
/// As for [`accept_async`]; a callback's refusal is
/// [`Error::Http`](lockgate::Error::Http), after its response was written.
pub fn accept_async_with<S, C>(
    stream: S,
    options: ServerOptions<C>,
) -> impl Future<Output = Result<WebSocketStream<S>>>
where
    S: CompletionRead + CompletionWrite + Unpin,
    C: Callback,
{
    driver::accept_with(stream, options)
}

/// Performs the client handshake for `request` over an already connected
/// `stream`, with the default [`Config`](lockgate::Config).
///
/// # Errors
///
/// [`Error::Url`](lockgate::Error::Url) for a bad URL,
/// [`Error::Http`](lockgate::Error::Http) for a refusal, a
/// [`HandshakeFailure`](lockgate::HandshakeFailure) for a bad response, a
/// timeout if the response did not arrive in time,
/// [`Error::Io`](lockgate::Error::Io).
pub async fn client_async<R, S>(request: R, stream: S) -> Result<(WebSocketStream<S>, Response)>
where
    R: IntoClientRequest,
    S: CompletionRead + CompletionWrite + Unpin,
{
    client_async_with(request, stream, ClientOptions::new()).await
}

/// The client handshake over `stream` with `options`' config, within its
/// handshake deadline. The stream is used as it is (no TLS, no proxy).
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
    S: CompletionRead + CompletionWrite + Unpin,
{
    driver::client_with(request, stream, options).await
}
