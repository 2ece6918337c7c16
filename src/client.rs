//! Blocking clients: the handshake over a stream you connected
//! ([`client`]), or the whole dial from a URL ([`connect`]: TCP, an HTTP
//! proxy's tunnel, TLS for `wss://`, the handshake, redirects).
//!
//! The functions have tungstenite's names and signatures (this module is
//! tungstenite's `client`); the settings are [`ClientOptions`].

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Instant;

use http::header::{HeaderName, SEC_WEBSOCKET_PROTOCOL};
use http::{HeaderValue, Request, Uri};

use crate::dial::ClientOptions;
use crate::dial::Dial;
#[cfg(doc)]
use crate::error::Error;
use crate::error::{Result, UrlError};
use crate::mid_handshake::{
    Driven, HandshakeError, HandshakeMachine, HandshakeRole, MidHandshake, sealed,
};
use crate::protocol::WebSocketConfig;
use crate::stream::{MaybeTlsStream, Mode};
use crate::upgrade::messages::client::Response;
use crate::upgrade::{ClientUpgrade, HandshakeDriver, Opened};
use crate::websocket::WebSocket;

pub use crate::upgrade::IntoClientRequest;

/// The client side of a handshake over a stream `S`: the
/// [`HandshakeRole`] of [`client`].
pub struct ClientHandshake<S> {
    driven: Driven<S, HandshakeDriver<ClientUpgrade>>,
}

impl<S: Read + Write + 'static> ClientHandshake<S> {
    /// Starts the handshake for `request` over `stream`: run it with
    /// [`MidHandshake::handshake`].
    ///
    /// # Errors
    ///
    /// [`Error::Url`] or [`Error::Protocol`] for a request that cannot be
    /// an upgrade.
    pub fn start(
        stream: S,
        request: Request<()>,
        config: Option<WebSocketConfig>,
    ) -> Result<MidHandshake<Self>> {
        ClientOptions::new()
            .config(config.into())
            .start(request, stream)
    }
}

impl<S: Read + Write> HandshakeRole for ClientHandshake<S> {
    type InternalStream = S;
    type FinalResult = (WebSocket<S>, Response);

    fn machine(&self, _: sealed::Token) -> &HandshakeMachine<S> {
        &self.driven.machine
    }

    fn machine_mut(&mut self, _: sealed::Token) -> &mut HandshakeMachine<S> {
        &mut self.driven.machine
    }

    fn resume(&mut self, _: sealed::Token) -> Option<Result<Box<Opened>>> {
        self.driven.resume()
    }

    fn finish(self, opened: Box<Opened>, _: sealed::Token) -> (WebSocket<S>, Response) {
        let Opened {
            context, response, ..
        } = *opened;
        let response = response.map(|()| None);
        (
            WebSocket::from_opened(self.driven.machine, context),
            response,
        )
    }
}

impl<S> std::fmt::Debug for ClientHandshake<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientHandshake { .. }")
    }
}

/// What the blocking client functions return.
pub(crate) type ClientResult<S> =
    std::result::Result<(WebSocket<S>, Response), HandshakeError<ClientHandshake<S>>>;

/// Performs the client handshake for `request` over an already connected
/// `stream` (TCP, TLS, anything `Read + Write`), with the default
/// [`Config`](crate::Config).
///
/// # Errors
///
/// [`HandshakeError::Failure`] with [`Error::Url`] for a bad URL,
/// [`Error::Http`] for a refusal, a [`HandshakeFailure`](crate::HandshakeFailure) ([`Error::handshake_failure`](crate::Error::handshake_failure)) for a bad response,
/// a timeout ([`Error::timeout`]) if the response did not arrive in time,
/// [`Error::Io`]; [`HandshakeError::Interrupted`] when a non-blocking
/// stream would block. `?` turns it into an [`Error`].
pub fn client<S, R>(request: R, stream: S) -> ClientResult<S>
where
    S: Read + Write + 'static,
    R: IntoClientRequest,
{
    client_with_config(request, stream, None)
}

/// [`client`] with a configuration (`None`: the defaults).
///
/// # Errors
///
/// As for [`client`].
pub fn client_with_config<S, R>(
    request: R,
    stream: S,
    config: Option<WebSocketConfig>,
) -> ClientResult<S>
where
    S: Read + Write + 'static,
    R: IntoClientRequest,
{
    ClientOptions::new()
        .config(config.into())
        .client(request, stream)
}

/// Connects to a `ws://` or `wss://` URL and performs the handshake with
/// the default [`Config`](crate::Config): TCP (with `TCP_NODELAY`), TLS
/// for `wss://` (with a TLS feature), the handshake, and up to 3 redirects,
/// each attempt within one handshake deadline.
///
/// # Errors
///
/// [`Error::Url`] for an unusable URL (or `wss://` without a TLS feature),
/// resolution and connection errors as [`Error::Io`], [`Error::Tls`], and
/// the errors of [`client`].
///
/// # Examples
///
/// ```
/// use std::net::TcpListener;
/// use lockgate::{Message, accept, connect};
///
/// // An echo server on a free port, for one connection.
/// let listener = TcpListener::bind("127.0.0.1:0")?;
/// let url = format!("ws://{}/chat", listener.local_addr()?);
/// let server = std::thread::spawn(move || -> lockgate::Result<()> {
///     let mut ws = accept(listener.accept()?.0)?;
///     while let Ok(msg) = ws.read() {
///         if msg.is_text() || msg.is_binary() {
///             ws.send(msg)?;
///         }
///     }
///     Ok(())
/// });
///
/// let (mut ws, response) = connect(url.as_str())?;
/// assert_eq!(response.status(), 101);
/// ws.send(Message::text("hello"))?;
/// assert_eq!(ws.read()?, Message::text("hello"));
/// ws.close(None)?;
/// while ws.read().is_ok() {} // until the server's close arrives
/// server.join().unwrap()?;
/// # Ok::<(), lockgate::Error>(())
/// ```
pub fn connect<R: IntoClientRequest>(
    request: R,
) -> Result<(WebSocket<MaybeTlsStream<TcpStream>>, Response)> {
    ClientOptions::new().connect(request)
}

