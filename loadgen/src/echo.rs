//! Echo and one-way modes: each connection writes batches; the server
//! echoes every message (echo) or only reads and checks it (one-way).
//!
//! A connection uses two tasks, one per half of `split`, so reading never
//! waits behind a blocked write. In echo mode a connection keeps at most
//! [`WINDOW_BATCHES`] batches unanswered; every echo is checked (kind,
//! length, sequence number, filler) and timed. One-way rates are measured
//! at the receiver: the embedded server, or with `--url` the sender (until
//! its last flush returned).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio_lockgate::{
    CloseCode, CloseFrame, Error, Message, WebSocketReadHalf, WebSocketWriteHalf,
};

use crate::args::{Args, Budget, Mode};
use crate::dial::Dialer;
use crate::latency::Latency;
use crate::payload::Payload;
use crate::report::Report;
use crate::shared::{Counter, Shared};

/// Unanswered batches an echo connection may have in flight.
pub(crate) const WINDOW_BATCHES: usize = 4;
pub(crate) const CLOSE_REASON: &str = "loadgen done";

enum TaskOut {
    Sender {
        sent: u64,
        last_flush_ns: u64,
    },
    Receiver {
        received: u64,
        last_ns: u64,
        latency: Option<Latency>,
    },
}

/// Writes batches (N x `write`, one `flush`) until the budget is spent,
/// then closes. With `credits` (echo mode) a batch first takes one credit
/// per message; the receiver gives one back per echo.
#[allow(clippy::too_many_arguments, reason = "one task's whole setup")]
async fn sender<S: AsyncRead + AsyncWrite + Unpin>(
    conn: usize,
    mut ws: WebSocketWriteHalf<S>,
    shared: Arc<Shared>,
    payload: Arc<Payload>,
    until: Until,
    batch: usize,
    credits: Option<(Arc<Semaphore>, usize)>,
    progress: Option<Arc<Counter>>,
) -> Result<TaskOut, String> {
    let fail = |what: &str, err: Error| format!("connection {conn}: {what}: {err}");
    let mut seq = 0u64;
    let mut last_flush_ns = 0;
    loop {
        let n = until.next_batch(seq, batch, shared.now_ns());
        if n == 0 {
            break;
        }
        if let Some((credits, _)) = &credits {
            match credits.acquire_many(n as u32).await {
                Ok(permit) => permit.forget(),
                Err(_) => return Err(format!("connection {conn}: receiver stopped early")),
            }
        }
        // Timed from when it is encoded: the first message waits for the
        // rest of its batch before the flush, and that is part of its
        // latency.
        let mut messages = payload.batch(seq, n, shared.now_ns());
        for _ in 0..n {
            ws.write(payload.message(&mut messages))
                .await
                .map_err(|err| fail("write", err))?;
        }
        ws.flush().await.map_err(|err| fail("flush", err))?;
        seq += n as u64;
        last_flush_ns = shared.now_ns();
        if let Some(progress) = &progress {
            progress.set(seq);
        }
    }
    if let Some((credits, window)) = &credits {
        // Every credit back: every message has been echoed.
        if credits.acquire_many(*window as u32).await.is_err() {
            return Err(format!(
                "connection {conn}: receiver stopped before all echoes arrived"
            ));
        }
    }
    ws.close(Some(CloseFrame::new(CloseCode::Normal, CLOSE_REASON)))
        .await
        .map_err(|err| fail("close", err))?;
    Ok(TaskOut::Sender {
        sent: seq,
        last_flush_ns,
    })
}

/// When a sender stops, in messages or in epoch nanoseconds.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Until {
    Messages(u64),
    Nanos(u64),
}

impl Until {
    pub(crate) fn new(budget: Budget, start_ns: u64) -> Self {
        match budget {
            Budget::Messages(n) => Until::Messages(n),
            Budget::For(d) => Until::Nanos(start_ns + d.as_nanos() as u64),
        }
    }

    /// How many messages the next batch has (0: done).
    pub(crate) fn next_batch(self, sent: u64, batch: usize, now_ns: u64) -> usize {
        match self {
            Until::Messages(total) => (total - sent).min(batch as u64) as usize,
            Until::Nanos(deadline) if now_ns < deadline => batch,
            Until::Nanos(_) => 0,
        }
    }
}

