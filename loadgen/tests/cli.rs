//! The loadgen binary as a user runs it: every mode against its embedded
//! server, the JSON summary adding up, and usage errors that stay short.

use std::process::{Command, Output};

use serde_json::Value;

fn loadgen(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args(args)
        .output()
        .expect("loadgen runs")
}

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
    // 50 messages at 500/s take at least 98 ms.
    assert!(
        json["report"]["elapsed_s"].as_f64().unwrap() >= 0.098,
        "{json}"
    );
    assert_eq!(json["report"]["messages"], 100);
}

#[test]
fn usage_errors_are_one_short_message_and_status_2() {
    for args in [
        &["--connections", "0"][..],
        &["--mode", "sideways"],
        &["--size", "8", "--mode", "echo"],
        &["--topic", "a.b", "--mode", "broadcast"],
        &["--no-such-option"],
        &["--duration", "-1"],
    ] {
        let out = loadgen(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with("error:"), "{args:?}: {stderr}");
        assert!(
            stderr.lines().count() <= 6,
            "{args:?}: the whole help?\n{stderr}"
        );
        assert!(stderr.contains("--help"), "{args:?}: {stderr}");
    }
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
}
