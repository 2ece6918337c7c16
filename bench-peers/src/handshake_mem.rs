//! Scenario `handshake`: memory held by server connections still in their
//! opening handshake (a slow client, or a slowloris peer, has sent part of
//! its upgrade request and stalled), and by the same connections once
//! upgraded and parked in the task that accepted them.
//!
//! As in the idle scenario, each library runs in its own child process
//! (this binary re-executed as `__handshake LIB N`) with a counting global
//! allocator. A client thread opens connections with blocking std sockets
//! and sends only the first part of the upgrade request on each: the
//! request line, `Host` and `Upgrade`, without the line end that would end
//! the head. The main thread runs a current-thread tokio runtime that
//! accepts and spawns one task per connection; the task does the server
//! handshake with the LIBRARY's own code, then parks in its read:
//!
//! - tokio-lockgate: `accept_async`;
//! - tokio-tungstenite: `accept_async`;
//! - fastwebsockets: `upgrade::upgrade` inside hyper's HTTP/1 server (its
//!   way to serve), over hyper's `Upgraded`;
//! - tokio-websockets: `ServerBuilder::accept`;
//! - sockudo-ws: `handshake::server_handshake`, then
//!   `WebSocketStream::from_raw` (its `WebSocketServer` needs the HTTP/2
//!   or HTTP/3 features; with the default ones this is its HTTP/1 server
//!   side);
//! - yawc: `WebSocket::upgrade_with_options` inside hyper's HTTP/1 server;
//! - floor: a bare tokio socket, read 16 bytes at a time until the empty
//!   line, then answered with the harness's 101.
//!
//! After a warm-up of 16 connections taken through every step and closed,
//! the child reads RSS and live heap, opens N connections, waits until
//! every task has run and read what arrived, and reads both again: the
//! cost per connection in its handshake. The client then sends the rest of
//! each request and checks each answer is a 101 with the right
//! `Sec-WebSocket-Accept`; once every task has its connection, RSS and heap
//! are read a third time: the cost per upgraded connection parked in its
//! accepting task, as a server that accepts and serves in one task holds
//! it (the task keeps the size of its largest state, the handshake's
//! included). Finally every client sends a masked "hello" that every task
//! must receive, so each connection was real.

use std::cell::{Cell, RefCell};
use std::io::Write;
use std::net::TcpStream;
use std::rc::Rc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::idle::IdleRun;
use crate::report::{Better, Lib, Row};
use crate::{alloc, frames, sys, upgrade};

/// The libraries (and the floor) measured, as passed to the child.
const LIBS: [&str; 7] = [
    "floor",
    "tokio-lockgate",
    "tokio-tungstenite",
    "fastwebsockets",
    "tokio-websockets",
    "sockudo-ws",
    "yawc",
];

/// What the report says under its table about the handshake rows.
pub(crate) const NOTE: &str = "- handshake rows: each client sent the request line, `Host` and \
    `Upgrade` of its upgrade request and stalled; each library accepts with its own server \
    handshake (tokio-lockgate and tokio-tungstenite `accept_async`, fastwebsockets \
    `upgrade::upgrade` and yawc `WebSocket::upgrade_with_options` inside hyper's HTTP/1 \
    server, tokio-websockets `ServerBuilder::accept`, sockudo-ws \
    `handshake::server_handshake` + `WebSocketStream::from_raw`), in the task that accepted \
    the connection, on a current-thread runtime; the floor reads the bare socket 16 bytes at \
    a time. The \"once upgraded\" rows: the rest of each request sent, every 101 checked, \
    the connections parked in a read in the same tasks; RSS keeps what the handshakes freed. \
    Repetitions as for the idle rows.\n";

/// Connections in a full run and with `--quick`.
const N_FULL: usize = 3_000;
const N_QUICK: usize = 500;

const WARM: usize = 16;
const HELLO: &[u8] = b"hello";

/// Where the client stops: just before the `Connection` field, so the
/// request line and two header fields have arrived.
const STALL_BEFORE: &str = "Connection:";

/// What one child measured, per connection.
#[derive(Debug, Clone, Copy)]
struct HandshakeRun {
    /// While the request is half sent.
    during: IdleRun,
    /// Once upgraded, parked in the accepting task.
    after: IdleRun,
}

