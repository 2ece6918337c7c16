//! Scenario 4: memory held by idle connections.
//!
//! Each library runs in its own child process (this binary re-executed with
//! the hidden `__idle LIB N` subcommand) so allocator state and RSS from one
//! library cannot pollute another's. In the child, a client thread opens
//! connections to a 127.0.0.1 listener with blocking std sockets and does the
//! client half of the neutral handshake (no heap use); the main thread runs a
//! current-thread tokio runtime that accepts, answers the handshake, and
//! spawns one task per connection that wraps the upgraded socket in the
//! library (default configuration) and parks in its read call. The "floor"
//! parks a bare tokio `TcpStream` in a task the same way.
//!
//! After a warm-up of 64 connections that are used and closed, the child
//! reads RSS (`/proc/self/statm`) and live heap bytes (counting global
//! allocator), opens N connections, waits until every task has parked, reads
//! both again, and reports the deltas. It then sends one masked text frame
//! on every connection and checks that every task received it, so each
//! parked connection was real and working.

use std::io::Write;
use std::net::TcpStream;
use std::process::Command;
use std::rc::Rc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tokio::io::AsyncReadExt;

use crate::{alloc, frames, sys, upgrade};

/// The libraries (and the floor) measured, as passed to the child.
pub(crate) const LIBS: [&str; 7] = [
    "floor",
    "tokio-lockgate",
    "tokio-tungstenite",
    "fastwebsockets",
    "tokio-websockets",
    "sockudo-ws",
    "yawc",
];

const WARM: usize = 64;
const HELLO: &[u8] = b"hello";

/// What one child measured.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IdleRun {
    /// RSS growth per connection, bytes.
    pub(crate) rss: f64,
    /// Live-heap growth per connection, bytes.
    pub(crate) heap: f64,
}

/// Runs the idle scenario for `lib` with `n` connections in a child process.
pub(crate) fn run(lib: &str, n: usize) -> IdleRun {
    run_child(lib, n, &["__idle", lib, &n.to_string()], &[])
}

/// Runs this binary with `args` as an idle-memory child for `lib` and reads
/// back its `IDLE <rss delta> <heap delta> <n>` line.
/// `env` is set in the child's environment (an allocator setting).
pub(crate) fn run_child(lib: &str, n: usize, args: &[&str], env: &[(&str, &str)]) -> IdleRun {
    let f = child_result(lib, n, args, env, "IDLE", 3);
    IdleRun {
        rss: f[0] / f[2],
        heap: f[1] / f[2],
    }
}

/// Runs this binary with `args` as a memory child for `lib` and reads back
/// its `<TAG> <numbers…>` line: `count` numbers, the last of them `n` (the
/// connections measured). A child that failed, or a line that is missing
/// or malformed, fails the run.
pub(crate) fn child_result(
    lib: &str,
    n: usize,
    args: &[&str],
    env: &[(&str, &str)],
    tag: &str,
    count: usize,
) -> Vec<f64> {
    let exe = std::env::current_exe().expect("own executable");
    let out = Command::new(exe)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("spawn memory child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        crate::fail(
            lib,
            &format!(
                "{tag} child failed ({}): {}{}",
                out.status,
                stdout,
                String::from_utf8_lossy(&out.stderr)
            ),
        );
    }
    let prefix = format!("{tag} ");
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .unwrap_or_else(|| crate::fail(lib, &format!("{tag} child printed no result: {stdout}")));
    let f: Vec<f64> = line
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    if f.len() != count || f[count - 1] as usize != n {
        crate::fail(lib, &format!("bad {tag} result line: {line}"));
    }
    f
}

enum Cmd {
    Connect(usize),
    Hello,
    Close,
    Exit,
}

fn client_thread(
    addr: std::net::SocketAddr,
    cap: usize,
    rx: mpsc::Receiver<Cmd>,
    done: mpsc::Sender<()>,
) {
    let (req, resp) = (upgrade::request(), upgrade::response());
    let mut hello = Vec::with_capacity(32);
    frames::encode(
        &mut hello,
        frames::OP_TEXT,
        HELLO,
        Some(frames::mask_for(7)),
    );
    let mut conns: Vec<TcpStream> = Vec::with_capacity(cap);
    while let Ok(cmd) = rx.recv() {
        match cmd {
            Cmd::Connect(k) => {
                for _ in 0..k {
                    let mut c = TcpStream::connect(addr).expect("idle connect");
                    c.set_nodelay(true).expect("TCP_NODELAY");
                    upgrade::client_sync(&mut c, &req, &resp);
                    conns.push(c);
                }
            }
            Cmd::Hello => {
                for c in &mut conns {
                    c.write_all(&hello).expect("idle hello");
                }
            }
            Cmd::Close => conns.clear(),
            Cmd::Exit => return,
        }
        done.send(()).expect("main thread gone");
    }
}

type Counter = Rc<std::cell::Cell<usize>>;

