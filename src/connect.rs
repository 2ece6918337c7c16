//! Blocking entry points: the sans-IO [`HandshakeDriver`] run over a
//! `std::io` stream, handing back a [`WebSocket`].
//!
//! The loop only moves bytes and waits. Waiting is bounded by the
//! handshake deadline: before each read, the stream's read timeout is set
//! to the time left when lockgate knows how ([`TcpStream`], `UnixStream`;
//! see [`ReadTimeoutFn`](crate::ReadTimeoutFn)) and the caller set none of
//! its own, and on any stream a read that returns after the deadline fails
//! the handshake. A read timeout set here is cleared (`None`) when the
//! handshake ends, either way; a caller's own is left as it was.
//!
//! These expect a blocking stream. For non-blocking streams, run a
//! [`HandshakeDriver`] yourself ([`ServerOptions::handshake`],
//! [`ClientOptions::handshake`]) and finish with
//! [`WebSocket::from_context`].

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use crate::error::{Error, Result, TimeoutKind, UrlError};
use crate::handshake::{Callback, ClientOptions, Exchange, IntoClientRequest, ServerOptions, Step};
use crate::read_timeout::{self, ReadTimer};
use crate::websocket::WebSocket;

/// How much one handshake read asks for.
const HANDSHAKE_READ: usize = 4096;

/// Accepts a WebSocket upgrade on `stream` with the default [`Config`]
/// (within its 30 s handshake deadline).
///
/// Use [`ServerOptions`] for another [`Config`].
///
/// [`Config`]: crate::Config
///
/// # Errors
///
/// [`Error::Handshake`] for a bad request (the matching HTTP error response
/// has been written), [`Error::Timeout`] if the request did not arrive in
/// time, [`Error::Io`].
pub fn accept<S: Read + Write + 'static>(stream: S) -> Result<WebSocket<S>> {
    ServerOptions::new().accept(stream)
}

/// Accepts an upgrade, letting `callback` inspect the request and shape or
/// refuse the response (subprotocols, extra headers, origin checks).
///
/// Use [`ServerOptions`] for another [`Config`](crate::Config).
///
/// # Errors
///
/// As for [`accept`]; a refusal by the callback is
/// [`Error::Http`], after its response was written.
pub fn accept_hdr<S: Read + Write + 'static, C: Callback>(
    stream: S,
    callback: C,
) -> Result<WebSocket<S>> {
    ServerOptions::new().callback(callback).accept(stream)
}

/// Performs the client handshake for `request` over an already connected
/// `stream` (TCP, TLS, anything `Read + Write`), with the default
/// [`Config`](crate::Config).
///
/// Use [`ClientOptions`] for another config.
///
/// # Errors
///
/// [`Error::Handshake`] for a bad URL or response, [`Error::Timeout`] if
/// the response did not arrive in time, [`Error::Io`].
pub fn client<S: Read + Write + 'static, R: IntoClientRequest>(
    request: R,
    stream: S,
) -> Result<(WebSocket<S>, http::Response<()>)> {
    ClientOptions::new().client(request, stream)
}

/// Connects to a `ws://` URL over TCP (with `TCP_NODELAY`) and performs the
/// handshake with the default [`Config`](crate::Config), the connection
/// and the handshake within one handshake deadline.
///
/// Use [`ClientOptions`] for another config.
///
/// # Errors
///
/// [`Error::Url`] for `wss://` (this function has no TLS; wrap
/// a TLS stream and use [`client`]), resolution and connection errors as
/// [`Error::Io`], and the errors of [`client`].
pub fn connect<R: IntoClientRequest>(
    request: R,
) -> Result<(WebSocket<TcpStream>, http::Response<()>)> {
    ClientOptions::new().connect(request)
}

impl<C: Callback> ServerOptions<C> {
    /// Accepts a WebSocket upgrade on the blocking `stream` with these
    /// options, within the config's handshake deadline: on a `TcpStream`
    /// or `UnixStream` without a read timeout of its own, each read's
    /// timeout is set to the time left (and cleared to `None` afterwards);
    /// on any stream, a read that returns after the deadline fails the
    /// handshake.
    ///
    /// # Errors
    ///
    /// As for [`accept`] and [`accept_hdr`].
    pub fn accept<S: Read + Write + 'static>(self, mut stream: S) -> Result<WebSocket<S>> {
        let opened = drive(&mut stream, self.handshake(Instant::now()))?;
        Ok(WebSocket::from_context(stream, opened.context))
    }
}