/// The rows: RSS and heap per connection in its handshake, then once
/// upgraded. `reps` repetitions (the idle scenario's count).
pub(crate) fn rows(quick: bool, reps: usize) -> Vec<Row> {
    let n = if quick { N_QUICK } else { N_FULL };
    let mut rss = Row::new(
        format!("handshake: RSS per connection, request half sent ({n} conns)"),
        "KiB",
        Better::Lower,
    );
    let mut heap = Row::new(
        format!("handshake: heap per connection, request half sent ({n} conns)"),
        "KiB",
        Better::Lower,
    );
    let mut rss_after = Row::new(
        format!("… RSS per connection once upgraded, parked in its accepting task ({n} conns)"),
        "KiB",
        Better::Lower,
    );
    let mut heap_after = Row::new(
        format!("… heap per connection once upgraded, parked in its accepting task ({n} conns)"),
        "KiB",
        Better::Lower,
    );
    for rep in 0..reps {
        eprint!("\rhandshake: repetition {}/{reps}   ", rep + 1);
        let mut names = LIBS.to_vec();
        names.rotate_left(rep % LIBS.len());
        for name in names {
            let r = run(name, n);
            rss.push(Lib::column(name), r.during.rss / 1024.0);
            heap.push(Lib::column(name), r.during.heap / 1024.0);
            rss_after.push(Lib::column(name), r.after.rss / 1024.0);
            heap_after.push(Lib::column(name), r.after.heap / 1024.0);
        }
    }
    eprintln!();
    vec![rss, heap, rss_after, heap_after]
}

/// Runs the scenario for `lib` with `n` connections in a child process and
/// reads back its `HANDSHAKE <rss> <heap> <rss after> <heap after> <n>`
/// line (deltas for all `n` connections).
fn run(lib: &str, n: usize) -> HandshakeRun {
    let f = crate::idle::child_result(
        lib,
        n,
        &["__handshake", lib, &n.to_string()],
        &[],
        "HANDSHAKE",
        5,
    );
    let per = |total: f64| total / f[4];
    HandshakeRun {
        during: IdleRun {
            rss: per(f[0]),
            heap: per(f[1]),
        },
        after: IdleRun {
            rss: per(f[2]),
            heap: per(f[3]),
        },
    }
}

enum Cmd {
    /// Open this many connections, each sending the first part of its
    /// request.
    Connect(usize),
    /// Send the rest of every request and check every answer.
    Finish,
    /// Send "hello" on every connection.
    Hello,
    Close,
    Exit,
}

/// The value a correct `Sec-WebSocket-Accept` carries.
fn accept_value() -> String {
    upgrade::accept_key()
}

/// Checks that `head` is a 101 whose `Sec-WebSocket-Accept` (any case) is
/// `accept`.
fn check_101(lib: &str, head: &[u8], accept: &str) {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n");
    let status = lines.next().unwrap_or_default();
    if !status.starts_with("HTTP/1.1 101") {
        crate::fail(lib, &format!("not a 101: {text:?}"));
    }
    let ok = lines.any(|line| {
        line.split_once(':').is_some_and(|(name, value)| {
            name.eq_ignore_ascii_case("sec-websocket-accept") && value.trim() == accept
        })
    });
    if !ok {
        crate::fail(lib, &format!("wrong or no Sec-WebSocket-Accept: {text:?}"));
    }
}

fn client_thread(
    lib: String,
    addr: std::net::SocketAddr,
    cap: usize,
    rx: mpsc::Receiver<Cmd>,
    done: mpsc::Sender<()>,
) {
    let req = upgrade::request();
    let (first, rest) = req.split_at(req.find(STALL_BEFORE).expect("the request has the field"));
    let accept = accept_value();
    let mut hello = Vec::with_capacity(32);
    frames::encode(
        &mut hello,
        frames::OP_TEXT,
        HELLO,
        Some(frames::mask_for(7)),
    );
    let mut conns: Vec<TcpStream> = Vec::with_capacity(cap);
    // Connections whose request is still half sent, from this index on.
    let mut pending = 0;
    while let Ok(cmd) = rx.recv() {
        match cmd {
            Cmd::Connect(k) => {
                for _ in 0..k {
                    let mut c = TcpStream::connect(addr).expect("handshake connect");
                    c.set_nodelay(true).expect("TCP_NODELAY");
                    c.write_all(first.as_bytes()).expect("first part");
                    conns.push(c);
                }
            }
            Cmd::Finish => {
                for c in &mut conns[pending..] {
                    c.write_all(rest.as_bytes()).expect("rest of the request");
                }
                let mut buf = [0u8; 512];
                for c in &mut conns[pending..] {
                    let n = upgrade::read_head_sync(c, &mut buf);
                    check_101(&lib, &buf[..n], &accept);
                }
                pending = conns.len();
            }
            Cmd::Hello => {
                for c in &mut conns {
                    c.write_all(&hello).expect("handshake hello");
                }
            }
            Cmd::Close => {
                conns.clear();
                pending = 0;
            }
            Cmd::Exit => return,
        }
        done.send(()).expect("main thread gone");
    }
}

