//! Scenario 6: permessage-deflate over loopback TCP, lockgate (blocking and
//! tokio) against yawc, the only other Rust crate with compression.
//!
//! Unlike the other TCP jobs there is no neutral upgrade: compression is an
//! extension the handshake must negotiate, so every library does its own
//! handshake over the loopback socket with compression configured on both
//! ends:
//!
//! - lockgate: `ServerOptions::accept` / `ClientOptions::client` (blocking)
//!   and `accept_async_with` / `client_async_with` (tokio), with
//!   `Config::deflate(Some(DeflateConfig::default()))`, plus
//!   `server_no_context_takeover` and `client_no_context_takeover` in the
//!   no-takeover mode.
//! - sockudo-ws: its HTTP/1 `WebSocketServer::accept` and
//!   `WebSocketClient::connect` never negotiate compression (only its axum
//!   extractor does), so each end runs sockudo-ws's public handshake
//!   helpers over the socket: the client sends `build_request_with_headers`
//!   with the offer and reads the answer with `parse_response`,
//!   `validate_accept_key` and `DeflateConfig::from_params`; the server
//!   reads the request with `parse_request`, answers the offer with
//!   `negotiate_server_deflate` and `build_response`. Both then wrap the
//!   socket in `CompressedWebSocketStream` with the agreed `DeflateConfig`
//!   and `Config::default()`, and use Sink `feed`/`flush` and Stream `next`.
//!   Level 1, as for the others (sockudo-ws's default is 6).
//! - yawc: the client is `WebSocket::handshake` (hyper's HTTP/1 client over
//!   the socket, handed back as the caller's stream); the server is
//!   `WebSocket::upgrade_with_options` inside hyper's HTTP/1 server, which is
//!   how yawc serves (its only server-side negotiation), so the server end
//!   runs over hyper's `Upgraded`. Options: compression level 1 (lockgate's
//!   default; yawc's is 6), context takeover unless the mode says otherwise,
//!   and `with_utf8()` so both libraries validate text (yawc does not by
//!   default).
//!
//! The negotiation is checked, not assumed: the server's 101 response
//! (captured by the counting stream) must accept `permessage-deflate` with
//! exactly the no-context-takeover parameters of the mode, lockgate's
//! contexts must report the expected `DeflateParams`, and the wire must
//! carry fewer bytes than the payload.
//!
//! The server sends, the client receives. The receiver checks every
//! message's opcode, length and digest, and compares every 16th payload byte
//! for byte (every payload in the untimed warm-up run). Bytes are counted by
//! the wrapper around each socket after the handshake: what the server wrote
//! must equal what the client read.

use std::net::{TcpListener, TcpStream};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use futures_util::{SinkExt, StreamExt};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use lockgate::deflate::{DeflateConfig, DeflateParams};
use lockgate::{Config, Message, Utf8Bytes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::frames;
use crate::json::json_like;
use crate::streams::{Calls, Counted};

/// Every how many messages the receiver compares the whole payload (on top
/// of the digest every message gets).
const FULL_CHECK_EVERY: usize = 16;

/// Above this many wire bytes per payload byte, compression did not happen.
const MAX_RATIO: f64 = 0.75;

/// One compressed TCP job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Job {
    /// Payload bytes per message.
    pub(crate) size: usize,
    /// Messages sent.
    pub(crate) count: usize,
    /// Context takeover in both directions (else neither).
    pub(crate) takeover: bool,
    /// Write and flush each message (else write all, flush once).
    pub(crate) flush_each: bool,
}

impl Job {
    /// The row label.
    pub(crate) fn label(&self) -> String {
        let size = if self.size >= 1024 {
            format!("{} KiB", self.size / 1024)
        } else {
            format!("{} B", self.size)
        };
        let n = if self.count >= 1000 && self.count.is_multiple_of(1000) {
            format!("{}k", self.count / 1000)
        } else {
            self.count.to_string()
        };
        format!(
            "deflate TCP one-way {n} × {size} JSON, {}, {}",
            if self.flush_each {
                "send+flush each"
            } else {
                "write all + 1 flush"
            },
            if self.takeover {
                "context takeover"
            } else {
                "no context takeover"
            }
        )
    }
}

