//! The hub's counters through the [`metrics`](https://docs.rs/metrics)
//! facade (feature `metrics`), beside the connections' own
//! (`lockgate::observe`).
//!
//! | name | type | counts |
//! |---|---|---|
//! | `lockgate_hub_published_total` | counter | calls to [`Hub::publish`](super::Hub::publish) |
//! | `lockgate_hub_queued_total` | counter | messages queued for a subscriber (one per subscriber a publish reached) |
//! | `lockgate_hub_delivered_total` | counter | messages handed to a subscriber's connection |
//! | `lockgate_hub_dropped_total` | counter | messages not queued because a queue was full ([`SlowConsumer::Drop`](super::SlowConsumer::Drop)) |
//! | `lockgate_hub_closed_slow_total` | counter | subscribers closed because their queue was full ([`SlowConsumer::Close`](super::SlowConsumer::Close)) |
//! | `lockgate_hub_subscribers` | gauge | subscribers alive |
//! | `lockgate_hub_burst_messages` | histogram | messages a subscriber took at once: its queue depth when its connection drained it |
//!
//! They are summed over every hub of the process, like
//! [`HubStats`](super::HubStats) for one hub. Nothing is reported per
//! message: a publish reports once, whatever the number of subscribers
//! it reached, and a subscriber once per burst. Queue depth is a
//! histogram of what each burst took rather than a gauge of what is
//! waiting: exact without any shared count that publishers and
//! connections would both update.
//!
//! Every series exists, at zero, once it is registered with the recorder:
//! when the first [`Hub`](super::Hub) is made, or the hub first reports
//! to it. Call [`register_metrics`] right after installing a recorder to
//! have these and lockgate's own listed from the first scrape, before any
//! hub or connection exists (an alert on `rate()` or `absent()` then sees
//! zeros, not nothing).

use ::lockgate::observe::PerRecorder;
use ::metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};

use super::Published;

/// The metric names (an interface: dashboards and alerts use them).
pub mod names {
    /// Counter: calls to `Hub::publish`.
    pub const PUBLISHED: &str = "lockgate_hub_published_total";
    /// Counter: messages queued for a subscriber.
    pub const QUEUED: &str = "lockgate_hub_queued_total";
    /// Counter: messages handed to a subscriber's connection.
    pub const DELIVERED: &str = "lockgate_hub_delivered_total";
    /// Counter: messages not queued because a queue was full.
    pub const DROPPED: &str = "lockgate_hub_dropped_total";
    /// Counter: subscribers closed because their queue was full.
    pub const CLOSED_SLOW: &str = "lockgate_hub_closed_slow_total";
    /// Gauge: subscribers alive.
    pub const SUBSCRIBERS: &str = "lockgate_hub_subscribers";
    /// Histogram: messages a subscriber took in one burst.
    pub const BURST_MESSAGES: &str = "lockgate_hub_burst_messages";
}

/// Registers and describes (help text, unit) every metric of the hub
/// ([table](self)) and of lockgate's connections
/// ([`lockgate::observe::register_metrics`]) with the current recorder,
/// each at zero.
///
/// Call it right after installing a recorder, so that a scrape before the
/// first hub or connection already lists them. Registering twice
/// registers nothing twice: the handles are kept per recorder.
///
/// # Examples
///
/// ```
/// use metrics_util::debugging::DebuggingRecorder;
/// use tokio_lockgate::hub::metrics::names;
///
/// // A recorder (an exporter's `install` makes a global one), then:
/// let recorder = DebuggingRecorder::new();
/// let snapshotter = recorder.snapshotter();
/// metrics::with_local_recorder(&recorder, tokio_lockgate::hub::metrics::register_metrics);
///
/// let snapshot = snapshotter.snapshot().into_vec();
/// let registered = |name: &str| snapshot.iter().any(|(key, ..)| key.key().name() == name);
/// assert!(registered(names::SUBSCRIBERS));
/// assert!(registered(tokio_lockgate::lockgate::observe::names::MESSAGES_RECEIVED));
/// ```
pub fn register_metrics() {
    ::lockgate::observe::register_metrics();
    register_hub();
}

/// Registers the hub's handles with the current recorder, if it has none
/// yet (a hub was made).
pub(super) fn register_hub() {
    with_handles(|_| {});
}

/// One publish: what it queued, dropped and closed.
pub(super) fn published(published: &Published) {
    with_handles(|handles| {
        handles.published.increment(1);
        let counts = [
            (&handles.queued, published.queued),
            (&handles.dropped, published.dropped),
            (&handles.closed_slow, published.closed),
        ];
        for (counter, n) in counts {
            if n > 0 {
                counter.increment(n as u64);
            }
        }
    });
}

/// A subscriber took a burst of `n` messages for its connection.
pub(super) fn delivered(n: usize) {
    with_handles(|handles| {
        handles.delivered.increment(n as u64);
        handles.burst.record(n as f64);
    });
}

pub(super) fn subscriber_added() {
    with_handles(|handles| handles.subscribers.increment(1.0));
}

pub(super) fn subscriber_removed() {
    with_handles(|handles| handles.subscribers.decrement(1.0));
}

static METADATA: Metadata<'static> = Metadata::new(
    "tokio_lockgate",
    ::metrics::Level::INFO,
    Some(module_path!()),
);

struct Handles {
    published: Counter,
    queued: Counter,
    delivered: Counter,
    dropped: Counter,
    closed_slow: Counter,
    subscribers: Gauge,
    burst: Histogram,
}

impl Handles {
    fn register(recorder: &dyn Recorder) -> Self {
        let counters: [(&'static str, &'static str); 5] = [
            (names::PUBLISHED, "Messages published to the hub"),
            (names::QUEUED, "Messages queued for a hub subscriber"),
            (
                names::DELIVERED,
                "Messages handed to a hub subscriber's connection",
            ),
            (
                names::DROPPED,
                "Messages not queued because a hub subscriber's queue was full",
            ),
            (
                names::CLOSED_SLOW,
                "Hub subscribers closed because their queue was full",
            ),
        ];
        for (name, help) in counters {
            recorder.describe_counter(
                KeyName::from_const_str(name),
                Some(Unit::Count),
                SharedString::const_str(help),
            );
        }
        recorder.describe_gauge(
            KeyName::from_const_str(names::SUBSCRIBERS),
            Some(Unit::Count),
            SharedString::const_str("Hub subscribers alive"),
        );
        recorder.describe_histogram(
            KeyName::from_const_str(names::BURST_MESSAGES),
            Some(Unit::Count),
            SharedString::const_str(
                "Messages a hub subscriber took at once (its queue depth when drained)",
            ),
        );
        let counter =
            |name: &'static str| recorder.register_counter(&Key::from_static_name(name), &METADATA);
        Self {
            published: counter(names::PUBLISHED),
            queued: counter(names::QUEUED),
            delivered: counter(names::DELIVERED),
            dropped: counter(names::DROPPED),
            closed_slow: counter(names::CLOSED_SLOW),
            subscribers: recorder
                .register_gauge(&Key::from_static_name(names::SUBSCRIBERS), &METADATA),
            burst: recorder
                .register_histogram(&Key::from_static_name(names::BURST_MESSAGES), &METADATA),
        }
    }
}

/// Handles registered once per recorder, as lockgate's own.
static HANDLES: PerRecorder<Handles> = PerRecorder::new();

fn with_handles(f: impl FnOnce(&Handles)) {
    HANDLES.with(Handles::register, |_, handles| f(handles));
}