/// Counts of tasks that started, finished their handshake, got "hello".
#[derive(Clone, Default)]
struct Counters {
    started: Rc<Cell<usize>>,
    upgraded: Rc<Cell<usize>>,
    got: Rc<Cell<usize>>,
}

fn bump(counter: &Rc<Cell<usize>>) {
    counter.set(counter.get() + 1);
}

/// The upgraded connection a hyper-served library takes over: hyper's
/// HTTP/1 server answers the request with what `respond` (the library's
/// upgrade) returns, and the library's upgrade future it also returns
/// completes once hyper hands the connection over.
async fn hyper_accept<F, B, U>(s: tokio::net::TcpStream, respond: F) -> U::Output
where
    F: Fn(&mut hyper::Request<Incoming>) -> (hyper::Response<B>, U) + 'static,
    B: hyper::body::Body + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    U: Future + 'static,
{
    let slot: Rc<RefCell<Option<U>>> = Rc::default();
    let put = slot.clone();
    let svc = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
        let (response, upgraded) = respond(&mut req);
        *put.borrow_mut() = Some(upgraded);
        async move { Ok::<_, std::convert::Infallible>(response) }
    });
    hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(s), svc)
        .with_upgrades()
        .await
        .expect("hyper served the upgrade");
    let upgraded = slot.borrow_mut().take().expect("an upgrade request");
    upgraded.await
}

/// Spawns the task of one accepted connection: `lib`'s server handshake,
/// then a read that must return "hello".
fn serve(lib: &str, s: tokio::net::TcpStream, counters: Counters, resp: &Rc<str>) {
    fn done(counters: &Counters, ok: bool, lib: &str) {
        if !ok {
            crate::fail(lib, "the upgraded connection received the wrong message");
        }
        bump(&counters.got);
    }
    let name = lib.to_string();
    match lib {
        "floor" => {
            let resp = resp.clone();
            tokio::task::spawn_local(async move {
                let mut s = s;
                bump(&counters.started);
                // The last four bytes seen: the head ends with an empty line.
                let mut tail = [0u8; 4];
                let mut b = [0u8; 16];
                while tail != *b"\r\n\r\n" {
                    let n = s.read(&mut b).await.expect("floor read");
                    assert!(n > 0, "peer closed during the handshake");
                    for &byte in &b[..n] {
                        tail = [tail[1], tail[2], tail[3], byte];
                    }
                }
                s.write_all(resp.as_bytes()).await.expect("floor 101");
                bump(&counters.upgraded);
                let n = s.read(&mut b).await.expect("floor read");
                done(&counters, n > 0, &name);
            });
        }
        "tokio-lockgate" => {
            tokio::task::spawn_local(async move {
                bump(&counters.started);
                let mut ws = tokio_lockgate::accept_async(s)
                    .await
                    .expect("tokio-lockgate accept");
                bump(&counters.upgraded);
                let m = ws.read().await.expect("tokio-lockgate read");
                done(&counters, m.as_text() == Some("hello"), &name);
            });
        }
        "tokio-tungstenite" => {
            tokio::task::spawn_local(async move {
                bump(&counters.started);
                let mut ws = tokio_tungstenite::accept_async(s)
                    .await
                    .expect("tokio-tungstenite accept");
                bump(&counters.upgraded);
                let m = ws
                    .next()
                    .await
                    .expect("stream ended")
                    .expect("tokio-tungstenite read");
                done(&counters, m.to_text().ok() == Some("hello"), &name);
            });
        }
        "fastwebsockets" => {
            tokio::task::spawn_local(async move {
                bump(&counters.started);
                let ws = hyper_accept(s, |req| {
                    fastwebsockets::upgrade::upgrade(req).expect("fastwebsockets upgrade")
                })
                .await
                .expect("fastwebsockets upgraded");
                bump(&counters.upgraded);
                let mut ws = fastwebsockets::FragmentCollector::new(ws);
                let f = ws.read_frame().await.expect("fastwebsockets read");
                done(&counters, &f.payload[..] == HELLO, &name);
            });
        }
        "tokio-websockets" => {
            tokio::task::spawn_local(async move {
                bump(&counters.started);
                let (_request, mut ws) = tokio_websockets::ServerBuilder::new()
                    .accept(s)
                    .await
                    .expect("tokio-websockets accept");
                bump(&counters.upgraded);
                let m = ws
                    .next()
                    .await
                    .expect("stream ended")
                    .expect("tokio-websockets read");
                done(&counters, m.as_text() == Some("hello"), &name);
            });
        }
        "sockudo-ws" => {
            tokio::task::spawn_local(async move {
                let mut s = s;
                bump(&counters.started);
                let handshake = sockudo_ws::handshake::server_handshake(&mut s)
                    .await
                    .expect("sockudo-ws handshake");
                // The client sends nothing past its request before the 101.
                assert!(handshake.leftover.is_none(), "bytes after the request");
                let mut ws = sockudo_ws::WebSocketStream::from_raw(
                    s,
                    sockudo_ws::Role::Server,
                    sockudo_ws::Config::default(),
                );
                bump(&counters.upgraded);
                let m = ws
                    .next()
                    .await
                    .expect("stream ended")
                    .expect("sockudo-ws read");
                done(&counters, m.as_text() == Some("hello"), &name);
            });
        }
        "yawc" => {
            tokio::task::spawn_local(async move {
                bump(&counters.started);
                let mut ws = hyper_accept(s, |req| {
                    let options = crate::libs::yawc_plain_options();
                    yawc::WebSocket::upgrade_with_options(req, options).expect("yawc upgrade")
                })
                .await
                .expect("yawc upgraded");
                bump(&counters.upgraded);
                let f = ws.next_frame().await.expect("yawc read");
                done(
                    &counters,
                    f.opcode() == yawc::OpCode::Text && &f.payload()[..] == HELLO,
                    &name,
                );
            });
        }
        other => crate::fail(other, "unknown handshake library"),
    }
}

