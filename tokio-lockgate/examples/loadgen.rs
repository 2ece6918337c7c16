//! Load generator: throughput and latency of tokio-lockgate over loopback.
//!
//! ```text
//! cargo run --release -p tokio-lockgate --example loadgen
//! cargo run --release -p tokio-lockgate --example loadgen -- --connections 100 --batch 1
//! cargo run --release -p tokio-lockgate --example loadgen -- --mode oneway --duration 5
//! cargo run --release -p tokio-lockgate --example loadgen -- --url ws://127.0.0.1:9001
//! ```
//!
//! By default it starts an embedded server on `127.0.0.1` (a free port) and
//! drives it; `--url` targets any echo server instead. `--help` lists the
//! options.
//!
//! Every connection writes its messages in batches: `--batch` × `write`,
//! then one `flush`, so a batch leaves in as few `send(2)` calls as fit.
//!
//! - **echo** (default): the server echoes each message (the embedded one
//!   with `send`: one flush per echo). A connection keeps at most [`WINDOW_BATCHES`] batches
//!   unanswered; every echo is checked (type, length, sequence number,
//!   filler) and gives one round-trip latency sample.
//! - **oneway**: the server only reads, checks and counts; the rate is
//!   measured at the receiver (with `--url`, at the sender: the time until
//!   the last flush returned).
//!
//! A connection ends with a close handshake (code 1000). Each connection
//! uses two tasks, one per half of [`WebSocketStream::split`], so reading
//! never waits behind a blocked write.
//!
//! Payload layout (`--size` bytes): an 8-byte send timestamp (nanoseconds
//! since a start `Instant` shared by all connections), an 8-byte sequence
//! number, then filler. Both numbers are stored 7 bits per byte,
//! least-significant group first, so the payload is ASCII and the same bytes
//! work as text (`--text`). Echo mode needs `--size` ≥ 16; in one-way mode
//! smaller payloads are just filler.
//!
//! Progress goes to stderr on one line about every 500 ms; the summary goes
//! to stdout. The run is bounded: by `--messages` or `--duration`, and by a
//! watchdog that gives up when nothing has moved for 30 s or, with
//! `--duration`, 30 s after the duration is over.
//!
//! [`WebSocketStream::split`]: tokio_lockgate::WebSocketStream::split

use std::fmt;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio_lockgate::{
    CloseCode, CloseFrame, Error, Message, Utf8Bytes, WebSocketReadHalf, WebSocketWriteHalf,
};

const USAGE: &str = "\
loadgen: throughput and latency of tokio-lockgate

usage: cargo run --release -p tokio-lockgate --example loadgen -- [OPTIONS]

Starts an echo server on 127.0.0.1 (a free port) and drives it, or drives
the server at --url. Each connection writes batches (N x write, one flush).

options:
  --connections N     concurrent connections (default 1)
  --size BYTES        payload bytes per message (default 64; echo needs >= 16)
  --messages N        messages per connection (default 100000)
  --duration SECS     send for SECS seconds instead (wins over --messages)
  --batch N           messages written per flush (default 64)
  --mode echo|oneway  echo: the server echoes every message, round trips are
                      timed (default). oneway: the server only counts; the
                      rate is measured at the receiver (at the sender with --url)
  --text              send text messages (ASCII payload), not binary ones
  --url URL           target ws://HOST:PORT/PATH instead of the embedded server
  -h, --help          print this help

Progress goes to stderr, the summary to stdout. Exit status: 0 when every
message arrived (echo: every echo came back intact and in order), 1 on a
failure, 2 on a usage error, 3 when the watchdog stopped a stuck run.
";

/// Unanswered batches an echo connection may have in flight.
const WINDOW_BATCHES: usize = 4;
/// Timestamp and sequence number at the front of each payload.
const HEADER: usize = 16;
/// Latency samples kept in all (shared out between connections); beyond
/// that each connection keeps a uniform random sample.
const LATENCY_SAMPLES: usize = 2_000_000;
/// The watchdog gives up when nothing has moved for this long...
const STALL_TIMEOUT: Duration = Duration::from_secs(30);
/// ... or, with `--duration`, this long after the duration is over.
const GRACE: Duration = Duration::from_secs(30);
const PROGRESS_EVERY: Duration = Duration::from_millis(500);
const CLOSE_REASON: &str = "loadgen done";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Echo,
    Oneway,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Echo => "echo",
            Mode::Oneway => "oneway",
        })
    }
}

