//! [`Delivery`]: a node's task that delivers what the JetStream stream
//! stored, in stream order, topic by topic without a gap.
//!
//! The stream republishes every message it stores, with the position of
//! its topic's previous message; the node checks that against what it
//! delivered ([`Continuity`]) and reads what it missed from the stream's
//! leader first. Two things can still leave a hole that no later message
//! reveals, and are handled here:
//!
//! - the broker connection was lost: whatever was republished meanwhile
//!   never arrived. Once it is back the node probes again, and vouches for
//!   nothing before the probe (clients are refused until then);
//! - a republished message was lost without a reconnect (a slow
//!   subscription, a leader that died between storing and republishing):
//!   positions are consecutive, so a message whose position is not the
//!   next one says some were missed, and they are read from the stream;
//!   and when nothing has arrived for a while, the node compares the
//!   stream's last position with the last it saw, and reads the
//!   difference.

use std::sync::Weak;
use std::sync::atomic::Ordering;
use std::time::Duration;

use async_nats::header::{NATS_LAST_SEQUENCE, NATS_SEQUENCE, NATS_SUBJECT};
use async_nats::jetstream as js;
use bytes::Bytes;
use futures_util::StreamExt;
use tokio::sync::watch;
use tokio::time::Instant;

use super::continuity::{Continuity, Verdict};
use super::jetstream::{STUCK_CONNECTION, Stream, probe, sequence, topic_of};
use super::{History, Store};
use crate::state::count;

/// How long the stream must have been quiet (nothing republished) before
/// the node checks that it saw its last message.
const AUDIT_QUIET: Duration = Duration::from_millis(500);

/// How often it may check.
const AUDIT_EVERY: Duration = Duration::from_secs(1);

/// The delivery task's state.
pub(super) struct Delivery {
    pub(super) history: Weak<History>,
    pub(super) context: js::Context,
    pub(super) stored: async_nats::Subscriber,
    pub(super) node: String,
    pub(super) continuity: Continuity,
    pub(super) last_arrival: Instant,
}

