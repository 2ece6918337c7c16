//! Blocking servers: accepting WebSocket upgrades on `std::io` streams.
//!
//! The functions have tungstenite's names and signatures; the settings are
//! [`ServerOptions`]. Every form runs the sans-IO handshake through
//! [`MidHandshake`], so a non-blocking stream gets
//! [`HandshakeError::Interrupted`] and resumes, and a blocking `TcpStream`
//! has its reads bounded by the handshake deadline.

use std::io::{self, Read, Write};
use std::time::Instant;

use http::{Request, Response};

use crate::error::{Error, Result};
use crate::mid_handshake::{
    Driven, HandshakeError, HandshakeMachine, HandshakeRole, MidHandshake, sealed,
};
use crate::protocol::WebSocketConfig;
use crate::upgrade::{
    Callback, HandshakeDriver, NoCallback, Opened, ServerOptions, ServerUpgrade, upgrade_response,
};
use crate::websocket::WebSocket;

/// The server side of a handshake over a stream `S`, with callback `C`:
/// the [`HandshakeRole`] of [`accept`] and [`accept_hdr`].
pub struct ServerHandshake<S, C: Callback> {
    driven: Driven<S, HandshakeDriver<ServerUpgrade<C>>>,
}

impl<S: Read + Write + 'static, C: Callback> ServerHandshake<S, C> {
    /// Starts accepting an upgrade on `stream`: run it with
    /// [`MidHandshake::handshake`].
    pub fn start(stream: S, callback: C, config: Option<WebSocketConfig>) -> MidHandshake<Self> {
        ServerOptions::new()
            .config(config.into())
            .callback(callback)
            .start(stream)
    }
}

impl<S: Read + Write, C: Callback> HandshakeRole for ServerHandshake<S, C> {
    type InternalStream = S;
    type FinalResult = WebSocket<S>;

    fn machine(&self, _: sealed::Token) -> &HandshakeMachine<S> {
        &self.driven.machine
    }

    fn machine_mut(&mut self, _: sealed::Token) -> &mut HandshakeMachine<S> {
        &mut self.driven.machine
    }

    fn resume(&mut self, _: sealed::Token) -> Option<Result<Box<Opened>>> {
        self.driven.resume()
    }

    fn finish(self, opened: Box<Opened>, _: sealed::Token) -> WebSocket<S> {
        WebSocket::from_opened(self.driven.machine, opened.context)
    }
}

impl<S, C: Callback> std::fmt::Debug for ServerHandshake<S, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerHandshake { .. }")
    }
}

/// What the blocking accept functions return.
pub(crate) type AcceptResult<S, C> =
    std::result::Result<WebSocket<S>, HandshakeError<ServerHandshake<S, C>>>;

impl<C: Callback> ServerOptions<C> {
    /// Starts accepting an upgrade on `stream` with these options: run it
    /// with [`MidHandshake::handshake`] (again after each
    /// [`HandshakeError::Interrupted`] on a non-blocking stream).
    ///
    /// On a `TcpStream` or `UnixStream` without a read timeout of its own,
    /// each read's timeout is set to the time left before the handshake
    /// deadline, and cleared (`None`) when the handshake ends.
    pub fn start<S: Read + Write + 'static>(
        self,
        stream: S,
    ) -> MidHandshake<ServerHandshake<S, C>> {
        MidHandshake::new(ServerHandshake {
            driven: Driven {
                machine: HandshakeMachine::new(stream),
                exchange: self.handshake(Instant::now()),
            },
        })
    }

    /// Accepts a WebSocket upgrade on `stream` with these options, within
    /// the config's handshake deadline.
    ///
    /// # Errors
    ///
    /// As for [`accept`] and [`accept_hdr`]; `?` turns the error into an
    /// [`Error`].
    pub fn accept<S: Read + Write + 'static>(self, stream: S) -> AcceptResult<S, C> {
        self.start(stream).handshake()
    }
}

