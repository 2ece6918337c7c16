//! The load process (`__scale_load …`): the same raw-socket client for
//! every library. It spawns the server child, drives it over 127.0.0.1 on a
//! current-thread tokio runtime, measures, prints one `SCALE key=value …`
//! line and ends the server.
//!
//! Frames are built with [`crate::frames::encode`] (masked, a different key
//! per message) and the server's frames are checked byte for byte: every
//! server frame must be a final, unmasked binary frame of 64 bytes, so each
//! is exactly [`SRV_FRAME`] bytes on the wire.
//!
//! Echo runs:
//! 1. 64 warm-up connections are opened, each echoes one message, and they
//!    are closed; the server's RSS is read once it serves none.
//! 2. `connections` are opened (the neutral handshake, TCP_NODELAY, at
//!    most [`CONNECTING`] at a time) and the server's RSS read again once
//!    it serves all of them: "parked" RSS per connection.
//! 3. `busy` of them, spread evenly, each run a loop: a burst of `burst`
//!    messages written with one `write_all`, then every echo read and
//!    checked (the exact bytes sent, in order) before the next burst. Each
//!    payload carries its sequence number, the send time (ns since the
//!    load process's clock base) and the connection's number. After a
//!    warm-up of `warm`, the server's CPU time is read and a window of
//!    `window` starts: echoes received in it are counted (messages per
//!    second, CPU per message), and every message sent in it has its round
//!    trip (send time to the read that completed its echo) recorded in a
//!    histogram. Then every loop finishes its burst and stops.
//! 4. Every one of the connections, busy or idle, sends one more message and
//!    must get it back exactly; the server's RSS is read a last time.
//!
//! Fan-out runs: `connections` subscribers connect; once the server serves
//! all of them the load process reads the server's CPU time, says `go`, and
//! each connection reads and checks every message ([`fanout::payload`],
//! in order) until it has all `messages`. Deliveries per second run from
//! `go` to the last delivery.

use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::{JoinSet, LocalSet};

use super::control::{self, Server};
use super::fanout::{self, SIZE};
use super::hist::Hist;
use crate::{frames, sys, upgrade};

/// A server frame on the wire: 2 header bytes and a 64-byte payload.
const SRV_FRAME: usize = 2 + SIZE;
/// A client frame on the wire: header, masking key, payload.
const CLI_FRAME: usize = 2 + 4 + SIZE;
/// Warm-up connections before the first RSS reading.
const WARM_CONNECTIONS: usize = 64;
/// Connections being opened at once.
const CONNECTING: usize = 64;
/// The longest any single wait (connect, read, write) may take.
const WAIT: Duration = Duration::from_secs(30);
/// The longest a whole load process may run.
const WATCHDOG: Duration = Duration::from_secs(600);

