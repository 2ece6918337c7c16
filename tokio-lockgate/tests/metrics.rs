//! What the async driver's connections and the hub report to the
//! `metrics` facade (and, with `tracing`, to `tracing`): exact counts for
//! known workloads, read from a debugging recorder. Run with
//! `--features metrics,tracing`.

use lockgate_kit::observe as observe_support;

use lockgate::observe::names;
use metrics::Unit;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use observe_support::recorder;
use tokio::io::AsyncWriteExt;
use tokio_lockgate::hub::metrics::names as hub;
use tokio_lockgate::hub::{Hub, HubConfig, SlowConsumer};
use tokio_lockgate::{
    CloseCode, CloseFrame, Config, Error, Message, PreparedMessage, Role, WebSocketStream,
    accept_async,
};

/// The rows of the table in `tokio_lockgate::hub::metrics`'s docs: name
/// and type.
fn documented() -> Vec<(&'static str, &'static str)> {
    include_str!("../src/hub/metrics.rs")
        .lines()
        .filter_map(|line| line.strip_prefix("//! | `"))
        .map(|row| {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            (cells[0].trim_end_matches('`'), cells[1])
        })
        .collect()
}

/// What is registered with a fresh recorder of this thread once `work`
/// ran: name, unit, described, value.
fn registered_by(work: impl FnOnce()) -> Vec<(String, Option<Unit>, bool, DebugValue)> {
    // Leaked: the handles are kept per recorder address, which must not be
    // reused by another recorder in this process.
    let recorder: &'static DebuggingRecorder = Box::leak(Box::new(DebuggingRecorder::new()));
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(recorder, work);
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, unit, help, value)| {
            let name = key.key().name().to_owned();
            (name, unit, help.is_some(), value)
        })
        .collect()
}

#[test]
fn every_documented_series_exists_at_zero_once_registered_before_any_hub() {
    let registered = registered_by(tokio_lockgate::hub::metrics::register_metrics);
    let rows = documented();
    assert_eq!(rows.len(), 7, "the table in src/hub/metrics.rs: {rows:?}");
    for (name, kind) in rows {
        let series: Vec<_> = registered.iter().filter(|s| s.0 == name).collect();
        assert_eq!(series.len(), 1, "{name}: {series:?}");
        let (_, unit, described, value) = series[0];
        assert!(unit.is_some() && *described, "{name}");
        match kind {
            "counter" => assert_eq!(*value, DebugValue::Counter(0), "{name}"),
            "gauge" => assert_eq!(*value, DebugValue::Gauge(0.0.into()), "{name}"),
            "histogram" => assert_eq!(*value, DebugValue::Histogram(Vec::new()), "{name}"),
            other => panic!("{name}: a {other} in the table"),
        }
    }
    // And lockgate's own (its test checks every one of them).
    let received = registered
        .iter()
        .find(|s| s.0 == names::MESSAGES_RECEIVED)
        .expect("lockgate's counters too");
    assert_eq!(received.3, DebugValue::Counter(0));
}

#[test]
fn a_new_hub_registers_the_hubs_series() {
    let registered = registered_by(|| drop(Hub::new(HubConfig::default())));
    for (name, _) in documented() {
        assert!(registered.iter().any(|s| s.0 == name), "{name}");
    }
}

