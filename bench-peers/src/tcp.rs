//! Scenario 3 (loopback TCP, both ends the same library) and scenario 5
//! (write calls per message in those jobs).
//!
//! Each run opens a fresh 127.0.0.1 connection, upgrades it with the
//! harness's neutral handshake (TCP_NODELAY on both ends), then runs the
//! server end and the client end on two OS threads: blocking libraries and
//! the raw-TCP row call the socket directly, async libraries run on a
//! current-thread tokio runtime in each thread (with `--pin`, the server end
//! is pinned to CPU 0 and the client end to CPU 1). Both threads wait on a
//! barrier after setup; a run's time is from the earlier start to the later
//! finish. Data flows server → client in the one-way jobs; in echo and
//! ping-pong the client sends and the server sends each message back. The
//! receiving end checks every message (index, length, content digest), so a
//! library cannot skip work.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::frames::{self, OP_BINARY, OP_TEXT};
use crate::libs::{AsyncLib, SyncLib};
use crate::streams::{Calls, Counted};
use crate::upgrade;

/// Messages per echo window.
pub(crate) const WINDOW: usize = 64;
/// Payload size of the small TCP messages.
pub(crate) const SMALL: usize = 64;

/// One TCP job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Job {
    /// Server writes every message, then flushes once; client reads them.
    Batched,
    /// Server writes and flushes each message; client reads them.
    FlushEach,
    /// Client writes a window of 64 and flushes, then reads the 64 echoes;
    /// server reads each message, writes it back, flushes after every 64th.
    Echo,
    /// One message in flight: client sends, server sends it back.
    PingPong,
    /// Server sends (write + flush) each 1 MiB binary message.
    Big,
}

impl Job {
    /// Every job, in report order.
    pub(crate) const ALL: [Job; 5] = [
        Job::Batched,
        Job::FlushEach,
        Job::Echo,
        Job::PingPong,
        Job::Big,
    ];
}

/// How many messages each job moves.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sizes {
    /// Messages in the batched one-way job.
    pub(crate) batched: usize,
    /// Messages in the flush-each one-way job.
    pub(crate) flush_each: usize,
    /// Messages in the echo job (a multiple of [`WINDOW`]).
    pub(crate) echo: usize,
    /// Round trips in the ping-pong job.
    pub(crate) pingpong: usize,
    /// Messages in the large-message job.
    pub(crate) big: usize,
    /// Size of each large message.
    pub(crate) big_size: usize,
}

impl Sizes {
    /// Messages moved by `job`.
    pub(crate) fn count(&self, job: Job) -> usize {
        match job {
            Job::Batched => self.batched,
            Job::FlushEach => self.flush_each,
            Job::Echo => self.echo,
            Job::PingPong => self.pingpong,
            Job::Big => self.big,
        }
    }
}

/// Payloads, expectations and pre-encoded frames for the TCP jobs.
pub(crate) struct TcpData {
    /// The job sizes.
    pub(crate) sizes: Sizes,
    small: Vec<String>,
    small_prefix: Vec<u64>,
    big: Vec<Bytes>,
    big_digest: Vec<u64>,
    raw_small_srv: Vec<u8>,
    raw_small_cli: Vec<u8>,
    raw_big_srv: Vec<Vec<u8>>,
}

const SRV_FRAME: usize = 2 + SMALL;
const CLI_FRAME: usize = 2 + 4 + SMALL;

