//! The receive direction of [`WebSocketContext`]: frames in, messages out.

use bytes::Bytes;

use super::WebSocketContext;
use crate::codec::FrameCheck;
use crate::config::{Role, Settings};
use crate::error::{CapacityError, Detail, Error, ProtocolError, Result};
use crate::frame::MAX_CONTROL_PAYLOAD;
use crate::frame::{FrameHeader, OpCode};
use crate::message::Message;
use crate::proto::close_payload::parse_close;
use crate::proto::lifecycle::RateLimitAction;
#[cfg(doc)]
use crate::proto::negotiated::Negotiated;
use crate::proto::rate_limit::Admission;
use crate::proto::receive_path::ReceivePath;
use crate::proto::seam::Next;
use crate::proto::state::State;
use crate::utf8_bytes::Utf8Bytes;

impl WebSocketContext {
    // ----- outputs -----

    /// Parses the next message from the received bytes; `Ok(None)` means
    /// more bytes are needed (or, while closing, that the out buffer must be
    /// drained first).
    ///
    /// Pings queue a pong and closes queue the reply; both are handed to
    /// the caller too. Pongs are handed over, except one that answers the
    /// context's own keepalive ping: the caller never sent that ping, so
    /// its pong is consumed here (it still counts as hearing from the
    /// peer). The rules for telling the two apart are in `timers.rs`.
    ///
    /// A rate limit ([`Config::rate_limit`](crate::Config::rate_limit))
    /// does not apply here: it needs the time, and applies to the reads
    /// [`poll`](Self::poll) drives. A message such a read held back is
    /// handed over first, so the order is kept.
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
        if let Some(held) = self.take_held_message() {
            return Ok(Some(held));
        }
        match self.parse_next_message()? {
            Next::Message(msg) => Ok(Some(msg)),
            _ => Ok(None),
        }
    }

    /// [`next_message`](Self::next_message) without a held message to
    /// hand over first: what the rate limit's own reads call.
    /// [`Next::Message`] or, for "no message now", [`Next::Receive`].
    ///
    /// The message is built once, in the `Result<Next>` the read's
    /// [`poll`](Self::poll) returns: an `Option<Message>` here would be
    /// moved into that layout on every read.
    pub(super) fn parse_next_message(&mut self) -> Result<Next> {
        match self.lifecycle.state() {
            State::Terminated => return Err(Error::AlreadyClosed),
            State::ClosedByPeer | State::CloseAcknowledged => {
                if !self.owed.close_queued() && self.output.is_empty() && !self.owed.flush_owed() {
                    self.lifecycle.completed();
                    return Err(Error::ConnectionClosed);
                }
                return Ok(Next::Receive);
            }
            State::Active | State::ClosedByUs => {}
        }
        self.read_frames().map_err(|e| self.fail(e))
    }

    /// [`parse_next_message`](Self::parse_next_message), within the rate
    /// limit. Without one, that is a single test of a pointer that is
    /// usually null.
    #[inline]
    pub(super) fn next_message_within_limit(&mut self) -> Result<Next> {
        if self.negotiated.is_empty() {
            return self.parse_next_message();
        }
        self.next_message_limited()
    }

    /// [`Next::Receive`] with a message held back when throttled: see
    /// [`Negotiated::is_throttled`]. Out of line: it must not weigh on the
    /// common path, which has no limit.
    #[inline(never)]
    fn next_message_limited(&mut self) -> Result<Next> {
        let terminated = self.lifecycle.is_terminated();
        let Some(limiter) = self.negotiated.rate_limiter_mut() else {
            return self.parse_next_message();
        };
        let (msg, was_held) = match limiter.take_held() {
            // A failed connection hands nothing more over.
            Some(_) if terminated => return self.parse_next_message(),
            Some(msg) => (msg, true),
            None => match self.parse_next_message()? {
                Next::Message(msg) => (msg, false),
                other => return Ok(other),
            },
        };
        let limiter = self.negotiated.rate_limiter_mut().expect("checked above");
        match limiter.admit_or_hold(msg) {
            Admission::Admitted(msg) => Ok(Next::Message(msg)),
            Admission::Held => {
                // We stop reading: the peer's silence from now on is ours.
                self.timer.heard_if(true);
                if !was_held {
                    self.lifecycle
                        .observe_rate_limit(RateLimitAction::Throttled);
                }
                Ok(Next::Receive)
            }
            Admission::Exceeded(error) => {
                self.lifecycle.observe_rate_limit(RateLimitAction::Closed);
                Err(self.fail(error))
            }
        }
    }

    /// The message a throttle held back, if any (not once the connection
    /// failed): for [`next_message`](Self::next_message), to which the
    /// limit does not apply.
    #[inline]
    fn take_held_message(&mut self) -> Option<Message> {
        if self.negotiated.is_empty() || self.lifecycle.is_terminated() {
            return None;
        }
        self.negotiated.take_held()
    }

    /// Whether the closing handshake has completed or the connection failed.
    /// A read may still have something to report (see
    /// [`is_read_over`](Self::is_read_over)).
    pub fn is_terminated(&self) -> bool {
        self.lifecycle.is_terminated()
    }

    /// Whether reads are over: the connection ended, a read reported how
    /// (the error that failed it, or [`Error::ConnectionClosed`]), and
    /// nothing is left to send or wait for on the way. Every read from now
    /// on returns [`Error::AlreadyClosed`]: a stream of messages over this
    /// context has ended (`FusedStream::is_terminated`).
    pub fn is_read_over(&self) -> bool {
        self.lifecycle.is_terminated()
            && !self.receiving.holds_result()
            && self.lifecycle.ending_step().is_none()
            && self.owed.delivery(&self.output).is_none()
    }

    /// Fails the connection for `error`: queue the close frame its code
    /// calls for (unless we already sent one) and stop reading.
    pub(super) fn fail(&mut self, error: Error) -> Error {
        if let Some(code) = error.close_code() {
            self.lifecycle.observe_protocol_error(&error);
            if self.lifecycle.state() == State::Active {
                self.owed.owe_close(Some(code));
            }
            self.owed.forget_pong();
            self.lifecycle.failed(code);
        }
        error
    }

    fn read_frames(&mut self) -> Result<Next> {
        let negotiated = self.negotiated.compression().is_some();
        loop {
            let mut check = HeaderAndText {
                role: self.role,
                settings: &self.settings,
                negotiated,
                receiving: &mut self.receiving,
            };
            let Some(frame) = self.input.next_frame(&mut check)? else {
                // The burst is over: what it counted goes to the recorder.
                self.lifecycle.report_counts();
                return Ok(Next::Receive);
            };
            let header = frame.header();
            let data = !header.opcode.is_control();
            let msg = if data && self.receiving.is_compressed() {
                let payload = frame.take();
                self.on_compressed_frame(header, payload)?
            } else if let (true, Some(fragments)) = (data, self.receiving.fragments_mut()) {
                // Copied straight from the receive buffer into the message:
                // no allocation per fragment.
                fragments.push(
                    frame.payload(),
                    header.is_final,
                    self.settings.message_limit(),
                );
                frame.skip();
                self.finish_fragment(header.is_final)?
            } else {
                let payload = frame.take();
                self.on_frame(header, payload)?
            };
            if let Some(msg) = msg {
                return Ok(Next::Message(msg));
            }
        }
    }

    /// One frame of a compressed message: inflate it (bounded by
    /// `max_message_size`), validate new text as it appears.
    fn on_compressed_frame(
        &mut self,
        header: FrameHeader,
        payload: Bytes,
    ) -> Result<Option<Message>> {
        let mut inflated = self.receiving.take_inflating(header.is_final);
        let before = inflated.len();
        let max = self.settings.message_limit();
        let text = self.receiving.is_text();
        let compression = self.negotiated.compression_mut().expect("negotiated");
        compression.inflate(&payload, header.is_final, &mut inflated, max, text)?;
        self.receiving
            .validate_text(&inflated[before..], false)
            .map_err(|_| Error::peer_not_utf8("a text message"))?;
        if !header.is_final {
            self.receiving.keep_inflating(inflated);
            return Ok(None);
        }
        let opcode = match self.receiving.take_fragments() {
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
        let fragments = self
            .receiving
            .take_fragments()
            .expect("a fragmented message is open");
        self.complete(fragments.opcode(), fragments.finish())
            .map(Some)
    }

    /// A control frame, or a data message in one uncompressed frame; `None`
    /// for a frame the caller is not to see (the pong to a keepalive ping).
    fn on_frame(&mut self, header: FrameHeader, payload: Bytes) -> Result<Option<Message>> {
        let msg = match header.opcode {
            OpCode::Text | OpCode::Binary => {
                debug_assert!(
                    header.is_final,
                    "a first fragment opens the fragment buffer"
                );
                self.complete(header.opcode, payload)?
            }
            OpCode::Continuation => {
                unreachable!("the header check opened the message it continues")
            }
            OpCode::Ping => {
                if self.lifecycle.state().answers_pings() {
                    self.owed.owe_pong(payload.clone());
                }
                Message::Ping(payload)
            }
            // Housekeeping the caller never asked for; its bytes already
            // marked the peer as heard from, which is all keepalive needs.
            OpCode::Pong if self.timer.answers_keepalive(&payload) => return Ok(None),
            OpCode::Pong => Message::Pong(payload),
            OpCode::Close => {
                let frame = parse_close(payload)?;
                let code = frame.as_ref().map(|f| f.code);
                if self.lifecycle.close_received(code)? {
                    // Echo the code; a reply to a close without one is
                    // empty too.
                    self.owed.owe_close(code);
                }
                Message::Close(frame)
            }
            // The frame parser refuses reserved opcodes; should one get
            // here, it fails the connection like any other (1002).
            reserved @ (OpCode::Data(_) | OpCode::Control(_)) => {
                return Err(ProtocolError::reserved_opcode(u8::from(reserved)).into());
            }
        };
        Ok(Some(msg))
    }

    // Inlined into the one-frame path: counting (feature `metrics`) must
    // not push it out of line (measured: 30 instructions per message).
    #[inline]
    fn complete(&mut self, opcode: OpCode, payload: Bytes) -> Result<Message> {
        if opcode == OpCode::Binary {
            self.lifecycle
                .count_received(payload.len(), self.input.buffered() == 0);
            return Ok(Message::Binary(payload));
        }
        self.receiving
            .finish_text()
            .map_err(|_| Error::peer_not_utf8("a text message"))?;
        self.lifecycle
            .count_received(payload.len(), self.input.buffered() == 0);
        Ok(Message::Text(Utf8Bytes::from_validated(payload)))
    }
}

