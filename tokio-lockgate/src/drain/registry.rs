//! [`Registry`]: the live connections, a slab of [`Slot`]s, and each
//! connection's [`Turn`]. Every change of a turn is a method of
//! [`Slot`].

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::Waker;

use super::{DrainHook, DrainReport, lock};

/// The live connections: a slab whose vacant entries form a free list,
/// and the counts of the drain.
#[derive(Debug, Default)]
pub(super) struct Registry {
    entries: Vec<Entry>,
    next_free: usize,
    pub(super) live: usize,
    pub(super) draining: bool,
    pub(super) counts: DrainReport,
}

#[derive(Debug)]
pub(super) enum Entry {
    Vacant { next_free: usize },
    Occupied(Arc<Slot>),
}

/// One connection's turn, and what the drain tells at its turn: the task
/// reading it, or its hub subscriber.
#[derive(Debug, Default)]
pub(super) struct Slot {
    turn: AtomicU8,
    inner: Mutex<SlotInner>,
}

#[derive(Debug, Default)]
struct SlotInner {
    waker: Option<Waker>,
    /// A hub subscriber that sends the close behind its queue.
    hook: Option<Weak<dyn DrainHook>>,
}

/// A connection's part in a drain, one byte in its slot.
///
/// ```text
///  Open ──turn──▶ Due ──its read queues the close──▶ Closing
///    │                                                  ▲
///    └──turn, with a hub subscriber that sends it───────┘
///  Open, Due, Closing ──deadline──▶ Cut ──its read sees it──▶ CutSeen
///  any ──registration dropped──▶ Released
/// ```
///
/// The drain moves it forward ([`Slot::give_turn`], [`Slot::cut`]); the
/// registered read acknowledges ([`Slot::observe`]); dropping the
/// registration ends it ([`Slot::release`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Turn {
    Open = 0,
    Due = 1,
    Closing = 2,
    Cut = 3,
    CutSeen = 4,
    Released = 5,
}

impl Turn {
    fn from_u8(turn: u8) -> Self {
        match turn {
            0 => Self::Open,
            1 => Self::Due,
            2 => Self::Closing,
            3 => Self::Cut,
            4 => Self::CutSeen,
            _ => Self::Released,
        }
    }

    /// Whether a registered read has something to do before it reads.
    fn is_actionable(self) -> bool {
        matches!(self, Self::Due | Self::Cut | Self::CutSeen)
    }
}

/// What a registered read finds in its slot (acknowledged as it looks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Seen {
    Nothing,
    /// Its turn: queue the close.
    Close,
    /// The deadline passed: end the read.
    Cut,
    /// The read was told already.
    AlreadyCut,
}

/// Whom the drain tells, once the slot's lock is released.
#[derive(Debug, Default)]
pub(super) struct Told {
    hook: Option<Arc<dyn DrainHook>>,
    waker: Option<Waker>,
}

impl Told {
    /// The turn came: the subscriber closes behind its queue, or the
    /// reading task wakes up to do it.
    pub(super) fn turn(self, frame: &lockgate::CloseFrame) {
        match (self.hook, self.waker) {
            (Some(hook), _) => hook.close_after_queued(frame),
            (None, Some(waker)) => waker.wake(),
            (None, None) => {}
        }
    }

    /// The deadline passed: both are told.
    pub(super) fn cut(self, frame: &lockgate::CloseFrame) {
        if let Some(hook) = self.hook {
            hook.cut(frame);
        }
        if let Some(waker) = self.waker {
            waker.wake();
        }
    }
}

impl Slot {
    pub(super) fn turn(&self) -> Turn {
        Turn::from_u8(self.turn.load(Ordering::Acquire))
    }

