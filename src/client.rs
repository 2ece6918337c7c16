//! Blocking clients: the handshake over a stream you connected
//! ([`client`]), or the whole dial from a URL ([`connect`]: TCP, an HTTP
//! proxy's tunnel, TLS for `wss://`, the handshake, redirects).
//!
//! The functions have tungstenite's names and signatures (this module is
//! tungstenite's `client`); the settings are [`ClientOptions`].

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use http::header::{HOST, HeaderName, LOCATION, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_PROTOCOL};
use http::{HeaderValue, Request, Uri};

use crate::dial::{Connector, DialStep};
use crate::error::{Error, Result, TimeoutKind, UrlError};
use crate::handshake::client::{ClientUpgrade, Response};
use crate::handshake::{
    ClientOptions, HandshakeDriver, HandshakeError, HandshakeMachine, HandshakeRole, MidHandshake,
    Opened,
};
use crate::mid_handshake::{Driven, sealed};
use crate::protocol::WebSocketConfig;
use crate::std_stream;
use crate::stream::{MaybeTlsStream, Mode};
use crate::websocket::WebSocket;

pub use crate::handshake::IntoClientRequest;

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
/// [`Error::Http`] for a refusal, [`Error::Handshake`] for a bad response,
/// [`Error::Timeout`] if the response did not arrive in time,
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
    /// handshake, all within the config's handshake deadline; a redirect
    /// (`3xx` with `Location`) starts over at its target, up to
    /// [`max_redirects`](Self::max_redirects) times.
    ///
    /// # Errors
    ///
    /// As for [`connect`]; [`Error::Timeout`] when the deadline passes,
    /// during the connection or TLS too.
    pub fn connect<R: IntoClientRequest>(
        self,
        request: R,
    ) -> Result<(WebSocket<MaybeTlsStream<TcpStream>>, Response)> {
        let mut request = request.into_client_request()?;
        let mut redirects_left = self.get_max_redirects();
        loop {
            let retry = redirects_left
                .checked_sub(1)
                .map(|_| same_request(&request));
            match self.clone().connect_once(request) {
                Err(Error::Http(response)) if response.status().is_redirection() => {
                    let (Some(next), Some(location)) = (retry, response.headers().get(LOCATION))
                    else {
                        return Err(Error::Http(response));
                    };
                    request = redirected(next, location)?;
                    redirects_left -= 1;
                }
                other => return other,
            }
        }
    }

    /// One dial, without redirects: the route's steps, each bounded by
    /// the handshake's deadline (TCP connect by its timeout, TLS by the
    /// socket's read and write timeouts, the tunnel and the handshake by
    /// their exchange's deadline).
    fn connect_once(
        self,
        request: Request<()>,
    ) -> Result<(WebSocket<MaybeTlsStream<TcpStream>>, Response)> {
        let route = self.route(request.uri())?;
        let steps = route.steps();
        // Known before any connection is made: whether TLS can be had.
        let needs_tls = steps
            .iter()
            .any(|step| matches!(step, DialStep::Tls { .. }));
        let connector = match (self.get_connector(), needs_tls) {
            (_, false) => None,
            (Some(connector), true) => Some(connector.clone()),
            (None, true) => Some(Connector::for_wss()?),
        };
        let mut handshake = self.handshake(request, Instant::now())?;
        let deadline = handshake.deadline();
        let left = || deadline.map(|deadline| std_stream::until(deadline, Instant::now()));
        let mut stream = None;
        let mut resolved = None;
        for step in steps {
            match step {
                DialStep::Connect { host, port } => {
                    let tcp = match connect_tcp(host, port, deadline) {
                        Err(Error::Io(error)) => return Err(route.connect_error(error)),
                        other => other?,
                    };
                    tcp.set_nodelay(true)?;
                    // Reads are bounded by the exchanges' loop; writes
                    // (and TLS's reads) by this.
                    tcp.set_write_timeout(left())?;
                    stream = Some(MaybeTlsStream::Plain(tcp));
                }
                DialStep::Tls { host } => {
                    let connector = connector.clone().expect("chosen above for every Tls step");
                    let transport = stream.take().expect("Connect comes first");
                    transport.get_ref().set_read_timeout(left())?;
                    let mut secured = connector.secure(transport, host)?;
                    crate::dial::finish_handshake(&mut secured)?;
                    secured.get_ref().set_read_timeout(None)?;
                    stream = Some(secured);
                }
                DialStep::Resolve { host, port } => {
                    let address = (host, port)
                        .to_socket_addrs()
                        .and_then(|mut addresses| {
                            addresses.next().ok_or_else(|| {
                                io::Error::new(io::ErrorKind::NotFound, "no address")
                            })
                        })
                        .map_err(|error| route.resolve_error(error))?;
                    resolved = Some(address.ip());
                }
                DialStep::Tunnel => {
                    let mut tunnel = route.tunnel(resolved, deadline).expect("a proxy's step");
                    let mut machine =
                        HandshakeMachine::new(stream.take().expect("Connect comes first"));
                    machine.run_blocking(&mut tunnel)?;
                    stream = Some(machine.into_inner());
                }
                DialStep::Handshake => break,
            }
        }
        let mut machine = HandshakeMachine::new(stream.expect("Connect comes first"));
        let opened = machine.run_blocking(&mut handshake);
        machine.get_ref().get_ref().set_write_timeout(None)?;
        let Opened {
            context, response, ..
        } = *opened?;
        Ok((
            WebSocket::from_opened(machine, context),
            response.map(|()| None),
        ))
    }
}

/// A copy of `request` (method, URI, version, headers) to send again.
fn same_request(request: &Request<()>) -> Request<()> {
    let mut copy = Request::new(());
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.version_mut() = request.version();
    *copy.headers_mut() = request.headers().clone();
    copy
}

/// `request` sent to `location` instead (relative to its URL): the `Host`
/// header and key are made anew for it.
fn redirected(mut request: Request<()>, location: &HeaderValue) -> Result<Request<()>> {
    let location = location
        .to_str()
        .map_err(|_| UrlError::Invalid("the redirect's Location is not text".to_owned()))?;
    let target: Uri = location.parse()?;
    let target = if target.scheme().is_some() {
        target
    } else {
        let base = request.uri();
        let mut parts = base.clone().into_parts();
        parts.path_and_query = target.path_and_query().cloned();
        Uri::from_parts(parts).map_err(http::Error::from)?
    };
    *request.uri_mut() = target;
    request.headers_mut().remove(HOST);
    request.headers_mut().remove(SEC_WEBSOCKET_KEY);
    Ok(request)
}

/// Connects to the first address of `host` that answers, each attempt
/// bounded by what is left of `deadline`.
fn connect_tcp(host: &str, port: u16, deadline: Option<Instant>) -> Result<TcpStream> {
    let mut last_error = None;
    for addr in (host, port).to_socket_addrs()? {
        let attempt = match deadline {
            Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                Some(left) if left > Duration::ZERO => TcpStream::connect_timeout(&addr, left),
                _ => return Err(Error::Timeout(TimeoutKind::Handshake)),
            },
            None => TcpStream::connect(addr),
        };
        match attempt {
            Ok(stream) => return Ok(stream),
            Err(_) if deadline.is_some_and(|deadline| Instant::now() >= deadline) => {
                return Err(Error::Timeout(TimeoutKind::Handshake));
            }
            Err(e) => last_error = Some(e.into()),
        }
    }
    Err(last_error.unwrap_or_else(|| {
        io::Error::new(io::ErrorKind::NotFound, "host resolved to no address").into()
    }))
}