/// The context's side of decoding, lent to
/// [`InFrames::next_frame`](crate::codec::InFrames::next_frame): the fields
/// a header is checked against and the message state it opens, everything
/// but the input (which is decoding meanwhile).
struct HeaderAndText<'a> {
    role: Role,
    settings: &'a Settings,
    /// permessage-deflate was negotiated.
    negotiated: bool,
    receiving: &'a mut ReceivePath,
}

impl FrameCheck for HeaderAndText<'_> {
    /// Enforces what RFC 6455 requires of a receiver before a byte of the
    /// payload is buffered.
    #[inline]
    fn header(&mut self, header: &FrameHeader) -> Result<()> {
        // RFC 7692 section 6: RSV1 marks the first frame of a compressed
        // message, and only that, once permessage-deflate is negotiated.
        let starts_message = matches!(header.opcode, OpCode::Text | OpCode::Binary);
        let compressed_start = header.rsv1 && starts_message && self.negotiated;
        // RFC 6455 5.2: "MUST be 0 unless an extension is negotiated that
        // defines meanings for non-zero values."
        if (header.rsv1 && !compressed_start) || header.rsv2 || header.rsv3 {
            return Err(ProtocolError::NonZeroReservedBits.into());
        }
        // 5.1: "a server MUST close the connection upon receiving a frame
        // that is not masked" / "a client MUST close a connection if it
        // detects a masked frame."
        match (self.role, header.mask) {
            (Role::Server, None) if !self.settings.get_accept_unmasked_frames() => {
                return Err(ProtocolError::UnmaskedFrameFromClient.into());
            }
            (Role::Client, Some(_)) => return Err(ProtocolError::MaskedFrameFromServer.into()),
            _ => {}
        }
        if header.opcode.is_control() {
            // 5.5: "All control frames MUST have a payload length of 125
            // bytes or less and MUST NOT be fragmented."
            if !header.is_final {
                return Err(ProtocolError::FragmentedControlFrame.into());
            }
            if header.payload_len > MAX_CONTROL_PAYLOAD as u64 {
                return Err(ProtocolError::ControlFrameTooBig.into());
            }
            return Ok(());
        }
        let so_far = match (header.opcode, self.receiving.fragments_mut()) {
            (OpCode::Continuation, None) => {
                return Err(ProtocolError::UnexpectedContinueFrame.into());
            }
            (OpCode::Continuation, Some(f)) => {
                // Bytes are bounded by max_message_size; frames cost work
                // too, and empty ones would let a message go on forever.
                if let Some(max) = self.settings.get_max_fragments() {
                    if f.frames() >= max {
                        return Err(Detail::TooManyFragments { max }.into());
                    }
                }
                f.count_frame();
                f.len() as u64
            }
            (opcode, Some(_)) => return Err(ProtocolError::expected_fragment(opcode).into()),
            (_, None) => 0,
        };
        if header.payload_len > usize::MAX as u64 {
            // Only reachable on 32-bit targets without limits.
            return Err(CapacityError::MessageTooLong {
                size: usize::MAX,
                max_size: usize::MAX,
            }
            .into());
        }
        if let Some(max) = self.settings.get_max_frame_size() {
            if header.payload_len > max as u64 {
                // tungstenite's variant for a frame over the limit.
                return Err(CapacityError::MessageTooLong {
                    size: usize::try_from(header.payload_len).unwrap_or(usize::MAX),
                    max_size: max,
                }
                .into());
            }
        }
        let compressed = if starts_message {
            compressed_start
        } else {
            self.receiving.is_compressed()
        };
        // A compressed message is limited by what it inflates to, checked
        // while inflating; its compressed frames by max_frame_size above.
        if let (Some(max), false) = (self.settings.get_max_message_size(), compressed) {
            let size = so_far.saturating_add(header.payload_len);
            if size > max as u64 {
                return Err(CapacityError::MessageTooLong {
                    size: usize::try_from(size).unwrap_or(usize::MAX),
                    max_size: max,
                }
                .into());
            }
        }
        if starts_message {
            self.receiving
                .open(header.opcode, header.is_final, compressed_start);
        }
        Ok(())
    }

    /// Validates text as it arrives: fail fast, not when the message ends.
    /// A compressed message is validated after inflating.
    #[inline]
    fn payload(&mut self, header: &FrameHeader, bytes: &[u8], ascii: bool) -> Result<()> {
        if header.opcode.is_control() || self.receiving.is_compressed() {
            return Ok(());
        }
        self.receiving
            .validate_text(bytes, ascii)
            .map_err(|_| Error::peer_not_utf8("a text message"))
    }
}
