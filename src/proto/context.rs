//! [`WebSocketContext`]: the whole protocol, with no I/O.

use bytes::buf::Limit;
use bytes::{Bytes, BytesMut};

use crate::codec::FrameCodec;
use crate::config::{Config, Role};
use crate::deflate::DeflateParams;
use crate::error::{Error, ProtocolError};
use crate::frame::CloseCode;
use crate::proto::assembler::Fragments;
use crate::proto::compression::{self, Compression};
use crate::proto::state::State;
use crate::proto::utf8_stream::Utf8Stream;

/// The largest control frame payload (RFC 6455 section 5.5).
pub(super) const MAX_CONTROL_PAYLOAD: usize = 125;

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
    pub(super) role: Role,
    pub(super) config: Config,
    pub(super) codec: FrameCodec,
    pub(super) state: State,
    /// Boxed: fragmented messages are rare, and idle connections many.
    pub(super) fragments: Option<Box<Fragments>>,
    /// Validates the text message currently arriving; `None` while the
    /// current data message is binary.
    pub(super) text: Option<Utf8Stream>,
    /// Only the newest unanswered ping is answered.
    pub(super) pending_pong: Option<Bytes>,
    /// A close frame to send: our reply, or the failure of the connection.
    /// Such frames carry a code (or none) and never a reason.
    pub(super) pending_close: Option<Option<CloseCode>>,
    pub(super) flush_owed: bool,
    /// What permessage-deflate negotiated, if anything.
    pub(super) deflate: Option<DeflateParams>,
    /// Boxed: most connections never negotiate compression, and an idle
    /// connection should cost as few bytes as possible.
    pub(super) compression: Option<Box<Compression>>,
    /// The message being received is compressed: its inflated bytes so far.
    pub(super) inflating: Option<BytesMut>,
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;

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
        assert!(size <= 440, "{size} bytes");
    }
}
