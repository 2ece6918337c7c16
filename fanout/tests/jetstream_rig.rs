//! The JetStream cluster the history's tests run on (support/jetstream.rs)
//! does what they rely on, checked with the NATS client directly: a
//! replicated stream gets a leader the monitor reports, and when that
//! server is killed another leads and the stream still stores messages.

mod support;

use std::time::Duration;

use async_nats::jetstream::{self, stream};
use support::{JetStreamCluster, within};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replicated_streams_leader_is_found_killed_and_replaced() {
    within(180, "the test", async {
        let mut cluster = JetStreamCluster::start();
        cluster.wait_ready().await;
        let options = async_nats::ConnectOptions::new()
            .connection_timeout(Duration::from_secs(5))
            .retry_on_initial_connect();
        let urls: Vec<_> = cluster.urls().split(',').map(str::to_owned).collect();
        let client = options.connect(urls).await.expect("connects");
        let js = jetstream::new(client);
        js.create_stream(stream::Config {
            name: "RIG".into(),
            subjects: vec!["rig.>".into()],
            num_replicas: 3,
            ..Default::default()
        })
        .await
        .expect("a replicated stream");
        js.publish("rig.a", "one".into())
            .await
            .expect("published")
            .await
            .expect("stored");
        assert_eq!(cluster.streams(0).await, Some(vec!["RIG".to_owned()]));
        let leader = cluster
            .wait_stream_leader("RIG", Duration::from_secs(30))
            .await;

        cluster.kill(leader);
        assert!(!cluster.is_running(leader));
        let next = cluster
            .wait_stream_leader("RIG", Duration::from_secs(30))
            .await;
        assert_ne!(next, leader);
        // Stored again once the client has found a live server.
        let mut stored = false;
        for _ in 0..30 {
            let ack = match js.publish("rig.a", "two".into()).await {
                Ok(ack) => ack.await,
                Err(e) => Err(e),
            };
            if ack.is_ok() {
                stored = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        assert!(stored, "no message stored after the leader's loss");

        cluster.restart(leader);
        cluster.wait_ready().await;
        assert!(cluster.is_running(leader));
    })
    .await;
}