    fn advance(&self, from: Turn, to: Turn) -> bool {
        self.turn
            .compare_exchange(from as u8, to as u8, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Its turn, unless it was released: `Closing` at once when a hub
    /// subscriber sends the close, else `Due` for its reader.
    pub(super) fn give_turn(&self) -> Told {
        let mut inner = lock(&self.inner);
        let hook = inner.hook.as_ref().and_then(Weak::upgrade);
        let next = if hook.is_some() {
            Turn::Closing
        } else {
            Turn::Due
        };
        if !self.advance(Turn::Open, next) {
            return Told::default();
        }
        Told {
            hook,
            waker: inner.waker.take(),
        }
    }

    /// The deadline: cut, whatever its turn. Called with the registry
    /// locked, so never on a released slot.
    fn cut(&self) -> Told {
        let mut inner = lock(&self.inner);
        self.turn.store(Turn::Cut as u8, Ordering::Release);
        Told {
            hook: inner.hook.as_ref().and_then(Weak::upgrade),
            waker: inner.waker.take(),
        }
    }

    /// A registered read looks, and acknowledges what it saw. No lock.
    pub(super) fn observe(&self) -> Seen {
        loop {
            let (from, to, seen) = match self.turn() {
                Turn::Due => (Turn::Due, Turn::Closing, Seen::Close),
                Turn::Cut => (Turn::Cut, Turn::CutSeen, Seen::Cut),
                Turn::CutSeen => return Seen::AlreadyCut,
                Turn::Open | Turn::Closing | Turn::Released => return Seen::Nothing,
            };
            // Only the drain moves it meanwhile, and only forward.
            if self.advance(from, to) {
                return seen;
            }
        }
    }

    /// Leaves the waiting task's waker in the slot: `true` if the drain
    /// moved meanwhile, so the read looks again instead of waiting.
    pub(super) fn park(&self, waker: &Waker) -> bool {
        let mut inner = lock(&self.inner);
        if !inner.waker.as_ref().is_some_and(|w| w.will_wake(waker)) {
            inner.waker = Some(waker.clone());
        }
        self.turn().is_actionable()
    }

    /// Attaches a hub subscriber. If the turn came already and its reader
    /// has not acted on it, the subscriber must be told at once
    /// ([`Seen::Close`]), as it must be if the deadline passed
    /// ([`Seen::Cut`]).
    pub(super) fn attach(&self, hook: Weak<dyn DrainHook>) -> Option<(Arc<dyn DrainHook>, Seen)> {
        let mut inner = lock(&self.inner);
        inner.hook = Some(Weak::clone(&hook));
        let now = loop {
            match self.turn() {
                Turn::Due if self.advance(Turn::Due, Turn::Closing) => break Seen::Close,
                Turn::Due => {} // cut meanwhile
                Turn::Cut | Turn::CutSeen => break Seen::Cut,
                Turn::Open | Turn::Closing | Turn::Released => return None,
            }
        };
        drop(inner);
        Some((hook.upgrade()?, now))
    }

    /// The registration is dropped: the turn it had.
    fn release(&self) -> Turn {
        Turn::from_u8(self.turn.swap(Turn::Released as u8, Ordering::AcqRel))
    }
}

impl Registry {
    pub(super) fn insert(&mut self, slot: Arc<Slot>) -> usize {
        self.live += 1;
        let key = self.next_free;
        match self.entries.get_mut(key) {
            Some(entry) => {
                let Entry::Vacant { next_free } = *entry else {
                    unreachable!("the free list holds vacant entries")
                };
                self.next_free = next_free;
                *entry = Entry::Occupied(slot);
            }
            None => {
                self.entries.push(Entry::Occupied(slot));
                self.next_free = self.entries.len();
            }
        }
        key
    }

    /// Releases the connection at `key` and counts how it ended: `true`
    /// if it was the last one of a drain.
    pub(super) fn release(&mut self, key: usize, slot: &Slot) -> bool {
        self.entries[key] = Entry::Vacant {
            next_free: self.next_free,
        };
        self.next_free = key;
        self.live -= 1;
        let was = slot.release();
        if !self.draining {
            return false;
        }
        match was {
            Turn::Open => self.counts.left += 1,
            Turn::Due | Turn::Closing => self.counts.closed += 1,
            // Counted when cut.
            Turn::Cut | Turn::CutSeen | Turn::Released => {}
        }
        self.live == 0
    }

    /// Starts the drain: the live connections, in the order of their
    /// turns; `None` if it had started already.
    pub(super) fn start(&mut self) -> Option<Vec<Arc<Slot>>> {
        if self.draining {
            return None;
        }
        self.draining = true;
        self.counts.connections = self.live;
        let slots = self.entries.iter().filter_map(|entry| match entry {
            Entry::Occupied(slot) => Some(Arc::clone(slot)),
            Entry::Vacant { .. } => None,
        });
        Some(slots.collect())
    }

    /// The deadline: every connection still registered is cut (and
    /// counted); whom to tell.
    pub(super) fn cut(&mut self) -> Vec<Told> {
        let told: Vec<Told> = self
            .entries
            .iter()
            .filter_map(|entry| match entry {
                Entry::Occupied(slot) => Some(slot.cut()),
                Entry::Vacant { .. } => None,
            })
            .collect();
        self.counts.cut += told.len();
        told
    }
}
