//! Message payloads: built with a stamp, checked on arrival.
//!
//! Echo and one-way payloads (`--size` bytes): an 8-byte send timestamp
//! (nanoseconds since the run's start `Instant`, shared by every
//! connection), an 8-byte sequence number, then filler. Broadcast payloads
//! add the publisher's index (4 bytes) and its node's index (2 bytes). All
//! numbers are stored 7 bits per byte, least significant group first, so a
//! payload is ASCII and the same bytes work as text.

use bytes::{Bytes, BytesMut};
use tokio_lockgate::{Message, Utf8Bytes};

/// Timestamp and sequence number at the front of each payload.
pub(crate) const HEADER: usize = 16;
/// A broadcast payload's stamp: [`HEADER`], publisher, node.
pub(crate) const BROADCAST_HEADER: usize = HEADER + 4 + 2;

/// Builds and checks payloads of one size and kind.
#[derive(Debug)]
pub(crate) struct Payload {
    pub(crate) size: usize,
    pub(crate) text: bool,
    template: Vec<u8>,
}

/// What a broadcast message says about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub(crate) sent_ns: u64,
    pub(crate) seq: u64,
    pub(crate) publisher: u32,
    pub(crate) node: u16,
}

impl Payload {
    pub(crate) fn new(size: usize, text: bool) -> Self {
        let template = (0..size).map(|i| b'a' + (i % 26) as u8).collect();
        Self {
            size,
            text,
            template,
        }
    }

    pub(crate) fn has_header(&self) -> bool {
        self.size >= HEADER
    }

    /// `n` payloads back to back in one allocation, stamped with `sent_ns`
    /// and the sequence numbers from `first_seq`; [`Self::message`] takes
    /// them off one by one.
    pub(crate) fn batch(&self, first_seq: u64, n: usize, sent_ns: u64) -> Bytes {
        self.stamped_batch(first_seq, n, sent_ns, None)
    }

    /// [`Self::batch`] for broadcast: each payload also names its
    /// publisher and node.
    pub(crate) fn broadcast_batch(
        &self,
        first_seq: u64,
        n: usize,
        sent_ns: u64,
        publisher: u32,
        node: u16,
    ) -> Bytes {
        self.stamped_batch(first_seq, n, sent_ns, Some((publisher, node)))
    }

    fn stamped_batch(
        &self,
        first_seq: u64,
        n: usize,
        sent_ns: u64,
        origin: Option<(u32, u16)>,
    ) -> Bytes {
        let mut buf = BytesMut::with_capacity(n * self.size);
        for i in 0..n {
            let at = buf.len();
            buf.extend_from_slice(&self.template);
            if self.has_header() {
                put7(&mut buf[at..at + 8], sent_ns);
                put7(&mut buf[at + 8..at + 16], first_seq + i as u64);
            }
            if let Some((publisher, node)) = origin {
                put7(&mut buf[at + 16..at + 20], u64::from(publisher));
                put7(&mut buf[at + 20..at + 22], u64::from(node));
            }
        }
        buf.freeze()
    }

    /// The next message from a batch.
    pub(crate) fn message(&self, batch: &mut Bytes) -> Message {
        let payload = batch.split_to(self.size);
        if self.text {
            match Utf8Bytes::try_from(payload) {
                Ok(text) => Message::Text(text),
                Err(_) => unreachable!("loadgen payloads are ASCII"),
            }
        } else {
            Message::Binary(payload)
        }
    }

