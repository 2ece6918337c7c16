//! Scenario 6: fan-out. One message at a time to 1,000 parked loopback
//! connections, in bursts; deliveries per second and the serving thread's
//! CPU time per delivery.
//!
//! The server end runs on one thread (a current-thread tokio runtime): a
//! publisher task and one task per connection. tokio-lockgate uses its
//! hub: one `PreparedMessage` per message, `Hub::publish`, and
//! `Subscriber::forward` per connection (one flush per burst), with the
//! `Wait` policy so nothing is dropped. Each peer runs its natural
//! equivalent, written carefully (sockudo-ws's `PubSub` is the same shape,
//! a channel per subscriber, but unbounded, so the bounded channel below
//! stands in for it): the message cloned per connection into a
//! bounded channel (the same 1,024 messages, `try_send` so the publisher
//! does not spend tokio's cooperative budget) and a task per connection
//! that feeds everything waiting into the connection's own sink, then
//! flushes once. The publisher
//! yields after each burst. The client ends are raw sockets on another
//! thread that parse every frame and check every message's index, in
//! order, so nothing can be skipped. A run is timed from the first publish
//! to the last message received; CPU is the server thread's
//! (`RUSAGE_THREAD`).

use std::net::{TcpListener, TcpStream};
use std::sync::mpsc as std_mpsc;
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;
use tokio::task::LocalSet;

use crate::libs::{self, AsyncLib};
use crate::report::Lib;
use crate::upgrade;

/// Payload bytes per message; the first 8 are its index.
const SIZE: usize = 64;
/// Messages a connection may have waiting (hub queue, peer channel).
const QUEUE: usize = 1024;

/// The libraries compared (async only: a fan-out server is a tokio server).
pub(crate) const LIBS: [Lib; 6] = [
    Lib::TokioLockgate,
    Lib::TokioTungstenite,
    Lib::Fastwebsockets,
    Lib::TokioWebsockets,
    Lib::SockudoWs,
    Lib::Yawc,
];

/// What one run moved.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FanoutRun {
    pub(crate) deliveries: u64,
    pub(crate) elapsed: Duration,
    /// CPU time of the serving thread.
    pub(crate) server_cpu: Duration,
}

/// How big a run is.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    pub(crate) connections: usize,
    pub(crate) messages: usize,
    pub(crate) burst: usize,
}

fn payload(index: usize) -> Bytes {
    let mut p = vec![b'.'; SIZE];
    p[..8].copy_from_slice(&(index as u64).to_le_bytes());
    Bytes::from(p)
}

/// One run of `lib`.
pub(crate) fn run(lib: Lib, shape: Shape, listener: &TcpListener) -> FanoutRun {
    let (servers, clients): (Vec<TcpStream>, Vec<TcpStream>) = (0..shape.connections)
        .map(|_| upgraded_nonblocking(listener))
        .unzip();
    let (done_tx, done_rx) = std_mpsc::channel();
    let reader = thread::spawn(move || read_all(clients, shape.messages, done_tx));
    let server = thread::spawn(move || serve(lib, servers, shape, done_rx));
    let (start, server_cpu) = server.join().expect("server thread");
    let last = reader.join().expect("reader thread");
    FanoutRun {
        deliveries: (shape.connections * shape.messages) as u64,
        elapsed: last.duration_since(start),
        server_cpu,
    }
}

fn upgraded_nonblocking(listener: &TcpListener) -> (TcpStream, TcpStream) {
    let (server, client) = upgrade::upgraded_pair(listener);
    for s in [&server, &client] {
        s.set_nonblocking(true).expect("non-blocking");
    }
    (server, client)
}

/// The serving thread: wraps every connection, publishes, waits until the
/// reader saw everything. Returns when the publishing started and the
/// thread's CPU time from then.
fn serve(
    lib: Lib,
    servers: Vec<TcpStream>,
    shape: Shape,
    done: std_mpsc::Receiver<()>,
) -> (Instant, Duration) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let local = LocalSet::new();
    local.block_on(&rt, async move {
        let sockets: Vec<tokio::net::TcpStream> = servers
            .into_iter()
            .map(|s| tokio::net::TcpStream::from_std(s).expect("tokio socket"))
            .collect();
        let publish = match lib {
            Lib::TokioLockgate => hub_server(sockets, shape).await,
            Lib::TokioTungstenite => channel_server::<libs::TokioTungstenite>(sockets, shape).await,
            Lib::Fastwebsockets => channel_server::<libs::Fastwebsockets>(sockets, shape).await,
            Lib::TokioWebsockets => channel_server::<libs::TokioWebsockets>(sockets, shape).await,
            Lib::SockudoWs => channel_server::<libs::SockudoWs>(sockets, shape).await,
            Lib::Yawc => channel_server::<libs::Yawc>(sockets, shape).await,
            other => unreachable!("{other:?} has no fan-out server"),
        };
        let start = Instant::now();
        let cpu_start = crate::sys::thread_cpu();
        publish.await;
        // The connection tasks run on this thread until the reader is done.
        loop {
            match done.try_recv() {
                Ok(()) => break,
                Err(std_mpsc::TryRecvError::Empty) => {
                    tokio::time::sleep(Duration::from_millis(1)).await
                }
                Err(std_mpsc::TryRecvError::Disconnected) => {
                    crate::fail(lib.name(), "reader thread died")
                }
            }
        }
        (start, crate::sys::thread_cpu() - cpu_start)
    })
}