/// Accepts a WebSocket upgrade on `stream` with the default
/// [`Config`](crate::Config) (within its 30 s handshake deadline).
///
/// # Errors
///
/// [`HandshakeError::Failure`] with a [`HandshakeFailure`](crate::HandshakeFailure) ([`Error::handshake_failure`](crate::Error::handshake_failure)) or
/// [`Error::Protocol`] for a bad request (the matching HTTP error response
/// has been written), a timeout ([`Error::timeout`]) if the request did not arrive in
/// time, [`Error::Io`]; [`HandshakeError::Interrupted`] when a non-blocking
/// stream would block. `?` turns it into an [`Error`].
///
/// # Examples
///
/// ```no_run
/// use std::net::TcpListener;
/// use lockgate::{Message, accept};
///
/// let listener = TcpListener::bind("127.0.0.1:9001")?;
/// for stream in listener.incoming() {
///     let mut ws = accept(stream?)?;
///     while let Ok(msg) = ws.read() {
///         if msg.is_text() || msg.is_binary() {
///             ws.send(msg)?;
///         }
///     }
/// }
/// # Ok::<(), lockgate::Error>(())
/// ```
pub fn accept<S: Read + Write + 'static>(stream: S) -> AcceptResult<S, NoCallback> {
    accept_with_config(stream, None)
}

/// [`accept`] with a configuration (`None`: the defaults).
///
/// # Errors
///
/// As for [`accept`].
pub fn accept_with_config<S: Read + Write + 'static>(
    stream: S,
    config: Option<WebSocketConfig>,
) -> AcceptResult<S, NoCallback> {
    accept_hdr_with_config(stream, NoCallback, config)
}

/// Accepts an upgrade, letting `callback` inspect the request and shape or
/// refuse the response (subprotocols, extra headers, authentication). The Origin policy
/// ([`ServerOptions::origin_policy`]) runs first.
///
/// # Errors
///
/// As for [`accept`]; a refusal by the callback is [`Error::Http`], after
/// its response was written.
pub fn accept_hdr<S: Read + Write + 'static, C: Callback>(
    stream: S,
    callback: C,
) -> AcceptResult<S, C> {
    accept_hdr_with_config(stream, callback, None)
}

/// [`accept_hdr`] with a configuration (`None`: the defaults).
///
/// # Errors
///
/// As for [`accept_hdr`].
pub fn accept_hdr_with_config<S: Read + Write + 'static, C: Callback>(
    stream: S,
    callback: C,
    config: Option<WebSocketConfig>,
) -> AcceptResult<S, C> {
    ServerHandshake::start(stream, callback, config).handshake()
}

/// The `101 Switching Protocols` response to an upgrade `request`, for a
/// server that writes it itself (tungstenite's name for
/// [`upgrade_response`]).
///
/// # Errors
///
/// a [`HandshakeFailure`](crate::HandshakeFailure) ([`Error::handshake_failure`](crate::Error::handshake_failure)) when the request is not a valid upgrade.
pub fn create_response(request: &Request<()>) -> Result<Response<()>> {
    Ok(upgrade_response(request)?)
}

/// [`create_response`] for a request with any body, giving the response
/// the body `generate_body` makes.
///
/// # Errors
///
/// As for [`create_response`].
pub fn create_response_with_body<B, T>(
    request: &Request<B>,
    generate_body: impl FnOnce() -> T,
) -> Result<Response<T>> {
    let (parts, ()) = upgrade_response(request)?.into_parts();
    Ok(Response::from_parts(parts, generate_body()))
}

/// Writes `response`'s status line and headers (not its body) to `w`,
/// the header names in canonical case (`Sec-WebSocket-Accept`,
/// `X-Request-Id`), as every head lockgate writes.
///
/// # Errors
///
/// [`Error::Io`] from `w`; [`Error::HttpFormat`] for an HTTP version that
/// has no HTTP/1 form.
pub fn write_response<T>(mut w: impl Write, response: &Response<T>) -> Result<()> {
    let version = match response.version() {
        http::Version::HTTP_09 => "HTTP/0.9",
        http::Version::HTTP_10 => "HTTP/1.0",
        http::Version::HTTP_11 => "HTTP/1.1",
        other => {
            return Err(Error::Io(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{other:?} responses have no HTTP/1 head"),
            )));
        }
    };
    let mut head = format!("{version} {}\r\n", response.status()).into_bytes();
    for (name, value) in response.headers() {
        crate::upgrade::head::write_header(&mut head, name, value);
    }
    head.extend_from_slice(b"\r\n");
    w.write_all(&head)?;
    Ok(())
}