struct Options {
    connections: usize,
    size: usize,
    messages: u64,
    duration: Option<Duration>,
    batch: usize,
    mode: Mode,
    text: bool,
    url: Option<String>,
}

/// `Ok(None)`: help was asked for.
fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Option<Options>, String> {
    let mut opts = Options {
        connections: 1,
        size: 64,
        messages: 100_000,
        duration: None,
        batch: 64,
        mode: Mode::Echo,
        text: false,
        url: None,
    };
    while let Some(arg) = args.next() {
        // Both `--name value` and `--name=value`.
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) if name.starts_with("--") => {
                (name.to_owned(), Some(value.to_owned()))
            }
            _ => (arg, None),
        };
        if inline.is_some() && matches!(name.as_str(), "-h" | "--help" | "--text") {
            return Err(format!("{name} takes no value"));
        }
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match name.as_str() {
            "-h" | "--help" => return Ok(None),
            "--connections" => opts.connections = number(&name, &value()?)?,
            "--size" => opts.size = number(&name, &value()?)?,
            "--messages" => opts.messages = number(&name, &value()?)?,
            "--batch" => opts.batch = number(&name, &value()?)?,
            "--duration" => {
                let v = value()?;
                let secs: f64 = v
                    .parse()
                    .map_err(|_| format!("{name}: {v:?} is not a number of seconds"))?;
                if !(secs > 0.0 && secs <= 1e6) {
                    return Err(format!("{name}: {v:?} must be between 0 and 1000000 s"));
                }
                opts.duration = Some(Duration::from_secs_f64(secs));
            }
            "--mode" => {
                opts.mode = match value()?.as_str() {
                    "echo" => Mode::Echo,
                    "oneway" | "one-way" => Mode::Oneway,
                    other => return Err(format!("--mode: {other:?} is not echo or oneway")),
                }
            }
            "--text" => opts.text = true,
            "--url" => opts.url = Some(value()?),
            _ => return Err(format!("unknown argument {name:?}")),
        }
    }
    if opts.connections == 0 {
        return Err("--connections must be at least 1".into());
    }
    if opts.batch == 0 || opts.batch > 1 << 20 {
        return Err("--batch must be between 1 and 1048576".into());
    }
    if opts.messages == 0 && opts.duration.is_none() {
        return Err("--messages must be at least 1".into());
    }
    if opts.mode == Mode::Echo && opts.size < HEADER {
        return Err(format!(
            "--size must be at least {HEADER} in echo mode (timestamp + sequence number)"
        ));
    }
    Ok(Some(opts))
}

fn number<T: std::str::FromStr>(name: &str, value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("{name}: {value:?} is not a valid number"))
}

// --- payloads ----------------------------------------------------------------

/// Builds and checks message payloads (see the module docs for the layout).
struct Payload {
    size: usize,
    text: bool,
    template: Vec<u8>,
}

impl Payload {
    fn new(size: usize, text: bool) -> Self {
        let template = (0..size).map(|i| b'a' + (i % 26) as u8).collect();
        Self {
            size,
            text,
            template,
        }
    }

    fn has_header(&self) -> bool {
        self.size >= HEADER
    }

    /// `n` payloads back to back in one allocation, stamped with `sent_ns`
    /// and the sequence numbers from `first_seq`; [`Self::message`] takes
    /// them off one by one.
    fn batch(&self, first_seq: u64, n: usize, sent_ns: u64) -> Bytes {
        let mut buf = BytesMut::with_capacity(n * self.size);
        for i in 0..n {
            let at = buf.len();
            buf.extend_from_slice(&self.template);
            if self.has_header() {
                put7(&mut buf[at..at + 8], sent_ns);
                put7(&mut buf[at + 8..at + 16], first_seq + i as u64);
            }
        }
        buf.freeze()
    }

