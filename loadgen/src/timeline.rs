//! Resume mode's verification: what each connection received, by
//! position, against the reference (the union of what every connection
//! saw), and what each publisher sent against what was stored.
//!
//! Checked as messages arrive ([`Received::accept`]): positions strictly
//! increase across a subscriber's reconnects (a duplicate or a step back
//! is caught at once). Checked at the end ([`Reference`]): no two
//! connections saw different messages at one position, no message was
//! stored twice, every subscriber holds every position of the reference
//! (no gap), and each publisher's messages were stored in its send order,
//! the only ones missing being the last ones sent on a connection that
//! died.

use std::collections::{BTreeMap, HashMap};

use crate::payload::Stamp;

/// The messages one receiver got, in order, across its reconnects.
#[derive(Debug, Clone, Default)]
pub(crate) struct Received {
    entries: Vec<(u64, Stamp)>,
    /// Where each accepted resync starts a new segment (an index into
    /// `entries`): what came before it may have a gap after it.
    resyncs: Vec<usize>,
}

impl Received {
    /// Accepts the message at `position`, or says why it is wrong: the
    /// position must be after the last one received.
    pub(crate) fn accept(&mut self, position: u64, stamp: Stamp) -> Result<(), String> {
        if let Some(&(last, _)) = self.entries.last() {
            if position == last {
                return Err(format!(
                    "position {position} received twice (duplicate; message {} of publisher {})",
                    stamp.seq, stamp.publisher
                ));
            }
            if position < last {
                return Err(format!(
                    "position {position} received after position {last} (out of order)"
                ));
            }
        }
        self.entries.push((position, stamp));
        Ok(())
    }

    /// The receiver lost its place (a 4001 resync, allowed): what follows
    /// need not continue what came before.
    pub(crate) fn resync(&mut self) {
        self.resyncs.push(self.entries.len());
    }

    /// The last position received, the one to resume after.
    pub(crate) fn last_position(&self) -> Option<u64> {
        self.entries.last().map(|&(p, _)| p)
    }

    /// Messages received in all.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The segments between resyncs.
    fn segments(&self) -> impl Iterator<Item = &[(u64, Stamp)]> {
        let mut bounds = vec![0];
        bounds.extend(self.resyncs.iter().copied());
        bounds.push(self.entries.len());
        bounds.dedup();
        let entries = &self.entries;
        (0..bounds.len().saturating_sub(1)).map(move |i| &entries[bounds[i]..bounds[i + 1]])
    }
}

/// What one publisher sent on each of its connections, in order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sent {
    pub(crate) connections: Vec<SentOn>,
}

/// The sequence numbers one connection of a publisher sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SentOn {
    /// The first sequence number sent on it.
    pub(crate) first: u64,
    /// One past the last.
    pub(crate) end: u64,
    /// Whether the connection died (a node gone) rather than being closed
    /// by the publisher once its messages were all back: only then may
    /// some be missing.
    pub(crate) died: bool,
}

/// What a message is: its publisher and sequence number (the stamp's
/// other fields are compared with the rest of it).
fn id(stamp: &Stamp) -> (u32, u64) {
    (stamp.publisher, stamp.seq)
}

fn describe(stamp: &Stamp) -> String {
    format!(
        "message {} of publisher {} (sent at {} ns from node {})",
        stamp.seq, stamp.publisher, stamp.sent_ns, stamp.node
    )
}

/// Every position any connection saw, with its message.
#[derive(Debug, Default)]
pub(crate) struct Reference {
    by_position: BTreeMap<u64, Stamp>,
    by_message: HashMap<(u32, u64), u64>,
}

