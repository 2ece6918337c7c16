//! Scenario 7: memory held by idle compressed server connections, after one
//! compressed message in each direction, with and without context takeover,
//! and a baseline where the client offers no compression.
//!
//! As in the idle scenario, each (library, mode) runs in a child process
//! (`__idle_deflate LIB N takeover|no-takeover|off`) with a counting global
//! allocator. A client thread with blocking sockets, and no heap kept per
//! connection, sends an upgrade request offering permessage-deflate (plus
//! both no-context-takeover parameters in that mode) and checks the 101
//! accepts it with exactly those parameters. Each server task does the
//! library's own handshake (`accept_async_with` for tokio-lockgate;
//! `parse_request`, `negotiate_server_deflate` and `build_response` for
//! sockudo-ws, whose HTTP/1 `accept` never negotiates compression; hyper's
//! HTTP/1 server and `WebSocket::upgrade_with_options` for yawc),
//! receives one compressed 1 KiB JSON-like message (built once by a
//! lockgate client context, masked, RSV1 set) and checks it byte for byte,
//! sends one compressed 1 KiB reply (the client checks that it is a final
//! text frame with RSV1 and fewer bytes than the text), then parks in its
//! read. So both the compressor and the decompressor have been used once.
//! The baseline does the same with plain frames.
//!
//! After a warm-up of 16 such connections, used and closed, the child reads
//! RSS and live heap, opens N connections, waits until every task has
//! parked, and reads both again. Finally every client sends an uncompressed
//! masked "hello" that every parked task must receive.
//!
//! With context takeover, lockgate's connections sleep once quiet for
//! `DeflateConfig::sleep_after` (default one second; a connection sleeps
//! between one and two intervals after it went quiet), so in that mode the
//! child waits two default intervals before its second reading, for every
//! library alike. tokio-lockgate then answers the "hello" with a second
//! compressed 1 KiB JSON-like reply, from the compressor rebuilt on
//! waking, and the client checks it is no larger than a never-sleeping
//! lockgate's second reply (plus 1 %): waking keeps the compression ratio.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::rc::Rc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use futures_util::{Sink, SinkExt, Stream, StreamExt};
use lockgate::deflate::DeflateConfig;
use lockgate::{Buf, Config, Message, Role, Utf8Bytes, WebSocketContext};

use crate::deflate::{
    check_response, lockgate_config, lockgate_params, offer, sockudo_deflate,
    sockudo_server_handshake, yawc_accept, yawc_options,
};
use crate::idle::{IdleRun, run_child};
use crate::json::json_like;
use crate::{alloc, frames, sys, upgrade};

/// The libraries measured (async only: a parked blocking connection is a
/// thread).
pub(crate) const LIBS: [&str; 3] = ["tokio-lockgate", "sockudo-ws", "yawc"];

const WARM: usize = 16;
const HELLO: &str = "hello";
/// Size of the message each way.
const SIZE: usize = 1024;

/// What the client offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// permessage-deflate with context takeover both ways.
    Takeover,
    /// permessage-deflate with both no-context-takeover parameters.
    NoTakeover,
    /// Nothing: the baseline, same handshake path and messages, uncompressed.
    Off,
}

impl Mode {
    /// Every mode, in report order.
    pub(crate) const ALL: [Mode; 3] = [Mode::Off, Mode::Takeover, Mode::NoTakeover];

    fn arg(self) -> &'static str {
        match self {
            Mode::Takeover => "takeover",
            Mode::NoTakeover => "no-takeover",
            Mode::Off => "off",
        }
    }

    /// How the report names it.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Mode::Takeover => {
                "deflate, context takeover, measured after twice lockgate's default sleep_after"
            }
            Mode::NoTakeover => "deflate, no context takeover",
            Mode::Off => "no compression offered (baseline)",
        }
    }

    pub(crate) fn takeover(self) -> bool {
        self == Mode::Takeover
    }
}

