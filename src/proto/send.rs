//! The send direction: messages in, bytes out, for a whole connection
//! ([`WebSocketContext`](crate::WebSocketContext)) and for the sending half split off one
//! ([`SendHalf`](crate::SendHalf)) alike.

use bytes::{Bytes, BytesMut};

use crate::codec::OutBuffer;
use crate::config::Role;
use crate::config::Settings;
use crate::error::{CapacityError, Detail, Error, ProtocolError, Result};
use crate::frame::MAX_CONTROL_PAYLOAD;
use crate::frame::{Control, Frame};
use crate::frame::{FrameHeader, MAX_HEADER_LEN, OpCode, apply_mask, encoded_header_len, mask_key};
use crate::message::{CloseFrame, Message};
use crate::prepared::PreparedMessage;
use crate::proto::close_payload::{encode_close, parse_close};
use crate::proto::compression;
use crate::proto::lifecycle::Lifecycle;
use crate::proto::negotiated::Negotiated;
use crate::proto::owed::Owed;
use crate::proto::state::State;
use crate::proto::timers::Timer;
use crate::utf8_bytes::Utf8Bytes;

/// The send path of a connection, lent for one command: by a
/// [`WebSocketContext`](crate::WebSocketContext) or a [`SendHalf`](crate::SendHalf), each of which
/// owns the pieces. Everything that encodes a message is here, once.
#[derive(Debug)]
pub(super) struct Sending<'a> {
    role: Role,
    settings: &'a Settings,
    output: &'a mut OutBuffer,
    owed: &'a mut Owed,
    lifecycle: &'a mut Lifecycle,
    negotiated: &'a mut Negotiated,
}

impl<'a> Sending<'a> {
    /// Lends the send path made of these pieces.
    #[inline]
    pub(super) fn new(
        role: Role,
        settings: &'a Settings,
        output: &'a mut OutBuffer,
        owed: &'a mut Owed,
        lifecycle: &'a mut Lifecycle,
        negotiated: &'a mut Negotiated,
    ) -> Self {
        Self {
            role,
            settings,
            output,
            owed,
            lifecycle,
            negotiated,
        }
    }

    /// A message that is not the common write (see [`write`]): checked
    /// whole, compressed if negotiated and `may_compress`.
    fn write_checked(mut self, opcode: OpCode, payload: Bytes, may_compress: bool) -> Result<()> {
        let len = payload.len();
        self.check_sendable(opcode, len)?;
        let compress = may_compress && self.wants_compression(opcode, len);
        // Checked before compressing: a refused message must not enter the
        // compression context, so the bound is DEFLATE's worst case.
        let body = if compress {
            compression::compressed_bound(len)
        } else {
            len
        };
        if !self.has_room_for(body)? {
            self.lifecycle.observe_write_buffer_full();
            return Err(Error::WriteBufferFull(Box::new(rebuild_message(
                opcode, payload,
            ))));
        }
        if compress {
            let compression = self.negotiated.compression_mut().expect("checked above");
            let payload = compression.compress(&payload);
            self.push_frame_rsv1(opcode, payload, true);
        } else {
            self.push_frame(opcode, payload);
        }
        if !opcode.is_control() {
            self.lifecycle.count_sent(len);
        }
        Ok(())
    }

    /// See [`WebSocketContext::write_prepared`](crate::WebSocketContext::write_prepared).
    pub(super) fn write_prepared(&mut self, msg: &PreparedMessage) -> Result<()> {
        self.encode_prepared(msg)?;
        if matches!(msg.message(), Message::Text(_) | Message::Binary(_)) {
            self.lifecycle.count_sent(msg.len());
        }
        Ok(())
    }

    fn encode_prepared(&mut self, msg: &PreparedMessage) -> Result<()> {
        let opcode = msg.opcode();
        match msg.message() {
            Message::Close(frame) => return self.close(frame.clone()),
            Message::Frame(frame) => {
                return self.write_raw(frame.clone());
            }
            _ => {}
        }
        let len = msg.len();
        self.check_sendable(opcode, len)?;
        let compression = self
            .negotiated
            .compression()
            .filter(|_| self.wants_compression(opcode, len));
        let Some(compression) = compression else {
            if !self.has_room_for(len)? {
                self.lifecycle.observe_write_buffer_full();
                return Err(refused_prepared(msg));
            }
            match self.role {
                Role::Server => self.output.push_encoded(msg.frame()),
                Role::Client => self.push_frame(opcode, msg.payload().clone()),
            }
            return Ok(());
        };
        let Some(key) = compression.shared_key() else {
            // Context takeover: the bytes depend on this connection's
            // history, so it compresses the message itself.
            if !self.has_room_for(compression::compressed_bound(len))? {
                self.lifecycle.observe_write_buffer_full();
                return Err(refused_prepared(msg));
            }
            let compression = self.negotiated.compression_mut().expect("checked above");
            let payload = compression.compress(msg.payload());
            self.push_frame_rsv1(opcode, payload, true);
            return Ok(());
        };
        // The shared frame touches no state of this connection, so it may be
        // computed before the room check (and kept for the retry).
        let frame = msg.compressed_frame(key, |payload| compression.compress_shared(key, payload));
        let header_len = unmasked_header_len(&frame);
        if !self.has_room_for(frame.len() - header_len)? {
            self.lifecycle.observe_write_buffer_full();
            return Err(refused_prepared(msg));
        }
        match self.role {
            Role::Server => self.output.push_encoded(&frame),
            Role::Client => self.push_frame_rsv1(opcode, frame.slice(header_len..), true),
        }
        Ok(())
    }

