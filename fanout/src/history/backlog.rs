//! [`Backlog`]: the recent messages of each topic a node has delivered,
//! with their positions, and what a client resuming after a position needs.
//!
//! Sans-IO: the node's delivery task pushes every message it delivers, in
//! position order; a resuming connection asks for a [`Plan`].

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use tokio_lockgate::PreparedMessage;

/// The recent messages of every topic, each as its `lockgate.seq.v1` frame.
#[derive(Debug)]
pub(crate) struct Backlog {
    topics: HashMap<Box<str>, TopicLog>,
    per_topic: usize,
    max_age: Option<Duration>,
    /// Positions up to this one were delivered before the node started
    /// delivering: the backlog knows nothing of them.
    known_after: u64,
}

#[derive(Debug, Default)]
struct TopicLog {
    entries: VecDeque<Entry>,
    /// The position of the newest message evicted, if any.
    evicted_through: u64,
}

#[derive(Debug)]
struct Entry {
    position: u64,
    at: Instant,
    frame: PreparedMessage,
}

/// How to serve a client that has every message of a topic up to `after`.
#[derive(Debug)]
pub(crate) enum Plan {
    /// Everything it misses is here: these frames, oldest first.
    Memory(Vec<PreparedMessage>),
    /// It misses messages older than the backlog holds: those with a
    /// position in `after + 1 ..= through` are in the store (if it still
    /// has them), then `then` follows from memory.
    Store {
        after: u64,
        through: u64,
        then: Vec<PreparedMessage>,
    },
}

impl Backlog {
    /// Keeps at most `per_topic` messages of each topic, none older than
    /// `max_age`; it starts complete after position `known_after` (0 for a
    /// history that starts with this node).
    pub(crate) fn new(per_topic: usize, max_age: Option<Duration>, known_after: u64) -> Self {
        Self {
            topics: HashMap::new(),
            per_topic: per_topic.max(1),
            max_age,
            known_after,
        }
    }

    /// Delivery starts over after `known_after` (the broker connection
    /// came back, and what was stored meanwhile was not delivered here):
    /// the backlog no longer vouches for anything up to it.
    #[cfg(feature = "nats")]
    pub(crate) fn restart(&mut self, known_after: u64) {
        self.known_after = self.known_after.max(known_after);
    }

    /// Records a delivered message. Positions come in increasing order.
    pub(crate) fn push(
        &mut self,
        topic: &str,
        position: u64,
        frame: PreparedMessage,
        now: Instant,
    ) {
        let log = match self.topics.get_mut(topic) {
            Some(log) => log,
            None => self.topics.entry(topic.into()).or_default(),
        };
        debug_assert!(log.entries.back().is_none_or(|e| e.position < position));
        log.entries.push_back(Entry {
            position,
            at: now,
            frame,
        });
        if log.entries.len() > self.per_topic {
            log.evict_front();
        }
        self.expire(topic, now);
    }

    /// What a client that has everything of `topic` through `after` needs.
    pub(crate) fn plan(&mut self, topic: &str, after: u64, now: Instant) -> Plan {
        self.expire(topic, now);
        let (entries, floor) = match self.topics.get(topic) {
            Some(log) => (&log.entries, log.evicted_through.max(self.known_after)),
            None => (&VecDeque::new(), self.known_after),
        };
        let newer = |from: u64| {
            let start = entries.partition_point(|e| e.position <= from);
            entries
                .range(start..)
                .map(|e| e.frame.clone())
                .collect::<Vec<_>>()
        };
        if after >= floor {
            Plan::Memory(newer(after))
        } else {
            Plan::Store {
                after,
                through: floor,
                then: newer(floor),
            }
        }
    }

    /// The newest position of `topic` the backlog has seen, if any.
    #[cfg(test)]
    fn newest(&self, topic: &str) -> Option<u64> {
        self.topics.get(topic)?.entries.back().map(|e| e.position)
    }

    /// Messages of `topic` held now.
    #[cfg(test)]
    fn len(&self, topic: &str) -> usize {
        self.topics.get(topic).map_or(0, |log| log.entries.len())
    }

    fn expire(&mut self, topic: &str, now: Instant) {
        let (Some(age), Some(log)) = (self.max_age, self.topics.get_mut(topic)) else {
            return;
        };
        while log
            .entries
            .front()
            .is_some_and(|e| now.saturating_duration_since(e.at) > age)
        {
            log.evict_front();
        }
    }
}

