//! The server child: each library's echo server, the way its users write
//! one.
//!
//! `__scale_server echo LIB FORM` binds 127.0.0.1:0, prints its port, and
//! serves on a tokio multi-thread runtime with [`WORKERS`] worker threads:
//! one task per connection, which does the server half of the harness's
//! neutral handshake, wraps the socket in the library (default
//! configuration) and echoes every data message until the connection ends.
//! `__scale_server fanout …` is the fan-out server ([`super::fanout`]). The
//! child answers the load process's commands ([`super::control`]) and
//! exits when its stdin closes.
//!
//! The two forms of each echo loop ([`Form`]):
//! - natural: the library's one-call send per message (`SinkExt::send`,
//!   tokio-lockgate's `send`, fastwebsockets' `write_frame` on the bare
//!   socket as in its `echo_server` example), so a flush per message; except
//!   tokio-lockgate, whose natural loop (its `tokio-echo-server` example)
//!   is `read`, `write`, and `flush` once `buffered_input()` is 0, i.e. once
//!   per batch of input already received;
//! - batching: after each message, the messages that are ready at once are
//!   read too (the read future polled once, `now_or_never`, and dropped if
//!   it would wait: every read used here is cancel-safe), each queued with
//!   the library's queue-only call (`SinkExt::feed`, `write`), then one
//!   flush: what `StreamExt::forward` does, without `split`'s lock.
//!   fastwebsockets' `read_frame` is not cancel-safe (a frame header read
//!   before a wait is lost when the future is dropped) and it cannot say
//!   whether input is buffered, so its batching form is its split API
//!   (feature `unstable-split`): the read half sends each frame through a
//!   channel to a writer task over a tokio `BufWriter` (8 KiB), which
//!   writes everything waiting in the channel, then flushes.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use futures_util::{FutureExt, Sink, SinkExt, Stream, StreamExt};
use tokio::io::BufWriter;
use tokio::net::{TcpListener, TcpStream};

use super::{Form, control, fanout};
use crate::report::Lib;
use crate::{sys, upgrade};

/// Worker threads of the server's runtime.
pub(super) const WORKERS: usize = 2;
/// The most messages one batch takes before it flushes.
const MAX_BATCH: usize = 1024;

/// Counts a connection as live (wrapped and serving) while it exists.
pub(super) struct Live(Arc<AtomicUsize>);

/// The upgrade response every server sends.
pub(super) fn upgrade_response() -> Arc<str> {
    upgrade::response().into()
}

