//! The `metrics` side of [`observe`](super): the names, the handles
//! registered once per recorder, and the plain per-connection counts that
//! reach them per burst.

use std::collections::HashMap;
use std::sync::Mutex;

use metrics::{Counter, Gauge, Key, KeyName, Label, Metadata, Recorder, SharedString, Unit};

use super::{By, HandshakeReason, PerRecorder, RateLimitAction};
use crate::error::TimeoutKind;

/// The metric names (an interface: dashboards and alerts use them).
pub mod names {
    /// Counter: connections opened (a context made for an open
    /// connection: after a handshake, or wrapped as already upgraded).
    pub const CONNECTIONS_OPENED: &str = "lockgate_connections_opened_total";
    /// Gauge: connections open now (opened, not yet ended or dropped).
    pub const CONNECTIONS_OPEN: &str = "lockgate_connections_open";
    /// Counter, labels `code` and `by` (`local` or `peer`): connections
    /// closed, counted once each when the first close frame is sent or
    /// received, or when the connection fails or ends without one.
    pub const CLOSES: &str = "lockgate_closes_total";
    /// Counter, label `reason`: opening handshakes that failed.
    pub const HANDSHAKE_FAILURES: &str = "lockgate_handshake_failures_total";
    /// Counter: data messages (text and binary) received.
    pub const MESSAGES_RECEIVED: &str = "lockgate_messages_received_total";
    /// Counter: data messages (text and binary) sent.
    pub const MESSAGES_SENT: &str = "lockgate_messages_sent_total";
    /// Counter: payload bytes of the data messages received (inflated).
    pub const BYTES_RECEIVED: &str = "lockgate_bytes_received_total";
    /// Counter: payload bytes of the data messages sent (before deflate).
    pub const BYTES_SENT: &str = "lockgate_bytes_sent_total";
    /// Counter, label `kind` (`handshake`, `keepalive`, `close`): deadlines
    /// that ended a connection or a handshake.
    pub const TIMEOUTS: &str = "lockgate_timeouts_total";
    /// Counter: writes refused because the out buffer was full
    /// (`Error::WriteBufferFull`).
    pub const WRITE_BUFFER_FULL: &str = "lockgate_write_buffer_full_total";
    /// Counter, label `action` (`throttled`, `closed`): rate-limit actions.
    pub const RATE_LIMIT_ACTIONS: &str = "lockgate_rate_limit_actions_total";
}

/// A connection's data-message counts since they last reached the
/// recorder: plain integers, added to on every message, handed over per
/// burst ([`flush`](Self::flush)).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    messages_in: u64,
    bytes_in: u64,
    messages_out: u64,
    bytes_out: u64,
}

impl Counters {
    /// The counts of a connection opened now, which is counted as opened
    /// and open.
    pub(crate) fn opened() -> Self {
        opened();
        Self::default()
    }

    /// Takes over what `other` counted and has not handed over (a split
    /// connection's sending side, rejoining).
    pub(crate) fn absorb(&mut self, other: &mut Counters) {
        let other = std::mem::take(other);
        self.messages_in += other.messages_in;
        self.bytes_in += other.bytes_in;
        self.messages_out += other.messages_out;
        self.bytes_out += other.bytes_out;
    }

    /// A data message of `bytes` payload bytes was received.
    #[inline]
    pub(crate) fn received(&mut self, bytes: usize) {
        self.messages_in += 1;
        self.bytes_in += bytes as u64;
    }

    /// A data message of `bytes` payload bytes was encoded to be sent.
    #[inline]
    pub(crate) fn sent(&mut self, bytes: usize) {
        self.messages_out += 1;
        self.bytes_out += bytes as u64;
    }

    /// Hands what was counted since the last call to the recorder. Cheap
    /// when nothing was (every message counts in `messages_*`, so bytes
    /// never wait alone).
    #[inline]
    pub(crate) fn flush(&mut self) {
        if self.messages_in | self.messages_out != 0 {
            self.hand_over();
        }
    }

    /// [`flush`](Self::flush) without the check: out of line, so that
    /// the per-message paths stay small.
    #[cold]
    #[inline(never)]
    pub(crate) fn hand_over(&mut self) {
        let counts = std::mem::take(self);
        with_handles(|handles| {
            if counts.messages_in != 0 {
                handles.messages_received.increment(counts.messages_in);
                handles.bytes_received.increment(counts.bytes_in);
            }
            if counts.messages_out != 0 {
                handles.messages_sent.increment(counts.messages_out);
                handles.bytes_sent.increment(counts.bytes_out);
            }
        });
    }
}

pub(crate) fn opened() {
    with_handles(|handles| {
        handles.opened.increment(1);
        handles.open.increment(1.0);
    });
}

pub(crate) fn ended() {
    with_handles(|handles| handles.open.decrement(1.0));
}

pub(crate) fn closed(code: u16, by: By) {
    with_handles_of(|recorder, handles| {
        let mut closes = handles
            .closes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        closes
            .entry((code, by))
            .or_insert_with(|| {
                let labels = vec![
                    Label::new("code", code.to_string()),
                    Label::from_static_parts("by", by.label()),
                ];
                recorder.register_counter(&Key::from_parts(names::CLOSES, labels), &METADATA)
            })
            .increment(1);
    });
}

pub(crate) fn timeout(kind: TimeoutKind) {
    let at = match kind {
        TimeoutKind::Handshake => 0,
        TimeoutKind::Keepalive => 1,
        TimeoutKind::Close => 2,
    };
    with_handles(|handles| handles.timeouts[at].increment(1));
}

pub(crate) fn handshake_failed(reason: HandshakeReason) {
    with_handles(|handles| handles.handshake_failures[reason as usize].increment(1));
}