/// The payloads of one size, and what the receiver expects.
pub(crate) struct Corpus {
    size: usize,
    texts: Vec<Utf8Bytes>,
    digests: Vec<u64>,
}

impl Corpus {
    /// `count` distinct JSON-like texts of `size` bytes.
    pub(crate) fn new(size: usize, count: usize) -> Self {
        let texts: Vec<Utf8Bytes> = (0..count)
            .map(|i| json_like(size, i as u64 + 1).into())
            .collect();
        let digests = texts.iter().map(|t| frames::digest(t.as_bytes())).collect();
        Self {
            size,
            texts,
            digests,
        }
    }

    /// The size of every text.
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    fn check(&self, lib: &str, i: usize, p: &[u8], full: bool) {
        if p.len() != self.size || frames::digest(p) != self.digests[i] {
            crate::fail(
                lib,
                &format!("deflate message {i}: wrong length or content"),
            );
        }
        if (full || i.is_multiple_of(FULL_CHECK_EVERY)) && p != self.texts[i].as_bytes() {
            crate::fail(lib, &format!("deflate message {i}: payload differs"));
        }
    }
}

/// What one run measured.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Run {
    /// From the earlier end's start to the later end's finish.
    pub(crate) elapsed: Duration,
    /// Payload bytes moved.
    pub(crate) payload: u64,
    /// Bytes the server wrote after the handshake (= bytes the client read).
    pub(crate) wire: u64,
    /// Successful write calls on the server's socket.
    pub(crate) server_writes: u64,
}

/// One end's (start, finish, bytes, write calls).
type End = (Instant, Instant, u64, u64);

fn combine(lib: &str, job: Job, srv: End, cli: End) -> Run {
    let payload = (job.count * job.size) as u64;
    if srv.2 != cli.2 {
        crate::fail(
            lib,
            &format!(
                "server wrote {} bytes after the handshake, client read {}",
                srv.2, cli.2
            ),
        );
    }
    if srv.2 as f64 > payload as f64 * MAX_RATIO {
        crate::fail(
            lib,
            &format!(
                "{} wire bytes for {payload} payload bytes: not compressed",
                srv.2
            ),
        );
    }
    Run {
        elapsed: srv.1.max(cli.1) - srv.0.min(cli.0),
        payload,
        wire: srv.2,
        server_writes: srv.3,
    }
}

/// lockgate's configuration for the mode (the same on both ends).
pub(crate) fn lockgate_config(takeover: bool) -> Config {
    let d = DeflateConfig::default()
        .server_no_context_takeover(!takeover)
        .client_no_context_takeover(!takeover);
    Config::default().deflate(Some(d))
}

/// What lockgate must have agreed on.
pub(crate) fn lockgate_params(takeover: bool) -> DeflateParams {
    DeflateParams {
        server_no_context_takeover: !takeover,
        client_no_context_takeover: !takeover,
        ..DeflateParams::default()
    }
}

fn check_params(lib: &str, got: Option<&DeflateParams>, takeover: bool) {
    if got != Some(&lockgate_params(takeover)) {
        crate::fail(lib, &format!("negotiated {got:?}"));
    }
}

/// yawc's options for the mode (the same on both ends).
pub(crate) fn yawc_options(takeover: bool) -> yawc::Options {
    let o = yawc::Options::default()
        .with_compression_level(yawc::CompressionLevel::fast())
        .with_utf8();
    if takeover {
        o
    } else {
        o.server_no_context_takeover().client_no_context_takeover()
    }
}

