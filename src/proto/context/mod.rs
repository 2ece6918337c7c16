//! [`WebSocketContext`]: the whole protocol, with no I/O. Its fields are
//! the owners of the connection's state (`lifecycle.rs`, `timers.rs`,
//! `negotiated.rs`, `owed.rs`, `receive_path.rs`, the send path of
//! `send.rs`), private to this module: the context's own files are its
//! children, one per part of its work (the driver's side of the seam, the
//! read, the split).

mod drive;
mod receive;
pub(super) mod split;

use bytes::BytesMut;
use bytes::buf::Limit;

use crate::codec::{InFrames, OutBuffer};
use crate::config::{Config, Role, Settings};
use crate::deflate::DeflateParams;
#[cfg(doc)]
use crate::error::CapacityError;
use crate::error::{Error, ProtocolError, Result};
use crate::message::{CloseFrame, Message};
use crate::prepared::PreparedMessage;
use crate::proto::lifecycle::Lifecycle;
use crate::proto::negotiated::Negotiated;
use crate::proto::owed::Owed;
use crate::proto::receive_path::ReceivePath;
#[cfg(doc)]
use crate::proto::seam::{Next, Operation};
use crate::proto::send::{self, SendSide, Sending};
use crate::proto::state::State;
use crate::proto::timers::Timer;

/// One WebSocket connection's protocol state: bytes in, messages out;
/// messages in, bytes out. It never touches a socket and never reads a
/// clock.
///
/// A driver ([`WebSocket`](crate::WebSocket), the tokio adapter, or your
/// own) runs each of its caller's calls as an [`Operation`]: it asks
/// [`poll`](Self::poll) what to do next, does that one thing to its stream,
/// reports the outcome, and asks again until the answer is a message or
/// [`Next::Done`]. Every protocol decision (when a pong goes out, when to
/// flush, when the connection is over) is the context's; the driver only
/// moves bytes and waits. [`Next`] has the full contract.
///
/// **Inputs** (what the stream gave)
/// - [`input_buffer`](Self::input_buffer) + [`input_appended`](Self::input_appended),
///   or [`input_spare`](Self::input_spare) + [`commit_input`](Self::commit_input),
///   or [`feed`](Self::feed): received bytes.
/// - [`input_ended`](Self::input_ended): the stream ended.
///
/// **Commands** (what the caller wants)
/// - [`write`](Self::write) / [`write_uncompressed`](Self::write_uncompressed):
///   encode a message into the out buffer (refused with
///   [`Error::WriteBufferFull`] past `max_write_buffer_size`, never for lack
///   of a flush).
/// - [`flush`](Self::flush): everything out and the stream flushed.
/// - [`close`](Self::close): start the closing handshake.
/// - [`set_config`](Self::set_config).
///
/// **Outputs** (what the driver does)
/// - [`poll`](Self::poll): the next step of an [`Operation`].
/// - [`output`](Self::output): the pending bytes as one [`bytes::Buf`];
///   [`flushed`](Self::flushed), [`shut_down`](Self::shut_down),
///   [`write_would_block`](Self::write_would_block) and
///   [`io_error`](Self::io_error) report how the stream took them.
/// - [`next_message`](Self::next_message): parse a message from the
///   received bytes without driving any output (for tests and tools).
///
/// **Timers** (time is passed in; the context never reads a clock)
/// - [`handle_timeout`](Self::handle_timeout): time is `now`, do what is
///   due. Called before each wait and when the deadline passed: it sends
///   the keepalive ping or fails a timed-out connection, and does the
///   housekeeping of a wait (gives back drained buffers, hands counts to
///   `metrics`, arms the deadlines of the state the connection is in,
///   moves a rate limit's clock).
/// - [`poll_timeout`](Self::poll_timeout): the deadline to wait until
///   (keepalive ping, keepalive timeout, close timeout, the end of a rate
///   limit's throttle: [`Config::rate_limit`]); a pure query.
///
/// A driver's wait is `ctx.handle_timeout(now)`, then
/// `ctx.poll_timeout()`, then waiting for the stream no later than that;
/// if the deadline it saw before had passed, it polls again instead.
///
/// ```
/// use lockgate::{Buf, Config, Message, Next, Operation, Role, WebSocketContext};
///
/// let mut ctx = WebSocketContext::new(Role::Server, Config::default());
/// // A masked ping from the client arrives.
/// ctx.feed(&[0x89, 0x80, 1, 2, 3, 4]);
/// // The read answers it before handing it over: write, flush, then the message.
/// assert_eq!(ctx.poll(Operation::Read)?, Next::Transmit);
/// let mut output = ctx.output();
/// assert_eq!(output.chunk(), &[0x8a, 0x00]); // the pong
/// output.advance(2);
/// assert_eq!(ctx.poll(Operation::Read)?, Next::Flush);
/// ctx.flushed();
/// assert!(matches!(ctx.poll(Operation::Read)?, Next::Message(Message::Ping(_))));
/// assert_eq!(ctx.poll(Operation::Read)?, Next::Receive);
/// # Ok::<(), lockgate::Error>(())
/// ```
#[derive(Debug)]
pub struct WebSocketContext {
    role: Role,
    /// The configuration, but for its rate limit (which the limiter
    /// keeps, in `negotiated`).
    settings: Settings,
    /// Received bytes and the frame being read.
    input: InFrames,
    /// Encoded frames waiting for the stream.
    output: OutBuffer,
    /// Where the connection is in its life, what its read owes the stream
    /// at the end, and what reports it (`lifecycle.rs`).
    lifecycle: Lifecycle,
    /// The message being received and the result a read holds back.
    receiving: ReceivePath,
    /// The control frames queued for the peer and the flushes owed to
    /// the stream.
    owed: Owed,
    /// What the handshake negotiated (permessage-deflate, a subprotocol)
    /// and a rate limit's state, behind one pointer (`negotiated.rs`).
    negotiated: Negotiated,
    /// The deadline the connection waits on, what it means, and the
    /// keepalive pings sent, whose pongs a read consumes (`timers.rs`).
    timer: Timer,
}

