//! Scenario 8 (`--only scale`, issue 25): servers at scale.
//!
//! Each library's idiomatic server on a tokio multi-thread runtime with 2
//! worker threads and one task per connection ([`servers`], [`fanout`]),
//! in a child process of its own (this binary re-executed with the hidden
//! `__scale_server` subcommand) so that allocator state never mixes, under
//! the same load client ([`load`]), a third process (`__scale_load`) that
//! spawns the server, drives it with raw sockets and the harness's own
//! frame code, and measures. Everything runs on 127.0.0.1; both processes
//! raise their open-file limit.
//!
//! - Echo: `connections` upgraded connections, most of them idle; `busy`
//!   of them send bursts of `burst` × 64-byte binary messages and wait for
//!   every echo before the next burst (a closed loop, so the server runs
//!   flat out). Reported: echoes per second, round-trip latency p50 / p99 /
//!   p99.9 (each message's, from its send to the read that completed its
//!   echo, stamped in its payload), the server process's CPU time per echo
//!   (`getrusage(RUSAGE_SELF)` in the server, over the measured window),
//!   and the server's RSS per connection (after all connections are
//!   upgraded and parked, minus before, ÷ N; and again after the run, when
//!   every connection has echoed at least one message).
//! - Fan-out: `subscribers` connections on one topic, `messages` × 64 B
//!   published in bursts: deliveries per second and server CPU per
//!   delivery.
//!
//! Each library runs in two forms ([`Form`]; [`servers`] says exactly what
//! each is): its natural one, and its best batching one; the "best form"
//! rows take, per row and per library, whichever form's median is better,
//! and the targets compare tokio-lockgate with the best peer there.
//!
//! *Verified*: the load client checks every server frame byte for byte (a
//! final, unmasked, 64-byte binary frame carrying exactly the payload sent,
//! in order; fan-out: exactly the published payloads, in order, none
//! missing, none extra), and after each echo run every connection, busy or
//! idle, must echo one more message. A failure aborts with exit code 2.
//!
//! Repetitions are interleaved: each repetition runs every (library, form)
//! once, in an order rotated per repetition. There is no untimed warm-up
//! run: each run is a fresh server process, and the echo runs warm up
//! (64 connections used and closed, then `warm` of load) before measuring.

mod control;
mod fanout;
mod floor;
mod hist;
mod load;
mod servers;
mod threads;
mod uring;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::report::{self, Better, Lib, Row};
use crate::sys;

/// What the table cannot say: how each peer's forms came out.
const NOTES: &str = "\nNotes on the forms:\n\n\
- tokio-websockets cannot batch an echo: its `Stream::poll_next` first flushes every \
queued frame, so each read writes the previous echo out on its own; its batching form \
makes as many writes as its natural one.\n\
- fastwebsockets' `read_frame` is not cancel-safe and it cannot say whether input is \
buffered, so its batching form goes through its split API (`unstable-split`): a channel \
and a writer task over a `BufWriter` that flushes once the channel is empty. Its frames \
are echoed as fresh unmasked frames: the frame `read_frame` returns keeps the client's \
masking key, which `write_frame` would send back in the header.\n\
- uring-lockgate (io_uring) is served by one tokio-uring ring per worker thread, fed \
by an accept thread; its natural and batching loops are tokio-lockgate's. It serves no \
fan-out (no hub on io_uring): — in those rows.\n\
- sockudo-ws flushes queued output itself before its read waits for input, so its \
batching form batches what one read brought in.\n\
- tokio-tungstenite's own echo example is `StreamExt::forward` over split halves, which \
is its batching form (without `split`'s lock).\n\
- tokio-tungstenite reads by zero-filling its read buffer's spare capacity (128 KiB, \
`read_buffer_size`) first, so the first read of a parked connection touches all of it: \
hence its RSS per connection.\n";

