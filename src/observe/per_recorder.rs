//! Metric handles registered once per recorder.

use std::sync::OnceLock;

use metrics::Recorder;

/// How many recorders get handles kept for them; past that, handles are
/// registered on every use.
const SLOTS: usize = 4;

/// A library's metric handles (`H`: its counters, gauges, histograms),
/// registered once with each recorder it reports to, so that counting is
/// an atomic add on a handle rather than a registry lookup. lockgate's
/// own counters and tokio-lockgate's hub use one each.
///
/// Keyed by the recorder's address: a process usually sees two, the no-op
/// recorder (before one is installed) and the global one. Each is found
/// with a few loads, without a lock or a read-modify-write; past four
/// recorders (thread-local recorders made over and over) the handles are
/// registered on every use.
///
/// ```
/// use lockgate::observe::PerRecorder;
/// use metrics::{Counter, Key, Metadata, Level};
///
/// static METADATA: Metadata<'static> = Metadata::new("my_crate", Level::INFO, None);
/// static HANDLES: PerRecorder<Counter> = PerRecorder::new();
///
/// fn count_a_job() {
///     HANDLES.with(
///         |recorder| recorder.register_counter(&Key::from_static_name("my_jobs_total"), &METADATA),
///         |_, jobs| jobs.increment(1),
///     );
/// }
/// # count_a_job();
/// ```
#[derive(Debug)]
pub struct PerRecorder<H> {
    slots: [OnceLock<(usize, H)>; SLOTS],
}

impl<H> PerRecorder<H> {
    /// No handles yet: a `static`'s initialiser.
    pub const fn new() -> Self {
        Self {
            slots: [const { OnceLock::new() }; SLOTS],
        }
    }

    /// Calls `f` with the current recorder and its handles, made by
    /// `register` the first time that recorder is seen.
    pub fn with<R>(
        &self,
        register: fn(&dyn Recorder) -> H,
        f: impl FnOnce(&dyn Recorder, &H) -> R,
    ) -> R {
        metrics::with_recorder(|recorder| {
            let id = std::ptr::from_ref(recorder).cast::<()>().addr();
            for slot in &self.slots {
                let (key, handles) = slot.get_or_init(|| (id, register(recorder)));
                if *key == id {
                    return f(recorder, handles);
                }
            }
            f(recorder, &register(recorder))
        })
    }
}

impl<H> Default for PerRecorder<H> {
    fn default() -> Self {
        Self::new()
    }
}
