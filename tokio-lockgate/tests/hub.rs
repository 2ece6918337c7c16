//! The pub/sub hub: one flush per burst, bounded queues under every
//! slow-consumer policy, unsubscribing on drop, and a subscriber that never
//! reads costing at most its bound over real sockets.

use lockgate_kit as support;

use std::time::Duration;

use futures_util::StreamExt;
use support::{AsyncMock, CountingAlloc, HeapUse, parse_frames, poll_once};
use tokio::net::{TcpListener, TcpStream};
use tokio_lockgate::hub::{Ended, Hub, HubConfig, SlowConsumer};
use tokio_lockgate::{
    CloseCode, Config, Error, Message, PreparedMessage, Role, WebSocketContext, WebSocketStream,
};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

fn text(i: usize) -> PreparedMessage {
    PreparedMessage::new(Message::text(format!("message {i}")))
}

fn mock_connection() -> WebSocketStream<AsyncMock> {
    WebSocketStream::from_context(
        AsyncMock::default(),
        WebSocketContext::new(Role::Server, Config::default()),
    )
}

#[tokio::test(start_paused = true)]
async fn a_burst_is_written_and_flushed_once_whatever_its_size() {
    let hub = Hub::new(HubConfig::default());
    let mut subscriber = hub.subscriber();
    subscriber.subscribe("t");
    let mut ws = mock_connection();
    for (round, burst) in [100usize, 1, 500].into_iter().enumerate() {
        for i in 0..burst {
            assert_eq!(hub.publish("t", &text(i)).await.queued, 1);
        }
        // forward runs until it waits for the next burst.
        let idle = tokio::time::timeout(Duration::from_secs(1), subscriber.forward(&mut ws));
        assert!(idle.await.is_err(), "forward ended");
        let mock = &ws.get_ref().0;
        assert_eq!(mock.flush_calls, round + 1, "one flush per burst");
        assert_eq!(mock.write_calls, round + 1, "one write per burst");
    }
    let frames = parse_frames(&ws.get_ref().0.written);
    assert_eq!(frames.len(), 601);
    assert_eq!(frames[600].payload, b"message 499");
    assert_eq!(hub.stats().delivered, 601);
    assert_eq!(subscriber.stats().delivered, 601);
}

#[tokio::test]
async fn dropping_a_subscriber_unsubscribes_it_everywhere() {
    let hub = Hub::new(HubConfig::default());
    let subscribers: Vec<_> = (0..10)
        .map(|i| {
            let s = hub.subscriber();
            s.subscribe("all");
            s.subscribe(&format!("own {i}"));
            s.subscribe("all"); // twice is once
            s
        })
        .collect();
    let topics = subscribers[0].topics();
    assert_eq!(hub.subscribers("all"), 10);
    assert_eq!((hub.stats().subscribers, hub.stats().topics), (10, 11));
    assert_eq!(hub.publish("all", &text(0)).await.queued, 10);

    subscribers[3].unsubscribe("all");
    assert_eq!(hub.subscribers("all"), 9);
    drop(subscribers);
    assert_eq!(hub.subscribers("all"), 0);
    assert_eq!((hub.stats().subscribers, hub.stats().topics), (0, 0));
    assert_eq!(hub.publish("all", &text(1)).await, Default::default());
    // A handle outliving its subscriber does nothing.
    topics.subscribe("late");
    assert_eq!(hub.stats().topics, 0);
}

#[tokio::test]
async fn drop_policy_keeps_the_queue_at_its_bound_and_counts_the_rest() {
    let hub = Hub::new(
        HubConfig::default()
            .queue_capacity(10)
            .slow_consumer(SlowConsumer::Drop),
    );
    let mut slow = hub.subscriber();
    slow.subscribe("t");
    for i in 0..25 {
        hub.publish("t", &text(i)).await;
    }
    let stats = slow.stats();
    assert_eq!((stats.queued, stats.dropped, stats.closed), (10, 15, None));
    assert_eq!((hub.stats().queued, hub.stats().dropped), (10, 15));
    // It keeps the oldest, in order, and stays subscribed.
    let mut burst = Vec::new();
    assert_eq!(slow.recv_burst(&mut burst).await, Ok(10));
    let expected: Vec<_> = (0..10).map(|i| text(i).message().clone()).collect();
    let got: Vec<_> = burst.iter().map(|m| m.message().clone()).collect();
    assert_eq!(got, expected);
    assert_eq!(hub.publish("t", &text(99)).await.queued, 1);
}

