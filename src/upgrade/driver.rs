//! The opening handshake as one state machine that any driver runs: it
//! says what to do next, the driver does it and reports back.

use std::fmt;
use std::time::Instant;

use bytes::Bytes;
use http::header::SEC_WEBSOCKET_PROTOCOL;
use http::{Request, Response};

use super::client_upgrade::ClientUpgrade;
use super::exchange::{Exchange, Opened, Step};
use super::progress::Progress;
use super::server_upgrade::{Callback, ServerUpgrade, error_response_bytes};
use crate::config::{Config, Role};
use crate::deflate::DeflateParams;
#[cfg(doc)]
use crate::error::TimeoutKind;
use crate::error::{CapacityError, Error, ProtocolError, Result};
use crate::proto::WebSocketContext;

/// Runs one side of the opening handshake for a driver that owns the
/// connection, within [`Config::handshake_timeout`], without doing any
/// I/O or reading a clock.
///
/// It wraps a [`ServerUpgrade`] ([`HandshakeDriver::server`]) or a
/// [`ClientUpgrade`] ([`HandshakeDriver::client`]), owns the bytes to
/// send and the deadline, and answers the driver's one question, "what
/// now?", with a [`Step`]. Time is an input: every call that may pass the
/// deadline takes the current [`Instant`].
///
/// # The calling contract
///
/// Output: [`poll(now)`](Self::poll) returns the next [`Step`]. Loop on it:
///
/// - [`Step::Transmit(bytes)`](Step::Transmit): write all of `bytes`, then
///   flush. If that fails, report it with
///   [`transmit_failed`](Self::transmit_failed).
/// - [`Step::Receive { deadline }`](Step::Receive): read once from the
///   connection, waiting no later than `deadline` (`None`: no limit). Pass
///   what was read to [`receive`](Self::receive) (an empty slice is the end
///   of the stream), a failed read to [`read_failed`](Self::read_failed),
///   and if the deadline came first, call
///   [`handle_timeout`](Self::handle_timeout).
/// - [`Step::Done(result)`](Step::Done): the handshake is over. On success,
///   [`Opened::context`] is the connection: hand it to
///   [`WebSocket::from_context`](crate::WebSocket::from_context) (or the
///   tokio adapter's) with the stream. On failure, drop the connection.
///
/// Then call `poll` again, whatever happened: every input only records what
/// the driver saw, and the decisions (what to answer a bad request with,
/// whether the deadline has passed, which error wins) are made here. There
/// is nothing to call first and nothing to remember between steps.
///
/// What happens, in order:
///
/// ```text
///  client: Transmit(request) -> Receive* -> Done(Ok)           | Done(Err)
///  server: Receive* -> Transmit(101) -> Done(Ok)
///                   \-> Transmit(HTTP error response) -> Done(Err)
///  either: the deadline passes before Done(Ok) -> Done(Err(Timeout(Handshake)))
/// ```
///
/// A server that refuses a request (bad request, the callback's refusal,
/// a head too large) first transmits the HTTP error response
/// ([`error_response_bytes`]), then reports the error; a client just
/// reports it. A request that cannot be HTTP is refused at the first byte
/// that shows it (see [`ServerUpgrade::receive`]), so such a peer gets
/// its answer at once, not at the deadline. The deadline is
/// [`Config::handshake_timeout`] after the `now` the driver was made with;
/// once `now` reaches it, the handshake fails with
/// a timeout ([`Error::timeout`](crate::Error::timeout) is `Some(TimeoutKind::Handshake)`) unless it had already
/// failed otherwise. After `Done`, `poll` returns
/// `Done(Err(Error::AlreadyClosed))` and inputs are ignored.
///
/// # Examples
///
/// A client and a server driven through memory, with simulated time:
///
/// ```
/// use std::time::{Duration, Instant};
/// use lockgate::handshake::{ClientUpgrade, HandshakeDriver, NoCallback, ServerUpgrade, Step};
/// use lockgate::{Config, Error, TimeoutKind};
///
/// let start = Instant::now();
/// let config = Config::default().handshake_timeout(Some(Duration::from_secs(5)));
/// let request = ClientUpgrade::new("ws://example.com/chat")?;
/// let mut client = HandshakeDriver::client(request, config.clone(), start);
/// let mut server = HandshakeDriver::server(ServerUpgrade::new(NoCallback), config.clone(), start);
///
/// let Step::Transmit(request) = client.poll(start) else { panic!("the request goes first") };
/// let Step::Receive { deadline } = server.poll(start) else { panic!() };
/// assert_eq!(deadline, Some(start + Duration::from_secs(5)));
///
/// // The request arrives in two reads; the client's first frame with it.
/// let now = start + Duration::from_millis(10);
/// server.receive(&request[..20], now);
/// assert!(matches!(server.poll(now), Step::Receive { .. }));
/// server.receive(&[&request[20..], b"\x81\x80\0\0\0\0"].concat(), now);
/// let Step::Transmit(response) = server.poll(now) else { panic!("the 101") };
/// let Step::Done(Ok(opened)) = server.poll(now) else { panic!() };
/// assert_eq!(opened.request.uri(), "/chat");
/// let _server_side = opened.context; // WebSocket::from_context(stream, opened.context)
///
/// assert!(matches!(client.poll(now), Step::Receive { .. }));
/// client.receive(&response, now);
/// let Step::Done(Ok(opened)) = client.poll(now) else { panic!() };
/// assert_eq!(opened.response.status(), 101);
///
/// // A server whose client says nothing gives up at the deadline.
/// let mut server = HandshakeDriver::server(ServerUpgrade::new(NoCallback), config, start);
/// assert!(matches!(server.poll(start), Step::Receive { .. }));
/// server.handle_timeout(start + Duration::from_secs(5));
/// let Step::Done(Err(error)) = server.poll(start) else { panic!() };
/// assert_eq!(error.timeout(), Some(TimeoutKind::Handshake));
/// # Ok::<(), lockgate::Error>(())
/// ```
pub struct HandshakeDriver<H> {
    handshake: H,
    /// What the side does with received bytes.
    on_input: OnInput<H>,
    role: Role,
    /// Taken to build the context.
    config: Option<Config>,
    /// What to send, the deadline, the outcome.
    progress: Progress<Box<Opened>>,
}

