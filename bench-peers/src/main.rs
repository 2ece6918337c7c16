//! Side-by-side comparison of lockgate / tokio-lockgate with tungstenite,
//! tokio-tungstenite, fastwebsockets, tokio-websockets, sockudo-ws and yawc.
//!
//! ```text
//! cargo run --release -p bench-peers -- [--quick] [--only write,read,tcp,idle,handshake,deflate,fanout,duplex,scale] [--reps N] [--pin] [--out PATH] [--svg DIR]
//! ```
//!
//! `--out PATH` writes the markdown report to PATH as well as stdout.
//! `--svg DIR` draws each scenario of the tables as a horizontal bar chart,
//! one SVG file per scenario in DIR (created if missing), named after the
//! scenario without its counts so that reruns overwrite the same files,
//! and the report embeds them by a path relative to PATH's directory
//! (`report/chart.rs`).
//!
//! Scenarios (see BENCHMARKS.md for what each measures and how its output is
//! verified):
//! - `write`: 100k small texts written then flushed once into an in-memory
//!   sink whose write costs ~80 ns and flush ~8 µs; server and client role.
//!   The floor column copies each text into the sink's buffer and frees
//!   it, nothing else.
//!   (sockudo-ws and yawc cannot hold more than 64 KiB / 8 KiB unflushed:
//!   their Sink readiness writes and flushes the sink past that.)
//! - `read`: 100k masked small texts, and 64 × 1 MiB masked binaries, read
//!   from memory as a server. yawc sits out the small texts: by default it
//!   does not validate UTF-8, which every other library does there. The
//!   floor column is the mock's copy alone: what any reader pays.
//! - `tcp`: loopback TCP with the same library on both ends: one-way batched,
//!   one-way send+flush each, echo in windows of 64, ping-pong, 100 × 1 MiB;
//!   plus the write calls per message on the sending end, and a raw-TCP row.
//! - `idle`: RSS and heap per parked, upgraded server connection, one child
//!   process per library, against bare tokio sockets parked in tasks.
//! - `handshake`: RSS and heap per server connection whose client sent
//!   half its upgrade request and stalled (3,000 connections, 500 with
//!   `--quick`), each library doing its own server handshake in the task
//!   that accepted the connection; and again once the rest arrived and
//!   the connections are upgraded and parked in those tasks
//!   (`handshake_mem.rs`).
//! - `deflate`: permessage-deflate, negotiated by each library's own
//!   handshake code: one-way loopback TCP of 1 KiB and 64 KiB JSON-like
//!   texts, with and without context takeover, lockgate and tokio-lockgate
//!   against sockudo-ws and yawc; and RSS and heap per idle compressed
//!   connection after one message each way. Printed as a second table.
//!   sockudo-ws's HTTP/1 accept and connect never negotiate compression
//!   (only its axum extractor does), so its ends run its public handshake
//!   helpers (`build_request_with_headers`, `parse_request`,
//!   `negotiate_server_deflate`, `build_response`, `parse_response`) over
//!   the socket.
//! - `fanout`: one message at a time to 1,000 parked loopback connections,
//!   tokio-lockgate's hub against each async peer's natural way (a clone
//!   per connection through a bounded channel into its own sink):
//!   deliveries per second and server CPU per delivery.
//! - `duplex`: one loopback connection in full duplex through each async
//!   library's split API: on each end a reader task and a writer task on a
//!   2-worker multi-thread runtime, 1M × 64 B binaries each way (200k with
//!   `--quick`), a flush
//!   every 64; messages per second per direction, against a one-way
//!   (client → server) baseline over the same split halves, and the ratio.
//! - `scale`: each async library's idiomatic echo server (2-worker runtime,
//!   a task per connection, in a child process) under one raw-socket load
//!   client in another: 10,000 connections, 500 sending bursts (1,000 / 50
//!   with `--quick`); messages/s, round-trip p50/p99/p99.9, server CPU per
//!   message, RSS per connection; natural and batching forms; and fan-out
//!   to 10,000 subscribers. Printed as a table of its own (`scale/mod.rs`).
//!
//! Every peer uses its default configuration, except yawc's read limit
//! (see [`libs::YAWC_MAX_PAYLOAD`]) and the compression settings the
//! `deflate` scenarios need. sockudo-ws and yawc have no blocking API.
//!
//! Libraries are interleaved: every repetition runs each library once, in
//! an order rotated per repetition, after one untimed warm-up run each.
//! Every run's output is verified; a failure aborts with exit code 2.

mod alloc;
mod deflate;
mod deflate_idle;
mod duplex;
mod fanout;
mod frames;
mod handshake_mem;
mod idle;
mod json;
mod libs;
mod mem;
#[cfg(feature = "metrics")]
mod observe;
mod report;
mod scale;
mod streams;
mod sys;
mod tcp;
mod upgrade;

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use report::{Better, Lib, Row};

#[global_allocator]
static GLOBAL: alloc::Counting = alloc::Counting;

