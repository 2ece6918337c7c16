//! The loadgen binary as a user runs it: every mode against its embedded
//! server, the JSON summary adding up, usage errors that stay short, and
//! failures that say what went wrong.

mod support;

use std::io::{Read, Write};
use std::net::TcpListener;

use lockgate_fanout::{Node, NodeConfig};
use serde_json::Value;
use tokio_lockgate::hub::HubConfig;

use support::loadgen;

/// Runs with `--json` and returns the summary, asserting success.
fn summary(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = loadgen(&all);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{args:?}: {}\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_str(stdout.trim()).expect("one JSON object on stdout");
    assert_eq!(json["result"], "ok", "{json}");
    json
}

#[test]
fn echo_and_oneway_count_every_message() {
    for (mode, expect_latency) in [("echo", true), ("oneway", false)] {
        for text in [false, true] {
            let mut args = vec![
                "--mode",
                mode,
                "--connections",
                "3",
                "--messages",
                "500",
                "--batch",
                "7",
            ];
            if text {
                args.push("--text");
            }
            let json = summary(&args);
            assert_eq!(json["report"]["messages"], 1500, "{mode}: {json}");
            assert_eq!(json["settings"]["mode"], mode);
            let latency = &json["report"]["latency"];
            assert_eq!(latency.is_object(), expect_latency, "{mode}: {json}");
            if expect_latency {
                assert_eq!(latency["samples"], 1500);
                assert!(
                    latency["p50_us"].as_f64().unwrap() <= latency["p999_us"].as_f64().unwrap()
                );
            }
            assert!(json["messages_per_s"].as_f64().unwrap() > 0.0);
        }
    }
}

#[test]
fn broadcast_delivers_every_message_to_every_subscriber() {
    let json = summary(&[
        "--mode",
        "broadcast",
        "--subscribers",
        "5",
        "--publishers",
        "3",
        "--messages",
        "400",
        "--batch",
        "16",
    ]);
    let report = &json["report"];
    let broadcast = &report["broadcast"];
    assert_eq!(broadcast["published"], 1200, "{json}");
    // Every subscriber got every publisher's messages.
    assert_eq!(report["messages"], 5 * 1200, "{json}");
    assert_eq!(broadcast["nodes"][0]["subscribers"], 5);
    assert_eq!(broadcast["same_node"]["samples"], 5 * 1200);
    assert!(
        broadcast["cross_node"].is_null(),
        "one node: nothing crosses"
    );
    assert_eq!(broadcast["closes"].as_array().unwrap().len(), 0);
}

#[test]
fn broadcast_at_a_rate_paces_publishers() {
    let json = summary(&[
        "--mode",
        "broadcast",
        "--subscribers",
        "2",
        "--messages",
        "50",
        "--rate",
        "500",
        "--text",
    ]);
    // 50 messages at 500/s take at least 98 ms (printed: the schedule is
    // asserted on simulated time, `broadcast::tests`).
    println!("elapsed {}", json["report"]["elapsed_s"]);
    assert_eq!(json["report"]["messages"], 100);
}