#[tokio::test]
async fn a_known_workload_counts_exactly() {
    let recorder = recorder();
    let (a, b) = tokio::io::duplex(1 << 16);
    let mut server = WebSocketStream::from_raw_socket(a, Role::Server, Config::default()).await;
    let mut client = WebSocketStream::from_raw_socket(b, Role::Client, Config::default()).await;

    const N: usize = 40;
    let texts: Vec<String> = (0..N).map(|i| format!("tick {i}")).collect();
    let binaries: Vec<Vec<u8>> = (0..N).map(|i| vec![7; i * 11]).collect();
    for text in &texts {
        client.write(Message::text(text.as_str())).await.unwrap();
    }
    client.flush().await.unwrap();
    for text in &texts {
        assert_eq!(server.read().await.unwrap(), Message::text(text.as_str()));
    }
    for binary in &binaries {
        server.write(Message::binary(binary.clone())).await.unwrap();
    }
    server.flush().await.unwrap();
    for binary in &binaries {
        assert_eq!(
            client.read().await.unwrap(),
            Message::binary(binary.clone())
        );
    }

    // Traffic has stopped: every count is in.
    let bytes = (texts.iter().map(String::len).sum::<usize>()
        + binaries.iter().map(Vec::len).sum::<usize>()) as u64;
    let traffic = recorder.take();
    assert_eq!(traffic.counter(names::CONNECTIONS_OPENED, &[]), 2);
    assert_eq!(traffic.gauge(names::CONNECTIONS_OPEN), 2.0);
    assert_eq!(
        traffic.counter(names::MESSAGES_SENT, &[]),
        2 * N as u64,
        "{traffic:?}"
    );
    assert_eq!(traffic.counter(names::MESSAGES_RECEIVED, &[]), 2 * N as u64);
    assert_eq!(traffic.counter(names::BYTES_SENT, &[]), bytes);
    assert_eq!(traffic.counter(names::BYTES_RECEIVED, &[]), bytes);

    // The server closes with 4001.
    let frame = CloseFrame::new(CloseCode::from(4001), "bye");
    server.close(Some(frame)).await.unwrap();
    assert!(matches!(client.read().await, Ok(Message::Close(Some(_)))));
    assert!(matches!(client.read().await, Err(Error::ConnectionClosed)));
    assert!(matches!(server.read().await, Ok(Message::Close(Some(_)))));
    assert!(matches!(server.read().await, Err(Error::ConnectionClosed)));
    let closed = recorder.take();
    let close = |by| closed.counter(names::CLOSES, &[("code", "4001"), ("by", by)]);
    assert_eq!((close("local"), close("peer")), (1, 1), "{closed:?}");
    assert_eq!(closed.gauge(names::CONNECTIONS_OPEN), -2.0);
    assert_eq!(closed.moved().len(), 3, "{closed:?}");
}

#[tokio::test]
async fn a_refused_upgrade_counts_its_reason() {
    let recorder = recorder();
    let (mut peer, stream) = tokio::io::duplex(4096);
    peer.write_all(
        b"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\
          Sec-WebSocket-Version: 8\r\n\r\n",
    )
    .await
    .unwrap();
    assert!(accept_async(stream).await.is_err());
    let counts = recorder.take();
    assert_eq!(
        counts.counter(names::HANDSHAKE_FAILURES, &[("reason", "version")]),
        1,
        "{counts:?}"
    );
    assert_eq!(counts.counter(names::CONNECTIONS_OPENED, &[]), 0);
}