/// Pinned peer versions (keep in sync with Cargo.toml).
const PEERS: &str = "tungstenite 0.30.0, tokio-tungstenite 0.30.0, fastwebsockets 0.10.0, \
                     tokio-websockets 0.13.3, sockudo-ws 3.1.0 (features tokio-runtime, fastrand, \
                     simd, permessage-deflate), yawc 0.5.0 (default features off: no TLS)";
/// The compression peers (keep in sync with Cargo.toml).
const DEFLATE_PEERS: &str = "sockudo-ws 3.1.0 (features tokio-runtime, fastrand, simd, \
                             permessage-deflate), yawc 0.5.0 (default features off: no TLS, \
                             no `zlib` feature)";

/// The cell of a library that sits out a row because it does not validate
/// UTF-8 by default.
const NO_UTF8: &str = "n/a (no UTF-8 check)";

/// Aborts the whole run: a library's output did not verify.
pub(crate) fn fail(lib: &str, msg: &str) -> ! {
    eprintln!("VERIFICATION FAILED [{lib}]: {msg}");
    std::process::exit(2)
}

/// What to run and how often.
struct Plan {
    quick: bool,
    groups: Vec<String>,
    out: Option<String>,
    /// Where `--svg` writes the charts.
    svg: Option<String>,
    reps_mem: usize,
    reps_tcp: usize,
    reps_idle: usize,
    write_n: usize,
    read_small_n: usize,
    read_big_n: usize,
    big_size: usize,
    tcp: tcp::Sizes,
    idle_n: usize,
    reps_deflate: usize,
    reps_deflate_idle: usize,
    deflate_jobs: Vec<deflate::Job>,
    deflate_idle_n: usize,
    reps_fanout: usize,
    fanout: fanout::Shape,
    reps_duplex: usize,
    /// Messages per direction in the `duplex` runs.
    duplex_n: usize,
    reps_scale: usize,
    scale: scale::Shape,
}

const GROUPS: [&str; 9] = [
    "write",
    "read",
    "tcp",
    "idle",
    "handshake",
    "deflate",
    "fanout",
    "duplex",
    "scale",
];

const USAGE: &str = "usage: bench-peers [--quick] [--only write,read,tcp,idle,handshake,deflate,fanout,duplex,scale] [--reps N] \
                     [--pin] [--out PATH] [--svg DIR]";

/// The compressed TCP jobs: `small` 1 KiB messages written then flushed
/// once, `big` 64 KiB messages sent one by one, each with and without
/// context takeover.
fn deflate_jobs(small: usize, big: usize) -> Vec<deflate::Job> {
    let mut v = Vec::new();
    for (size, count, flush_each) in [(1024, small, false), (64 * 1024, big, true)] {
        for takeover in [true, false] {
            v.push(deflate::Job {
                size,
                count,
                takeover,
                flush_each,
            });
        }
    }
    v
}

impl Plan {
    fn parse(args: &[String]) -> Self {
        let mut quick = false;
        let mut groups: Vec<String> = GROUPS.iter().map(|s| s.to_string()).collect();
        let mut out = None;
        let mut svg = None;
        let mut reps = None;
        let mut it = args.iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "--quick" => quick = true,
                "--pin" => sys::enable_pinning(),
                "--only" => {
                    let v = it.next().unwrap_or_else(|| usage());
                    groups = v.split(',').map(str::trim).map(String::from).collect();
                    if let Some(g) = groups.iter().find(|g| !GROUPS.contains(&g.as_str())) {
                        eprintln!("unknown scenario {g:?}; scenarios: {}", GROUPS.join(", "));
                        std::process::exit(1);
                    }
                }
                "--reps" => {
                    reps = Some(
                        it.next()
                            .and_then(|v| v.parse::<usize>().ok())
                            .filter(|&n| n > 0)
                            .unwrap_or_else(|| usage()),
                    );
                }
                "--out" => out = Some(it.next().unwrap_or_else(|| usage()).clone()),
                "--svg" => svg = Some(it.next().unwrap_or_else(|| usage()).clone()),
                "-h" | "--help" => {
                    println!("{USAGE}");
                    std::process::exit(0);
                }
                _ => usage(),
            }
        }
        let mut p = if quick {
            Plan {
                quick,
                groups,
                out,
                svg,
                reps_mem: 7,
                reps_tcp: 5,
                reps_idle: 1,
                write_n: 100_000,
                read_small_n: 100_000,
                read_big_n: 64,
                big_size: 1 << 20,
                tcp: tcp::Sizes {
                    batched: 100_000,
                    flush_each: 20_000,
                    echo: 16_384,
                    pingpong: 2_000,
                    big: 100,
                    big_size: 1 << 20,
                },
                idle_n: 5_000,
                reps_deflate: 3,
                reps_deflate_idle: 1,
                deflate_jobs: deflate_jobs(5_000, 100),
                deflate_idle_n: 200,
                reps_fanout: 3,
                fanout: fanout::Shape {
                    connections: 1_000,
                    messages: 1_000,
                    burst: 64,
                },
                reps_duplex: 3,
                duplex_n: 200_000,
                reps_scale: 2,
                scale: scale::Shape::QUICK,
            }
        } else {
            Plan {
                quick,
                groups,
                out,
                svg,
                reps_mem: 31,
                reps_tcp: 21,
                reps_idle: 5,
                write_n: 100_000,
                read_small_n: 100_000,
                read_big_n: 64,
                big_size: 1 << 20,
                tcp: tcp::Sizes {
                    // At 100k a run lasted 6 ms and spread 30-90 %.
                    batched: 1_000_000,
                    flush_each: 100_000,
                    echo: 65_536,
                    pingpong: 10_000,
                    big: 100,
                    big_size: 1 << 20,
                },
                idle_n: 5_000,
                reps_deflate: 11,
                reps_deflate_idle: 3,
                deflate_jobs: deflate_jobs(50_000, 1_000),
                deflate_idle_n: 500,
                reps_fanout: 7,
                fanout: fanout::Shape {
                    connections: 1_000,
                    messages: 2_000,
                    burst: 64,
                },
                reps_duplex: 11,
                duplex_n: 1_000_000,
                reps_scale: 3,
                scale: scale::Shape::FULL,
            }
        };
        if let Some(r) = reps {
            p.reps_mem = r;
            p.reps_tcp = r;
            p.reps_idle = r;
            p.reps_deflate = r;
            p.reps_deflate_idle = r;
            p.reps_fanout = r;
            p.reps_duplex = r;
            p.reps_scale = r;
        }
        p
    }

    fn runs(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}

