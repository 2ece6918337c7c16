//! A split connection over loopback TCP: one task reads while another
//! writes, and the read half answers pings on its own.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpListener;
use tokio::time::timeout;
use tokio_lockgate::{Message, accept_async, connect_async};

const LIMIT: Duration = Duration::from_secs(20);

/// A type holding the halves names no bound on the stream, as one holding
/// `SplitStream<WebSocketStream<S>>` names none: the bounds sit on what
/// the halves do, not on their types (this compiles, or the test does not).
struct Peer<S> {
    reader: tokio_lockgate::WebSocketReadHalf<S>,
    writer: tokio_lockgate::WebSocketWriteHalf<S>,
}

impl<S> Peer<S> {
    fn new(
        (writer, reader): (
            tokio_lockgate::WebSocketWriteHalf<S>,
            tokio_lockgate::WebSocketReadHalf<S>,
        ),
    ) -> Self {
        Peer { reader, writer }
    }
}

#[tokio::test]
async fn a_struct_holding_the_halves_needs_no_bound_on_the_stream() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut ws = accept_async(tcp).await.unwrap();
        while let Some(Ok(msg)) = ws.next().await {
            if msg.is_data() {
                ws.send(msg).await.unwrap();
            }
        }
    });
    let (ws, _) = connect_async(url).await.unwrap();
    let mut peer = Peer::new(ws.into_split());
    timeout(Duration::from_secs(30), async {
        peer.writer.send(Message::text("held")).await.unwrap();
        let echo = peer.reader.next().await.unwrap().unwrap();
        assert_eq!(echo, Message::text("held"));
        peer.writer.close(None).await.unwrap();
    })
    .await
    .expect("the echo came back");
    drop(peer);
    server.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn halves_work_from_two_tasks_and_the_reader_answers_pings() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/", listener.local_addr().unwrap());
    const COUNT: usize = 20_000;

    // A server that echoes, and pings the client every 1000 messages.
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut ws = accept_async(tcp).await.unwrap();
        let mut pongs = 0;
        let mut echoed = 0;
        while let Some(msg) = ws.next().await {
            match msg.unwrap() {
                Message::Pong(_) => pongs += 1,
                msg if msg.is_data() => {
                    ws.feed(msg).await.unwrap();
                    echoed += 1;
                    if echoed % 1000 == 0 {
                        ws.feed(Message::Ping(vec![1, 2, 3].into())).await.unwrap();
                    }
                }
                _ => {}
            }
            // Batch replies: flush once the input read so far is used up.
            if ws.buffered_input() == 0 {
                ws.flush().await.unwrap();
            }
        }
        (echoed, pongs)
    });

    let (ws, _) = connect_async(url).await.unwrap();
    let (mut writer, mut reader) = ws.into_split();
    let writing = tokio::spawn(async move {
        for i in 0..COUNT {
            writer.feed(Message::text(format!("{i}"))).await.unwrap();
            if i % 64 == 63 {
                writer.flush().await.unwrap();
            }
        }
        writer.flush().await.unwrap();
        writer
    });
    let reading = tokio::spawn(async move {
        let mut next = 0;
        let mut pings = 0;
        // The last ping follows the last echo.
        while next < COUNT || pings < COUNT / 1000 {
            match reader.next().await.unwrap().unwrap() {
                Message::Text(t) => {
                    assert_eq!(t.as_str(), next.to_string());
                    next += 1;
                }
                Message::Ping(_) => pings += 1,
                other => panic!("{other:?}"),
            }
        }
        (reader, pings)
    });
    let mut writer = timeout(LIMIT, writing).await.unwrap().unwrap();
    let (mut reader, pings) = timeout(LIMIT, reading).await.unwrap().unwrap();
    assert_eq!(pings, COUNT / 1000);
    writer.close(None).await.unwrap();
    // The read half sees the end of the closing handshake.
    while let Some(msg) = timeout(LIMIT, reader.next()).await.unwrap() {
        msg.unwrap();
    }
    let (echoed, pongs) = timeout(LIMIT, server).await.unwrap().unwrap();
    assert_eq!(echoed, COUNT);
    assert_eq!(
        pongs,
        COUNT / 1000,
        "every ping was answered by the read half"
    );
    assert!(reader.reunite(writer).is_ok());
}

/// The peer's close, read by the read half, stops the write half: its
/// writes fail once the reply is queued, and the reply goes out first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_peers_close_read_by_the_read_half_stops_the_write_half() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut ws = accept_async(tcp).await.unwrap();
        ws.close(None).await.unwrap();
        // Our close is answered; nothing else may follow it.
        let mut after_close = Vec::new();
        while let Some(msg) = ws.next().await {
            after_close.push(msg.unwrap());
        }
        after_close
    });
    let (ws, _) = connect_async(url).await.unwrap();
    let (mut writer, mut reader) = ws.into_split();
    match timeout(LIMIT, reader.next()).await.unwrap() {
        Some(Ok(Message::Close(None))) => {}
        other => panic!("{other:?}"),
    }
    let refused = writer.send(Message::text("after the close")).await;
    assert!(refused.is_err(), "{refused:?}");
    assert!(timeout(LIMIT, reader.next()).await.unwrap().is_none());
    let after_close = timeout(LIMIT, server).await.unwrap().unwrap();
    assert_eq!(after_close, [Message::Close(None)]);
}
