//! Test support for metrics and tracing (`tests/metrics.rs` of both
//! crates): the process's recorder, a
//! `metrics-util` debugging recorder whose counts each test reads from
//! zero while it holds it, and a `tracing` subscriber that keeps every
//! span and event.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

// ----- metrics -----

static SNAPSHOTTER: OnceLock<Snapshotter> = OnceLock::new();
static SERIAL: Mutex<()> = Mutex::new(());

/// The process's recorder, held by one test at a time: what it reads
/// was counted while it held it.
pub struct Recorder {
    _serial: MutexGuard<'static, ()>,
    snapshotter: &'static Snapshotter,
}

/// Installs the debugging recorder (once per process), waits for the
/// other tests to be done with it, and starts counting from zero.
pub fn recorder() -> Recorder {
    let snapshotter = SNAPSHOTTER.get_or_init(|| {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        recorder
            .install()
            .expect("the only recorder of this process");
        snapshotter
    });
    let serial = SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    // A snapshot resets every counter and gauge.
    let _ = snapshotter.snapshot();
    Recorder {
        _serial: serial,
        snapshotter,
    }
}

impl Recorder {
    /// What was counted since the last call (or since [`recorder`]); the
    /// counts start from zero again.
    pub fn take(&self) -> Counts {
        let mut counts = Counts::default();
        for (key, _, _, value) in self.snapshotter.snapshot().into_vec() {
            let (_, key) = key.into_parts();
            let mut labels: Vec<String> = key
                .labels()
                .map(|label| format!("{}={}", label.key(), label.value()))
                .collect();
            labels.sort();
            let name = format!("{}{{{}}}", key.name(), labels.join(","));
            counts.0.insert(name, value);
        }
        counts
    }
}

/// Counter, gauge and histogram values by name and labels.
#[derive(Default)]
pub struct Counts(HashMap<String, DebugValue>);

impl Counts {
    fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<&DebugValue> {
        let mut labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        labels.sort();
        self.0.get(&format!("{name}{{{}}}", labels.join(",")))
    }

    /// A counter's value (0 if it was never registered).
    pub fn counter(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        match self.get(name, labels) {
            None => 0,
            Some(DebugValue::Counter(n)) => *n,
            Some(other) => panic!("{name} is not a counter: {other:?}"),
        }
    }

    /// How much a gauge moved (0.0 if it was never registered).
    pub fn gauge(&self, name: &str) -> f64 {
        match self.get(name, &[]) {
            None => 0.0,
            Some(DebugValue::Gauge(value)) => value.into_inner(),
            Some(other) => panic!("{name} is not a gauge: {other:?}"),
        }
    }

    /// A histogram's values, in the order recorded.
    pub fn histogram(&self, name: &str) -> Vec<f64> {
        match self.get(name, &[]) {
            None => Vec::new(),
            Some(DebugValue::Histogram(values)) => values.iter().map(|v| v.into_inner()).collect(),
            Some(other) => panic!("{name} is not a histogram: {other:?}"),
        }
    }

    /// Every metric that moved, for assertion messages.
    pub fn moved(&self) -> Vec<String> {
        let mut moved: Vec<String> = self
            .0
            .iter()
            .filter(|(_, value)| match value {
                DebugValue::Counter(n) => *n != 0,
                DebugValue::Gauge(value) => value.into_inner() != 0.0,
                DebugValue::Histogram(values) => !values.is_empty(),
            })
            .map(|(name, value)| format!("{name} = {value:?}"))
            .collect();
        moved.sort();
        moved
    }
}

impl fmt::Debug for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.moved()).finish()
    }
}

// ----- tracing -----

/// A span as it was created and recorded.
#[derive(Debug, Clone)]
pub struct SpanSeen {
    pub id: u64,
    pub name: &'static str,
    pub target: String,
    pub fields: HashMap<String, String>,
}

/// An event and the span it named as its parent.
#[derive(Debug, Clone)]
pub struct EventSeen {
    pub parent: Option<u64>,
    pub target: String,
    pub level: tracing::Level,
    pub fields: HashMap<String, String>,
}

impl EventSeen {
    pub fn message(&self) -> &str {
        self.fields.get("message").map_or("", String::as_str)
    }
}

#[derive(Debug, Default)]
struct Seen {
    spans: Vec<SpanSeen>,
    events: Vec<EventSeen>,
}

/// A subscriber that keeps every span and event (install it with
/// `tracing::subscriber::set_default` on the thread that runs the
/// connections).
#[derive(Debug, Clone, Default)]
pub struct Capture {
    seen: Arc<Mutex<Seen>>,
    next_id: Arc<AtomicU64>,
}

impl Capture {
    fn seen(&self) -> MutexGuard<'_, Seen> {
        self.seen
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Every span named `name`.
    pub fn spans(&self, name: &str) -> Vec<SpanSeen> {
        self.seen()
            .spans
            .iter()
            .filter(|span| span.name == name)
            .cloned()
            .collect()
    }

    /// Every event whose message is `message`.
    pub fn events(&self, message: &str) -> Vec<EventSeen> {
        self.seen()
            .events
            .iter()
            .filter(|event| event.message() == message)
            .cloned()
            .collect()
    }

    /// Every event, for assertion messages.
    pub fn all_events(&self) -> Vec<EventSeen> {
        self.seen().events.clone()
    }
}

/// Field values as text: strings as they are, everything else as
/// `Debug` shows it (`Display` for `%` fields).
struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let mut fields = HashMap::new();
        span.record(&mut Fields(&mut fields));
        self.seen().spans.push(SpanSeen {
            id,
            name: span.metadata().name(),
            target: span.metadata().target().to_owned(),
            fields,
        });
        Id::from_u64(id)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        let mut seen = self.seen();
        if let Some(span) = seen.spans.iter_mut().find(|s| s.id == span.into_u64()) {
            values.record(&mut Fields(&mut span.fields));
        }
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut fields = HashMap::new();
        event.record(&mut Fields(&mut fields));
        self.seen().events.push(EventSeen {
            parent: event.parent().map(Id::into_u64),
            target: event.metadata().target().to_owned(),
            level: *event.metadata().level(),
            fields,
        });
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}