/// The libraries compared (async only: these are tokio servers).
pub(crate) const LIBS: [Lib; 7] = [
    Lib::TokioLockgate,
    Lib::UringLockgate,
    Lib::TokioTungstenite,
    Lib::Fastwebsockets,
    Lib::TokioWebsockets,
    Lib::SockudoWs,
    Lib::Yawc,
];

/// The library named `name` ([`Lib::name`]).
fn lib_named(name: &str) -> Option<Lib> {
    LIBS.into_iter().find(|l| l.name() == name)
}

/// How a server writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Form {
    /// The library's usual loop: one send (queue + flush) per message,
    /// except tokio-lockgate's, which flushes once its input is used up.
    Natural,
    /// Everything ready at once is queued, then one flush.
    Batching,
}

impl Form {
    /// Both forms, in report order.
    const ALL: [Form; 2] = [Form::Natural, Form::Batching];

    /// Its name on the command line of the child processes.
    fn name(self) -> &'static str {
        match self {
            Form::Natural => "natural",
            Form::Batching => "batching",
        }
    }

    /// The form called `name`.
    fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// How big the runs are.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    /// Echo connections in all.
    pub(crate) connections: usize,
    /// Echo connections sending bursts.
    pub(crate) busy: usize,
    /// Messages per burst.
    pub(crate) burst: usize,
    /// Load before the measured window, ms.
    pub(crate) warm_ms: u64,
    /// The measured window, ms.
    pub(crate) window_ms: u64,
    /// Fan-out subscribers.
    pub(crate) subscribers: usize,
    /// Fan-out messages published.
    pub(crate) messages: usize,
    /// Fan-out messages published between yields.
    pub(crate) fanout_burst: usize,
}

impl Shape {
    /// `--quick`.
    pub(crate) const QUICK: Shape = Shape {
        connections: 1_000,
        busy: 50,
        burst: 16,
        warm_ms: 300,
        window_ms: 700,
        subscribers: 1_000,
        messages: 200,
        fanout_burst: 64,
    };
    /// The full run.
    pub(crate) const FULL: Shape = Shape {
        connections: 10_000,
        busy: 500,
        burst: 16,
        warm_ms: 1_000,
        window_ms: 3_000,
        subscribers: 10_000,
        messages: 300,
        fanout_burst: 64,
    };
}

/// The hidden subcommands `__scale_load …` and `__scale_server …`; `false`
/// if `args` is neither.
pub(crate) fn child_main(args: &[String]) -> bool {
    match args.first().map(String::as_str) {
        Some("__scale_load") => load::main(&args[1..]),
        Some("__scale_server") => servers::main(&args[1..]),
        _ => return false,
    }
    true
}

/// What a row measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Metric {
    /// Echoes received per second in the window.
    Rate,
    /// Round-trip latency, median.
    P50,
    /// Round-trip latency, 99th percentile.
    P99,
    /// Round-trip latency, 99.9th percentile.
    P999,
    /// Server CPU time per echo.
    Cpu,
    /// Server RSS per connection once all are upgraded and parked.
    RssParked,
    /// Server RSS per connection after the run.
    RssAfter,
    /// The load process's CPU time per echo (a check on the client).
    LoadCpu,
    /// Fan-out deliveries per second.
    FanRate,
    /// Server CPU time per fan-out delivery.
    FanCpu,
}

impl Metric {
    /// The echo rows, in report order.
    const ECHO: [Metric; 8] = [
        Metric::Rate,
        Metric::P50,
        Metric::P99,
        Metric::P999,
        Metric::Cpu,
        Metric::RssParked,
        Metric::RssAfter,
        Metric::LoadCpu,
    ];
    /// The fan-out rows, in report order.
    const FANOUT: [Metric; 2] = [Metric::FanRate, Metric::FanCpu];