    /// The next message from a [`Self::batch`].
    fn message(&self, batch: &mut Bytes) -> Message {
        let payload = batch.split_to(self.size);
        if self.text {
            match Utf8Bytes::try_from(payload) {
                Ok(text) => Message::Text(text),
                Err(_) => unreachable!("loadgen payloads are ASCII"),
            }
        } else {
            Message::Binary(payload)
        }
    }

    /// Checks that `msg` is message number `seq` as sent; returns its send
    /// timestamp (when the payload is large enough to carry one).
    fn check(&self, msg: &Message, seq: u64) -> Result<Option<u64>, String> {
        let (data, is_text): (&[u8], bool) = match msg {
            Message::Binary(data) => (&data[..], false),
            Message::Text(text) => (&text.as_bytes()[..], true),
            other => return Err(format!("message {seq}: unexpected {other:?}")),
        };
        if is_text != self.text {
            let kind = |text| if text { "text" } else { "binary" };
            return Err(format!(
                "message {seq}: got {}, sent {}",
                kind(is_text),
                kind(self.text)
            ));
        }
        if data.len() != self.size {
            return Err(format!(
                "message {seq}: {} bytes, sent {}",
                data.len(),
                self.size
            ));
        }
        if !self.has_header() {
            return if data == self.template.as_slice() {
                Ok(None)
            } else {
                Err(format!("message {seq}: payload corrupted"))
            };
        }
        let got = get7(&data[8..16]);
        if got != Some(seq) {
            return Err(match got {
                Some(got) => format!(
                    "expected message {seq}, got message {got} (lost, duplicated or reordered)"
                ),
                None => format!("message {seq}: sequence number corrupted"),
            });
        }
        if data[HEADER..] != self.template[HEADER..] {
            return Err(format!("message {seq}: payload corrupted"));
        }
        get7(&data[..8])
            .map(Some)
            .ok_or_else(|| format!("message {seq}: timestamp corrupted"))
    }
}

/// Stores the low 56 bits of `value`, 7 bits per byte (ASCII), low first.
fn put7(dst: &mut [u8], value: u64) {
    for (i, byte) in dst.iter_mut().enumerate() {
        *byte = ((value >> (7 * i)) & 0x7f) as u8;
    }
}

fn get7(src: &[u8]) -> Option<u64> {
    let mut value = 0;
    for (i, &byte) in src.iter().enumerate() {
        if byte & 0x80 != 0 {
            return None;
        }
        value |= u64::from(byte) << (7 * i);
    }
    Some(value)
}

// --- shared state ------------------------------------------------------------

/// A task's running message count, on its own cache line: one task stores,
/// the progress line reads.
#[repr(align(64))]
#[derive(Default)]
struct Counter(AtomicU64);

struct Shared {
    /// Timestamps are nanoseconds since this.
    epoch: Instant,
    /// When the traffic started (all connections open), in epoch nanoseconds.
    start_ns: OnceLock<u64>,
    connected: AtomicU64,
    /// The counters the progress line adds up: echoes received (echo),
    /// messages received by the embedded server (oneway) or sent (oneway
    /// with --url).
    progress: Mutex<Vec<Arc<Counter>>>,
    payload: Payload,
}

impl Shared {
    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    fn counter(&self) -> Arc<Counter> {
        let counter = Arc::new(Counter::default());
        self.lock_progress().push(Arc::clone(&counter));
        counter
    }

