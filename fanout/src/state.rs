//! [`NodeState`]: what a node's tasks share: the hub, the drain its
//! connections are registered with, whether the broker is reachable, and
//! the counters.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio_lockgate::CloseCode;
use tokio_lockgate::drain::Drain;
use tokio_lockgate::hub::Hub;

/// Shared by the accept loop, every connection and the relay.
#[derive(Debug)]
pub(crate) struct NodeState {
    pub(crate) hub: Hub,
    /// Every client connection, for a graceful shutdown.
    pub(crate) drain: Drain,
    /// Whether the broker is reachable (always, for a standalone node).
    broker_up: AtomicBool,
    /// How many times the broker connection came back: what was published
    /// meanwhile never reached the node, and a history must catch up.
    #[cfg(feature = "nats")]
    broker_returned: tokio::sync::watch::Sender<u64>,
    pub(crate) counters: Counters,
}

/// A node's counters since it started.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) accepted: AtomicU64,
    pub(crate) open: AtomicU64,
    pub(crate) refused_path: AtomicU64,
    pub(crate) refused_unavailable: AtomicU64,
    pub(crate) refused_draining: AtomicU64,
    pub(crate) handshake_failed: AtomicU64,
    pub(crate) from_clients: AtomicU64,
    pub(crate) relayed_out: AtomicU64,
    pub(crate) relayed_in: AtomicU64,
    pub(crate) relay_errors: AtomicU64,
    pub(crate) broker_lost: AtomicU64,
    pub(crate) broker_back: AtomicU64,
}

/// A snapshot of a node's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct NodeStats {
    /// WebSocket connections accepted.
    pub accepted: u64,
    /// WebSocket connections open now.
    pub open: u64,
    /// Upgrades refused with 404: not a `/topics/NAME` path.
    pub refused_path: u64,
    /// Upgrades refused with 503 while the broker was unreachable.
    pub refused_unavailable: u64,
    /// Upgrades refused with 503 (and `Retry-After`) while draining.
    pub refused_draining: u64,
    /// Opening handshakes that failed otherwise.
    pub handshake_failed: u64,
    /// Data messages received from this node's clients and published to
    /// its hub (with a history: stored in it).
    pub from_clients: u64,
    /// Messages published to the broker (with a history on JetStream:
    /// acknowledged by it).
    pub relayed_out: u64,
    /// Messages received from the broker (other nodes' clients) and
    /// published to the hub (with a history: every message delivered from
    /// it, this node's clients' included).
    pub relayed_in: u64,
    /// Messages that could not be relayed (in or out).
    pub relay_errors: u64,
    /// Times the broker connection was lost.
    pub broker_lost: u64,
    /// Times it came back.
    pub broker_back: u64,
    /// Whether the broker is reachable now (always for a standalone node).
    pub broker_up: bool,
}

/// The close code a node's clients get when it loses its broker: they
/// would miss other nodes' messages, so they should reconnect, perhaps to
/// another node.
pub const BROKER_LOST: CloseCode = CloseCode::Again;

impl NodeState {
    pub(crate) fn new(hub: Hub) -> Self {
        Self {
            hub,
            drain: Drain::new(),
            broker_up: AtomicBool::new(true),
            #[cfg(feature = "nats")]
            broker_returned: tokio::sync::watch::Sender::new(0),
            counters: Counters::default(),
        }
    }

    /// Whether new clients are accepted: not while the broker is away.
    pub(crate) fn accepting(&self) -> bool {
        self.broker_up.load(Ordering::Acquire)
    }

    #[cfg(feature = "nats")]
    /// The broker connection is gone: every client is told at once, since
    /// from now on it would silently miss other nodes' messages.
    pub(crate) fn broker_lost(&self) {
        if self.broker_up.swap(false, Ordering::AcqRel) {
            self.counters.broker_lost.fetch_add(1, Ordering::Relaxed);
            self.hub
                .close_all(BROKER_LOST, "broadcast broker unreachable; reconnect");
            eprintln!(
                "lockgate-fanout: broker connection lost: clients closed with 1013, new ones refused"
            );
        }
    }

    #[cfg(feature = "nats")]
    pub(crate) fn broker_back(&self) {
        if !self.broker_up.swap(true, Ordering::AcqRel) {
            self.counters.broker_back.fetch_add(1, Ordering::Relaxed);
            self.broker_returned.send_modify(|returns| *returns += 1);
            eprintln!("lockgate-fanout: broker connection back: accepting clients");
        }
    }

    #[cfg(feature = "nats")]
    /// How many times the broker connection came back.
    pub(crate) fn broker_returned(&self) -> u64 {
        *self.broker_returned.borrow()
    }

    #[cfg(feature = "nats")]
    /// Changes each time the broker connection comes back.
    pub(crate) fn broker_returns(&self) -> tokio::sync::watch::Receiver<u64> {
        self.broker_returned.subscribe()
    }

    pub(crate) fn stats(&self) -> NodeStats {
        let c = &self.counters;
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        NodeStats {
            accepted: get(&c.accepted),
            open: get(&c.open),
            refused_path: get(&c.refused_path),
            refused_unavailable: get(&c.refused_unavailable),
            refused_draining: get(&c.refused_draining),
            handshake_failed: get(&c.handshake_failed),
            from_clients: get(&c.from_clients),
            relayed_out: get(&c.relayed_out),
            relayed_in: get(&c.relayed_in),
            relay_errors: get(&c.relay_errors),
            broker_lost: get(&c.broker_lost),
            broker_back: get(&c.broker_back),
            broker_up: self.accepting(),
        }
    }
}

/// Adds one to a counter.
pub(crate) fn count(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}
