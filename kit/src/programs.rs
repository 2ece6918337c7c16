//! Example programs run as processes by tests: started from the built
//! binaries, their output read line by line, ended by PID when dropped.
//! Used by both crates' tests (tokio-lockgate's support re-exports it).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use lockgate::Message;

/// How long any one expected line may take.
pub const WAIT: Duration = Duration::from_secs(20);

/// A running example, ended by PID when dropped, with its output lines.
pub struct Program {
    name: &'static str,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Program {
    /// Starts example `name` with `args`; stdout and stderr lines both
    /// arrive on `lines`.
    pub fn start(name: &'static str, args: &[&str]) -> Program {
        let mut command = Command::new(example_path(name));
        command.args(args).env("RUST_LOG", "info");
        Program::spawn(name, command)
    }

    /// Starts example `name` with `args`, allowed at most `limit` open file
    /// descriptors (`ulimit -n`, then `exec`: the PID is the example's).
    pub fn start_with_fd_limit(name: &'static str, args: &[&str], limit: u32) -> Program {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(format!(r#"ulimit -n {limit} && exec "$0" "$@""#))
            .arg(example_path(name))
            .args(args)
            .env("RUST_LOG", "info");
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
        let stderr_lines = Arc::new(Mutex::new(Vec::new()));
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        for (output, keep) in [
            (Box::new(stdout) as Box<dyn std::io::Read + Send>, None),
            (Box::new(stderr), Some(Arc::clone(&stderr_lines))),
        ] {
            let tx = tx.clone();
            thread::spawn(move || {
                for line in BufReader::new(output).lines() {
                    let Ok(line) = line else { break };
                    if let Some(keep) = &keep {
                        keep.lock().unwrap().push(line.clone());
                    }
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
            stderr: stderr_lines,
        }
    }

    /// Every line written to stderr so far.
    pub fn stderr_lines(&self) -> Vec<String> {
        self.stderr.lock().unwrap().clone()
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

    /// Sends signal `name` (`TERM`, `INT`, ...) to the program itself, not
    /// its group.
    pub fn signal(&self, name: &str) {
        let sent = Command::new("kill")
            .args(["-s", name, &self.child.id().to_string()])
            .status()
            .unwrap_or_else(|e| panic!("{}: kill -s {name}: {e}", self.name));
        assert!(sent.success(), "{}: kill -s {name}: {sent}", self.name);
    }

    /// Waits for the program to exit, at most [`WAIT`], and returns how it
    /// did; panics with its stderr if it is still running then.
    pub fn wait_exit(&mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "{}: still running {WAIT:?} later; stderr: {:#?}",
                self.name,
                self.stderr_lines()
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Runs the program to its end: each of `lines` must appear, in order,
    /// and it must exit with status 0. Returns it, for its stderr.
    pub fn runs_to_completion(mut self, lines: &[&str]) -> Program {
        for line in lines {
            self.expect_line(line);
        }
        let status = self.wait_exit();
        assert!(
            status.success(),
            "{}: {status}; stderr: {:#?}",
            self.name,
            self.stderr_lines()
        );
        self
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
            .stderr(Stdio::null())
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
        "{} is not built: `cargo test -p <package>` builds the package's examples \
         (or `cargo build -p <package> --examples`)",
        path.display()
    );
    path
}

/// A port free at the time of asking, for a program that takes an address.
pub fn free_address() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

/// The most times a failing `accept` may be reported on stderr while the
/// connections are held.
const ACCEPT_REPORTS: usize = 10;

/// Runs echo-server example `name` (one that takes its address as the first
/// argument and prints "listening on") with 32 file descriptors, holds 80
/// connections open for a few seconds, so that `accept` keeps failing with
/// EMFILE, and closes them. The example must report the failures a few
/// times, not once per retry; must retry a few times, not spin (each report
/// counts the failures since the one before); and must serve a new client
/// once the connections are gone. Its other stderr lines may only be about
/// single connections (the tokio example logs each failed handshake): one
/// per connection at most.
pub fn echo_server_survives_fd_exhaustion(name: &'static str) {
    const CONNECTIONS: usize = 80;
    const HOLD: Duration = Duration::from_millis(2500);
    let addr = free_address();
    let server = Program::start_with_fd_limit(name, &[&addr], 32);
    server.expect_line("listening on");

    // More than the example has descriptors for; the rest wait in the
    // listen backlog, and `accept` fails on them.
    let held: Vec<TcpStream> = (0..CONNECTIONS)
        .map(|_| TcpStream::connect_timeout(&addr.parse().unwrap(), WAIT).unwrap())
        .collect();
    server.expect_line("accept failed");
    thread::sleep(HOLD);
    drop(held);

    // Served once the held connections are gone (after at most one more
    // wait, a second at most).
    let (mut ws, _) = lockgate::connect(format!("ws://{addr}")).unwrap();
    ws.send(Message::text("still here")).unwrap();
    assert_eq!(ws.read().unwrap(), Message::text("still here"));
    ws.close(None).unwrap();
    while ws.read().is_ok() {}

    let stderr = server.stderr_lines();
    let (reports, others): (Vec<&String>, Vec<&String>) = stderr
        .iter()
        .partition(|line| line.contains("accept failed"));
    assert!(
        reports.len() <= ACCEPT_REPORTS && others.len() <= CONNECTIONS + 1,
        "{name}: {} accept reports and {} other lines on stderr: {stderr:#?}",
        reports.len(),
        others.len()
    );
    // A failing accept retried at once is hundreds of thousands of tries a
    // second; backing off from 5 ms to 1 s, about a dozen in all.
    let retries: u64 = reports.iter().map(|line| failures_in(line)).sum();
    assert!(
        (1..100).contains(&retries),
        "{name}: {retries} failed accepts reported: {reports:#?}"
    );
}

/// N from an echo server's "accept failed: ... (N failure(s) since the last
/// report; ...)".
fn failures_in(report: &str) -> u64 {
    report
        .split_once(" failure(s) since the last report")
        .and_then(|(before, _)| before.rsplit('(').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no failure count in {report:?}"))
}

/// Headless Chromium (Debian's `chromium`) showing `url`, in a profile
/// directory of its own (named by `tag` and this process), which goes with
/// it when dropped. `extra` flags come before the URL.
pub struct HeadlessChromium {
    browser: Option<Program>,
    profile: PathBuf,
}

impl HeadlessChromium {
    /// Opens `url`; check [`chromium_installed`] first.
    pub fn open(tag: &str, extra: &[&str], url: &str) -> HeadlessChromium {
        let profile =
            std::env::temp_dir().join(format!("lockgate-chromium-{tag}-{}", std::process::id()));
        let mut command = Command::new("chromium");
        command
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
            ])
            .args(extra)
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(url);
        let browser = Some(Program::spawn("chromium", command));
        HeadlessChromium { browser, profile }
    }
}

impl Drop for HeadlessChromium {
    fn drop(&mut self) {
        // The browser first: it writes into its profile until it is gone.
        drop(self.browser.take());
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// Whether Debian's `chromium` runs here, for the tests a real browser
/// drives. Missing, it is a skip with a note, or a failure when
/// `LOCKGATE_REQUIRE_CHROMIUM` is set (as the test command sets it).
pub fn chromium_installed() -> bool {
    let installed = std::process::Command::new("chromium")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    if !installed {
        assert!(
            std::env::var_os("LOCKGATE_REQUIRE_CHROMIUM").is_none(),
            "chromium is required (LOCKGATE_REQUIRE_CHROMIUM) but not installed"
        );
        eprintln!("skipped: chromium is not installed");
    }
    installed
}
