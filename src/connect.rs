//! Blocking entry points: run the sans-IO handshake over a `std::io` stream
//! and hand back a [`WebSocket`].
//!
//! These expect a blocking stream; set a read timeout on a `TcpStream` to
//! bound how long a silent peer can hold a handshake. For non-blocking
//! streams, drive [`handshake`](crate::handshake) yourself and finish with
//! [`WebSocket::from_partially_read`].

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::config::{Config, Role};
use crate::error::{Error, HandshakeError, Result};
use crate::handshake::{
    Callback, ClientHandshake, IntoClientRequest, NoCallback, ServerHandshake, error_response_bytes,
};
use crate::proto::WebSocketContext;
use crate::websocket::WebSocket;

/// How much one handshake read asks for.
const HANDSHAKE_READ: usize = 4096;

/// Accepts a WebSocket upgrade on `stream` with the default [`Config`].
///
/// # Errors
///
/// [`Error::Handshake`] for a bad request (the matching HTTP error response
/// has been written), [`Error::Io`].
pub fn accept<S: Read + Write + 'static>(stream: S) -> Result<WebSocket<S>> {
    accept_hdr_with_config(stream, NoCallback, Config::default())
}

/// [`accept`] with a [`Config`].
///
/// # Errors
///
/// As for [`accept`].
pub fn accept_with_config<S: Read + Write + 'static>(
    stream: S,
    config: Config,
) -> Result<WebSocket<S>> {
    accept_hdr_with_config(stream, NoCallback, config)
}

/// Accepts an upgrade, letting `callback` inspect the request and shape or
/// refuse the response (subprotocols, extra headers, origin checks).
///
/// # Errors
///
/// As for [`accept`]; a refusal by the callback is
/// [`HandshakeError::Rejected`], after its response was written.
pub fn accept_hdr<S: Read + Write + 'static, C: Callback>(
    stream: S,
    callback: C,
) -> Result<WebSocket<S>> {
    accept_hdr_with_config(stream, callback, Config::default())
}

/// [`accept_hdr`] with a [`Config`].
///
/// # Errors
///
/// As for [`accept_hdr`].
pub fn accept_hdr_with_config<S: Read + Write + 'static, C: Callback>(
    mut stream: S,
    callback: C,
    config: Config,
) -> Result<WebSocket<S>> {
    let mut handshake = ServerHandshake::with_deflate(callback, config.deflate);
    let mut buf = [0u8; HANDSHAKE_READ];
    loop {
        let n = read_some(&mut stream, &mut buf)?;
        match handshake.receive(&buf[..n]) {
            Ok(None) => {}
            Ok(Some(done)) => {
                write_all_and_flush(&mut stream, &done.response_bytes)?;
                let context = WebSocketContext::after_handshake(
                    Role::Server,
                    config,
                    done.deflate,
                    &done.leftover,
                );
                return Ok(WebSocket::from_context(stream, context));
            }
            Err(Error::Handshake(e)) => {
                // The peer should learn why; failing to tell it changes nothing.
                let _ = write_all_and_flush(&mut stream, &error_response_bytes(&e));
                return Err(e.into());
            }
            Err(e) => return Err(e),
        }
    }
}

/// Performs the client handshake for `request` over an already connected
/// `stream` (TCP, TLS, anything `Read + Write`).
///
/// # Errors
///
/// [`Error::Handshake`] for a bad URL or response, [`Error::Io`].
pub fn client<S: Read + Write + 'static, R: IntoClientRequest>(
    request: R,
    stream: S,
) -> Result<(WebSocket<S>, http::Response<()>)> {
    client_with_config(request, stream, Config::default())
}

/// [`client`] with a [`Config`].
///
/// # Errors
///
/// As for [`client`].
pub fn client_with_config<S: Read + Write + 'static, R: IntoClientRequest>(
    request: R,
    mut stream: S,
    config: Config,
) -> Result<(WebSocket<S>, http::Response<()>)> {
    let mut handshake = ClientHandshake::with_deflate(request, config.deflate)?;
    write_all_and_flush(&mut stream, handshake.request_bytes())?;
    let mut buf = [0u8; HANDSHAKE_READ];
    loop {
        let n = read_some(&mut stream, &mut buf)?;
        if let Some(done) = handshake.receive(&buf[..n])? {
            let context = WebSocketContext::after_handshake(
                Role::Client,
                config,
                done.deflate,
                &done.leftover,
            );
            return Ok((WebSocket::from_context(stream, context), done.response));
        }
    }
}

/// Connects to a `ws://` URL over TCP (with `TCP_NODELAY`) and performs the
/// handshake, within [`Config::handshake_timeout`] for the connection and
/// for each read and write of the handshake.
///
/// # Errors
///
/// [`HandshakeError::BadUrl`] for `wss://` (this function has no TLS; wrap
/// a TLS stream and use [`client`]), resolution and connection errors as
/// [`Error::Io`], and the errors of [`client`].
pub fn connect<R: IntoClientRequest>(
    request: R,
) -> Result<(WebSocket<TcpStream>, http::Response<()>)> {
    connect_with_config(request, Config::default())
}

/// [`connect`] with a [`Config`].
///
/// # Errors
///
/// As for [`connect`].
pub fn connect_with_config<R: IntoClientRequest>(
    request: R,
    config: Config,
) -> Result<(WebSocket<TcpStream>, http::Response<()>)> {
    let request = request.into_client_request()?;
    let uri = request.uri();
    if !uri
        .scheme_str()
        .is_some_and(|s| s.eq_ignore_ascii_case("ws"))
    {
        return Err(HandshakeError::BadUrl(format!("{uri}: connect supports ws:// only")).into());
    }
    let host = uri
        .host()
        .ok_or_else(|| HandshakeError::BadUrl(format!("{uri}: no host")))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port = uri.port_u16().unwrap_or(80);
    let stream = connect_tcp(host, port, config.get_handshake_timeout())?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(config.get_handshake_timeout())?;
    stream.set_write_timeout(config.get_handshake_timeout())?;
    let (ws, response) = client_with_config(request, stream, config)?;
    ws.get_ref().set_read_timeout(None)?;
    ws.get_ref().set_write_timeout(None)?;
    Ok((ws, response))
}

fn connect_tcp(host: &str, port: u16, timeout: Option<Duration>) -> io::Result<TcpStream> {
    let mut last_error = None;
    for addr in (host, port).to_socket_addrs()? {
        let attempt = match timeout {
            Some(timeout) => TcpStream::connect_timeout(&addr, timeout),
            None => TcpStream::connect(addr),
        };
        match attempt {
            Ok(stream) => return Ok(stream),
            Err(e) => last_error = Some(e),
        }
    }
    Err(last_error
        .unwrap_or_else(|| io::Error::new(io::ErrorKind::NotFound, "host resolved to no address")))
}

fn read_some<S: Read>(stream: &mut S, buf: &mut [u8]) -> Result<usize> {
    loop {
        match stream.read(buf) {
            Ok(0) => return Err(HandshakeError::UnexpectedEof.into()),
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
}

fn write_all_and_flush<S: Write>(stream: &mut S, bytes: &[u8]) -> io::Result<()> {
    stream.write_all(bytes)?;
    stream.flush()
}