impl TcpData {
    /// Builds payloads for `sizes` (64-byte texts starting with their
    /// 8-digit index; `big_size`-byte binaries with varying content).
    pub(crate) fn new(sizes: Sizes) -> Self {
        assert_eq!(sizes.echo % WINDOW, 0);
        let n = sizes
            .batched
            .max(sizes.flush_each)
            .max(sizes.echo)
            .max(sizes.pingpong);
        let small: Vec<String> = (0..n)
            .map(|i| format!("{i:08}{}", "y".repeat(SMALL - 8)))
            .collect();
        let small_prefix = small.iter().map(|s| frames::prefix(s.as_bytes())).collect();
        let big: Vec<Bytes> = (0..sizes.big)
            .map(|i| crate::mem::pattern(i + 1000, sizes.big_size))
            .collect();
        let big_digest = big.iter().map(|b| frames::digest(b)).collect();
        let mut raw_small_srv = Vec::with_capacity(n * SRV_FRAME);
        let mut raw_small_cli = Vec::with_capacity(n * CLI_FRAME);
        for (i, s) in small.iter().enumerate() {
            frames::encode(&mut raw_small_srv, OP_TEXT, s.as_bytes(), None);
            frames::encode(
                &mut raw_small_cli,
                OP_TEXT,
                s.as_bytes(),
                Some(frames::mask_for(i)),
            );
        }
        assert_eq!(raw_small_srv.len(), n * SRV_FRAME);
        assert_eq!(raw_small_cli.len(), n * CLI_FRAME);
        let raw_big_srv = big
            .iter()
            .map(|b| {
                let mut f = Vec::with_capacity(b.len() + 10);
                frames::encode(&mut f, OP_BINARY, b, None);
                f
            })
            .collect();
        Self {
            sizes,
            small,
            small_prefix,
            big,
            big_digest,
            raw_small_srv,
            raw_small_cli,
            raw_big_srv,
        }
    }

    fn check_small(&self, lib: &str, i: usize, p: &[u8]) {
        if p.len() != SMALL || frames::prefix(p) != self.small_prefix[i] {
            crate::fail(lib, &format!("TCP message {i}: wrong length or index"));
        }
    }

    fn check_big(&self, lib: &str, i: usize, p: &[u8]) {
        if p.len() != self.sizes.big_size || frames::digest(p) != self.big_digest[i] {
            crate::fail(
                lib,
                &format!("TCP large message {i}: wrong length or content"),
            );
        }
    }

    fn server_texts(&self, job: Job) -> &[String] {
        match job {
            Job::Batched | Job::FlushEach => &self.small[..self.sizes.count(job)],
            _ => &[],
        }
    }

    fn server_binaries(&self, job: Job) -> &[Bytes] {
        if job == Job::Big { &self.big } else { &[] }
    }

    fn client_texts(&self, job: Job) -> &[String] {
        match job {
            Job::Echo | Job::PingPong => &self.small[..self.sizes.count(job)],
            _ => &[],
        }
    }
}

/// What one TCP run measured.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TcpRun {
    /// From the earlier end's start to the later end's finish.
    pub(crate) elapsed: Duration,
    /// Messages moved (round trips for ping-pong).
    pub(crate) msgs: usize,
    /// Successful write calls on the server end's socket.
    pub(crate) server_writes: u64,
    /// Successful read calls on the client end's socket.
    pub(crate) client_reads: u64,
}

/// (start, finish, (write calls, read calls)) of one end.
type EndResult = (Instant, Instant, (u64, u64));

fn combine(job: Job, d: &TcpData, srv: EndResult, cli: EndResult) -> TcpRun {
    TcpRun {
        elapsed: srv.1.max(cli.1) - srv.0.min(cli.0),
        msgs: d.sizes.count(job),
        server_writes: srv.2.0,
        client_reads: cli.2.1,
    }
}

fn msgs_sync<L: SyncLib>(texts: &[String], bins: &[Bytes]) -> Vec<L::Msg> {
    texts
        .iter()
        .map(|t| L::text(t.clone()))
        .chain(bins.iter().map(|b| L::binary(b.clone())))
        .collect()
}

fn msgs_async<L: AsyncLib>(texts: &[String], bins: &[Bytes]) -> Vec<L::Msg> {
    texts
        .iter()
        .map(|t| L::text(t.clone()))
        .chain(bins.iter().map(|b| L::binary(b.clone())))
        .collect()
}