impl WebSocketContext {
    /// A context for a connection whose opening handshake is done, without
    /// permessage-deflate. `config` is a [`Config`] or anything that
    /// converts into one (tungstenite's `WebSocketConfig` and
    /// `Option<WebSocketConfig>` do, `None` being the defaults).
    pub fn new(role: Role, config: impl Into<Config>) -> Self {
        Self::with_deflate(role, config.into(), None)
    }

    /// A context for a connection whose handshake negotiated `deflate`
    /// (from [`ClientUpgradeDone`](crate::handshake::ClientUpgradeDone),
    /// [`ServerUpgradeDone`](crate::handshake::ServerUpgradeDone) or
    /// [`upgrade_response_with_deflate`](crate::handshake::upgrade_response_with_deflate)).
    /// Compression level and minimum size come from
    /// [`Config::deflate`], or its defaults. Without the `deflate` feature,
    /// `deflate` is ignored.
    pub fn with_deflate(role: Role, config: Config, deflate: Option<DeflateParams>) -> Self {
        let negotiated =
            Negotiated::new(role, deflate, config.get_deflate(), config.get_rate_limit());
        let mut context = Self {
            role,
            settings: config.settings(),
            input: InFrames::default(),
            output: OutBuffer::default(),
            lifecycle: Lifecycle::new(),
            receiving: ReceivePath::default(),
            owed: Owed::default(),
            negotiated,
            timer: Timer::default(),
        };
        context.lifecycle.opened(role);
        context
    }

    /// The context right after an opening handshake: what it negotiated,
    /// and the bytes that arrived after the handshake (the start of the
    /// frame stream, which must not be lost).
    pub fn after_handshake(
        role: Role,
        config: Config,
        deflate: Option<DeflateParams>,
        already_read: &[u8],
    ) -> Self {
        let mut context = Self::with_deflate(role, config, deflate);
        context.feed(already_read);
        context
    }