/// Checks that a server's handshake response accepted permessage-deflate
/// with the mode's parameters and nothing else.
pub(crate) fn check_response(lib: &str, head: &[u8], takeover: bool) {
    let text = String::from_utf8_lossy(head).to_ascii_lowercase();
    let Some(end) = text.find("\r\n\r\n") else {
        crate::fail(lib, &format!("no complete response head: {text:?}"))
    };
    let head = &text[..end];
    if !head.starts_with("http/1.1 101") {
        crate::fail(lib, &format!("not a 101: {head:?}"));
    }
    let ext: Vec<&str> = head
        .lines()
        .filter_map(|l| l.strip_prefix("sec-websocket-extensions:"))
        .collect();
    let [ext] = ext[..] else {
        crate::fail(lib, &format!("not one extensions header: {head:?}"))
    };
    let mut params: Vec<&str> = ext.split(';').map(str::trim).collect();
    if params.first() != Some(&"permessage-deflate") {
        crate::fail(lib, &format!("deflate not accepted: {ext:?}"));
    }
    params.remove(0);
    params.sort_unstable();
    let want: &[&str] = if takeover {
        &[]
    } else {
        &["client_no_context_takeover", "server_no_context_takeover"]
    };
    if params != want {
        crate::fail(lib, &format!("unexpected parameters: {ext:?}"));
    }
}

/// A fresh loopback connection, TCP_NODELAY on both ends, not upgraded:
/// `(server end, client end)`.
fn tcp_pair(listener: &TcpListener) -> (TcpStream, TcpStream) {
    let addr = listener.local_addr().expect("listener address");
    let client = TcpStream::connect(addr).expect("connect");
    let (server, _) = listener.accept().expect("accept");
    for s in [&server, &client] {
        s.set_nodelay(true).expect("TCP_NODELAY");
    }
    (server, client)
}

fn url(listener: &TcpListener) -> String {
    let port = listener.local_addr().expect("listener address").port();
    format!("ws://127.0.0.1:{port}/bench")
}

fn lg_payload<'a>(lib: &str, m: &'a Message) -> &'a [u8] {
    match m {
        Message::Text(t) => t.as_bytes(),
        other => crate::fail(lib, &format!("expected a text message, got {other:?}")),
    }
}

fn end(t0: Instant, calls: &Calls, bytes0: u64, writes0: u64, sent: bool) -> End {
    let t1 = Instant::now();
    let (w, r) = calls.bytes();
    let bytes = if sent { w } else { r } - bytes0;
    (t0, t1, bytes, calls.writes.load(Relaxed) - writes0)
}

/// One run of `job` with lockgate's blocking `WebSocket` on both ends.
pub(crate) fn run_lockgate(job: Job, c: &Corpus, listener: &TcpListener, warm_up: bool) -> Run {
    let lib = "lockgate";
    let (s, cl) = tcp_pair(listener);
    let url = url(listener);
    let barrier = Barrier::new(2);
    let (srv, cli) = thread::scope(|sc| {
        let b = &barrier;
        let hs = sc.spawn(move || {
            crate::sys::pin_to_cpu(0);
            let cnt = Arc::new(Calls::capturing());
            let mut ws = lockgate::ServerOptions::new()
                .config(lockgate_config(job.takeover))
                .accept(Counted::new(s, cnt.clone()))
                .expect("lockgate accept");
            check_response(lib, &cnt.stop_capture(), job.takeover);
            check_params(lib, ws.context().deflate(), job.takeover);
            let msgs: Vec<Message> = c.texts[..job.count]
                .iter()
                .map(|t| Message::text(t.clone()))
                .collect();
            let (w0, calls0) = (cnt.bytes().0, cnt.writes.load(Relaxed));
            b.wait();
            let t0 = Instant::now();
            for m in msgs {
                ws.write(m).expect("lockgate write");
                if job.flush_each {
                    ws.flush().expect("lockgate flush");
                }
            }
            ws.flush().expect("lockgate flush");
            end(t0, &cnt, w0, calls0, true)
        });
        let hc = sc.spawn(move || {
            crate::sys::pin_to_cpu(1);
            let cnt = Arc::new(Calls::default());
            let (mut ws, _) = lockgate::ClientOptions::new()
                .config(lockgate_config(job.takeover))
                .client(url.as_str(), Counted::new(cl, cnt.clone()))
                .expect("lockgate client handshake");
            check_params(lib, ws.context().deflate(), job.takeover);
            let r0 = cnt.bytes().1;
            b.wait();
            let t0 = Instant::now();
            for i in 0..job.count {
                let m = ws.read().expect("lockgate read");
                c.check(lib, i, lg_payload(lib, &m), warm_up);
            }
            end(t0, &cnt, r0, 0, false)
        });
        (
            hs.join().expect("server end panicked"),
            hc.join().expect("client end panicked"),
        )
    });
    combine(lib, job, srv, cli)
}