#[tokio::test]
async fn close_policy_closes_a_full_subscriber_with_its_code_and_frees_its_queue() {
    let hub = Hub::new(
        HubConfig::default()
            .queue_capacity(4)
            .slow_consumer(SlowConsumer::Close(CloseCode::Again)),
    );
    let mut slow = hub.subscriber();
    let mut fast = hub.subscriber();
    slow.subscribe("t");
    fast.subscribe("t");
    let mut burst = Vec::new();
    for i in 0..6 {
        let published = hub.publish("t", &text(i)).await;
        // The fifth message finds the slow queue full; the fast one is
        // drained after every publish and keeps receiving.
        let expected_closed = usize::from(i == 4);
        assert_eq!(published.closed, expected_closed, "publish {i}");
        assert_eq!(published.queued, if i < 4 { 2 } else { 1 }, "publish {i}");
        assert_eq!(fast.recv_burst(&mut burst).await, Ok(1));
    }
    burst.clear();
    let stats = slow.stats();
    assert_eq!(stats.queued, 0, "a closed subscriber holds nothing");
    let ended = stats.closed.expect("closed");
    assert_eq!(ended.code, CloseCode::Again);
    assert_eq!(hub.stats().closed_slow, 1);
    assert_eq!(slow.recv_burst(&mut burst).await, Err(ended));
    assert!(burst.is_empty());
    assert_eq!(hub.publish("t", &text(7)).await.closed, 0, "closed once");
}

#[tokio::test]
async fn wait_policy_makes_the_publisher_wait_for_room() {
    let hub = Hub::new(
        HubConfig::default()
            .queue_capacity(2)
            .slow_consumer(SlowConsumer::Wait),
    );
    let mut subscriber = hub.subscriber();
    subscriber.subscribe("t");
    hub.publish("t", &text(0)).await;
    hub.publish("t", &text(1)).await;
    let third = text(2);
    let mut publish = Box::pin(hub.publish("t", &third));
    assert!(
        poll_once(publish.as_mut()).is_pending(),
        "no room: it waits"
    );
    let mut burst = Vec::new();
    assert_eq!(subscriber.recv_burst(&mut burst).await, Ok(2));
    let published = tokio::time::timeout(Duration::from_secs(10), publish)
        .await
        .expect("room was made");
    assert_eq!(published.queued, 1);
    // A subscriber dropped while a publisher waits on it releases it.
    hub.publish("t", &text(3)).await;
    let fourth = text(4);
    let mut publish = Box::pin(hub.publish("t", &fourth));
    assert!(poll_once(publish.as_mut()).is_pending());
    drop(subscriber);
    let published = tokio::time::timeout(Duration::from_secs(10), publish)
        .await
        .expect("released");
    assert_eq!(published.queued, 0);
}

/// A server-side connection and its client over loopback TCP, without the
/// opening handshake.
async fn tcp_pair(
    listener: &TcpListener,
) -> (WebSocketStream<TcpStream>, WebSocketStream<TcpStream>) {
    let addr = listener.local_addr().unwrap();
    let (client, server) = tokio::join!(TcpStream::connect(addr), listener.accept());
    let config = Config::default();
    (
        WebSocketStream::from_context(
            server.unwrap().0,
            WebSocketContext::new(Role::Server, config),
        ),
        WebSocketStream::from_context(client.unwrap(), WebSocketContext::new(Role::Client, config)),
    )
}

/// Reads `n` text messages and checks they are `message 0..n` in order.
async fn read_all_in_order(
    mut client: WebSocketStream<TcpStream>,
    n: usize,
) -> WebSocketStream<TcpStream> {
    for i in 0..n {
        let msg = client.next().await.expect("open").expect("no error");
        assert_eq!(msg, Message::Binary(payload(i).into()), "message {i}");
    }
    client
}

fn payload(i: usize) -> Vec<u8> {
    let mut p = vec![b'.'; 1024];
    p[..8].copy_from_slice(&(i as u64).to_be_bytes());
    p
}

