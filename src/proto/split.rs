//! One connection driven from two tasks without a lock between them: the
//! context keeps receiving (input, assembly, inflating, rate limits,
//! deadlines) and splits off a second context that sends (the out buffer,
//! the compressor with its history). What one side owes the other crosses
//! as data the driver hands over, never as a shared lock:
//!
//! - control frames the receiving side queues (a pong, the reply to a
//!   close, a keepalive ping, the close that fails the connection) leave
//!   it as encoded bytes ([`output`](WebSocketContext::output)) and enter
//!   the sender through [`queue_control`](WebSocketContext::queue_control),
//!   behind the data already queued there;
//! - a close frame the sender sent, and the end of the receiving side's
//!   connection, are states each side is told of
//!   ([`close_sent_by_sender`](WebSocketContext::close_sent_by_sender),
//!   [`receiver_closing`](WebSocketContext::receiver_closing)).
//!
//! These are the seams of split drivers (async-lockgate's split halves),
//! hidden from the documentation.

use bytes::Buf;

use crate::frame::CloseCode;
use crate::proto::context::{Negotiated, WebSocketContext};
use crate::proto::rate_limit::RateLimiter;
use crate::proto::state::State;

impl WebSocketContext {
    /// Splits off the sending side: a context that takes the out buffer
    /// (with what is queued, and a flush owed or asked for) and the
    /// compressor, and sends from now on; this context keeps receiving
    /// and queues only control frames, for the driver to hand over. Its
    /// state changes are reported by this context, not by itself.
    #[doc(hidden)]
    pub fn split_sender(&mut self) -> WebSocketContext {
        let mut compression = crate::proto::compression::negotiated(
            self.role,
            self.deflate.as_ref(),
            self.settings.get_deflate(),
        );
        if let (Some(ours), Some(theirs)) = (self.compression_mut(), compression.as_mut()) {
            ours.swap_deflater(theirs);
        }
        // The sending side keeps a copy of the limit, idle, so that its
        // configuration reads back whole (as it did before the split).
        let negotiated =
            RateLimiter::attach(Negotiated::compressing(compression), self.rate_limit());
        let mut sender = WebSocketContext::idle(self.role, self.settings, self.deflate, negotiated);
        sender.state = self.state;
        sender.owed = self.owed.split_off_flushes();
        #[cfg(feature = "tracing")]
        {
            sender.span = self.span.clone();
        }
        #[cfg(any(feature = "metrics", feature = "tracing"))]
        {
            sender.quiet = true;
        }
        std::mem::swap(&mut sender.codec.output, &mut self.codec.output);
        sender
    }

    /// Takes the sending side back from [`split_sender`](Self::split_sender):
    /// its out buffer, followed by the control frames this context still
    /// holds (not handed over while the stream was full), its compressor,
    /// and what it owes. Its state was reported here as it changed.
    #[doc(hidden)]
    pub fn rejoin_sender(&mut self, mut sender: WebSocketContext) {
        let held = {
            let output = &mut self.codec.output;
            output.copy_to_bytes(output.remaining())
        };
        std::mem::swap(&mut sender.codec.output, &mut self.codec.output);
        if !held.is_empty() {
            self.codec.output.push_encoded(&held);
        }
        if let (Some(ours), Some(theirs)) = (self.compression_mut(), sender.compression_mut()) {
            ours.swap_deflater(theirs);
        }
        self.owed.rejoin_flushes(&sender.owed);
        // A driver tells this side of the sender's close (with its code) as
        // it happens; this only covers a driver that did not, so the code
        // is not known here.
        if sender.state == State::ClosedByUs {
            self.close_sent_by_sender(None);
        }
        #[cfg(feature = "metrics")]
        self.counters.absorb(&mut sender.counters);
    }

