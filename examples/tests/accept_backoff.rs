//! The echo-server example when `accept` keeps failing (out of file
//! descriptors): it backs off and reports the failures a few times instead
//! of spinning and flooding stderr, and serves again once connections close.
//! tokio-lockgate/tests/accept_backoff.rs checks its tokio-echo-server.
//!
//! `cargo test` builds the examples before running tests; this test runs
//! the built binary.
#![cfg(unix)]

// The kit's program runner (std and lockgate only), compiled in rather
// than depended on: lockgate-kit as a dev-dependency here would be
// unified with the features the core's tests turn on (TLS, proptest,
// metrics, tokio), and `cargo run --example echo-server` would compile
// them all again.
#[allow(dead_code, unreachable_pub)]
#[path = "../../kit/src/programs.rs"]
mod programs;

#[test]
fn echo_server_backs_off_while_out_of_file_descriptors() {
    programs::echo_server_survives_fd_exhaustion("echo-server");
}
