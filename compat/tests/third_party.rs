//! The ported examples with a WebSocket implementation neither crate
//! wrote: Python `websockets`, the interop tests' peer
//! (`interop/peers/python_{client,server}.py`, whose headers describe
//! their scenarios and JSON output), installed by
//! `bash scripts/install-interop-peers.sh`. A missing peer fails these
//! tests, as it fails the interop tests: `scripts/test.sh` installs it
//! before running this package.
#![warn(missing_docs, unreachable_pub)]
#![deny(unsafe_code)]

mod support;

use support::{Program, bounded, claim_port, free_address, python};

/// Runs `python_client.py URL SCENARIO ARGS...` to its end and returns its
/// JSON lines, checking it exited 0.
fn python_client(url: &str, scenario: &[&str]) -> Vec<String> {
    let mut command = python("python_client.py");
    command.arg(url).args(scenario);
    let mut client = Program::spawn("python websockets client", command);
    let (status, lines) = client.wait_exit();
    assert!(
        status.success(),
        "python client failed ({status}): {lines:#?}"
    );
    lines
}

/// Checks the output of the `messages` scenario: four echoes (a small
/// text and binary, 64 KiB of each), then the close handshake the client
/// started with 1000 "done" completed (`closed` reports the code the server
/// answered with; websockets reports 1006 if none came).
fn assert_messages_echoed(lines: &[String]) {
    let echoes = lines
        .iter()
        .filter(|l| l.contains(r#""event": "echo""#))
        .count();
    assert_eq!(echoes, 4, "four echoes in {lines:#?}");
    let closed = lines
        .iter()
        .find(|l| l.contains(r#""event": "closed""#))
        .unwrap_or_else(|| panic!("no closed event in {lines:#?}"));
    assert!(closed.contains(r#""code": 1000"#), "{closed}");
}

/// Checks the output of the `ping` scenario: the pong for the client's
/// ping came back with its payload.
fn assert_pong(lines: &[String], data: &str) {
    let pong = format!(r#"{{"event": "pong", "data": "{data}"}}"#);
    assert!(lines.contains(&pong), "no {pong} in {lines:#?}");
}

/// websockets' client against the ported tokio-tungstenite `echo-server`.
#[test]
fn python_client_with_tokio_echo_server() {
    bounded();
    let (addr, port) = free_address();
    let mut server = Program::example("tokio-tungstenite-echo-server", &[&addr], &[]);
    server.wait_listening(port);
    let url = format!("ws://{addr}/");

    assert_messages_echoed(&python_client(&url, &["messages"]));
    assert_pong(
        &python_client(&url, &["ping", "are you there"]),
        "are you there",
    );
    assert!(server.is_running());
}

/// websockets' client against the ported tungstenite `server`
/// (127.0.0.1:3012, fixed).
#[test]
fn python_client_with_tungstenite_server() {
    bounded();
    let _port = claim_port(3012);
    let mut server = Program::example("tungstenite-server", &[], &[]);
    server.wait_listening(3012);
    let url = "ws://127.0.0.1:3012/python";

    assert_messages_echoed(&python_client(url, &["messages"]));
    server.expect_line("The request's path is: /python");
    assert_pong(
        &python_client(url, &["ping", "are you there"]),
        "are you there",
    );
    assert!(server.is_running());
}

/// The ported tokio-tungstenite `client` against websockets' echo server.
#[test]
fn tokio_client_with_python_echo_server() {
    bounded();
    let mut peer = Program::spawn("python websockets server", python("python_server.py"));
    let listening = peer.expect_line(r#""event": "listening""#);
    let port: u16 = listening
        .rsplit(':')
        .next()
        .and_then(|rest| rest.trim().trim_end_matches('}').trim().parse().ok())
        .unwrap_or_else(|| panic!("no port in {listening}"));

    let url = format!("ws://127.0.0.1:{port}/echo");
    let mut client = Program::example("tokio-tungstenite-client", &[&url], &[]);
    client.expect_line("WebSocket handshake has been successfully completed");
    peer.expect_line(r#""event": "open""#);
    for line in ["hello, websockets", "ünïcödé ✓"] {
        client.type_line(line);
        assert_eq!(client.next_line().as_deref(), Some(line));
    }
}
