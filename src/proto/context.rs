//! [`WebSocketContext`]: the whole protocol, with no I/O.

use std::io::IoSlice;

use bytes::buf::Limit;
use bytes::{Buf, Bytes, BytesMut};

use crate::codec::FrameCodec;
use crate::config::{Config, Role};
use crate::deflate::DeflateParams;
use crate::error::{CapacityError, Error, ProtocolError, Result};
use crate::frame::{CloseCode, FrameHeader, HeaderParse, OpCode, encoded_header_len};
use crate::message::{CloseFrame, Message};
use crate::proto::assembler::Fragments;
use crate::proto::close_payload::{encode_close, parse_close};
use crate::proto::compression::{self, Compression};
use crate::proto::state::State;
use crate::proto::utf8_stream::Utf8Stream;
use crate::utf8_bytes::Utf8Bytes;

/// The largest control frame payload (RFC 6455 section 5.5).
const MAX_CONTROL_PAYLOAD: usize = 125;

/// One WebSocket connection's protocol state: bytes in, messages out;
/// messages in, bytes out. It never touches a socket.
///
/// Drivers ([`WebSocket`](crate::WebSocket) and the tokio adapter) call it
/// in this pattern; any driver written against this contract behaves the
/// same way.
///
/// **Inputs**
/// - [`input_spare`](Self::input_spare) + [`commit_input`](Self::commit_input)
///   (read straight into the buffer) or [`feed`](Self::feed): received bytes.
/// - [`on_eof`](Self::on_eof): the stream ended.
/// - [`on_read_wait`](Self::on_read_wait): the driver is about to wait for
///   the peer (drained buffers are given back, so idle connections stay
///   small).
///
/// **Commands**
/// - [`write`](Self::write): encode a message into the out buffer (never
///   refused for lack of a flush; refused with
///   [`Error::WriteBufferFull`] past `max_write_buffer_size`).
/// - [`close`](Self::close): start the closing handshake.
///
/// **Outputs**
/// - [`next_message`](Self::next_message): the next message parsed from the
///   received bytes, `Ok(None)` when more bytes are needed.
/// - [`prepare_output`](Self::prepare_output): call first on every
///   read/write/flush: it moves a queued pong or close reply into the out
///   buffer and marks a flush as owed.
/// - [`output_chunks`](Self::output_chunks) / [`advance_output`](Self::advance_output):
///   the pending bytes, consumed byte-accurately after each socket write.
/// - [`flush_owed`](Self::flush_owed) / [`on_flushed`](Self::on_flushed): a
///   pong or close reply is in the out buffer and the driver must flush the
///   socket once the buffer is written; nothing else is ever flushed
///   implicitly.
#[derive(Debug)]
pub struct WebSocketContext {
    role: Role,
    config: Config,
    codec: FrameCodec,
    state: State,
    /// Boxed: fragmented messages are rare, and idle connections many.
    fragments: Option<Box<Fragments>>,
    /// Validates the text message currently arriving; `None` while the
    /// current data message is binary.
    text: Option<Utf8Stream>,
    /// Only the newest unanswered ping is answered.
    pending_pong: Option<Bytes>,
    /// A close frame to send: our reply, or the failure of the connection.
    /// Such frames carry a code (or none) and never a reason.
    pending_close: Option<Option<CloseCode>>,
    flush_owed: bool,
    /// What permessage-deflate negotiated, if anything.
    deflate: Option<DeflateParams>,
    /// Boxed: most connections never negotiate compression, and an idle
    /// connection should cost as few bytes as possible.
    compression: Option<Box<Compression>>,
    /// The message being received is compressed: its inflated bytes so far.
    inflating: Option<BytesMut>,
}

impl WebSocketContext {
    /// A context for a connection whose opening handshake is done, without
    /// permessage-deflate.
    pub fn new(role: Role, config: Config) -> Self {
        Self::with_deflate(role, config, None)
    }