/// Polls the runtime until `counter` reaches `target`, for at most a
/// minute.
async fn wait_for(counter: &Rc<Cell<usize>>, target: usize, what: &str) {
    let start = Instant::now();
    while counter.get() < target {
        if start.elapsed() > Duration::from_secs(60) {
            crate::fail(
                "handshake",
                &format!("only {} of {target} connections {what}", counter.get()),
            );
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// The child process: prints `HANDSHAKE <rss> <heap> <rss after> <heap
/// after> <n>` and exits.
pub(crate) fn child_main(lib: &str, n: usize) {
    let listener = crate::idle::child_listener(lib, n + WARM);
    let addr = listener.local_addr().expect("listener address");
    let (cmd_tx, cmd_rx) = mpsc::channel();
    let (ack_tx, ack_rx) = mpsc::channel();
    let client_lib = lib.to_string();
    let client =
        std::thread::spawn(move || client_thread(client_lib, addr, n + WARM, cmd_rx, ack_tx));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let local = tokio::task::LocalSet::new();
    let lib = lib.to_string();
    local.block_on(&rt, async move {
        let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
        let counters = Counters::default();
        // The floor's 101, shared: a bare socket task holds no copy.
        let resp: Rc<str> = upgrade::response().into();
        let ack = || {
            ack_rx
                .recv_timeout(Duration::from_secs(60))
                .expect("client thread stalled")
        };
        let send = |cmd: Cmd| cmd_tx.send(cmd).expect("client thread gone");
        // Accepts `k` connections, each half sent, and waits until every
        // task has read what arrived of its request.
        let open = |k: usize| {
            let (listener, lib, counters, resp) = (&listener, &lib, &counters, &resp);
            let target = counters.started.get() + k;
            send(Cmd::Connect(k));
            async move {
                for _ in 0..k {
                    let (s, _) = listener.accept().await.expect("accept");
                    s.set_nodelay(true).expect("TCP_NODELAY");
                    serve(lib, s, counters.clone(), resp);
                }
                wait_for(&counters.started, target, "started").await;
                // Every first part was written before its connection was
                // accepted, so one round of polls reads it; settle anyway.
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        };

        // Warm up every code path once, then close those connections.
        open(WARM).await;
        ack();
        send(Cmd::Finish);
        wait_for(&counters.upgraded, WARM, "upgraded").await;
        ack();
        send(Cmd::Hello);
        ack();
        wait_for(&counters.got, WARM, "got their message").await;
        send(Cmd::Close);
        ack();
        tokio::time::sleep(Duration::from_millis(100)).await;

        let (rss0, heap0) = (sys::rss_bytes() as i64, alloc::live_bytes() as i64);
        open(n).await;
        ack();
        let (rss1, heap1) = (sys::rss_bytes() as i64, alloc::live_bytes() as i64);

        // The client reads the answers while the tasks write them.
        send(Cmd::Finish);
        wait_for(&counters.upgraded, WARM + n, "upgraded").await;
        ack();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (rss2, heap2) = (sys::rss_bytes() as i64, alloc::live_bytes() as i64);

        send(Cmd::Hello);
        ack();
        wait_for(&counters.got, WARM + n, "got their message").await;
        send(Cmd::Exit);
        println!(
            "HANDSHAKE {} {} {} {} {n}",
            rss1 - rss0,
            heap1 - heap0,
            rss2 - rss0,
            heap2 - heap0
        );
    });
    client.join().expect("client thread panicked");
}