fn usage() -> ! {
    eprintln!("{USAGE}");
    std::process::exit(1)
}

/// `libs` rotated left by `rep`, so no library always runs first or last.
fn order(libs: &[Lib], rep: usize) -> Vec<Lib> {
    let mut v = libs.to_vec();
    if !v.is_empty() {
        let k = rep % v.len();
        v.rotate_left(k);
    }
    v
}

/// Calls `f` once per library untimed (warm-up, `rep == None`), then
/// `reps` times per library round-robin.
fn interleave(label: &str, libs: &[Lib], reps: usize, mut f: impl FnMut(Lib, Option<usize>)) {
    for &l in libs {
        f(l, None);
    }
    for rep in 0..reps {
        eprint!("\r{label}: repetition {}/{reps}   ", rep + 1);
        for l in order(libs, rep) {
            f(l, Some(rep));
        }
    }
    eprintln!();
}

fn write_once(lib: Lib, texts: &[String], server: bool, buf: &mut Vec<u8>) -> mem::WriteRun {
    let n = lib.name();
    match lib {
        Lib::Lockgate => mem::write_sync::<libs::Lockgate>(n, texts, server, buf),
        Lib::Tungstenite => mem::write_sync::<libs::Tungstenite>(n, texts, server, buf),
        Lib::TokioLockgate => mem::write_async::<libs::TokioLockgate>(n, texts, server, buf),
        Lib::TokioTungstenite => mem::write_async::<libs::TokioTungstenite>(n, texts, server, buf),
        Lib::Fastwebsockets => mem::write_async::<libs::Fastwebsockets>(n, texts, server, buf),
        Lib::TokioWebsockets => mem::write_async::<libs::TokioWebsockets>(n, texts, server, buf),
        Lib::SockudoWs => mem::write_async::<libs::SockudoWs>(n, texts, server, buf),
        Lib::Yawc => mem::write_async::<libs::Yawc>(n, texts, server, buf),
        Lib::UringLockgate => fail(n, "the scale scenario only"),
        Lib::Raw => mem::WriteRun {
            elapsed: mem::write_floor(texts, buf),
            writes: 0,
            flushes: 0,
        },
    }
}

fn read_once(lib: Lib, input: &mem::ReadInput, full: bool) -> Duration {
    let n = lib.name();
    match lib {
        Lib::Lockgate => mem::read_sync::<libs::Lockgate>(n, input, full),
        Lib::Tungstenite => mem::read_sync::<libs::Tungstenite>(n, input, full),
        Lib::TokioLockgate => mem::read_async::<libs::TokioLockgate>(n, input, full),
        Lib::TokioTungstenite => mem::read_async::<libs::TokioTungstenite>(n, input, full),
        Lib::Fastwebsockets => mem::read_async::<libs::Fastwebsockets>(n, input, full),
        Lib::TokioWebsockets => mem::read_async::<libs::TokioWebsockets>(n, input, full),
        Lib::SockudoWs => mem::read_async::<libs::SockudoWs>(n, input, full),
        Lib::Yawc => mem::read_async::<libs::Yawc>(n, input, full),
        Lib::UringLockgate => fail(n, "the scale scenario only"),
        Lib::Raw => mem::read_floor(input),
    }
}

