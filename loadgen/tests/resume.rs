//! Resume mode as a user runs it: subscribers that drop and resume
//! against the embedded node, and a resume that a node cannot serve.

mod support;

use lockgate_fanout::{HistoryConfig, Node, NodeConfig};
use serde_json::Value;

use support::loadgen;

#[test]
fn subscribers_that_drop_and_resume_receive_every_message_once() {
    let args = [
        "--mode",
        "resume",
        "--subscribers",
        "5",
        "--messages",
        "300",
        "--rate",
        "300",
        "--drop-interval",
        "40",
        "--seed",
        "7",
    ];
    let out = loadgen(&[&args[..], &["--json"]].concat());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_str(stdout.trim()).expect("one JSON object on stdout");
    assert_eq!(json["result"], "ok", "{json}");
    let resume = &json["report"]["resume"];
    // Two publishers (the mode's default) x 300, every one stored and
    // received by each of the 5 subscribers.
    assert_eq!(resume["messages"], 600, "{json}");
    assert_eq!(resume["subscribers"], 5, "{json}");
    assert_eq!(resume["publishers"], 2, "{json}");
    assert_eq!(json["report"]["messages"], 5 * 600, "{json}");
    // About a second of drops every 40 ms for each of 5 subscribers: the
    // chance of none at all is e^-100.
    assert!(resume["reconnects"].as_u64().unwrap() > 0, "{json}");
    assert_eq!(resume["nodes"], 1, "{json}");
    // One node that never goes: nothing to lose, nothing to resync.
    assert_eq!(resume["publisher_lost"], 0, "{json}");
    assert_eq!(resume["resyncs"], 0, "{json}");
    assert_eq!(resume["seed"], 7, "{json}");
    assert_eq!(
        resume["first_position"].as_u64().unwrap() + 599,
        resume["last_position"],
        "{json}"
    );

    // The text summary says what was verified in one line.
    let out = loadgen(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("verified: 5 subscribers x 600 messages"),
        "{stdout}"
    );
}

#[test]
fn a_resume_on_a_node_of_another_history_fails_as_a_resync() {
    // Two standalone nodes: each has its own history and epoch, so a
    // subscriber that moves to the other one cannot resume there.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let nodes: Vec<_> = (0..2)
        .map(|_| {
            let config =
                NodeConfig::new(([127, 0, 0, 1], 0).into()).history(HistoryConfig::last(10_000));
            runtime.block_on(Node::start(config)).unwrap()
        })
        .collect();
    let urls: Vec<String> = nodes
        .iter()
        .map(|node| format!("ws://{}", node.local_addr()))
        .collect();
    // About 4 drops per subscriber, each to the other node with
    // probability 1/2: the chance that none moves is 2^-16.
    let out = loadgen(&[
        "--mode",
        "resume",
        "--url",
        &urls[0],
        "--url",
        &urls[1],
        "--subscribers",
        "4",
        "--messages",
        "100",
        "--rate",
        "100",
        "--drop-interval",
        "250",
        "--seed",
        "1",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("closed with 4001"), "{stderr}");
    assert!(stderr.contains("--allow-resync"), "{stderr}");
}

#[test]
fn with_allow_resync_a_history_too_short_for_the_drops_still_verifies() {
    // A history of 5 messages: a subscriber away for longer than 5
    // messages is answered 4001, picks up from the oldest held, and only
    // its receipts between resyncs are checked.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let config = NodeConfig::new(([127, 0, 0, 1], 0).into()).history(HistoryConfig::last(5));
    let node = runtime.block_on(Node::start(config)).unwrap();
    let url = format!("ws://{}", node.local_addr());
    let out = loadgen(&[
        "--mode",
        "resume",
        "--url",
        &url,
        "--subscribers",
        "5",
        "--messages",
        "300",
        "--rate",
        "300",
        "--drop-interval",
        "40",
        "--allow-resync",
        "--json",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_str(stdout.trim()).unwrap();
    // How many drops outlast 5 messages depends on timing: shown, not
    // asserted.
    println!("resyncs: {}", json["report"]["resume"]["resyncs"]);
    assert_eq!(json["report"]["resume"]["messages"], 600, "{json}");
}
