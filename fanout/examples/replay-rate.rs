//! How fast a resuming client catches up: publishes MESSAGES messages of
//! SIZE bytes to a topic through the first node, waits until a
//! `lockgate.seq.v1` client of every node has them, then, on each node,
//! times a client that resumes with `since=EPOCH:0` until it has received
//! all of them. A node that delivered the messages serves them from its
//! memory; one started afterwards reads them from JetStream: with
//! `--fresh FRESH_URL`, the program prints `waiting for FRESH_URL` once
//! the others are measured, waits (up to 60 s) for a node to listen
//! there, and times it too.
//!
//! ```text
//! cargo run --release -p lockgate-fanout --example replay-rate -- \
//!     MESSAGES SIZE URL [URL...] [--fresh FRESH_URL]
//! ```
//!
//! Prints one line per node: messages replayed per second, and the time
//! to the first replayed message. The history (`--history`) must hold
//! MESSAGES messages, and the topic must be unused.

use std::time::{Duration, Instant};

use lockgate_fanout::seq::{self, Sequenced, Since};
use tokio_lockgate::handshake::IntoClientRequest;
use tokio_lockgate::{MaybeTlsStream, Message, WebSocketStream, connect_async};

type Client = WebSocketStream<MaybeTlsStream<tokio::net::TcpStream>>;

async fn sequenced(url: &str) -> Result<(Client, String), Box<dyn std::error::Error>> {
    let mut request = url.into_client_request()?;
    request
        .headers_mut()
        .insert("sec-websocket-protocol", seq::SUBPROTOCOL.parse()?);
    let (ws, response) = connect_async(request).await?;
    let epoch = response
        .headers()
        .get(seq::EPOCH_HEADER)
        .ok_or("no Lockgate-Epoch: is the node running with --history?")?
        .to_str()?
        .to_owned();
    Ok((ws, epoch))
}

/// The position of the next data message (pings are skipped).
async fn next_position(client: &mut Client) -> Result<u64, Box<dyn std::error::Error>> {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(30), client.read()).await??;
        match msg {
            Message::Binary(frame) => {
                return Ok(Sequenced::decode(&frame)
                    .ok_or("a malformed frame")?
                    .position);
            }
            Message::Ping(_) | Message::Pong(_) => {}
            other => return Err(format!("expected a lockgate.seq.v1 frame, got {other:?}").into()),
        }
    }
}

/// Reads until a frame at or past `last`; returns how many came.
async fn read_through(client: &mut Client, last: u64) -> Result<u64, Box<dyn std::error::Error>> {
    let mut count = 0;
    loop {
        count += 1;
        if next_position(client).await? >= last {
            return Ok(count);
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: replay-rate MESSAGES SIZE URL [URL...] [--fresh FRESH_URL]";
    let messages: u64 = args.next().ok_or(usage)?.parse()?;
    let size: usize = args.next().ok_or(usage)?.parse()?;
    let mut urls = Vec::new();
    let mut fresh = None;
    while let Some(arg) = args.next() {
        if arg == "--fresh" {
            fresh = Some(args.next().ok_or(usage)?);
        } else {
            urls.push(arg);
        }
    }
    let topic = format!("replay-{}", std::process::id());
    let topic_url = |url: &str| format!("{}/topics/{topic}", url.trim_end_matches('/'));
    let first = urls.first().ok_or(usage)?;

    // Every node delivers them, so its backlog holds them; read as they
    // come, so that no watcher falls behind its node's queue.
    let mut watchers = Vec::new();
    let mut epoch = String::new();
    for url in &urls {
        let (mut watcher, its_epoch) = sequenced(&topic_url(url)).await?;
        epoch = its_epoch;
        watchers.push(tokio::spawn(async move {
            let mut last = 0;
            for _ in 0..messages {
                last = next_position(&mut watcher)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Ok::<u64, String>(last)
        }));
    }
    let (publisher, _) = connect_async(topic_url(first)).await?;
    // Subscribed too (by its path): it reads what comes back, so that its
    // node does not close it as a slow consumer.
    let (mut publisher, mut echoes) = publisher.into_split();
    tokio::spawn(async move { while echoes.read().await.is_ok() {} });
    let payload = "x".repeat(size);
    for i in 0..messages {
        publisher.write(Message::text(payload.clone())).await?;
        if i % 64 == 63 {
            publisher.flush().await?;
        }
    }
    publisher.flush().await?;
    let mut last = 0;
    for watcher in watchers {
        last = last.max(watcher.await??);
    }
    let since = Since::new(&epoch, 0).ok_or("a bad epoch")?;
    let mut targets: Vec<(String, &str)> = urls.iter().map(|u| (u.clone(), "memory")).collect();
    if let Some(fresh) = &fresh {
        targets.push((fresh.clone(), "JetStream"));
    }
    for (url, from) in targets {
        if from == "JetStream" {
            println!("waiting for {url}");
            let addr = url.trim_start_matches("ws://").to_owned();
            let deadline = Instant::now() + Duration::from_secs(60);
            while tokio::net::TcpStream::connect(&addr).await.is_err() {
                if Instant::now() > deadline {
                    return Err(format!("nothing listens at {url}").into());
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        let started = Instant::now();
        let (mut client, _) = sequenced(&format!("{}?since={since}", topic_url(&url))).await?;
        let got = read_through(&mut client, last).await?;
        let took = started.elapsed();
        println!(
            "{url} ({from}): {got} messages of {size} B in {:.1} ms: {:.0} messages/s",
            took.as_secs_f64() * 1e3,
            got as f64 / took.as_secs_f64()
        );
    }
    Ok(())
}