impl Live {
    /// Counts one more live connection.
    pub(super) fn new(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Self(Arc::clone(count))
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The server child's entry point: `[echo|fanout] LIB FORM [MESSAGES BURST]`.
pub(super) fn main(args: &[String]) {
    let bad = || -> ! { crate::fail("scale server", &format!("bad arguments {args:?}")) };
    if let [mode, lib, ..] = args
        && let Some(floor) = super::floor::Floor::named(lib)
        && mode == "echo"
    {
        sys::raise_nofile();
        super::floor::serve_echo(floor);
    }
    let (mode, lib, form) = match args {
        [mode, lib, form, ..] => (
            mode.as_str(),
            super::lib_named(lib).unwrap_or_else(|| bad()),
            Form::named(form).unwrap_or_else(|| bad()),
        ),
        _ => bad(),
    };
    sys::raise_nofile();
    if (mode, lib) == ("echo", Lib::UringLockgate) {
        super::uring::serve_echo(form);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .enable_all()
        .build()
        .expect("tokio runtime");
    rt.block_on(async move {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("listener address").port();
        println!("PORT {port}");
        let live = Arc::new(AtomicUsize::new(0));
        match mode {
            "echo" => {
                let count = Arc::clone(&live);
                std::thread::spawn(move || control::answer(count, None));
                accept_echo(listener, lib, form, live).await;
            }
            "fanout" => {
                let (messages, burst) = match (args.get(3), args.get(4)) {
                    (Some(m), Some(b)) => (
                        m.parse().unwrap_or_else(|_| bad()),
                        b.parse().unwrap_or_else(|_| bad()),
                    ),
                    _ => bad(),
                };
                let (go_tx, go_rx) = tokio::sync::oneshot::channel();
                let count = Arc::clone(&live);
                std::thread::spawn(move || control::answer(count, Some(go_tx)));
                let shape = fanout::Publish { messages, burst };
                fanout::serve(listener, lib, form, shape, live, go_rx).await;
            }
            _ => bad(),
        }
    });
}

/// Accepts connections for ever (the process ends when its stdin closes).
async fn accept_echo(listener: TcpListener, lib: Lib, form: Form, live: Arc<AtomicUsize>) {
    let resp: Arc<str> = upgrade::response().into();
    loop {
        let (mut s, _) = listener
            .accept()
            .await
            .unwrap_or_else(|e| crate::fail(lib.name(), &format!("accept: {e}")));
        let (resp, live) = (Arc::clone(&resp), Arc::clone(&live));
        tokio::spawn(async move {
            s.set_nodelay(true).expect("TCP_NODELAY");
            upgrade::server_async(&mut s, &resp).await;
            echo(lib, form, s, &live).await;
        });
    }
}

/// Serves one upgraded connection until it ends.
async fn echo(lib: Lib, form: Form, s: TcpStream, live: &Arc<AtomicUsize>) {
    match (lib, form) {
        (Lib::TokioLockgate, Form::Natural) => lockgate_natural(s, live).await,
        (Lib::Fastwebsockets, Form::Batching) => fastwebsockets_batching(s, live).await,
        (Lib::TokioLockgate, _) => run::<TokioLockgate>(s, form, live).await,
        (Lib::TokioTungstenite, _) => run::<TokioTungstenite>(s, form, live).await,
        (Lib::Fastwebsockets, _) => run::<Fastwebsockets>(s, form, live).await,
        (Lib::TokioWebsockets, _) => run::<TokioWebsockets>(s, form, live).await,
        (Lib::SockudoWs, _) => run::<SockudoWs>(s, form, live).await,
        (Lib::Yawc, _) => run::<Yawc>(s, form, live).await,
        (other, _) => crate::fail(other.name(), "no scale server"),
    }
}

/// A server's view of a library (the echo servers here, the fan-out
/// servers in [`super::fanout`]). Every call reports the end of the
/// connection (a close, the peer gone, an error) as `None` / `false`: the
/// load process ends runs by dropping its sockets.
pub(super) trait Echo {
    /// The library's server connection.
    type Ws: Send + 'static;
    /// A data message.
    type Msg: Send + 'static;
    /// Wraps an upgraded socket, default configuration.
    fn wrap(s: TcpStream) -> Self::Ws;
    /// A binary message.
    fn binary(b: Bytes) -> Self::Msg;
    /// The next data message (control frames are the library's business).
    /// Cancel-safe.
    fn next(ws: &mut Self::Ws) -> impl Future<Output = Option<Self::Msg>> + Send;
    /// The library's one-call send: queue and flush.
    fn send(ws: &mut Self::Ws, m: Self::Msg) -> impl Future<Output = bool> + Send;
    /// Queues without flushing.
    fn feed(ws: &mut Self::Ws, m: Self::Msg) -> impl Future<Output = bool> + Send;
    /// Writes what is queued and flushes.
    fn flush(ws: &mut Self::Ws) -> impl Future<Output = bool> + Send;
}

/// The echo loop of `form` for a library behind [`Echo`].
async fn run<L: Echo>(s: TcpStream, form: Form, live: &Arc<AtomicUsize>) {
    let mut ws = L::wrap(s);
    let _live = Live::new(live);
    match form {
        Form::Natural => {
            while let Some(m) = L::next(&mut ws).await {
                if !L::send(&mut ws, m).await {
                    return;
                }
            }
        }
        Form::Batching => {
            while let Some(m) = L::next(&mut ws).await {
                if !L::feed(&mut ws, m).await {
                    return;
                }
                for _ in 1..MAX_BATCH {
                    match L::next(&mut ws).now_or_never() {
                        Some(Some(m)) => {
                            if !L::feed(&mut ws, m).await {
                                return;
                            }
                        }
                        Some(None) => return,
                        None => break,
                    }
                }
                if !L::flush(&mut ws).await {
                    return;
                }
            }
        }
    }
}

/// tokio-lockgate's natural loop, as in its `tokio-echo-server` example:
/// `read`, `write`, and `flush` once the input received so far is used up.
async fn lockgate_natural(s: TcpStream, live: &Arc<AtomicUsize>) {
    let mut ws = TokioLockgate::wrap(s);
    let _live = Live::new(live);
    loop {
        match ws.read().await {
            Ok(m) if m.is_data() => {
                if ws.write(m).await.is_err() {
                    return;
                }
            }
            Ok(_) => {}
            Err(_) => return,
        }
        if ws.buffered_input() == 0 && ws.flush().await.is_err() {
            return;
        }
    }
}

/// fastwebsockets' batching form: its split API, a channel, and a writer
/// task over a `BufWriter` that flushes once the channel is empty.
async fn fastwebsockets_batching(s: TcpStream, live: &Arc<AtomicUsize>) {
    use fastwebsockets::{Frame, OpCode, Payload, Role, WebSocket, WebSocketError};
    type Out = Frame<'static>;
    let (mut rx, mut wx) = WebSocket::after_handshake(s, Role::Server).split(|s| {
        let (r, w) = s.into_split();
        (r, BufWriter::new(w))
    });
    let _live = Live::new(live);
    let (tx, mut queue) = tokio::sync::mpsc::channel::<Out>(MAX_BATCH);
    let writer = tokio::spawn(async move {
        while let Some(f) = queue.recv().await {
            if wx.write_frame(f).await.is_err() {
                return;
            }
            for _ in 1..MAX_BATCH {
                let Ok(f) = queue.try_recv() else { break };
                if wx.write_frame(f).await.is_err() {
                    return;
                }
            }
            if wx.flush().await.is_err() {
                return;
            }
        }
    });
    let obliged = tx.clone();
    // A pong or close reply the read half owes goes out through the writer.
    let mut send_fn = move |f: Out| {
        let obliged = obliged.clone();
        async move {
            obliged
                .send(f)
                .await
                .map_err(|_| WebSocketError::ConnectionClosed)
        }
    };
    loop {
        match rx.read_frame(&mut send_fn).await {
            Ok(f) if matches!(f.opcode, OpCode::Text | OpCode::Binary) => {
                // A fresh, unmasked frame: the received one still carries
                // the client's masking key, which `write_frame` would
                // send back in the header. Its payload is owned (`Bytes`),
                // but the frame's type borrows the read half.
                let payload = match f.payload {
                    Payload::Bytes(b) => Payload::Bytes(b),
                    other => Payload::Owned(other.to_vec()),
                };
                if tx
                    .send(Frame::new(true, f.opcode, None, payload))
                    .await
                    .is_err()
                {
                    break;
                }
            }
            Ok(f) if f.opcode == OpCode::Close => break,
            Ok(_) => {}
            Err(_) => break,
        }
    }
    // The writer ends once every sender is gone.
    drop((tx, send_fn));
    let _ = writer.await;
}

/// TokioLockgate, for [`Echo`].
pub(super) struct TokioLockgate;

impl Echo for TokioLockgate {
    type Ws = tokio_lockgate::WebSocketStream<TcpStream>;
    type Msg = lockgate::Message;
    fn wrap(s: TcpStream) -> Self::Ws {
        tokio_lockgate::WebSocketStream::from_context(
            s,
            tokio_lockgate::WebSocketContext::new(
                lockgate::Role::Server,
                lockgate::Config::default(),
            ),
        )
    }
    fn binary(b: Bytes) -> Self::Msg {
        lockgate::Message::binary(b)
    }
    async fn next(ws: &mut Self::Ws) -> Option<Self::Msg> {
        loop {
            match ws.read().await {
                Ok(m) if m.is_data() => return Some(m),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }
    async fn send(ws: &mut Self::Ws, m: Self::Msg) -> bool {
        ws.send(m).await.is_ok()
    }
    async fn feed(ws: &mut Self::Ws, m: Self::Msg) -> bool {
        ws.write(m).await.is_ok()
    }
    async fn flush(ws: &mut Self::Ws) -> bool {
        ws.flush().await.is_ok()
    }
}

/// fastwebsockets' natural form: `FragmentCollector` over the bare socket,
/// `write_frame` (one `write_all` per frame) for each echo.
pub(super) struct Fastwebsockets;

impl Echo for Fastwebsockets {
    type Ws = fastwebsockets::FragmentCollector<TcpStream>;
    type Msg = fastwebsockets::Frame<'static>;
    fn wrap(s: TcpStream) -> Self::Ws {
        fastwebsockets::FragmentCollector::new(fastwebsockets::WebSocket::after_handshake(
            s,
            fastwebsockets::Role::Server,
        ))
    }
    fn binary(b: Bytes) -> Self::Msg {
        fastwebsockets::Frame::binary(fastwebsockets::Payload::Owned(b.to_vec()))
    }
    async fn next(ws: &mut Self::Ws) -> Option<Self::Msg> {
        use fastwebsockets::OpCode;
        loop {
            match ws.read_frame().await {
                Ok(f) if matches!(f.opcode, OpCode::Text | OpCode::Binary) => {
                    // Unmasked: see `fastwebsockets_batching`.
                    return Some(fastwebsockets::Frame::new(true, f.opcode, None, f.payload));
                }
                Ok(f) if f.opcode == OpCode::Close => return None,
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }
    async fn send(ws: &mut Self::Ws, m: Self::Msg) -> bool {
        ws.write_frame(m).await.is_ok()
    }
    async fn feed(ws: &mut Self::Ws, m: Self::Msg) -> bool {
        // Never called: its batching form is `fastwebsockets_batching`.
        Self::send(ws, m).await
    }
    async fn flush(_ws: &mut Self::Ws) -> bool {
        true
    }
}

/// fastwebsockets over a tokio `BufWriter` (8 KiB), the usual way to let it
/// batch: `write_frame` queues, `flush` writes. Write-only (the fan-out
/// servers' batching form): its `read_frame` is not cancel-safe, so it has
/// no [`Echo::next`].
pub(super) struct FastwebsocketsBuffered;

impl Echo for FastwebsocketsBuffered {
    type Ws = fastwebsockets::WebSocket<BufWriter<TcpStream>>;
    type Msg = fastwebsockets::Frame<'static>;
    fn wrap(s: TcpStream) -> Self::Ws {
        fastwebsockets::WebSocket::after_handshake(BufWriter::new(s), fastwebsockets::Role::Server)
    }
    fn binary(b: Bytes) -> Self::Msg {
        Fastwebsockets::binary(b)
    }
    async fn next(_ws: &mut Self::Ws) -> Option<Self::Msg> {
        crate::fail("fastwebsockets", "no cancel-safe read")
    }
    async fn send(ws: &mut Self::Ws, m: Self::Msg) -> bool {
        ws.write_frame(m).await.is_ok() && ws.flush().await.is_ok()
    }
    async fn feed(ws: &mut Self::Ws, m: Self::Msg) -> bool {
        ws.write_frame(m).await.is_ok()
    }
    async fn flush(ws: &mut Self::Ws) -> bool {
        ws.flush().await.is_ok()
    }
}

/// What a library's `Stream` gave: a data message to echo, something to
/// pass over (a control frame, which the library answers itself), or the
/// end of the connection.
pub(super) enum Read<M> {
    Data(M),
    Skip,
    End,
}

/// A library whose connection is a `Sink` of its messages and a `Stream` of
/// what it reads: `SinkExt::send`, `feed` and `flush`, `StreamExt::next`.
pub(super) trait SinkStream {
    /// The library's server connection.
    type Ws: Sink<Self::Msg> + Stream<Item = Self::Item> + Unpin + Send + 'static;
    /// A data message.
    type Msg: Send + 'static;
    /// What its `Stream` yields.
    type Item;
    /// Wraps an upgraded socket, default configuration.
    fn wrap(s: TcpStream) -> Self::Ws;
    /// A binary message.
    fn binary(b: Bytes) -> Self::Msg;
    /// What `item` is.
    fn read(item: Self::Item) -> Read<Self::Msg>;
}

impl<L: SinkStream> Echo for L {
    type Ws = L::Ws;
    type Msg = L::Msg;
    fn wrap(s: TcpStream) -> Self::Ws {
        <L as SinkStream>::wrap(s)
    }
    fn binary(b: Bytes) -> Self::Msg {
        <L as SinkStream>::binary(b)
    }
    async fn next(ws: &mut Self::Ws) -> Option<Self::Msg> {
        loop {
            match L::read(ws.next().await?) {
                Read::Data(m) => return Some(m),
                Read::Skip => {}
                Read::End => return None,
            }
        }
    }
    async fn send(ws: &mut Self::Ws, m: Self::Msg) -> bool {
        ws.send(m).await.is_ok()
    }
    async fn feed(ws: &mut Self::Ws, m: Self::Msg) -> bool {
        ws.feed(m).await.is_ok()
    }
    async fn flush(ws: &mut Self::Ws) -> bool {
        SinkExt::flush(ws).await.is_ok()
    }
}

/// tokio-tungstenite.
pub(super) struct TokioTungstenite;

impl SinkStream for TokioTungstenite {
    type Ws = tokio_tungstenite::WebSocketStream<TcpStream>;
    type Msg = tungstenite::Message;
    type Item = Result<tungstenite::Message, tungstenite::Error>;
    fn wrap(s: TcpStream) -> Self::Ws {
        // `from_raw_socket` is async but ready at once.
        tokio_tungstenite::WebSocketStream::from_raw_socket(
            s,
            tungstenite::protocol::Role::Server,
            None,
        )
        .now_or_never()
        .expect("from_raw_socket is ready at once")
    }
    fn binary(b: Bytes) -> Self::Msg {
        tungstenite::Message::binary(b)
    }
    fn read(item: Self::Item) -> Read<Self::Msg> {
        match item {
            Ok(m) if m.is_text() || m.is_binary() => Read::Data(m),
            Ok(_) => Read::Skip,
            Err(_) => Read::End,
        }
    }
}

/// tokio-websockets.
pub(super) struct TokioWebsockets;

impl SinkStream for TokioWebsockets {
    type Ws = tokio_websockets::WebSocketStream<TcpStream>;
    type Msg = tokio_websockets::Message;
    type Item = Result<tokio_websockets::Message, tokio_websockets::Error>;
    fn wrap(s: TcpStream) -> Self::Ws {
        tokio_websockets::ServerBuilder::new().serve(s)
    }
    fn binary(b: Bytes) -> Self::Msg {
        tokio_websockets::Message::binary(b)
    }
    fn read(item: Self::Item) -> Read<Self::Msg> {
        match item {
            Ok(m) if m.is_text() || m.is_binary() => Read::Data(m),
            Ok(_) => Read::Skip,
            Err(_) => Read::End,
        }
    }
}

/// sockudo-ws.
pub(super) struct SockudoWs;

impl SinkStream for SockudoWs {
    type Ws = sockudo_ws::WebSocketStream<TcpStream>;
    type Msg = sockudo_ws::Message;
    type Item = Result<sockudo_ws::Message, sockudo_ws::Error>;
    fn wrap(s: TcpStream) -> Self::Ws {
        sockudo_ws::WebSocketStream::from_raw(
            s,
            sockudo_ws::Role::Server,
            sockudo_ws::Config::default(),
        )
    }
    fn binary(b: Bytes) -> Self::Msg {
        sockudo_ws::Message::binary(b)
    }
    fn read(item: Self::Item) -> Read<Self::Msg> {
        match item {
            Ok(m) if m.is_text() || m.is_binary() => Read::Data(m),
            Ok(sockudo_ws::Message::Close(_)) | Err(_) => Read::End,
            Ok(_) => Read::Skip,
        }
    }
}

/// yawc (its `Stream` ends on an error rather than yielding it).
pub(super) struct Yawc;

impl SinkStream for Yawc {
    type Ws = yawc::WebSocket<TcpStream>;
    type Msg = yawc::Frame;
    type Item = yawc::Frame;
    fn wrap(s: TcpStream) -> Self::Ws {
        yawc::WebSocket::from_stream(s, yawc::Role::Server, crate::libs::yawc_plain_options())
            .expect("yawc from_stream")
    }
    fn binary(b: Bytes) -> Self::Msg {
        yawc::Frame::binary(b)
    }
    fn read(f: Self::Item) -> Read<Self::Msg> {
        match f.opcode() {
            yawc::OpCode::Text | yawc::OpCode::Binary => Read::Data(f),
            yawc::OpCode::Close => Read::End,
            _ => Read::Skip,
        }
    }
}