#[test]
fn usage_errors_are_one_short_message_and_status_2() {
    for (args, says) in [
        (&["--connections", "0"][..], "--connections"),
        (&["--mode", "sideways"], "sideways"),
        (&["--size", "8", "--mode", "echo"], "--size"),
        (&["--topic", "a.b", "--mode", "broadcast"], "--topic"),
        (&["--no-such-option"], "--no-such-option"),
        (&["--duration", "-1"], "-1"),
        // Options that would be ignored are refused instead.
        (&["--messages", "10", "--duration", "1"], "--duration"),
        (&["--duration", "1", "--messages", "10"], "--messages"),
        (
            &["--subscribers", "3"],
            "--subscribers is for --mode broadcast",
        ),
        (&["--mode", "oneway", "--publishers", "2"], "--publishers"),
        (&["--mode", "echo", "--topic", "t"], "--topic"),
        (&["--rate", "100"], "--rate"),
        (&["--allow-closes", "--mode", "oneway"], "--allow-closes"),
        (&["--seed", "3"], "--seed is for --mode resume"),
        (
            &["--mode", "broadcast", "--drop-interval", "5"],
            "--drop-interval is for --mode resume",
        ),
        (&["--mode", "oneway", "--allow-resync"], "--allow-resync"),
        (
            &["--mode", "resume", "--allow-closes"],
            "--allow-closes is for --mode broadcast",
        ),
        (&["--mode", "resume", "--connections", "2"], "--connections"),
        (
            &["--mode", "resume", "--drop-interval", "0"],
            "--drop-interval",
        ),
        (&["--mode", "resume", "--size", "21"], "--size"),
        (
            &["--mode", "broadcast", "--connections", "2"],
            "--connections",
        ),
        (
            &[
                "--mode",
                "broadcast",
                "--topic",
                "t",
                "--url",
                "ws://127.0.0.1:9/topics/other",
            ],
            "has one",
        ),
        (&["--ca-file", "ca.pem"], "wss://"),
        (
            &["--ca-file", "ca.pem", "--url", "ws://127.0.0.1:9/"],
            "wss://",
        ),
        (
            &[
                "--ca-file",
                "/nonexistent/ca.pem",
                "--url",
                "wss://127.0.0.1:9/",
            ],
            "/nonexistent/ca.pem",
        ),
        (
            &[
                "--ca-file",
                concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cli.rs"),
                "--url",
                "wss://127.0.0.1:9/",
            ],
            "no certificate",
        ),
    ] {
        let out = loadgen(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with("error:"), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(
            stderr.lines().count() <= 6,
            "{args:?}: the whole help?\n{stderr}"
        );
        assert!(stderr.contains("--help"), "{args:?}: {stderr}");
    }
    // Given explicitly, and with their defaults, the options of the mode
    // are accepted.
    summary(&["--messages", "100", "--connections", "2"]);
    summary(&["--duration", "0.05"]);
    summary(&[
        "--mode",
        "broadcast",
        "--messages",
        "100",
        "--subscribers",
        "2",
        "--topic",
        "t",
    ]);
    let help = loadgen(&["--help"]);
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("--mode"));
}

#[test]
fn an_unreachable_server_fails_the_run_with_status_1() {
    // A port nothing listens on: bind one, note it, close it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("ws://127.0.0.1:{port}");
    let out = loadgen(&["--url", &url, "--messages", "10", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["result"], "failed");
    assert!(json["error"].as_str().unwrap().contains(&url), "{json}");
    // The summary is on stdout; the error is on stderr too.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&url), "{stderr}");
}

#[test]
fn a_server_that_is_not_http_is_shown_in_the_error() {
    const BANNER: &str = "SSH-2.0-OpenSSH_9.6";
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}/", listener.local_addr().unwrap());
    // Like sshd: its banner first, then it waits for the client's, and
    // holds the connection until the client goes (then this thread ends).
    std::thread::spawn(move || {
        let (mut tcp, _) = listener.accept().unwrap();
        tcp.write_all(format!("{BANNER}\r\n").as_bytes()).unwrap();
        let _ = tcp.read_to_end(&mut Vec::new());
    });
    let out = loadgen(&["--url", &url, "--messages", "10"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(BANNER), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains(BANNER));
}

#[test]
fn a_node_that_closes_a_subscriber_as_slow_fails_the_run() {
    // A node with room for one message per connection: loadgen keeps up
    // to 4 x --batch in flight, so its connections are slow consumers.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let hub = HubConfig::default().queue_capacity(1);
    let node = runtime
        .block_on(Node::start(
            NodeConfig::new(([127, 0, 0, 1], 0).into()).hub(hub),
        ))
        .unwrap();
    let url = format!("ws://{}", node.local_addr());
    let out = loadgen(&[
        "--mode",
        "broadcast",
        "--url",
        &url,
        "--messages",
        "10000",
        "--batch",
        "64",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("closed by the node with 1008"), "{stderr}");
    assert!(stderr.contains("slow consumer"), "{stderr}");
    assert!(node.hub_stats().closed_slow > 0);
}