/// Feeds bytes to one side's handshake.
type OnInput<H> = fn(&mut H, &[u8]) -> Result<Option<Accepted>>;

/// What a side's handshake gives once the peer's head is complete and
/// acceptable.
struct Accepted {
    /// What to send before the connection is open (the server's 101).
    reply: Vec<u8>,
    deflate: Option<DeflateParams>,
    leftover: Bytes,
    request: Request<()>,
    response: Response<()>,
}

impl<H> Exchange for HandshakeDriver<H> {
    type Outcome = Result<Box<Opened>>;

    fn poll(&mut self, now: Instant) -> Step {
        HandshakeDriver::poll(self, now)
    }

    fn receive(&mut self, input: &[u8], now: Instant) {
        HandshakeDriver::receive(self, input, now);
    }

    fn read_failed(&mut self, error: Error, now: Instant) {
        HandshakeDriver::read_failed(self, error, now);
    }

    fn transmit_failed(&mut self, error: Error) {
        HandshakeDriver::transmit_failed(self, error);
    }

    fn handle_timeout(&mut self, now: Instant) {
        HandshakeDriver::handle_timeout(self, now);
    }

    fn deadline(&self) -> Option<Instant> {
        HandshakeDriver::deadline(self)
    }
}

impl<C: Callback> HandshakeDriver<ServerUpgrade<C>> {
    /// Runs `handshake` as a server, with `config` for the deadline
    /// (`handshake_timeout` after `now`) and for the connection it opens.
    ///
    /// The handshake's own deflate settings decide what is negotiated
    /// ([`ServerUpgrade::with_deflate`]; pass `config`'s to accept what
    /// the connection is configured for).
    pub fn server(handshake: ServerUpgrade<C>, config: Config, now: Instant) -> Self {
        let on_input: OnInput<ServerUpgrade<C>> = |handshake, input| {
            Ok(handshake.receive(input)?.map(|done| Accepted {
                reply: done.response_bytes,
                deflate: done.deflate,
                leftover: done.leftover,
                request: done.request,
                response: done.response,
            }))
        };
        Self::new(handshake, on_input, Role::Server, config, Vec::new(), now)
    }
}

