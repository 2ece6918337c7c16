//! [`Continuity`]: whether a message the stream republished follows the
//! last one the node delivered of its topic, or some went missing on the
//! way (a slow subscription, a broker failover, a reconnect).
//!
//! Sans-IO: the delivery task asks before delivering each message.

use std::collections::HashMap;

/// The newest position delivered of each topic, and the newest position
/// of the stream seen.
#[derive(Debug)]
pub(crate) struct Continuity {
    delivered: HashMap<Box<str>, u64>,
    /// The stream's positions are consecutive and every one is
    /// republished (probes included): the newest one that arrived.
    seen: u64,
    /// Positions up to this one were settled before delivery started (or
    /// restarted): a topic not seen since follows on from anything at or
    /// below it.
    known_through: u64,
}

/// What to do with a message.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// It follows on: deliver it.
    Deliver,
    /// Delivered already (or older than what the node starts from).
    Skip,
    /// Messages of its topic after `after` and before it were missed:
    /// fetch and deliver those first.
    FillAfter(u64),
}

impl Continuity {
    pub(crate) fn new(known_through: u64) -> Self {
        Self {
            delivered: HashMap::new(),
            known_through,
            seen: known_through,
        }
    }

    /// Records that `position` arrived; returns the positions before it
    /// that did not (and should be read from the stream), if any.
    pub(crate) fn arrived(&mut self, position: u64) -> Option<(u64, u64)> {
        let missed = (position > self.seen + 1).then(|| (self.seen, position - 1));
        self.seen = self.seen.max(position);
        missed
    }

    /// The stream's newest position is `last`: returns the positions that
    /// never arrived after the newest that did, if any (and counts them
    /// as seen: they are read now).
    pub(crate) fn ends_at(&mut self, last: u64) -> Option<(u64, u64)> {
        let missed = (last > self.seen).then_some((self.seen, last));
        self.seen = self.seen.max(last);
        missed
    }

    /// Delivery starts over after `known_through` (the broker connection
    /// came back): what the node delivered stays delivered.
    pub(crate) fn restart(&mut self, known_through: u64) {
        self.known_through = self.known_through.max(known_through);
        self.seen = self.seen.max(known_through);
    }

    /// The verdict on message `position` of `topic`, whose predecessor in
    /// the stream's topic is `previous` (0 for none).
    pub(crate) fn check(&self, topic: &str, position: u64, previous: u64) -> Verdict {
        let last = self
            .delivered
            .get(topic)
            .copied()
            .unwrap_or(0)
            .max(self.known_through);
        if position <= last {
            Verdict::Skip
        } else if previous <= last {
            Verdict::Deliver
        } else {
            Verdict::FillAfter(last)
        }
    }

    /// Records that `position` of `topic` was delivered.
    pub(crate) fn delivered(&mut self, topic: &str, position: u64) {
        match self.delivered.get_mut(topic) {
            Some(last) => *last = (*last).max(position),
            None => {
                self.delivered.insert(topic.into(), position);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_that_never_arrived_are_named_once() {
        let mut c = Continuity::new(10);
        // (arrived, missed before it)
        for (position, missed) in [
            (11, None),
            (12, None),
            (15, Some((12, 14))),
            (13, None), // late: already read
            (16, None),
            (16, None),
        ] {
            assert_eq!(c.arrived(position), missed, "{position}");
        }
        assert_eq!(c.ends_at(16), None);
        assert_eq!(c.ends_at(19), Some((16, 19)));
        assert_eq!(c.arrived(19), None);
        c.restart(30);
        assert_eq!(c.arrived(31), None);
    }

    #[test]
    fn verdicts() {
        let mut c = Continuity::new(100);
        // (topic, position, previous) -> verdict, delivered in turn.
        for (topic, position, previous, verdict) in [
            // Before the node started: the backlog does not cover it.
            ("a", 90, 80, Verdict::Skip),
            ("a", 100, 90, Verdict::Skip),
            // The first after the start follows anything settled.
            ("a", 105, 100, Verdict::Deliver),
            ("b", 106, 40, Verdict::Deliver),
            ("a", 107, 105, Verdict::Deliver),
            // A repeat after a failover.
            ("a", 107, 105, Verdict::Skip),
            // 108 of "a" never arrived.
            ("a", 110, 108, Verdict::FillAfter(107)),
            // A topic first seen after one of its messages was missed.
            ("c", 111, 103, Verdict::FillAfter(100)),
            ("d", 120, 101, Verdict::FillAfter(100)),
            // First seen, its predecessor settled before the start.
            ("g", 121, 99, Verdict::Deliver),
        ] {
            assert_eq!(
                c.check(topic, position, previous),
                verdict,
                "{topic} {position}"
            );
            if verdict == Verdict::Deliver {
                c.delivered(topic, position);
            }
        }
        c.restart(200);
        assert_eq!(c.check("a", 150, 107), Verdict::Skip);
        assert_eq!(c.check("a", 201, 190), Verdict::Deliver);
        c.delivered("a", 201);
        assert_eq!(c.check("a", 203, 202), Verdict::FillAfter(201));
    }
}