/// The load process's entry point: `echo LIB FORM N BUSY BURST WARM_MS
/// WINDOW_MS` or `fanout LIB FORM N MESSAGES BURST`.
pub(super) fn main(args: &[String]) {
    let bad = || -> ! { crate::fail("scale load", &format!("bad arguments {args:?}")) };
    let num = |i: usize| -> usize {
        args.get(i)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| bad())
    };
    let (mode, lib, form) = match args {
        [mode, lib, form, ..] => (mode.clone(), lib.clone(), form.clone()),
        _ => bad(),
    };
    let limit = sys::raise_nofile();
    let need = num(3) + WARM_CONNECTIONS + 64;
    if limit < need as u64 {
        crate::fail(&lib, &format!("open-file limit {limit} < {need} needed"));
    }
    std::thread::spawn(move || {
        std::thread::sleep(WATCHDOG);
        crate::fail("scale load", "watchdog: the run took too long");
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let out = LocalSet::new().block_on(&rt, async {
        let server_args = |extra: &[usize]| -> Vec<String> {
            let mut v: Vec<String> = ["__scale_server", &mode, &lib, &form]
                .iter()
                .map(|s| s.to_string())
                .collect();
            v.extend(extra.iter().map(usize::to_string));
            v
        };
        match mode.as_str() {
            "echo" => {
                let shape = Echo {
                    connections: num(3),
                    busy: num(4),
                    burst: num(5),
                    warm: Duration::from_millis(num(6) as u64),
                    window: Duration::from_millis(num(7) as u64),
                };
                let server = Server::spawn(&lib, &server_args(&[])).await;
                echo(&lib, server, shape).await
            }
            "fanout" => {
                let (n, messages) = (num(3), num(4));
                let server = Server::spawn(&lib, &server_args(&[messages, num(5)])).await;
                fan_out(&lib, server, n, messages).await
            }
            _ => bad(),
        }
    });
    let line: Vec<String> = out.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!("SCALE {}", line.join(" "));
}

/// The shape of an echo run.
#[derive(Debug, Clone, Copy)]
struct Echo {
    connections: usize,
    busy: usize,
    burst: usize,
    warm: Duration,
    window: Duration,
}

/// What a load process reports: `(key, value)`.
type Out = Vec<(&'static str, f64)>;

/// One echo run against `server`.
async fn echo(lib: &str, mut server: Server, shape: Echo) -> Out {
    let addr = SocketAddr::from(([127, 0, 0, 1], server.port));
    let mut warm = connect(lib, addr, WARM_CONNECTIONS).await;
    server.wait_live(WARM_CONNECTIONS, WAIT).await;
    hello_all(lib, &mut warm, 0).await;
    drop(warm);
    server.wait_live(0, WAIT).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let rss0 = server.rss().await;

    let n = shape.connections;
    let mut conns = connect(lib, addr, n).await;
    server.wait_live(n, WAIT).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let rss1 = server.rss().await;

    let meter = Rc::new(Meter::new());
    let mut busy = JoinSet::new();
    let step = (n / shape.busy.max(1)).max(1);
    for conn in (0..n).step_by(step).take(shape.busy) {
        let s = conns[conn].take().expect("connection");
        let (lib, meter) = (lib.to_string(), Rc::clone(&meter));
        busy.spawn_local(async move { (conn, bursts(&lib, conn, s, &meter, shape.burst).await) });
    }
    tokio::time::sleep(shape.warm).await;
    let cpu0 = server.cpu().await;
    let load0 = control::process_cpu();
    meter.t0.set(meter.now());
    tokio::time::sleep(shape.window).await;
    let t1 = meter.now();
    meter.t1.set(t1);
    let cpu1 = server.cpu().await;
    let load1 = control::process_cpu();
    meter.stop.set(true);
    let secs = Duration::from_nanos(t1 - meter.t0.get()).as_secs_f64();
    while let Some(done) = tokio::time::timeout(WAIT, busy.join_next())
        .await
        .unwrap_or_else(|_| crate::fail(lib, "a busy connection stalled"))
    {
        let (conn, s) = done.unwrap_or_else(|e| crate::fail(lib, &format!("busy task: {e}")));
        conns[conn] = Some(s);
    }

    hello_all(lib, &mut conns, 1).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let rss2 = server.rss().await;
    server.end().await;
    drop(conns);

    let counted = meter.counted.get();
    let hist = meter.hist.borrow();
    if counted == 0 || hist.total() == 0 {
        crate::fail(lib, "no echo in the measured window");
    }
    let ns = |d: Duration| d.as_nanos() as f64;
    vec![
        ("n", n as f64),
        ("secs", secs),
        ("msgs", counted as f64),
        ("timed", hist.total() as f64),
        ("cpu_ns", ns(cpu1 - cpu0)),
        ("load_cpu_ns", ns(load1 - load0)),
        ("p50_ns", hist.quantile(0.50) as f64),
        ("p99_ns", hist.quantile(0.99) as f64),
        ("p999_ns", hist.quantile(0.999) as f64),
        ("rss0", rss0 as f64),
        ("rss1", rss1 as f64),
        ("rss2", rss2 as f64),
    ]
}

/// The clock, the measured window and what was seen in it; shared by the
/// busy loops on this one thread.
struct Meter {
    base: Instant,
    /// Window start, ns since `base` (`u64::MAX` until it starts).
    t0: Cell<u64>,
    /// Window end (`u64::MAX` until it ends).
    t1: Cell<u64>,
    /// Set once the window ended: finish the burst and stop.
    stop: Cell<bool>,
    /// Echoes received in the window.
    counted: Cell<u64>,
    /// Round trips of the messages sent in the window.
    hist: RefCell<Hist>,
}

impl Meter {
    fn new() -> Self {
        Self {
            base: Instant::now(),
            t0: Cell::new(u64::MAX),
            t1: Cell::new(u64::MAX),
            stop: Cell::new(false),
            counted: Cell::new(0),
            hist: RefCell::new(Hist::new()),
        }
    }

    fn now(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64
    }

    /// An echo of a message sent at `sent` arrived at `now`.
    fn record(&self, sent: u64, now: u64) {
        let (t0, t1) = (self.t0.get(), self.t1.get());
        if now >= t0 && now <= t1 {
            self.counted.set(self.counted.get() + 1);
        }
        if sent >= t0 && sent < t1 {
            self.hist.borrow_mut().record(now - sent);
        }
    }
}

/// The payload of message `seq` of connection `conn`, sent at `sent`.
fn echo_payload(conn: usize, seq: u64, sent: u64) -> [u8; SIZE] {
    let mut p = [0u8; SIZE];
    p[..8].copy_from_slice(&seq.to_le_bytes());
    p[8..16].copy_from_slice(&sent.to_le_bytes());
    p[16..20].copy_from_slice(&(conn as u32).to_le_bytes());
    for (i, b) in p[20..].iter_mut().enumerate() {
        *b = (seq as u8) ^ (conn as u8).rotate_left(3) ^ (i as u8);
    }
    p
}

/// Checks one server frame against the payload expected.
fn check(lib: &str, conn: usize, frame: &[u8], expected: &[u8; SIZE]) {
    if frame[0] != 0x80 | frames::OP_BINARY || usize::from(frame[1]) != SIZE {
        crate::fail(
            lib,
            &format!(
                "connection {conn}: frame header {:02x} {:02x}, expected a final unmasked 64-byte binary",
                frame[0], frame[1]
            ),
        );
    }
    if frame[2..] != expected[..] {
        crate::fail(
            lib,
            &format!(
                "connection {conn}: message {} came back as {:?}",
                u64::from_le_bytes(expected[..8].try_into().expect("8 bytes")),
                &frame[2..]
            ),
        );
    }
}

/// Reads into `buf` (at most its spare capacity), failing on a stall or end.
async fn read_some(lib: &str, conn: usize, s: &mut TcpStream, buf: &mut Vec<u8>) {
    match tokio::time::timeout(WAIT, s.read_buf(buf)).await {
        Ok(Ok(0)) => crate::fail(lib, &format!("connection {conn} closed by the server")),
        Ok(Ok(_)) => {}
        Ok(Err(e)) => crate::fail(lib, &format!("connection {conn}: read: {e}")),
        Err(_) => crate::fail(lib, &format!("connection {conn}: no echo within {WAIT:?}")),
    }
}

/// Writes all of `bytes`, failing on a stall or error.
async fn write_all(lib: &str, conn: usize, s: &mut TcpStream, bytes: &[u8]) {
    match tokio::time::timeout(WAIT, s.write_all(bytes)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => crate::fail(lib, &format!("connection {conn}: write: {e}")),
        Err(_) => crate::fail(lib, &format!("connection {conn}: write stalled")),
    }
}

/// One busy connection: bursts until the meter says stop.
async fn bursts(lib: &str, conn: usize, mut s: TcpStream, m: &Meter, burst: usize) -> TcpStream {
    let mut out = Vec::with_capacity(burst * CLI_FRAME);
    let mut sent = vec![[0u8; SIZE]; burst];
    let mut inbuf = Vec::with_capacity((burst + 1) * SRV_FRAME);
    let mut seq = 0u64;
    while !m.stop.get() {
        let at = m.now();
        out.clear();
        for (k, p) in sent.iter_mut().enumerate() {
            let i = seq + k as u64;
            *p = echo_payload(conn, i, at);
            frames::encode(
                &mut out,
                frames::OP_BINARY,
                p,
                Some(frames::mask_for(i as usize)),
            );
        }
        write_all(lib, conn, &mut s, &out).await;
        let mut got = 0;
        while got < burst {
            read_some(lib, conn, &mut s, &mut inbuf).await;
            let now = m.now();
            let whole = inbuf.len() / SRV_FRAME * SRV_FRAME;
            for frame in inbuf[..whole].chunks_exact(SRV_FRAME) {
                if got == burst {
                    crate::fail(
                        lib,
                        &format!("connection {conn}: more echoes than messages"),
                    );
                }
                check(lib, conn, frame, &sent[got]);
                m.record(at, now);
                got += 1;
            }
            inbuf.drain(..whole);
        }
        seq += burst as u64;
    }
    if !inbuf.is_empty() {
        crate::fail(
            lib,
            &format!("connection {conn}: bytes after the last echo"),
        );
    }
    s
}

/// Every connection sends one message (tagged `round`) and must get it
/// back exactly, all at once.
async fn hello_all(lib: &str, conns: &mut [Option<TcpStream>], round: u64) {
    let mut set = JoinSet::new();
    for (conn, slot) in conns.iter_mut().enumerate() {
        let mut s = slot.take().expect("connection");
        let lib = lib.to_string();
        set.spawn_local(async move {
            let p = echo_payload(conn, u64::MAX - round, 0);
            let mut out = Vec::with_capacity(CLI_FRAME);
            frames::encode(
                &mut out,
                frames::OP_BINARY,
                &p,
                Some(frames::mask_for(conn)),
            );
            write_all(&lib, conn, &mut s, &out).await;
            let mut inbuf = Vec::with_capacity(2 * SRV_FRAME);
            while inbuf.len() < SRV_FRAME {
                read_some(&lib, conn, &mut s, &mut inbuf).await;
            }
            if inbuf.len() != SRV_FRAME {
                crate::fail(&lib, &format!("connection {conn}: more than one echo"));
            }
            check(&lib, conn, &inbuf, &p);
            (conn, s)
        });
    }
    while let Some(done) = set.join_next().await {
        let (conn, s) = done.unwrap_or_else(|e| crate::fail(lib, &format!("hello task: {e}")));
        conns[conn] = Some(s);
    }
}

/// Opens `n` upgraded connections, at most [`CONNECTING`] at a time.
async fn connect(lib: &str, addr: SocketAddr, n: usize) -> Vec<Option<TcpStream>> {
    let mut conns: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();
    let (req, resp): (Rc<str>, Rc<str>) = (upgrade::request().into(), upgrade::response().into());
    let mut set = JoinSet::new();
    let mut next = 0;
    loop {
        while next < n && set.len() < CONNECTING {
            let (conn, req, resp) = (next, Rc::clone(&req), Rc::clone(&resp));
            set.spawn_local(async move {
                let s = tokio::time::timeout(WAIT, connect_one(addr, &req, &resp)).await;
                (conn, s)
            });
            next += 1;
        }
        match set.join_next().await {
            Some(Ok((conn, Ok(Ok(s))))) => conns[conn] = Some(s),
            Some(Ok((conn, Ok(Err(e))))) => {
                crate::fail(lib, &format!("connection {conn}: connect: {e}"))
            }
            Some(Ok((conn, Err(_)))) => {
                crate::fail(lib, &format!("connection {conn}: connect stalled"))
            }
            Some(Err(e)) => crate::fail(lib, &format!("connect task: {e}")),
            None => return conns,
        }
    }
}

/// One connection and the client half of the neutral handshake.
async fn connect_one(addr: SocketAddr, req: &str, resp: &str) -> std::io::Result<TcpStream> {
    let mut s = TcpStream::connect(addr).await?;
    s.set_nodelay(true)?;
    s.write_all(req.as_bytes()).await?;
    let mut buf = [0u8; 512];
    let n = upgrade::read_head_async(&mut s, &mut buf).await;
    upgrade::check_response(&buf[..n], resp);
    Ok(s)
}

/// One fan-out run against `server`.
async fn fan_out(lib: &str, mut server: Server, n: usize, messages: usize) -> Out {
    let addr = SocketAddr::from(([127, 0, 0, 1], server.port));
    let conns = connect(lib, addr, n).await;
    server.wait_live(n, WAIT).await;
    let mut readers = JoinSet::new();
    for (conn, s) in conns.into_iter().enumerate() {
        let s = s.expect("connection");
        let lib = lib.to_string();
        readers.spawn_local(async move { receive(&lib, conn, s, messages).await });
    }
    let cpu0 = server.cpu().await;
    let load0 = control::process_cpu();
    let go = Instant::now();
    server.ask("go", "GO").await;
    let mut last = go;
    let mut sockets = Vec::with_capacity(n);
    while let Some(done) = tokio::time::timeout(WAIT * 4, readers.join_next())
        .await
        .unwrap_or_else(|_| crate::fail(lib, "fan-out: deliveries stalled"))
    {
        let (at, s) = done.unwrap_or_else(|e| crate::fail(lib, &format!("reader task: {e}")));
        last = last.max(at);
        sockets.push(s);
    }
    let cpu1 = server.cpu().await;
    let load1 = control::process_cpu();
    server.end().await;
    drop(sockets);
    let ns = |d: Duration| d.as_nanos() as f64;
    vec![
        ("n", n as f64),
        ("deliveries", (n * messages) as f64),
        ("secs", (last - go).as_secs_f64()),
        ("cpu_ns", ns(cpu1 - cpu0)),
        ("load_cpu_ns", ns(load1 - load0)),
    ]
}

/// One subscriber: reads and checks every message, in order; returns when
/// the last arrived.
async fn receive(
    lib: &str,
    conn: usize,
    mut s: TcpStream,
    messages: usize,
) -> (Instant, TcpStream) {
    let mut buf = Vec::with_capacity(64 * SRV_FRAME);
    let mut next = 0;
    while next < messages {
        read_some(lib, conn, &mut s, &mut buf).await;
        let whole = buf.len() / SRV_FRAME * SRV_FRAME;
        for frame in buf[..whole].chunks_exact(SRV_FRAME) {
            if next == messages {
                crate::fail(
                    lib,
                    &format!("connection {conn}: more messages than published"),
                );
            }
            check(lib, conn, frame, &fanout::payload(next));
            next += 1;
        }
        buf.drain(..whole);
    }
    if !buf.is_empty() {
        crate::fail(
            lib,
            &format!("connection {conn}: bytes after the last message"),
        );
    }
    (Instant::now(), s)
}
