//! Rate limits through the tokio driver, over in-memory pipes on tokio's
//! paused clock (`start_paused`): a flooding client throttled to its
//! limit while another connection of the same single thread is answered,
//! the exact pace of a throttled read, from a whole stream and from a
//! split read half, and keepalive staying quiet while a throttle keeps the
//! peer's bytes unread. (The Close policy, and throttled reads over real
//! sockets, are the kit's cases, which every driver runs.)
//!
//! The driver's throttle and the test read the same simulated time, so
//! "at most burst + rate x elapsed" is exact and no assertion reads a
//! wall clock.

use lockgate_kit::conformance::rate_limits::{
    BURST, RATE, assert_throttled_while_another_is_served,
};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::io::{DuplexStream, duplex};
use tokio::sync::mpsc;
use tokio::time::{Instant, timeout};
use tokio_lockgate::lockgate::RateLimit;
use tokio_lockgate::{Config, Message, Role, WebSocketStream};

const SECOND: Duration = Duration::from_secs(1);
/// Generous: only there so that a broken test fails instead of hanging.
const HANG: Duration = Duration::from_secs(30);

/// A client of a server connection with `config`, joined by an in-memory
/// pipe, whose task echoes every data message back at once. (In memory,
/// not loopback TCP: on a paused clock, time jumps whenever every task
/// waits, and a task waiting on the kernel's loopback delivery counts as
/// waiting.)
async fn echo_connection(config: Config) -> WebSocketStream<DuplexStream> {
    let (mut server, client) = pipe_pair(config).await;
    tokio::spawn(async move {
        while let Ok(msg) = server.read().await {
            if msg.is_data() && server.send(msg).await.is_err() {
                return;
            }
        }
    });
    client
}

/// At most this many messages may be handed over in `elapsed` of the
/// paused clock.
fn allowed(elapsed: Duration) -> usize {
    BURST as usize + (f64::from(RATE) * elapsed.as_secs_f64()).ceil() as usize
}

