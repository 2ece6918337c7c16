//! One connection driven from two tasks without a lock between them: the
//! context keeps receiving (input, assembly, inflating, rate limits,
//! deadlines) and splits off a [`SendHalf`] that sends (the out buffer,
//! the compressor with its history). Each half owns its path: the send
//! half holds no input, no receive state and no timer. What one side owes
//! the other crosses as a value the driver hands over, never as a shared
//! lock:
//!
//! - control frames the receiving side queues (a pong, the reply to a
//!   close, a keepalive ping, the close that fails the connection) leave
//!   it as [`ControlFrames`] ([`WebSocketContext::take_control_frames`])
//!   and enter the send half through [`SendHalf::queue_control`], behind
//!   the data already queued there;
//! - a close frame the send half sent, and the end of the receiving side's
//!   connection, are events each side is told of
//!   ([`WebSocketContext::close_sent_by_sender`],
//!   [`SendHalf::receiver_ended`]).
//!
//! async-lockgate's split halves are built on this; so can any driver that
//! reads and writes one connection from two tasks.

use std::io;

use bytes::{Buf, Bytes};

use super::WebSocketContext;
use crate::codec::OutBuffer;
use crate::config::{Config, Role, Settings};
use crate::error::{Error, Result};
use crate::frame::CloseCode;
use crate::message::{CloseFrame, Message};
use crate::prepared::PreparedMessage;
use crate::proto::lifecycle::Lifecycle;
use crate::proto::negotiated::Negotiated;
use crate::proto::owed::Owed;
use crate::proto::seam::{Next, Operation, Output};
use crate::proto::send::{self, SendSide, Sending};
use crate::proto::state::State;

/// The sending side of a connection split across two tasks
/// ([`WebSocketContext::split_sender`]): the out buffer, the compressor
/// with its history, and what is owed to the stream. A driver writes,
/// flushes and closes through it as it would through the whole
/// connection (the same names: [`write`](Self::write),
/// [`close`](Self::close), [`poll`](Self::poll), [`output`](Self::output),
/// [`flushed`](Self::flushed)); what it adds is what the receiving side
/// tells it.
///
/// Its state changes and its drop are the receiving side's to report (to
/// `metrics` and `tracing`), not its own: the connection is counted once.
#[derive(Debug)]
pub struct SendHalf {
    role: Role,
    settings: Settings,
    output: OutBuffer,
    owed: Owed,
    lifecycle: Lifecycle,
    /// The compressor (the receiving side keeps the decompressor's
    /// history) and a copy of the rate limit, so that the configuration
    /// reads back whole.
    negotiated: Negotiated,
}

/// Control frames the receiving side of a split connection queued (a
/// pong, the reply to a close, a keepalive ping, the close that fails the
/// connection), encoded, for its [`SendHalf`] to send behind the data
/// queued there: from [`WebSocketContext::take_control_frames`] to
/// [`SendHalf::queue_control`]. Dropping it loses frames the peer is owed.
#[derive(Debug)]
#[must_use = "the peer is owed these frames: hand them to the send half"]
pub struct ControlFrames {
    frames: Bytes,
    /// They include a close frame, or the receiving side is over: nothing
    /// more may be sent after them.
    closes: bool,
}

impl ControlFrames {
    /// Whether nothing more may be sent after these frames: they include
    /// a close frame, or the connection is over.
    pub fn closes(&self) -> bool {
        self.closes
    }

    /// Whether there are no frames (there may still be news:
    /// [`closes`](Self::closes)).
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }
}

impl WebSocketContext {
    /// Splits off the sending side: a [`SendHalf`] that takes the out
    /// buffer (with what is queued, and a flush owed or asked for) and the
    /// compressor, and sends from now on; this context keeps receiving and
    /// queues only control frames, for the driver to hand over
    /// ([`take_control_frames`](Self::take_control_frames)). Its state
    /// changes are reported by this context, not by itself.
    pub fn split_sender(&mut self) -> SendHalf {
        // The sending side keeps a copy of the limit, idle, so that its
        // configuration reads back whole (as it did before the split).
        let mut negotiated = Negotiated::new(
            self.role,
            self.negotiated.deflate().copied(),
            self.settings.get_deflate(),
            self.negotiated.rate_limit(),
        );
        if let (Some(ours), Some(theirs)) = (
            self.negotiated.compression_mut(),
            negotiated.compression_mut(),
        ) {
            ours.swap_deflater(theirs);
        }
        SendHalf {
            role: self.role,
            settings: self.settings,
            output: std::mem::take(&mut self.output),
            owed: self.owed.split_off_flushes(),
            lifecycle: self.lifecycle.for_send_half(),
            negotiated,
        }
    }