    /// A context for a connection whose handshake negotiated `deflate`
    /// (from [`ClientHandshakeDone`](crate::handshake::ClientHandshakeDone),
    /// [`ServerHandshakeDone`](crate::handshake::ServerHandshakeDone) or
    /// [`upgrade_response_with_deflate`](crate::handshake::upgrade_response_with_deflate)).
    /// Compression level and minimum size come from
    /// [`Config::deflate`], or its defaults. Without the `deflate` feature,
    /// `deflate` is ignored.
    pub fn with_deflate(role: Role, config: Config, deflate: Option<DeflateParams>) -> Self {
        let compression =
            compression::negotiated(role, deflate.as_ref(), config.get_deflate()).map(Box::new);
        Self {
            role,
            config,
            codec: FrameCodec::default(),
            state: State::Active,
            fragments: None,
            text: None,
            pending_pong: None,
            pending_close: None,
            flush_owed: false,
            deflate: deflate.filter(|_| compression.is_some()),
            compression,
            inflating: None,
        }
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
        self.deflate.as_ref()
    }

    /// This end's role.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Replaces the configuration; limits apply from the next frame.
    pub fn set_config(&mut self, config: Config) {
        self.config = config;
    }

    // ----- inputs -----

    /// Zeroed space to read socket bytes into. Always follow it with
    /// [`commit_input`](Self::commit_input), with 0 if the read failed.
    pub fn input_spare(&mut self) -> &mut [u8] {
        self.codec.input.spare(self.config.read_buffer_size)
    }

    /// Keeps `n` bytes read into [`input_spare`](Self::input_spare).
    ///
    /// # Panics
    ///
    /// If `n` exceeds the length of the space handed out.
    pub fn commit_input(&mut self, n: usize) {
        self.codec.input.commit(n);
    }

    /// The receive buffer, with room reserved for the next read and limited
    /// to the size that read should have, for drivers that read into
    /// uninitialised capacity without zeroing it (for example
    /// `tokio_util::io::poll_read_buf`). Only append to it, then report how
    /// much with [`input_appended`](Self::input_appended), also after a
    /// read that returned nothing.
    pub fn input_buffer(&mut self) -> Limit<&mut BytesMut> {
        self.codec.input.for_read(self.config.read_buffer_size)
    }

    /// `n` bytes were appended to [`input_buffer`](Self::input_buffer).
    pub fn input_appended(&mut self, n: usize) {
        self.codec.input.appended(n);
    }

    /// Appends received bytes (copying them).
    pub fn feed(&mut self, data: &[u8]) {
        self.codec.input.extend(data);
    }

    /// Received bytes not yet turned into messages.
    pub fn buffered_input(&self) -> usize {
        self.codec.input.buffered()
    }

    /// The stream ended. Returns the error `read` reports:
    /// [`Error::ConnectionClosed`] after a completed closing handshake,
    /// [`ProtocolError::ResetWithoutClosingHandshake`] otherwise.
    pub fn on_eof(&mut self) -> Error {
        let state = std::mem::replace(&mut self.state, State::Terminated);
        self.pending_pong = None;
        match state {
            State::CloseAcknowledged => Error::ConnectionClosed,
            State::Terminated => Error::AlreadyClosed,
            _ => Error::Protocol(ProtocolError::ResetWithoutClosingHandshake),
        }
    }

    // ----- commands -----

    /// Encodes `msg` into the out buffer. Never does I/O.
    ///
    /// # Errors
    ///
    /// - [`Error::WriteBufferFull`] with `msg` as given if it would take the
    ///   out buffer past `max_write_buffer_size` (flush and retry).
    /// - [`CapacityError::MessageTooLarge`] if it is larger than
    ///   `max_write_buffer_size` on its own.
    /// - [`ProtocolError::ControlFrameTooLong`] for a ping or pong over 125
    ///   bytes.
    /// - [`ProtocolError::SendAfterClosing`] after a close frame was sent or
    ///   received; [`Error::AlreadyClosed`] once the connection is over.
    #[inline]
    pub fn write(&mut self, msg: Message) -> Result<()> {
        self.write_with(msg, true)
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
        self.write_with(msg, false)
    }