/// Parks one upgraded connection in a task, as `lib` would hold it.
fn park(lib: &str, s: tokio::net::TcpStream, parked: Counter, got: Counter) {
    fn done(got: &Counter, ok: bool, lib: &str) {
        if !ok {
            crate::fail(lib, "idle connection received the wrong message");
        }
        got.set(got.get() + 1);
    }
    let lib_name = lib.to_string();
    match lib {
        "floor" => {
            tokio::task::spawn_local(async move {
                let mut s = s;
                parked.set(parked.get() + 1);
                let mut b = [0u8; 16];
                let n = s.read(&mut b).await.expect("floor read");
                done(&got, n > 0, &lib_name);
            });
        }
        "tokio-lockgate" => {
            tokio::task::spawn_local(async move {
                let mut ws = tokio_lockgate::WebSocketStream::from_context(
                    s,
                    tokio_lockgate::WebSocketContext::new(
                        lockgate::Role::Server,
                        lockgate::Config::default(),
                    ),
                );
                parked.set(parked.get() + 1);
                let m = ws.read().await.expect("tokio-lockgate read");
                done(&got, m.as_text() == Some("hello"), &lib_name);
            });
        }
        "tokio-tungstenite" => {
            tokio::task::spawn_local(async move {
                let mut ws = tokio_tungstenite::WebSocketStream::from_raw_socket(
                    s,
                    tungstenite::protocol::Role::Server,
                    None,
                )
                .await;
                parked.set(parked.get() + 1);
                let m = ws
                    .next()
                    .await
                    .expect("stream ended")
                    .expect("tokio-tungstenite read");
                done(&got, m.to_text().ok() == Some("hello"), &lib_name);
            });
        }
        "fastwebsockets" => {
            tokio::task::spawn_local(async move {
                let mut ws = fastwebsockets::FragmentCollector::new(
                    fastwebsockets::WebSocket::after_handshake(s, fastwebsockets::Role::Server),
                );
                parked.set(parked.get() + 1);
                let f = ws.read_frame().await.expect("fastwebsockets read");
                done(&got, &f.payload[..] == HELLO, &lib_name);
            });
        }
        "tokio-websockets" => {
            tokio::task::spawn_local(async move {
                let mut ws = tokio_websockets::ServerBuilder::new().serve(s);
                parked.set(parked.get() + 1);
                let m = ws
                    .next()
                    .await
                    .expect("stream ended")
                    .expect("tokio-websockets read");
                done(&got, m.as_text() == Some("hello"), &lib_name);
            });
        }
        "sockudo-ws" => {
            tokio::task::spawn_local(async move {
                let mut ws = sockudo_ws::WebSocketStream::from_raw(
                    s,
                    sockudo_ws::Role::Server,
                    sockudo_ws::Config::default(),
                );
                parked.set(parked.get() + 1);
                let m = ws
                    .next()
                    .await
                    .expect("stream ended")
                    .expect("sockudo-ws read");
                done(&got, m.as_text() == Some("hello"), &lib_name);
            });
        }
        "yawc" => {
            tokio::task::spawn_local(async move {
                let mut ws = yawc::WebSocket::from_stream(
                    s,
                    yawc::Role::Server,
                    crate::libs::yawc_plain_options(),
                )
                .expect("yawc from_stream");
                parked.set(parked.get() + 1);
                let f = ws.next_frame().await.expect("yawc read");
                done(
                    &got,
                    f.opcode() == yawc::OpCode::Text && &f.payload()[..] == HELLO,
                    &lib_name,
                );
            });
        }
        other => crate::fail(other, "unknown idle library"),
    }
}

/// What every memory child starts with: the counting allocator on, an
/// open-file limit checked to hold `conns` connections (both of their
/// ends, and a margin), and a non-blocking listener on 127.0.0.1.
pub(crate) fn child_listener(lib: &str, conns: usize) -> std::net::TcpListener {
    alloc::enable();
    let limit = sys::raise_nofile();
    let need = 2 * conns + 64;
    if limit < need as u64 {
        crate::fail(lib, &format!("open-file limit {limit} < {need} needed"));
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    listener.set_nonblocking(true).expect("set_nonblocking");
    listener
}

/// The child process: prints `IDLE <rss delta> <heap delta> <n>` and exits.
pub(crate) fn child_main(lib: &str, n: usize) {
    let listener = child_listener(lib, n + WARM);
    let addr = listener.local_addr().expect("listener address");
    let (cmd_tx, cmd_rx) = mpsc::channel();
    let (ack_tx, ack_rx) = mpsc::channel();
    let client = std::thread::spawn(move || client_thread(addr, n + WARM, cmd_rx, ack_tx));
    let resp = upgrade::response();
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
            let (listener, resp, lib) = (&listener, &resp, &lib);
            let (parked, got) = (parked.clone(), got.clone());
            let cmd_tx = cmd_tx.clone();
            async move {
                let target = parked.get() + k;
                cmd_tx.send(Cmd::Connect(k)).expect("client thread gone");
                for _ in 0..k {
                    let (mut s, _) = listener.accept().await.expect("accept");
                    s.set_nodelay(true).expect("TCP_NODELAY");
                    upgrade::server_async(&mut s, resp).await;
                    park(lib, s, parked.clone(), got.clone());
                }
                while parked.get() < target {
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
                            "idle",
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

        // Warm up every code path once, then close those connections.
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
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (rss1, heap1) = (sys::rss_bytes(), alloc::live_bytes());

        cmd_tx.send(Cmd::Hello).expect("client thread gone");
        ack();
        wait_got(WARM + n).await;
        cmd_tx.send(Cmd::Exit).expect("client thread gone");
        println!(
            "IDLE {} {} {n}",
            rss1 as i64 - rss0 as i64,
            heap1 as i64 - heap0 as i64
        );
    });
    client.join().expect("client thread panicked");
}