    /// Takes the sending side back from [`split_sender`](Self::split_sender):
    /// its out buffer, followed by the control frames this context still
    /// holds (not handed over while the stream was full), its compressor,
    /// and what it owes. Its state was reported here as it changed.
    pub fn rejoin_sender(&mut self, mut sender: SendHalf) {
        let held = self.output.copy_to_bytes(self.output.remaining());
        std::mem::swap(&mut sender.output, &mut self.output);
        if !held.is_empty() {
            self.output.push_encoded(&held);
        }
        if let (Some(ours), Some(theirs)) = (
            self.negotiated.compression_mut(),
            sender.negotiated.compression_mut(),
        ) {
            ours.swap_deflater(theirs);
        }
        self.owed.rejoin_flushes(&sender.owed);
        // A driver tells this side of the sender's close (with its code) as
        // it happens; this only covers a driver that did not, so the code
        // is not known here.
        if sender.sent_close() {
            self.close_sent_by_sender(None);
        }
        self.lifecycle.absorb(&mut sender.lifecycle);
    }

    /// The control frames this receiving side queued since the last call
    /// (its [`output`](Self::output), taken whole), for its [`SendHalf`]
    /// to send. Call it whenever a [`poll`](Self::poll) of a read asks to
    /// [`Transmit`](crate::Next::Transmit) or [`Flush`](crate::Next::Flush),
    /// and when the read ends.
    pub fn take_control_frames(&mut self) -> ControlFrames {
        let frames = {
            let mut output = self.output();
            output.copy_to_bytes(output.remaining())
        };
        ControlFrames {
            frames,
            closes: matches!(
                self.lifecycle.state(),
                State::CloseAcknowledged | State::Terminated
            ),
        }
    }

    /// The send half sent a close frame with `code`: the closing
    /// handshake has begun, so this (receiving) context answers no more
    /// pings, waits for the peer's close within the close timeout, and
    /// does not reply to it. Tell it once the close is queued
    /// ([`SendHalf::sent_close`]).
    pub fn close_sent_by_sender(&mut self, code: Option<CloseCode>) {
        // Refused once closing began: then there is nothing to change.
        if self.lifecycle.close_sent(code).is_ok() {
            self.owed.forget_pong();
        }
    }
}

impl SendSide for SendHalf {
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

impl SendHalf {
    /// Encodes `msg` into the out buffer, as
    /// [`WebSocketContext::write`] does.
    ///
    /// # Errors
    ///
    /// As for [`WebSocketContext::write`].
    #[inline]
    pub fn write(&mut self, msg: Message) -> Result<()> {
        send::write(self, msg, true)
    }

    /// As [`WebSocketContext::write_uncompressed`].
    ///
    /// # Errors
    ///
    /// As for [`WebSocketContext::write`].
    pub fn write_uncompressed(&mut self, msg: Message) -> Result<()> {
        send::write(self, msg, false)
    }

    /// As [`WebSocketContext::write_prepared`].
    ///
    /// # Errors
    ///
    /// As for [`WebSocketContext::write_prepared`].
    pub fn write_prepared(&mut self, msg: &PreparedMessage) -> Result<()> {
        self.sending().write_prepared(msg)
    }

    /// Starts the closing handshake from this side, as
    /// [`WebSocketContext::close`]; then tell the receiving side
    /// ([`WebSocketContext::close_sent_by_sender`]).
    ///
    /// # Errors
    ///
    /// As for [`WebSocketContext::close`].
    pub fn close(&mut self, frame: Option<CloseFrame>) -> Result<()> {
        self.sending().close(frame)
    }

    /// The caller asked for a flush: the next [`Operation::Flush`] carries
    /// it out, as for [`WebSocketContext::flush`].
    pub fn flush(&mut self) {
        self.owed.request_flush();
    }

    /// What the driver of `op` does next: [`Next::Transmit`],
    /// [`Next::Flush`] or [`Next::Done`], as
    /// [`WebSocketContext::poll`] answers for [`Operation::Write`] and
    /// [`Operation::Flush`]. A send half receives nothing: for
    /// [`Operation::Read`] the answer is [`Next::Done`].
    #[inline]
    pub fn poll(&mut self, op: Operation) -> Next {
        self.owed.output_step(op, &self.output, &self.settings)
    }

    /// The pending output as one [`Buf`], as
    /// [`WebSocketContext::output`].
    pub fn output(&mut self) -> Output<'_> {
        Output::new(&mut self.output)
    }

