//! [`WebSocket`]: the `std::io` driver.

use std::io::{self, IoSlice, Read, Write};
use std::time::{Duration, Instant};

use bytes::Buf;

use crate::config::{Config, Role};
#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;
use crate::message::{CloseFrame, Message};
use crate::mid_handshake::HandshakeMachine;
use crate::prepared::PreparedMessage;
use crate::proto::{Next, Operation, WebSocketContext};
use crate::protocol::ConfigView;
use crate::std_stream::{ReadTimeoutFn, ReadTimer};

/// The most slices one vectored write hands to the socket.
const MAX_IOVECS: usize = 64;

/// A WebSocket over any `Read + Write` stream, blocking or non-blocking.
///
/// # The write/flush contract
///
/// - [`write`](Self::write) encodes a message into the out buffer and never
///   flushes. It writes to the stream only once the buffer holds
///   `write_buffer_size` bytes.
/// - [`flush`](Self::flush) writes the whole buffer and flushes the stream.
/// - [`send`](Self::send) is `write` then `flush`.
/// - A pong answering a ping, or the reply to a close, is written **and
///   flushed** by the next `read`, `write` or `flush`, behind any data
///   already buffered. `read` tries to send it before returning. Nothing
///   else is flushed implicitly.
///
/// # Deadlines
///
/// Keepalive pings, the keepalive timeout and the close timeout
/// ([`Config::ping_interval`], [`Config::ping_timeout`],
/// [`Config::close_timeout`]) are honoured while [`read`](Self::read)
/// waits, also for room to send a pong or close reply to a peer that
/// stopped reading. On a `TcpStream` (or `UnixStream`, or TLS over a
/// `TcpStream`) without a read timeout of its own, the driver sets the
/// stream's read timeout to the next deadline (and, while a read writes
/// what it owes, the write timeout, unless the caller set one) and shuts
/// down the write side after the closing handshake. Any other
/// stream: give the driver its read timeout with
/// [`set_read_timeout_fn`](Self::set_read_timeout_fn), or make sure
/// `read` is called again by [`deadline`](Self::deadline) (a read that
/// returns `WouldBlock` or `TimedOut` after it handles it).
///
/// A rate limit ([`Config::rate_limit`]) that throttles the peer makes
/// `read` sleep until the next message fits, reading nothing meanwhile so
/// that TCP pushes back on the peer; keepalive pings do not go out and the
/// keepalive timeout does not run during that sleep (the peer is plainly
/// alive). It sleeps on a non-blocking stream too, and whatever read
/// timeout the caller set: an event loop that must never block drives a
/// [`WebSocketContext`] itself, which answers [`Next::Wait`] with the
/// deadline instead.
///
/// ```no_run
/// use std::time::Duration;
/// use lockgate::{Config, Error, TimeoutKind};
///
/// # fn run() -> lockgate::Result<()> {
/// let config = Config::default()
///     .ping_interval(Some(Duration::from_secs(5)))
///     .ping_timeout(Some(Duration::from_secs(5)));
/// let (mut ws, _) = lockgate::ClientOptions::new()
///     .config(config)
///     .connect("ws://127.0.0.1:9001")?;
/// match ws.read() {
///     Ok(msg) => println!("{msg:?}"),
///     // No byte from the peer for 5 s after a ping: it is gone.
///     Err(e) if e.timeout() == Some(TimeoutKind::Keepalive) => println!("peer vanished"),
///     Err(e) => return Err(e),
/// }
/// # Ok(()) }
/// ```
///
/// # Non-blocking streams
///
/// Every method may fail with [`io::ErrorKind::WouldBlock`] (see
/// [`Error::is_would_block`]); call it again once the stream is ready. No
/// byte is lost or sent twice. For `write`/`send`, a would-block error means
/// the message **was** accepted into the buffer; only
/// [`Error::WriteBufferFull`] hands a message back.
///
/// # Examples
///
/// ```no_run
/// use lockgate::{Message, Role, Config, WebSocket};
/// # fn run(stream: std::net::TcpStream) -> lockgate::Result<()> {
/// let mut ws = WebSocket::from_raw_socket(stream, Role::Server, Config::default());
/// for i in 0..100 {
///     ws.write(Message::text(format!("event {i}")))?; // queued, not flushed
/// }
/// ws.flush()?; // one flush for the whole batch
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct WebSocket<S> {
    stream: S,
    context: WebSocketContext,
    /// Bounds blocking reads by the next deadline.
    read_timer: ReadTimer<S>,
    /// What [`get_config`](Self::get_config) lends.
    config_view: ConfigView,
}