/// The timed sending loop of a `Sink` peer: every message fed, the sink
/// flushed after each if `flush_each`, and once at the end.
async fn feed_all<M, W>(ws: &mut W, msgs: Vec<M>, flush_each: bool, lib: &str)
where
    W: futures_util::Sink<M> + Unpin,
    W::Error: std::fmt::Debug,
{
    for m in msgs {
        ws.feed(m)
            .await
            .unwrap_or_else(|e| panic!("{lib} feed: {e:?}"));
        if flush_each {
            SinkExt::flush(ws)
                .await
                .unwrap_or_else(|e| panic!("{lib} flush: {e:?}"));
        }
    }
    SinkExt::flush(ws)
        .await
        .unwrap_or_else(|e| panic!("{lib} flush: {e:?}"));
}

fn to_tokio(s: TcpStream) -> tokio::net::TcpStream {
    s.set_nonblocking(true).expect("set_nonblocking");
    tokio::net::TcpStream::from_std(s).expect("register with tokio")
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(f)
}

/// One run of `job` with tokio-lockgate's `WebSocketStream` on both ends,
/// each on a current-thread runtime.
pub(crate) fn run_tokio_lockgate(
    job: Job,
    c: &Corpus,
    listener: &TcpListener,
    warm_up: bool,
) -> Run {
    let lib = "tokio-lockgate";
    let (s, cl) = tcp_pair(listener);
    let url = url(listener);
    let barrier = Barrier::new(2);
    let (srv, cli) = thread::scope(|sc| {
        let b = &barrier;
        let hs = sc.spawn(move || {
            crate::sys::pin_to_cpu(0);
            block_on(async move {
                let cnt = Arc::new(Calls::capturing());
                let mut ws = tokio_lockgate::accept_async_with(
                    Counted::new(to_tokio(s), cnt.clone()),
                    tokio_lockgate::ServerOptions::new().config(lockgate_config(job.takeover)),
                )
                .await
                .expect("tokio-lockgate accept");
                check_response(lib, &cnt.stop_capture(), job.takeover);
                check_params(lib, ws.context().deflate(), job.takeover);
                let msgs: Vec<Message> = c.texts[..job.count]
                    .iter()
                    .map(|t| Message::text(t.clone()))
                    .collect();
                let (w0, calls0) = (cnt.bytes().0, cnt.writes.load(Relaxed));
                b.wait();
                let t0 = Instant::now();
                for m in msgs {
                    ws.write(m).await.expect("tokio-lockgate write");
                    if job.flush_each {
                        ws.flush().await.expect("tokio-lockgate flush");
                    }
                }
                ws.flush().await.expect("tokio-lockgate flush");
                end(t0, &cnt, w0, calls0, true)
            })
        });
        let hc = sc.spawn(move || {
            crate::sys::pin_to_cpu(1);
            block_on(async move {
                let cnt = Arc::new(Calls::default());
                let (mut ws, _) = tokio_lockgate::client_async_with(
                    url.as_str(),
                    Counted::new(to_tokio(cl), cnt.clone()),
                    tokio_lockgate::ClientOptions::new().config(lockgate_config(job.takeover)),
                )
                .await
                .expect("tokio-lockgate client handshake");
                check_params(lib, ws.context().deflate(), job.takeover);
                let r0 = cnt.bytes().1;
                b.wait();
                let t0 = Instant::now();
                for i in 0..job.count {
                    let m = ws.read().await.expect("tokio-lockgate read");
                    c.check(lib, i, lg_payload(lib, &m), warm_up);
                }
                end(t0, &cnt, r0, 0, false)
            })
        });
        (
            hs.join().expect("server end panicked"),
            hc.join().expect("client end panicked"),
        )
    });
    combine(lib, job, srv, cli)
}

