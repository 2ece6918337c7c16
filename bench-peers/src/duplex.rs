//! Scenario 7: full duplex over one connection through each library's split
//! API.
//!
//! Each run opens a fresh 127.0.0.1 connection, upgraded by the harness's
//! neutral handshake (TCP_NODELAY on both ends), wraps both ends the way
//! [`crate::libs`] does and splits each with the library's own split API.
//! A multi-thread tokio runtime with 2 worker threads (a fresh one per run)
//! then runs, on each end, a writer task and a reader task, so a reader and
//! the writer of the same end can sit on different workers. Each direction
//! carries `n` binary messages of 64 bytes, built before the clock starts;
//! writers queue each message and flush after every 64th. The clock starts
//! once both ends are connected and split, just before the tasks are
//! spawned; a direction's time ends when its reader has received its last
//! message. Readers check every message: length, sequence number (the first
//! 8 bytes, little-endian), and the direction's fill byte in the other 56.
//!
//! The one-way baseline is the same set-up with only the client → server
//! writer and the server's reader running (the other two halves stay alive,
//! idle), so duplex ÷ one-way compares like with like.
//!
//! Split APIs:
//! - tokio-lockgate: `WebSocketStream::into_split`, `write` / `flush` /
//!   `read` on the halves.
//! - tokio-tungstenite, tokio-websockets, yawc: `futures_util::StreamExt::split`
//!   (`SplitSink` / `SplitStream`, a `BiLock` around the whole stream);
//!   `SinkExt::feed` / `SinkExt::flush`, `StreamExt::next`.
//! - fastwebsockets (feature `unstable-split`): `WebSocket::split` with
//!   `tokio::io::split` over the harness's usual `BufWriter` (8 KiB), so
//!   `write_frame` batches and `flush` writes; the read half's `read_frame`
//!   gets a send function that fails the run, since no control frame (whose
//!   answer it would have to send) is expected.
//! - sockudo-ws: `WebSocketStream::split` (`SplitReader` / `SplitWriter`, plus
//!   a control-driver task it spawns). `SplitWriter` has no queue-only call:
//!   `send` writes each frame to the transport, and `flush` flushes it.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{Sink, SinkExt, Stream, StreamExt};
use tokio::io::BufWriter;
use tokio::net::TcpStream;

use crate::fail;
use crate::libs::{self, AsyncLib};
use crate::report::Lib;
use crate::upgrade;

/// Payload bytes per message; the first 8 are its sequence number.
pub(crate) const SIZE: usize = 64;
/// Messages queued between flushes.
pub(crate) const BATCH: usize = 64;
/// Worker threads of each run's runtime.
pub(crate) const WORKERS: usize = 2;
/// The longest a run may take before it fails.
const TIMEOUT: Duration = Duration::from_secs(60);

/// The libraries compared (async only: the split halves are tokio tasks).
pub(crate) const LIBS: [Lib; 6] = [
    Lib::TokioLockgate,
    Lib::TokioTungstenite,
    Lib::Fastwebsockets,
    Lib::TokioWebsockets,
    Lib::SockudoWs,
    Lib::Yawc,
];

/// Which directions carry traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Both directions at once.
    Duplex,
    /// Client → server only (the baseline).
    OneWay,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Duplex => "duplex",
            Mode::OneWay => "one-way",
        })
    }
}

/// A direction of traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    ClientToServer,
    ServerToClient,
}

impl Dir {
    /// The fill byte of this direction's payloads (after the sequence number).
    fn fill(self) -> u8 {
        match self {
            Dir::ClientToServer => b'c',
            Dir::ServerToClient => b's',
        }
    }

    fn label(self) -> &'static str {
        match self {
            Dir::ClientToServer => "client → server",
            Dir::ServerToClient => "server → client",
        }
    }
}

/// What one run measured.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DuplexRun {
    /// From the start until the server's reader had every message.
    pub(crate) client_to_server: Duration,
    /// From the start until the client's reader had every message
    /// (`None` in the one-way baseline).
    pub(crate) server_to_client: Option<Duration>,
}