    /// The permessage-deflate parameters in use, if it was negotiated.
    pub fn deflate(&self) -> Option<&DeflateParams> {
        self.negotiated.deflate()
    }

    /// The subprotocol the opening handshake chose (its
    /// `Sec-WebSocket-Protocol`), if any. Set by the handshakes lockgate
    /// runs; a connection made otherwise has it from
    /// [`set_subprotocol`](Self::set_subprotocol).
    pub fn subprotocol(&self) -> Option<&str> {
        self.negotiated.subprotocol()
    }

    /// Records the subprotocol the handshake chose, for a handshake run
    /// outside lockgate (an HTTP server's upgrade).
    pub fn set_subprotocol(&mut self, protocol: Option<&str>) {
        if let Some(protocol) = protocol {
            self.lifecycle.observe_subprotocol(protocol);
        }
        self.negotiated.set_subprotocol(protocol);
    }

    /// This end's role.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The configuration, rebuilt from what the connection keeps of it
    /// (its settings, and the rate limit its limiter holds).
    pub fn config(&self) -> Config {
        Config::from_parts(self.settings, self.negotiated.rate_limit())
    }

    /// Replaces the configuration; limits apply from the next frame (a
    /// changed rate limit starts with full buckets).
    pub fn set_config(&mut self, config: Config) {
        self.settings = config.settings();
        // A message the removed limit held back is delivered next.
        if let Some(held) = self.negotiated.set_rate_limit(config.get_rate_limit()) {
            self.receiving.hold_unless_holding(held);
        }
    }

    // ----- commands -----

    /// Encodes `msg` into the out buffer. Never does I/O.
    ///
    /// # Errors
    ///
    /// - [`Error::WriteBufferFull`] with `msg` as given if it would take the
    ///   out buffer past `max_write_buffer_size` (flush and retry).
    /// - [`CapacityError::MessageTooLong`] if it is larger than
    ///   `max_write_buffer_size` on its own.
    /// - [`ProtocolError::ControlFrameTooBig`] for a ping or pong over 125
    ///   bytes.
    /// - [`ProtocolError::SendAfterClosing`] after a close frame was sent or
    ///   received; [`Error::AlreadyClosed`] once the connection is over.
    #[inline]
    pub fn write(&mut self, msg: Message) -> Result<()> {
        send::write(self, msg, true)
    }

    /// [`write`](Self::write), but never compressed, whatever was
    /// negotiated: for payloads known not to compress (already compressed
    /// media, random bytes) or that must not share a compression context
    /// with secrets (see BREACH-style attacks).
    ///
    /// # Errors
    ///
    /// As for [`write`](Self::write).
    pub fn write_uncompressed(&mut self, msg: Message) -> Result<()> {
        send::write(self, msg, false)
    }

    /// Encodes a [`PreparedMessage`] into the out buffer: the bytes on the
    /// wire are what [`write`](Self::write) would have produced for the
    /// same message, but the work is shared between every connection it is
    /// written to (see [`PreparedMessage`] for what is shared when).
    ///
    /// # Errors
    ///
    /// As for [`write`](Self::write), except that a full buffer hands back
    /// the message `msg` was prepared from, in [`Error::WriteBufferFull`].
    pub fn write_prepared(&mut self, msg: &PreparedMessage) -> Result<()> {
        self.sending().write_prepared(msg)
    }

    /// Starts the closing handshake by queueing a close frame (never
    /// refused for lack of room) that is owed a flush like a close reply.
    /// Idempotent while closing.
    ///
    /// # Errors
    ///
    /// - [`Detail::SendForbiddenCloseCode`](crate::Detail::SendForbiddenCloseCode) for a code the RFC
    ///   forbids on the wire (1005, 1006, 1015, reserved or out-of-range
    ///   codes): nothing is queued and the connection stays open.
    /// - [`Error::AlreadyClosed`] once the connection is over.
    pub fn close(&mut self, frame: Option<CloseFrame>) -> Result<()> {
        self.sending().close(frame)
    }