    fn lock_progress(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Counter>>> {
        self.progress
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn progress_total(&self) -> u64 {
        self.lock_progress()
            .iter()
            .map(|c| c.0.load(Ordering::Relaxed))
            .sum()
    }
}

// --- latency -------------------------------------------------------------------

/// Round-trip times of one connection: all of them up to `cap`, then a
/// uniform sample of `cap` (reservoir sampling, algorithm R).
struct Reservoir {
    samples: Vec<u64>,
    seen: u64,
    cap: usize,
    rng: u64,
}

impl Reservoir {
    fn new(cap: usize, seed: u64) -> Self {
        Self {
            samples: Vec::new(),
            seen: 0,
            cap,
            // xorshift must not start at 0.
            rng: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
        }
    }

    fn record(&mut self, ns: u64) {
        self.seen += 1;
        if self.samples.len() < self.cap {
            self.samples.push(ns);
            return;
        }
        let slot = self.next_random() % self.seen;
        if let Some(sample) = self.samples.get_mut(slot as usize) {
            *sample = ns;
        }
    }

    /// xorshift64*: plenty for picking reservoir slots.
    fn next_random(&mut self) -> u64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// Percentiles over all connections' reservoirs. Each sample stands for
/// `seen / kept` round trips of its connection, so a connection counts as
/// much as the round trips it saw, whatever its reservoir kept.
struct Percentiles {
    sorted: Vec<(u64, f64)>,
    total_weight: f64,
    kept: usize,
    seen: u64,
}

impl Percentiles {
    fn new(reservoirs: Vec<Reservoir>) -> Self {
        let mut sorted = Vec::new();
        let mut seen = 0;
        for r in reservoirs {
            if r.samples.is_empty() {
                continue;
            }
            seen += r.seen;
            let weight = r.seen as f64 / r.samples.len() as f64;
            sorted.extend(r.samples.into_iter().map(|ns| (ns, weight)));
        }
        sorted.sort_unstable_by_key(|&(ns, _)| ns);
        let total_weight = sorted.iter().map(|&(_, w)| w).sum();
        Self {
            kept: sorted.len(),
            sorted,
            total_weight,
            seen,
        }
    }

    /// The smallest sample with at least fraction `q` of the weight at or
    /// below it (nearest rank), in nanoseconds.
    fn get(&self, q: f64) -> Option<u64> {
        let target = q * self.total_weight;
        let mut acc = 0.0;
        for &(ns, weight) in &self.sorted {
            acc += weight;
            if acc >= target {
                return Some(ns);
            }
        }
        self.sorted.last().map(|&(ns, _)| ns)
    }
}

// --- connection tasks ------------------------------------------------------------

/// How much a sender sends.
#[derive(Clone, Copy)]
enum Budget {
    Messages(u64),
    /// Until this epoch nanosecond.
    Until(u64),
}

enum TaskOut {
    Sender {
        sent: u64,
        last_flush_ns: u64,
    },
    Receiver {
        received: u64,
        last_ns: u64,
        latency: Option<Reservoir>,
    },
}

/// Writes batches (N × `write`, one `flush`) until the budget is spent, then
/// closes. With `credits` (echo mode), a batch first takes one credit per
/// message; the receiver gives one back per echo, which bounds the
/// unanswered messages to the credits there are.
async fn sender<S>(
    conn: usize,
    mut ws: WebSocketWriteHalf<S>,
    shared: Arc<Shared>,
    budget: Budget,
    batch: usize,
    credits: Option<(Arc<Semaphore>, usize)>,
    progress: Option<Arc<Counter>>,
) -> Result<TaskOut, String>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let fail = |what: &str, err: Error| format!("connection {conn}: {what}: {err}");
    let payload = &shared.payload;
    let mut seq = 0u64;
    let mut last_flush_ns = 0;
    loop {
        let now = shared.now_ns();
        let n = match budget {
            Budget::Messages(total) => (total - seq).min(batch as u64) as usize,
            Budget::Until(deadline) if now < deadline => batch,
            Budget::Until(_) => 0,
        };
        if n == 0 {
            break;
        }
        if let Some((credits, _)) = &credits {
            match credits.acquire_many(n as u32).await {
                Ok(permit) => permit.forget(),
                // The receiver stopped; it reports why.
                Err(_) => return Err(format!("connection {conn}: receiver stopped early")),
            }
        }
        // Time the batch from when it is encoded: the first message waits
        // for the rest before the flush, and that is part of its latency.
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
            progress.0.store(seq, Ordering::Relaxed);
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

/// Echo mode: reads the echoes, checks each against what was sent, records
/// its round trip and gives its credit back. Ends with the closing
/// handshake.
async fn echo_receiver<S>(
    conn: usize,
    mut ws: WebSocketReadHalf<S>,
    shared: Arc<Shared>,
    credits: Arc<Semaphore>,
    progress: Arc<Counter>,
    mut latency: Reservoir,
) -> Result<TaskOut, String>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut received = 0u64;
    let mut last_ns = 0;
    let result = loop {
        match ws.read().await {
            Ok(msg) if msg.is_data() => {
                let now = shared.now_ns();
                match shared.payload.check(&msg, received) {
                    Ok(sent_ns) => latency.record(now.saturating_sub(sent_ns.unwrap_or(now))),
                    Err(err) => break Err(format!("connection {conn}: {err}")),
                }
                received += 1;
                last_ns = now;
                progress.0.store(received, Ordering::Relaxed);
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
async fn drain_receiver<S>(conn: usize, mut ws: WebSocketReadHalf<S>) -> Result<TaskOut, String>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
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

// --- embedded server -------------------------------------------------------------

struct ServerOut {
    /// Messages echoed (echo) or received (oneway).
    messages: u64,
    /// When the client's close frame arrived, in epoch nanoseconds: the
    /// sender closes right after its last flush.
    close_ns: u64,
}

async fn embedded_server(
    listener: TcpListener,
    mode: Mode,
    shared: Arc<Shared>,
    results: mpsc::UnboundedSender<Result<ServerOut, String>>,
) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(err) => {
                eprintln!("loadgen: embedded server: accept failed: {err}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let shared = Arc::clone(&shared);
        let results = results.clone();
        tokio::spawn(async move {
            let result = server_connection(stream, mode, &shared)
                .await
                .map_err(|err| format!("embedded server, connection from {peer}: {err}"));
            let _ = results.send(result);
        });
    }
}

async fn server_connection(
    stream: TcpStream,
    mode: Mode,
    shared: &Shared,
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
                match mode {
                    // Queued; flushed below once the received input is used up.
                    Mode::Echo => ws.write(msg).await.map_err(|err| format!("write: {err}"))?,
                    Mode::Oneway => {
                        shared.payload.check(&msg, messages)?;
                    }
                }
                messages += 1;
                if let Some(progress) = &progress {
                    progress.0.store(messages, Ordering::Relaxed);
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

// --- progress and watchdog -----------------------------------------------------

/// Prints the progress line until the watchdog fires; returns why it did.
async fn monitor(shared: Arc<Shared>, connections: usize, hard_limit: Option<Duration>) -> String {
    let mut tick =
        tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let size = shared.payload.size as f64;
    let mut last_total = 0;
    let mut last_tick = Instant::now();
    let mut moved = (0, Instant::now());
    loop {
        tick.tick().await;
        let connected = shared.connected.load(Ordering::Relaxed);
        let total = shared.progress_total();
        let now = Instant::now();
        match shared.start_ns.get() {
            None => eprint!("\rconnecting: {connected}/{connections} open   "),
            Some(&start) => {
                let dt = now.duration_since(last_tick).as_secs_f64().max(1e-9);
                let rate = (total - last_total.min(total)) as f64 / dt;
                let elapsed = shared.now_ns().saturating_sub(start) as f64 / 1e9;
                eprint!(
                    "\r[{elapsed:7.1} s] {total:>12} msgs {rate:>11.0} msg/s {:>9.2} MB/s   ",
                    rate * size / 1e6
                );
                let over = hard_limit.is_some_and(|limit| {
                    shared.now_ns().saturating_sub(start) > limit.as_nanos() as u64
                });
                if over {
                    return format!(
                        "still running {} s after the --duration was over",
                        GRACE.as_secs()
                    );
                }
            }
        }
        last_total = total;
        last_tick = now;
        let progress = total + connected;
        if progress != moved.0 {
            moved = (progress, now);
        } else if now.duration_since(moved.1) >= STALL_TIMEOUT {
            return format!("nothing moved for {} s", STALL_TIMEOUT.as_secs());
        }
    }
}

fn clear_progress_line() {
    eprint!("\r{:78}\r", "");
}

// --- the run ---------------------------------------------------------------------

struct Report {
    messages: u64,
    elapsed: Duration,
    note: String,
    latency: Option<Percentiles>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let opts = match parse_args(std::env::args().skip(1)) {
        Ok(Some(opts)) => opts,
        Ok(None) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(err) => {
            eprintln!("loadgen: {err}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let shared = Arc::new(Shared {
        epoch: Instant::now(),
        start_ns: OnceLock::new(),
        connected: AtomicU64::new(0),
        progress: Mutex::new(Vec::new()),
        payload: Payload::new(opts.size, opts.text),
    });

    let (url, server) = match &opts.url {
        Some(url) => (url.clone(), None),
        None => {
            let listener = match TcpListener::bind("127.0.0.1:0").await {
                Ok(listener) => listener,
                Err(err) => {
                    eprintln!("loadgen: cannot listen on 127.0.0.1: {err}");
                    return ExitCode::FAILURE;
                }
            };
            let addr = match listener.local_addr() {
                Ok(addr) => addr,
                Err(err) => {
                    eprintln!("loadgen: {err}");
                    return ExitCode::FAILURE;
                }
            };
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::spawn(embedded_server(
                listener,
                opts.mode,
                Arc::clone(&shared),
                tx,
            ));
            (format!("ws://{addr}"), Some(rx))
        }
    };
    let target = match server {
        Some(_) => format!("embedded server at {url}"),
        None => url.clone(),
    };

    let hard_limit = opts.duration.map(|d| d + GRACE);
    let work = run(&opts, &url, Arc::clone(&shared), server);
    let watchdog = monitor(Arc::clone(&shared), opts.connections, hard_limit);
    let outcome = tokio::select! {
        outcome = work => Ok(outcome),
        reason = watchdog => Err(reason),
    };
    clear_progress_line();

    print_settings(&opts, &target);
    match outcome {
        Ok(Ok(report)) => {
            print_report(&opts, &report);
            ExitCode::SUCCESS
        }
        Ok(Err(err)) => {
            println!("result       FAILED: {err}");
            ExitCode::FAILURE
        }
        Err(reason) => {
            println!(
                "result       STOPPED by the watchdog: {reason}; {} connection(s) open, {} messages counted",
                shared.connected.load(Ordering::Relaxed),
                shared.progress_total()
            );
            // Tasks may be stuck in I/O: leave without waiting for them.
            use std::io::Write;
            let _ = std::io::stdout().flush();
            std::process::exit(3);
        }
    }
}

/// Connects, runs every connection to its end, checks the counts.
async fn run(
    opts: &Options,
    url: &str,
    shared: Arc<Shared>,
    mut server: Option<mpsc::UnboundedReceiver<Result<ServerOut, String>>>,
) -> Result<Report, String> {
    // Open every connection first, so the measured phase is traffic only.
    let mut sockets = Vec::with_capacity(opts.connections);
    for conn in 0..opts.connections {
        let (ws, _) = tokio_lockgate::connect_async(url)
            .await
            .map_err(|err| format!("connection {conn}: connect to {url}: {err}"))?;
        sockets.push(ws);
        shared.connected.fetch_add(1, Ordering::Relaxed);
    }

    let start_ns = shared.now_ns();
    let _ = shared.start_ns.set(start_ns);
    let budget = match opts.duration {
        Some(d) => Budget::Until(start_ns + d.as_nanos() as u64),
        None => Budget::Messages(opts.messages),
    };
    let window = WINDOW_BATCHES * opts.batch;
    let latency_cap = (LATENCY_SAMPLES / opts.connections).max(1000);
    // With --url the sender is the only place one-way traffic is seen.
    let count_at_sender = opts.mode == Mode::Oneway && server.is_none();

    let mut tasks = JoinSet::new();
    for (conn, ws) in sockets.into_iter().enumerate() {
        let (read_half, write_half) = ws.split();
        let credits = (opts.mode == Mode::Echo).then(|| Arc::new(Semaphore::new(window)));
        let sender_progress = count_at_sender.then(|| shared.counter());
        tasks.spawn(sender(
            conn,
            write_half,
            Arc::clone(&shared),
            budget,
            opts.batch,
            credits.clone().map(|c| (c, window)),
            sender_progress,
        ));
        match credits {
            Some(credits) => tasks.spawn(echo_receiver(
                conn,
                read_half,
                Arc::clone(&shared),
                credits,
                shared.counter(),
                Reservoir::new(latency_cap, conn as u64 + 1),
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
    let mut reservoirs = Vec::new();
    let mut server_pending = if server.is_some() {
        opts.connections
    } else {
        0
    };
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
                    TaskOut::Receiver { received: n, last_ns, latency } => {
                        match latency {
                            Some(latency) => {
                                received += n;
                                reservoirs.push(latency);
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
    match opts.mode {
        Mode::Echo => {
            if received != sent {
                return Err(format!("sent {sent} messages, {received} echoed back"));
            }
            if server.is_some() && server_messages != sent {
                return Err(format!(
                    "sent {sent} messages, the embedded server echoed {server_messages}"
                ));
            }
            let latency = Percentiles::new(reservoirs);
            let note = format!(
                "all echoed intact and in order; {} of {} round trips sampled",
                latency.kept, latency.seen
            );
            Ok(Report {
                messages: received,
                elapsed: since_start(last_rx_ns),
                note,
                latency: Some(latency),
            })
        }
        Mode::Oneway if server.is_some() => {
            if server_messages != sent {
                return Err(format!(
                    "sent {sent} messages, the embedded server received {server_messages}"
                ));
            }
            Ok(Report {
                messages: server_messages,
                elapsed: since_start(server_close_ns),
                note: if shared.payload.has_header() {
                    "all received intact and in order; rate measured at the receiver".into()
                } else {
                    "all received intact; too small for sequence numbers; rate measured at the receiver".into()
                },
                latency: None,
            })
        }
        Mode::Oneway => {
            let mut note = "rate measured at the sender (until the last flush)".to_owned();
            if unexpected > 0 {
                note += &format!("; the server sent {unexpected} messages back (ignored)");
            }
            Ok(Report {
                messages: sent,
                elapsed: since_start(last_flush_ns),
                note,
                latency: None,
            })
        }
    }
}

async fn recv_server(
    server: &mut Option<mpsc::UnboundedReceiver<Result<ServerOut, String>>>,
) -> Result<ServerOut, String> {
    match server {
        Some(rx) => rx
            .recv()
            .await
            .unwrap_or_else(|| Err("embedded server stopped".into())),
        None => std::future::pending().await,
    }
}

fn print_settings(opts: &Options, target: &str) {
    let kind = if opts.text { "text" } else { "binary" };
    println!("mode         {}", opts.mode);
    println!("target       {target}");
    println!("connections  {}", opts.connections);
    println!("size         {} B ({kind})", opts.size);
    println!("batch        {} (messages per flush)", opts.batch);
    match opts.duration {
        Some(d) => println!("limit        {:.1} s", d.as_secs_f64()),
        None => println!("limit        {} messages per connection", opts.messages),
    }
}

fn print_report(opts: &Options, report: &Report) {
    let secs = report.elapsed.as_secs_f64().max(1e-9);
    let rate = report.messages as f64 / secs;
    println!("messages     {} ({})", report.messages, report.note);
    println!("elapsed      {secs:.3} s");
    println!("msg/s        {rate:.0}");
    println!(
        "MB/s         {:.2} (payload, 1 MB = 10^6 B)",
        rate * opts.size as f64 / 1e6
    );
    if let Some(latency) = &report.latency {
        let us = |q: f64| match latency.get(q) {
            Some(ns) => format!("{:.1}", ns as f64 / 1e3),
            None => "-".to_owned(),
        };
        println!(
            "latency µs   p50 {}  p99 {}  p999 {}",
            us(0.50),
            us(0.99),
            us(0.999)
        );
    }
}