/// Echo mode: reads the echoes, checks and times each, gives its credit
/// back. Ends with the closing handshake.
async fn echo_receiver<S: AsyncRead + AsyncWrite + Unpin>(
    conn: usize,
    mut ws: WebSocketReadHalf<S>,
    shared: Arc<Shared>,
    payload: Arc<Payload>,
    credits: Arc<Semaphore>,
    progress: Arc<Counter>,
) -> Result<TaskOut, String> {
    let mut latency = Latency::default();
    let mut received = 0u64;
    let mut last_ns = 0;
    let result = loop {
        match ws.read().await {
            Ok(msg) if msg.is_data() => {
                let now = shared.now_ns();
                match payload.check(&msg, received) {
                    Ok(sent_ns) => latency.record(now.saturating_sub(sent_ns.unwrap_or(now))),
                    Err(err) => break Err(format!("connection {conn}: {err}")),
                }
                received += 1;
                last_ns = now;
                progress.set(received);
                credits.add_permits(1);
            }
            // Pings are answered by the library; the server's close reply
            // is followed by ConnectionClosed.
            Ok(_) => {}
            Err(Error::ConnectionClosed) => break Ok(()),
            Err(err) => break Err(format!("connection {conn}: read: {err}")),
        }
    };
    // Wakes a sender waiting for credits that will never come.
    credits.close();
    result.map(|()| TaskOut::Receiver {
        received,
        last_ns,
        latency: Some(latency),
    })
}

/// One-way mode, client side: reads until the closing handshake is done.
/// Whatever a `--url` server sends back is counted and dropped, so it can
/// never fill the socket and block the sender.
async fn drain_receiver<S: AsyncRead + AsyncWrite + Unpin>(
    conn: usize,
    mut ws: WebSocketReadHalf<S>,
) -> Result<TaskOut, String> {
    let mut received = 0;
    loop {
        match ws.read().await {
            Ok(msg) if msg.is_data() => received += 1,
            Ok(_) => {}
            Err(Error::ConnectionClosed) => {
                return Ok(TaskOut::Receiver {
                    received,
                    last_ns: 0,
                    latency: None,
                });
            }
            Err(err) => return Err(format!("connection {conn}: read: {err}")),
        }
    }
}

/// What the embedded server saw on one connection.
pub(crate) struct ServerOut {
    /// Messages echoed (echo) or received (oneway).
    messages: u64,
    /// When the client's close frame arrived, in epoch nanoseconds: the
    /// sender closes right after its last flush.
    close_ns: u64,
}

pub(crate) type ServerResults = mpsc::UnboundedReceiver<Result<ServerOut, String>>;

/// Starts the embedded echo/one-way server on 127.0.0.1; its URL and the
/// per-connection results.
pub(crate) async fn start_server(
    mode: Mode,
    shared: Arc<Shared>,
    payload: Arc<Payload>,
) -> std::io::Result<(String, ServerResults)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("ws://{}", listener.local_addr()?);
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let (stream, peer) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(err) => {
                    eprintln!("loadgen: embedded server: accept failed: {err}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let (shared, payload, results) =
                (Arc::clone(&shared), Arc::clone(&payload), tx.clone());
            tokio::spawn(async move {
                let result = server_connection(stream, mode, &shared, &payload)
                    .await
                    .map_err(|err| format!("embedded server, connection from {peer}: {err}"));
                let _ = results.send(result);
            });
        }
    });
    Ok((url, rx))
}

async fn server_connection(
    stream: TcpStream,
    mode: Mode,
    shared: &Shared,
    payload: &Payload,
) -> Result<ServerOut, String> {
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let mut ws = tokio_lockgate::accept_async(stream)
        .await
        .map_err(|err| format!("handshake: {err}"))?;
    let progress = (mode == Mode::Oneway).then(|| shared.counter());
    let mut messages = 0u64;
    let mut close_ns = None;
    loop {
        match ws.read().await {
            Ok(msg) if msg.is_data() => {
                if mode == Mode::Echo {
                    // Queued; flushed below once the received input is used up.
                    ws.write(msg).await.map_err(|err| format!("write: {err}"))?;
                } else {
                    payload.check(&msg, messages)?;
                }
                messages += 1;
                if let Some(progress) = &progress {
                    progress.set(messages);
                }
            }
            Ok(Message::Close(_)) => close_ns = Some(shared.now_ns()),
            Ok(_) => {}
            Err(Error::ConnectionClosed) => {
                return Ok(ServerOut {
                    messages,
                    close_ns: close_ns.unwrap_or_else(|| shared.now_ns()),
                });
            }
            Err(err) => return Err(format!("read: {err}")),
        }
        // One flush answers every message that arrived in the same reads.
        if mode == Mode::Echo && ws.buffered_input() == 0 {
            ws.flush().await.map_err(|err| format!("flush: {err}"))?;
        }
    }
}