#[tokio::test]
async fn a_publish_to_k_subscribers_counts_once_per_publish() {
    const K: usize = 5;
    let recorder = recorder();
    let message = PreparedMessage::new(Message::text("EURUSD 1.0842"));

    // Queues of two: the third publish finds every queue full.
    let config = HubConfig::default()
        .queue_capacity(2)
        .slow_consumer(SlowConsumer::Drop);
    let hub = Hub::new(config);
    let mut subscribers: Vec<_> = (0..K).map(|_| hub.subscriber()).collect();
    for subscriber in &subscribers {
        subscriber.subscribe("prices");
    }
    for _ in 0..3 {
        hub.publish("prices", &message).await;
    }
    let published = recorder.take();
    assert_eq!(published.counter(hub::PUBLISHED, &[]), 3, "{published:?}");
    assert_eq!(published.counter(hub::QUEUED, &[]), 2 * K as u64);
    assert_eq!(published.counter(hub::DROPPED, &[]), K as u64);
    assert_eq!(published.counter(hub::DELIVERED, &[]), 0);
    assert_eq!(published.gauge(hub::SUBSCRIBERS), K as f64);

    // Each connection takes its two queued messages in one burst.
    for subscriber in &mut subscribers {
        let mut burst = Vec::new();
        assert_eq!(subscriber.recv_burst(&mut burst).await.unwrap(), 2);
    }
    let delivered = recorder.take();
    assert_eq!(delivered.counter(hub::DELIVERED, &[]), 2 * K as u64);
    assert_eq!(delivered.histogram(hub::BURST_MESSAGES), vec![2.0; K]);

    // Under the Close policy, a full queue closes its subscriber once.
    let config = HubConfig::default()
        .queue_capacity(1)
        .slow_consumer(SlowConsumer::Close(CloseCode::Policy));
    let closing = Hub::new(config);
    let slow: Vec<_> = (0..K).map(|_| closing.subscriber()).collect();
    for subscriber in &slow {
        subscriber.subscribe("prices");
    }
    for _ in 0..3 {
        closing.publish("prices", &message).await;
    }
    drop((slow, subscribers));
    let closed = recorder.take();
    assert_eq!(
        closed.counter(hub::CLOSED_SLOW, &[]),
        K as u64,
        "{closed:?}"
    );
    assert_eq!(closed.counter(hub::QUEUED, &[]), K as u64);
    assert_eq!(closed.counter(hub::PUBLISHED, &[]), 3);
    assert_eq!(closed.gauge(hub::SUBSCRIBERS), -(K as f64));
}

#[cfg(feature = "tracing")]
#[tokio::test(flavor = "current_thread")]
async fn connect_async_records_the_peer_and_the_close() {
    use crate::observe_support::Capture;
    use tokio::net::TcpListener;

    let _recorder = recorder();
    // One thread: the server task and the client see the same subscriber.
    let capture = Capture::default();
    let _subscriber = tracing::subscriber::set_default(capture.clone());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let mut ws = accept_async(listener.accept().await.unwrap().0)
            .await
            .unwrap();
        while let Ok(msg) = ws.read().await {
            if msg.is_data() {
                ws.send(msg).await.unwrap();
            }
        }
    });
    let (mut ws, _) = tokio_lockgate::connect_async(format!("ws://{addr}/"))
        .await
        .unwrap();
    for i in 0..50 {
        ws.send(Message::text(format!("echo {i}"))).await.unwrap();
        assert!(ws.read().await.unwrap().is_text());
    }
    ws.close(Some(CloseFrame::new(CloseCode::Away, "")))
        .await
        .unwrap();
    while ws.read().await.is_ok() {}
    server.await.unwrap();
    drop(ws);

    let spans = capture.spans("websocket");
    let role = |role: &str| {
        let found: Vec<_> = spans.iter().filter(|s| s.fields["role"] == role).collect();
        assert_eq!(found.len(), 1, "{spans:?}");
        found[0].clone()
    };
    let (client, server) = (role("client"), role("server"));
    assert_eq!(client.fields["peer"], addr.to_string());
    let closed = capture.events("closed");
    let close_of = |span: &observe_support::SpanSeen| {
        let found: Vec<_> = closed
            .iter()
            .filter(|e| e.parent == Some(span.id))
            .collect();
        assert_eq!(found.len(), 1, "{closed:?}");
        (
            found[0].fields["code"].clone(),
            found[0].fields["by"].clone(),
        )
    };
    assert_eq!(close_of(&client), ("1001".to_owned(), "local".to_owned()));
    assert_eq!(close_of(&server), ("1001".to_owned(), "peer".to_owned()));
    let per_message: Vec<_> = capture
        .all_events()
        .into_iter()
        .filter(|e| !["closed", "state"].contains(&e.message()))
        .collect();
    assert!(per_message.is_empty(), "{per_message:?}");
}
