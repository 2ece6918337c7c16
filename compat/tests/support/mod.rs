//! What the compat tests share: the built examples run as processes
//! ([`Program`]), the fixed ports upstream wrote into them
//! ([`claim_port`]), a minimal hand-written WebSocket client speaking raw
//! TCP ([`RawWs`]), and the third-party peer (Python `websockets`).
//!
//! The tests talk to the examples through bytes on a socket and lines on
//! stdout/stderr only, never through lockgate or tungstenite, so the same
//! tests run unchanged against the upstream examples built with the real
//! tungstenite (which is how they were validated): a failure means the
//! ported program behaves differently, not that the test's own client did.
//!
//! Every wait is bounded by [`STEP`] and by the test's deadline
//! ([`bounded`], [`TEST_LIMIT`]); every process a test starts is killed (by
//! its PID, [`Child::kill`]) when its [`Program`] is dropped, however the
//! test ends.
// Each test binary uses its own part of this module.
#![allow(dead_code)]

use std::cell::Cell;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

/// The most one expected event (a line, a frame, a port opening) may take.
pub(crate) const STEP: Duration = Duration::from_secs(15);

/// The most a whole test may take.
pub(crate) const TEST_LIMIT: Duration = Duration::from_secs(60);

thread_local! {
    /// The running test's deadline (libtest runs each test on its own thread).
    static TEST_DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Starts the calling test's clock: from now on every wait ends by
/// [`TEST_LIMIT`] from now at the latest. Call it first in each test.
pub(crate) fn bounded() {
    TEST_DEADLINE.with(|d| d.set(Some(Instant::now() + TEST_LIMIT)));
}

/// When a wait starting now must end: [`STEP`] from now, or the test's
/// deadline if that is sooner. Panics once the test's time is up.
pub(crate) fn step_deadline() -> Instant {
    let step = Instant::now() + STEP;
    match TEST_DEADLINE.with(Cell::get) {
        Some(test) if test <= Instant::now() => {
            panic!("the test took longer than {TEST_LIMIT:?}")
        }
        Some(test) => step.min(test),
        None => step,
    }
}

/// Time left until `deadline`, at least a millisecond (a zero socket
/// timeout means "none").
fn left(deadline: Instant) -> Duration {
    deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1))
}

// ---------------------------------------------------------------------------
// Programs
// ---------------------------------------------------------------------------

/// A running program (an example or a peer), killed by PID when dropped,
/// with its stdout and stderr lines.
pub(crate) struct Program {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Every line received so far, for failure messages.
    seen: Vec<String>,
}

impl Program {
    /// Starts the built example `name` (its `[[example]]` name) with
    /// `args`, with `RUST_LOG=info` unless `env` sets it.
    pub(crate) fn example(name: &str, args: &[&str], env: &[(&str, &str)]) -> Program {
        let mut command = Command::new(example_path(name));
        command.args(args).env("RUST_LOG", "info");
        for (key, value) in env {
            command.env(key, value);
        }
        Program::spawn(name, command)
    }

    /// Starts `command`; its stdout and stderr lines both arrive on
    /// `lines`, stdin is a pipe.
    pub(crate) fn spawn(name: &str, mut command: Command) -> Program {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {name} ({command:?}): {e}"));
        let (tx, lines) = channel();
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        for output in [Box::new(stdout) as Box<dyn Read + Send>, Box::new(stderr)] {
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
            name: name.to_owned(),
            child,
            stdin,
            lines,
            seen: Vec::new(),
        }
    }

    /// The next output line, or `None` once the program's output has ended
    /// (it exited); panics if none comes within the step's time.
    pub(crate) fn next_line(&mut self) -> Option<String> {
        let deadline = step_deadline();
        match self.lines.recv_timeout(left(deadline)) {
            Ok(line) => {
                self.seen.push(line.clone());
                Some(line)
            }
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => self.fail("no output line in time"),
        }
    }

    /// Waits for a line containing `needle` and returns it; panics with
    /// everything seen if it does not come in time or the program exits.
    pub(crate) fn expect_line(&mut self, needle: &str) -> String {
        self.expect_any_line(&[needle])
    }

