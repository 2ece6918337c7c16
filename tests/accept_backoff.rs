//! The echo-server example when `accept` keeps failing (out of file
//! descriptors): it backs off and reports the failures a few times instead
//! of spinning and flooding stderr, and serves again once connections close.
//! tokio-lockgate/tests/accept_backoff.rs checks its tokio-echo-server.
//!
//! `cargo test` builds the examples before running tests; this test runs
//! the built binary.
#![cfg(unix)]

use lockgate_kit as support;

#[test]
fn echo_server_backs_off_while_out_of_file_descriptors() {
    support::programs::echo_server_survives_fd_exhaustion("echo-server");
}