    /// The unit of its cells.
    fn unit(self) -> &'static str {
        match self {
            Metric::Rate => "msg/s",
            Metric::P50 | Metric::P99 | Metric::P999 => "ms",
            Metric::Cpu | Metric::LoadCpu | Metric::FanCpu => "ns",
            Metric::RssParked | Metric::RssAfter => "KiB",
            Metric::FanRate => "deliveries/s",
        }
    }

    /// Which way is better.
    fn better(self) -> Better {
        match self {
            Metric::Rate | Metric::FanRate => Better::Higher,
            _ => Better::Lower,
        }
    }

    /// The row's name for runs of shape `s`.
    fn label(self, s: &Shape) -> String {
        match self {
            Metric::Rate => format!(
                "echo, {} conns ({} busy, bursts of {} × 64 B)",
                s.connections, s.busy, s.burst
            ),
            Metric::P50 => "… round trip p50".into(),
            Metric::P99 => "… round trip p99".into(),
            Metric::P999 => "… round trip p99.9".into(),
            Metric::Cpu => "… server CPU per message".into(),
            Metric::RssParked => "… server RSS per connection, parked after the upgrade".into(),
            Metric::RssAfter => "… server RSS per connection after the run".into(),
            Metric::LoadCpu => "… load client CPU per message (same client for all)".into(),
            Metric::FanRate => format!(
                "fan-out, {} × 64 B to {} subscribers (bursts of {})",
                s.messages, s.subscribers, s.fanout_burst
            ),
            Metric::FanCpu => "… server CPU per delivery".into(),
        }
    }
}

/// Everything the scenario measured.
pub(crate) struct Results {
    /// The runs' shape.
    shape: Shape,
    /// Repetitions of each configuration.
    reps: usize,
    /// One value per run.
    samples: BTreeMap<(Metric, Form, Lib), Vec<f64>>,
    /// When the scenario started.
    when: String,
    /// The 1-minute load average at its start and end.
    load: (String, String),
    /// Its duration, seconds.
    took: f64,
}

/// Runs the scenario: `reps` interleaved repetitions of every echo
/// configuration, then of every fan-out one.
pub(crate) fn run(shape: &Shape, reps: usize) -> Results {
    let started = Instant::now();
    let mut r = Results {
        shape: *shape,
        reps,
        samples: BTreeMap::new(),
        when: sys::now_utc(),
        load: (sys::loadavg(), String::new()),
        took: 0.0,
    };
    let every: Vec<(Lib, Form)> = LIBS
        .into_iter()
        .flat_map(|l| Form::ALL.map(|f| (l, f)))
        .collect();
    let s = shape;
    let echo_args = [
        s.connections,
        s.busy,
        s.burst,
        s.warm_ms as usize,
        s.window_ms as usize,
    ];
    for rep in 0..reps {
        for (lib, form) in rotated(&every, rep) {
            eprint!(
                "\rscale echo: repetition {}/{reps}, {} ({})        ",
                rep + 1,
                lib.name(),
                form.name()
            );
            let out = run_load("echo", lib, form, &echo_args);
            r.push_echo(lib, form, &out);
        }
    }
    eprintln!();
    // The hub is tokio-lockgate's one fan-out form.
    let fan: Vec<(Lib, Form)> = every
        .iter()
        .copied()
        .filter(|&(l, f)| l != Lib::TokioLockgate || f == Form::Natural)
        // uring-lockgate serves the echo rows only.
        .filter(|&(l, _)| l != Lib::UringLockgate)
        .collect();
    let fan_args = [s.subscribers, s.messages, s.fanout_burst];
    for rep in 0..reps {
        for (lib, form) in rotated(&fan, rep) {
            eprint!(
                "\rscale fan-out: repetition {}/{reps}, {} ({})        ",
                rep + 1,
                lib.name(),
                form.name()
            );
            let out = run_load("fanout", lib, form, &fan_args);
            let rate = get(lib, &out, "deliveries") / get(lib, &out, "secs");
            let cpu = get(lib, &out, "cpu_ns") / get(lib, &out, "deliveries");
            let forms: &[Form] = if lib == Lib::TokioLockgate {
                &Form::ALL
            } else {
                std::slice::from_ref(&form)
            };
            for &f in forms {
                r.push(Metric::FanRate, f, lib, rate);
                r.push(Metric::FanCpu, f, lib, cpu);
            }
        }
    }
    eprintln!();
    r.load.1 = sys::loadavg();
    r.took = started.elapsed().as_secs_f64();
    r
}