impl<S: 'static> WebSocket<S> {
    /// Wraps a stream whose opening handshake is already done.
    ///
    /// `config` is a [`Config`], or tungstenite's
    /// [`WebSocketConfig`](crate::protocol::WebSocketConfig) or
    /// `Option<WebSocketConfig>` (`None`: the defaults).
    pub fn from_raw_socket(stream: S, role: Role, config: impl Into<Config>) -> Self {
        Self::from_context(stream, WebSocketContext::new(role, config.into()))
    }

    /// Like [`from_raw_socket`](Self::from_raw_socket), for a stream from
    /// which the bytes `part`, past the handshake, were already read: they
    /// are the start of the frame stream.
    pub fn from_partially_read(
        stream: S,
        part: impl AsRef<[u8]>,
        role: Role,
        config: impl Into<Config>,
    ) -> Self {
        Self::from_context(
            stream,
            WebSocketContext::after_handshake(role, config.into(), None, part.as_ref()),
        )
    }

    /// Drives an existing context over `stream`.
    ///
    /// (`S: 'static` lets the driver recognise a standard socket, whose read
    /// timeout it uses for deadlines.)
    pub fn from_context(stream: S, context: WebSocketContext) -> Self {
        Self {
            stream,
            config_view: ConfigView::of(&context.config()),
            context,
            read_timer: ReadTimer::for_stream(),
        }
        .with_peer_traced()
    }
}

impl<S> WebSocket<S> {
    /// The connection a handshake over `machine`'s stream opened, keeping
    /// what the handshake learnt about the stream's read timeout.
    pub(crate) fn from_opened(machine: HandshakeMachine<S>, context: WebSocketContext) -> Self {
        let (stream, read_timer) = machine.into_parts();
        Self {
            stream,
            config_view: ConfigView::of(&context.config()),
            context,
            read_timer,
        }
        .with_peer_traced()
    }