fn tcp_once(lib: Lib, job: tcp::Job, d: &tcp::TcpData, l: &TcpListener) -> tcp::TcpRun {
    let n = lib.name();
    match lib {
        Lib::Lockgate => tcp::run_sync::<libs::Lockgate>(n, job, d, l),
        Lib::Tungstenite => tcp::run_sync::<libs::Tungstenite>(n, job, d, l),
        Lib::TokioLockgate => tcp::run_async::<libs::TokioLockgate>(n, job, d, l),
        Lib::TokioTungstenite => tcp::run_async::<libs::TokioTungstenite>(n, job, d, l),
        Lib::Fastwebsockets => tcp::run_async::<libs::Fastwebsockets>(n, job, d, l),
        Lib::TokioWebsockets => tcp::run_async::<libs::TokioWebsockets>(n, job, d, l),
        Lib::SockudoWs => tcp::run_async::<libs::SockudoWs>(n, job, d, l),
        Lib::Yawc => tcp::run_async::<libs::Yawc>(n, job, d, l),
        Lib::UringLockgate => fail(n, "the scale scenario only"),
        Lib::Raw => tcp::run_raw(job, d, l),
    }
}

fn write_rows(p: &Plan) -> Vec<Row> {
    let texts = mem::small_texts(p.write_n);
    let mut buf = Vec::with_capacity(texts.iter().map(|t| t.len() + 14).sum());
    buf.resize(buf.capacity(), 1); // touch every page once, outside timing
    let k = p.write_n / 1000;
    let mut rows = Vec::new();
    for (role, server) in [("server", true), ("client", false)] {
        let mut t = Row::new(
            format!("write {k}k small texts + 1 flush, {role}"),
            "ns/msg",
            Better::Lower,
        );
        let mut w = Row::new(
            format!("… sink write calls, {role}"),
            "calls",
            Better::Lower,
        );
        let mut f = Row::new(
            format!("… sink flush calls, {role}"),
            "calls",
            Better::Lower,
        );
        interleave(
            &format!("write ({role})"),
            &Lib::WITH_FLOOR,
            p.reps_mem,
            |lib, rep| {
                let r = write_once(lib, &texts, server, &mut buf);
                if rep.is_some() {
                    t.push(lib, r.elapsed.as_nanos() as f64 / p.write_n as f64);
                    if lib != Lib::Raw {
                        w.push(lib, r.writes as f64);
                        f.push(lib, r.flushes as f64);
                    }
                }
            },
        );
        rows.extend([t, w, f]);
    }
    rows
}

fn read_rows(p: &Plan) -> Vec<Row> {
    let texts = mem::small_texts(p.read_small_n);
    let small = mem::ReadInput::texts(&texts);
    let big = mem::ReadInput::binaries(p.read_big_n, p.big_size);
    let k = p.read_small_n / 1000;
    let mut s = Row::new(
        format!("read {k}k masked small texts, server"),
        "ns/msg",
        Better::Lower,
    );
    // yawc does not validate UTF-8 by default: it would skip work every
    // other library does here.
    s.not_run(Lib::Yawc, NO_UTF8);
    let validating: Vec<Lib> = Lib::WITH_FLOOR
        .into_iter()
        .filter(|&l| l != Lib::Yawc)
        .collect();
    interleave("read small", &validating, p.reps_mem, |lib, rep| {
        let d = read_once(lib, &small, rep.is_none());
        if rep.is_some() {
            s.push(lib, d.as_nanos() as f64 / p.read_small_n as f64);
        }
    });
    let mib = p.big_size >> 20;
    let mut b = Row::new(
        format!("read {} × {mib} MiB masked binary, server", p.read_big_n),
        "GB/s",
        Better::Higher,
    );
    interleave("read 1 MiB", &Lib::WITH_FLOOR, p.reps_mem, |lib, rep| {
        let d = read_once(lib, &big, rep.is_none());
        if rep.is_some() {
            b.push(lib, big.payload_bytes as f64 / d.as_secs_f64() / 1e9);
        }
    });
    vec![s, b]
}