/// `v` rotated left by `rep`.
fn rotated<T: Copy>(v: &[T], rep: usize) -> Vec<T> {
    let mut v = v.to_vec();
    let k = rep % v.len().max(1);
    v.rotate_left(k);
    v
}

/// Runs one load process and returns its `SCALE` line's values.
fn run_load(mode: &str, lib: Lib, form: Form, nums: &[usize]) -> BTreeMap<String, f64> {
    let exe = std::env::current_exe().expect("own executable");
    let mut args = vec![
        "__scale_load".to_string(),
        mode.to_string(),
        lib.name().to_string(),
        form.name().to_string(),
    ];
    args.extend(nums.iter().map(usize::to_string));
    let out = Command::new(exe)
        .args(&args)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| crate::fail(lib.name(), &format!("spawn the load child: {e}")));
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        crate::fail(
            lib.name(),
            &format!("scale load child failed ({}): {stdout}", out.status),
        );
    }
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("SCALE "))
        .unwrap_or_else(|| crate::fail(lib.name(), &format!("no SCALE line: {stdout}")));
    line.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .filter_map(|(k, v)| Some((k.to_string(), v.parse().ok()?)))
        .collect()
}

/// The value of `key` in a load process's output.
fn get(lib: Lib, out: &BTreeMap<String, f64>, key: &str) -> f64 {
    *out.get(key)
        .unwrap_or_else(|| crate::fail(lib.name(), &format!("load output lacks {key}")))
}

/// The median of `v` (`None` when empty).
fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

impl Results {
    /// Records one run's value.
    fn push(&mut self, m: Metric, f: Form, lib: Lib, v: f64) {
        self.samples.entry((m, f, lib)).or_default().push(v);
    }

    /// Records one echo run's values.
    fn push_echo(&mut self, lib: Lib, form: Form, out: &BTreeMap<String, f64>) {
        let g = |k: &str| get(lib, out, k);
        let (n, msgs) = (g("n"), g("msgs"));
        let per_conn = |rss: f64| (rss - g("rss0")) / n / 1024.0;
        self.push(Metric::Rate, form, lib, msgs / g("secs"));
        self.push(Metric::P50, form, lib, g("p50_ns") / 1e6);
        self.push(Metric::P99, form, lib, g("p99_ns") / 1e6);
        self.push(Metric::P999, form, lib, g("p999_ns") / 1e6);
        self.push(Metric::Cpu, form, lib, g("cpu_ns") / msgs);
        self.push(Metric::RssParked, form, lib, per_conn(g("rss1")));
        self.push(Metric::RssAfter, form, lib, per_conn(g("rss2")));
        self.push(Metric::LoadCpu, form, lib, g("load_cpu_ns") / msgs);
    }

    /// The values recorded for `m`, `f`, `lib`.
    fn samples(&self, m: Metric, f: Form, lib: Lib) -> &[f64] {
        self.samples.get(&(m, f, lib)).map_or(&[], Vec::as_slice)
    }

    /// The form of `lib` with the better median for `m`.
    fn best_form(&self, m: Metric, lib: Lib) -> Option<Form> {
        let score = |f: Form| median(self.samples(m, f, lib));
        match (score(Form::Natural), score(Form::Batching)) {
            (Some(a), Some(b)) => Some(match m.better() {
                Better::Lower if b < a => Form::Batching,
                Better::Higher if b > a => Form::Batching,
                _ => Form::Natural,
            }),
            (Some(_), None) => Some(Form::Natural),
            (None, Some(_)) => Some(Form::Batching),
            (None, None) => None,
        }
    }

