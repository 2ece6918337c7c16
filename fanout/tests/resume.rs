//! The history (`--history`) as clients see it, against `lockgate-fanout`
//! processes on a 3-server JetStream cluster (and one standalone): every
//! message carries a position that is the same on every node, and a
//! client that resumes anywhere with `?since=EPOCH:POSITION` gets exactly
//! what it missed then the live messages, through a node's crash or
//! drain and the loss of the stream's leader; a position the history no
//! longer holds is answered with 4001 `resync`.
//!
//! Every wait is bounded (`within`), and no assertion reads the clock:
//! the evidence is what each client received. A message counts as
//! accepted once its publisher (a plain client of the same topic)
//! received it back, which with a history happens only after the history
//! stored it.

mod support;

use std::time::Duration;

use lockgate_fanout::seq::{Kind, RESYNC, RESYNC_REASON};
use support::{
    JetStreamCluster, Next, Process, Publisher, Received, SeqClient, assert_increasing,
    connect_seq, plain_data, texts, topic_url, within,
};
use tokio::sync::watch;
use tokio_lockgate::{CloseCode, Error, Message, connect_async};

const TOPIC: &str = "news";

/// A hang guard for a whole test: generous, for a loaded 2-core machine
/// that also runs three nats-servers and several nodes.
const TEST_LIMIT: u64 = 240;

/// A cluster whose JetStream can create streams.
async fn cluster() -> JetStreamCluster {
    let cluster = JetStreamCluster::start();
    cluster.wait_ready().await;
    cluster
}

/// A node on `nats` (a comma list) keeping `history` messages per topic.
fn js_node(nats: &str, history: &str, extra: &[&str]) -> Process {
    let mut args = vec!["--nats", nats, "--history", history];
    args.extend_from_slice(extra);
    Process::start(&args)
}

/// `name{i}` for each `i` in `range`.
fn names(name: &str, range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("{name}{i}")).collect()
}

