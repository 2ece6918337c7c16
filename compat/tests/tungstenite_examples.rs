//! tungstenite 0.30.0's examples, ported by renaming the crate only
//! (`examples/tungstenite/`), run as the programs they are. They hard-code
//! 127.0.0.1:3012 (the servers) and ws://localhost:3012/socket (the
//! client), so these tests take turns ([`support::claim_port`]).
//!
//! `autobahn-client` needs the Autobahn suite and is run by
//! `compat/run-autobahn.sh`; `autobahn-server` is run there too, and here
//! only checked to echo.
#![warn(missing_docs, unreachable_pub)]
#![deny(unsafe_code)]

mod support;

use support::{BINARY, Handshake, Program, RawWs, TEXT, bounded, claim_port};

/// `server` (an echo server whose handshake callback prints the request
/// and adds two headers) and `client` (prints the response's status and
/// header names, sends "Hello WebSocket", prints what comes back).
#[test]
fn client_and_server_echo_and_show_custom_headers() {
    bounded();
    let _port = claim_port(3012);
    let mut server = Program::example("tungstenite-server", &[], &[]);
    server.wait_listening(3012);

    let mut client = Program::example("tungstenite-client", &[], &[]);
    client.expect_line("Connected to the server");
    client.expect_line("Response HTTP code: 101 Switching Protocols");
    client.expect_line("* mycustomheader");
    client.expect_line("* some_tungstenite_header");
    client.expect_line("Received: Hello WebSocket");

    server.expect_line("Received a new ws handshake");
    server.expect_line("The request's path is: /socket");
    server.expect_line("* sec-websocket-key");

    // The same server seen from the raw client: the headers' values, an
    // echo of text and binary.
    let (mut ws, response) = RawWs::connect("127.0.0.1:3012", "/raw");
    assert_eq!(
        response.header("mycustomheader"),
        Some(":)"),
        "{response:?}"
    );
    assert_eq!(
        response.header("some_tungstenite_header"),
        Some("header_value"),
        "{response:?}"
    );
    server.expect_line("The request's path is: /raw");
    ws.send_text("raw hello");
    assert_eq!(ws.recv_text(), "raw hello");
    ws.send(BINARY, b"\x00\xff", true);
    let frame = ws.recv().expect("the binary echo");
    assert_eq!(
        (frame.opcode, frame.payload),
        (BINARY, b"\x00\xff".to_vec())
    );
}

/// `callback-error` refuses every handshake from its callback with
/// 403 "Access denied"; `client` fails to connect.
#[test]
fn callback_error_refuses_with_403() {
    bounded();
    let _port = claim_port(3012);
    let mut server = Program::example("tungstenite-callback-error", &[], &[]);
    server.wait_listening(3012);

    let Handshake::Refused(response) = RawWs::handshake("127.0.0.1:3012", "/") else {
        panic!("callback-error accepted a handshake");
    };
    assert_eq!(response.status, 403, "{response:?}");
    assert_eq!(
        String::from_utf8_lossy(&response.body),
        "Access denied",
        "{response:?}"
    );

    let mut client = Program::example("tungstenite-client", &[], &[]);
    let (status, lines) = client.wait_exit();
    assert!(!status.success(), "the client must fail: {lines:#?}");
    let panic = lines
        .iter()
        .find(|line| line.contains("Can't connect"))
        .unwrap_or_else(|| panic!("no \"Can't connect\" panic: {lines:#?}"));
    assert!(panic.contains("403"), "the error names the status: {panic}");
    assert!(server.is_running());
}

/// `srv_accept_unmasked_frames` accepts frames a client did not mask (which
/// RFC 6455 forbids, and a default server refuses) and prints them.
#[test]
fn srv_accept_unmasked_frames_prints_an_unmasked_message() {
    bounded();
    let _port = claim_port(3012);
    let mut server = Program::example("tungstenite-srv_accept_unmasked_frames", &[], &[]);
    server.wait_listening(3012);

    let (mut ws, response) = RawWs::connect("127.0.0.1:3012", "/legacy");
    assert_eq!(
        response.header("mycustomheader"),
        Some(":)"),
        "{response:?}"
    );
    server.expect_line("The request's path is: /legacy");
    ws.send(TEXT, b"unmasked hello", false);
    server.expect_line("received message unmasked hello");
    ws.send(TEXT, b"masked hello", true);
    server.expect_line("received message masked hello");
    ws.send(TEXT, b"unmasked again", false);
    server.expect_line("received message unmasked again");
}

/// `autobahn-server` (127.0.0.1:9002, fixed) echoes text and binary.
#[test]
fn autobahn_server_echoes() {
    bounded();
    let _port = claim_port(9002);
    let mut server = Program::example("tungstenite-autobahn-server", &[], &[]);
    server.wait_listening(9002);

    let (mut ws, _) = RawWs::connect("127.0.0.1:9002", "/");
    ws.send_text("autobahn");
    assert_eq!(ws.recv_text(), "autobahn");
    let big = vec![7; 100_000];
    ws.send(BINARY, &big, true);
    let frame = ws.recv().expect("the binary echo");
    assert_eq!((frame.opcode, frame.payload.len()), (BINARY, big.len()));
    assert_eq!(frame.payload, big);
    ws.send_close(1000);
    let (close, data) = ws.recv_until_close();
    assert!(data.is_empty(), "{data:?}");
    assert_eq!(close.as_deref(), Some(&1000u16.to_be_bytes()[..]));
}