type Publish = std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>;

/// tokio-lockgate: the hub.
async fn hub_server(sockets: Vec<tokio::net::TcpStream>, shape: Shape) -> Publish {
    use tokio_lockgate::hub::{Hub, HubConfig, SlowConsumer};
    use tokio_lockgate::{
        Config, Message, PreparedMessage, Role, WebSocketContext, WebSocketStream,
    };
    let hub = Hub::new(
        HubConfig::default()
            .queue_capacity(QUEUE)
            .slow_consumer(SlowConsumer::Wait),
    );
    for socket in sockets {
        let mut ws = WebSocketStream::from_context(
            socket,
            WebSocketContext::new(Role::Server, Config::default()),
        );
        let mut subscriber = hub.subscriber();
        subscriber.subscribe("t");
        tokio::task::spawn_local(async move {
            if let Err(e) = subscriber.forward(&mut ws).await {
                crate::fail("tokio-lockgate", &format!("forward: {e}"));
            }
        });
    }
    Box::pin(async move {
        for i in 0..shape.messages {
            let msg = PreparedMessage::new(Message::Binary(payload(i)));
            hub.publish("t", &msg).await;
            if i % shape.burst == shape.burst - 1 {
                tokio::task::yield_now().await;
            }
        }
    })
}

/// A peer: a bounded channel and a task per connection.
async fn channel_server<L: AsyncLib + 'static>(
    sockets: Vec<tokio::net::TcpStream>,
    shape: Shape,
) -> Publish
where
    L::Msg: 'static,
{
    let mut senders = Vec::with_capacity(sockets.len());
    for socket in sockets {
        let mut ws = L::wrap(socket, true).await;
        let (tx, mut rx) = mpsc::channel::<L::Msg>(QUEUE);
        tokio::task::spawn_local(async move {
            while let Some(msg) = rx.recv().await {
                L::write(&mut ws, msg).await;
                while let Ok(msg) = rx.try_recv() {
                    L::write(&mut ws, msg).await;
                }
                L::flush(&mut ws).await;
            }
        });
        senders.push(tx);
    }
    Box::pin(async move {
        for i in 0..shape.messages {
            let p = payload(i);
            for tx in &senders {
                // `try_send` first: an awaited `send` spends tokio's
                // cooperative budget and would make the publisher yield
                // every 128 sends, waking each connection task for one
                // message (and one flush) at a time.
                match tx.try_send(L::binary(p.clone())) {
                    Ok(()) => {}
                    Err(mpsc::error::TrySendError::Full(msg)) => {
                        if tx.send(msg).await.is_err() {
                            crate::fail("peer", "a connection task ended");
                        }
                    }
                    Err(mpsc::error::TrySendError::Closed(_)) => {
                        crate::fail("peer", "a connection task ended")
                    }
                }
            }
            if i % shape.burst == shape.burst - 1 {
                tokio::task::yield_now().await;
            }
        }
    })
}

/// The reading thread: every client parses its frames and checks each
/// message's index; returns when the last one got the last message.
fn read_all(clients: Vec<TcpStream>, messages: usize, done: std_mpsc::Sender<()>) -> Instant {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let last = rt.block_on(async move {
        let mut tasks = tokio::task::JoinSet::new();
        for (conn, client) in clients.into_iter().enumerate() {
            let client = tokio::net::TcpStream::from_std(client).expect("tokio socket");
            tasks.spawn(read_one(conn, client, messages));
        }
        let mut last = Instant::now();
        while let Some(finished) = tasks.join_next().await {
            last = last.max(finished.expect("reader task"));
        }
        last
    });
    let _ = done.send(());
    last
}

async fn read_one(conn: usize, mut socket: tokio::net::TcpStream, messages: usize) -> Instant {
    let mut buf = Vec::with_capacity(64 * 1024);
    let mut next = 0usize;
    let mut chunk = vec![0u8; 64 * 1024];
    while next < messages {
        let n = socket.read(&mut chunk).await.expect("client read");
        if n == 0 {
            crate::fail(
                "fan-out",
                &format!("connection {conn} closed after {next} messages"),
            );
        }
        buf.extend_from_slice(&chunk[..n]);
        // Whole frames only: a 64-byte binary frame is 2 + 64 bytes.
        let whole = buf.len() / (2 + SIZE) * (2 + SIZE);
        let used = crate::frames::for_each_frame(&buf[..whole], |op, fin, masked, p| {
            if op != crate::frames::OP_BINARY || !fin || masked || p.len() != SIZE {
                return Err(format!("connection {conn}: unexpected frame"));
            }
            let index = crate::frames::prefix(p) as usize;
            if index != next {
                return Err(format!(
                    "connection {conn}: message {index}, expected {next}"
                ));
            }
            next += 1;
            Ok(())
        });
        if let Err(e) = used {
            crate::fail("fan-out", &e);
        }
        buf.drain(..whole);
    }
    Instant::now()
}