impl HandshakeDriver<ClientUpgrade> {
    /// Runs `handshake` as a client, with `config` for the deadline
    /// (`handshake_timeout` after `now`) and for the connection it opens.
    /// The first step transmits the request.
    pub fn client(handshake: ClientUpgrade, config: Config, now: Instant) -> Self {
        let request = handshake.request_bytes().to_vec();
        let on_input: OnInput<ClientUpgrade> = |handshake, input| {
            let Some(done) = handshake.receive(input)? else {
                return Ok(None);
            };
            Ok(Some(Accepted {
                reply: Vec::new(),
                deflate: done.deflate,
                leftover: done.leftover,
                request: handshake.take_request(),
                response: done.response,
            }))
        };
        Self::new(handshake, on_input, Role::Client, config, request, now)
    }
}

impl<H> HandshakeDriver<H> {
    fn new(
        handshake: H,
        on_input: OnInput<H>,
        role: Role,
        config: Config,
        out: Vec<u8>,
        now: Instant,
    ) -> Self {
        let deadline = config
            .get_handshake_timeout()
            .and_then(|timeout| now.checked_add(timeout));
        Self {
            handshake,
            on_input,
            role,
            config: Some(config),
            progress: Progress::new(out, deadline),
        }
    }

    /// What to do next (see the calling contract on [`HandshakeDriver`]).
    /// A `now` at or past the deadline ends an unfinished handshake with
    /// [`TimeoutKind::Handshake`], as [`handle_timeout`](Self::handle_timeout)
    /// does.
    pub fn poll(&mut self, now: Instant) -> Step {
        let step = self.progress.poll(now);
        // Reported once: a poll after `Done` answers `AlreadyClosed`.
        #[cfg(any(feature = "metrics", feature = "tracing"))]
        if let Step::Done(Err(error)) = &step {
            if !matches!(error, Error::AlreadyClosed) {
                crate::observe::handshake_failed(self.role, error);
            }
        }
        step
    }

    /// Reports bytes read from the connection at `now`; an empty `input`
    /// is the end of the stream. Bytes that arrive at or after the deadline
    /// are not looked at: the handshake has timed out.
    pub fn receive(&mut self, input: &[u8], now: Instant) {
        if !self.progress.reading(now) {
            return;
        }
        if input.is_empty() {
            let eof = Err(ProtocolError::HandshakeIncomplete.into());
            return self.progress.finish(eof, Vec::new());
        }
        match (self.on_input)(&mut self.handshake, input) {
            Ok(None) => {}
            Ok(Some(accepted)) => {
                let config = self
                    .config
                    .take()
                    .expect("taken once, when the head is accepted");
                let mut context = WebSocketContext::after_handshake(
                    self.role,
                    config,
                    accepted.deflate,
                    &accepted.leftover,
                );
                let chosen = accepted.response.headers().get(SEC_WEBSOCKET_PROTOCOL);
                context.set_subprotocol(chosen.and_then(|value| value.to_str().ok()));
                let opened = Opened {
                    context,
                    request: accepted.request,
                    response: accepted.response,
                };
                self.progress.finish(Ok(Box::new(opened)), accepted.reply);
            }
            Err(error) => {
                // The peer should learn why (RFC 6455 section 4.2.1: "the
                // server MUST stop processing the client's handshake and
                // return an HTTP response with an appropriate error
                // code").
                let answer = match self.role {
                    Role::Server if refused_request(&error) => error_response_bytes(&error),
                    _ => Vec::new(),
                };
                self.progress.finish(Err(error), answer);
            }
        }
    }

    /// Reports that reading from the connection failed at `now`. A read
    /// that ends at or after the deadline (a socket read timeout set to
    /// it, say) fails the handshake with [`TimeoutKind::Handshake`];
    /// otherwise `error` is the result.
    pub fn read_failed(&mut self, error: Error, now: Instant) {
        self.progress.read_failed(error, now);
    }