    /// Whether messages can still be written: not once a close frame was
    /// sent or received.
    pub fn can_write(&self) -> bool {
        self.lifecycle.state() == State::Active
    }

    /// Bytes written but not yet handed to the stream.
    pub fn buffered_output(&self) -> usize {
        self.output.len()
    }

    /// Moves a queued pong, keepalive ping and close frame into the out
    /// buffer (after any data already there) and marks a flush as owed.
    ///
    /// While an earlier pong still sits unflushed in the out buffer, a newer
    /// one stays queued (replacing older queued ones): a peer that pings
    /// without reading cannot grow the buffer.
    #[inline]
    pub(super) fn prepare_output(&mut self) {
        // Nearly every call finds nothing queued.
        if self.owed.has_queued() {
            let Self {
                role,
                settings,
                output,
                owed,
                lifecycle,
                negotiated,
                timer,
                ..
            } = self;
            Sending::new(*role, settings, output, owed, lifecycle, negotiated)
                .move_queued_frames(timer);
        }
    }

    // ----- inputs -----

    /// Zeroed space to read socket bytes into. Always follow it with
    /// [`commit_input`](Self::commit_input), with 0 if the read failed.
    pub fn input_spare(&mut self) -> &mut [u8] {
        self.input.spare(self.settings.get_read_buffer_size())
    }

    /// Keeps `n` bytes read into [`input_spare`](Self::input_spare).
    ///
    /// # Panics
    ///
    /// If `n` exceeds the length of the space handed out.
    pub fn commit_input(&mut self, n: usize) {
        self.input.commit(n);
        self.timer.heard_if(n > 0);
    }

    /// The receive buffer, with room reserved for the next read and limited
    /// to the size that read should have, for drivers that read into
    /// uninitialised capacity without zeroing it (for example
    /// `tokio_util::io::poll_read_buf`). Only append to it, then report how
    /// much with [`input_appended`](Self::input_appended), also after a
    /// read that returned nothing.
    pub fn input_buffer(&mut self) -> Limit<&mut BytesMut> {
        self.input.for_read(self.settings.get_read_buffer_size())
    }

    /// The receive buffer's room for the next read, split off to be lent
    /// to a read that owns its buffer until the read completes (an
    /// io_uring driver's): empty, with capacity for at least the read's
    /// size, which is the limit. Give it back with
    /// [`input_returned`](Self::input_returned) once the read completed,
    /// also when it read nothing or failed; meanwhile the context works as
    /// usual (what it parses and writes does not touch the lent room).
    pub fn input_lend(&mut self) -> Limit<BytesMut> {
        self.input.lend(self.settings.get_read_buffer_size())
    }

    /// The buffer [`input_lend`](Self::input_lend) gave, holding what the
    /// read put in it: appended to the received bytes, in place (no copy)
    /// when nothing moved them meanwhile, copied otherwise.
    pub fn input_returned(&mut self, read: BytesMut) {
        let n = read.len();
        self.input.returned(read);
        self.timer.heard_if(n > 0);
    }

    /// `n` bytes were appended to [`input_buffer`](Self::input_buffer).
    pub fn input_appended(&mut self, n: usize) {
        self.input.appended(n);
        self.timer.heard_if(n > 0);
    }

    /// Appends received bytes (copying them).
    pub fn feed(&mut self, data: &[u8]) {
        self.input.extend(data);
        self.timer.heard_if(!data.is_empty());
    }

    /// Received bytes not yet turned into messages.
    pub fn buffered_input(&self) -> usize {
        self.input.buffered()
    }

    /// The stream ended (a read returned 0 bytes). The next read poll
    /// reports [`Error::ConnectionClosed`] after a completed closing
    /// handshake, [`ProtocolError::ResetWithoutClosingHandshake`]
    /// otherwise; while lingering after a failure ([`Next::Discard`]),
    /// the failure.
    pub fn input_ended(&mut self) {
        if self.lifecycle.is_lingering() {
            // The peer's FIN: it has everything we sent.
            self.end_linger();
            return;
        }
        let state = self.lifecycle.state();
        self.lifecycle.stream_ended();
        self.owed.stream_ended();
        let error = match state {
            State::CloseAcknowledged => {
                self.lifecycle.end_with_shutdown();
                Error::ConnectionClosed
            }
            State::Terminated => Error::AlreadyClosed,
            _ => Error::Protocol(ProtocolError::ResetWithoutClosingHandshake),
        };
        self.receiving.hold(Err(error));
    }