    /// Appends control frames the receiving side encoded (its
    /// [`output`](Self::output)) behind what is queued, owed a flush like
    /// any pong or close. Never refused for room, as such frames never
    /// are. `closes`: they include a close frame, after which nothing more
    /// may be sent.
    #[doc(hidden)]
    pub fn queue_control(&mut self, frames: &bytes::Bytes, closes: bool) {
        if !frames.is_empty() {
            self.codec.output.push_encoded(frames);
            self.owed.owe_flush();
        }
        if closes {
            self.receiver_closing(false);
        }
    }

    /// The receiving side sent a close frame, or its connection ended
    /// (`ended`): nothing more may be sent ([`ProtocolError::SendAfterClosing`](crate::error::ProtocolError::SendAfterClosing),
    /// or [`Error::AlreadyClosed`](crate::Error::AlreadyClosed) once ended).
    #[doc(hidden)]
    pub fn receiver_closing(&mut self, ended: bool) {
        if ended {
            self.completed();
        } else {
            self.peer_closing();
        }
    }

    /// The sending side sent a close frame with `code`: the closing
    /// handshake has begun, so this (receiving) context answers no more
    /// pings, waits for the peer's close within the close timeout, and
    /// does not reply to it.
    #[doc(hidden)]
    pub fn close_sent_by_sender(&mut self, code: Option<CloseCode>) {
        // Refused once closing began: then there is nothing to change.
        if self.close_sent(code).is_ok() {
            self.owed.forget_pong();
        }
    }

    /// Whether this sending side has sent a close frame of its own (see
    /// [`close_sent_by_sender`](Self::close_sent_by_sender)).
    #[doc(hidden)]
    pub fn sent_close(&self) -> bool {
        self.state == State::ClosedByUs
    }

    /// Whether this receiving side has a close frame among the control
    /// frames it queued, or is over: the sender must send nothing after
    /// what is handed over now.
    #[doc(hidden)]
    pub fn receiver_closed(&self) -> bool {
        matches!(self.state, State::CloseAcknowledged | State::Terminated)
    }
}

#[cfg(test)]
mod tests {
    use bytes::{Buf, Bytes};

    use crate::config::{Config, Role};
    use crate::error::{Error, ProtocolError};
    use crate::frame::{CloseCode, OpCode};
    use crate::message::{CloseFrame, Message};
    use crate::proto::WebSocketContext;
    use crate::proto::drive::{Next, Operation};
    use crate::proto::test_frames::{client_frame, parse_frames};

    /// Everything `context` has to send, as the stream would take it.
    fn drain(context: &mut WebSocketContext) -> Bytes {
        let mut output = context.output();
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
        let pong = drain(&mut receiver);
        // ...and the sending side takes it behind its data, owing a flush.
        sender.queue_control(&pong, receiver.receiver_closed());
        assert_eq!(sender.poll(Operation::Write).unwrap(), Next::Transmit);
        let wire = drain(&mut sender);
        assert_eq!(
            parse_frames(&wire),
            [
                (OpCode::Text, b"queued before the split".to_vec()),
                (OpCode::Pong, b"p".to_vec())
            ]
        );
        assert_eq!(sender.poll(Operation::Write).unwrap(), Next::Flush);
    }

    #[test]
    fn a_close_reply_handed_over_stops_the_sender() {
        let mut receiver = WebSocketContext::new(Role::Server, Config::default());
        let mut sender = receiver.split_sender();
        receiver.feed(&client_frame(OpCode::Close, &1000u16.to_be_bytes()));
        assert_eq!(receiver.poll(Operation::Read).unwrap(), Next::Transmit);
        let reply = drain(&mut receiver);
        assert!(receiver.receiver_closed());
        sender.queue_control(&reply, true);
        assert!(matches!(
            sender.write(Message::text("too late")),
            Err(Error::Protocol(ProtocolError::SendAfterClosing))
        ));
        sender.receiver_closing(true);
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
            parse_frames(&drain(&mut receiver)),
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
        let wire = drain(&mut client);
        server.feed(&wire);
        for _ in 0..3 {
            assert_eq!(read(&mut server), Message::text(text.clone()));
        }
        // Compressed with history: the later copies are back-references.
        assert!(wire.len() < text.len(), "{} bytes", wire.len());
    }
}
