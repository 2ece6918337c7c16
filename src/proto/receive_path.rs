//! [`ReceivePath`]: the message being received and the result a read
//! holds back, the one owner of that state.

use bytes::BytesMut;

use crate::error::{Error, Result};
use crate::frame::OpCode;
use crate::message::Message;
use crate::proto::assembler::Fragments;
use crate::proto::utf8_stream::{InvalidUtf8, Utf8Stream};

/// What is open of the message arriving (its fragments, its inflated
/// bytes, its text validator) and what a read holds for the next poll.
/// Every piece is `None` on an idle connection and on the read of an
/// uncompressed message in one frame, which tests one pointer per piece;
/// the rare ones are boxed, since idle connections are many.
#[derive(Debug, Default)]
pub(super) struct ReceivePath {
    /// The fragmented message being assembled. Boxed: fragmented messages
    /// are rare.
    fragments: Option<Box<Fragments>>,
    /// A compressed message's inflated bytes and the result held for the
    /// next read, behind one pointer: with the validator beside two
    /// pointers this path takes three words, not four. Dropped once both
    /// are gone, so an idle connection holds no allocation.
    rare: Option<Box<Rare>>,
    /// Validates the text message currently arriving; `None` while the
    /// current data message is binary.
    text: Option<Utf8Stream>,
}

/// The rarely present part of the [`ReceivePath`]: one allocation per
/// compressed message (as its inflate buffer was before) or per held
/// result.
#[derive(Debug, Default)]
struct Rare {
    /// The message being received is compressed: its inflated bytes so
    /// far.
    inflating: Option<BytesMut>,
    /// What a read reports once owed output had its chance to go out: a
    /// message that queued a pong, or the error that failed the
    /// connection.
    delivered: Option<Result<Message>>,
}

impl ReceivePath {
    /// A data frame that starts a message passed the header check: open
    /// the message it starts (a text validator for text, the fragment
    /// buffer if more frames follow, the inflate buffer if compressed).
    #[inline]
    pub(super) fn open(&mut self, opcode: OpCode, is_final: bool, compressed: bool) {
        match opcode {
            OpCode::Text => self.text = Some(Utf8Stream::default()),
            OpCode::Binary => self.text = None,
            _ => {}
        }
        if !is_final {
            self.fragments = Some(Box::new(Fragments::new(opcode)));
        }
        // A message can only start once the previous one is complete, so
        // nothing is inflating here unless this one is compressed.
        debug_assert!(!self.is_compressed());
        if compressed {
            self.rare_mut().inflating = Some(BytesMut::new());
        }
    }

    /// The fragmented message being assembled, if one is open.
    #[inline]
    pub(super) fn fragments_mut(&mut self) -> Option<&mut Fragments> {
        self.fragments.as_deref_mut()
    }

    /// The last fragment of a fragmented message arrived: its assembly.
    #[inline]
    pub(super) fn take_fragments(&mut self) -> Option<Box<Fragments>> {
        self.fragments.take()
    }

    /// Whether the message being received is compressed.
    #[inline]
    pub(super) fn is_compressed(&self) -> bool {
        matches!(&self.rare, Some(rare) if rare.inflating.is_some())
    }

    /// The inflated bytes of the compressed message being received, taken
    /// while a frame inflates into them; [`keep_inflating`](Self::keep_inflating)
    /// puts them back if the message goes on. After its `last` frame the
    /// box they were in goes too, unless it holds a result.
    pub(super) fn take_inflating(&mut self, last: bool) -> BytesMut {
        let inflated = self
            .rare
            .as_mut()
            .and_then(|rare| rare.inflating.take())
            .expect("a compressed message is open");
        if last {
            self.tidy();
        }
        inflated
    }

    /// The compressed message goes on past this frame.
    pub(super) fn keep_inflating(&mut self, inflated: BytesMut) {
        self.rare_mut().inflating = Some(inflated);
    }