    /// Waits for a line containing one of `needles` and returns it; panics
    /// with everything seen if none comes in time or the program exits.
    pub(crate) fn expect_any_line(&mut self, needles: &[&str]) -> String {
        let deadline = step_deadline();
        loop {
            match self.lines.recv_timeout(left(deadline)) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if needles.iter().any(|needle| line.contains(needle)) {
                        return line;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    self.fail(&format!("no line containing one of {needles:?} in time"))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child.try_wait().ok().flatten();
                    self.fail(&format!(
                        "output ended (exit status {status:?}) without a line containing \
                         one of {needles:?}"
                    ))
                }
            }
        }
    }

    /// Writes `line` and a newline to the program's stdin, in one write
    /// (atomic on a pipe: a program reading stdin in chunks, like the
    /// `client` example, gets it in one piece).
    pub(crate) fn type_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// Waits for the program to exit and for the end of its output;
    /// returns its status and all the lines it printed that were not
    /// consumed yet.
    pub(crate) fn wait_exit(&mut self) -> (ExitStatus, Vec<String>) {
        let deadline = step_deadline();
        let mut rest = Vec::new();
        loop {
            match self.lines.recv_timeout(left(deadline)) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    rest.push(line);
                }
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => self.fail("did not exit in time"),
            }
        }
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return (status, rest);
            }
            if Instant::now() >= deadline {
                self.fail("closed its output but did not exit in time");
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether the program is still running.
    pub(crate) fn is_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Waits until something listens on 127.0.0.1:`port` (the program, as
    /// the port was free before it started: [`claim_port`],
    /// [`free_address`]). Reads the kernel's socket tables instead of
    /// connecting, so that the server sees no probe connection.
    pub(crate) fn wait_listening(&mut self, port: u16) {
        let deadline = step_deadline();
        while !is_listening(port) {
            if !self.is_running() {
                let lines = self.drain();
                self.fail(&format!(
                    "exited before listening on port {port}; its last lines: {lines:#?}"
                ));
            }
            if Instant::now() >= deadline {
                self.fail(&format!("not listening on port {port} in time"));
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// The lines already printed and not consumed, without waiting.
    pub(crate) fn drain(&mut self) -> Vec<String> {
        let lines: Vec<String> = self.lines.try_iter().collect();
        self.seen.extend(lines.iter().cloned());
        lines
    }

    /// Panics with `what` and everything this program printed.
    pub(crate) fn fail(&mut self, what: &str) -> ! {
        self.drain();
        panic!("{}: {what}; its output: {:#?}", self.name, self.seen)
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `target/<profile>/examples/<name>`, next to this test's `deps/`.
pub(crate) fn example_path(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("test binaries live in target/<profile>/deps");
    let path = profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.exists(),
        "{} is not built: `cargo test -p lockgate-compat` builds the examples \
         (or `cargo build -p lockgate-compat --examples`)",
        path.display()
    );
    path
}

/// An address on 127.0.0.1 whose port was free when asked, for the
/// examples that take their address as an argument.
pub(crate) fn free_address() -> (String, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    (addr.to_string(), addr.port())
}

/// Whether a socket on this machine listens on TCP `port` (any address),
/// from /proc/net/tcp and /proc/net/tcp6.
fn is_listening(port: u16) -> bool {
    const LISTEN: &str = "0A";
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|table| {
        let Ok(text) = std::fs::read_to_string(table) else {
            return false;
        };
        text.lines().skip(1).any(|row| {
            let fields: Vec<&str> = row.split_whitespace().collect();
            let local_port = fields
                .get(1)
                .and_then(|local| local.rsplit(':').next())
                .and_then(|hex| u16::from_str_radix(hex, 16).ok());
            local_port == Some(port) && fields.get(3) == Some(&LISTEN)
        })
    })
}

// ---------------------------------------------------------------------------
// Fixed ports
// ---------------------------------------------------------------------------

/// Serializes the tests of one binary that use the examples' fixed ports
/// (cargo runs test binaries one after the other, their tests in parallel).
static FIXED_PORTS: Mutex<()> = Mutex::new(());

/// Claims one of the ports the upstream examples hard-code (3012, 8080,
/// 9001, 9002): they bind or dial it whatever their arguments, and the
/// point is to run them unmodified. Holds a lock for as long as the guard
/// lives, so that no other test of this binary uses a fixed port
/// meanwhile, and checks that no other process listens there (it would
/// answer in the example's place).
pub(crate) fn claim_port(port: u16) -> MutexGuard<'static, ()> {
    let guard = FIXED_PORTS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let deadline = step_deadline();
    // A program of the previous test may still be going away.
    while is_listening(port) {
        assert!(
            Instant::now() < deadline,
            "port {port} is in use by another process; the upstream example \
             hard-codes it, so these tests need it free"
        );
        thread::sleep(Duration::from_millis(50));
    }
    guard
}

// ---------------------------------------------------------------------------
// A raw WebSocket client
// ---------------------------------------------------------------------------

/// The Sec-WebSocket-Key every raw handshake sends (RFC 6455's example).
const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";
/// Its Sec-WebSocket-Accept (RFC 6455, section 1.3).
const ACCEPT: &str = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";
/// The masking key of every masked frame the raw client sends.
const MASK: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

/// An HTTP response as read off the wire.
#[derive(Debug)]
pub(crate) struct HttpResponse {
    /// The status line, e.g. `HTTP/1.1 101 Switching Protocols`.
    pub(crate) status_line: String,
    /// The status code.
    pub(crate) status: u16,
    /// Header names (lower-cased) and values, in order.
    pub(crate) headers: Vec<(String, String)>,
    /// The body (for a 101: nothing; otherwise what came until EOF).
    pub(crate) body: Vec<u8>,
}

impl HttpResponse {
    /// The first value of header `name` (case-insensitive).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A frame as received by [`RawWs`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Frame {
    /// The FIN bit.
    pub(crate) fin: bool,
    /// The opcode (1 text, 2 binary, 8 close, 9 ping, 10 pong).
    pub(crate) opcode: u8,
    /// Whether the frame was masked.
    pub(crate) masked: bool,
    /// The unmasked payload.
    pub(crate) payload: Vec<u8>,
}

/// Text frame opcode.
pub(crate) const TEXT: u8 = 1;
/// Binary frame opcode.
pub(crate) const BINARY: u8 = 2;
/// Close frame opcode.
pub(crate) const CLOSE: u8 = 8;

/// A WebSocket client written by hand on a `TcpStream`: the tests' own
/// view of the wire, independent of any WebSocket library.
pub(crate) struct RawWs {
    stream: TcpStream,
    /// Bytes read past the handshake or past the last frame.
    buffer: Vec<u8>,
}

/// Connects to `addr` (`host:port`).
pub(crate) fn tcp(addr: &str) -> TcpStream {
    let stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connecting to {addr}: {e}"));
    stream.set_nodelay(true).unwrap();
    stream
}

/// Reads from `stream` into `buffer` once, bounded by `deadline`; returns
/// the number of bytes read (0 at EOF).
fn read_some(stream: &mut TcpStream, buffer: &mut Vec<u8>, deadline: Instant) -> usize {
    stream.set_read_timeout(Some(left(deadline))).unwrap();
    let mut chunk = [0; 16 * 1024];
    loop {
        match stream.read(&mut chunk) {
            Ok(n) => {
                buffer.extend_from_slice(&chunk[..n]);
                return n;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                panic!("nothing read from the server in time")
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return 0,
            Err(e) => panic!("reading from the server: {e}"),
        }
    }
}

/// Reads an HTTP response head from `stream` (plus whatever followed it,
/// left in `buffer`).
fn read_response_head(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> HttpResponse {
    let deadline = step_deadline();
    let end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        assert!(buffer.len() < 64 * 1024, "response head too long");
        if read_some(stream, buffer, deadline) == 0 {
            panic!(
                "connection closed before a complete response head: {:?}",
                String::from_utf8_lossy(buffer)
            );
        }
    };
    let head = String::from_utf8(buffer[..end].to_vec()).expect("response head is UTF-8");
    buffer.drain(..end + 4);
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap().to_owned();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    let headers = lines
        .map(|line| {
            let (name, value) = line
                .split_once(':')
                .unwrap_or_else(|| panic!("bad header line {line:?}"));
            (name.trim().to_ascii_lowercase(), value.trim().to_owned())
        })
        .collect();
    HttpResponse {
        status_line,
        status,
        headers,
        body: Vec::new(),
    }
}

/// Reads until EOF (bounded), appending to `buffer`.
fn read_to_eof(stream: &mut TcpStream, buffer: &mut Vec<u8>) {
    let deadline = step_deadline();
    while read_some(stream, buffer, deadline) > 0 {}
}

/// A plain HTTP/1.1 GET of `path` with `Connection: close`; the response
/// with its body (everything until the server closes).
pub(crate) fn http_get(addr: &str, path: &str) -> HttpResponse {
    let mut stream = tcp(addr);
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut buffer = Vec::new();
    let mut response = read_response_head(&mut stream, &mut buffer);
    read_to_eof(&mut stream, &mut buffer);
    response.body = buffer;
    response
}

/// The outcome of a raw opening handshake.
pub(crate) enum Handshake {
    /// 101 with the right Sec-WebSocket-Accept: the connection, and the
    /// response.
    Accepted(RawWs, HttpResponse),
    /// Any other status: the response with its body (read until EOF).
    Refused(HttpResponse),
}

impl RawWs {
    /// Opens a WebSocket to `ws://{addr}{path}` (no extensions, no
    /// subprotocol) and panics unless the server accepts.
    pub(crate) fn connect(addr: &str, path: &str) -> (RawWs, HttpResponse) {
        match RawWs::handshake(addr, path) {
            Handshake::Accepted(ws, response) => (ws, response),
            Handshake::Refused(response) => panic!("handshake refused: {response:?}"),
        }
    }

    /// Sends an opening handshake for `ws://{addr}{path}` and reads the
    /// answer.
    pub(crate) fn handshake(addr: &str, path: &str) -> Handshake {
        let mut stream = tcp(addr);
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: Upgrade\r\n\
             Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
             Sec-WebSocket-Key: {KEY}\r\n\r\n"
        )
        .unwrap();
        let mut buffer = Vec::new();
        let mut response = read_response_head(&mut stream, &mut buffer);
        if response.status != 101 {
            read_to_eof(&mut stream, &mut buffer);
            response.body = buffer;
            return Handshake::Refused(response);
        }
        assert_eq!(
            response.header("sec-websocket-accept"),
            Some(ACCEPT),
            "Sec-WebSocket-Accept in {response:?}"
        );
        Handshake::Accepted(RawWs { stream, buffer }, response)
    }

    /// Sends one final frame with `opcode` and `payload`, masked (as
    /// RFC 6455 requires of a client) or not.
    pub(crate) fn send(&mut self, opcode: u8, payload: &[u8], masked: bool) {
        let mut frame = vec![0x80 | opcode];
        let mask_bit = if masked { 0x80 } else { 0 };
        match payload.len() {
            n if n < 126 => frame.push(mask_bit | n as u8),
            n if n <= 0xffff => {
                frame.push(mask_bit | 126);
                frame.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                frame.push(mask_bit | 127);
                frame.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        if masked {
            frame.extend_from_slice(&MASK);
            frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ MASK[i % 4]));
        } else {
            frame.extend_from_slice(payload);
        }
        self.stream.write_all(&frame).unwrap();
    }

    /// Sends a masked text frame.
    pub(crate) fn send_text(&mut self, text: &str) {
        self.send(TEXT, text.as_bytes(), true);
    }

    /// Sends a masked close frame with `code` and no reason.
    pub(crate) fn send_close(&mut self, code: u16) {
        self.send(CLOSE, &code.to_be_bytes(), true);
    }

    /// The next frame, or `None` if the server closed the connection
    /// (cleanly between frames); panics if nothing comes in time.
    pub(crate) fn recv(&mut self) -> Option<Frame> {
        let deadline = step_deadline();
        loop {
            if let Some((frame, len)) = parse_frame(&self.buffer) {
                self.buffer.drain(..len);
                return Some(frame);
            }
            if read_some(&mut self.stream, &mut self.buffer, deadline) == 0 {
                assert!(
                    self.buffer.is_empty(),
                    "connection closed inside a frame: {:?}",
                    self.buffer
                );
                return None;
            }
        }
    }

    /// The next data frame's text, skipping nothing: panics unless it is a
    /// final text frame.
    pub(crate) fn recv_text(&mut self) -> String {
        let frame = self
            .recv()
            .expect("a text frame, not the end of the connection");
        assert!(
            frame.fin && frame.opcode == TEXT && !frame.masked,
            "expected an unmasked final text frame, got {frame:?}"
        );
        String::from_utf8(frame.payload).expect("text frames hold UTF-8")
    }

    /// Reads frames until the server's close frame or the end of the
    /// connection; returns the close frame's payload if one came (code and
    /// reason), and the data frames before it.
    pub(crate) fn recv_until_close(&mut self) -> (Option<Vec<u8>>, Vec<Frame>) {
        let mut data = Vec::new();
        while let Some(frame) = self.recv() {
            if frame.opcode == CLOSE {
                return (Some(frame.payload), data);
            }
            data.push(frame);
        }
        (None, data)
    }

    /// Whether the server ends the TCP connection (EOF or reset) within
    /// the step's time, discarding anything it still sends.
    pub(crate) fn ends(&mut self) -> bool {
        let deadline = step_deadline();
        self.stream.set_read_timeout(Some(left(deadline))).unwrap();
        let mut chunk = [0; 4096];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return true,
                Err(_) => return false,
            }
        }
    }

    /// Half-closes the connection (FIN to the server).
    pub(crate) fn shutdown_write(&mut self) {
        let _ = self.stream.shutdown(Shutdown::Write);
    }
}

/// One complete frame at the start of `buffer` and its length on the wire.
fn parse_frame(buffer: &[u8]) -> Option<(Frame, usize)> {
    let [b0, b1, ..] = *buffer else { return None };
    let masked = b1 & 0x80 != 0;
    let (len, mut at) = match b1 & 0x7f {
        126 => (
            u64::from(u16::from_be_bytes(buffer.get(2..4)?.try_into().ok()?)),
            4,
        ),
        127 => (u64::from_be_bytes(buffer.get(2..10)?.try_into().ok()?), 10),
        n => (u64::from(n), 2),
    };
    let mask = if masked {
        let key: [u8; 4] = buffer.get(at..at + 4)?.try_into().ok()?;
        at += 4;
        Some(key)
    } else {
        None
    };
    let len = usize::try_from(len).expect("frame length fits in memory");
    assert!(
        len <= 64 << 20,
        "frame of {len} bytes: the tests send far less"
    );
    let mut payload = buffer.get(at..at + len)?.to_vec();
    if let Some(key) = mask {
        for (i, byte) in payload.iter_mut().enumerate() {
            *byte ^= key[i % 4];
        }
    }
    let frame = Frame {
        fin: b0 & 0x80 != 0,
        opcode: b0 & 0x0f,
        masked,
        payload,
    };
    Some((frame, at + len))
}

// ---------------------------------------------------------------------------
// The third-party peer
// ---------------------------------------------------------------------------

/// `interop/peers/`: the peers `scripts/install-interop-peers.sh` installs
/// and their scripts.
fn peers_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../interop/peers")
}

/// `interop/peers/<script>` run by the Python venv that has `websockets`,
/// with permessage-deflate off. A missing venv fails the test (nothing is
/// skipped), as in the interop tests.
pub(crate) fn python(script: &str) -> Command {
    let dir = peers_dir();
    let python = dir.join(".venv/bin/python");
    if !python.is_file() {
        let what = format!("no Python venv at {}", python.display());
        if std::env::var_os("CI").is_some() {
            panic!(
                "third-party peer missing in CI: {what}. The test command must run \
                 `bash scripts/install-interop-peers.sh` before `cargo test -p lockgate-compat`."
            );
        }
        panic!(
            "third-party peer missing: {what}. Run `bash scripts/install-interop-peers.sh` \
             (needs python3 >= 3.11 and access to PyPI), then re-run the tests."
        );
    }
    let script = dir.join(script);
    assert!(script.is_file(), "{} is missing", script.display());
    let mut command = Command::new(python);
    command.arg(script).env("LOCKGATE_INTEROP_DEFLATE", "off");
    command
}