/// What a reader saw in one message, checked against what it expects.
#[derive(Debug, Clone, Copy)]
struct Seen {
    len: usize,
    seq: u64,
    /// The fill byte, if bytes 8.. are all the same.
    fill: Option<u8>,
}

fn seen(p: &[u8]) -> Seen {
    let seq = p.get(..8).map_or(u64::MAX, crate::frames::prefix);
    let fill = p
        .get(8..)
        .and_then(|rest| rest.first().filter(|&&b| rest.iter().all(|&x| x == b)))
        .copied();
    Seen {
        len: p.len(),
        seq,
        fill,
    }
}

fn payload(seq: usize, dir: Dir) -> Bytes {
    let mut p = vec![dir.fill(); SIZE];
    p[..8].copy_from_slice(&(seq as u64).to_le_bytes());
    Bytes::from(p)
}

/// A library's split halves over a tokio `TcpStream`.
trait Split: 'static {
    /// The writing half.
    type W: Send + 'static;
    /// The reading half.
    type R: Send + 'static;
    /// The library's message type.
    type Msg: Send + 'static;
    /// The library's name, for failures.
    const NAME: &'static str;
    /// A binary message.
    fn binary(b: Bytes) -> Self::Msg;
    /// Wraps an upgraded stream as [`crate::libs`] does and splits it.
    fn split(tcp: TcpStream, server: bool) -> impl Future<Output = (Self::W, Self::R)>;
    /// Queues a message (the library may write when its buffer is full).
    fn write(w: &mut Self::W, m: Self::Msg) -> impl Future<Output = ()> + Send;
    /// Writes everything queued and flushes the stream.
    fn flush(w: &mut Self::W) -> impl Future<Output = ()> + Send;
    /// Reads the next message and reports what it held; fails the run on an
    /// error, the end of the stream, or anything but a final binary message.
    fn read(r: &mut Self::R) -> impl Future<Output = Seen> + Send;
}

fn failed(lib: &str, what: &str, e: impl fmt::Display) -> ! {
    fail(lib, &format!("duplex {what}: {e}"))
}

/// tokio-lockgate: `into_split`.
struct TokioLockgate;

impl Split for TokioLockgate {
    type W = tokio_lockgate::WebSocketWriteHalf<TcpStream>;
    type R = tokio_lockgate::WebSocketReadHalf<TcpStream>;
    type Msg = lockgate::Message;
    const NAME: &'static str = "tokio-lockgate";
    fn binary(b: Bytes) -> Self::Msg {
        lockgate::Message::binary(b)
    }
    async fn split(tcp: TcpStream, server: bool) -> (Self::W, Self::R) {
        libs::TokioLockgate::wrap(tcp, server).await.into_split()
    }
    async fn write(w: &mut Self::W, m: Self::Msg) {
        if let Err(e) = w.write(m).await {
            failed(Self::NAME, "write", e)
        }
    }
    async fn flush(w: &mut Self::W) {
        if let Err(e) = w.flush().await {
            failed(Self::NAME, "flush", e)
        }
    }
    async fn read(r: &mut Self::R) -> Seen {
        match r.read().await {
            Ok(lockgate::Message::Binary(b)) => seen(&b),
            Ok(other) => failed(Self::NAME, "read", format_args!("unexpected {other:?}")),
            Err(e) => failed(Self::NAME, "read", e),
        }
    }
}

/// fastwebsockets: `WebSocket::split` with `tokio::io::split`.
struct Fastwebsockets;

type FwsStream = BufWriter<TcpStream>;