#[tokio::test]
async fn a_subscriber_that_never_reads_costs_at_most_its_bound_and_delays_no_one() {
    const MESSAGES: usize = 20_000; // 20 MiB published
    const CAPACITY: usize = 64;
    for policy in [SlowConsumer::Drop, SlowConsumer::Close(CloseCode::Policy)] {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let hub = Hub::new(
            HubConfig::default()
                .queue_capacity(CAPACITY)
                .slow_consumer(policy)
                .close_grace(Some(Duration::from_millis(50))),
        );
        let heap = HeapUse::start();
        let mut readers = Vec::new();
        let mut forwards = Vec::new();
        for healthy in [true, true, true, false] {
            let (server, client) = tcp_pair(&listener).await;
            let mut subscriber = hub.subscriber();
            subscriber.subscribe("feed");
            let (mut write, _read) = server.into_split();
            forwards.push(tokio::spawn(async move {
                let ended = subscriber.forward(&mut write).await;
                (ended, subscriber.stats(), _read)
            }));
            if healthy {
                readers.push(tokio::spawn(read_all_in_order(client, MESSAGES)));
            } else {
                // Connected, never reads: kept open until the end.
                readers.push(tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    client
                }));
            }
        }
        let stuck_reader = readers.pop().unwrap();
        let mut peak_growth = 0;
        for i in 0..MESSAGES {
            hub.publish("feed", &PreparedMessage::new(Message::binary(payload(i))))
                .await;
            if i % 64 == 63 {
                // Let the connections drain; the publisher never waits on them.
                tokio::task::yield_now().await;
                peak_growth = peak_growth.max(heap.now());
            }
        }
        // Every healthy subscriber got everything, in order, while the
        // stuck one was stuck.
        for reader in readers {
            tokio::time::timeout(Duration::from_secs(60), reader)
                .await
                .expect("healthy subscribers are not delayed")
                .unwrap();
        }
        let stats = hub.stats();
        match policy {
            SlowConsumer::Drop => {
                assert!(stats.dropped > 0, "{policy:?}: {stats:?}");
                assert_eq!(stats.closed_slow, 0);
                assert_eq!(stats.queued + stats.dropped, 4 * MESSAGES as u64);
            }
            _ => {
                assert_eq!(stats.closed_slow, 1, "{policy:?}: {stats:?}");
                let stuck = forwards.pop().unwrap();
                let (ended, sub_stats, _) = tokio::time::timeout(Duration::from_secs(10), stuck)
                    .await
                    .expect("forward of a closed subscriber ends, stuck socket or not")
                    .unwrap();
                assert_eq!(
                    ended.unwrap(),
                    Ended {
                        code: CloseCode::Policy,
                        reason: "slow consumer: queue full".into()
                    }
                );
                assert_eq!(sub_stats.queued, 0);
            }
        }
        // The stuck subscriber held at most its queue and its connection's
        // write buffer: a few hundred KiB, against 20 MiB published.
        assert!(
            peak_growth < 2 << 20,
            "{policy:?}: the heap grew by {peak_growth} bytes for {MESSAGES} KiB published"
        );
        stuck_reader.abort();
        for forward in forwards {
            forward.abort();
        }
    }
}

#[tokio::test]
async fn close_all_sends_every_connection_the_code() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hub = Hub::new(HubConfig::default());
    let (server, mut client) = tcp_pair(&listener).await;
    let mut subscriber = hub.subscriber();
    subscriber.subscribe("t");
    let forward = tokio::spawn(async move {
        let mut server = server;
        subscriber.forward(&mut server).await
    });
    hub.publish("t", &text(1)).await;
    assert_eq!(
        client.next().await.unwrap().unwrap(),
        Message::text("message 1")
    );
    hub.close_all(CloseCode::Restart, "broker lost");
    let ended = forward.await.unwrap().unwrap();
    assert_eq!(ended.code, CloseCode::Restart);
    match client.next().await.unwrap() {
        Ok(Message::Close(Some(frame))) => {
            assert_eq!(frame.code, CloseCode::Restart);
            assert_eq!(frame.reason.as_str(), "broker lost");
        }
        other => panic!("expected the close frame, got {other:?}"),
    }
    let _ = Error::AlreadyClosed;
}