    /// Reports that writing the bytes of the last [`Step::Transmit`] (or
    /// flushing them) failed. Unless the handshake had already failed (a
    /// server sending its error response: that error stays the result),
    /// `error` is the result.
    pub fn transmit_failed(&mut self, error: Error) {
        self.progress.transmit_failed(error);
    }

    /// Tells the handshake that time has come to `now`, for a driver whose
    /// wait (a read, or a write) was cut short by the deadline. At or past
    /// the deadline, a handshake that has not failed yet fails with
    /// a timeout ([`Error::timeout`](crate::Error::timeout) is `Some(TimeoutKind::Handshake)`), and bytes still
    /// to send are dropped; before it, nothing changes.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.progress.handle_timeout(now);
    }

    /// When the handshake times out: [`Config::handshake_timeout`] after
    /// the `now` it was made with. `None` if it never does.
    pub fn deadline(&self) -> Option<Instant> {
        self.progress.deadline()
    }

    /// The side's handshake (to read the client's request, say).
    pub fn get_ref(&self) -> &H {
        &self.handshake
    }
}

/// Whether a server's handshake failed on the request (which the client
/// is then told about) rather than on the connection.
fn refused_request(error: &Error) -> bool {
    error.handshake_failure().is_some()
        || matches!(
            error,
            Error::Http(_) | Error::Protocol(_) | Error::Capacity(CapacityError::TooManyHeaders)
        )
}