impl Reference {
    /// Adds what `who` received; fails when it disagrees with what others
    /// received: another message at one of its positions (the payload
    /// differs), or one of its messages at another position (stored
    /// twice).
    pub(crate) fn add(&mut self, who: &str, received: &Received) -> Result<(), String> {
        for &(position, stamp) in &received.entries {
            match self.by_position.get(&position) {
                Some(known) if *known != stamp => {
                    return Err(format!(
                        "{who}: position {position} holds {}, another connection received {} there (payload mismatch)",
                        describe(&stamp),
                        describe(known)
                    ));
                }
                Some(_) => {}
                None => {
                    if let Some(&other) = self.by_message.get(&id(&stamp)) {
                        return Err(format!(
                            "{who}: {} at position {position}, and at position {other} too (stored twice)",
                            describe(&stamp)
                        ));
                    }
                    self.by_position.insert(position, stamp);
                    self.by_message.insert(id(&stamp), position);
                }
            }
        }
        Ok(())
    }

    /// The first and last positions held.
    pub(crate) fn span(&self) -> Option<(u64, u64)> {
        let first = *self.by_position.keys().next()?;
        let last = *self.by_position.keys().next_back()?;
        Some((first, last))
    }

    /// Messages held up to `upto`.
    pub(crate) fn count_upto(&self, upto: u64) -> usize {
        self.by_position.range(..=upto).count()
    }

    /// Checks that `received` holds every message of the reference up to
    /// `upto`, exactly once and in order: from the first position held (all
    /// subscribers were there before the first publish) or, after a resync,
    /// from wherever it picked up again. Its own messages must already be
    /// [`add`](Self::add)ed.
    pub(crate) fn check_receiver(
        &self,
        who: &str,
        received: &Received,
        upto: u64,
    ) -> Result<(), String> {
        let Some((first, _)) = self.span() else {
            return Ok(());
        };
        let segments: Vec<_> = received.segments().collect();
        if segments.is_empty() {
            if first <= upto {
                return Err(format!(
                    "{who}: received nothing; missing positions {first}..={upto} ({} messages)",
                    self.count_upto(upto)
                ));
            }
            return Ok(());
        }
        let last_segment = segments.len() - 1;
        for (s, segment) in segments.iter().enumerate() {
            let from = if s == 0 { first } else { segment[0].0 };
            let to = if s == last_segment {
                upto
            } else {
                segment[segment.len() - 1].0
            };
            let mut got = segment.iter().take_while(|(p, _)| *p <= upto).peekable();
            let mut previous = None;
            for (&position, stamp) in self.by_position.range(from..=to) {
                match got.next_if(|(p, _)| *p == position) {
                    Some((_, s)) if s == stamp => previous = Some(position),
                    Some((_, s)) => {
                        return Err(format!(
                            "{who}: position {position} holds {}, the reference {} (payload mismatch)",
                            describe(s),
                            describe(stamp)
                        ));
                    }
                    None => {
                        let after = previous.map_or_else(
                            || "as its first".to_owned(),
                            |p| format!("after position {p}"),
                        );
                        return Err(format!(
                            "{who}: position {position} ({}) missing {after} (gap)",
                            describe(stamp)
                        ));
                    }
                }
            }
            if let Some((position, _)) = got.next() {
                // Only a receiver not add()ed gets here.
                return Err(format!(
                    "{who}: position {position}, which no other connection received"
                ));
            }
        }
        Ok(())
    }