impl ClientOptions {
    /// Performs the client handshake for `request` over the blocking,
    /// already connected `stream`, within the config's handshake deadline.
    ///
    /// # Errors
    ///
    /// As for [`client`].
    pub fn client<S: Read + Write + 'static, R: IntoClientRequest>(
        self,
        request: R,
        mut stream: S,
    ) -> Result<(WebSocket<S>, http::Response<()>)> {
        let opened = drive(&mut stream, self.handshake(request, Instant::now())?)?;
        Ok((
            WebSocket::from_context(stream, opened.context),
            opened.response,
        ))
    }

    /// Connects to a `ws://` URL over TCP (with `TCP_NODELAY`) and performs
    /// the handshake: resolution aside, connecting, writing the request and
    /// reading the response all fit in the config's handshake deadline.
    ///
    /// # Errors
    ///
    /// As for [`connect`]; [`Error::Timeout`] when the deadline passes,
    /// during the connection too.
    pub fn connect<R: IntoClientRequest>(
        self,
        request: R,
    ) -> Result<(WebSocket<TcpStream>, http::Response<()>)> {
        let options = self.clone();
        let handshake = self.handshake(request, Instant::now())?;
        let uri = handshake.get_ref().request().uri();
        let route = options.route(uri)?;
        if route.secure {
            return Err(UrlError::TlsFeatureNotEnabled.into());
        }
        let deadline = handshake.deadline();
        let (hop_host, hop_port) = route.first_hop();
        let mut stream = match connect_tcp(hop_host, hop_port, deadline) {
            Err(Error::Io(error)) => return Err(route.connect_error(error)),
            other => other?,
        };
        stream.set_nodelay(true)?;
        // Reads are bounded by `drive`; the request's write by this.
        let left = deadline.map(|deadline| read_timeout::until(deadline, Instant::now()));
        stream.set_write_timeout(left)?;
        let opened = match &route.proxy {
            Some(proxy) => drive(&mut stream, proxy.tunnel(&route.host, route.port, deadline))
                .and_then(|()| drive(&mut stream, handshake)),
            None => drive(&mut stream, handshake),
        };
        stream.set_write_timeout(None)?;
        let opened = opened?;
        Ok((
            WebSocket::from_context(stream, opened.context),
            opened.response,
        ))
    }
}

/// Runs `exchange` (a handshake, or a proxy's CONNECT) over `stream`
/// until it is over, then clears any read timeout it set.
fn drive<S: Read + Write + 'static, E: Exchange<Outcome = Result<T>>, T>(
    stream: &mut S,
    mut exchange: E,
) -> Result<T> {
    let mut read_timer = ReadTimer::for_stream();
    let outcome = run(stream, &mut exchange, &mut read_timer);
    let cleared = read_timer.disarm(stream);
    if outcome.is_ok() {
        cleared?;
    }
    outcome
}

/// The one loop: does what each step says, reports what happened.
fn run<S: Read + Write, E: Exchange>(
    stream: &mut S,
    handshake: &mut E,
    read_timer: &mut ReadTimer<S>,
) -> E::Outcome {
    let mut buf = [0u8; HANDSHAKE_READ];
    loop {
        match handshake.poll(Instant::now()) {
            Step::Transmit(bytes) => {
                if let Err(error) = write_all_and_flush(stream, &bytes) {
                    handshake.transmit_failed(error.into());
                }
            }
            Step::Receive { deadline } => {
                let read = read_until(stream, &mut buf, deadline, read_timer);
                let now = Instant::now();
                match read {
                    Ok(n) => handshake.receive(&buf[..n], now),
                    Err(error) => handshake.read_failed(error.into(), now),
                }
            }
            Step::Done(result) => return result,
        }
    }
}

/// Reads once, bounded by `deadline` where `read_timer` can.
fn read_until<S: Read>(
    stream: &mut S,
    buf: &mut [u8],
    deadline: Option<Instant>,
    read_timer: &mut ReadTimer<S>,
) -> io::Result<usize> {
    read_timer.arm(stream, deadline, Instant::now())?;
    loop {
        match stream.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            result => return result,
        }
    }
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

fn write_all_and_flush<S: Write>(stream: &mut S, bytes: &[u8]) -> io::Result<()> {
    stream.write_all(bytes)?;
    stream.flush()
}