    #[inline]
    fn write_with(&mut self, msg: Message, may_compress: bool) -> Result<()> {
        let (opcode, payload) = match msg {
            Message::Text(text) => (OpCode::Text, text.into_bytes()),
            Message::Binary(data) => (OpCode::Binary, data),
            Message::Ping(data) => (OpCode::Ping, data),
            Message::Pong(data) => (OpCode::Pong, data),
            Message::Close(frame) => return self.close(frame),
        };
        match self.state {
            State::Active => {}
            State::Terminated => return Err(Error::AlreadyClosed),
            _ => return Err(ProtocolError::SendAfterClosing.into()),
        }
        let len = payload.len();
        if opcode.is_control() && len > MAX_CONTROL_PAYLOAD {
            return Err(ProtocolError::ControlFrameTooLong(len as u64).into());
        }
        let compress = may_compress
            && !opcode.is_control()
            && self.compression.as_ref().is_some_and(|c| c.wants(len));
        // Checked before compressing: a refused message must not enter the
        // compression context, so the bound is DEFLATE's worst case.
        let body = if compress {
            compression::compressed_bound(len)
        } else {
            len
        };
        let encoded = encoded_header_len(body as u64, self.role == Role::Client) + body;
        let max = self.config.max_write_buffer_size;
        if encoded > max {
            return Err(CapacityError::MessageTooLarge {
                size: encoded as u64,
                max,
            }
            .into());
        }
        if self.codec.output.len() + encoded > max {
            return Err(Error::WriteBufferFull(rebuild_message(opcode, payload)));
        }
        if compress {
            let compression = self.compression.as_mut().expect("checked above");
            let payload = compression.compress(&payload);
            self.push_frame_rsv1(opcode, payload, true);
        } else {
            self.push_frame(opcode, payload);
        }
        Ok(())
    }

    /// Starts the closing handshake by queueing a close frame (never
    /// refused for lack of room) that is owed a flush like a close reply.
    /// Idempotent while closing.
    ///
    /// # Errors
    ///
    /// - [`ProtocolError::SendForbiddenCloseCode`] for a code the RFC
    ///   forbids on the wire (1005, 1006, 1015, reserved or out-of-range
    ///   codes): nothing is queued and the connection stays open.
    /// - [`Error::AlreadyClosed`] once the connection is over.
    pub fn close(&mut self, frame: Option<CloseFrame>) -> Result<()> {
        // RFC 6455 section 7.4.1: 1005, 1006 and 1015 "MUST NOT be set as a
        // status code in a Close control frame by an endpoint"; the peer
        // fails the connection on those and on unassigned ranges.
        if let Some(code) = frame.as_ref().map(|f| f.code) {
            if !code.is_allowed_on_wire() {
                return Err(ProtocolError::SendForbiddenCloseCode(code.into()).into());
            }
        }
        match self.state {
            State::Active => {
                self.push_frame(OpCode::Close, encode_close(frame.as_ref()));
                self.state = State::ClosedByUs;
                self.pending_pong = None;
                // No data can follow a close, so holding it back gains
                // nothing, and the peer's reply waits on it.
                self.flush_owed = true;
                Ok(())
            }
            // Our reply echoes the peer's code; it is already queued.
            State::ClosedByPeer | State::ClosedByUs | State::CloseAcknowledged => Ok(()),
            State::Terminated => Err(Error::AlreadyClosed),
        }
    }

    // ----- outputs -----

    /// Parses the next message from the received bytes; `Ok(None)` means
    /// more bytes are needed (or, while closing, that the out buffer must be
    /// drained first).
    ///
    /// Pings queue a pong and closes queue the reply; both are handed to
    /// the caller too.
    ///
    /// # Errors
    ///
    /// A protocol or size violation fails the connection: the error is
    /// returned once, a close frame with its
    /// [`close_code`](Error::close_code) is queued, and later calls return
    /// [`Error::AlreadyClosed`]. After a clean closing handshake and once
    /// the out buffer is drained: [`Error::ConnectionClosed`] once, then
    /// [`Error::AlreadyClosed`].
    pub fn next_message(&mut self) -> Result<Option<Message>> {
        match self.state {
            State::Terminated => return Err(Error::AlreadyClosed),
            State::ClosedByPeer | State::CloseAcknowledged => {
                if self.pending_close.is_none() && self.codec.output.is_empty() && !self.flush_owed
                {
                    self.state = State::Terminated;
                    return Err(Error::ConnectionClosed);
                }
                return Ok(None);
            }
            State::Active | State::ClosedByUs => {}
        }
        self.read_frames().map_err(|e| self.fail(e))
    }