/// yawc's server handshake: hyper's HTTP/1 server answers the upgrade
/// request through `WebSocket::upgrade_with_options`, then the upgraded
/// connection is taken over.
pub(crate) async fn yawc_accept<S>(io: S, options: yawc::Options) -> yawc::HttpWebSocket
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let slot: Arc<Mutex<Option<yawc::UpgradeFut>>> = Arc::default();
    let put = slot.clone();
    let svc = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
        let upgrade = yawc::WebSocket::upgrade_with_options(&mut req, options.clone());
        let put = put.clone();
        async move {
            let (response, fut) = upgrade?;
            *put.lock().expect("upgrade slot") = Some(fut);
            Ok::<_, yawc::WebSocketError>(response)
        }
    });
    hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(io), svc)
        .with_upgrades()
        .await
        .expect("hyper served the upgrade");
    let fut = slot
        .lock()
        .expect("upgrade slot")
        .take()
        .expect("an upgrade request");
    fut.await.expect("yawc upgrade")
}

/// One run of `job` with yawc on both ends, each on a current-thread
/// runtime.
pub(crate) fn run_yawc(job: Job, c: &Corpus, listener: &TcpListener, warm_up: bool) -> Run {
    let lib = "yawc";
    let (s, cl) = tcp_pair(listener);
    let url = url(listener);
    let barrier = Barrier::new(2);
    let (srv, cli) = thread::scope(|sc| {
        let b = &barrier;
        let hs = sc.spawn(move || {
            crate::sys::pin_to_cpu(0);
            block_on(async move {
                let cnt = Arc::new(Calls::capturing());
                let mut ws = yawc_accept(
                    Counted::new(to_tokio(s), cnt.clone()),
                    yawc_options(job.takeover),
                )
                .await;
                check_response(lib, &cnt.stop_capture(), job.takeover);
                let frames: Vec<yawc::Frame> = c.texts[..job.count]
                    .iter()
                    .map(|t| yawc::Frame::text(t.as_bytes().clone()))
                    .collect();
                let (w0, calls0) = (cnt.bytes().0, cnt.writes.load(Relaxed));
                b.wait();
                let t0 = Instant::now();
                feed_all(&mut ws, frames, job.flush_each, "yawc").await;
                end(t0, &cnt, w0, calls0, true)
            })
        });
        let hc = sc.spawn(move || {
            crate::sys::pin_to_cpu(1);
            block_on(async move {
                let cnt = Arc::new(Calls::default());
                let mut ws = yawc::WebSocket::handshake(
                    url.parse().expect("url"),
                    Counted::new(to_tokio(cl), cnt.clone()),
                    yawc_options(job.takeover),
                )
                .await
                .expect("yawc client handshake");
                let r0 = cnt.bytes().1;
                b.wait();
                let t0 = Instant::now();
                for i in 0..job.count {
                    let f = ws.next_frame().await.expect("yawc read");
                    if f.opcode() != yawc::OpCode::Text || !f.is_fin() {
                        crate::fail(lib, &format!("unexpected frame {:?}", f.opcode()));
                    }
                    c.check(lib, i, f.payload(), warm_up);
                }
                end(t0, &cnt, r0, 0, false)
            })
        });
        (
            hs.join().expect("server end panicked"),
            hc.join().expect("client end panicked"),
        )
    });
    combine(lib, job, srv, cli)
}