    /// The stream was flushed.
    pub fn flushed(&mut self) {
        self.sending().flushed();
    }

    /// A write or flush failed: the error to report.
    pub fn io_error(&mut self, error: io::Error) -> Error {
        Error::Io(error)
    }

    /// Bytes written but not yet handed to the stream.
    pub fn buffered_output(&self) -> usize {
        self.output.len()
    }

    /// Whether messages can still be written: not once a close frame was
    /// sent, or the receiving side handed over a close reply.
    pub fn can_write(&self) -> bool {
        self.lifecycle.state() == State::Active
    }

    /// The configuration, as [`WebSocketContext::config`].
    pub fn config(&self) -> Config {
        Config::from_parts(self.settings, self.negotiated.rate_limit())
    }

    /// Replaces the configuration; what a send half uses of it (the
    /// buffer sizes) applies from the next write. Tell the receiving side
    /// too ([`WebSocketContext::set_config`]): its limits are its own.
    pub fn set_config(&mut self, config: Config) {
        self.settings = config.settings();
        // Any message it held back is the receiving side's: none here.
        let _ = self.negotiated.set_rate_limit(config.get_rate_limit());
    }

    /// Appends control frames the receiving side handed over behind what
    /// is queued, owed a flush like any pong or close. Never refused for
    /// room, as such frames never are. After frames that
    /// [`close`](ControlFrames::closes), nothing more may be sent
    /// ([`ProtocolError::SendAfterClosing`](crate::error::ProtocolError::SendAfterClosing)).
    pub fn queue_control(&mut self, frames: ControlFrames) {
        if !frames.frames.is_empty() {
            self.output.push_encoded(&frames.frames);
            self.owed.owe_flush();
        }
        if frames.closes {
            self.lifecycle.peer_closing();
        }
    }

    /// The receiving side's connection ended (its read failed or the
    /// closing handshake completed): nothing more may be sent
    /// ([`Error::AlreadyClosed`]).
    pub fn receiver_ended(&mut self) {
        self.lifecycle.completed();
    }

    /// Whether this send half has sent a close frame of its own (tell the
    /// receiving side: [`WebSocketContext::close_sent_by_sender`]).
    pub fn sent_close(&self) -> bool {
        self.lifecycle.state() == State::ClosedByUs
    }
}

#[cfg(test)]
mod tests {
    use bytes::{Buf, Bytes};

    use crate::config::{Config, Role};
    use crate::error::{Error, ProtocolError};
    use crate::frame::{CloseCode, OpCode};
    use crate::message::{CloseFrame, Message};
    use crate::proto::seam::{Next, Operation, Output};
    use crate::proto::test_frames::{client_frame, parse_frames};
    use crate::proto::{SendHalf, WebSocketContext};

    /// Everything `output` holds, as the stream would take it.
    fn drain(mut output: Output<'_>) -> Bytes {
        output.copy_to_bytes(output.remaining())
    }