fn tcp_rows(p: &Plan) -> Vec<Row> {
    let d = tcp::TcpData::new(p.tcp);
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let s = p.tcp;
    let mut rows = Vec::new();
    for job in tcp::Job::ALL {
        let (name, unit, better) = match job {
            tcp::Job::Batched => (
                format!(
                    "TCP one-way {}k × 64 B, write all + 1 flush",
                    s.batched / 1000
                ),
                "M msg/s",
                Better::Higher,
            ),
            tcp::Job::FlushEach => (
                format!(
                    "TCP one-way {}k × 64 B, send+flush each",
                    s.flush_each / 1000
                ),
                "M msg/s",
                Better::Higher,
            ),
            tcp::Job::Echo => (
                format!(
                    "TCP echo {}k × 64 B, windows of {}",
                    s.echo / 1024,
                    tcp::WINDOW
                ),
                "M msg/s",
                Better::Higher,
            ),
            tcp::Job::PingPong => (
                format!("TCP ping-pong 64 B, {}k round trips", s.pingpong / 1000),
                "µs/round trip",
                Better::Lower,
            ),
            tcp::Job::Big => (
                format!(
                    "TCP one-way {} × {} MiB, send each",
                    s.big,
                    s.big_size >> 20
                ),
                "GB/s",
                Better::Higher,
            ),
        };
        let who = match job {
            tcp::Job::Echo | tcp::Job::PingPong => "echoing server",
            _ => "sending server",
        };
        let mut r = Row::new(name.clone(), unit, better);
        let mut c = Row::new(
            format!("… write calls per message, {who}"),
            "calls/msg",
            Better::Lower,
        );
        let one_way = matches!(job, tcp::Job::Batched | tcp::Job::FlushEach | tcp::Job::Big);
        let mut rd = Row::new(
            "… read calls per message, receiving client",
            "calls/msg",
            Better::Lower,
        );
        interleave(&name, &Lib::WITH_FLOOR, p.reps_tcp, |lib, rep| {
            let run = tcp_once(lib, job, &d, &listener);
            if rep.is_none() {
                return;
            }
            let secs = run.elapsed.as_secs_f64();
            let v = match job {
                tcp::Job::PingPong => secs * 1e6 / run.msgs as f64,
                tcp::Job::Big => (run.msgs * s.big_size) as f64 / secs / 1e9,
                _ => run.msgs as f64 / secs / 1e6,
            };
            r.push(lib, v);
            c.push(lib, run.server_writes as f64 / run.msgs as f64);
            rd.push(lib, run.client_reads as f64 / run.msgs as f64);
        });
        rows.push(r);
        rows.push(c);
        if one_way {
            rows.push(rd);
        }
    }
    rows
}

fn idle_rows(p: &Plan) -> Vec<Row> {
    let n = p.idle_n;
    let mut rss = Row::new(
        format!("idle RSS per parked connection ({n} conns)"),
        "KiB",
        Better::Lower,
    );
    let mut heap = Row::new(
        format!("idle heap per parked connection ({n} conns)"),
        "KiB",
        Better::Lower,
    );
    for rep in 0..p.reps_idle {
        eprint!("\ridle: repetition {}/{}   ", rep + 1, p.reps_idle);
        let mut names = idle::LIBS.to_vec();
        let k = rep % names.len();
        names.rotate_left(k);
        for name in names {
            let r = idle::run(name, n);
            rss.push(Lib::column(name), r.rss / 1024.0);
            heap.push(Lib::column(name), r.heap / 1024.0);
        }
    }
    eprintln!();
    vec![rss, heap]
}

/// Fan-out to 1,000 connections: deliveries per second and server CPU per
/// delivery.
fn fanout_rows(p: &Plan) -> Vec<Row> {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let s = p.fanout;
    let name = format!(
        "fan-out: {} × 64 B to {} connections, bursts of {}",
        s.messages, s.connections, s.burst
    );
    let mut rate = Row::new(name.clone(), "deliveries/s", Better::Higher);
    let mut cpu = Row::new("… server CPU per delivery", "ns", Better::Lower);
    interleave(&name, &fanout::LIBS, p.reps_fanout, |lib, rep| {
        let run = fanout::run(lib, s, &listener);
        if rep.is_none() {
            return;
        }
        rate.push(lib, run.deliveries as f64 / run.elapsed.as_secs_f64());
        cpu.push(
            lib,
            run.server_cpu.as_nanos() as f64 / run.deliveries as f64,
        );
    });
    vec![rate, cpu]
}

/// Full duplex through the split halves: messages per second each way, the
/// one-way baseline, and duplex ÷ one-way. Each library's duplex and
/// one-way runs go back to back within a repetition (in an order that
/// alternates per repetition), and the ratio rows are the medians of the
/// per-repetition ratios.
fn duplex_rows(p: &Plan) -> Vec<Row> {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let n = p.duplex_n;
    let k = n / 1000;
    let name = format!(
        "duplex {k}k × 64 B each way, split halves, {} workers, flush every {}: client → server",
        duplex::WORKERS,
        duplex::BATCH
    );
    let mut c2s = Row::new(name.clone(), "M msg/s", Better::Higher);
    let mut s2c = Row::new(
        "… duplex, server → client (same runs)",
        "M msg/s",
        Better::Higher,
    );
    let mut one = Row::new(
        format!("… one-way baseline {k}k × 64 B, client → server only, same split set-up"),
        "M msg/s",
        Better::Higher,
    );
    let mut r_c2s = Row::new(
        "… duplex client → server ÷ one-way",
        "ratio",
        Better::Higher,
    );
    let mut r_s2c = Row::new(
        "… duplex server → client ÷ one-way (client → server)",
        "ratio",
        Better::Higher,
    );
    let rate = |d: Duration| n as f64 / d.as_secs_f64() / 1e6;
    interleave("duplex", &duplex::LIBS, p.reps_duplex, |lib, rep| {
        let modes = if rep.unwrap_or(0) % 2 == 0 {
            [duplex::Mode::Duplex, duplex::Mode::OneWay]
        } else {
            [duplex::Mode::OneWay, duplex::Mode::Duplex]
        };
        let mut both = None;
        let mut base = None;
        for mode in modes {
            let run = duplex::run(lib, mode, n, &listener);
            match mode {
                duplex::Mode::Duplex => {
                    let back = run
                        .server_to_client
                        .unwrap_or_else(|| fail(lib.name(), "duplex run without server → client"));
                    both = Some((run.client_to_server, back));
                }
                duplex::Mode::OneWay => base = Some(run.client_to_server),
            }
        }
        if rep.is_none() {
            return;
        }
        let ((fwd, back), base) = both.zip(base).expect("both modes ran");
        c2s.push(lib, rate(fwd));
        s2c.push(lib, rate(back));
        one.push(lib, rate(base));
        r_c2s.push(lib, rate(fwd) / rate(base));
        r_s2c.push(lib, rate(back) / rate(base));
    });
    vec![c2s, s2c, one, r_c2s, r_s2c]
}