impl Split for Fastwebsockets {
    type W = fastwebsockets::WebSocketWrite<tokio::io::WriteHalf<FwsStream>>;
    type R = fastwebsockets::WebSocketRead<tokio::io::ReadHalf<FwsStream>>;
    type Msg = fastwebsockets::Frame<'static>;
    const NAME: &'static str = "fastwebsockets";
    fn binary(b: Bytes) -> Self::Msg {
        <libs::Fastwebsockets as AsyncLib>::binary(b)
    }
    async fn split(tcp: TcpStream, server: bool) -> (Self::W, Self::R) {
        let (r, w) = libs::Fastwebsockets::wrap(tcp, server)
            .await
            .split(tokio::io::split);
        (w, r)
    }
    async fn write(w: &mut Self::W, m: Self::Msg) {
        if let Err(e) = w.write_frame(m).await {
            failed(Self::NAME, "write_frame", e)
        }
    }
    async fn flush(w: &mut Self::W) {
        if let Err(e) = w.flush().await {
            failed(Self::NAME, "flush", e)
        }
    }
    async fn read(r: &mut Self::R) -> Seen {
        // A ping or close would oblige the read half to send its answer
        // through this; none is expected, so it fails the read.
        let mut obligated = |_: fastwebsockets::Frame<'static>| async {
            Err::<(), &'static str>("unexpected control frame")
        };
        match r.read_frame(&mut obligated).await {
            Ok(f) if f.fin && f.opcode == fastwebsockets::OpCode::Binary => seen(&f.payload),
            Ok(f) => failed(
                Self::NAME,
                "read_frame",
                format_args!("unexpected frame {:?} fin={}", f.opcode, f.fin),
            ),
            Err(e) => failed(Self::NAME, "read_frame", e),
        }
    }
}

/// sockudo-ws: its own `WebSocketStream::split`.
struct SockudoWs;

impl Split for SockudoWs {
    type W = sockudo_ws::SplitWriter<TcpStream>;
    type R = sockudo_ws::SplitReader<TcpStream>;
    type Msg = sockudo_ws::Message;
    const NAME: &'static str = "sockudo-ws";
    fn binary(b: Bytes) -> Self::Msg {
        sockudo_ws::Message::binary(b)
    }
    async fn split(tcp: TcpStream, server: bool) -> (Self::W, Self::R) {
        // `split` spawns its control driver: this runs inside the runtime.
        let (r, w) = libs::SockudoWs::wrap(tcp, server).await.split();
        (w, r)
    }
    async fn write(w: &mut Self::W, m: Self::Msg) {
        // The split writer has no queue-only call: `send` writes the frame.
        if let Err(e) = w.send(m).await {
            failed(Self::NAME, "send", e)
        }
    }
    async fn flush(w: &mut Self::W) {
        if let Err(e) = w.flush().await {
            failed(Self::NAME, "flush", e)
        }
    }
    async fn read(r: &mut Self::R) -> Seen {
        match r.next().await {
            Some(Ok(m)) if m.is_binary() => seen(libs::sockudo_payload(&m)),
            Some(Ok(m)) => failed(Self::NAME, "read", format_args!("unexpected {m:?}")),
            Some(Err(e)) => failed(Self::NAME, "read", e),
            None => failed(Self::NAME, "read", "stream ended"),
        }
    }
}

/// A library whose WebSocket is a `Sink` of its messages and a `Stream` of
/// what it reads, split with `StreamExt::split` (`SplitSink` /
/// `SplitStream`): tokio-tungstenite, tokio-websockets, yawc.
trait SinkStream: AsyncLib + 'static {
    /// The library's name, for failures.
    const NAME: &'static str;
    /// What its `Stream` yields.
    type Item;
    /// What a final binary message held, or what arrived instead.
    fn seen(item: Self::Item) -> Result<Seen, String>;
}

/// The split halves of a [`SinkStream`] library: `feed`, `flush`, `next`.
struct Halves<L>(PhantomData<L>);