/// glibc's setting that makes every allocation of 128 KiB or more its own
/// mapping, returned to the system when freed. By default glibc raises
/// that threshold after the first such block is freed, so the zlib states
/// of connections that went to sleep stay resident as free heap between
/// live blocks: RSS then shows the peak, not what the connections hold.
pub(crate) const FIXED_MMAP_THRESHOLD: (&str, &str) = ("MALLOC_MMAP_THRESHOLD_", "131072");

/// Runs the scenario for `lib` with `n` connections in a child process,
/// with `env` in its environment.
pub(crate) fn run(lib: &str, n: usize, mode: Mode, env: &[(&str, &str)]) -> IdleRun {
    run_child(
        lib,
        n,
        &["__idle_deflate", lib, &n.to_string(), mode.arg()],
        env,
    )
}

fn request(mode: Mode) -> String {
    let mut req = upgrade::request();
    if mode == Mode::Off {
        return req;
    }
    req.truncate(req.len() - 2);
    req.push_str(&format!(
        "Sec-WebSocket-Extensions: {}\r\n\r\n",
        offer(mode.takeover())
    ));
    req
}

/// The client's message as one masked frame: compressed by a lockgate
/// client context, or plain in the baseline.
fn client_frame(text: &str, mode: Mode) -> Vec<u8> {
    if mode == Mode::Off {
        let mut out = Vec::new();
        frames::encode(
            &mut out,
            frames::OP_TEXT,
            text.as_bytes(),
            Some(frames::mask_for(3)),
        );
        return out;
    }
    let takeover = mode.takeover();
    let mut ctx = WebSocketContext::with_deflate(
        Role::Client,
        lockgate_config(takeover),
        Some(lockgate_params(takeover)),
    );
    ctx.write(Message::text(text)).expect("compress");
    let mut output = ctx.output();
    let out = output.copy_to_bytes(output.remaining()).to_vec();
    assert_eq!(out[0], 0xC1, "not a compressed final text frame");
    out
}

/// Reads one server frame into `buf`: (first header byte, payload length).
fn read_frame(c: &mut TcpStream, buf: &mut [u8]) -> (u8, usize) {
    let mut h = [0u8; 2];
    c.read_exact(&mut h).expect("read reply header");
    assert_eq!(h[1] & 0x80, 0, "masked frame from the server");
    let len = match h[1] & 0x7f {
        126 => {
            let mut e = [0u8; 2];
            c.read_exact(&mut e).expect("read reply length");
            usize::from(u16::from_be_bytes(e))
        }
        127 => panic!("reply too long"),
        n => usize::from(n),
    };
    c.read_exact(&mut buf[..len]).expect("read reply payload");
    (h[0], len)
}

enum Cmd {
    Connect(usize),
    Hello,
    /// Read the reply sent after "hello", where one is expected.
    CheckReplies,
    Close,
    Exit,
}

struct ClientSide {
    addr: std::net::SocketAddr,
    mode: Mode,
    lib: String,
    message: Vec<u8>,
    /// The most bytes the second compressed reply may take: checked when
    /// the server sends one (tokio-lockgate, context takeover).
    second_reply_max: Option<usize>,
}