    /// Whether the connection still expects bytes from the peer.
    pub fn wants_input(&self) -> bool {
        self.state.can_receive()
    }

    /// Whether the closing handshake has completed or the connection failed.
    pub fn is_terminated(&self) -> bool {
        self.state == State::Terminated
    }

    /// Moves a queued pong and close frame into the out buffer (after any
    /// data already there) and marks a flush as owed. Call it at the start of
    /// every read, write and flush.
    ///
    /// While an earlier pong still sits unflushed in the out buffer, a newer
    /// one stays queued (replacing older queued ones): a peer that pings
    /// without reading cannot grow the buffer.
    #[inline]
    pub fn prepare_output(&mut self) {
        // Nearly every call finds nothing queued.
        if self.pending_pong.is_some() || self.pending_close.is_some() {
            self.move_queued_frames();
        }
    }

    fn move_queued_frames(&mut self) {
        if self.pending_close.is_some() && self.flush_owed {
            // The close frame goes now; a pong may not follow it.
            self.pending_pong = None;
        }
        if !self.flush_owed {
            if let Some(payload) = self.pending_pong.take() {
                if self.state.answers_pings() {
                    self.push_frame(OpCode::Pong, payload);
                    self.flush_owed = true;
                }
            }
        }
        if let Some(frame) = self.pending_close.take() {
            let frame = frame.map(|code| CloseFrame::new(code, ""));
            self.push_frame(OpCode::Close, encode_close(frame.as_ref()));
            self.flush_owed = true;
            if self.state == State::ClosedByPeer {
                self.state = State::CloseAcknowledged;
            }
        }
    }

    /// Whether a pong or close frame is queued and not yet in the out buffer.
    pub fn has_pending_system_frame(&self) -> bool {
        self.pending_pong.is_some() || self.pending_close.is_some()
    }

    /// Whether the out buffer holds a pong or close frame the driver must
    /// flush once it has written the buffer out.
    pub fn flush_owed(&self) -> bool {
        self.flush_owed
    }

    /// The driver wrote the whole out buffer and flushed the socket. If
    /// [`has_pending_system_frame`](Self::has_pending_system_frame) is still
    /// true, call [`prepare_output`](Self::prepare_output) and flush again.
    pub fn on_flushed(&mut self) {
        if self.codec.output.is_empty() {
            self.flush_owed = false;
            // A flushed burst is where a connection may go idle: a task
            // that only writes never waits in a read to release buffers.
            self.codec.output.release_if_drained();
            if let Some(compression) = self.compression.as_mut() {
                compression.release_idle();
            }
        }
    }

    /// The driver is about to wait for the peer (a read found no data, or
    /// a blocking read is next): a drained receive buffer, and a drained out
    /// buffer larger than 64 KiB, are given back, so an idle connection
    /// holds almost no memory. (A flush gives back the out buffer too.)
    /// While messages flow, both allocations are kept and reused.
    #[inline]
    pub fn on_read_wait(&mut self) {
        self.codec.input.release_if_drained();
        self.codec.output.release_if_drained();
    }

    /// Bytes in the out buffer.
    pub fn output_len(&self) -> usize {
        self.codec.output.len()
    }

    /// Whether `write` has filled the out buffer to `write_buffer_size`, at
    /// which point the driver writes it out (without flushing).
    pub fn should_write_out(&self) -> bool {
        !self.codec.output.is_empty() && self.codec.output.len() >= self.config.write_buffer_size
    }

    /// The first contiguous slice of pending output.
    pub fn output_chunk(&self) -> &[u8] {
        self.codec.output.chunk()
    }

    /// How many slices the pending output occupies.
    pub fn output_chunk_count(&self) -> usize {
        self.codec.output.chunk_count()
    }