    /// The payload of a data message of the right kind and size.
    fn data<'m>(&self, msg: &'m Message, what: &dyn Fn() -> String) -> Result<&'m [u8], String> {
        let (data, is_text): (&[u8], bool) = match msg {
            Message::Binary(data) => (data, false),
            Message::Text(text) => (text.as_bytes(), true),
            other => return Err(format!("{}: unexpected {other:?}", what())),
        };
        self.sized(data, is_text, what)
    }

    /// `data` if it is of the kind and size sent.
    fn sized<'m>(
        &self,
        data: &'m [u8],
        is_text: bool,
        what: &dyn Fn() -> String,
    ) -> Result<&'m [u8], String> {
        if is_text != self.text {
            let kind = |text| if text { "text" } else { "binary" };
            return Err(format!(
                "{}: got {}, sent {}",
                what(),
                kind(is_text),
                kind(self.text)
            ));
        }
        if data.len() != self.size {
            return Err(format!(
                "{}: {} bytes, sent {}",
                what(),
                data.len(),
                self.size
            ));
        }
        Ok(data)
    }

    /// Checks that `msg` is message number `seq` as sent; returns its send
    /// timestamp (when the payload is large enough to carry one).
    pub(crate) fn check(&self, msg: &Message, seq: u64) -> Result<Option<u64>, String> {
        let data = self.data(msg, &|| format!("message {seq}"))?;
        if !self.has_header() {
            return if data == self.template.as_slice() {
                Ok(None)
            } else {
                Err(format!("message {seq}: payload corrupted"))
            };
        }
        let got = get7(&data[8..16]);
        if got != Some(seq) {
            return Err(match got {
                Some(got) => format!(
                    "expected message {seq}, got message {got} (lost, duplicated or reordered)"
                ),
                None => format!("message {seq}: sequence number corrupted"),
            });
        }
        if data[HEADER..] != self.template[HEADER..] {
            return Err(format!("message {seq}: payload corrupted"));
        }
        get7(&data[..8])
            .map(Some)
            .ok_or_else(|| format!("message {seq}: timestamp corrupted"))
    }

    /// Reads a broadcast message's stamp, checking the rest of it.
    pub(crate) fn stamp(&self, msg: &Message) -> Result<Stamp, String> {
        let data = self.data(msg, &|| "broadcast message".to_owned())?;
        self.stamp_of(data)
    }

    /// [`Self::stamp`] of a payload that arrived without its frame (as
    /// `lockgate.seq.v1` carries it), `is_text` as it was published.
    pub(crate) fn stamp_payload(&self, data: &[u8], is_text: bool) -> Result<Stamp, String> {
        let data = self.sized(data, is_text, &|| "broadcast message".to_owned())?;
        self.stamp_of(data)
    }

    fn stamp_of(&self, data: &[u8]) -> Result<Stamp, String> {
        let field = |range: std::ops::Range<usize>| {
            get7(&data[range]).ok_or_else(|| "broadcast message: stamp corrupted".to_owned())
        };
        let stamp = Stamp {
            sent_ns: field(0..8)?,
            seq: field(8..16)?,
            publisher: field(16..20)? as u32,
            node: field(20..22)? as u16,
        };
        if data[BROADCAST_HEADER..] != self.template[BROADCAST_HEADER..] {
            return Err(format!(
                "message {} of publisher {}: payload corrupted",
                stamp.seq, stamp.publisher
            ));
        }
        Ok(stamp)
    }
}

/// Stores the low `7 * dst.len()` bits of `value`, 7 bits per byte
/// (ASCII), low first.
fn put7(dst: &mut [u8], value: u64) {
    for (i, byte) in dst.iter_mut().enumerate() {
        *byte = ((value >> (7 * i)) & 0x7f) as u8;
    }
}

fn get7(src: &[u8]) -> Option<u64> {
    let mut value = 0;
    for (i, &byte) in src.iter().enumerate() {
        if byte & 0x80 != 0 {
            return None;
        }
        value |= u64::from(byte) << (7 * i);
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broadcast_stamp_round_trips_in_text_and_binary() {
        for text in [false, true] {
            let payload = Payload::new(64, text);
            let mut batch = payload.broadcast_batch(41, 2, 123_456_789, 70_000, 3);
            payload.message(&mut batch);
            let msg = payload.message(&mut batch);
            let stamp = payload.stamp(&msg).unwrap();
            assert_eq!(
                stamp,
                Stamp {
                    sent_ns: 123_456_789,
                    seq: 42,
                    publisher: 70_000,
                    node: 3
                }
            );
        }
    }

    #[test]
    fn corrupted_or_foreign_messages_are_refused() {
        let payload = Payload::new(32, false);
        let mut batch = payload.broadcast_batch(0, 1, 1, 1, 1);
        let Message::Binary(good) = payload.message(&mut batch) else {
            unreachable!()
        };
        let mut bad = good.to_vec();
        bad[30] = b'!';
        assert!(payload.stamp(&Message::binary(bad)).is_err());
        let mut bad = good.to_vec();
        bad[9] |= 0x80;
        assert!(payload.stamp(&Message::binary(bad)).is_err());
        assert!(
            payload
                .stamp(&Message::binary(good[..31].to_vec()))
                .is_err()
        );
        assert!(payload.stamp(&Message::text("x".repeat(32))).is_err());
    }

    #[test]
    fn echo_checks_catch_reordering() {
        let payload = Payload::new(16, true);
        let mut batch = payload.batch(5, 2, 9);
        let first = payload.message(&mut batch);
        assert_eq!(payload.check(&first, 5), Ok(Some(9)));
        let second = payload.message(&mut batch);
        assert!(
            payload
                .check(&second, 5)
                .unwrap_err()
                .contains("got message 6")
        );
    }
}