fn client_thread(side: ClientSide, cap: usize, rx: mpsc::Receiver<Cmd>, done: mpsc::Sender<()>) {
    let req = request(side.mode);
    let accept = format!(
        "sec-websocket-accept: {}\r\n",
        upgrade::accept_key().to_ascii_lowercase()
    );
    let mut hello = Vec::with_capacity(32);
    frames::encode(
        &mut hello,
        frames::OP_TEXT,
        HELLO.as_bytes(),
        Some(frames::mask_for(7)),
    );
    let mut conns: Vec<TcpStream> = Vec::with_capacity(cap);
    let mut buf = [0u8; 4096];
    while let Ok(cmd) = rx.recv() {
        match cmd {
            Cmd::Connect(k) => {
                for _ in 0..k {
                    let mut c = TcpStream::connect(side.addr).expect("idle connect");
                    c.set_nodelay(true).expect("TCP_NODELAY");
                    c.write_all(req.as_bytes()).expect("send request");
                    let n = upgrade::read_head_sync(&mut c, &mut buf);
                    let head = String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase();
                    assert!(head.contains(&accept), "wrong accept key: {head}");
                    if side.mode == Mode::Off {
                        if head.contains("sec-websocket-extensions") {
                            crate::fail(&side.lib, "an extension nobody offered was accepted");
                        }
                    } else {
                        check_response(&side.lib, &buf[..n], side.mode.takeover());
                    }
                    c.write_all(&side.message).expect("send message");
                    let (b0, len) = read_frame(&mut c, &mut buf);
                    let ok = match side.mode {
                        Mode::Off => b0 == 0x81 && len == SIZE,
                        _ => b0 == 0xC1 && len < SIZE,
                    };
                    if !ok {
                        crate::fail(
                            &side.lib,
                            &format!("{:?} reply: first byte {b0:#x}, {len} bytes", side.mode),
                        );
                    }
                    conns.push(c);
                }
            }
            Cmd::Hello => {
                for c in &mut conns {
                    c.write_all(&hello).expect("idle hello");
                }
            }
            Cmd::CheckReplies => {
                if let Some(max) = side.second_reply_max {
                    for c in &mut conns {
                        let (b0, len) = read_frame(c, &mut buf);
                        if b0 != 0xC1 || len > max {
                            crate::fail(
                                &side.lib,
                                &format!(
                                    "reply after waking: first byte {b0:#x}, {len} bytes, \
                                     at most {max} expected"
                                ),
                            );
                        }
                    }
                }
            }
            Cmd::Close => conns.clear(),
            Cmd::Exit => return,
        }
        done.send(()).expect("main thread gone");
    }
}

type Counter = Rc<std::cell::Cell<usize>>;

struct Texts {
    message: Rc<str>,
    reply: Utf8Bytes,
    /// The reply to "hello" (tokio-lockgate, context takeover).
    second_reply: Utf8Bytes,
}

/// Serves one connection as `lib` would: handshake, one message each way,
/// then park in a read until "hello". The server accepts compression in
/// every mode; in the baseline the client just does not offer it.
fn serve(
    lib: &str,
    s: tokio::net::TcpStream,
    takeover: bool,
    texts: Rc<Texts>,
    parked: Counter,
    got: Counter,
) {
    fn done(got: &Counter, ok: bool, lib: &str) {
        if !ok {
            crate::fail(lib, "idle connection received the wrong message");
        }
        got.set(got.get() + 1);
    }
    let lib_name = lib.to_string();
    match lib {
        "tokio-lockgate" => {
            tokio::task::spawn_local(async move {
                let mut ws = tokio_lockgate::accept_async_with(
                    s,
                    tokio_lockgate::ServerOptions::new().config(lockgate_config(takeover)),
                )
                .await
                .expect("tokio-lockgate accept");
                let m = ws.read().await.expect("tokio-lockgate read");
                if m.as_text() != Some(&*texts.message) {
                    crate::fail(&lib_name, "compressed message differs");
                }
                // Its payload may share the read buffer's allocation.
                drop(m);
                ws.send(Message::text(texts.reply.clone()))
                    .await
                    .expect("tokio-lockgate send");
                // Shares the text's allocation: nothing per connection.
                let reply = texts.second_reply.clone();
                drop(texts);
                parked.set(parked.get() + 1);
                let m = ws.read().await.expect("tokio-lockgate read");
                if takeover {
                    // Compressed by the compressor rebuilt on waking.
                    ws.send(Message::text(reply))
                        .await
                        .expect("tokio-lockgate send");
                }
                done(&got, m.as_text() == Some(HELLO), &lib_name);
            });
        }
        "yawc" => {
            tokio::task::spawn_local(async move {
                let mut ws = yawc_accept(s, yawc_options(takeover)).await;
                let f = ws.next_frame().await.expect("yawc read");
                if f.opcode() != yawc::OpCode::Text || &f.payload()[..] != texts.message.as_bytes()
                {
                    crate::fail(&lib_name, "compressed message differs");
                }
                drop(f);
                ws.send(yawc::Frame::text(texts.reply.as_bytes().clone()))
                    .await
                    .expect("yawc send");
                drop(texts);
                parked.set(parked.get() + 1);
                let f = ws.next_frame().await.expect("yawc read");
                done(&got, &f.payload()[..] == HELLO.as_bytes(), &lib_name);
            });
        }
        "sockudo-ws" => {
            tokio::task::spawn_local(async move {
                let mut s = s;
                let (agreed, leftover) =
                    sockudo_server_handshake(&mut s, &sockudo_deflate(takeover)).await;
                let config = sockudo_ws::Config::default();
                match agreed {
                    Some(d) => {
                        let ws = sockudo_ws::CompressedWebSocketStream::server_with_leftover(
                            s, config, d, leftover,
                        );
                        sockudo_serve(ws, texts, parked, got, lib_name).await;
                    }
                    None => {
                        let ws = sockudo_ws::WebSocketStream::from_raw_with_leftover(
                            s,
                            sockudo_ws::Role::Server,
                            config,
                            leftover,
                        );
                        sockudo_serve(ws, texts, parked, got, lib_name).await;
                    }
                }
            });
        }
        other => crate::fail(other, "unknown library for the compressed idle scenario"),
    }
}