    /// Fills `dst` with the pending output slices, for a vectored write;
    /// returns how many were filled.
    pub fn output_chunks<'a>(&'a self, dst: &mut [IoSlice<'a>]) -> usize {
        self.codec.output.slices(dst)
    }

    /// The socket accepted `n` bytes of pending output.
    ///
    /// # Panics
    ///
    /// If `n` exceeds [`output_len`](Self::output_len).
    pub fn advance_output(&mut self, n: usize) {
        self.codec.output.advance(n);
    }

    // ----- internals -----

    #[inline]
    fn push_frame(&mut self, opcode: OpCode, payload: Bytes) {
        self.push_frame_rsv1(opcode, payload, false);
    }

    #[inline]
    fn push_frame_rsv1(&mut self, opcode: OpCode, payload: Bytes, rsv1: bool) {
        let mut header = FrameHeader::new(opcode, payload.len() as u64);
        header.rsv1 = rsv1;
        if self.role == Role::Client {
            header.mask = Some(rand::random());
        }
        self.codec.output.push_frame(&header, payload);
    }

    /// Fails the connection for `error`: queue the close frame its code
    /// calls for (unless we already sent one) and stop reading.
    fn fail(&mut self, error: Error) -> Error {
        if let Some(code) = error.close_code() {
            if self.state == State::Active {
                self.pending_close = Some(Some(code));
            }
            self.pending_pong = None;
            self.state = State::Terminated;
        }
        error
    }

    fn read_frames(&mut self) -> Result<Option<Message>> {
        loop {
            let header = match self.codec.input.current_header() {
                Some(header) => header,
                None => {
                    let (header, header_len) = match self.codec.input.peek_header()? {
                        HeaderParse::Partial => return Ok(None),
                        HeaderParse::Complete(header, len) => (header, len),
                    };
                    self.check_header(&header)?;
                    if let Some(whole) = self.codec.input.unmask_whole(&header, header_len) {
                        let plain_data = !header.opcode.is_control() && self.inflating.is_none();
                        let payload = self.codec.input.whole_payload(&whole);
                        if plain_data {
                            if let Some(text) = self.text.as_mut() {
                                // ASCII is valid UTF-8 when no character
                                // was cut off by the previous fragment.
                                if !(whole.ascii && text.at_char_boundary()) {
                                    text.feed(payload).map_err(|_| ProtocolError::InvalidUtf8)?;
                                }
                            }
                        }
                        let msg = match self.fragments.as_mut() {
                            Some(fragments) if plain_data => {
                                // Copied straight into the message: no
                                // allocation per fragment.
                                fragments.push(payload, header.fin, self.config.message_limit());
                                self.codec.input.skip_whole(whole);
                                self.finish_fragment(header.fin)?
                            }
                            _ => {
                                let payload = self.codec.input.take_whole(whole);
                                self.on_frame(header, payload)?
                            }
                        };
                        match msg {
                            Some(msg) => return Ok(Some(msg)),
                            None => continue,
                        }
                    }
                    self.codec.input.begin(header, header_len);
                    header
                }
            };
            let fresh = self.codec.input.unmask_new();
            // A compressed message is validated after inflating.
            if !header.opcode.is_control() && self.inflating.is_none() {
                if let Some(text) = self.text.as_mut() {
                    // Fail fast: check text as it arrives, not when it ends.
                    text.feed(&self.codec.input.payload_so_far()[fresh])
                        .map_err(|_| ProtocolError::InvalidUtf8)?;
                }
            }
            let Some((header, payload)) = self.codec.input.take_frame() else {
                return Ok(None);
            };
            if let Some(msg) = self.on_frame(header, payload)? {
                return Ok(Some(msg));
            }
        }
    }