impl TopicLog {
    fn evict_front(&mut self) {
        if let Some(gone) = self.entries.pop_front() {
            self.evicted_through = gone.position;
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio_lockgate::Message;

    use super::*;
    use crate::seq::Sequenced;

    fn frame(position: u64) -> PreparedMessage {
        PreparedMessage::new(Message::Binary(Sequenced::encode(
            position,
            crate::seq::Kind::Text,
            b"x",
        )))
    }

    fn positions(frames: &[PreparedMessage]) -> Vec<u64> {
        frames
            .iter()
            .map(|f| match f.message() {
                Message::Binary(b) => Sequenced::position_of(b).unwrap(),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    fn memory(plan: Plan) -> Vec<u64> {
        match plan {
            Plan::Memory(frames) => positions(&frames),
            other => panic!("expected memory, got {other:?}"),
        }
    }

    #[test]
    fn a_client_within_the_backlog_gets_what_follows_its_position() {
        let now = Instant::now();
        let mut backlog = Backlog::new(10, None, 0);
        for p in [2, 5, 9] {
            backlog.push("a", p, frame(p), now);
        }
        backlog.push("b", 7, frame(7), now);
        for (after, expected) in [
            (0, vec![2, 5, 9]),
            (2, vec![5, 9]),
            (3, vec![5, 9]),
            (9, vec![]),
            (50, vec![]),
        ] {
            assert_eq!(memory(backlog.plan("a", after, now)), expected, "{after}");
        }
        assert_eq!(memory(backlog.plan("none", 0, now)), Vec::<u64>::new());
        assert_eq!(backlog.newest("b"), Some(7));
    }

    #[test]
    fn evicted_positions_send_the_client_to_the_store_for_exactly_them() {
        let now = Instant::now();
        let mut backlog = Backlog::new(3, None, 0);
        for p in 1..=6 {
            backlog.push("a", p * 10, frame(p * 10), now);
        }
        assert_eq!(backlog.len("a"), 3);
        // 30 was evicted last: a client at 30 misses nothing evicted.
        assert_eq!(memory(backlog.plan("a", 30, now)), vec![40, 50, 60]);
        match backlog.plan("a", 10, now) {
            Plan::Store {
                after,
                through,
                then,
            } => {
                assert_eq!((after, through), (10, 30));
                assert_eq!(positions(&then), vec![40, 50, 60]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn what_came_before_the_node_started_is_in_the_store() {
        let now = Instant::now();
        let mut backlog = Backlog::new(8, None, 100);
        backlog.push("a", 104, frame(104), now);
        assert!(matches!(
            backlog.plan("a", 99, now),
            Plan::Store {
                after: 99,
                through: 100,
                ..
            }
        ));
        assert!(matches!(
            backlog.plan("quiet", 0, now),
            Plan::Store {
                after: 0,
                through: 100,
                ..
            }
        ));
        assert_eq!(memory(backlog.plan("a", 100, now)), vec![104]);
    }

    #[test]
    fn old_messages_expire_by_age() {
        let start = Instant::now();
        let mut backlog = Backlog::new(100, Some(Duration::from_secs(10)), 0);
        backlog.push("a", 1, frame(1), start);
        backlog.push("a", 2, frame(2), start + Duration::from_secs(5));
        let later = start + Duration::from_secs(12);
        assert!(matches!(
            backlog.plan("a", 0, later),
            Plan::Store { through: 1, .. }
        ));
        assert_eq!(memory(backlog.plan("a", 1, later)), vec![2]);
        assert_eq!(backlog.len("a"), 1);
    }

    proptest::proptest! {
        /// Whatever was pushed and evicted, a plan never skips a held
        /// message after the client's position, and never repeats one.
        #[test]
        fn plans_are_complete_and_ordered(
            steps in proptest::collection::vec(1u64..5, 1..60),
            per_topic in 1usize..8,
            after in 0u64..200,
        ) {
            let now = Instant::now();
            let mut backlog = Backlog::new(per_topic, None, 0);
            let mut position = 0;
            let mut all = Vec::new();
            for step in steps {
                position += step;
                backlog.push("t", position, frame(position), now);
                all.push(position);
            }
            let expected: Vec<u64> = all.iter().copied().filter(|&p| p > after).collect();
            match backlog.plan("t", after, now) {
                Plan::Memory(frames) => proptest::prop_assert_eq!(positions(&frames), expected),
                Plan::Store { after: a, through, then } => {
                    proptest::prop_assert_eq!(a, after);
                    proptest::prop_assert!(through > after);
                    let from_store: Vec<u64> =
                        all.iter().copied().filter(|&p| p > after && p <= through).collect();
                    let mut joined = from_store;
                    joined.extend(positions(&then));
                    proptest::prop_assert_eq!(joined, expected);
                }
            }
        }
    }
}