/// The one stream the nodes created (the test's cluster is fresh).
async fn the_stream(cluster: &JetStreamCluster) -> String {
    within(30, "the history's stream appears", async {
        loop {
            for i in 0..3 {
                if !cluster.is_running(i) {
                    continue;
                }
                if let Some(streams) = cluster.streams(i).await {
                    match streams.as_slice() {
                        [] => {}
                        [one] => return one.clone(),
                        many => panic!("expected one stream, found {many:?}"),
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
}

/// Connects with `since` and expects the upgrade accepted, then closed at
/// once with 4001 `resync`.
async fn expect_resync(addr: &str, since: &str) {
    let url = topic_url(addr, TOPIC, Some(since));
    let (ws, _) = connect_seq(&url)
        .await
        .unwrap_or_else(|e| panic!("{url}: the upgrade is accepted, not {e}"));
    let mut client = SeqClient {
        ws,
        epoch: String::new(),
    };
    match client.next().await {
        Next::Closed(Some((code, reason))) => {
            assert_eq!(code, RESYNC, "{url}");
            assert_eq!(reason, RESYNC_REASON, "{url}");
        }
        other => panic!("{url}: expected a 4001 close, got {other:?}"),
    }
}

/// Reads data messages until a close frame, which must carry `code`.
async fn until_closed(client: &mut SeqClient, code: CloseCode) -> Vec<Received> {
    let mut got = Vec::new();
    for _ in 0..100_000 {
        match client.next().await {
            Next::Data(m) => got.push(m),
            Next::Closed(Some((c, _))) if c == code => return got,
            other => panic!("expected messages then {code:?}, got {other:?}"),
        }
    }
    panic!("no close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn positions_are_binary_frames_the_same_on_every_node_and_plain_clients_get_plain_messages() {
    within(TEST_LIMIT, "the test", async {
        let cluster = cluster().await;
        let a = js_node(&cluster.urls_from(0), "1000", &[]);
        let b = js_node(&cluster.urls_from(1), "1000", &[]);
        let mut on_a = SeqClient::connect(&a.addr, TOPIC, None).await;
        let mut on_b = SeqClient::connect(&b.addr, TOPIC, None).await;
        assert_eq!(on_a.epoch, on_b.epoch, "one history, one epoch");
        let (mut plain, response) = connect_async(topic_url(&a.addr, TOPIC, None))
            .await
            .expect("a plain client connects");
        assert!(response.headers().get("sec-websocket-protocol").is_none());
        let mut publisher = Publisher::connect(&b.addr, TOPIC).await;

        let sent: Vec<Message> = (0..20u8)
            .map(|i| {
                if i % 2 == 0 {
                    Message::text(format!("t{i}"))
                } else {
                    Message::binary(vec![i, 0, 0xff])
                }
            })
            .collect();
        for message in &sent {
            publisher.send(message.clone()).await;
        }
        let mut seen = Vec::new();
        for client in [&mut on_a, &mut on_b] {
            let mut got = Vec::new();
            for message in &sent {
                let m = client.data().await;
                let (kind, payload) = match message {
                    Message::Text(t) => (Kind::Text, t.as_bytes().to_vec()),
                    Message::Binary(b) => (Kind::Binary, b.to_vec()),
                    _ => unreachable!(),
                };
                assert_eq!((m.kind, &m.payload), (kind, &payload), "{m:?}");
                got.push(m);
            }
            assert_increasing(&got);
            seen.push(got);
        }
        assert_eq!(seen[0], seen[1], "the same positions on both nodes");
        for message in &sent {
            assert_eq!(&plain_data(&mut plain).await, message);
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_resuming_on_another_node_gets_exactly_what_it_missed_then_live_messages() {
    within(TEST_LIMIT, "the test", async {
        let cluster = cluster().await;
        let a = js_node(&cluster.urls_from(0), "1000", &[]);
        let b = js_node(&cluster.urls_from(1), "1000", &[]);
        let mut publisher = Publisher::connect(&b.addr, TOPIC).await;
        let mut client = SeqClient::connect(&a.addr, TOPIC, None).await;
        publisher.texts("m", 0..10).await;
        let before = client.until("m9").await;
        assert_eq!(texts(&before), names("m", 0..10));
        let since = client.since(before.last().unwrap().position);
        drop(client);

        // Missed while disconnected, and published while it reconnects.
        publisher.texts("m", 10..20).await;
        let publishing = tokio::spawn(async move {
            publisher.texts("m", 20..40).await;
            publisher
        });
        let mut resumed = SeqClient::connect(&b.addr, TOPIC, Some(&since)).await;
        let mut publisher = within(60, "publishing", publishing).await.unwrap();
        publisher.texts("m", 40..41).await;

        let after = resumed.until("m40").await;
        assert_eq!(texts(&after), names("m", 10..41), "no gap, no duplicate");
        assert_increasing(&[before, after].concat());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_of_a_killed_node_resumes_on_another_with_exactly_what_it_missed() {
    within(TEST_LIMIT, "the test", async {
        let cluster = cluster().await;
        let a = js_node(&cluster.urls_from(0), "1000", &[]);
        let b = js_node(&cluster.urls_from(1), "1000", &[]);
        let mut publisher = Publisher::connect(&b.addr, TOPIC).await;
        let mut client = SeqClient::connect(&a.addr, TOPIC, None).await;
        publisher.texts("m", 0..5).await;
        let before = client.until("m4").await;

        a.kill();
        match client.next().await {
            Next::Broken(_) => {}
            other => panic!("expected the connection to break, got {other:?}"),
        }
        publisher.texts("m", 5..15).await;
        let since = client.since(before.last().unwrap().position);
        let mut resumed = SeqClient::connect(&b.addr, TOPIC, Some(&since)).await;
        publisher.texts("m", 15..16).await;
        let after = resumed.until("m15").await;
        assert_eq!(texts(&after), names("m", 5..16), "no gap, no duplicate");
        assert_increasing(&[before, after].concat());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_survives_its_leaders_crash_and_clients_of_its_server_resume_elsewhere() {
    within(TEST_LIMIT, "the test", async {
        let mut cluster = cluster().await;
        // The stream exists once a first message has been accepted.
        let first = js_node(&cluster.url(0), "1000", &[]);
        let mut warm = Publisher::connect(&first.addr, TOPIC).await;
        warm.texts("warm", 0..1).await;
        let stream = the_stream(&cluster).await;
        let leader = cluster
            .wait_stream_leader(&stream, Duration::from_secs(30))
            .await;
        eprintln!("stream {stream} is led by server {leader}");
        // One node on the leader's server alone, one on the others only.
        let on_leader = if leader == 0 {
            first
        } else {
            js_node(&cluster.url(leader), "1000", &[])
        };
        let elsewhere = js_node(&cluster.urls_except(leader), "1000", &[]);

        let mut publisher = Publisher::connect(&elsewhere.addr, TOPIC).await;
        let mut watcher = SeqClient::connect(&elsewhere.addr, TOPIC, None).await;
        let mut victim = SeqClient::connect(&on_leader.addr, TOPIC, None).await;
        publisher.texts("m", 0..10).await;
        let before = victim.until("m9").await;

        cluster.kill(leader);
        let unseen = until_closed(&mut victim, CloseCode::Again).await;
        assert!(unseen.is_empty(), "nothing was published: {unseen:?}");

        // A new leader is elected: publishing resumes (a message sent
        // meanwhile may be refused; each probe is unique so a duplicate
        // would show).
        let mut resumed_after = None;
        for probe in 0..60 {
            publisher.text(&format!("p{probe}")).await;
            if publisher
                .echo_within(Duration::from_secs(2))
                .await
                .is_some()
            {
                resumed_after = Some(probe);
                break;
            }
        }
        let Some(probes) = resumed_after else {
            // Stored but not delivered, or not stored at all?
            let states = cluster.stream_states(&stream).await;
            panic!("publishing did not resume within 60 probes; the stream: {states:?}");
        };
        eprintln!("publishing resumed at probe {probes}");
        let new_leader = cluster
            .wait_stream_leader(&stream, Duration::from_secs(30))
            .await;
        assert_ne!(new_leader, leader);
        publisher.texts("end", 0..1).await;

        let all = watcher.until("end0").await;
        assert_increasing(&all);
        assert_eq!(texts(&all[..10]), names("m", 0..10));
        let mut distinct = texts(&all);
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), all.len(), "a duplicate: {:?}", texts(&all));

        let since = victim.since(before.last().unwrap().position);
        let mut resumed = SeqClient::connect(&elsewhere.addr, TOPIC, Some(&since)).await;
        let after = resumed.until("end0").await;
        assert_eq!(
            [before, after].concat(),
            all,
            "what the victim saw, then missed, is what the watcher saw"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drained_nodes_clients_get_1001_after_what_was_accepted_and_resume_elsewhere() {
    within(TEST_LIMIT, "the test", async {
        let cluster = cluster().await;
        let a = js_node(&cluster.urls_from(0), "100000", &["--drain-timeout", "10"]);
        let b = js_node(&cluster.urls_from(1), "100000", &[]);
        let mut client = SeqClient::connect(&a.addr, TOPIC, None).await;
        let mut publisher = Publisher::connect(&b.addr, TOPIC).await;
        let (stop, stopped) = watch::channel(false);
        let publishing = tokio::spawn(async move {
            let mut sent = 0;
            while !*stopped.borrow() {
                publisher.text(&format!("m{sent}")).await;
                sent += 1;
                // Paced, so the drain happens mid-stream rather than
                // after a burst.
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            (publisher, sent)
        });
        let mut before = Vec::new();
        for _ in 0..50 {
            before.push(client.data().await);
        }
        a.signal("TERM");
        before.extend(until_closed(&mut client, CloseCode::Away).await);
        let status = a.exit(Duration::from_secs(60)).await;
        assert!(status.success(), "{status}");

        let since = client.since(before.last().unwrap().position);
        let mut resumed = SeqClient::connect(&b.addr, TOPIC, Some(&since)).await;
        stop.send(true).unwrap();
        let (mut publisher, sent) = within(60, "publishing stops", publishing).await.unwrap();
        publisher.texts("end", 0..1).await;
        let after = resumed.until("end0").await;

        let all = [before, after].concat();
        assert_increasing(&all);
        let mut expected = names("m", 0..sent);
        expected.push("end0".into());
        assert_eq!(texts(&all), expected, "nothing missed, nothing twice");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_position_no_longer_held_or_of_another_epoch_is_answered_with_4001() {
    within(TEST_LIMIT, "the test", async {
        let cluster = cluster().await;
        let a = js_node(&cluster.urls_from(0), "5", &[]);
        let mut recorder = SeqClient::connect(&a.addr, TOPIC, None).await;
        let mut publisher = Publisher::connect(&a.addr, TOPIC).await;
        // One at a time: a burst larger than the history is another
        // test's concern.
        for i in 0..20 {
            publisher.texts("m", i..i + 1).await;
        }
        let all = recorder.until("m19").await;
        assert_eq!(texts(&all), names("m", 0..20));
        let epoch = recorder.epoch.clone();

        // Messages 11 to 14 are gone: resuming after 10 would miss them.
        expect_resync(&a.addr, &format!("{epoch}:{}", all[10].position)).await;
        let wrong = if epoch == "stale" { "other" } else { "stale" };
        expect_resync(&a.addr, &format!("{wrong}:{}", all[19].position)).await;

        let mut oldest = SeqClient::connect(&a.addr, TOPIC, Some(&format!("{epoch}:0"))).await;
        publisher.texts("m", 20..21).await;
        let got = oldest.until("m20").await;
        assert_eq!(texts(&got), names("m", 15..21), "the 5 held, then live");
        assert_eq!(got[..5], all[15..], "the same positions");

        let url = topic_url(&a.addr, TOPIC, Some("x"));
        match connect_seq(&url).await {
            Err(Error::Http(response)) => assert_eq!(response.status().as_u16(), 400),
            other => panic!("since=x: expected 400, got {:?}", other.map(|_| ())),
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standalone_history_serves_positions_and_since_and_a_restart_is_a_new_epoch() {
    within(TEST_LIMIT, "the test", async {
        let node = Process::start(&["--history", "100"]);
        let mut client = SeqClient::connect(&node.addr, TOPIC, None).await;
        let (mut plain, _) = connect_async(topic_url(&node.addr, TOPIC, None))
            .await
            .expect("a plain client connects");
        let mut publisher = Publisher::connect(&node.addr, TOPIC).await;
        publisher.text("t0").await;
        publisher.send(Message::binary(vec![1, 2])).await;
        publisher.texts("m", 0..1).await;
        let first = [
            client.data().await,
            client.data().await,
            client.data().await,
        ];
        assert_eq!(
            first
                .iter()
                .map(|m| (m.kind, m.payload.clone()))
                .collect::<Vec<_>>(),
            [
                (Kind::Text, b"t0".to_vec()),
                (Kind::Binary, vec![1, 2]),
                (Kind::Text, b"m0".to_vec())
            ]
        );
        assert_increasing(&first);
        for expected in [
            Message::text("t0"),
            Message::binary(vec![1, 2]),
            Message::text("m0"),
        ] {
            assert_eq!(plain_data(&mut plain).await, expected);
        }

        let since = client.since(first[2].position);
        drop(client);
        publisher.texts("m", 1..6).await;
        let mut resumed = SeqClient::connect(&node.addr, TOPIC, Some(&since)).await;
        publisher.texts("m", 6..7).await;
        let after = resumed.until("m6").await;
        assert_eq!(texts(&after), names("m", 1..7));
        assert_increasing(&[&first[..], &after[..]].concat());

        let epoch = resumed.epoch.clone();
        let since = resumed.since(after.last().unwrap().position);
        node.kill();
        let node = Process::start(&["--history", "100"]);
        let fresh = SeqClient::connect(&node.addr, TOPIC, None).await;
        assert_ne!(fresh.epoch, epoch, "a restart starts a new epoch");
        expect_resync(&node.addr, &since).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_larger_than_the_history_reaches_live_clients_whole() {
    within(TEST_LIMIT, "the test", async {
        const EACH: usize = 100;
        let cluster = cluster().await;
        let a = js_node(&cluster.urls_from(0), "5", &[]);
        let b = js_node(&cluster.urls_from(1), "5", &[]);
        let mut on_a = SeqClient::connect(&a.addr, TOPIC, None).await;
        let mut on_b = SeqClient::connect(&b.addr, TOPIC, None).await;
        // Two publishers on two nodes at once: the stream holds 5 while
        // 200 arrive, faster than one client's pace.
        let mut publishing = Vec::new();
        for (name, addr) in [("a", a.addr.clone()), ("b", b.addr.clone())] {
            publishing.push(tokio::spawn(async move {
                let mut publisher = Publisher::connect(&addr, TOPIC).await;
                publisher.texts(name, 0..EACH).await;
            }));
        }
        for task in publishing {
            within(60, "publishing", task).await.unwrap();
        }
        for client in [&mut on_a, &mut on_b] {
            // Until both last ones came: a lost message shows in the lists.
            let lasts = [format!("a{}", EACH - 1), format!("b{}", EACH - 1)];
            let mut got: Vec<Received> = Vec::new();
            for _ in 0..=2 * EACH {
                if lasts.iter().all(|l| got.iter().any(|m| m.text() == l)) {
                    break;
                }
                got.push(client.data().await);
            }
            assert_increasing(&got);
            for name in ["a", "b"] {
                let from: Vec<_> = texts(&got)
                    .into_iter()
                    .filter(|t| t.strip_prefix(name).is_some())
                    .collect();
                assert_eq!(from, names(name, 0..EACH), "a live client misses nothing");
            }
        }
    })
    .await;
}