impl<H: fmt::Debug> fmt::Debug for HandshakeDriver<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandshakeDriver")
            .field("handshake", &self.handshake)
            .field("role", &self.role)
            .field("to_send", &self.progress.owed().len())
            .field("deadline", &self.progress.deadline())
            .field("state", &self.progress.describe())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use http::StatusCode;

    use super::*;
    use crate::error::TimeoutKind;
    use crate::upgrade::server_upgrade::NoCallback;

    const REQUEST: &[u8] = b"GET /chat HTTP/1.1\r\nHost: example.com\r\nUpgrade: websocket\r\n\
        Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
        Sec-WebSocket-Version: 13\r\n\r\n";
    const RESPONSE: &[u8] = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
        Connection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
    const LIMIT: Duration = Duration::from_millis(300);

    fn config() -> Config {
        Config::default().handshake_timeout(Some(LIMIT))
    }

    fn server(start: Instant) -> HandshakeDriver<ServerUpgrade<NoCallback>> {
        HandshakeDriver::server(ServerUpgrade::new(NoCallback), config(), start)
    }

    fn client(start: Instant) -> HandshakeDriver<ClientUpgrade> {
        let request = Request::get("ws://example.com/chat")
            .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
            .body(())
            .unwrap();
        HandshakeDriver::client(ClientUpgrade::new(request).unwrap(), config(), start)
    }

    fn at(start: Instant, millis: u64) -> Instant {
        start + Duration::from_millis(millis)
    }

    fn transmitted(step: Step) -> Vec<u8> {
        match step {
            Step::Transmit(bytes) => bytes,
            other => panic!("expected Transmit, got {other:?}"),
        }
    }

    fn receive_until(step: Step) -> Option<Instant> {
        match step {
            Step::Receive { deadline } => deadline,
            other => panic!("expected Receive, got {other:?}"),
        }
    }

    fn failure(step: Step) -> Error {
        match step {
            Step::Done(Err(error)) => error,
            other => panic!("expected a failure, got {other:?}"),
        }
    }

    fn is_handshake_timeout(error: &Error) -> bool {
        error.timeout() == Some(TimeoutKind::Handshake)
    }

    #[test]
    fn a_server_answers_then_opens() {
        let start = Instant::now();
        let mut server = server(start);
        assert_eq!(receive_until(server.poll(start)), Some(at(start, 300)));
        server.receive(&REQUEST[..10], at(start, 1));
        assert_eq!(
            receive_until(server.poll(at(start, 1))),
            Some(at(start, 300))
        );
        let mut rest = REQUEST[10..].to_vec();
        rest.extend_from_slice(b"\x81\x80\0\0\0\0");
        server.receive(&rest, at(start, 2));
        let reply = transmitted(server.poll(at(start, 2)));
        assert!(reply.starts_with(b"HTTP/1.1 101 Switching Protocols\r\n"));
        let Step::Done(Ok(opened)) = server.poll(at(start, 3)) else {
            panic!("opened");
        };
        assert_eq!(opened.request.uri(), "/chat");
        assert_eq!(opened.response.status(), StatusCode::SWITCHING_PROTOCOLS);
        assert!(matches!(
            failure(server.poll(at(start, 4))),
            Error::AlreadyClosed
        ));
    }

    #[test]
    fn a_client_sends_its_request_then_opens() {
        let start = Instant::now();
        let mut client = client(start);
        let request = transmitted(client.poll(start));
        assert!(request.starts_with(b"GET /chat HTTP/1.1\r\n"));
        assert_eq!(receive_until(client.poll(start)), Some(at(start, 300)));
        client.receive(RESPONSE, at(start, 299));
        let Step::Done(Ok(opened)) = client.poll(at(start, 299)) else {
            panic!("opened");
        };
        assert_eq!(opened.response.status(), StatusCode::SWITCHING_PROTOCOLS);
        assert_eq!(opened.request.uri(), "ws://example.com/chat");
    }

    #[test]
    #[allow(
        clippy::result_large_err,
        reason = "a callback returns ErrorResponse by value"
    )]
    fn both_sides_record_the_chosen_subprotocol() {
        let start = Instant::now();
        let request = Request::get("ws://example.com/chat")
            .header("sec-websocket-protocol", "chat.v1, chat.v2")
            .body(())
            .unwrap();
        let mut client =
            HandshakeDriver::client(ClientUpgrade::new(request).unwrap(), config(), start);
        let choose = |request: &Request<()>, mut response: Response<()>| {
            let chosen =
                crate::upgrade::server_upgrade::choose_subprotocol(request, &["chat.v2"]).unwrap();
            response
                .headers_mut()
                .insert("sec-websocket-protocol", chosen.parse().unwrap());
            Ok(response)
        };
        let mut server = HandshakeDriver::server(ServerUpgrade::new(choose), config(), start);
        let Step::Transmit(request) = client.poll(start) else {
            panic!("the request goes first")
        };
        server.receive(&request, start);
        let Step::Transmit(response) = server.poll(start) else {
            panic!("the 101")
        };
        let Step::Done(Ok(server_side)) = server.poll(start) else {
            panic!()
        };
        assert!(matches!(client.poll(start), Step::Receive { .. }));
        client.receive(&response, start);
        let Step::Done(Ok(client_side)) = client.poll(start) else {
            panic!()
        };
        assert_eq!(server_side.context.subprotocol(), Some("chat.v2"));
        assert_eq!(client_side.context.subprotocol(), Some("chat.v2"));
    }

    #[test]
    fn a_bad_request_is_answered_before_the_error_is_reported() {
        let start = Instant::now();
        // (input, status the answer carries)
        let cases: &[(&[u8], &str)] = &[
            (b"\x16\x03\x01\x00\xa5\x01", "HTTP/1.1 400 "),
            (b"GET / HTTP/1.0\r\n", "HTTP/1.1 400 "),
            (
                b"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\
                  Sec-WebSocket-Version: 8\r\n\r\n",
                "HTTP/1.1 426 ",
            ),
        ];
        for &(input, status) in cases {
            let mut server = server(start);
            assert!(matches!(server.poll(start), Step::Receive { .. }));
            server.receive(input, at(start, 1));
            let answer = transmitted(server.poll(at(start, 1)));
            assert!(answer.starts_with(status.as_bytes()), "{input:?}");
            // Even a failed write leaves the handshake's own error.
            server.transmit_failed(Error::AlreadyClosed);
            let error = failure(server.poll(at(start, 2)));
            assert!(
                error.handshake_failure().is_some() || matches!(error, Error::Protocol(_)),
                "{input:?}"
            );
        }
    }

    #[test]
    fn a_client_reports_a_bad_response_without_answering() {
        let start = Instant::now();
        let mut client = client(start);
        let _request = transmitted(client.poll(start));
        client.receive(b"HTTP/1.0 200 OK\r\n", at(start, 1));
        assert!(matches!(
            failure(client.poll(at(start, 1))).handshake_failure(),
            Some(crate::error::HandshakeFailure::NotHttp(_))
        ));
    }

    #[test]
    fn the_deadline_ends_an_unfinished_handshake() {
        let start = Instant::now();
        // How each way of learning the time fails a silent peer's handshake.
        type Report = fn(&mut HandshakeDriver<ServerUpgrade<NoCallback>>, Instant);
        let reports: &[(&str, Report)] = &[
            // The poll that follows is the only report.
            ("poll", |_, _| {}),
            ("handle_timeout", |server, now| server.handle_timeout(now)),
            ("bytes after the deadline", |server, now| {
                server.receive(REQUEST, now);
            }),
            ("a read cut by a timeout", |server, now| {
                server.read_failed(
                    std::io::Error::from(std::io::ErrorKind::WouldBlock).into(),
                    now,
                );
            }),
        ];
        for &(how, report) in reports {
            let mut server = server(start);
            assert!(matches!(server.poll(start), Step::Receive { .. }));
            server.receive(&REQUEST[..5], at(start, 100));
            // Just before the deadline nothing happens.
            server.handle_timeout(at(start, 299));
            assert!(
                matches!(server.poll(at(start, 299)), Step::Receive { .. }),
                "{how}"
            );
            report(&mut server, at(start, 300));
            let error = failure(server.poll(at(start, 300)));
            assert!(is_handshake_timeout(&error), "{how}: {error:?}");
        }
    }

    #[test]
    fn a_read_error_before_the_deadline_is_itself() {
        let start = Instant::now();
        let mut server = server(start);
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        server.read_failed(reset.into(), at(start, 10));
        assert!(matches!(failure(server.poll(at(start, 10))), Error::Io(_)));
        let mut server = self::server(start);
        server.receive(b"", at(start, 10));
        assert!(matches!(
            failure(server.poll(at(start, 10))),
            Error::Protocol(ProtocolError::HandshakeIncomplete)
        ));
    }

    #[test]
    fn an_unsent_101_does_not_open_after_the_deadline() {
        let start = Instant::now();
        let mut server = server(start);
        server.receive(REQUEST, at(start, 10));
        // The driver's write of the 101 outlived the deadline.
        let _reply = transmitted(server.poll(at(start, 10)));
        server.handle_timeout(at(start, 400));
        assert!(is_handshake_timeout(&failure(server.poll(at(start, 400)))));
        // Nor does one not yet taken.
        let mut server = self::server(start);
        server.receive(REQUEST, at(start, 10));
        assert!(is_handshake_timeout(&failure(server.poll(at(start, 300)))));
    }

    #[test]
    fn a_failed_write_fails_the_handshake() {
        let start = Instant::now();
        let mut client = client(start);
        let _request = transmitted(client.poll(start));
        let reset = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        client.transmit_failed(reset.into());
        assert!(matches!(failure(client.poll(at(start, 1))), Error::Io(_)));
    }

    #[test]
    fn no_timeout_waits_forever() {
        let start = Instant::now();
        let config = Config::default().handshake_timeout(None);
        let mut server = HandshakeDriver::server(ServerUpgrade::new(NoCallback), config, start);
        let far = start + Duration::from_secs(365 * 24 * 3600);
        server.handle_timeout(far);
        assert_eq!(receive_until(server.poll(far)), None);
        server.receive(REQUEST, far);
        let _reply = transmitted(server.poll(far));
        assert!(matches!(server.poll(far), Step::Done(Ok(_))));
    }

    #[test]
    fn inputs_after_the_end_are_ignored() {
        let start = Instant::now();
        let mut server = server(start);
        server.receive(b"\0", at(start, 1));
        let _answer = transmitted(server.poll(at(start, 1)));
        let _error = failure(server.poll(at(start, 1)));
        server.receive(REQUEST, at(start, 2));
        server.read_failed(Error::AlreadyClosed, at(start, 2));
        server.handle_timeout(at(start, 1000));
        assert!(matches!(
            failure(server.poll(at(start, 1000))),
            Error::AlreadyClosed
        ));
    }
}
