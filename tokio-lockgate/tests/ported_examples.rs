//! tokio-tungstenite's echo server, chat server and client, ported by
//! renaming the crates only (`examples/tungstenite/`), run as the programs
//! they are: what a user porting such code relies on is that it behaves
//! as before, not just that it compiles.
//!
//! `cargo test` builds the examples before running tests; this test runs
//! the built binaries.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::thread;
use std::time::{Duration, Instant};

/// How long any one expected line may take.
const WAIT: Duration = Duration::from_secs(20);

/// A running example, ended by PID when dropped, with its output lines.
struct Program {
    name: &'static str,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Program {
    /// Starts example `name` with `args`; stdout and stderr lines both
    /// arrive on `lines`.
    fn start(name: &'static str, args: &[&str]) -> Program {
        let path = example_path(name);
        let mut child = Command::new(&path)
            .args(args)
            .env("RUST_LOG", "info")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", path.display()));
        let (tx, lines) = channel();
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        for output in [
            Box::new(stdout) as Box<dyn std::io::Read + Send>,
            Box::new(stderr),
        ] {
            let tx = tx.clone();
            thread::spawn(move || {
                for line in BufReader::new(output).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        let stdin = child.stdin.take();
        Program {
            name,
            child,
            stdin,
            lines,
        }
    }

    /// Waits for a line containing `needle`; panics with what was seen.
    fn expect_line(&self, needle: &str) -> String {
        let deadline = Instant::now() + WAIT;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return line,
                Ok(line) => seen.push(line),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => panic!(
                    "{}: no line with {needle:?} within {WAIT:?}; saw {seen:#?}",
                    self.name
                ),
            }
        }
    }

    fn type_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `target/<profile>/examples/<name>`, next to this test's `deps/`.
fn example_path(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
    let path = profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.exists(),
        "{} is not built: `cargo test -p tokio-lockgate` builds the examples \
         (or `cargo build -p tokio-lockgate --examples`)",
        path.display()
    );
    path
}

/// A port free at the time of asking, for a program that takes an address.
fn free_address() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

#[test]
fn ported_echo_server_echoes_what_the_ported_client_types() {
    let addr = free_address();
    let server = Program::start("tungstenite-echo-server", &[&addr]);
    server.expect_line("Listening on");

    let url = format!("ws://{addr}/");
    let mut client = Program::start("tungstenite-client", &[&url]);
    client.expect_line("handshake has been successfully completed");
    for line in ["hello from a port", "a second line"] {
        client.type_line(line);
        client.expect_line(line);
    }
}

#[test]
fn ported_chat_server_relays_between_ported_clients() {
    let addr = free_address();
    let server = Program::start("tungstenite-server", &[&addr]);
    server.expect_line("Listening on");

    let url = format!("ws://{addr}/");
    let mut alice = Program::start("tungstenite-client", &[&url]);
    alice.expect_line("handshake has been successfully completed");
    server.expect_line("WebSocket connection established");
    let mut bob = Program::start("tungstenite-client", &[&url]);
    bob.expect_line("handshake has been successfully completed");
    server.expect_line("WebSocket connection established");

    alice.type_line("hi bob");
    bob.expect_line("hi bob");
    server.expect_line("Received a message from");
    bob.type_line("hi alice");
    alice.expect_line("hi alice");
}