    /// Enforces what RFC 6455 requires of a receiver before a byte of the
    /// payload is buffered.
    fn check_header(&mut self, header: &FrameHeader) -> Result<()> {
        // RFC 7692 section 6: RSV1 marks the first frame of a compressed
        // message, and only that, once permessage-deflate is negotiated.
        let starts_message = matches!(header.opcode, OpCode::Text | OpCode::Binary);
        let compressed_start = header.rsv1 && starts_message && self.compression.is_some();
        // RFC 6455 5.2: "MUST be 0 unless an extension is negotiated that
        // defines meanings for non-zero values."
        if (header.rsv1 && !compressed_start) || header.rsv2 || header.rsv3 {
            return Err(ProtocolError::NonZeroReservedBits.into());
        }
        // 5.1: "a server MUST close the connection upon receiving a frame
        // that is not masked" / "a client MUST close a connection if it
        // detects a masked frame."
        match (self.role, header.mask) {
            (Role::Server, None) if !self.config.accept_unmasked_frames => {
                return Err(ProtocolError::UnmaskedFrameFromClient.into());
            }
            (Role::Client, Some(_)) => return Err(ProtocolError::MaskedFrameFromServer.into()),
            _ => {}
        }
        if header.opcode.is_control() {
            // 5.5: "All control frames MUST have a payload length of 125
            // bytes or less and MUST NOT be fragmented."
            if !header.fin {
                return Err(ProtocolError::FragmentedControlFrame.into());
            }
            if header.payload_len > MAX_CONTROL_PAYLOAD as u64 {
                return Err(ProtocolError::ControlFrameTooLong(header.payload_len).into());
            }
            return Ok(());
        }
        let so_far = match (header.opcode, &mut self.fragments) {
            (OpCode::Continuation, None) => {
                return Err(ProtocolError::UnexpectedContinuation.into());
            }
            (OpCode::Continuation, Some(f)) => {
                // Bytes are bounded by max_message_size; frames cost work
                // too, and empty ones would let a message go on forever.
                if let Some(max) = self.config.max_fragments {
                    if f.frames() >= max {
                        return Err(CapacityError::TooManyFragments { max }.into());
                    }
                }
                f.count_frame();
                f.len() as u64
            }
            (opcode, Some(_)) => return Err(ProtocolError::ExpectedContinuation(opcode).into()),
            (_, None) => 0,
        };
        if header.payload_len > usize::MAX as u64 {
            // Only reachable on 32-bit targets without limits.
            let max = usize::MAX;
            return Err(CapacityError::FrameTooLarge {
                size: header.payload_len,
                max,
            }
            .into());
        }
        if let Some(max) = self.config.max_frame_size {
            if header.payload_len > max as u64 {
                return Err(CapacityError::FrameTooLarge {
                    size: header.payload_len,
                    max,
                }
                .into());
            }
        }
        let compressed = if starts_message {
            compressed_start
        } else {
            self.inflating.is_some()
        };
        // A compressed message is limited by what it inflates to, checked
        // while inflating; its compressed frames by max_frame_size above.
        if let (Some(max), false) = (self.config.max_message_size, compressed) {
            let size = so_far.saturating_add(header.payload_len);
            if size > max as u64 {
                return Err(CapacityError::MessageTooLarge { size, max }.into());
            }
        }
        match header.opcode {
            OpCode::Text => self.text = Some(Utf8Stream::default()),
            OpCode::Binary => self.text = None,
            _ => {}
        }
        if starts_message && !header.fin {
            self.fragments = Some(Box::new(Fragments::new(header.opcode)));
        }
        // A message can only start once the previous one is complete, so
        // `inflating` is already `None` here unless this one is compressed.
        debug_assert!(!starts_message || self.inflating.is_none());
        if compressed_start {
            self.inflating = Some(BytesMut::new());
        }
        Ok(())
    }

    /// One frame of a compressed message: inflate it (bounded by
    /// `max_message_size`), validate new text as it appears.
    fn on_compressed_frame(
        &mut self,
        header: FrameHeader,
        payload: Bytes,
    ) -> Result<Option<Message>> {
        let mut inflated = self.inflating.take().expect("a compressed message is open");
        let before = inflated.len();
        let max = self.config.message_limit();
        let text = self.text.is_some();
        let compression = self.compression.as_mut().expect("negotiated");
        compression.inflate(&payload, header.fin, &mut inflated, max, text)?;
        if let Some(validator) = self.text.as_mut() {
            validator
                .feed(&inflated[before..])
                .map_err(|_| ProtocolError::InvalidUtf8)?;
        }
        if !header.fin {
            self.inflating = Some(inflated);
            return Ok(None);
        }
        let opcode = match self.fragments.take() {
            Some(fragments) => fragments.opcode(),
            None => header.opcode,
        };
        self.complete(opcode, inflated.freeze()).map(Some)
    }

