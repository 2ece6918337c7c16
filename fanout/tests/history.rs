//! A standalone node with a history (in memory): positions on the wire,
//! resuming after a position with no gap and no duplicate, and 4001 for a
//! position it cannot serve. (tests/resume.rs runs the same contract on a
//! JetStream cluster.)

mod support;

use lockgate_fanout::seq::{self, Kind, Sequenced, Since};
use lockgate_fanout::{HistoryConfig, Node, NodeConfig, NodeHandle};
use support::{Client, loopback, within};
use tokio_lockgate::handshake::IntoClientRequest;
use tokio_lockgate::http::StatusCode;
use tokio_lockgate::{CloseCode, Message, connect_async};

async fn node(history: u64) -> NodeHandle {
    Node::start(NodeConfig::new(loopback()).history(HistoryConfig::last(history)))
        .await
        .expect("node starts")
}

/// A `lockgate.seq.v1` client of `topic`, after `since` if given, and the
/// epoch it was told.
async fn sequenced(node: &NodeHandle, topic: &str, since: Option<&Since>) -> (Client, String) {
    let mut url = format!("ws://{}/topics/{topic}", node.local_addr());
    if let Some(since) = since {
        url.push_str(&format!("?since={since}"));
    }
    let mut request = url.into_client_request().unwrap();
    request
        .headers_mut()
        .insert("sec-websocket-protocol", seq::SUBPROTOCOL.parse().unwrap());
    let (ws, response) = connect_async(request).await.expect("upgrade");
    assert_eq!(
        response.headers()["sec-websocket-protocol"],
        seq::SUBPROTOCOL
    );
    let epoch = response.headers()[seq::EPOCH_HEADER]
        .to_str()
        .unwrap()
        .to_owned();
    (ws, epoch)
}

async fn plain(node: &NodeHandle, topic: &str) -> Client {
    let url = format!("ws://{}/topics/{topic}", node.local_addr());
    connect_async(url).await.expect("upgrade").0
}

/// The next `n` messages as (position, text).
async fn read(client: &mut Client, n: usize) -> Vec<(u64, String)> {
    let mut got = Vec::new();
    for _ in 0..n {
        let msg = within(10, "a message", client.read()).await.unwrap();
        let Message::Binary(frame) = msg else {
            panic!("expected a lockgate.seq.v1 frame, got {msg:?}");
        };
        let m = Sequenced::decode(&frame).expect("a valid frame");
        assert_eq!(m.kind, Kind::Text);
        got.push((m.position, String::from_utf8(m.payload.to_vec()).unwrap()));
    }
    got
}

async fn publish(client: &mut Client, texts: impl IntoIterator<Item = String>) {
    for text in texts {
        client.send(Message::text(text)).await.unwrap();
    }
}

async fn subscribed(node: &NodeHandle, n: usize) {
    within(10, "subscribers", async {
        while node.hub_stats().subscribers < n {
            tokio::task::yield_now().await;
        }
    })
    .await;
}

#[tokio::test]
async fn positions_increase_and_a_resumed_client_misses_nothing_and_repeats_nothing() {
    let node = node(1000).await;
    let (mut watcher, epoch) = sequenced(&node, "t", None).await;
    let (mut dropping, _) = sequenced(&node, "t", None).await;
    let mut old_style = plain(&node, "t").await;
    let mut publisher = plain(&node, "elsewhere").await;
    // The publisher's own topic differs; it publishes to "t" through a
    // second connection.
    let mut sender = plain(&node, "t").await;
    subscribed(&node, 5).await;

    publish(&mut sender, (0..10).map(|i| format!("m{i}"))).await;
    let first = read(&mut dropping, 10).await;
    assert!(first.windows(2).all(|w| w[0].0 < w[1].0), "{first:?}");
    let texts: Vec<_> = first.iter().map(|(_, t)| t.clone()).collect();
    assert_eq!(texts, (0..10).map(|i| format!("m{i}")).collect::<Vec<_>>());
    // A client without the subprotocol gets plain messages, as before.
    for i in 0..10 {
        let msg = within(10, "plain", old_style.read()).await.unwrap();
        assert_eq!(msg, Message::text(format!("m{i}")));
    }
    // Dropped after the fifth: it resumes from there.
    drop(dropping);
    publish(&mut sender, (10..20).map(|i| format!("m{i}"))).await;
    let since = Since::new(&epoch, first[4].0).unwrap();
    let (mut resumed, again) = sequenced(&node, "t", Some(&since)).await;
    assert_eq!(again, epoch);
    publish(&mut sender, (20..25).map(|i| format!("m{i}"))).await;
    let all = read(&mut watcher, 25).await;
    let rest = read(&mut resumed, 20).await;
    assert_eq!(rest, all[5..], "exactly the missed ones, then live");
    // Nothing more for it: no duplicate was queued behind the replay.
    publish(&mut sender, ["last".to_owned()]).await;
    let last = read(&mut resumed, 1).await;
    assert_eq!(last[0].1, "last");
    publisher.close(None).await.unwrap();
}

