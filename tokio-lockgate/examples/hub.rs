//! Publish to many connections with a [`Hub`]: a server whose
//! connections each join topic `news` through a [`Subscriber`], three
//! clients, and a publisher that reaches all of them with one call per
//! message.
//!
//! ```text
//! cargo run -p tokio-lockgate --example hub
//! ```
//!
//! Why a hub rather than a loop over the connections: a message is
//! encoded once ([`PreparedMessage`]) and shared by every queue, the
//! publisher never waits on a slow socket (each connection drains its own
//! bounded queue, one flush per burst), and a connection that stops
//! reading costs at most its queue's bound before the slow-consumer
//! policy acts on it (by default: closed with 1008).

use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_lockgate::hub::{Hub, HubConfig};
use tokio_lockgate::{Message, PreparedMessage, accept_async, connect_async};

const CLIENTS: usize = 3;
const TOPIC: &str = "news";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let hub = Hub::new(HubConfig::default());
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("ws://{}/", listener.local_addr()?);
    // Each connection says when it has joined, so nothing is published
    // before every client can get it (a hub keeps no history).
    let (joined_tx, mut joined) = mpsc::channel(CLIENTS);

    let serving = hub.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (hub, joined) = (serving.clone(), joined_tx.clone());
            tokio::spawn(async move {
                let Ok(ws) = accept_async(tcp).await else {
                    return;
                };
                let mut subscriber = hub.subscriber();
                subscriber.subscribe(TOPIC);
                let _ = joined.send(()).await;
                // The write half is the subscriber's: each burst of
                // queued messages written, then one flush.
                let (mut write, mut read) = ws.into_split();
                let forwarding = tokio::spawn(async move { subscriber.forward(&mut write).await });
                // The read half answers pings and sees the client's close.
                while read.read().await.is_ok() {}
                forwarding.abort();
            });
        }
    });

    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        clients.push(connect_async(&url).await?.0);
    }
    for _ in 0..CLIENTS {
        joined.recv().await;
    }
    println!("{} subscriber(s) on {TOPIC:?}", hub.subscribers(TOPIC));

    let headlines = [
        "lock gates open at dawn",
        "barge traffic up",
        "canal closed for repairs",
    ];
    for headline in headlines {
        let published = hub
            .publish(TOPIC, &PreparedMessage::new(Message::text(headline)))
            .await;
        println!(
            "published {headline:?}: queued for {} subscriber(s)",
            published.queued
        );
    }

    for (i, ws) in clients.iter_mut().enumerate() {
        for _ in headlines {
            println!("client {i} got: {}", ws.read().await?);
        }
        ws.close(None).await?;
        while ws.read().await.is_ok() {}
    }
    let stats = hub.stats();
    println!(
        "hub: {} published, {} delivered, {} dropped",
        stats.published, stats.delivered, stats.dropped
    );
    Ok(())
}
