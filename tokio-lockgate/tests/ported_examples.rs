//! tokio-tungstenite's echo server, chat server and client, ported by
//! renaming the crates only (`examples/tungstenite/`), run as the programs
//! they are: what a user porting such code relies on is that it behaves
//! as before, not just that it compiles.
//!
//! `cargo test` builds the examples before running tests; this test runs
//! the built binaries.

mod support;

use support::programs::{Program, free_address};

#[test]
fn ported_echo_server_echoes_what_the_ported_client_types() {
    let addr = free_address();
    let server = Program::start("tungstenite-echo-server", &[&addr]);
    server.expect_line("Listening on");

    let url = format!("ws://{addr}/");
    let mut client = Program::start("tungstenite-client", &[&url]);
    client.expect_line("handshake has been successfully completed");
    for line in ["hello from a port", "a second line"] {
        client.type_line(line);
        client.expect_line(line);
    }
}

#[test]
fn ported_chat_server_relays_between_ported_clients() {
    let addr = free_address();
    let server = Program::start("tungstenite-server", &[&addr]);
    server.expect_line("Listening on");

    let url = format!("ws://{addr}/");
    let mut alice = Program::start("tungstenite-client", &[&url]);
    alice.expect_line("handshake has been successfully completed");
    server.expect_line("WebSocket connection established");
    let mut bob = Program::start("tungstenite-client", &[&url]);
    bob.expect_line("handshake has been successfully completed");
    server.expect_line("WebSocket connection established");

    alice.type_line("hi bob");
    bob.expect_line("hi bob");
    server.expect_line("Received a message from");
    bob.type_line("hi alice");
    alice.expect_line("hi alice");
}