/// The `Sec-WebSocket-Extensions` offer for the mode, as every client in
/// these scenarios makes it.
pub(crate) fn offer(takeover: bool) -> &'static str {
    if takeover {
        "permessage-deflate"
    } else {
        "permessage-deflate; server_no_context_takeover; client_no_context_takeover"
    }
}

/// sockudo-ws's permessage-deflate policy for the mode (the same on both
/// ends): its defaults (15-bit windows, no compression below 32 bytes) at
/// level 1.
pub(crate) fn sockudo_deflate(takeover: bool) -> sockudo_ws::DeflateConfig {
    sockudo_ws::DeflateConfig {
        server_no_context_takeover: !takeover,
        client_no_context_takeover: !takeover,
        compression_level: 1,
        ..sockudo_ws::DeflateConfig::default()
    }
}

/// The server half of sockudo-ws's handshake, from its own helpers: reads
/// the upgrade request, lets `negotiate_server_deflate` answer its offer
/// under `policy`, writes the 101. Returns what was agreed (`None` if
/// nothing was offered) and any bytes read past the request.
pub(crate) async fn sockudo_server_handshake<S: AsyncRead + AsyncWrite + Unpin>(
    io: &mut S,
    policy: &sockudo_ws::DeflateConfig,
) -> (Option<sockudo_ws::DeflateConfig>, Option<Bytes>) {
    use sockudo_ws::handshake;
    let mut buf = BytesMut::with_capacity(4096);
    loop {
        let n = io
            .read_buf(&mut buf)
            .await
            .expect("sockudo-ws handshake read");
        assert!(n > 0, "peer closed during the handshake");
        let Some((req, used)) = handshake::parse_request(&buf).expect("sockudo-ws parse_request")
        else {
            continue;
        };
        let agreed = req
            .extensions
            .and_then(|offers| sockudo_ws::deflate::negotiate_server_deflate(offers, policy));
        let header = agreed.as_ref().map(|a| a.to_response_header());
        let response = handshake::build_response(
            &handshake::generate_accept_key(req.key),
            None,
            header.as_deref(),
        );
        io.write_all(&response)
            .await
            .expect("sockudo-ws handshake write");
        io.flush().await.expect("sockudo-ws handshake flush");
        let leftover = (used < buf.len()).then(|| buf.split_off(used).freeze());
        return (agreed.map(|a| a.config), leftover);
    }
}

/// The client half of sockudo-ws's handshake, from its own helpers: sends
/// the upgrade request with `offer`, checks the 101 and its accept key, and
/// parses the agreed parameters (at level 1) from its extensions header.
async fn sockudo_client_handshake<S: AsyncRead + AsyncWrite + Unpin>(
    io: &mut S,
    offer: &str,
) -> (Option<sockudo_ws::DeflateConfig>, Option<Bytes>) {
    use sockudo_ws::handshake;
    let key = handshake::generate_key();
    let request =
        handshake::build_request_with_headers("127.0.0.1", "/bench", &key, None, Some(offer), None)
            .expect("sockudo-ws build_request_with_headers");
    io.write_all(&request)
        .await
        .expect("sockudo-ws handshake write");
    io.flush().await.expect("sockudo-ws handshake flush");
    let mut buf = BytesMut::with_capacity(4096);
    loop {
        let n = io
            .read_buf(&mut buf)
            .await
            .expect("sockudo-ws handshake read");
        assert!(n > 0, "peer closed during the handshake");
        let Some((res, used)) = handshake::parse_response(&buf).expect("sockudo-ws parse_response")
        else {
            continue;
        };
        if !res
            .accept
            .is_some_and(|accept| handshake::validate_accept_key(&key, accept))
        {
            crate::fail("sockudo-ws", "missing or wrong Sec-WebSocket-Accept");
        }
        let agreed = res.extensions.map(|ext| {
            let params = sockudo_ws::deflate::parse_deflate_offer(ext).unwrap_or_else(|| {
                crate::fail(
                    "sockudo-ws",
                    &format!("not a permessage-deflate answer: {ext}"),
                )
            });
            sockudo_ws::DeflateConfig {
                compression_level: 1,
                ..sockudo_ws::DeflateConfig::from_params(&params)
                    .expect("sockudo-ws DeflateConfig::from_params")
            }
        });
        let leftover = (used < buf.len()).then(|| buf.split_off(used).freeze());
        return (agreed, leftover);
    }
}

