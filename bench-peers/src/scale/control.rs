//! The line protocol between the load process and the server child it
//! spawned, over the child's stdin and stdout.
//!
//! The server prints `PORT <port>` once its listener is up. Then it answers,
//! one line each, from a plain thread (so it answers even while its runtime
//! is saturated):
//!
//! - `live`: `LIVE <n>`, connections wrapped by the library and serving;
//! - `cpu`: `CPU <µs>`, the process's user + system CPU time
//!   (`getrusage(RUSAGE_SELF)`, every thread, microsecond resolution);
//! - `rss`: `RSS <bytes>`, its resident set (`/proc/self/statm`);
//! - `go`: `GO`, after telling the fan-out publisher to start.
//!
//! End of input (the load process closed the pipe or died) ends the server
//! process, so no server outlives its run.

use std::io::{BufRead, Write};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// The longest the server may take to answer a command or start up.
const ANSWER: Duration = Duration::from_secs(30);

/// Server side: answers commands on stdin until it closes, then exits the
/// process. `go` is taken by the first `go` command (fan-out servers).
pub(super) fn answer(live: Arc<AtomicUsize>, go: Option<tokio::sync::oneshot::Sender<()>>) {
    let mut go = go;
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let reply = match line.trim() {
            "live" => format!("LIVE {}", live.load(Ordering::Relaxed)),
            "cpu" => format!("CPU {}", process_cpu().as_micros()),
            "rss" => format!("RSS {}", crate::sys::rss_bytes()),
            "go" => {
                if let Some(tx) = go.take() {
                    let _ = tx.send(());
                }
                "GO 1".to_string()
            }
            other => crate::fail("scale server", &format!("unknown command {other:?}")),
        };
        if writeln!(out, "{reply}").and_then(|()| out.flush()).is_err() {
            break;
        }
    }
    std::process::exit(0);
}

/// CPU time (user + system) of every thread of this process, living or
/// ended.
pub(super) fn process_cpu() -> Duration {
    // SAFETY: `usage` is a plain struct owned by this frame, which
    // getrusage fills in; RUSAGE_SELF names the calling process.
    #[allow(unsafe_code)]
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// Load side: a running server child.
pub(super) struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    /// Its listening port on 127.0.0.1.
    pub(super) port: u16,
    lib: String,
}

impl Server {
    /// Re-executes this binary with `args` (the hidden server subcommand)
    /// and waits for its port.
    pub(super) async fn spawn(lib: &str, args: &[String]) -> Self {
        let exe = std::env::current_exe().expect("own executable");
        let mut child = Command::new(exe)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| crate::fail(lib, &format!("spawn the server child: {e}")));
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut s = Self {
            child,
            stdin: Some(stdin),
            lines: BufReader::new(stdout).lines(),
            port: 0,
            lib: lib.to_string(),
        };
        s.port = u16::try_from(s.reply("PORT").await)
            .unwrap_or_else(|_| crate::fail(lib, "server printed a bad port"));
        s
    }

    /// The number in the next `KEY <number>` line.
    async fn reply(&mut self, key: &str) -> u64 {
        let line = tokio::time::timeout(ANSWER, self.lines.next_line())
            .await
            .unwrap_or_else(|_| {
                crate::fail(&self.lib, &format!("server silent, waiting for {key}"))
            })
            .unwrap_or_else(|e| crate::fail(&self.lib, &format!("server stdout: {e}")))
            .unwrap_or_else(|| crate::fail(&self.lib, &format!("server exited before {key}")));
        line.strip_prefix(key)
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| crate::fail(&self.lib, &format!("expected {key}, got {line:?}")))
    }

    /// Sends `cmd` and returns the number in the answer `KEY <number>`.
    pub(super) async fn ask(&mut self, cmd: &str, key: &str) -> u64 {
        let stdin = self.stdin.as_mut().expect("server still running");
        let sent = stdin.write_all(format!("{cmd}\n").as_bytes()).await;
        if let Err(e) = sent.and(stdin.flush().await) {
            crate::fail(&self.lib, &format!("server stdin: {e}"));
        }
        self.reply(key).await
    }

    /// The server's CPU time so far.
    pub(super) async fn cpu(&mut self) -> Duration {
        Duration::from_micros(self.ask("cpu", "CPU").await)
    }

    /// The server's resident set, bytes.
    pub(super) async fn rss(&mut self) -> u64 {
        self.ask("rss", "RSS").await
    }

    /// Waits until the server serves exactly `n` connections.
    pub(super) async fn wait_live(&mut self, n: usize, within: Duration) {
        let start = Instant::now();
        loop {
            let live = self.ask("live", "LIVE").await as usize;
            if live == n {
                return;
            }
            if start.elapsed() > within {
                crate::fail(
                    &self.lib,
                    &format!("server serves {live} connections, expected {n}"),
                );
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Ends the server: closes its stdin (it exits at end of input) and
    /// waits for it, killing it (by its PID, through the child handle) if it
    /// has not exited within 10 s.
    pub(super) async fn end(mut self) {
        drop(self.stdin.take());
        match tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await {
            Ok(Ok(status)) if status.success() => {}
            Ok(Ok(status)) => crate::fail(&self.lib, &format!("server child ended: {status}")),
            Ok(Err(e)) => crate::fail(&self.lib, &format!("wait for the server child: {e}")),
            Err(_) => {
                let _ = self.child.kill().await;
                crate::fail(&self.lib, "server child did not exit within 10 s");
            }
        }
    }
}