#[tokio::test]
async fn a_position_that_is_gone_or_of_another_epoch_gets_4001() {
    let node = node(5).await;
    let (mut watcher, epoch) = sequenced(&node, "t", None).await;
    let mut sender = plain(&node, "t").await;
    subscribed(&node, 2).await;
    publish(&mut sender, (0..20).map(|i| format!("m{i}"))).await;
    let all = read(&mut watcher, 20).await;

    for since in [
        Since::new(&epoch, all[2].0).unwrap(),
        Since::new("another-epoch", all[19].0).unwrap(),
    ] {
        let (mut client, _) = sequenced(&node, "t", Some(&since)).await;
        let msg = within(10, "the close", client.read()).await;
        match msg {
            Ok(Message::Close(Some(frame))) => {
                assert_eq!(frame.code, CloseCode::Library(4001), "{since}");
                assert_eq!(frame.reason.as_str(), "resync");
            }
            other => panic!("{since}: expected 4001, got {other:?}"),
        }
    }
    // The newest evicted position is fine: nothing after it is gone.
    let (mut client, _) =
        sequenced(&node, "t", Some(&Since::new(&epoch, all[14].0).unwrap())).await;
    assert_eq!(read(&mut client, 5).await, all[15..]);
    // 0: from the oldest held.
    let (mut client, _) = sequenced(&node, "t", Some(&Since::new(&epoch, 0).unwrap())).await;
    assert_eq!(read(&mut client, 5).await, all[15..]);
}

#[tokio::test]
async fn a_malformed_since_or_one_without_the_subprotocol_is_refused_with_400() {
    let node = node(5).await;
    for (query, subprotocol) in [("since=x", true), ("since=e:1", false)] {
        let url = format!("ws://{}/topics/t?{query}", node.local_addr());
        let mut request = url.into_client_request().unwrap();
        if subprotocol {
            request
                .headers_mut()
                .insert("sec-websocket-protocol", seq::SUBPROTOCOL.parse().unwrap());
        }
        let error = connect_async(request).await.expect_err("refused");
        match error {
            tokio_lockgate::Error::Http(response) => {
                assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{query}")
            }
            other => panic!("{query}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_since_on_a_node_without_a_history_gets_4001_and_no_subprotocol() {
    let node = Node::start(NodeConfig::new(loopback())).await.unwrap();
    let url = format!("ws://{}/topics/t?since=e:5", node.local_addr());
    let mut request = url.into_client_request().unwrap();
    request
        .headers_mut()
        .insert("sec-websocket-protocol", seq::SUBPROTOCOL.parse().unwrap());
    let (mut client, response) = connect_async(request).await.expect("upgrade");
    assert!(response.headers().get("sec-websocket-protocol").is_none());
    assert!(response.headers().get(seq::EPOCH_HEADER).is_none());
    match within(10, "the close", client.read()).await {
        Ok(Message::Close(Some(frame))) => assert_eq!(frame.code, seq::RESYNC),
        other => panic!("expected 4001, got {other:?}"),
    }
}