/// [`connect`] with a configuration (`None`: the defaults) and a limit on
/// redirects followed (`3xx` with `Location`).
///
/// # Errors
///
/// As for [`connect`].
pub fn connect_with_config<R: IntoClientRequest>(
    request: R,
    config: Option<WebSocketConfig>,
    max_redirects: u8,
) -> Result<(WebSocket<MaybeTlsStream<TcpStream>>, Response)> {
    ClientOptions::new()
        .config(config.into())
        .max_redirects(max_redirects)
        .connect(request)
}

/// Whether `uri` is `ws://` ([`Mode::Plain`]) or `wss://` ([`Mode::Tls`]).
///
/// # Errors
///
/// [`UrlError::UnsupportedUrlScheme`] for any other scheme.
pub fn uri_mode(uri: &Uri) -> Result<Mode> {
    match uri.scheme_str() {
        Some(scheme) if scheme.eq_ignore_ascii_case("ws") => Ok(Mode::Plain),
        Some(scheme) if scheme.eq_ignore_ascii_case("wss") => Ok(Mode::Tls),
        _ => Err(UrlError::UnsupportedUrlScheme.into()),
    }
}

/// Builds a client request from a URL, extra headers and subprotocols
/// (tungstenite's builder; [`http::Request::builder`] does the same).
#[derive(Debug, Clone)]
pub struct ClientRequestBuilder {
    uri: Uri,
    headers: Vec<(String, String)>,
    subprotocols: Vec<String>,
}

impl ClientRequestBuilder {
    /// A request for `uri`.
    #[must_use]
    pub const fn new(uri: Uri) -> Self {
        Self {
            uri,
            headers: Vec::new(),
            subprotocols: Vec::new(),
        }
    }

    /// Adds a header.
    #[must_use]
    pub fn with_header(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((key.into(), value.into()));
        self
    }

    /// Offers a subprotocol (in `Sec-WebSocket-Protocol`), after those
    /// already added.
    #[must_use]
    pub fn with_sub_protocol(mut self, protocol: impl Into<String>) -> Self {
        self.subprotocols.push(protocol.into());
        self
    }
}

impl IntoClientRequest for ClientRequestBuilder {
    fn into_client_request(self) -> Result<Request<()>> {
        let mut request = self.uri.into_client_request()?;
        let headers = request.headers_mut();
        for (key, value) in self.headers {
            headers.append(HeaderName::try_from(key)?, HeaderValue::try_from(value)?);
        }
        if !self.subprotocols.is_empty() {
            let offer = HeaderValue::try_from(self.subprotocols.join(", "))?;
            headers.append(SEC_WEBSOCKET_PROTOCOL, offer);
        }
        Ok(request)
    }
}

impl ClientOptions {
    /// Starts the handshake for `request` over the connected `stream` with
    /// these options: run it with [`MidHandshake::handshake`] (again after
    /// each [`HandshakeError::Interrupted`] on a non-blocking stream).
    ///
    /// # Errors
    ///
    /// [`Error::Url`] or [`Error::Protocol`] for a request that cannot be
    /// an upgrade.
    pub fn start<S: Read + Write + 'static, R: IntoClientRequest>(
        self,
        request: R,
        stream: S,
    ) -> Result<MidHandshake<ClientHandshake<S>>> {
        Ok(MidHandshake::new(ClientHandshake {
            driven: Driven {
                machine: HandshakeMachine::new(stream),
                exchange: self.handshake(request, Instant::now())?,
            },
        }))
    }

    /// Performs the client handshake for `request` over the connected
    /// `stream`, within the config's handshake deadline. TLS, if any, is
    /// the stream's own business (see [`connect`](Self::connect)).
    ///
    /// # Errors
    ///
    /// As for [`client`].
    pub fn client<S: Read + Write + 'static, R: IntoClientRequest>(
        self,
        request: R,
        stream: S,
    ) -> ClientResult<S> {
        self.start(request, stream)?.handshake()
    }

    /// Dials `request`'s URL and performs the handshake: TCP (with
    /// `TCP_NODELAY`), the proxy's tunnel if one is set, TLS for `wss://`
    /// (the [`tls`](Self::tls) connector, or the default), then the
    /// handshake; a redirect (`3xx` with `Location`) starts over at its
    /// target, up to [`max_redirects`](Self::max_redirects) times. One
    /// deadline, the config's handshake timeout, bounds all of it, every
    /// redirect included (the [`Dial`](crate::dial::Dial) sequence).
    ///
    /// # Errors
    ///
    /// As for [`connect`]; a timeout ([`Error::timeout`]) when the deadline passes,
    /// during the connection, the proxy's exchange or TLS too.
    pub fn connect<R: IntoClientRequest>(
        self,
        request: R,
    ) -> Result<(WebSocket<MaybeTlsStream<TcpStream>>, Response)> {
        crate::blocking_dial::connect(Dial::new(request, self, Instant::now())?)
    }
}