    /// Records the socket's peer address in the connection's span
    /// (feature `tracing`), when the stream is a socket it knows.
    #[cfg_attr(
        not(feature = "tracing"),
        allow(unused_mut, reason = "nothing to record")
    )]
    fn with_peer_traced(mut self) -> Self {
        #[cfg(feature = "tracing")]
        if self.context.is_traced() {
            if let Some(peer) = self.read_timer.peer_addr(&self.stream) {
                self.context.record_peer_addr(peer);
            }
        }
        self
    }

    /// The stream.
    pub fn get_ref(&self) -> &S {
        &self.stream
    }

    /// The stream, mutably. Reading or writing it directly corrupts the
    /// connection.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.stream
    }

    /// Gives back the stream; buffered input and output are dropped.
    pub fn into_inner(self) -> S {
        self.stream
    }

    /// The protocol state.
    pub fn context(&self) -> &WebSocketContext {
        &self.context
    }

    /// The subprotocol the opening handshake chose, if any
    /// ([`WebSocketContext::subprotocol`]).
    pub fn subprotocol(&self) -> Option<&str> {
        self.context.subprotocol()
    }

    /// The configuration (a copy).
    pub fn config(&self) -> Config {
        self.context.config()
    }

    /// Replaces the configuration.
    pub fn reconfigure(&mut self, config: Config) {
        self.config_view = ConfigView::of(&config);
        self.context.set_config(config);
    }

    /// Changes the settings tungstenite's
    /// [`WebSocketConfig`](crate::protocol::WebSocketConfig) has, in place
    /// (the others, such as deadlines, stay as they are).
    pub fn set_config(&mut self, set_func: impl FnOnce(&mut crate::protocol::WebSocketConfig)) {
        let mut settings = *self.get_config();
        set_func(&mut settings);
        let config = settings.apply_to(self.context.config());
        self.reconfigure(config);
    }

    /// The settings tungstenite's
    /// [`WebSocketConfig`](crate::protocol::WebSocketConfig) has (change
    /// them with [`set_config`](Self::set_config); the whole configuration
    /// is [`config`](Self::config)).
    pub fn get_config(&self) -> &crate::protocol::WebSocketConfig {
        self.config_view.get()
    }

    /// Whether more messages can be read.
    pub fn can_read(&self) -> bool {
        !self.context.is_terminated()
    }

    /// Whether messages can still be written: not once a close frame was
    /// sent or received.
    pub fn can_write(&self) -> bool {
        self.context.can_write()
    }

    /// Bytes written but not yet handed to the stream.
    pub fn buffered_output(&self) -> usize {
        self.context.buffered_output()
    }

    /// Bytes received but not yet returned as messages: when non-zero, the
    /// next [`read`](Self::read) may complete without waiting for the
    /// stream. Useful to flush replies only once the input is drained.
    pub fn buffered_input(&self) -> usize {
        self.context.buffered_input()
    }

    /// How this driver bounds a blocking read by the next deadline, for a
    /// stream it does not recognise (a TLS stream over TCP, say): `set`
    /// sets the stream's read timeout. Standard sockets need none.
    ///
    /// ```no_run
    /// use lockgate::{Config, Role, WebSocket};
    /// # struct Tls { sock: std::net::TcpStream }
    /// # impl std::io::Read for Tls { fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> { Ok(0) } }
    /// # impl std::io::Write for Tls { fn write(&mut self, b: &[u8]) -> std::io::Result<usize> { Ok(b.len()) } fn flush(&mut self) -> std::io::Result<()> { Ok(()) } }
    /// # fn wrap(tls: Tls) {
    /// // A TLS stream that gives access to its TCP socket.
    /// let mut ws = WebSocket::from_raw_socket(tls, Role::Client, Config::default());
    /// ws.set_read_timeout_fn(|tls, timeout| tls.sock.set_read_timeout(timeout));
    /// # }
    /// ```
    pub fn set_read_timeout_fn(&mut self, set: ReadTimeoutFn<S>) {
        self.read_timer.set_fn(set);
    }

    /// When the next deadline (keepalive, close, or the end of a rate
    /// limit's throttle) falls, if the connection waits on one; `read`
    /// handles it once called at or after that time. A query: every read
    /// tells the connection the time before it reads, which arms the
    /// deadlines of the wait ahead, so after a read that returned for lack
    /// of data (a non-blocking stream's `WouldBlock`) this is when to call
    /// `read` again.
    pub fn deadline(&self) -> Option<Instant> {
        self.context.poll_timeout()
    }
}

impl<S: Read + Write> WebSocket<S> {
    /// Reads the next message.
    ///
    /// Data messages, pings, pongs and the peer's close frame are returned
    /// (except the pong answering a keepalive ping, which the connection
    /// keeps); pongs and close replies are queued and sent for you, before
    /// the message that caused them is returned when the stream takes them.
    /// Keepalive pings go out while it waits (see [Deadlines](#deadlines)).
    ///
    /// # Errors
    ///
    /// - [`Error::ConnectionClosed`] once the closing handshake is complete
    ///   (the write side of a standard socket is shut down first), then
    ///   [`Error::AlreadyClosed`].
    /// - [`Error::Protocol`] / [`Error::Capacity`]: the peer broke the
    ///   protocol or a limit; the matching close frame was sent (or queued,
    ///   if the stream would block) and the connection is over. Once the
    ///   close frame is out, the read lingers before it returns: it shuts
    ///   down the write side and reads and discards input until the peer's
    ///   FIN or [`Config::close_timeout`] (checked before every read, so a
    ///   peer that never stops sending cannot hold it longer), so that
    ///   dropping the connection next does not reset it while the peer
    ///   has yet to read the close. Not on a non-blocking stream, nor on
    ///   one whose reads the driver cannot time out (see
    ///   [Deadlines](#deadlines)): there the error is returned at once.
    /// - a timeout ([`Error::timeout`]): a keepalive or close deadline passed.
    /// - [`Error::Io`], including would-block on non-blocking streams (call
    ///   again; nothing is lost).
    pub fn read(&mut self) -> Result<Message> {
        // A buffered message (the usual case) is moved straight into the
        // result, not through the `Option` of `drive`.
        match self.context.poll(Operation::Read)? {
            Next::Message(msg) => Ok(msg),
            next => match self.drive_from(Operation::Read, next)? {
                Some(msg) => Ok(msg),
                None => unreachable!("a read ends with a message or an error"),
            },
        }
    }