    /// Whether the message being received is text.
    #[inline]
    pub(super) fn is_text(&self) -> bool {
        self.text.is_some()
    }

    /// Validates the next piece of a text message: fail fast, not when
    /// the message ends. `ascii` says the piece is known to be ASCII.
    #[inline]
    pub(super) fn validate_text(&mut self, bytes: &[u8], ascii: bool) -> Result<(), InvalidUtf8> {
        match self.text.as_mut() {
            // ASCII is valid UTF-8 when no character was cut off by the
            // previous piece.
            Some(text) if !(ascii && text.at_char_boundary()) => text.feed(bytes),
            _ => Ok(()),
        }
    }

    /// The text message is complete: whether it ended on a whole
    /// character.
    #[inline]
    pub(super) fn finish_text(&mut self) -> Result<(), InvalidUtf8> {
        let mut text = self.text.take().expect("text frames start a validator");
        text.finish()
    }

    /// The connection failed: nothing of the message being received will
    /// be handed over. A held result stays.
    pub(super) fn drop_message(&mut self) {
        self.fragments = None;
        self.text = None;
        if let Some(rare) = self.rare.as_mut() {
            rare.inflating = None;
        }
        self.tidy();
    }

    /// Whether a read holds a result for the next poll.
    #[inline]
    pub(super) fn holds_result(&self) -> bool {
        matches!(&self.rare, Some(rare) if rare.delivered.is_some())
    }

    /// Hold `result` for the next read to report.
    pub(super) fn hold(&mut self, result: Result<Message>) {
        self.rare_mut().delivered = Some(result);
    }

    /// Hold `msg` for the next read, unless a result is held already.
    pub(super) fn hold_unless_holding(&mut self, msg: Message) {
        if !self.holds_result() {
            self.hold(Ok(msg));
        }
    }

    /// The held result, for the read that reports it.
    #[inline]
    pub(super) fn deliver(&mut self) -> Option<Result<Message>> {
        // One pointer test on every read that holds nothing.
        let held = self.rare.as_mut()?.delivered.take();
        self.tidy();
        held
    }

    /// The held error, if what is held is the error that failed the
    /// connection; a held message stays for the next read.
    pub(super) fn take_held_error(&mut self) -> Option<Error> {
        let rare = self.rare.as_mut()?;
        let error = match rare.delivered.take() {
            Some(Err(error)) => Some(error),
            held => {
                rare.delivered = held;
                None
            }
        };
        self.tidy();
        error
    }

    /// The rare part, allocated on first use.
    fn rare_mut(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(Box::default)
    }

    /// Drops the rare part once it holds nothing: idle connections keep no
    /// allocation.
    fn tidy(&mut self) {
        if matches!(&self.rare, Some(rare) if rare.inflating.is_none() && rare.delivered.is_none())
        {
            self.rare = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    #[test]
    fn the_rare_part_goes_once_it_holds_nothing() {
        let mut path = ReceivePath::default();
        path.open(OpCode::Binary, false, true);
        assert!(path.is_compressed());
        path.hold(Ok(Message::Ping(Bytes::new())));
        let inflated = path.take_inflating(true);
        assert!(inflated.is_empty());
        // The held message keeps the box; delivering it frees it.
        assert!(path.holds_result());
        assert!(
            path.take_held_error().is_none(),
            "a message is not an error"
        );
        assert!(matches!(path.deliver(), Some(Ok(Message::Ping(_)))));
        assert!(path.rare.is_none());
        assert!(path.deliver().is_none());
    }

    #[test]
    fn dropping_the_message_keeps_the_held_error() {
        let mut path = ReceivePath::default();
        path.open(OpCode::Text, false, true);
        path.hold(Err(Error::ConnectionClosed));
        path.drop_message();
        assert!(!path.is_compressed() && !path.is_text() && path.fragments_mut().is_none());
        assert!(matches!(
            path.take_held_error(),
            Some(Error::ConnectionClosed)
        ));
        assert!(path.rare.is_none());
    }
}