    /// `lib`'s best form for `m`, and its median there.
    fn best(&self, m: Metric, lib: Lib) -> Option<(Form, f64)> {
        let f = self.best_form(m, lib)?;
        Some((f, median(self.samples(m, f, lib))?))
    }

    /// The best peer for `m` in its best form, and its median.
    fn best_peer(&self, m: Metric) -> Option<(Lib, Form, f64)> {
        // lockgate's other drivers (uring-lockgate) are not peers.
        LIBS.into_iter()
            .filter(|&l| l.is_peer())
            .filter_map(|l| {
                let (f, v) = self.best(m, l)?;
                Some((l, f, v))
            })
            .reduce(|a, b| match m.better() {
                Better::Lower if b.2 < a.2 => b,
                Better::Higher if b.2 > a.2 => b,
                _ => a,
            })
    }

    /// tokio-lockgate's median for `m` in its best form ÷ the best peer's.
    fn ratio(&self, m: Metric) -> Option<(f64, Lib, Form)> {
        let (_, lg) = self.best(m, Lib::TokioLockgate)?;
        let (peer, pf, v) = self.best_peer(m)?;
        Some((lg / v, peer, pf))
    }

    /// The report rows: natural, batching and best-form sections, echo then
    /// fan-out.
    pub(crate) fn rows(&self) -> Vec<Row> {
        let mut rows = Vec::new();
        let sections: [(&str, &[Metric], Option<Form>); 6] = [
            ("natural", &Metric::ECHO, Some(Form::Natural)),
            ("batching", &Metric::ECHO, Some(Form::Batching)),
            ("best form", &Metric::ECHO[..7], None),
            ("natural", &Metric::FANOUT, Some(Form::Natural)),
            ("batching", &Metric::FANOUT, Some(Form::Batching)),
            ("best form", &Metric::FANOUT, None),
        ];
        for (what, metrics, form) in sections {
            for (i, &m) in metrics.iter().enumerate() {
                let label = m.label(&self.shape);
                let name = if i == 0 {
                    format!("**{what}**: {label}")
                } else {
                    label
                };
                let mut row = Row::new(name, m.unit(), m.better());
                for lib in LIBS {
                    let Some(f) = form.or_else(|| self.best_form(m, lib)) else {
                        continue;
                    };
                    for &v in self.samples(m, f, lib) {
                        row.push(lib, v);
                    }
                }
                rows.push(row);
            }
        }
        rows
    }