/// sockudo-ws's part of [`serve`] after the handshake, for its compressed
/// stream and, in the baseline, its plain one.
async fn sockudo_serve<W>(mut ws: W, texts: Rc<Texts>, parked: Counter, got: Counter, lib: String)
where
    W: Stream<Item = sockudo_ws::Result<sockudo_ws::Message>>
        + Sink<sockudo_ws::Message, Error = sockudo_ws::Error>
        + Unpin,
{
    let m = ws
        .next()
        .await
        .expect("stream ended")
        .expect("sockudo-ws read");
    if m.as_text() != Some(&*texts.message) {
        crate::fail(&lib, "compressed message differs");
    }
    drop(m);
    ws.send(sockudo_ws::Message::Text(texts.reply.as_bytes().clone()))
        .await
        .expect("sockudo-ws send");
    drop(texts);
    parked.set(parked.get() + 1);
    let m = ws
        .next()
        .await
        .expect("stream ended")
        .expect("sockudo-ws read");
    if m.as_text() != Some(HELLO) {
        crate::fail(&lib, "idle connection received the wrong message");
    }
    got.set(got.get() + 1);
}

/// How long the parked connections are left before the second reading:
/// with context takeover, past lockgate's default sleep interval (a
/// connection sleeps between one and two intervals after it went quiet),
/// the same for every library.
fn settle(mode: Mode) -> Duration {
    let base = Duration::from_millis(100);
    match DeflateConfig::default().get_sleep_after() {
        Some(after) if mode.takeover() => 2 * after + base,
        _ => base,
    }
}

/// The payload length of `second` compressed after `first` by a server
/// that never sleeps, with this scenario's settings.
fn second_reply_len(first: &Utf8Bytes, second: &Utf8Bytes) -> usize {
    let config = Config::default().deflate(Some(DeflateConfig::default().sleep_after(None)));
    let mut ctx = WebSocketContext::with_deflate(Role::Server, config, Some(lockgate_params(true)));
    let mut len = 0;
    for reply in [first, second] {
        ctx.write(Message::text(reply.clone())).expect("compress");
        let mut output = ctx.output();
        let frame = output.copy_to_bytes(output.remaining());
        len = frame.len() - if frame[1] & 0x7f == 126 { 4 } else { 2 };
    }
    len
}