/// The compressed TCP rows and the compressed idle-memory rows.
fn deflate_rows(p: &Plan) -> Vec<Row> {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let mut corpora: Vec<deflate::Corpus> = Vec::new();
    for job in &p.deflate_jobs {
        let count = p
            .deflate_jobs
            .iter()
            .filter(|j| j.size == job.size)
            .map(|j| j.count)
            .max()
            .unwrap_or(0);
        if !corpora.iter().any(|c| c.size() == job.size) {
            corpora.push(deflate::Corpus::new(job.size, count));
        }
    }
    let libs = [Lib::Lockgate, Lib::TokioLockgate, Lib::SockudoWs, Lib::Yawc];
    let mut rows = Vec::new();
    for job in &p.deflate_jobs {
        let c = corpora
            .iter()
            .find(|c| c.size() == job.size)
            .expect("a corpus per size");
        let name = job.label();
        let mut rate = Row::new(name.clone(), "msg/s", Better::Higher);
        let mut mbs = Row::new("… payload throughput", "MB/s", Better::Higher);
        let mut wire = Row::new(
            "… wire bytes per payload byte (server → client)",
            "B/B",
            Better::Lower,
        );
        let mut calls = Row::new(
            "… write calls per message, sending server",
            "calls/msg",
            Better::Lower,
        );
        interleave(&name, &libs, p.reps_deflate, |lib, rep| {
            let warm = rep.is_none();
            let run = match lib {
                Lib::Lockgate => deflate::run_lockgate(*job, c, &listener, warm),
                Lib::TokioLockgate => deflate::run_tokio_lockgate(*job, c, &listener, warm),
                Lib::SockudoWs => deflate::run_sockudo(*job, c, &listener, warm),
                Lib::Yawc => deflate::run_yawc(*job, c, &listener, warm),
                _ => unreachable!("not a compression library"),
            };
            if warm {
                return;
            }
            let secs = run.elapsed.as_secs_f64();
            rate.push(lib, job.count as f64 / secs);
            mbs.push(lib, run.payload as f64 / secs / 1e6);
            wire.push(lib, run.wire as f64 / run.payload as f64);
            calls.push(lib, run.server_writes as f64 / job.count as f64);
        });
        rows.extend([rate, mbs, wire, calls]);
    }
    let n = p.deflate_idle_n;
    for mode in deflate_idle::Mode::ALL {
        let what = mode.describe();
        let mut rss = Row::new(
            format!("idle connection RSS after 1 × 1 KiB each way, {what} ({n} conns)"),
            "KiB",
            Better::Lower,
        );
        let mut heap = Row::new(
            format!("idle connection heap after 1 × 1 KiB each way, {what} ({n} conns)"),
            "KiB",
            Better::Lower,
        );
        // With context takeover, RSS also under glibc's fixed mmap
        // threshold, for every library: what the connections hold, not
        // the heap's peak (deflate_idle::FIXED_MMAP_THRESHOLD).
        let mut rss_fixed = mode.takeover().then(|| {
            Row::new(
                format!(
                    "idle connection RSS after 1 × 1 KiB each way, {what}, \
                     MALLOC_MMAP_THRESHOLD_=131072 ({n} conns)"
                ),
                "KiB",
                Better::Lower,
            )
        });
        for rep in 0..p.reps_deflate_idle {
            eprint!(
                "\ridle ({what}): repetition {}/{}   ",
                rep + 1,
                p.reps_deflate_idle
            );
            let mut names = deflate_idle::LIBS.to_vec();
            let k = rep % names.len();
            names.rotate_left(k);
            for name in names {
                let r = deflate_idle::run(name, n, mode, &[]);
                let lib = Lib::column(name);
                rss.push(lib, r.rss / 1024.0);
                heap.push(lib, r.heap / 1024.0);
                if let Some(row) = rss_fixed.as_mut() {
                    let fixed = [deflate_idle::FIXED_MMAP_THRESHOLD];
                    row.push(lib, deflate_idle::run(name, n, mode, &fixed).rss / 1024.0);
                }
            }
        }
        eprintln!();
        rows.extend([rss, heap]);
        rows.extend(rss_fixed);
    }
    rows
}