    /// The scenario's section of the report: header, medians, spreads, the
    /// best forms and the targets. `run` is the command line's arguments.
    pub(crate) fn section(&self, run: &str) -> String {
        let s = &self.shape;
        let mut out = String::new();
        let _ = write!(
            out,
            "### Servers at scale\n\n\
             - date: {}\n\
             - machine: {}\n\
             - run: `cargo run --release -p bench-peers -- {run}` ({} repetitions, interleaved); \
             the scenario took {:.1} s\n\
             - 1-minute load average at its start / end: {} / {} (other work on the machine skews results)\n\
             - lockgate and tokio-lockgate from this tree ({})\n\
             - each server in a child process of its own: tokio multi-thread runtime, {} workers, \
             a task per connection; the load client in another process, one thread, raw sockets, \
             the same for every library\n\
             - echo: {} connections, {} busy ones sending bursts of {} × 64 B and waiting for every \
             echo (closed loop), {} ms of load, then a {} ms window; latency is each message's round \
             trip, from its send to the read that completed its echo\n\
             - fan-out: {} subscribers on one topic, {} × 64 B published in bursts of {}, timed from \
             `go` to the last delivery; tokio-lockgate's hub (its one form) is in both its natural \
             and batching rows\n\
             - natural: a send (queue + flush) per message; tokio-lockgate `read`, `write`, `flush` \
             once `buffered_input()` is 0. batching: every message ready at once queued, then one \
             flush (fastwebsockets: its split API and a writer task, its read not being \
             cancel-safe); best form: per row, each library's better form\n\
             - medians; \"tokio-lockgate ÷ best\" is its median ÷ the best peer's (↓ rows: below 1 \
             wins; ↑ rows: above 1 wins); the \"lockgate\" (blocking) column is not run here\n\n",
            self.when,
            sys::machine(),
            self.reps,
            self.took,
            self.load.0,
            self.load.1,
            sys::tree(),
            servers::WORKERS,
            s.connections,
            s.busy,
            s.burst,
            s.warm_ms,
            s.window_ms,
            s.subscribers,
            s.messages,
            s.fanout_burst,
        );
        let rows = self.rows();
        out.push_str(&report::table(&rows, &LIBS));
        out.push_str("\nSpread of the samples, (max − min) / median:\n\n");
        out.push_str(&report::spread_table(&rows, &LIBS));
        out.push_str("\nBest form per library (natural / batching):\n\n");
        let mut all: Vec<Metric> = Metric::ECHO[..7].to_vec();
        all.extend(Metric::FANOUT);
        for m in all {
            let forms: Vec<String> = LIBS
                .into_iter()
                .filter_map(|l| Some(format!("{} {}", l.name(), self.best_form(m, l)?.name())))
                .collect();
            let label = m.label(s);
            let _ = writeln!(
                out,
                "- {}: {}",
                label.trim_start_matches("… "),
                forms.join(", ")
            );
        }
        out.push_str(NOTES);
        out.push_str(
            "\nTargets (tokio-lockgate in its best form ÷ the best peer in its best form):\n\n",
        );
        let targets: [(&str, Metric, f64, &str); 5] = [
            ("server CPU per message", Metric::Cpu, 0.65, "≤ 0.65×"),
            ("p99 round trip", Metric::P99, 0.75, "≤ 0.75×"),
            (
                "RSS per connection, parked",
                Metric::RssParked,
                1.0,
                "least (< 1×)",
            ),
            (
                "RSS per connection, after the run",
                Metric::RssAfter,
                1.0,
                "least (< 1×)",
            ),
            ("fan-out deliveries/s", Metric::FanRate, 1.5, "≥ 1.5×"),
        ];
        for (what, m, bound, goal) in targets {
            let line = match self.ratio(m) {
                Some((r, peer, pf)) => {
                    let met = match m.better() {
                        Better::Lower if bound == 1.0 => r < bound,
                        Better::Lower => r <= bound,
                        Better::Higher => r >= bound,
                    };
                    format!(
                        "{r:.2}× against {} ({}): {}",
                        peer.name(),
                        pf.name(),
                        if met { "met" } else { "missed" }
                    )
                }
                None => "not measured".into(),
            };
            let _ = writeln!(out, "- {what}, target {goal}: {line}");
        }
        out.push_str(&self.uring_targets());
        out
    }

    /// The io_uring driver's targets: server CPU per echoed message (each
    /// library in its best form) at most 0.8× tokio-lockgate's, and below
    /// every peer's.
    fn uring_targets(&self) -> String {
        let m = Metric::Cpu;
        let (Some((uf, uring)), Some((_, tokio)), Some((peer, pf, v))) = (
            self.best(m, Lib::UringLockgate),
            self.best(m, Lib::TokioLockgate),
            self.best_peer(m),
        ) else {
            return String::new();
        };
        let verdict = |met: bool| if met { "met" } else { "missed" };
        format!(
            "\nTargets of uring-lockgate (server CPU per message, best forms):\n\n\
             - ÷ tokio-lockgate, target ≤ 0.8×: {:.2}× ({uring:.0} ns, {}; tokio-lockgate {tokio:.0} ns): {}\n\
             - ÷ the best peer, target < 1×: {:.2}× against {} ({}, {v:.0} ns): {}\n",
            uring / tokio,
            uf.name(),
            verdict(uring / tokio <= 0.8),
            uring / v,
            peer.name(),
            pf.name(),
            verdict(uring < v),
        )
    }
}
