//! SIGTERM and SIGINT drain a `lockgate-fanout` process: new clients get
//! 503 with `Retry-After`, every client receives every message the node
//! accepted before the signal and then a close with 1001, a client that
//! never answers is cut at `--drain-timeout`, and the process exits with
//! status 0.
//!
//! No assertion reads the clock (the process runs on real time): the
//! evidence is what the node reports (`closed`, `cut`), what each client
//! saw, and the exit status; [`EXIT_GUARD`] only turns a process that
//! never exits into a failure. When a drain cuts and resolves is
//! asserted on tokio's paused clock in tokio-lockgate's `tests/drain.rs`.
//! The times are printed.

mod support;

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use support::{Client, NatsServer, Process, within};
use tokio::sync::watch;
use tokio_lockgate::{CloseCode, Error, Message, connect_async};

/// A hang guard: a node still running this long after its signal fails
/// the test instead of hanging it (generous: the drains here take a few
/// seconds).
const EXIT_GUARD: Duration = Duration::from_secs(60);

/// `key=value` out of a log line.
fn field(line: &str, key: &str) -> u64 {
    line.split_whitespace()
        .find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("no {key} in {line:?}"))
        .parse()
        .unwrap_or_else(|_| panic!("{key} in {line:?}"))
}

/// What a subscriber saw: the sequence numbers of its messages, in order,
/// and the close code.
struct Seen {
    seqs: Vec<u64>,
    code: Option<CloseCode>,
}

/// Reads `client` to its end; `received` counts the messages of all
/// subscribers as they come.
async fn subscribe(mut client: Client, received: Arc<watch::Sender<u64>>) -> Seen {
    let mut seqs = Vec::new();
    loop {
        match client.read().await {
            Ok(Message::Text(text)) => {
                seqs.push(text.as_str().parse().expect("a sequence number"));
                received.send_modify(|n| *n += 1);
            }
            Ok(Message::Close(frame)) => {
                // Reading on answers it and completes the handshake.
                while client.read().await.is_ok() {}
                return Seen {
                    seqs,
                    code: frame.map(|f| f.code),
                };
            }
            Ok(other) => panic!("unexpected {other:?}"),
            Err(e) => panic!("no close frame, but {e}"),
        }
    }
}

async fn expect_503(url: &str) {
    match connect_async(url).await {
        Err(Error::Http(response)) => {
            assert_eq!(response.status().as_u16(), 503);
            assert!(response.headers().contains_key("retry-after"));
        }
        other => panic!("expected 503, got {:?}", other.map(|_| ())),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_a_broadcast_delivers_everything_accepted_then_1001_and_exits_0() {
    const SUBSCRIBERS: usize = 6;
    const TIMEOUT: Duration = Duration::from_secs(5);
    let nats = NatsServer::start();
    let mut node = Process::start(&[
        "--nats",
        &nats.url(),
        "--drain-timeout",
        "5",
        // Long enough for the 503 check below, on a busy machine too.
        "--drain-window",
        "2.5",
    ]);
    let url = node.url("feed");
    let received = Arc::new(watch::Sender::new(0));
    let mut subscribers = Vec::new();
    for _ in 0..SUBSCRIBERS {
        let client = within(10, "a subscriber connects", connect_async(&url))
            .await
            .expect("connects")
            .0;
        subscribers.push(tokio::spawn(subscribe(client, Arc::clone(&received))));
    }
    // The publisher is subscribed too, and sends until the node closes it.
    let publisher = within(10, "the publisher connects", connect_async(&url))
        .await
        .expect("connects")
        .0;
    let (mut sink, mut echoes) = publisher.into_split();
    let echoes = tokio::spawn(async move {
        let mut code = None;
        while let Some(Ok(msg)) = echoes.next().await {
            if let Message::Close(frame) = msg {
                code = frame.map(|f| f.code);
            }
        }
        code
    });
    let publishing = tokio::spawn(async move {
        let mut seq = 0u64;
        // About 2,000 messages a second, in bursts of 10.
        loop {
            for _ in 0..10 {
                if sink.write(Message::text(seq.to_string())).await.is_err() {
                    return seq;
                }
                seq += 1;
            }
            if sink.flush().await.is_err() {
                return seq;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });

    // Mid-broadcast.
    let mut count = received.subscribe();
    let under_way = count.wait_for(|&n| n >= (SUBSCRIBERS * 300) as u64);
    within(20, "the broadcast is under way", under_way)
        .await
        .expect("counting");
    let signalled = node.signal("TERM");
    let draining = node.line("draining:").await;
    let accepted = field(&draining, "accepted");
    assert!(accepted >= 300, "{draining}");
    // New clients are refused meanwhile.
    expect_503(&url).await;

    let drained = node.line("drained:").await;
    let everyone = SUBSCRIBERS as u64 + 1;
    assert_eq!(field(&drained, "connections"), everyone, "{drained}");
    assert_eq!(field(&drained, "closed"), everyone, "{drained}");
    let status = node.exit(EXIT_GUARD).await;
    eprintln!(
        "exited {:?} after the signal (drain timeout {TIMEOUT:?})",
        signalled.elapsed()
    );
    assert!(status.success(), "{status}");

    for (i, subscriber) in subscribers.into_iter().enumerate() {
        let seen = within(10, "a subscriber's end", subscriber).await.unwrap();
        assert_eq!(seen.code, Some(CloseCode::Away), "subscriber {i}");
        // In order and without a gap, and at least everything accepted
        // before the signal.
        assert!(
            seen.seqs
                .iter()
                .enumerate()
                .all(|(k, &seq)| seq == k as u64),
            "subscriber {i}: a gap or a reordering"
        );
        assert!(
            seen.seqs.len() as u64 >= accepted,
            "subscriber {i}: {} of the {accepted} accepted before the signal",
            seen.seqs.len()
        );
    }
    let echo_code = within(10, "the publisher's end", echoes).await.unwrap();
    assert_eq!(echo_code, Some(CloseCode::Away));
    let sent = within(10, "the publisher stops", publishing).await.unwrap();
    assert!(sent >= accepted);
}

#[tokio::test]
async fn sigint_cuts_a_client_that_never_answers_at_the_drain_timeout_and_exits_0() {
    const TIMEOUT: Duration = Duration::from_secs(2);
    let mut node = Process::start(&["--drain-timeout", "2", "--drain-window", "0.5"]);
    let url = node.url("t");
    let polite = connect_async(&url).await.expect("connects").0;
    let polite = tokio::spawn(subscribe(polite, Arc::new(watch::Sender::new(0))));
    // Connected, and then never reads: it never answers the close.
    let silent = connect_async(&url).await.expect("connects").0;

    let signalled = node.signal("INT");
    node.line("SIGINT: draining:").await;
    expect_503(&url).await;
    let drained = node.line("drained:").await;
    assert_eq!(
        (field(&drained, "closed"), field(&drained, "cut")),
        (1, 1),
        "{drained}"
    );
    let status = node.exit(EXIT_GUARD).await;
    eprintln!(
        "exited {:?} after the signal (drain timeout {TIMEOUT:?})",
        signalled.elapsed()
    );
    assert!(status.success(), "{status}");
    let seen = polite.await.unwrap();
    assert_eq!(seen.code, Some(CloseCode::Away));
    drop(silent);
}
