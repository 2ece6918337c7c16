//! tungstenite's `client_tls` and `client_tls_with_config`: the blocking
//! client handshake over a stream the caller connected, secured with TLS
//! first for a `wss://` URL.

use std::io::{Read, Write};

use crate::client::{ClientHandshake, IntoClientRequest, uri_mode};
use crate::dial::Connector;
use crate::error::{Error, UrlError};
use crate::mid_handshake::HandshakeError;
use crate::protocol::WebSocketConfig;
use crate::stream::{MaybeTlsStream, Mode};
use crate::upgrade::messages::client::Response;
use crate::websocket::WebSocket;

/// The error [`client_tls`] fails with: a client handshake over the
/// secured stream.
type TlsHandshakeError<S> = HandshakeError<ClientHandshake<MaybeTlsStream<S>>>;

/// The client handshake for `request` over `stream`, secured with TLS
/// first for a `wss://` URL (the default connector, see [`Connector`]).
///
/// # Errors
///
/// As for [`client_tls_with_config`].
pub fn client_tls<R, S>(
    request: R,
    stream: S,
) -> std::result::Result<(WebSocket<MaybeTlsStream<S>>, Response), TlsHandshakeError<S>>
where
    R: IntoClientRequest,
    S: Read + Write + 'static,
{
    client_tls_with_config(request, stream, None, None)
}

/// [`client_tls`] with a configuration and a [`Connector`] (`None`: the
/// default for the URL's scheme).
///
/// # Errors
///
/// [`HandshakeError::Failure`] with [`Error::Url`] for an unusable URL (or
/// `wss://` without a TLS feature), [`Error::Tls`] for a TLS failure, and
/// the errors of [`client`](crate::client()); [`HandshakeError::Interrupted`]
/// when a non-blocking stream would block: call
/// [`handshake`](crate::handshake::MidHandshake::handshake) on it again
/// once the stream is ready.
pub fn client_tls_with_config<R, S>(
    request: R,
    stream: S,
    config: Option<WebSocketConfig>,
    connector: Option<Connector>,
) -> std::result::Result<(WebSocket<MaybeTlsStream<S>>, Response), TlsHandshakeError<S>>
where
    R: IntoClientRequest,
    S: Read + Write + 'static,
{
    let request = request.into_client_request()?;
    let mode = uri_mode(request.uri())?;
    let host = request
        .uri()
        .host()
        .ok_or(Error::Url(UrlError::NoHostName))?
        .to_owned();
    let connector = match (connector, mode) {
        (Some(connector), _) => connector,
        (None, Mode::Plain) => Connector::Plain,
        (None, Mode::Tls) => Connector::for_wss()?,
    };
    let stream = connector.wrap_stream(stream, &host, mode)?;
    crate::client::client_with_config(request, stream, config)
}