    /// After a fragment of an uncompressed message was appended: the
    /// message, if that was its last frame.
    fn finish_fragment(&mut self, fin: bool) -> Result<Option<Message>> {
        if !fin {
            return Ok(None);
        }
        let fragments = self.fragments.take().expect("a fragmented message is open");
        self.complete(fragments.opcode(), fragments.finish())
            .map(Some)
    }

    fn on_frame(&mut self, header: FrameHeader, payload: Bytes) -> Result<Option<Message>> {
        if self.inflating.is_some() && !header.opcode.is_control() {
            return self.on_compressed_frame(header, payload);
        }
        let msg = match header.opcode {
            OpCode::Text | OpCode::Binary if header.fin => self.complete(header.opcode, payload)?,
            OpCode::Text | OpCode::Binary | OpCode::Continuation => {
                let limit = self.config.message_limit();
                let fragments = self.fragments.as_mut().expect("opened with the header");
                fragments.push(&payload, header.fin, limit);
                return self.finish_fragment(header.fin);
            }
            OpCode::Ping => {
                if self.state.answers_pings() {
                    self.pending_pong = Some(payload.clone());
                }
                Message::Ping(payload)
            }
            OpCode::Pong => Message::Pong(payload),
            OpCode::Close => {
                let frame = parse_close(payload)?;
                match self.state {
                    State::Active => {
                        // Echo the code; a reply to a close without one is
                        // empty too.
                        self.pending_close = Some(frame.as_ref().map(|f| f.code));
                        self.state = State::ClosedByPeer;
                    }
                    _ => self.state = State::CloseAcknowledged,
                }
                Message::Close(frame)
            }
        };
        Ok(Some(msg))
    }

    fn complete(&mut self, opcode: OpCode, payload: Bytes) -> Result<Message> {
        if opcode == OpCode::Binary {
            return Ok(Message::Binary(payload));
        }
        let mut text = self.text.take().expect("text frames start a validator");
        text.finish().map_err(|_| ProtocolError::InvalidUtf8)?;
        Ok(Message::Text(Utf8Bytes::from_validated(payload)))
    }
}

/// The message a refused write gives back: what the caller passed.
fn rebuild_message(opcode: OpCode, payload: Bytes) -> Message {
    match opcode {
        // It came in as a text message, so it is valid UTF-8.
        OpCode::Text => Message::Text(Utf8Bytes::from_validated(payload)),
        OpCode::Ping => Message::Ping(payload),
        OpCode::Pong => Message::Pong(payload),
        _ => Message::Binary(payload),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_keeps_its_out_buffer_until_the_flush() {
        let mut ctx = WebSocketContext::new(Role::Server, Config::default());
        let payload = Bytes::from(vec![b'x'; 1000]);
        for _ in 0..100 {
            ctx.write(Message::Binary(payload.clone())).unwrap();
        }
        // Written out mid-burst (the buffer reached its size): kept.
        ctx.advance_output(ctx.output_len());
        ctx.write(Message::Binary(payload.clone())).unwrap();
        assert!(ctx.codec.output.tail_capacity() > 0, "still allocated");
        // Written out and flushed: the connection may go idle.
        ctx.advance_output(ctx.output_len());
        ctx.on_flushed();
        assert_eq!(ctx.codec.output.tail_capacity(), 0);
    }

    #[test]
    fn an_idle_connection_stays_small() {
        // Every parked connection holds one of these; buffers are released
        // when drained, so this struct is most of its memory.
        let size = std::mem::size_of::<WebSocketContext>();
        println!("WebSocketContext: {size} bytes");
        assert!(size <= 400, "{size} bytes");
    }
}
