//! The short examples of the entry points, run as programs: each is a
//! server and a client in one process on 127.0.0.1:0, must print what it
//! shows, and exit with status 0. (`production_example.rs` runs the
//! production example, the axum extractor's.)

use lockgate_kit as support;

use support::programs::Program;

#[test]
fn drain() {
    let _ = Program::start("drain", &[]).runs_to_completion(&[
        "3 connection(s) registered",
        "a new client during the drain: 503 Service Unavailable",
        "a client was closed: 1001 draining",
        "drain report: 3 connection(s), 3 closed, 0 left before their turn, 0 cut",
    ]);
}

#[test]
fn hub() {
    let _ = Program::start("hub", &[]).runs_to_completion(&[
        "3 subscriber(s) on \"news\"",
        "queued for 3 subscriber(s)",
        "client 2 got: canal closed for repairs",
        "hub: 3 published, 9 delivered, 0 dropped",
    ]);
}

#[test]
fn client_async() {
    let _ = Program::start("client-async", &[]).runs_to_completion(&[
        "handshake: 101",
        "echo: over a stream I dialled",
        "closed cleanly",
    ]);
}

#[test]
fn accept_hdr_async() {
    let _ = Program::start("accept-hdr-async", &[]).runs_to_completion(&[
        "without x-room-token: 401 Unauthorized",
        "server: upgrade to room \"lobby\"",
        "x-room-greeting: Some(\"welcome to lobby\")",
        "closed cleanly",
    ]);
}

/// Its counters, rendered by the Prometheus exporter, and its events,
/// printed by `tracing-subscriber` (asked for with `RUST_LOG`).
#[cfg(all(feature = "metrics", feature = "tracing"))]
#[test]
fn observe() {
    let mut command = std::process::Command::new(support::programs::example_path("observe"));
    command.env("RUST_LOG", "lockgate=debug");
    let program = Program::spawn("observe", command).runs_to_completion(&[
        "lockgate_connections_opened_total 2",
        "lockgate_messages_received_total 6",
    ]);
    // On stderr, so not in order with the lines above.
    let stderr = program.stderr_lines();
    assert!(
        stderr.iter().any(|line| line.contains("closed code=1000")),
        "{stderr:#?}"
    );
}

#[cfg(feature = "rustls")]
#[test]
fn private_ca() {
    let _ = Program::start("private-ca", &[]).runs_to_completion(&[
        "wrote the CA certificate to",
        "trusting 1 certificate(s) from",
        "101 Switching Protocols",
        "reply: hello over a private CA",
        "closed cleanly",
    ]);
}
