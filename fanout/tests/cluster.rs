//! Two nodes and a real NATS server: every message reaches every
//! subscriber on every node exactly once and in order; a lost broker is
//! reported to clients with 1013, and the nodes recover when it returns.

mod support;

use std::collections::HashMap;

use support::{Client, NatsServer, client, node, within};
use tokio_lockgate::{CloseCode, Error, Message};

const PUBLISHERS: usize = 2;
const MESSAGES: usize = 300;

/// Reads until `n` data messages arrived and checks that each publisher's
/// came exactly once and in order. Publishers tag messages `P:SEQ`.
async fn receive_all(mut client: Client, n: usize) -> Client {
    let mut next: HashMap<String, usize> = HashMap::new();
    for _ in 0..n {
        let msg = client.read().await.expect("no error, no close");
        let Message::Text(text) = msg else {
            panic!("unexpected {msg:?}");
        };
        let (publisher, seq) = text.as_str().split_once(':').expect("P:SEQ");
        let expected = next.entry(publisher.to_owned()).or_insert(0);
        assert_eq!(seq.parse::<usize>().unwrap(), *expected, "from {publisher}");
        *expected += 1;
    }
    assert!(next.values().all(|&count| count == MESSAGES), "{next:?}");
    client
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_message_reaches_every_subscriber_on_every_node_once_in_order() {
    let nats = NatsServer::start();
    let nodes = [node(&nats).await, node(&nats).await];
    // Two subscribers and one publisher per node; publishers are
    // subscribed by their path too, and receive their own messages.
    let mut receivers = Vec::new();
    let mut publishers = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        for _ in 0..2 {
            let c = client(node, "room").await;
            receivers.push(tokio::spawn(receive_all(c, PUBLISHERS * MESSAGES)));
        }
        publishers.push((i, client(node, "room").await));
    }
    // Another topic's client hears nothing of it.
    let mut other = client(&nodes[1], "elsewhere").await;

    let mut sending = Vec::new();
    for (i, mut publisher) in publishers {
        sending.push(tokio::spawn(async move {
            for seq in 0..MESSAGES {
                publisher
                    .write(Message::text(format!("n{i}:{seq}")))
                    .await
                    .unwrap();
                if seq % 16 == 15 {
                    publisher.flush().await.unwrap();
                }
            }
            publisher.flush().await.unwrap();
            receive_all(publisher, PUBLISHERS * MESSAGES).await
        }));
    }
    for task in receivers.into_iter().chain(sending) {
        within(30, "every delivery", task).await.unwrap();
    }
    let relayed: u64 = nodes.iter().map(|n| n.stats().relayed_in).sum();
    assert_eq!(
        relayed,
        (PUBLISHERS * MESSAGES) as u64,
        "each message crossed once"
    );
    other.send(Message::text("x:0")).await.unwrap();
    assert_eq!(
        other.read().await.unwrap(),
        Message::text("x:0"),
        "only its own"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_broker_closes_clients_with_1013_and_the_nodes_recover() {
    let mut nats = NatsServer::start();
    let nodes = [node(&nats).await, node(&nats).await];
    let mut clients = Vec::new();
    for node in &nodes {
        clients.push(client(node, "t").await);
    }
    clients[0].send(Message::text("before")).await.unwrap();
    for (i, c) in clients.iter_mut().enumerate() {
        let got = tokio::time::timeout(std::time::Duration::from_secs(10), c.read()).await;
        let stats: Vec<_> = nodes.iter().map(|n| (n.stats(), n.hub_stats())).collect();
        let got = got.unwrap_or_else(|_| panic!("client {i}: no delivery in 10 s; {stats:#?}"));
        assert_eq!(got.unwrap(), Message::text("before"));
    }

    nats.kill();
    for c in &mut clients {
        match within(15, "the close frame", c.read()).await {
            Ok(Message::Close(Some(frame))) => assert_eq!(frame.code, CloseCode::Again),
            other => panic!("expected a 1013 close, got {other:?}"),
        }
    }
    // While the broker is away, new clients are refused with 503.
    let url = format!("ws://{}/topics/t", nodes[1].local_addr());
    match tokio_lockgate::connect_async(&url).await {
        Err(Error::Http(response)) => {
            assert_eq!(response.status().as_u16(), 503)
        }
        other => panic!("expected a 503 refusal, got {:?}", other.map(|_| ())),
    }
    assert!(
        nodes
            .iter()
            .all(|n| !n.stats().broker_up && n.stats().broker_lost == 1)
    );

    nats.restart();
    within(20, "the nodes reconnect", async {
        while !nodes.iter().all(|n| n.stats().broker_up) {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
    let mut a = client(&nodes[0], "t").await;
    let mut b = client(&nodes[1], "t").await;
    // A node accepts clients again once the server has its subscription
    // back: the first message crosses.
    a.send(Message::text("after")).await.unwrap();
    for c in [&mut a, &mut b] {
        assert_eq!(
            within(10, "delivery after the broker returned", c.read())
                .await
                .unwrap(),
            Message::text("after")
        );
    }
}

#[tokio::test]
async fn paths_other_than_topics_are_refused_with_404() {
    let node = lockgate_fanout::Node::start(lockgate_fanout::NodeConfig::new(support::loopback()))
        .await
        .unwrap();
    for path in ["/", "/topics/", "/topics/a.b", "/topics/*", "/chat"] {
        let url = format!("ws://{}{path}", node.local_addr());
        match tokio_lockgate::connect_async(&url).await {
            Err(Error::Http(response)) => {
                assert_eq!(response.status().as_u16(), 404, "{path}")
            }
            other => panic!("{path}: expected 404, got {:?}", other.map(|_| ())),
        }
    }
    assert_eq!(node.stats().refused_path, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_is_closed_with_1008_and_delays_no_one() {
    use futures_util::StreamExt;
    use lockgate_fanout::{Node, NodeConfig};
    // 16 MiB: more than the loopback socket buffers and the queue hold.
    const COUNT: usize = 4000;
    let node = Node::start(NodeConfig::new(support::loopback()))
        .await
        .unwrap();
    let stuck = client(&node, "feed").await; // connected, never reads
    let healthy = [client(&node, "feed").await, client(&node, "feed").await];
    let publisher = client(&node, "feed").await;
    let payload = |i: usize| {
        let mut p = format!("{i:08}").into_bytes();
        p.resize(4096, b'.');
        p
    };
    let readers: Vec<_> = healthy
        .into_iter()
        .map(|mut c| {
            tokio::spawn(async move {
                for i in 0..COUNT {
                    let msg = c.read().await.expect("a healthy client stays open");
                    assert_eq!(msg, Message::binary(payload(i)), "message {i}");
                }
            })
        })
        .collect();
    // The publisher is subscribed too and reads its own messages back; it
    // keeps at most WINDOW unechoed, as a publisher that wants every
    // healthy subscriber to keep up would (a flood faster than the node
    // can fan out fills every queue, healthy or not).
    const WINDOW: usize = 256;
    let window = std::sync::Arc::new(tokio::sync::Semaphore::new(WINDOW));
    let (mut sink, mut echoes) = publisher.into_split();
    let echo_window = window.clone();
    let echoed = tokio::spawn(async move {
        for _ in 0..COUNT {
            echoes.next().await.expect("open").expect("no error");
            echo_window.add_permits(1);
        }
    });
    for seq in 0..COUNT {
        window.acquire().await.unwrap().forget();
        sink.send(Message::binary(payload(seq))).await.unwrap();
    }
    for reader in readers {
        within(60, "healthy clients get everything", reader)
            .await
            .unwrap();
    }
    within(60, "the publisher's echoes", echoed).await.unwrap();
    let stats = node.hub_stats();
    assert_eq!(stats.closed_slow, 1, "{stats:?}");
    drop(stuck);
}