// One thread (as `start_paused` needs): the throttled connection must wait
// on its timer, not hold the thread, for the other to be served. The
// clock is paused: it moves only when every task waits, to the next timer.
// The connections are the server's tasks (one each), over pipes.
#[tokio::test(start_paused = true)]
async fn a_flooding_client_is_throttled_while_another_is_answered() {
    let config =
        Config::default().rate_limit(RateLimit::messages_per_second(RATE).message_burst(BURST));

    // 1,000 messages at once: 50 s' worth at the limit.
    const FLOOD: usize = 1000;
    let mut flooder = echo_connection(config).await;
    let start = Instant::now();
    for i in 0..FLOOD {
        flooder
            .feed(Message::text(format!("{i:04}")))
            .await
            .unwrap();
    }
    flooder.flush().await.unwrap();
    let mut flooded = 0;
    // The burst is through: the flooder is being throttled now.
    while flooded < BURST as usize {
        timeout(HANG, flooder.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        flooded += 1;
    }

    // Another client, on its own connection (its own buckets), gets its
    // answers: a burst's worth of round trips, while the flooder's echoes
    // keep coming in.
    let mut other = echo_connection(config).await;
    for i in 0..BURST {
        let msg = Message::text(format!("other {i}"));
        other.send(msg.clone()).await.unwrap();
        let answer = loop {
            tokio::select! {
                answer = other.next() => break answer.unwrap().unwrap(),
                echo = flooder.next() => {
                    echo.unwrap().unwrap();
                    flooded += 1;
                }
            }
        };
        assert_eq!(answer, msg);
    }
    assert_throttled_while_another_is_served(flooded, FLOOD);
    let elapsed = start.elapsed();
    assert!(
        flooded <= allowed(elapsed),
        "{flooded} in {elapsed:?} (simulated)"
    );
    // Not closed: it keeps getting messages at the limit.
    for _ in 0..5 {
        let echo = timeout(HANG, flooder.next()).await.unwrap().unwrap();
        assert!(echo.unwrap().is_text());
        flooded += 1;
    }
    let elapsed = start.elapsed();
    assert!(
        flooded <= allowed(elapsed),
        "{flooded} in {elapsed:?} (simulated)"
    );
}

/// A server with `config` and a client, joined by an in-memory pipe.
async fn pipe_pair(
    config: Config,
) -> (WebSocketStream<DuplexStream>, WebSocketStream<DuplexStream>) {
    let (server, client) = duplex(1 << 20);
    let server = WebSocketStream::from_raw_socket(server, Role::Server, config).await;
    let client = WebSocketStream::from_raw_socket(client, Role::Client, Config::default()).await;
    (server, client)
}

/// `n` small texts from `client`, written and flushed at once.
async fn flood(client: &mut WebSocketStream<DuplexStream>, n: usize) {
    for i in 0..n {
        client.feed(Message::text(format!("{i}"))).await.unwrap();
    }
    client.flush().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_throttled_read_keeps_the_exact_pace() {
    let limit = RateLimit::messages_per_second(10);
    let (mut server, mut client) = pipe_pair(Config::default().rate_limit(limit)).await;
    flood(&mut client, 40).await;
    let start = Instant::now();
    let mut at = Vec::new();
    for i in 0..30 {
        let msg = server.read().await.unwrap();
        assert_eq!(msg, Message::text(i.to_string()));
        at.push(start.elapsed());
    }
    // The burst (one second's worth) at once, then one every 100 ms.
    assert_eq!(at[..10], [Duration::ZERO; 10]);
    for (i, at) in at[10..].iter().enumerate() {
        assert_eq!(
            *at,
            Duration::from_millis(100 * (i as u64 + 1)),
            "message {}",
            i + 10
        );
    }
}

#[tokio::test(start_paused = true)]
async fn the_split_read_half_is_throttled_too() {
    let limit = RateLimit::messages_per_second(10).message_burst(5);
    let (server, mut client) = pipe_pair(Config::default().rate_limit(limit)).await;
    let (mut writer, mut reader) = server.into_split();
    // The read half hands what it reads to the write half's task, which
    // echoes it.
    let (tx, mut rx) = mpsc::unbounded_channel();
    let reading = tokio::spawn(async move {
        let start = Instant::now();
        for _ in 0..25 {
            tx.send(reader.next().await.unwrap().unwrap()).unwrap();
        }
        start.elapsed()
    });
    let echoing = tokio::spawn(async move {
        while let Some(msg) = rx.recv().await {
            writer.send(msg).await.unwrap();
        }
    });
    flood(&mut client, 100).await;
    for i in 0..25 {
        assert_eq!(
            client.next().await.unwrap().unwrap(),
            Message::text(i.to_string())
        );
    }
    // Five at once, then twenty at 100 ms each.
    assert_eq!(reading.await.unwrap(), 2 * SECOND);
    echoing.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn keepalive_stays_quiet_while_throttled() {
    // Keepalive would ping a silent peer after 1 s and give up on it 1 s
    // later. The client here never reads, so it answers no ping; but it
    // sent more than the byte limit lets through, and while the server
    // is throttled it cannot tell silence from its own not reading.
    let config = Config::default()
        .rate_limit(RateLimit::bytes_per_second(1000))
        .ping_interval(Some(SECOND))
        .ping_timeout(Some(SECOND));
    let (mut server, mut client) = pipe_pair(config).await;
    client.feed(Message::binary(vec![0; 5000])).await.unwrap();
    client.feed(Message::binary(vec![0; 100])).await.unwrap();
    client.flush().await.unwrap();
    let start = Instant::now();
    assert_eq!(server.read().await.unwrap().len(), 5000);
    // 4,000 bytes of debt and 100 more: 4.1 s, two keepalive timeouts'
    // worth, without a ping or a timeout.
    assert_eq!(server.read().await.unwrap().len(), 100);
    assert_eq!(start.elapsed(), Duration::from_millis(4100));
    // Now nothing is held back, and the silent client is given up.
    let error = server.read().await.unwrap_err();
    assert!(error.timeout().is_some(), "{error:?}");
    drop(client);
}