    /// Queues `msg` in the out buffer, without flushing. Writes to the
    /// stream only if the buffer reached `write_buffer_size` or a pong/close
    /// reply is owed.
    ///
    /// # Errors
    ///
    /// - [`Error::WriteBufferFull`] with `msg`, untouched: flush and retry.
    /// - Errors of [`WebSocketContext::write`].
    /// - [`Error::Io`] from writing out: the message **was** queued.
    pub fn write(&mut self, msg: Message) -> Result<()> {
        self.context.write(msg)?;
        self.drive_write()
    }

    /// [`write`](Self::write), but never compressed, whatever
    /// permessage-deflate negotiated (see
    /// [`WebSocketContext::write_uncompressed`]).
    ///
    /// # Errors
    ///
    /// As for [`write`](Self::write).
    pub fn write_uncompressed(&mut self, msg: Message) -> Result<()> {
        self.context.write_uncompressed(msg)?;
        self.drive_write()
    }

    /// [`write`](Self::write) for a [`PreparedMessage`]: encoded once for
    /// every connection it goes to (see
    /// [`WebSocketContext::write_prepared`]).
    ///
    /// # Errors
    ///
    /// As for [`write`](Self::write); a full buffer hands back the message
    /// `msg` was prepared from, in [`Error::WriteBufferFull`].
    pub fn write_prepared(&mut self, msg: &PreparedMessage) -> Result<()> {
        self.context.write_prepared(msg)?;
        self.drive_write()
    }

    /// Writes everything buffered and flushes the stream.
    ///
    /// # Errors
    ///
    /// [`Error::Io`]; on would-block, call again later.
    pub fn flush(&mut self) -> Result<()> {
        self.context.flush();
        self.drive(Operation::Flush).map(drop)
    }

    /// [`write`](Self::write) then [`flush`](Self::flush).
    ///
    /// # Errors
    ///
    /// As for both.
    pub fn send(&mut self, msg: Message) -> Result<()> {
        self.context.write(msg)?;
        self.flush()
    }

