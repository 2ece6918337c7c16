//! Example programs run as processes by tests: started from the built
//! binaries, their output read line by line, ended by PID when dropped.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::thread;
use std::time::{Duration, Instant};

/// How long any one expected line may take.
pub const WAIT: Duration = Duration::from_secs(20);

/// A running example, ended by PID when dropped, with its output lines.
pub struct Program {
    name: &'static str,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Program {
    /// Starts example `name` with `args`; stdout and stderr lines both
    /// arrive on `lines`.
    pub fn start(name: &'static str, args: &[&str]) -> Program {
        let mut command = Command::new(example_path(name));
        command.args(args).env("RUST_LOG", "info");
        Program::spawn(name, command)
    }

    /// Starts `command` in a process group of its own (so that helpers it
    /// starts end with it), its output on `lines`.
    pub fn spawn(name: &'static str, mut command: Command) -> Program {
        use std::os::unix::process::CommandExt;
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {name}: {e}"));
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
    pub fn expect_line(&self, needle: &str) -> String {
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

    /// The lines from the next one containing `first` through the next
    /// one containing `last`, joined with newlines.
    pub fn expect_block(&self, first: &str, last: &str) -> String {
        let mut block = vec![self.expect_line(first)];
        while !block.last().unwrap().contains(last) {
            let line = self
                .lines
                .recv_timeout(WAIT)
                .unwrap_or_else(|_| panic!("{}: no line with {last:?} within {WAIT:?}", self.name));
            block.push(line);
        }
        block.join("\n") + "\n"
    }

    pub fn type_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        // The group is the child's PID (process_group(0)).
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `target/<profile>/examples/<name>`, next to this test's `deps/`.
pub fn example_path(name: &str) -> PathBuf {
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
pub fn free_address() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}