pub(crate) fn write_buffer_full() {
    with_handles(|handles| handles.write_buffer_full.increment(1));
}

pub(crate) fn rate_limited(action: RateLimitAction) {
    with_handles(|handles| handles.rate_limit[action as usize].increment(1));
}

/// What every metric of lockgate is registered with.
static METADATA: Metadata<'static> =
    Metadata::new("lockgate", metrics::Level::INFO, Some(module_path!()));

/// Every handle, registered once per recorder.
struct Handles {
    opened: Counter,
    open: Gauge,
    messages_received: Counter,
    messages_sent: Counter,
    bytes_received: Counter,
    bytes_sent: Counter,
    write_buffer_full: Counter,
    /// By [`TimeoutKind`]: handshake, keepalive, close.
    timeouts: [Counter; 3],
    /// By [`HandshakeReason`].
    handshake_failures: [Counter; HandshakeReason::ALL.len()],
    /// By [`RateLimitAction`].
    rate_limit: [Counter; 2],
    /// By code and side: the codes are many (any of 3000-4999 may come
    /// from a peer), so their handles are registered as they appear, at
    /// most once per connection.
    closes: Mutex<HashMap<(u16, By), Counter>>,
}

impl Handles {
    fn register(recorder: &dyn Recorder) -> Self {
        describe(recorder);
        let counter =
            |name: &'static str| recorder.register_counter(&Key::from_static_name(name), &METADATA);
        let labelled = |name: &'static str, labels: &'static [Label]| {
            recorder.register_counter(&Key::from_static_parts(name, labels), &METADATA)
        };
        static TIMEOUT_KINDS: [[Label; 1]; 3] = [
            [Label::from_static_parts("kind", "handshake")],
            [Label::from_static_parts("kind", "keepalive")],
            [Label::from_static_parts("kind", "close")],
        ];
        static ACTIONS: [[Label; 1]; 2] = [
            [Label::from_static_parts(
                "action",
                RateLimitAction::Throttled.label(),
            )],
            [Label::from_static_parts(
                "action",
                RateLimitAction::Closed.label(),
            )],
        ];
        Self {
            opened: counter(names::CONNECTIONS_OPENED),
            open: recorder
                .register_gauge(&Key::from_static_name(names::CONNECTIONS_OPEN), &METADATA),
            messages_received: counter(names::MESSAGES_RECEIVED),
            messages_sent: counter(names::MESSAGES_SENT),
            bytes_received: counter(names::BYTES_RECEIVED),
            bytes_sent: counter(names::BYTES_SENT),
            write_buffer_full: counter(names::WRITE_BUFFER_FULL),
            timeouts: std::array::from_fn(|at| labelled(names::TIMEOUTS, &TIMEOUT_KINDS[at])),
            handshake_failures: HandshakeReason::ALL.map(|reason| {
                let label = Label::from_static_parts("reason", reason.label());
                let key = Key::from_parts(names::HANDSHAKE_FAILURES, vec![label]);
                recorder.register_counter(&key, &METADATA)
            }),
            rate_limit: std::array::from_fn(|at| labelled(names::RATE_LIMIT_ACTIONS, &ACTIONS[at])),
            closes: Mutex::default(),
        }
    }
}

/// Names, units and help texts, given to a recorder once, when lockgate
/// first reports to it.
fn describe(recorder: &dyn Recorder) {
    let counters: [(&'static str, Unit, &'static str); 10] = [
        (
            names::CONNECTIONS_OPENED,
            Unit::Count,
            "WebSocket connections opened",
        ),
        (
            names::CLOSES,
            Unit::Count,
            "WebSocket connections closed, by close code and by the side that closed first",
        ),
        (
            names::HANDSHAKE_FAILURES,
            Unit::Count,
            "WebSocket opening handshakes that failed, by reason",
        ),
        (
            names::MESSAGES_RECEIVED,
            Unit::Count,
            "WebSocket data messages received",
        ),
        (
            names::MESSAGES_SENT,
            Unit::Count,
            "WebSocket data messages sent",
        ),
        (
            names::BYTES_RECEIVED,
            Unit::Bytes,
            "Payload bytes of the WebSocket data messages received",
        ),
        (
            names::BYTES_SENT,
            Unit::Bytes,
            "Payload bytes of the WebSocket data messages sent",
        ),
        (
            names::TIMEOUTS,
            Unit::Count,
            "WebSocket deadlines that passed (handshake, keepalive, close)",
        ),
        (
            names::WRITE_BUFFER_FULL,
            Unit::Count,
            "WebSocket writes refused because the out buffer was full",
        ),
        (
            names::RATE_LIMIT_ACTIONS,
            Unit::Count,
            "WebSocket rate-limit actions (throttled, closed)",
        ),
    ];
    for (name, unit, help) in counters {
        recorder.describe_counter(
            KeyName::from_const_str(name),
            Some(unit),
            SharedString::const_str(help),
        );
    }
    recorder.describe_gauge(
        KeyName::from_const_str(names::CONNECTIONS_OPEN),
        Some(Unit::Count),
        SharedString::const_str("WebSocket connections open now"),
    );
}

/// Registers every handle with the current recorder, if it has none yet
/// (`observe::register_metrics`).
pub(crate) fn register() {
    with_handles(|_| {});
}

/// Handles registered with each recorder lockgate reports to.
static HANDLES: PerRecorder<Handles> = PerRecorder::new();

fn with_handles(f: impl FnOnce(&Handles)) {
    with_handles_of(|_, handles| f(handles));
}

/// The current recorder and its handles.
fn with_handles_of(f: impl FnOnce(&dyn Recorder, &Handles)) {
    HANDLES.with(Handles::register, f);
}
