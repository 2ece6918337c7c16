//! A `lockgate-fanout` process, started and stopped by PID.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::within;

/// A `lockgate-fanout` process, its stderr lines sent to a channel as
/// they come (and echoed, for a failing test's log).
pub struct Process {
    /// Taken by [`exit`](Self::exit).
    child: Option<Child>,
    pid: u32,
    /// `HOST:PORT`, as the process printed it.
    pub addr: String,
    stderr: mpsc::UnboundedReceiver<String>,
    /// Kept open: the process writes its one line and may write more.
    _stdout: BufReader<ChildStdout>,
}

impl Process {
    pub fn start(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lockgate-fanout"))
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("lockgate-fanout starts");
        let stderr = child.stderr.take().expect("piped");
        let (lines, stderr_rx) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("[node] {line}");
                let _ = lines.send(line);
            }
        });
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("the listening line");
        let addr = line
            .trim()
            .strip_prefix("listening on ws://")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        Self {
            pid: child.id(),
            child: Some(child),
            addr,
            stderr: stderr_rx,
            _stdout: stdout,
        }
    }

    pub fn url(&self, topic: &str) -> String {
        format!("ws://{}/topics/{topic}", self.addr)
    }

    /// Sends `signal` (`TERM`, `INT`) with kill(1), as an orchestrator does.
    pub fn signal(&self, signal: &str) -> Instant {
        let sent = Instant::now();
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid.to_string())
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -{signal}");
        sent
    }

    /// Kills it with SIGKILL, as in a crash, and reaps it.
    pub fn kill(mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The first stderr line containing `needle`.
    pub async fn line(&mut self, needle: &str) -> String {
        within(30, needle, async {
            loop {
                let line = self.stderr.recv().await.expect("the node's stderr ended");
                if line.contains(needle) {
                    return line;
                }
            }
        })
        .await
    }

    /// Waits for the process to exit, at most `limit`.
    pub async fn exit(mut self, limit: Duration) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        let waiting = tokio::task::spawn_blocking(move || child.wait());
        match tokio::time::timeout(limit, waiting).await {
            Ok(status) => status.expect("the waiting thread").expect("wait(2)"),
            Err(_) => {
                let _ = Command::new("kill")
                    .arg("-KILL")
                    .arg(self.pid.to_string())
                    .status();
                panic!("lockgate-fanout still running {limit:?} after the signal");
            }
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