impl<L: SinkStream> Split for Halves<L>
where
    L::Ws<TcpStream>: Sink<L::Msg> + Stream<Item = L::Item> + Send + 'static,
    <L::Ws<TcpStream> as Sink<L::Msg>>::Error: fmt::Display,
    L::Msg: Send + 'static,
{
    type W = SplitSink<L::Ws<TcpStream>, L::Msg>;
    type R = SplitStream<L::Ws<TcpStream>>;
    type Msg = L::Msg;
    const NAME: &'static str = L::NAME;
    fn binary(b: Bytes) -> Self::Msg {
        L::binary(b)
    }
    async fn split(tcp: TcpStream, server: bool) -> (Self::W, Self::R) {
        L::wrap(tcp, server).await.split()
    }
    async fn write(w: &mut Self::W, m: Self::Msg) {
        if let Err(e) = w.feed(m).await {
            failed(Self::NAME, "feed", e)
        }
    }
    async fn flush(w: &mut Self::W) {
        if let Err(e) = SinkExt::flush(w).await {
            failed(Self::NAME, "flush", e)
        }
    }
    async fn read(r: &mut Self::R) -> Seen {
        match r.next().await {
            Some(item) => L::seen(item).unwrap_or_else(|e| failed(Self::NAME, "read", e)),
            None => failed(Self::NAME, "read", "stream ended"),
        }
    }
}

impl SinkStream for libs::TokioTungstenite {
    const NAME: &'static str = "tokio-tungstenite";
    type Item = Result<tungstenite::Message, tungstenite::Error>;
    fn seen(item: Self::Item) -> Result<Seen, String> {
        match item {
            Ok(tungstenite::Message::Binary(b)) => Ok(seen(&b)),
            Ok(other) => Err(format!("unexpected {other:?}")),
            Err(e) => Err(e.to_string()),
        }
    }
}