    /// Queues a raw frame ([`Message::Frame`]) as it is, but masked with a
    /// fresh key by a client and unmasked by a server. A raw close frame
    /// is [`close`](Self::close) with its payload.
    fn write_raw(&mut self, frame: Frame) -> Result<()> {
        let (mut header, payload) = frame.into_parts();
        let control = match header.opcode {
            OpCode::Control(Control::Close) => {
                return self.close(parse_close(payload)?);
            }
            OpCode::Control(_) => true,
            OpCode::Data(_) => false,
        };
        self.check_sendable(
            if control {
                OpCode::Ping
            } else {
                OpCode::Binary
            },
            payload.len(),
        )?;
        if control && !header.is_final {
            return Err(ProtocolError::FragmentedControlFrame.into());
        }
        if !self.has_room_for(payload.len())? {
            self.lifecycle.observe_write_buffer_full();
            let frame = Frame::from_payload(header, payload);
            return Err(Error::WriteBufferFull(Box::new(Message::Frame(frame))));
        }
        header.mask = (self.role == Role::Client).then(mask_key);
        header.payload_len = payload.len() as u64;
        let mut head = [0u8; MAX_HEADER_LEN];
        let head_len = header.encode(&mut head);
        let mut encoded = BytesMut::with_capacity(head_len + payload.len());
        encoded.extend_from_slice(&head[..head_len]);
        encoded.extend_from_slice(&payload);
        if let Some(mask) = header.mask {
            apply_mask(&mut encoded[head_len..], mask);
        }
        self.output.push_encoded(&encoded.freeze());
        Ok(())
    }

    /// Whether a data or control message of `len` bytes may be sent now.
    #[inline]
    fn check_sendable(&self, opcode: OpCode, len: usize) -> Result<()> {
        match self.lifecycle.state() {
            State::Active => {}
            State::Terminated => return Err(Error::AlreadyClosed),
            _ => return Err(ProtocolError::SendAfterClosing.into()),
        }
        if opcode.is_control() && len > MAX_CONTROL_PAYLOAD {
            return Err(ProtocolError::ControlFrameTooBig.into());
        }
        Ok(())
    }

    /// Whether a message of `len` bytes goes out compressed.
    #[inline]
    fn wants_compression(&self, opcode: OpCode, len: usize) -> bool {
        !opcode.is_control() && self.negotiated.compression().is_some_and(|c| c.wants(len))
    }

    /// Whether a frame with `body` payload bytes fits in the out buffer now
    /// (`false`: flush first); an error if it never can.
    #[inline]
    fn has_room_for(&self, body: usize) -> Result<bool> {
        let encoded = encoded_header_len(body as u64, self.role == Role::Client) + body;
        let max = self.settings.get_max_write_buffer_size();
        if encoded > max {
            return Err(CapacityError::MessageTooLong {
                size: encoded,
                max_size: max,
            }
            .into());
        }
        Ok(self.output.len() + encoded <= max)
    }

    /// Queues our close frame: see [`WebSocketContext::close`](crate::WebSocketContext::close).
    pub(super) fn close(&mut self, frame: Option<CloseFrame>) -> Result<()> {
        // RFC 6455 section 7.4.1: 1005, 1006 and 1015 "MUST NOT be set as a
        // status code in a Close control frame by an endpoint"; the peer
        // fails the connection on those and on unassigned ranges.
        if let Some(code) = frame.as_ref().map(|f| f.code) {
            if !code.is_allowed_on_wire() {
                return Err(Detail::SendForbiddenCloseCode(code.into()).into());
            }
        }
        match self.lifecycle.state() {
            State::Active => {
                self.lifecycle.close_sent(frame.as_ref().map(|f| f.code))?;
                self.push_frame(OpCode::Close, encode_close(frame.as_ref()));
                self.owed.forget_pong();
                // No data can follow a close, so holding it back gains
                // nothing, and the peer's reply waits on it.
                self.owed.owe_flush();
                Ok(())
            }
            // Our reply echoes the peer's code; it is already queued.
            State::ClosedByPeer | State::ClosedByUs | State::CloseAcknowledged => Ok(()),
            State::Terminated => Err(Error::AlreadyClosed),
        }
    }

