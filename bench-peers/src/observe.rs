//! `--features metrics`: lockgate and tokio-lockgate count through the
//! `metrics` facade into metrics-exporter-prometheus' recorder (installed,
//! not served), so the rows show what counting costs. Off by default.

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

/// What the report says about this build.
pub(crate) const NOTE: &str = "- **metrics on**: lockgate and tokio-lockgate built with their \
     `metrics` feature, counting into metrics-exporter-prometheus' recorder (installed, not \
     served)\n\n";

/// Installs the recorder for the whole run.
pub(crate) fn install() -> PrometheusHandle {
    PrometheusBuilder::new()
        .install_recorder()
        .expect("no other recorder in this process")
}

/// lockgate's message counters as the recorder has them, to stderr: the
/// counting did happen.
pub(crate) fn summary(handle: &PrometheusHandle) {
    for line in handle.render().lines() {
        if line.starts_with("lockgate_messages_") || line.starts_with("lockgate_connections_opened")
        {
            eprintln!("{line}");
        }
    }
}