/// The child process: prints `IDLE <rss delta> <heap delta> <n>` and exits.
pub(crate) fn child_main(lib: &str, n: usize, mode: &str) {
    let Some(mode) = Mode::ALL.into_iter().find(|m| m.arg() == mode) else {
        crate::fail(lib, &format!("unknown mode {mode:?}"))
    };
    let takeover = mode.takeover();
    let texts = Rc::new(Texts {
        message: json_like(SIZE, 7).into(),
        reply: json_like(SIZE, 9).into(),
        second_reply: json_like(SIZE, 11).into(),
    });
    let listener = crate::idle::child_listener(lib, n + WARM);
    let side = ClientSide {
        addr: listener.local_addr().expect("listener address"),
        mode,
        lib: lib.to_string(),
        message: client_frame(&texts.message, mode),
        second_reply_max: (lib == "tokio-lockgate" && takeover)
            .then(|| second_reply_len(&texts.reply, &texts.second_reply) * 101 / 100 + 1),
    };
    let (cmd_tx, cmd_rx) = mpsc::channel();
    let (ack_tx, ack_rx) = mpsc::channel();
    let client = std::thread::spawn(move || client_thread(side, n + WARM, cmd_rx, ack_tx));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let local = tokio::task::LocalSet::new();
    let lib = lib.to_string();
    local.block_on(&rt, async move {
        let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
        let parked: Counter = Rc::default();
        let got: Counter = Rc::default();
        let open = |k: usize| {
            let (listener, lib, texts) = (&listener, &lib, &texts);
            let (parked, got) = (parked.clone(), got.clone());
            let cmd_tx = cmd_tx.clone();
            async move {
                let target = parked.get() + k;
                cmd_tx.send(Cmd::Connect(k)).expect("client thread gone");
                for _ in 0..k {
                    let (s, _) = listener.accept().await.expect("accept");
                    s.set_nodelay(true).expect("TCP_NODELAY");
                    serve(lib, s, takeover, texts.clone(), parked.clone(), got.clone());
                }
                let start = Instant::now();
                while parked.get() < target {
                    if start.elapsed() > Duration::from_secs(60) {
                        crate::fail(lib, "connections did not park");
                    }
                    tokio::task::yield_now().await;
                }
            }
        };
        let ack = || {
            ack_rx
                .recv_timeout(Duration::from_secs(60))
                .expect("client thread stalled")
        };
        let wait_got = |target: usize| {
            let got = got.clone();
            async move {
                let start = Instant::now();
                while got.get() < target {
                    if start.elapsed() > Duration::from_secs(60) {
                        crate::fail(
                            "idle deflate",
                            &format!(
                                "only {} of {target} connections got their message",
                                got.get()
                            ),
                        );
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        };

        open(WARM).await;
        ack();
        cmd_tx.send(Cmd::Hello).expect("client thread gone");
        ack();
        wait_got(WARM).await;
        cmd_tx.send(Cmd::Close).expect("client thread gone");
        ack();
        tokio::time::sleep(Duration::from_millis(100)).await;

        let (rss0, heap0) = (sys::rss_bytes(), alloc::live_bytes());
        open(n).await;
        ack();
        tokio::time::sleep(settle(mode)).await;
        let (rss1, heap1) = (sys::rss_bytes(), alloc::live_bytes());

        cmd_tx.send(Cmd::Hello).expect("client thread gone");
        ack();
        wait_got(WARM + n).await;
        // Every reply after "hello" was sent before its task counted.
        cmd_tx.send(Cmd::CheckReplies).expect("client thread gone");
        ack();
        cmd_tx.send(Cmd::Exit).expect("client thread gone");
        println!(
            "IDLE {} {} {n}",
            rss1 as i64 - rss0 as i64,
            heap1 as i64 - heap0 as i64
        );
    });
    client.join().expect("client thread panicked");
}