    /// The next message `context` reads from what it was fed.
    #[cfg(feature = "deflate")]
    fn read(context: &mut WebSocketContext) -> Message {
        loop {
            match context.poll(Operation::Read).unwrap() {
                Next::Message(msg) => return msg,
                Next::Transmit | Next::Flush => context.flushed(),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn queued_data_moves_to_the_sender_and_control_frames_follow_it() {
        let mut receiver = WebSocketContext::new(Role::Server, Config::default());
        receiver
            .write(Message::text("queued before the split"))
            .unwrap();
        let mut sender = receiver.split_sender();
        assert_eq!(receiver.buffered_output(), 0);
        receiver.feed(&client_frame(OpCode::Ping, b"p"));
        // The receiving side answers the ping into its own buffer...
        assert_eq!(receiver.poll(Operation::Read).unwrap(), Next::Transmit);
        let pong = receiver.take_control_frames();
        assert!(!pong.closes());
        // ...and the sending side takes it behind its data, owing a flush.
        sender.queue_control(pong);
        assert_eq!(sender.poll(Operation::Write), Next::Transmit);
        let wire = drain(sender.output());
        assert_eq!(
            parse_frames(&wire),
            [
                (OpCode::Text, b"queued before the split".to_vec()),
                (OpCode::Pong, b"p".to_vec())
            ]
        );
        assert_eq!(sender.poll(Operation::Write), Next::Flush);
    }

    #[test]
    fn a_send_half_holds_only_the_send_path() {
        let limit = crate::RateLimit::messages_per_second(10);
        let config = Config::default().rate_limit(Some(limit));
        let mut receiver = WebSocketContext::new(Role::Server, config);
        let mut sender = receiver.split_sender();
        // No input buffer, receive path or timer: a split connection's
        // second half costs less than a connection.
        assert!(
            std::mem::size_of::<SendHalf>() < std::mem::size_of::<WebSocketContext>(),
            "{} bytes",
            std::mem::size_of::<SendHalf>()
        );
        // It receives nothing, and its configuration reads back whole.
        assert_eq!(sender.poll(Operation::Read), Next::Done);
        assert_eq!(sender.config(), receiver.config());
        sender.write(Message::text("out")).unwrap();
        sender.flush();
        assert_eq!(sender.poll(Operation::Flush), Next::Transmit);
        assert_eq!(
            parse_frames(&drain(sender.output())),
            [(OpCode::Text, b"out".to_vec())]
        );
        assert_eq!(sender.poll(Operation::Flush), Next::Flush);
        sender.flushed();
        assert_eq!(sender.poll(Operation::Flush), Next::Done);
    }

    #[test]
    fn a_close_reply_handed_over_stops_the_sender() {
        let mut receiver = WebSocketContext::new(Role::Server, Config::default());
        let mut sender = receiver.split_sender();
        receiver.feed(&client_frame(OpCode::Close, &1000u16.to_be_bytes()));
        assert_eq!(receiver.poll(Operation::Read).unwrap(), Next::Transmit);
        let reply = receiver.take_control_frames();
        assert!(reply.closes());
        sender.queue_control(reply);
        assert!(matches!(
            sender.write(Message::text("too late")),
            Err(Error::Protocol(ProtocolError::SendAfterClosing))
        ));
        sender.receiver_ended();
        assert!(matches!(
            sender.write(Message::text("over")),
            Err(Error::AlreadyClosed)
        ));
    }

    #[test]
    fn the_senders_close_makes_the_receiver_wait_for_the_reply_without_answering_it() {
        let mut receiver = WebSocketContext::new(Role::Server, Config::default());
        let mut sender = receiver.split_sender();
        sender
            .close(Some(CloseFrame::new(CloseCode::Away, "")))
            .unwrap();
        assert!(sender.sent_close());
        receiver.close_sent_by_sender(Some(CloseCode::Away));
        receiver.feed(&client_frame(OpCode::Close, &1001u16.to_be_bytes()));
        // The peer's close is the reply: returned, not answered, and the
        // handshake is complete.
        assert_eq!(
            receiver.poll(Operation::Read).unwrap(),
            Next::Message(Message::Close(Some(CloseFrame::new(CloseCode::Away, ""))))
        );
        assert_eq!(receiver.buffered_output(), 0);
        assert_eq!(receiver.poll(Operation::Read).unwrap(), Next::Shutdown);
    }

    #[test]
    fn rejoining_puts_held_control_frames_behind_the_senders_data() {
        let mut receiver = WebSocketContext::new(Role::Server, Config::default());
        let mut sender = receiver.split_sender();
        sender.write(Message::binary(vec![7; 3])).unwrap();
        receiver.feed(&client_frame(OpCode::Ping, b"held"));
        assert_eq!(receiver.poll(Operation::Read).unwrap(), Next::Transmit);
        receiver.rejoin_sender(sender);
        assert_eq!(
            parse_frames(&drain(receiver.output())),
            [
                (OpCode::Binary, vec![7; 3]),
                (OpCode::Pong, b"held".to_vec())
            ]
        );
    }

    /// With context takeover, the compressor's history goes with it: the
    /// peer inflates what the sender compresses, and what the rejoined
    /// context compresses after it.
    #[cfg(feature = "deflate")]
    #[test]
    fn the_compressor_and_its_history_move_with_the_sending_side() {
        use crate::deflate::{DeflateConfig, DeflateParams};
        let params = DeflateParams::default();
        let config = Config::default().deflate(Some(DeflateConfig::default().min_compress_size(0)));
        let mut client = WebSocketContext::with_deflate(Role::Client, config, Some(params));
        let mut server = WebSocketContext::with_deflate(Role::Server, config, Some(params));
        let text = "the same words, again and again, ".repeat(8);
        client.write(Message::text(text.clone())).unwrap();
        let mut sender = client.split_sender();
        sender.write(Message::text(text.clone())).unwrap();
        client.rejoin_sender(sender);
        client.write(Message::text(text.clone())).unwrap();
        let wire = drain(client.output());
        server.feed(&wire);
        for _ in 0..3 {
            assert_eq!(read(&mut server), Message::text(text.clone()));
        }
        // Compressed with history: the later copies are back-references.
        assert!(wire.len() < text.len(), "{} bytes", wire.len());
    }
}