fn server_sync<L: SyncLib, S: Read + Write>(
    job: Job,
    ws: &mut L::Ws<S>,
    msgs: Vec<L::Msg>,
    n: usize,
) {
    match job {
        Job::Batched => {
            for m in msgs {
                L::write(ws, m);
            }
            L::flush(ws);
        }
        Job::FlushEach | Job::Big => {
            for m in msgs {
                L::write(ws, m);
                L::flush(ws);
            }
        }
        Job::Echo => {
            for i in 0..n {
                let m = L::read(ws);
                L::write(ws, m);
                if (i + 1) % WINDOW == 0 {
                    L::flush(ws);
                }
            }
        }
        Job::PingPong => {
            for _ in 0..n {
                let m = L::read(ws);
                L::write(ws, m);
                L::flush(ws);
            }
        }
    }
}

fn client_sync<L: SyncLib, S: Read + Write>(
    lib: &str,
    job: Job,
    ws: &mut L::Ws<S>,
    msgs: Vec<L::Msg>,
    d: &TcpData,
    n: usize,
) {
    match job {
        Job::Batched | Job::FlushEach => {
            for i in 0..n {
                let m = L::read(ws);
                d.check_small(lib, i, L::payload(&m));
            }
        }
        Job::Big => {
            for i in 0..n {
                let m = L::read(ws);
                d.check_big(lib, i, L::payload(&m));
            }
        }
        Job::Echo => {
            let mut it = msgs.into_iter();
            for w in 0..n / WINDOW {
                for m in it.by_ref().take(WINDOW) {
                    L::write(ws, m);
                }
                L::flush(ws);
                for j in 0..WINDOW {
                    let m = L::read(ws);
                    d.check_small(lib, w * WINDOW + j, L::payload(&m));
                }
            }
        }
        Job::PingPong => {
            for (i, m) in msgs.into_iter().enumerate() {
                L::write(ws, m);
                L::flush(ws);
                let r = L::read(ws);
                d.check_small(lib, i, L::payload(&r));
            }
        }
    }
}

async fn server_async<L: AsyncLib, S: AsyncRead + AsyncWrite + Unpin>(
    job: Job,
    ws: &mut L::Ws<S>,
    msgs: Vec<L::Msg>,
    n: usize,
) {
    match job {
        Job::Batched => {
            for m in msgs {
                L::write(ws, m).await;
            }
            L::flush(ws).await;
        }
        Job::FlushEach | Job::Big => {
            for m in msgs {
                L::write(ws, m).await;
                L::flush(ws).await;
            }
        }
        Job::Echo => {
            for i in 0..n {
                let m = L::read(ws).await;
                L::write(ws, m).await;
                if (i + 1) % WINDOW == 0 {
                    L::flush(ws).await;
                }
            }
        }
        Job::PingPong => {
            for _ in 0..n {
                let m = L::read(ws).await;
                L::write(ws, m).await;
                L::flush(ws).await;
            }
        }
    }
}

async fn client_async<L: AsyncLib, S: AsyncRead + AsyncWrite + Unpin>(
    lib: &str,
    job: Job,
    ws: &mut L::Ws<S>,
    msgs: Vec<L::Msg>,
    d: &TcpData,
    n: usize,
) {
    match job {
        Job::Batched | Job::FlushEach => {
            for i in 0..n {
                let m = L::read(ws).await;
                d.check_small(lib, i, L::payload(&m));
            }
        }
        Job::Big => {
            for i in 0..n {
                let m = L::read(ws).await;
                d.check_big(lib, i, L::payload(&m));
            }
        }
        Job::Echo => {
            let mut it = msgs.into_iter();
            for w in 0..n / WINDOW {
                for m in it.by_ref().take(WINDOW) {
                    L::write(ws, m).await;
                }
                L::flush(ws).await;
                for j in 0..WINDOW {
                    let m = L::read(ws).await;
                    d.check_small(lib, w * WINDOW + j, L::payload(&m));
                }
            }
        }
        Job::PingPong => {
            for (i, m) in msgs.into_iter().enumerate() {
                L::write(ws, m).await;
                L::flush(ws).await;
                let r = L::read(ws).await;
                d.check_small(lib, i, L::payload(&r));
            }
        }
    }
}