impl SinkStream for libs::TokioWebsockets {
    const NAME: &'static str = "tokio-websockets";
    type Item = Result<tokio_websockets::Message, tokio_websockets::Error>;
    fn seen(item: Self::Item) -> Result<Seen, String> {
        match item {
            Ok(m) if m.is_binary() => Ok(seen(m.as_payload())),
            Ok(m) => Err(format!("unexpected {m:?}")),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// yawc's `Stream` ends on an error (it does not yield it).
impl SinkStream for libs::Yawc {
    const NAME: &'static str = "yawc";
    type Item = yawc::Frame;
    fn seen(f: Self::Item) -> Result<Seen, String> {
        if f.is_fin() && f.opcode() == yawc::OpCode::Binary {
            Ok(seen(f.payload()))
        } else {
            Err(format!(
                "unexpected frame {:?} fin={}",
                f.opcode(),
                f.is_fin()
            ))
        }
    }
}

/// One run of `lib` in `mode`, `n` messages per active direction.
pub(crate) fn run(lib: Lib, mode: Mode, n: usize, listener: &TcpListener) -> DuplexRun {
    match lib {
        Lib::TokioLockgate => run_lib::<TokioLockgate>(mode, n, listener),
        Lib::TokioTungstenite => run_lib::<Halves<libs::TokioTungstenite>>(mode, n, listener),
        Lib::Fastwebsockets => run_lib::<Fastwebsockets>(mode, n, listener),
        Lib::TokioWebsockets => run_lib::<Halves<libs::TokioWebsockets>>(mode, n, listener),
        Lib::SockudoWs => run_lib::<SockudoWs>(mode, n, listener),
        Lib::Yawc => run_lib::<Halves<libs::Yawc>>(mode, n, listener),
        other => unreachable!("{other:?} has no split API here"),
    }
}

/// A runtime with [`WORKERS`] worker threads; with `--pin`, worker `k` is
/// pinned to CPU `k`.
fn runtime() -> tokio::runtime::Runtime {
    let next = AtomicUsize::new(0);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .on_thread_start(move || crate::sys::pin_to_cpu(next.fetch_add(1, Relaxed) % WORKERS))
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn run_lib<L: Split>(mode: Mode, n: usize, listener: &TcpListener) -> DuplexRun {
    let (s, c) = upgrade::upgraded_pair(listener);
    let to_server: Vec<L::Msg> = (0..n)
        .map(|i| L::binary(payload(i, Dir::ClientToServer)))
        .collect();
    let to_client: Vec<L::Msg> = match mode {
        Mode::Duplex => (0..n)
            .map(|i| L::binary(payload(i, Dir::ServerToClient)))
            .collect(),
        Mode::OneWay => Vec::new(),
    };
    let rt = runtime();
    let run = rt.block_on(async move {
        let (server_w, server_r) = L::split(crate::tcp::to_tokio(s), true).await;
        let (client_w, client_r) = L::split(crate::tcp::to_tokio(c), false).await;
        let got_c2s = Arc::new(AtomicUsize::new(0));
        let got_s2c = Arc::new(AtomicUsize::new(0));
        let start = Instant::now();
        let c2s_reader = tokio::spawn(reader::<L>(
            server_r,
            Dir::ClientToServer,
            n,
            got_c2s.clone(),
        ));
        let c2s_writer = tokio::spawn(writer::<L>(client_w, to_server));
        // In the baseline the other two halves stay alive, unused.
        let (s2c_reader, s2c_writer, idle) = match mode {
            Mode::Duplex => (
                Some(tokio::spawn(reader::<L>(
                    client_r,
                    Dir::ServerToClient,
                    n,
                    got_s2c.clone(),
                ))),
                Some(tokio::spawn(writer::<L>(server_w, to_client))),
                None,
            ),
            Mode::OneWay => (None, None, Some((server_w, client_r))),
        };
        let all = async {
            let (c2s_r, c2s_done) = joined(c2s_reader.await);
            let c2s_w = joined(c2s_writer.await);
            let s2c = match (s2c_reader, s2c_writer) {
                (Some(r), Some(w)) => {
                    let (s2c_r, s2c_done) = joined(r.await);
                    Some((s2c_r, joined(w.await), s2c_done))
                }
                _ => None,
            };
            // Every half lives until both directions are done.
            let s2c_done = s2c.map(|(r, w, done)| {
                drop((r, w));
                done
            });
            drop((c2s_r, c2s_w));
            (c2s_done, s2c_done)
        };
        let (c2s_done, s2c_done) = match tokio::time::timeout(TIMEOUT, all).await {
            Ok(done) => done,
            Err(_) => fail(
                L::NAME,
                &format!(
                    "duplex: {mode} run timed out after {} s; received client → server {}/{n}, \
                     server → client {}/{}",
                    TIMEOUT.as_secs(),
                    got_c2s.load(Relaxed),
                    got_s2c.load(Relaxed),
                    if mode == Mode::Duplex { n } else { 0 },
                ),
            ),
        };
        drop(idle);
        DuplexRun {
            client_to_server: c2s_done - start,
            server_to_client: s2c_done.map(|d| d - start),
        }
    });
    drop(rt);
    run
}

fn joined<T>(r: Result<T, tokio::task::JoinError>) -> T {
    r.unwrap_or_else(|e| fail("duplex", &format!("a task failed: {e}")))
}

/// Writes `msgs`, flushing after every [`BATCH`] and after the last; gives
/// the half back so it outlives the run.
async fn writer<L: Split>(mut w: L::W, msgs: Vec<L::Msg>) -> L::W {
    let n = msgs.len();
    for (i, m) in msgs.into_iter().enumerate() {
        L::write(&mut w, m).await;
        if (i + 1) % BATCH == 0 {
            L::flush(&mut w).await;
        }
    }
    if n % BATCH != 0 {
        L::flush(&mut w).await;
    }
    w
}

/// Reads and checks `n` messages; gives the half back with the time the
/// last one arrived. `got` counts messages received (for timeouts).
async fn reader<L: Split>(
    mut r: L::R,
    dir: Dir,
    n: usize,
    got: Arc<AtomicUsize>,
) -> (L::R, Instant) {
    for i in 0..n {
        let s = L::read(&mut r).await;
        if s.len != SIZE || s.seq != i as u64 || s.fill != Some(dir.fill()) {
            fail(
                L::NAME,
                &format!(
                    "duplex {}: message {i} has length {}, sequence {}, fill {:?} \
                     (expected {SIZE}, {i}, {:?})",
                    dir.label(),
                    s.len,
                    s.seq,
                    s.fill.map(char::from),
                    char::from(dir.fill()),
                ),
            );
        }
        if i % 1024 == 0 {
            got.store(i, Relaxed);
        }
    }
    got.store(n, Relaxed);
    (r, Instant::now())
}