    /// Starts the closing handshake: queues a close frame and flushes. Keep
    /// calling [`read`](Self::read) until it returns
    /// [`Error::ConnectionClosed`] to complete the handshake; if the flush
    /// would block, `read` (or `flush`) finishes sending the close frame.
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyClosed`] once the connection is over; [`Error::Io`].
    pub fn close(&mut self, frame: Option<CloseFrame>) -> Result<()> {
        self.context.close(frame)?;
        self.flush()
    }

    /// tungstenite's old name for [`read`](Self::read).
    ///
    /// # Errors
    ///
    /// As for [`read`](Self::read).
    #[deprecated(note = "Use `read`")]
    pub fn read_message(&mut self) -> Result<Message> {
        self.read()
    }

    /// tungstenite's old name for [`send`](Self::send).
    ///
    /// # Errors
    ///
    /// As for [`send`](Self::send).
    #[deprecated(note = "Use `send`")]
    pub fn write_message(&mut self, msg: Message) -> Result<()> {
        self.send(msg)
    }

    /// tungstenite's old name for [`flush`](Self::flush).
    ///
    /// # Errors
    ///
    /// As for [`flush`](Self::flush).
    #[deprecated(note = "Use `flush`")]
    pub fn write_pending(&mut self) -> Result<()> {
        self.flush()
    }

    /// Runs `op` to its end: does what the context asks, one step at a
    /// time. `Some` only for a read.
    /// Most writes only queue and most reads find a message already
    /// buffered: those answers are checked inline, and the loop is entered
    /// only when there is I/O to do.
    #[inline]
    fn drive(&mut self, op: Operation) -> Result<Option<Message>> {
        match self.context.poll(op)? {
            Next::Done => Ok(None),
            Next::Message(msg) => Ok(Some(msg)),
            next => self.drive_from(op, next),
        }
    }

    /// What a write owes: usually nothing, answered inline (a shared
    /// `drive` is too large to inline into every caller, and the call cost
    /// a write about 20 instructions).
    #[inline(always)]
    fn drive_write(&mut self) -> Result<()> {
        match self.context.poll(Operation::Write)? {
            Next::Done => Ok(()),
            next => self.drive_from(Operation::Write, next).map(drop),
        }
    }

    fn drive_from(&mut self, op: Operation, first: Next) -> Result<Option<Message>> {
        let mut first = Some(first);
        loop {
            let next = match first.take() {
                Some(next) => next,
                None => self.context.poll(op)?,
            };
            let outcome = match next {
                Next::Message(msg) => return Ok(Some(msg)),
                Next::Done => return Ok(None),
                Next::Transmit | Next::Flush if op == Operation::Read => {
                    self.owed_output_within_deadline(&next)
                }
                Next::Transmit => self.transmit(),
                Next::Flush => self.flush_stream(),
                Next::Receive => self.receive(),
                Next::Discard => self.discard(),
                Next::Wait => {
                    self.wait();
                    Ok(())
                }
                Next::Shutdown => {
                    // A failed shutdown changes nothing: the closing
                    // handshake is complete either way.
                    let _ = self.read_timer.end_write(&mut self.stream);
                    self.context.shut_down();
                    Ok(())
                }
            };
            let error = match outcome {
                Ok(()) => continue,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => e,
            };
            let go_on = is_timeout(&error)
                && match next {
                    Next::Receive | Next::Discard => self.deadline_passed(),
                    // A read blocked on owed output still honours its
                    // deadlines (the write was bounded by the next one).
                    _ => {
                        !self.context.write_would_block(op)
                            || (op == Operation::Read && self.deadline_passed())
                    }
                };
            if !go_on {
                return Err(self.context.io_error(error));
            }
        }
    }

    /// A read returned for lack of data: whether that was a deadline
    /// passing (now handled) rather than a non-blocking stream or the
    /// caller's own timeout.
    fn deadline_passed(&mut self) -> bool {
        self.tell_time(Instant::now()).0
    }

    /// Tells the context the time before a wait: it does what is due and
    /// arms the deadlines of the wait ahead. Returns whether a deadline
    /// had passed (what it meant has happened: poll again rather than
    /// wait), and the deadline to wait until.
    fn tell_time(&mut self, now: Instant) -> (bool, Option<Instant>) {
        let passed = self.context.poll_timeout().is_some_and(|d| d <= now);
        self.context.handle_timeout(now);
        let deadline = self.context.poll_timeout();
        (passed || deadline.is_some_and(|d| d <= now), deadline)
    }

    /// A rate limit holds the next message back: sleep until it fits.
    /// There is no read to bound by the deadline (not reading is the
    /// point), so the thread sleeps, on any stream.
    fn wait(&mut self) {
        let now = Instant::now();
        let (passed, deadline) = self.tell_time(now);
        if let (Some(deadline), false) = (deadline, passed) {
            if deadline > now {
                std::thread::sleep(deadline - now);
            }
            self.context.handle_timeout(Instant::now().max(deadline));
        }
    }

    /// The output a read owes (a pong, a close reply, a keepalive ping,
    /// and any data ahead of it), written or flushed no later than the
    /// next deadline where the stream allows it, as the tokio driver does:
    /// a write that cannot finish by then reports would-block, the read
    /// reads on, and the deadline is handled (the keepalive timeout fails a
    /// peer that neither reads nor sends). The close frame of a connection
    /// that already failed is best effort: it may take `close_timeout`, at
    /// most [`BEST_EFFORT_CLOSE`], before the failure is reported.
    fn owed_output_within_deadline(&mut self, next: &Next) -> io::Result<()> {
        let now = Instant::now();
        if self.context.poll_timeout().is_none_or(|d| d > now) {
            // Arms the deadline that bounds the write. One that passed is
            // handled once the write reports it would block (the read
            // reads on and returns what owes the output first).
            self.context.handle_timeout(now);
        }
        let deadline = match self.context.poll_timeout() {
            Some(deadline) => Some(deadline),
            None if self.context.is_terminated() => {
                let close_timeout = self.context.config().get_close_timeout();
                Some(now + close_timeout.map_or(BEST_EFFORT_CLOSE, |t| t.min(BEST_EFFORT_CLOSE)))
            }
            None => None,
        };
        let bounded = match deadline {
            Some(deadline) => self.read_timer.bound_write(&self.stream, deadline, now)?,
            None => false,
        };
        let outcome = match next {
            Next::Transmit => self.transmit(),
            _ => self.flush_stream(),
        };
        if bounded {
            self.read_timer.unbound_write(&self.stream)?;
        }
        outcome
    }

    fn flush_stream(&mut self) -> io::Result<()> {
        self.stream.flush()?;
        self.context.flushed();
        Ok(())
    }

    /// One write of the pending output, vectored when it spans several
    /// slices.
    fn transmit(&mut self) -> io::Result<()> {
        let mut output = self.context.output();
        let written = if output.chunk().len() == output.remaining() {
            // The usual burst of small frames: one contiguous chunk, no
            // slice array to fill.
            self.stream.write(output.chunk())
        } else {
            let mut slices = [IoSlice::new(&[]); MAX_IOVECS];
            let n = output.chunks_vectored(&mut slices);
            self.stream.write_vectored(&slices[..n])
        }?;
        if written == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        output.advance(written);
        Ok(())
    }

    /// One read of a lingering close, whose bytes the context throws
    /// away: none once its deadline passed (a peer that never stops
    /// sending must not hold the thread past it), and none on a stream
    /// whose reads this driver cannot time out, which reports that it
    /// would block instead (as a non-blocking stream does), so the failure
    /// is reported without lingering.
    fn discard(&mut self) -> io::Result<()> {
        if self.deadline_passed() {
            return Ok(());
        }
        if !self.read_timer.bounds_reads() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        self.receive()
    }

    /// One read into the context, bounded by the next deadline where the
    /// stream allows it.
    fn receive(&mut self) -> io::Result<()> {
        let now = Instant::now();
        let (passed, deadline) = self.tell_time(now);
        // A deadline that passed is handled before reading, not only when
        // a read times out: after our close, a peer that never stops
        // sending must not hold the read past the close timeout.
        if passed {
            return Ok(());
        }
        self.read_timer.arm(&self.stream, deadline, now)?;
        let result = match self
            .read_timer
            .receive_plain(&self.stream, &mut self.context)
        {
            Some(result) => result,
            None => {
                let result = self.stream.read(self.context.input_spare());
                self.context.commit_input(*result.as_ref().unwrap_or(&0));
                result
            }
        };
        if result? == 0 {
            self.context.input_ended();
        }
        Ok(())
    }
}

/// The longest a read waits to send the close frame of a connection that
/// already failed before reporting the failure: a peer that reads takes it
/// at once, and one that does not must not hold the caller.
const BEST_EFFORT_CLOSE: Duration = Duration::from_secs(1);

/// A read or write that did not happen for lack of data, room or time.
fn is_timeout(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}
