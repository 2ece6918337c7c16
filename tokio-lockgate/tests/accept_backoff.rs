//! The tokio-echo-server example when `accept` keeps failing (out of file
//! descriptors): it backs off and reports the failures a few times instead
//! of spinning and flooding stderr, and serves again once connections close.
//! The blocking echo-server's twin is tests/accept_backoff.rs at the root.
//!
//! `cargo test` builds the examples before running tests; this test runs
//! the built binary.
#![cfg(unix)]

use lockgate_kit as support;

#[test]
fn tokio_echo_server_backs_off_while_out_of_file_descriptors() {
    support::programs::echo_server_survives_fd_exhaustion("tokio-echo-server");
}