    /// Checks each publisher's messages against what it sent: stored in
    /// its send order, none from elsewhere, and the only ones missing the
    /// last ones sent on a connection that died. Returns how many those
    /// are (lost with the publisher's connection).
    pub(crate) fn check_publishers(&self, sent: &[Sent]) -> Result<u64, String> {
        let mut stored: Vec<Vec<(u64, u64)>> = vec![Vec::new(); sent.len()];
        for (&position, stamp) in &self.by_position {
            let Some(of) = stored.get_mut(stamp.publisher as usize) else {
                return Err(format!(
                    "position {position} holds {}, and there is no such publisher",
                    describe(stamp)
                ));
            };
            if let Some(&(seq, at)) = of.last() {
                if stamp.seq < seq {
                    return Err(format!(
                        "publisher {}: message {} stored at position {position}, after its message {seq} at position {at} (out of send order)",
                        stamp.publisher, stamp.seq
                    ));
                }
            }
            of.push((stamp.seq, position));
        }
        let mut lost = 0;
        for (p, (sent, stored)) in sent.iter().zip(&stored).enumerate() {
            let mut stored = stored.iter().map(|&(seq, _)| seq).peekable();
            for on in &sent.connections {
                let mut next = on.first;
                while stored.next_if(|&seq| seq == next && seq < on.end).is_some() {
                    next += 1;
                }
                if next < on.end {
                    if !on.died {
                        return Err(format!(
                            "publisher {p}: messages {next}..{} were sent on a connection that stayed open, and never stored (lost)",
                            on.end
                        ));
                    }
                    if let Some(&seq) = stored.peek().filter(|&&seq| seq < on.end) {
                        return Err(format!(
                            "publisher {p}: message {seq} stored, but not message {next} sent before it on the same connection (gap)"
                        ));
                    }
                    lost += on.end - next;
                }
            }
            if let Some(seq) = stored.next() {
                return Err(format!(
                    "publisher {p}: message {seq} stored, which it did not send (or not then)"
                ));
            }
        }
        Ok(lost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(publisher: u32, seq: u64) -> Stamp {
        Stamp {
            sent_ns: 1000 * seq + u64::from(publisher),
            seq,
            publisher,
            node: 0,
        }
    }

    /// A receiver's messages: (position, publisher, seq); `None` marks a
    /// resync.
    type Script = Vec<Option<(u64, u32, u64)>>;

    fn receive(script: &[Option<(u64, u32, u64)>]) -> Result<Received, String> {
        let mut received = Received::default();
        for step in script {
            match *step {
                Some((position, p, seq)) => received.accept(position, stamp(p, seq))?,
                None => received.resync(),
            }
        }
        Ok(received)
    }

    fn on(first: u64, end: u64, died: bool) -> SentOn {
        SentOn { first, end, died }
    }

    /// Everything a run checks, on made-up receipts; the reference is
    /// `reference` plus every subscriber's.
    fn verify(
        reference: &[(u64, u32, u64)],
        subscribers: &[Script],
        sent: &[Vec<SentOn>],
        upto: u64,
    ) -> Result<u64, String> {
        let mut all = Reference::default();
        let publisher = receive(&reference.iter().copied().map(Some).collect::<Vec<_>>())?;
        all.add("publisher", &publisher)?;
        let subscribers = subscribers
            .iter()
            .map(|script| receive(script))
            .collect::<Result<Vec<_>, _>>()?;
        for (i, s) in subscribers.iter().enumerate() {
            all.add(&format!("subscriber {i}"), s)?;
        }
        for (i, s) in subscribers.iter().enumerate() {
            all.check_receiver(&format!("subscriber {i}"), s, upto)?;
        }
        let sent: Vec<Sent> = sent
            .iter()
            .map(|c| Sent {
                connections: c.clone(),
            })
            .collect();
        all.check_publishers(&sent)
    }

    /// Two publishers, positions with holes (not contiguous), stored in
    /// this order: 10 p0#0, 11 p1#0, 13 p0#1, 14 p1#1, 20 p0#2.
    const STORED: [(u64, u32, u64); 5] =
        [(10, 0, 0), (11, 1, 0), (13, 0, 1), (14, 1, 1), (20, 0, 2)];

    fn all_of(stored: &[(u64, u32, u64)]) -> Script {
        stored.iter().copied().map(Some).collect()
    }

    #[test]
    fn a_correct_interleaving_with_reconnects_passes() {
        // Reconnects are invisible in the receipts when nothing is
        // duplicated or missed: one subscriber got each message once.
        let sent = vec![
            vec![on(0, 2, false), on(2, 3, false)],
            vec![on(0, 2, false)],
        ];
        assert_eq!(
            verify(&STORED, &[all_of(&STORED), all_of(&STORED)], &sent, 20),
            Ok(0)
        );
        // A publisher whose first connection died with message 1 unsent
        // (never stored) lost it; it went on with 2 on its next one.
        let stored = [(10, 0, 0), (11, 1, 0), (14, 1, 1), (20, 0, 2)];
        let sent = vec![vec![on(0, 2, true), on(2, 3, false)], vec![on(0, 2, false)]];
        assert_eq!(verify(&stored, &[all_of(&stored)], &sent, 20), Ok(1));
        // An allowed resync: the gap at the resync is not one.
        let resynced = vec![Some((10, 0, 0)), None, Some((14, 1, 1)), Some((20, 0, 2))];
        let sent = vec![vec![on(0, 3, false)], vec![on(0, 2, false)]];
        assert_eq!(
            verify(&STORED, &[resynced, all_of(&STORED)], &sent, 20),
            Ok(0)
        );
    }

    #[test]
    fn duplicates_gaps_disorder_mismatches_and_losses_are_caught() {
        let sent_ok = vec![vec![on(0, 3, false)], vec![on(0, 2, false)]];
        let with = |position: usize, entry| {
            let mut script = all_of(&STORED);
            script[position] = entry;
            script
        };
        let duplicate = {
            let mut s = all_of(&STORED);
            s.insert(2, Some((11, 1, 0)));
            s
        };
        let gap = {
            let mut s = all_of(&STORED);
            s.remove(2);
            s
        };
        let out_of_order = {
            let mut s = all_of(&STORED);
            s.swap(1, 2);
            s
        };
        let mismatch = with(3, Some((14, 1, 7)));
        let short = all_of(&STORED[..4]);
        for (what, subscribers, sent, says) in [
            (
                "duplicate",
                vec![duplicate],
                sent_ok.clone(),
                "twice (duplicate",
            ),
            (
                "gap",
                vec![gap],
                sent_ok.clone(),
                "position 13 (message 1 of publisher 0",
            ),
            (
                "out of order",
                vec![out_of_order],
                sent_ok.clone(),
                "out of order",
            ),
            (
                "payload mismatch",
                vec![mismatch],
                sent_ok.clone(),
                "payload mismatch",
            ),
            (
                "stopped short of the end",
                vec![short],
                sent_ok.clone(),
                "position 20",
            ),
            (
                "nothing at all",
                vec![vec![]],
                sent_ok.clone(),
                "received nothing",
            ),
            (
                "a gap before a resync is not excused",
                vec![vec![
                    Some((10, 0, 0)),
                    Some((13, 0, 1)),
                    None,
                    Some((20, 0, 2)),
                ]],
                sent_ok.clone(),
                "position 11",
            ),
            (
                "a publisher's loss on a connection that stayed open",
                vec![all_of(&STORED)],
                vec![vec![on(0, 4, false)], vec![on(0, 2, false)]],
                "messages 3..4 were sent on a connection that stayed open",
            ),
            (
                "a message its publisher did not send",
                vec![all_of(&STORED)],
                vec![vec![on(0, 3, false)], vec![on(0, 1, true)]],
                "publisher 1: message 1 stored, which it did not send",
            ),
            (
                "a message of a publisher that does not exist",
                vec![all_of(&STORED)],
                vec![vec![on(0, 3, false)]],
                "no such publisher",
            ),
        ] {
            let error = verify(&STORED, &subscribers, &sent, 20).expect_err(what);
            assert!(error.contains(says), "{what}: {error}");
        }
        // A message the publisher sent stored twice, and a publisher's
        // messages stored out of its send order.
        let twice = [(10, 0, 0), (11, 0, 0)];
        let error = verify(&twice, &[], &[vec![on(0, 1, false)]], 11).unwrap_err();
        assert!(error.contains("stored twice"), "{error}");
        let swapped = [(10, 0, 1), (11, 0, 0)];
        let error = verify(&swapped, &[], &[vec![on(0, 2, false)]], 11).unwrap_err();
        assert!(error.contains("out of send order"), "{error}");
        let hole = [(10, 0, 0), (12, 0, 2)];
        let error = verify(&hole, &[], &[vec![on(0, 3, true)]], 12).unwrap_err();
        assert!(error.contains("not message 1"), "{error}");
    }
}