/// Runs `job` with a blocking library on both ends.
pub(crate) fn run_sync<L: SyncLib>(
    lib: &str,
    job: Job,
    d: &TcpData,
    listener: &TcpListener,
) -> TcpRun {
    let (s, c) = upgrade::upgraded_pair(listener);
    let n = d.sizes.count(job);
    let barrier = Barrier::new(2);
    let (srv, cli) = thread::scope(|sc| {
        let b = &barrier;
        let hs = sc.spawn(move || {
            crate::sys::pin_to_cpu(0);
            let cnt = Arc::new(Calls::default());
            let mut ws = L::wrap(Counted::new(s, cnt.clone()), true);
            let msgs = msgs_sync::<L>(d.server_texts(job), d.server_binaries(job));
            b.wait();
            let t0 = Instant::now();
            server_sync::<L, _>(job, &mut ws, msgs, n);
            (
                t0,
                Instant::now(),
                (cnt.writes.load(Relaxed), cnt.reads.load(Relaxed)),
            )
        });
        let hc = sc.spawn(move || {
            crate::sys::pin_to_cpu(1);
            let cnt = Arc::new(Calls::default());
            let mut ws = L::wrap(Counted::new(c, cnt.clone()), false);
            let msgs = msgs_sync::<L>(d.client_texts(job), &[]);
            b.wait();
            let t0 = Instant::now();
            client_sync::<L, _>(lib, job, &mut ws, msgs, d, n);
            (
                t0,
                Instant::now(),
                (cnt.writes.load(Relaxed), cnt.reads.load(Relaxed)),
            )
        });
        (
            hs.join().expect("server end panicked"),
            hc.join().expect("client end panicked"),
        )
    });
    combine(job, d, srv, cli)
}

fn async_end<F: std::future::Future<Output = EndResult>>(make: impl FnOnce() -> F) -> EndResult {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(make())
}

/// A blocking std socket, made non-blocking and registered with the
/// current tokio runtime.
pub(crate) fn to_tokio(s: TcpStream) -> tokio::net::TcpStream {
    s.set_nonblocking(true).expect("set_nonblocking");
    tokio::net::TcpStream::from_std(s).expect("register with tokio")
}

/// Runs `job` with an async library on both ends (a current-thread runtime
/// per end, each on its own thread).
pub(crate) fn run_async<L: AsyncLib>(
    lib: &str,
    job: Job,
    d: &TcpData,
    listener: &TcpListener,
) -> TcpRun {
    let (s, c) = upgrade::upgraded_pair(listener);
    let n = d.sizes.count(job);
    let barrier = Barrier::new(2);
    let (srv, cli) = thread::scope(|sc| {
        let b = &barrier;
        let hs = sc.spawn(move || {
            crate::sys::pin_to_cpu(0);
            async_end(|| async move {
                let cnt = Arc::new(Calls::default());
                let mut ws = L::wrap(Counted::new(to_tokio(s), cnt.clone()), true).await;
                let msgs = msgs_async::<L>(d.server_texts(job), d.server_binaries(job));
                b.wait();
                let t0 = Instant::now();
                server_async::<L, _>(job, &mut ws, msgs, n).await;
                (
                    t0,
                    Instant::now(),
                    (cnt.writes.load(Relaxed), cnt.reads.load(Relaxed)),
                )
            })
        });
        let hc = sc.spawn(move || {
            crate::sys::pin_to_cpu(1);
            async_end(|| async move {
                let cnt = Arc::new(Calls::default());
                let mut ws = L::wrap(Counted::new(to_tokio(c), cnt.clone()), false).await;
                let msgs = msgs_async::<L>(d.client_texts(job), &[]);
                b.wait();
                let t0 = Instant::now();
                client_async::<L, _>(lib, job, &mut ws, msgs, d, n).await;
                (
                    t0,
                    Instant::now(),
                    (cnt.writes.load(Relaxed), cnt.reads.load(Relaxed)),
                )
            })
        });
        (
            hs.join().expect("server end panicked"),
            hc.join().expect("client end panicked"),
        )
    });
    combine(job, d, srv, cli)
}