/// Writes the charts of `rows` over `cols` into `--svg`'s directory and
/// returns the markdown that shows them; nothing without `--svg`.
/// `taken` holds the file names the report's other tables used.
fn chart_section(plan: &Plan, rows: &[Row], cols: &[Lib], taken: &mut BTreeSet<String>) -> String {
    let Some(dir) = &plan.svg else {
        return String::new();
    };
    let link = report::link_dir(Path::new(dir), plan.out.as_deref().map(Path::new));
    let mut md = String::from(
        "\nCharts (medians; lockgate's drivers in orange, other libraries in blue, the floor in \
         grey; a dashed outline is a library without a number):\n\n",
    );
    for c in report::charts(rows, cols, taken) {
        let path = Path::new(dir).join(&c.file);
        if let Err(e) = std::fs::write(&path, &c.svg) {
            eprintln!("cannot write {}: {e}", path.display());
            std::process::exit(1);
        }
        md.push_str(&report::image_link(&c, &link));
    }
    md
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("__idle_deflate") {
        match (
            args.get(1),
            args.get(2).and_then(|n| n.parse().ok()),
            args.get(3),
        ) {
            (Some(lib), Some(n), Some(mode)) => deflate_idle::child_main(lib, n, mode),
            _ => usage(),
        }
        return;
    }
    if scale::child_main(&args) {
        return;
    }
    if args.first().map(String::as_str) == Some("__idle") {
        let (lib, n) = match (args.get(1), args.get(2).and_then(|n| n.parse().ok())) {
            (Some(lib), Some(n)) => (lib.clone(), n),
            _ => usage(),
        };
        idle::child_main(&lib, n);
        return;
    }
    if args.first().map(String::as_str) == Some("__handshake") {
        match (args.get(1), args.get(2).and_then(|n| n.parse().ok())) {
            (Some(lib), Some(n)) => handshake_mem::child_main(lib, n),
            _ => usage(),
        }
        return;
    }
    let plan = Plan::parse(&args);
    // Before the run, so that a bad directory costs no benchmark time.
    if let Some(dir) = &plan.svg
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        eprintln!("cannot create {dir}: {e}");
        std::process::exit(1);
    }
    let mut chart_files = BTreeSet::new();
    #[cfg(feature = "metrics")]
    let recorder = observe::install();
    let nofile = sys::raise_nofile();
    let started = Instant::now();
    let when = sys::now_utc();
    let load0 = sys::loadavg();
    let tree = sys::tree();
    let mut rows = Vec::new();
    if plan.runs("write") {
        rows.extend(write_rows(&plan));
    }
    if plan.runs("read") {
        rows.extend(read_rows(&plan));
    }
    if plan.runs("tcp") {
        rows.extend(tcp_rows(&plan));
    }
    if plan.runs("idle") {
        rows.extend(idle_rows(&plan));
    }
    if plan.runs("handshake") {
        // As many repetitions as the idle rows: the same kind of child.
        rows.extend(handshake_mem::rows(plan.quick, plan.reps_idle));
    }
    if plan.runs("fanout") {
        rows.extend(fanout_rows(&plan));
    }
    if plan.runs("duplex") {
        rows.extend(duplex_rows(&plan));
    }
    let scale = plan
        .runs("scale")
        .then(|| scale::run(&plan.scale, plan.reps_scale));
    let deflate = if plan.runs("deflate") {
        deflate_rows(&plan)
    } else {
        Vec::new()
    };
    let took = started.elapsed().as_secs_f64();
    #[cfg(feature = "metrics")]
    observe::summary(&recorder);
    let load1 = sys::loadavg();
    let mode = if plan.quick { "--quick" } else { "full" };
    let mut out = String::new();
    if !rows.is_empty() {
        let header = format!(
            "## Comparison with other Rust WebSocket crates\n\n\
             - date: {when}\n\
             - machine: {}\n\
             - run: `cargo run --release -p bench-peers -- {}` ({mode}; repetitions: {} in-memory, \
             {} TCP, {} idle; open-file limit {nofile}); took {took:.1} s\n\
             - 1-minute load average at start / end: {load0} / {load1} (other work on the machine skews results)\n\
             - peers: {PEERS}; lockgate and tokio-lockgate from this tree ({tree})\n\
             - medians of the repetitions; ratios are lockgate's median ÷ the best peer's median \
             (↓ rows: below 1 means lockgate is faster/smaller; ↑ rows: above 1 means lockgate is faster)\n\
             - in-memory rows: lockgate and tungstenite use their blocking API on a std::io mock; the \
             async crates use the same mock through AsyncRead/AsyncWrite, polled by a current-thread \
             tokio runtime; the read rows' floor is the mock's copy of every input byte into one \
             reused 1 MiB buffer (no parsing, unmasking or allocation), the write rows' floor each \
             text's bytes copied into the sink's buffer and the text freed (no framing or sink \
             calls): work every library pays\n\
             - TCP rows: two threads, blocking API for lockgate/tungstenite/raw, a current-thread \
             runtime per end for the async crates; fastwebsockets writes through a tokio BufWriter \
             (8 KiB) since it has no write buffer; threads {}\n\
             - sockudo-ws: `WebSocketStream::from_raw` with `Config::default()`, Sink `feed` / \
             `flush`, Stream `next`; its Sink readiness writes and flushes the stream once 64 KiB \
             are queued, so no library-level batch is bigger than that\n\
             - yawc: `WebSocket::from_stream` with default `Options` except `max_payload_read` \
             64 MiB (the others' default limit; yawc's 1 MiB default refuses a 1 MiB message), \
             Sink `feed` / `flush`, `next_frame`\n\
             - fan-out rows: the serving end on one thread (publisher and a task per connection), \
             tokio-lockgate through its hub, each peer through a bounded channel per connection \
             feeding its own sink, flushed once per wake-up; {} repetitions\n\
             - duplex rows: a fresh connection per run split with each library's split API \
             (tokio-lockgate `into_split`; tokio-tungstenite, tokio-websockets, yawc \
             `StreamExt::split`; fastwebsockets `WebSocket::split` with `tokio::io::split` over \
             its `BufWriter`; sockudo-ws `WebSocketStream::split`, whose writer writes each \
             message on `send`), a reader and a writer task per end on a {}-worker multi-thread \
             runtime; timed from the start until that direction's reader had every message; each \
             library's duplex and one-way runs back to back; {} repetitions\n\n",
            sys::machine(),
            args.join(" "),
            plan.reps_mem,
            plan.reps_tcp,
            plan.reps_idle,
            if sys::pinning() {
                "pinned (server end CPU 0, client end CPU 1)"
            } else {
                "not pinned"
            },
            plan.reps_fanout,
            duplex::WORKERS,
            plan.reps_duplex,
        );
        out.push_str(&header);
        #[cfg(feature = "metrics")]
        out.push_str(observe::NOTE);
        out.push_str(&report::table(&rows, &report::COLS));
        out.push_str(&format!(
            "\n- {NO_UTF8}: yawc does not validate UTF-8 in text messages by default \
             (`Options::check_utf8` is off), so it sits out the small-text read, where \
             validation is most of the work the others do; in the TCP rows its receiving \
             end does not check the 64-byte texts either.\n"
        ));
        if plan.runs("handshake") {
            out.push_str(handshake_mem::NOTE);
        }
        out.push_str(&chart_section(
            &plan,
            &rows,
            &report::COLS,
            &mut chart_files,
        ));
        out.push_str("\nSpread of the samples, (max − min) / median:\n\n");
        out.push_str(&report::spread_table(&rows, &report::COLS));
    }
    if !deflate.is_empty() {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!(
            "### Compression (permessage-deflate)\n\n\
             - date: {when}\n\
             - machine: {}\n\
             - run: `cargo run --release -p bench-peers -- {}` ({mode}; repetitions: {} TCP, {} idle); \
             whole run took {took:.1} s\n\
             - 1-minute load average at start / end: {load0} / {load1} (other work on the machine skews results)\n\
             - peers: {DEFLATE_PEERS}; lockgate and tokio-lockgate from this tree ({tree}); \
             flate2 is built once for the whole binary with lockgate's `zlib-rs` feature, so every \
             library compresses with zlib-rs here\n\
             - each library negotiates permessage-deflate with its own handshake code, level 1, \
             15-bit windows; yawc with `with_utf8()` (sockudo-ws validates by default); threads {}\n\
             - sockudo-ws: its HTTP/1 `accept` / `connect` never negotiate compression (only its \
             axum extractor does), so each end runs its public handshake helpers over the socket \
             (`build_request_with_headers` with the offer, `parse_request`, `negotiate_server_deflate`, \
             `build_response`, `parse_response` + `DeflateConfig::from_params`) and wraps it in \
             `CompressedWebSocketStream`; `Config::default()` otherwise\n\
             - medians of the repetitions; ratios are lockgate's median ÷ the best peer's median \
             (↓ rows: below 1 means lockgate is faster/smaller; ↑ rows: above 1 means lockgate is faster)\n\n",
            sys::machine(),
            args.join(" "),
            plan.reps_deflate,
            plan.reps_deflate_idle,
            if sys::pinning() {
                "pinned (server end CPU 0, client end CPU 1)"
            } else {
                "not pinned"
            },
        ));
        out.push_str(&report::table(&deflate, &report::DEFLATE_COLS));
        out.push_str(&chart_section(
            &plan,
            &deflate,
            &report::DEFLATE_COLS,
            &mut chart_files,
        ));
        out.push_str("\nSpread of the samples, (max − min) / median:\n\n");
        out.push_str(&report::spread_table(&deflate, &report::DEFLATE_COLS));
    }
    if let Some(scale) = &scale {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&scale.section(&args.join(" ")));
        out.push_str(&chart_section(
            &plan,
            &scale.rows(),
            &scale::LIBS,
            &mut chart_files,
        ));
    }
    print!("{out}");
    eprintln!("done in {took:.1} s");
    if let Some(path) = &plan.out
        && let Err(e) = std::fs::write(path, &out)
    {
        eprintln!("cannot write {path}: {e}");
        std::process::exit(1);
    }
}