    /// Records the peer's address in the connection's `tracing` span
    /// (feature `tracing`; see [`crate::observe`]). lockgate's drivers do
    /// it for the sockets they know; a driver of its own calls it for its
    /// stream.
    #[cfg(feature = "tracing")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tracing")))]
    pub fn record_peer_addr(&mut self, peer: std::net::SocketAddr) {
        self.lifecycle.record_peer(peer);
    }

    /// The connection's `tracing` span (feature `tracing`), to instrument
    /// the task that serves it, say: disabled if no subscriber wanted it
    /// when the connection opened.
    #[cfg(feature = "tracing")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tracing")))]
    pub fn span(&self) -> tracing::Span {
        self.lifecycle.span()
    }

    /// Whether the connection has a span a peer address would go to (so a
    /// driver can skip looking the address up).
    #[cfg(feature = "tracing")]
    pub(crate) fn is_traced(&self) -> bool {
        self.lifecycle.is_traced()
    }
}

/// What the tests of the owners ask of the context's state.
#[cfg(test)]
impl WebSocketContext {
    /// Whether a rate limit holds a message back.
    pub(super) fn is_throttled(&self) -> bool {
        self.negotiated.is_throttled()
    }

    /// Whether the context allocated anything for extensions or limits.
    pub(super) fn holds_negotiated_state(&self) -> bool {
        !self.negotiated.is_empty()
    }
}

impl SendSide for WebSocketContext {
    #[inline]
    fn sending(&mut self) -> Sending<'_> {
        Sending::new(
            self.role,
            &self.settings,
            &mut self.output,
            &mut self.owed,
            &mut self.lifecycle,
            &mut self.negotiated,
        )
    }

    #[inline]
    fn common_write_parts(&mut self) -> (Role, &Settings, &mut OutBuffer, &mut Lifecycle, bool) {
        let compressing = self.negotiated.compression().is_some();
        (
            self.role,
            &self.settings,
            &mut self.output,
            &mut self.lifecycle,
            compressing,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;
    use bytes::{Buf, Bytes};

    #[test]
    fn a_burst_keeps_its_out_buffer_until_the_flush() {
        let mut ctx = WebSocketContext::new(Role::Server, Config::default());
        let payload = Bytes::from(vec![b'x'; 1000]);
        for _ in 0..100 {
            ctx.write(Message::Binary(payload.clone())).unwrap();
        }
        // Written out mid-burst (the buffer reached its size): kept.
        let mut output = ctx.output();
        output.advance(output.remaining());
        ctx.write(Message::Binary(payload.clone())).unwrap();
        assert!(ctx.output.tail_capacity() > 0, "still allocated");
        // Written out and flushed: the connection may go idle.
        let mut output = ctx.output();
        output.advance(output.remaining());
        ctx.flushed();
        assert_eq!(ctx.output.tail_capacity(), 0);
    }

    #[test]
    fn an_idle_connection_stays_small() {
        // Every parked connection holds one of these; buffers are released
        // when drained, so this struct is most of its memory.
        let size = std::mem::size_of::<WebSocketContext>();
        println!("WebSocketContext: {size} bytes");
        // What the `metrics` and `tracing` features add: four counters,
        // one pointer, and (with either) the flag that keeps a split-off
        // sending side from reporting, padded to a word.
        let observed = if cfg!(feature = "metrics") { 32 } else { 0 }
            + if cfg!(feature = "tracing") { 8 } else { 0 }
            + if cfg!(any(feature = "metrics", feature = "tracing")) {
                8
            } else {
                0
            };
        assert!(size <= 264 + observed, "{size} bytes");
    }
}
