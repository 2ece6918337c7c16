//! Latency histograms (HdrHistogram, nanoseconds, 3 significant digits).

use hdrhistogram::Histogram;
use serde::Serialize;

/// One task's latencies; merged at the end.
#[derive(Debug, Clone)]
pub(crate) struct Latency(Histogram<u64>);

/// Percentiles in microseconds.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Percentiles {
    pub(crate) samples: u64,
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
    pub(crate) p999_us: f64,
    pub(crate) max_us: f64,
}

impl Default for Latency {
    fn default() -> Self {
        Self(Histogram::new(3).expect("3 significant digits are valid"))
    }
}

impl Latency {
    pub(crate) fn record(&mut self, ns: u64) {
        // The histogram grows to fit (auto-resize), so this cannot fail
        // for a value out of range.
        let _ = self.0.record(ns);
    }

    pub(crate) fn merge(&mut self, other: &Latency) {
        // Both auto-resize, so adding cannot fail for lack of range.
        let _ = self.0.add(&other.0);
    }

    pub(crate) fn percentiles(&self) -> Option<Percentiles> {
        let h = &self.0;
        let us = |ns: u64| ns as f64 / 1e3;
        (!h.is_empty()).then(|| Percentiles {
            samples: h.len(),
            p50_us: us(h.value_at_quantile(0.50)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
        })
    }
}

impl std::fmt::Display for Percentiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "p50 {:.1}  p99 {:.1}  p999 {:.1}  max {:.1}  ({} samples)",
            self.p50_us, self.p99_us, self.p999_us, self.max_us, self.samples
        )
    }
}