/// Runs `job` as plain `write_all`/`read_exact` of the same frame bytes the
/// libraries produce: the physical limit of this machine's loopback.
pub(crate) fn run_raw(job: Job, d: &TcpData, listener: &TcpListener) -> TcpRun {
    let lib = "raw TCP";
    let (s, c) = upgrade::upgraded_pair(listener);
    let n = d.sizes.count(job);
    let barrier = Barrier::new(2);
    let (srv, cli) = thread::scope(|sc| {
        let b = &barrier;
        let hs = sc.spawn(move || {
            crate::sys::pin_to_cpu(0);
            let cnt = Arc::new(Calls::default());
            let mut s = Counted::new(s, cnt.clone());
            let mut buf = vec![1u8; WINDOW * CLI_FRAME];
            b.wait();
            let t0 = Instant::now();
            match job {
                Job::Batched => s
                    .write_all(&d.raw_small_srv[..n * SRV_FRAME])
                    .expect("raw write"),
                Job::FlushEach => {
                    for f in d.raw_small_srv[..n * SRV_FRAME].chunks(SRV_FRAME) {
                        s.write_all(f).expect("raw write");
                    }
                }
                Job::Big => {
                    for f in &d.raw_big_srv {
                        s.write_all(f).expect("raw write");
                    }
                }
                Job::Echo | Job::PingPong => {
                    let per = if job == Job::Echo { WINDOW } else { 1 };
                    for w in 0..n / per {
                        s.read_exact(&mut buf[..per * CLI_FRAME]).expect("raw read");
                        let at = w * per * SRV_FRAME;
                        s.write_all(&d.raw_small_srv[at..at + per * SRV_FRAME])
                            .expect("raw write");
                    }
                }
            }
            (
                t0,
                Instant::now(),
                (cnt.writes.load(Relaxed), cnt.reads.load(Relaxed)),
            )
        });
        let hc = sc.spawn(move || {
            crate::sys::pin_to_cpu(1);
            let cnt = Arc::new(Calls::default());
            let mut c = Counted::new(c, cnt.clone());
            let total = match job {
                Job::Batched | Job::FlushEach => n * SRV_FRAME,
                Job::Big => d.raw_big_srv[0].len(),
                Job::Echo => WINDOW * SRV_FRAME,
                Job::PingPong => SRV_FRAME,
            };
            let mut buf = vec![1u8; total];
            b.wait();
            let t0 = Instant::now();
            match job {
                Job::Batched | Job::FlushEach => c.read_exact(&mut buf).expect("raw read"),
                Job::Big => {
                    let hdr = buf.len() - d.sizes.big_size;
                    for i in 0..n {
                        c.read_exact(&mut buf).expect("raw read");
                        d.check_big(lib, i, &buf[hdr..]);
                    }
                }
                Job::Echo | Job::PingPong => {
                    let per = if job == Job::Echo { WINDOW } else { 1 };
                    for w in 0..n / per {
                        let at = w * per * CLI_FRAME;
                        c.write_all(&d.raw_small_cli[at..at + per * CLI_FRAME])
                            .expect("raw write");
                        c.read_exact(&mut buf).expect("raw read");
                        let at = w * per * SRV_FRAME;
                        if buf[..] != d.raw_small_srv[at..at + per * SRV_FRAME] {
                            crate::fail(lib, "echoed bytes differ");
                        }
                    }
                }
            }
            let t1 = Instant::now();
            if matches!(job, Job::Batched | Job::FlushEach)
                && buf[..] != d.raw_small_srv[..n * SRV_FRAME]
            {
                crate::fail(lib, "received bytes differ");
            }
            (t0, t1, (cnt.writes.load(Relaxed), cnt.reads.load(Relaxed)))
        });
        (
            hs.join().expect("server end panicked"),
            hc.join().expect("client end panicked"),
        )
    });
    combine(job, d, srv, cli)
}