/// One run of `job` with sockudo-ws's `CompressedWebSocketStream` on both
/// ends, each on a current-thread runtime.
pub(crate) fn run_sockudo(job: Job, c: &Corpus, listener: &TcpListener, warm_up: bool) -> Run {
    let lib = "sockudo-ws";
    let (s, cl) = tcp_pair(listener);
    let barrier = Barrier::new(2);
    let want = sockudo_deflate(job.takeover);
    let (srv, cli) = thread::scope(|sc| {
        let b = &barrier;
        let want = &want;
        let hs = sc.spawn(move || {
            crate::sys::pin_to_cpu(0);
            block_on(async move {
                let cnt = Arc::new(Calls::capturing());
                let mut io = Counted::new(to_tokio(s), cnt.clone());
                let (agreed, leftover) = sockudo_server_handshake(&mut io, want).await;
                check_response(lib, &cnt.stop_capture(), job.takeover);
                check_sockudo(lib, agreed.as_ref(), want);
                let agreed = agreed.expect("checked above");
                let mut ws = sockudo_ws::CompressedWebSocketStream::server_with_leftover(
                    io,
                    sockudo_ws::Config::default(),
                    agreed,
                    leftover,
                );
                let msgs: Vec<sockudo_ws::Message> = c.texts[..job.count]
                    .iter()
                    .map(|t| sockudo_ws::Message::Text(t.as_bytes().clone()))
                    .collect();
                let (w0, calls0) = (cnt.bytes().0, cnt.writes.load(Relaxed));
                b.wait();
                let t0 = Instant::now();
                feed_all(&mut ws, msgs, job.flush_each, "sockudo-ws").await;
                end(t0, &cnt, w0, calls0, true)
            })
        });
        let hc = sc.spawn(move || {
            crate::sys::pin_to_cpu(1);
            block_on(async move {
                let cnt = Arc::new(Calls::default());
                let mut io = Counted::new(to_tokio(cl), cnt.clone());
                let (agreed, leftover) =
                    sockudo_client_handshake(&mut io, offer(job.takeover)).await;
                check_sockudo(lib, agreed.as_ref(), want);
                let agreed = agreed.expect("checked above");
                let mut ws = sockudo_ws::CompressedWebSocketStream::client_with_leftover(
                    io,
                    sockudo_ws::Config::default(),
                    agreed,
                    leftover,
                );
                let r0 = cnt.bytes().1;
                b.wait();
                let t0 = Instant::now();
                for i in 0..job.count {
                    let m = ws
                        .next()
                        .await
                        .expect("sockudo-ws: stream ended")
                        .expect("sockudo-ws read");
                    let sockudo_ws::Message::Text(p) = &m else {
                        crate::fail(lib, &format!("expected a text message, got {m:?}"))
                    };
                    c.check(lib, i, p, warm_up);
                }
                end(t0, &cnt, r0, 0, false)
            })
        });
        (
            hs.join().expect("server end panicked"),
            hc.join().expect("client end panicked"),
        )
    });
    combine(lib, job, srv, cli)
}

/// What sockudo-ws's ends must have agreed on: the policy itself.
fn check_sockudo(
    lib: &str,
    got: Option<&sockudo_ws::DeflateConfig>,
    want: &sockudo_ws::DeflateConfig,
) {
    if got != Some(want) {
        crate::fail(lib, &format!("negotiated {got:?}, expected {want:?}"));
    }
}