/// Connects, runs every connection to its end, checks the counts.
pub(crate) async fn run(
    args: &Args,
    dialer: &Dialer,
    url: &str,
    shared: Arc<Shared>,
    payload: Arc<Payload>,
    mut server: Option<ServerResults>,
) -> Result<Report, String> {
    let connections = args.connections as usize;
    let batch = args.batch as usize;
    // Open every connection first, so the measured phase is traffic only.
    let mut sockets = Vec::with_capacity(connections);
    for conn in 0..connections {
        let ws = dialer
            .connect(url)
            .await
            .map_err(|err| format!("connection {conn}: connect to {url}: {err}"))?;
        sockets.push(ws);
        shared.connected.fetch_add(1, Ordering::Relaxed);
    }

    let start_ns = shared.start();
    let until = Until::new(args.budget(), start_ns);
    let window = WINDOW_BATCHES * batch;
    // With --url the sender is the only place one-way traffic is seen.
    let count_at_sender = args.mode == Mode::Oneway && server.is_none();

    let mut tasks = JoinSet::new();
    for (conn, ws) in sockets.into_iter().enumerate() {
        let (write_half, read_half) = ws.into_split();
        let credits = (args.mode == Mode::Echo).then(|| Arc::new(Semaphore::new(window)));
        tasks.spawn(sender(
            conn,
            write_half,
            Arc::clone(&shared),
            Arc::clone(&payload),
            until,
            batch,
            credits.clone().map(|c| (c, window)),
            count_at_sender.then(|| shared.counter()),
        ));
        match credits {
            Some(credits) => tasks.spawn(echo_receiver(
                conn,
                read_half,
                Arc::clone(&shared),
                Arc::clone(&payload),
                credits,
                shared.counter(),
            )),
            None => tasks.spawn(drain_receiver(conn, read_half)),
        };
    }

    // Sent and received per side, until every task and every embedded
    // server connection is done; the first error ends the run.
    let mut sent = 0u64;
    let mut last_flush_ns = 0;
    let mut received = 0u64;
    let mut unexpected = 0u64;
    let mut last_rx_ns = 0;
    let mut latency = Latency::default();
    let mut server_pending = if server.is_some() { connections } else { 0 };
    let mut server_messages = 0u64;
    let mut server_close_ns = 0;
    loop {
        tokio::select! {
            joined = tasks.join_next(), if !tasks.is_empty() => {
                let out = match joined {
                    Some(Ok(Ok(out))) => out,
                    Some(Ok(Err(err))) => return Err(err),
                    Some(Err(err)) => return Err(format!("task failed: {err}")),
                    None => continue,
                };
                match out {
                    TaskOut::Sender { sent: n, last_flush_ns: t } => {
                        sent += n;
                        last_flush_ns = last_flush_ns.max(t);
                    }
                    TaskOut::Receiver { received: n, last_ns, latency: l } => {
                        match l {
                            Some(l) => {
                                received += n;
                                latency.merge(&l);
                            }
                            None => unexpected += n,
                        }
                        last_rx_ns = last_rx_ns.max(last_ns);
                    }
                }
            }
            result = recv_server(&mut server), if server_pending > 0 => {
                let out = result?;
                server_pending -= 1;
                server_messages += out.messages;
                server_close_ns = server_close_ns.max(out.close_ns);
            }
            else => break,
        }
    }

    let since_start = |ns: u64| Duration::from_nanos(ns.saturating_sub(start_ns));
    match args.mode {
        Mode::Echo => {
            if received != sent {
                return Err(format!("sent {sent} messages, {received} echoed back"));
            }
            if server.is_some() && server_messages != sent {
                return Err(format!(
                    "sent {sent} messages, the embedded server echoed {server_messages}"
                ));
            }
            Ok(Report::new(
                received,
                since_start(last_rx_ns),
                "all echoed intact and in order; every round trip timed".into(),
            )
            .with_latency(latency.percentiles()))
        }
        Mode::Oneway if server.is_some() => {
            if server_messages != sent {
                return Err(format!(
                    "sent {sent} messages, the embedded server received {server_messages}"
                ));
            }
            let note = if payload.has_header() {
                "all received intact and in order; rate measured at the receiver"
            } else {
                "all received intact; too small for sequence numbers; rate measured at the receiver"
            };
            Ok(Report::new(
                server_messages,
                since_start(server_close_ns),
                note.into(),
            ))
        }
        _ => {
            let mut note = "rate measured at the sender (until the last flush)".to_owned();
            if unexpected > 0 {
                note += &format!("; the server sent {unexpected} messages back (ignored)");
            }
            Ok(Report::new(sent, since_start(last_flush_ns), note))
        }
    }
}

async fn recv_server(server: &mut Option<ServerResults>) -> Result<ServerOut, String> {
    match server {
        Some(rx) => rx
            .recv()
            .await
            .unwrap_or_else(|| Err("embedded server stopped".into())),
        None => std::future::pending().await,
    }
}