impl Delivery {
    /// Runs until the node is gone or the subscription ends.
    pub(super) async fn run(mut self, mut broker_returns: watch::Receiver<u64>) {
        let mut audits = tokio::time::interval(AUDIT_EVERY);
        audits.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                message = self.stored.next() => match message {
                    Some(message) => {
                        if !self.republished(message).await {
                            return;
                        }
                    }
                    None => return,
                },
                changed = broker_returns.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    let returns = *broker_returns.borrow_and_update();
                    if !self.catch_up_after_return(returns).await {
                        return;
                    }
                }
                _ = audits.tick() => {
                    if self.last_arrival.elapsed() >= AUDIT_QUIET && !self.audit().await {
                        return;
                    }
                }
            }
        }
    }

    /// Delivers one republished message; `false` once the node is gone.
    async fn republished(&mut self, message: async_nats::Message) -> bool {
        let Some(history) = self.history.upgrade() else {
            return false;
        };
        self.last_arrival = Instant::now();
        let Some(position) = sequence(&message, NATS_SEQUENCE) else {
            count(&history.state.counters.relay_errors);
            return true;
        };
        if let Some((after, through)) = self.continuity.arrived(position) {
            self.read_missed(&history, after, through).await;
        }
        let Some(topic) = message
            .headers
            .as_ref()
            .and_then(|h| h.get(NATS_SUBJECT))
            .and_then(|subject| topic_of(subject.as_str()))
        else {
            // The probes.
            return true;
        };
        let previous = sequence(&message, NATS_LAST_SEQUENCE).unwrap_or(0);
        self.deliver(&history, topic, position, previous, &message.payload)
            .await;
        true
    }

    /// Delivers message `position` of `topic`, after the ones before it
    /// that this node missed.
    async fn deliver(
        &mut self,
        history: &History,
        topic: &str,
        position: u64,
        previous: u64,
        payload: &[u8],
    ) {
        match self.continuity.check(topic, position, previous) {
            Verdict::Skip => return,
            Verdict::Deliver => {}
            Verdict::FillAfter(after) => {
                match stream(history).read(topic, after, position - 1).await {
                    Ok(missed) => {
                        for (missed_position, payload) in missed {
                            history.deliver(topic, missed_position, &payload).await;
                            self.continuity.delivered(topic, missed_position);
                        }
                    }
                    Err(e) => {
                        // Live subscribers miss them; the backlog no longer
                        // vouches for anything before this message, so that
                        // resuming clients read them from the stream.
                        count(&history.state.counters.relay_errors);
                        eprintln!("lockgate-fanout: history: reading missed messages: {e}");
                        history.lock().restart(position - 1);
                    }
                }
            }
        }
        history.deliver(topic, position, payload).await;
        self.continuity.delivered(topic, position);
    }

    /// After the broker connection came back: probes until the broker
    /// republishes to this node again, then delivers what follows the
    /// probe and lets clients in. `false` once the node is gone.
    async fn catch_up_after_return(&mut self, returns: u64) -> bool {
        let returned = Instant::now();
        let mut failing_since = None;
        let through = loop {
            match probe(&self.context, &mut self.stored, &self.node).await {
                Ok(through) => {
                    if failing_since.is_some() {
                        eprintln!(
                            "lockgate-fanout: history caught up {:.1} s after the broker returned",
                            returned.elapsed().as_secs_f64()
                        );
                    }
                    break through;
                }
                Err(e) => {
                    eprintln!("lockgate-fanout: history after reconnecting: {e}; trying again");
                    // Seen on nats-server 2.9 after its stream leader's
                    // server died: a connection that moved to another
                    // server is answered "no responders" long after the
                    // new leader's election, while a new connection is
                    // not. A fresh connection it gets.
                    let since = *failing_since.get_or_insert(returned);
                    if since.elapsed() > STUCK_CONNECTION {
                        eprintln!("lockgate-fanout: history: reconnecting to the broker");
                        let _ = self.context.client().force_reconnect().await;
                        failing_since = Some(Instant::now());
                    }
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
            if self.history.strong_count() == 0 {
                return false;
            }
        };
        let Some(history) = self.history.upgrade() else {
            return false;
        };
        self.continuity.restart(through);
        self.last_arrival = Instant::now();
        history.lock().restart(through);
        stream(&history).caught_up.store(returns, Ordering::Release);
        true
    }

    /// Reads from the stream what it stored after the last position
    /// republished to this node, if anything: lost on the way, it would
    /// otherwise wait for the next message of its topic. `false` once the
    /// node is gone.
    async fn audit(&mut self) -> bool {
        let Some(history) = self.history.upgrade() else {
            return false;
        };
        let stream = stream(&history);
        let last = match stream.last_position().await {
            Ok(last) => last,
            // Asked again at the next tick.
            Err(_) => return true,
        };
        if let Some((after, through)) = self.continuity.ends_at(last) {
            self.read_missed(&history, after, through).await;
        }
        self.last_arrival = Instant::now();
        true
    }
}

impl Delivery {
    /// Reads what the stream stored in `after + 1 ..= through`, which never
    /// arrived, and delivers it.
    async fn read_missed(&mut self, history: &History, after: u64, through: u64) {
        match stream(history).read_all(after, through).await {
            Ok(missed) => {
                for (position, topic, payload) in missed {
                    self.deliver(history, &topic, position, 0, &payload).await;
                }
            }
            Err(e) => {
                // Resuming clients read them from the stream.
                count(&history.state.counters.relay_errors);
                eprintln!("lockgate-fanout: history: reading missed messages: {e}");
                history.lock().restart(through);
            }
        }
    }
}

fn stream(history: &History) -> &Stream {
    match &history.store {
        Store::JetStream(stream) => stream,
        Store::Local(_) => unreachable!("delivered from JetStream"),
    }
}

/// What [`Stream::read_all`] returns: position, topic, stored form.
pub(super) type Stored = (u64, String, Bytes);