    /// Moves a queued pong, keepalive ping and close frame into the out
    /// buffer (after any data already there) and marks a flush as owed.
    ///
    /// While an earlier pong still sits unflushed in the out buffer, a newer
    /// one stays queued (replacing older queued ones): a peer that pings
    /// without reading cannot grow the buffer.
    /// The keepalive ping's payload comes from the `timer`, which counts
    /// it as sent. Call it only when something is queued
    /// ([`Owed::has_queued`]): nearly every poll finds nothing.
    #[cold]
    pub(super) fn move_queued_frames(&mut self, timer: &mut Timer) {
        if self.owed.close_queued() && self.owed.flush_owed() {
            // The close frame goes now; a pong may not follow it.
            self.owed.forget_pong();
        }
        if self.owed.take_ping() && self.lifecycle.state() == State::Active {
            let payload = timer.next_keepalive_payload();
            self.push_frame(OpCode::Ping, payload);
            self.owed.owe_flush();
        }
        if !self.owed.flush_owed() {
            if let Some(payload) = self.owed.take_pong() {
                if self.lifecycle.state().answers_pings() {
                    self.push_frame(OpCode::Pong, payload);
                    self.owed.owe_flush();
                }
            }
        }
        if let Some(frame) = self.owed.take_close() {
            let frame = frame.map(|code| CloseFrame::new(code, ""));
            self.push_frame(OpCode::Close, encode_close(frame.as_ref()));
            self.owed.owe_flush();
            self.lifecycle.close_frame_queued();
        }
    }

    /// The driver wrote the whole out buffer and flushed the socket: a
    /// flushed burst is where a connection may go idle (a task that only
    /// writes never waits in a read to release buffers).
    #[inline]
    pub(super) fn flushed(self) {
        self.owed.flushed();
        if self.output.is_empty() {
            self.owed.flush_paid();
            self.output.release_if_drained();
            if let Some(compression) = self.negotiated.compression_mut() {
                compression.release_idle();
            }
        }
        self.lifecycle.report_counts();
    }

    #[inline]
    pub(super) fn push_frame(&mut self, opcode: OpCode, payload: Bytes) {
        self.push_frame_rsv1(opcode, payload, false);
    }

    #[inline]
    fn push_frame_rsv1(&mut self, opcode: OpCode, payload: Bytes, rsv1: bool) {
        push_frame(self.role, self.output, opcode, payload, rsv1);
    }
}

/// The side of a connection that sends: a whole context, or the send
/// half split off one. The common write reaches its pieces directly;
/// anything else borrows the whole send path ([`Sending`]).
pub(super) trait SendSide {
    /// The send path, lent for one command.
    fn sending(&mut self) -> Sending<'_>;

    /// What the common write touches: the role, the settings, the out
    /// buffer, the lifecycle, and whether messages are compressed.
    fn common_write_parts(&mut self) -> (Role, &Settings, &mut OutBuffer, &mut Lifecycle, bool);
}

/// Encodes `msg` into the out buffer of `side`, compressed if negotiated
/// and `may_compress`: see [`WebSocketContext::write`](crate::WebSocketContext::write).
///
/// Nearly every write is an open connection, a data message that is not
/// compressed, and room in the buffer: that write lends nothing (which
/// would cost its stores on every message) and goes straight into the
/// buffer. Anything else (control frames, compression, a full buffer,
/// closing) takes the checked path of [`Sending`].
#[inline]
pub(super) fn write(side: &mut impl SendSide, msg: Message, may_compress: bool) -> Result<()> {
    let (opcode, payload) = match msg {
        Message::Text(text) => (OpCode::Text, text.into_bytes()),
        Message::Binary(data) => (OpCode::Binary, data),
        Message::Ping(data) => (OpCode::Ping, data),
        Message::Pong(data) => (OpCode::Pong, data),
        Message::Close(frame) => return side.sending().close(frame),
        Message::Frame(frame) => return side.sending().write_raw(frame),
    };
    let (role, settings, output, lifecycle, compressing) = side.common_write_parts();
    let uncompressed = !may_compress || !compressing;
    if lifecycle.state() == State::Active && !opcode.is_control() && uncompressed {
        let len = payload.len();
        let encoded = encoded_header_len(len as u64, role == Role::Client) + len;
        if output.len() + encoded <= settings.get_max_write_buffer_size() {
            push_frame(role, output, opcode, payload, false);
            lifecycle.count_sent(len);
            return Ok(());
        }
    }
    side.sending().write_checked(opcode, payload, may_compress)
}

/// Encodes one frame of `payload` into `output`, masked by a client.
#[inline]
fn push_frame(role: Role, output: &mut OutBuffer, opcode: OpCode, payload: Bytes, rsv1: bool) {
    let mut header = FrameHeader::new(opcode, payload.len() as u64);
    header.rsv1 = rsv1;
    if role == Role::Client {
        header.mask = Some(mask_key());
    }
    output.push_frame(&header, payload);
}

/// The header length of an encoded, unmasked frame.
fn unmasked_header_len(frame: &[u8]) -> usize {
    match frame[1] & 0x7f {
        126 => 4,
        127 => 10,
        _ => 2,
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

/// A full buffer's answer to a prepared message: the message it was
/// prepared from, as `write` hands back its own (a clone that shares the
/// payload's bytes).
fn refused_prepared(msg: &PreparedMessage) -> Error {
    Error::WriteBufferFull(Box::new(msg.message().clone()))
}
