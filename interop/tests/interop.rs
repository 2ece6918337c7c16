//! Interop with WebSocket implementations we did not write: Python's
//! `websockets` and Node's `ws`, pinned in `interop/peers/requirements.txt`
//! and `interop/peers/package-lock.json`, installed by
//! `bash scripts/install-interop-peers.sh` into `interop/peers/.venv` and
//! `interop/peers/node_modules`.
//!
//! This file is the `lockgate-interop` package's only test, outside the
//! workspace's default members so that a plain `cargo test` does not need
//! Python or Node; `scripts/test.sh` installs the peers and then runs
//! `cargo test -p lockgate-interop`.
//!
//! Both drivers run every test: tokio-lockgate's, and async-lockgate's
//! futures-io driver over the same tokio sockets through
//! `tokio_util::compat` (modules `tokio_driver` and `futures_io_driver`,
//! see [`Side`]). Both directions, for each peer:
//!
//! - `client_*`: our client (`client_async_with` over TCP) against the peer's server
//!   (`peers/{python_server.py,node_server.js}`), which binds port 0
//!   and prints its port as its first stdout line.
//! - `server_*`: the peer's client (`peers/{python_client.py,
//!   node_client.js}`) against our server (`accept_async_with`), run
//!   in-process on 127.0.0.1 port 0.
//!
//! Each covers text and binary, 64 KiB and 16 MiB messages, a ping from each
//! side answered by the other, and a closing handshake with a code and a
//! reason started by each side. The peers report what they saw as JSON
//! lines on stdout (see the scripts' headers), which the tests parse and
//! check.
//!
//! Those run with permessage-deflate off on both sides. The `deflate*`
//! modules repeat the message exchanges compressed (RFC 7692), see
//! [Compressed](#compressed) below; the peers' `LOCKGATE_INTEROP_DEFLATE`
//! environment variable (`off`, `on`, `no-context-takeover`) switches their
//! side on.
//!
//! # Compressed
//!
//! For each peer and both directions, in three variants (modules
//! `deflate_context_takeover`, `deflate_no_context_takeover_offered`,
//! `deflate_no_context_takeover_required`, see [`Deflate`]):
//!
//! - `*_text_binary_64k`: text, binary, an empty binary, 64 KiB of each,
//!   the same 1 KiB of JSON lines three times (with context takeover the
//!   repeats are back-references into the previous message), and, from the
//!   peer's client, 12 KiB of JSON lines in three fragments;
//! - `*_16mib`: 16 MiB of JSON lines (text, about 5:1 compressible).
//!
//! Our side enables compression with `min_compress_size(0)`, the peers with
//! `threshold: 0` (ws) or as websockets always does, so every message is
//! compressed. Each test checks what both ends negotiated (our
//! `context().deflate()`, the peer's `Sec-WebSocket-Extensions` answer and,
//! for websockets, the parameters it applies), that the echoes are
//! byte-identical, and, by counting the bytes on our TCP stream, that both
//! directions were actually compressed.
//!
//! A missing peer fails the test (nothing is skipped) with a message naming
//! the installer. Every test is bounded by a timeout, and the peer processes
//! are killed when the test ends, however it ends.

use std::collections::BTreeMap;
use std::future::Future;
use std::panic::resume_unwind;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_lockgate::driver::{self, WebSocketStream};
use async_lockgate::runtime::{Runtime, Transport};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader, Lines};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::task::JoinHandle;
use tokio::time::timeout;
use tokio_lockgate::deflate::{DeflateConfig, DeflateParams};
use tokio_lockgate::{
    ClientOptions, CloseCode, CloseFrame, Config, Error, Message, Role, ServerOptions,
};
use tokio_util::compat::{Compat, TokioAsyncReadCompatExt};

/// The driver under test, over a tokio stream `S` as it hands it over:
/// tokio-lockgate's takes the stream as it is, the futures-io driver takes
/// it through `tokio_util::compat` and keeps time on async-io's timer.
trait Side: 'static {
    /// The runtime the driver is instantiated for.
    type Runtime: Transport<Self::Io<TcpStream>>
        + Transport<Self::Io<Wire<TcpStream>>>
        + Runtime<Timer: Send>
        + Send;
    /// The stream the driver runs over.
    type Io<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>: Unpin + Send + 'static;

    fn io<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(stream: S) -> Self::Io<S>;
}

/// tokio-lockgate.
struct TokioDriver;

impl Side for TokioDriver {
    type Runtime = tokio_lockgate::Tokio;
    type Io<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> = S;

    fn io<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(stream: S) -> S {
        stream
    }
}

/// async-lockgate's futures-io driver.
struct FuturesIoDriver;

impl Side for FuturesIoDriver {
    type Runtime = async_lockgate::FuturesIo;
    type Io<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> = Compat<S>;

    fn io<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(stream: S) -> Compat<S> {
        stream.compat()
    }
}

/// The connection `D` makes of a tokio stream `S`.
type Ws<D, S> = WebSocketStream<<D as Side>::Io<S>, <D as Side>::Runtime>;

/// Bound on a whole test, peer start-up included.
const TEST_TIMEOUT: Duration = Duration::from_secs(90);
/// Bound on one step: a line from a peer, a message, a peer's exit.
const STEP_TIMEOUT: Duration = Duration::from_secs(45);

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;

/// Our side of every connection: room for the 16 MiB messages.
fn config() -> Config {
    Config::default()
        .max_message_size(Some(32 << 20))
        .max_frame_size(Some(32 << 20))
}

/// Runs a test body under [`TEST_TIMEOUT`].
async fn bounded(body: impl Future<Output = ()>) {
    if timeout(TEST_TIMEOUT, body).await.is_err() {
        panic!("interop test did not finish within {TEST_TIMEOUT:?}");
    }
}

/// Awaits one step under [`STEP_TIMEOUT`].
async fn step<T>(what: &str, fut: impl Future<Output = T>) -> T {
    timeout(STEP_TIMEOUT, fut)
        .await
        .unwrap_or_else(|_| panic!("timed out after {STEP_TIMEOUT:?}: {what}"))
}

/// `n` deterministic bytes that are not a short repetition.
fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| ((i % 251) as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// A short description of a message for assertion failures (16 MiB
/// payloads must not end up in a panic message).
fn describe(msg: &Message) -> String {
    match msg {
        Message::Text(t) if t.len() <= 64 => format!("Text({:?})", t.as_str()),
        Message::Text(t) => format!("Text({} bytes)", t.len()),
        Message::Binary(b) => format!("Binary({} bytes)", b.len()),
        other => format!("{other:?}"),
    }
}

fn assert_same(got: &Message, want: &Message) {
    assert!(
        got == want,
        "echo differs: got {}, sent {}",
        describe(got),
        describe(want)
    );
}

fn close_frame(code: u16, reason: &str) -> CloseFrame {
    CloseFrame::new(CloseCode::from(code), reason)
}

fn assert_close(frame: &Option<CloseFrame>, code: u16, reason: &str) {
    let Some(frame) = frame else {
        panic!("close frame without a code; expected {code} {reason:?}");
    };
    assert_eq!(
        (u16::from(frame.code), frame.reason.as_str()),
        (code, reason),
        "close frame (code, reason)"
    );
}

// ---------------------------------------------------------------------------
// The peers
// ---------------------------------------------------------------------------

mod peers {
    use super::*;

    /// A WebSocket implementation we did not write.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) enum Peer {
        /// Python `websockets` (peers/requirements.txt).
        Python,
        /// Node `ws` (peers/package.json).
        Node,
    }

    fn interop_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers")
    }

    /// Fails the test: a missing peer is never a silent skip.
    fn missing(what: &str) -> ! {
        if std::env::var_os("CI").is_some() {
            panic!(
                "interop peer missing in CI: {what}. The test command must run \
                 `bash scripts/install-interop-peers.sh` before `cargo test`."
            );
        }
        panic!(
            "interop peer missing: {what}. Run `bash scripts/install-interop-peers.sh` \
             (needs python3 >= 3.11, node and npm, and access to PyPI and npm), then \
             re-run the tests."
        );
    }

    /// A peer's permessage-deflate setting, passed in its
    /// `LOCKGATE_INTEROP_DEFLATE` environment variable.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) enum PeerDeflate {
        /// Disabled.
        Off,
        /// The peer's defaults (ws with `threshold: 0`).
        On,
        /// A client offers, a server requires, `server_no_context_takeover`
        /// and `client_no_context_takeover`.
        NoContextTakeover,
    }

    impl PeerDeflate {
        fn env(self) -> &'static str {
            match self {
                PeerDeflate::Off => "off",
                PeerDeflate::On => "on",
                PeerDeflate::NoContextTakeover => "no-context-takeover",
            }
        }
    }

    impl Peer {
        pub(crate) fn name(self) -> &'static str {
            match self {
                Peer::Python => "python websockets",
                Peer::Node => "node ws",
            }
        }

        /// `script` run by this peer's interpreter, checked to be installed,
        /// with permessage-deflate set to `deflate`.
        fn command(self, script: &str, deflate: PeerDeflate) -> Command {
            let dir = interop_dir();
            let script = dir.join(script);
            assert!(script.is_file(), "{} is missing", script.display());
            let mut cmd = match self {
                Peer::Python => {
                    let python = if cfg!(windows) {
                        dir.join(".venv/Scripts/python.exe")
                    } else {
                        dir.join(".venv/bin/python")
                    };
                    if !python.is_file() {
                        missing(&format!("no Python venv at {}", python.display()));
                    }
                    Command::new(python)
                }
                Peer::Node => {
                    let ws = dir.join("node_modules/ws/package.json");
                    if !ws.is_file() {
                        missing(&format!("no `ws` package at {}", ws.display()));
                    }
                    Command::new("node")
                }
            };
            cmd.arg(script)
                .env("LOCKGATE_INTEROP_DEFLATE", deflate.env());
            cmd
        }

        /// Starts this peer's server; returns it and the port it listens on.
        pub(crate) async fn server(self) -> (Process, u16) {
            self.server_with(PeerDeflate::Off).await
        }

        /// [`server`](Self::server) with permessage-deflate set to `deflate`.
        pub(crate) async fn server_with(self, deflate: PeerDeflate) -> (Process, u16) {
            let script = match self {
                Peer::Python => "python_server.py",
                Peer::Node => "node_server.js",
            };
            let mut process = Process::spawn(self, self.command(script, deflate)).await;
            let first = process.next_event().await;
            let port = match (first.name(), first.get("port")) {
                ("listening", Some(Json::Int(port))) => u16::try_from(*port).ok(),
                _ => None,
            };
            let port = port.unwrap_or_else(|| {
                process.fail(&format!("expected a listening event first, got {first:?}"))
            });
            (process, port)
        }

        /// Starts this peer's client on `url` with a scenario and its args.
        pub(crate) async fn client(self, url: &str, scenario: &[&str]) -> Process {
            self.client_with(url, scenario, PeerDeflate::Off).await
        }

        /// [`client`](Self::client) with permessage-deflate set to `deflate`.
        pub(crate) async fn client_with(
            self,
            url: &str,
            scenario: &[&str],
            deflate: PeerDeflate,
        ) -> Process {
            let script = match self {
                Peer::Python => "python_client.py",
                Peer::Node => "node_client.js",
            };
            let mut cmd = self.command(script, deflate);
            cmd.arg(url).args(scenario);
            Process::spawn(self, cmd).await
        }
    }

    /// A running peer. Dropping it kills the process; its stdin is a pipe
    /// too, whose end makes the scripts exit should this test process die
    /// without running destructors. Its stderr goes to a file under
    /// `CARGO_TARGET_TMPDIR`, shown when the test fails.
    pub(crate) struct Process {
        peer: Peer,
        child: Child,
        _stdin: ChildStdin,
        stdout: Lines<BufReader<ChildStdout>>,
        stderr: PathBuf,
    }

    impl Drop for Process {
        fn drop(&mut self) {
            let _ = self.child.start_kill();
            let _ = self.child.try_wait();
            let _ = std::fs::remove_file(&self.stderr);
        }
    }

    impl Process {
        async fn spawn(peer: Peer, mut cmd: Command) -> Process {
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            let stderr = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
                "lockgate-interop-{}-{}.stderr",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            let stderr_file = std::fs::File::create(&stderr)
                .unwrap_or_else(|err| panic!("creating {}: {err}", stderr.display()));
            cmd.stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(stderr_file)
                .kill_on_drop(true);
            let mut child = match cmd.spawn() {
                Ok(child) => child,
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                    missing(&format!("cannot run {cmd:?}: {err}"))
                }
                Err(err) => panic!("cannot run {cmd:?}: {err}"),
            };
            let stdin = child.stdin.take().expect("piped stdin");
            let stdout = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
            Process {
                peer,
                child,
                _stdin: stdin,
                stdout,
                stderr,
            }
        }

        /// Panics with `msg` and whatever the peer wrote to stderr.
        pub(crate) fn fail(&self, msg: &str) -> ! {
            let stderr = std::fs::read_to_string(&self.stderr).unwrap_or_default();
            panic!(
                "{} peer: {msg}\n---- peer stderr ----\n{stderr}---------------------",
                self.peer.name(),
            );
        }

        /// The next JSON line the peer printed.
        pub(crate) async fn next_event(&mut self) -> Event {
            let line = match timeout(STEP_TIMEOUT, self.stdout.next_line()).await {
                Ok(Ok(Some(line))) => line,
                Ok(Ok(None)) => self.fail("stdout ended before the expected event"),
                Ok(Err(err)) => self.fail(&format!("reading stdout: {err}")),
                Err(_) => self.fail(&format!("no event within {STEP_TIMEOUT:?}")),
            };
            Event::parse(&line)
                .unwrap_or_else(|| self.fail(&format!("not a JSON event line: {line:?}")))
        }

        /// Waits for the peer to exit successfully and returns the events it
        /// printed (after the ones already read).
        pub(crate) async fn finish(mut self) -> Events {
            let mut events = Vec::new();
            loop {
                let line = match timeout(STEP_TIMEOUT, self.stdout.next_line()).await {
                    Ok(Ok(Some(line))) => line,
                    Ok(Ok(None)) => break,
                    Ok(Err(err)) => self.fail(&format!("reading stdout: {err}")),
                    Err(_) => self.fail(&format!(
                        "did not exit within {STEP_TIMEOUT:?}; events so far: {events:?}"
                    )),
                };
                match Event::parse(&line) {
                    Some(event) => events.push(event),
                    None => self.fail(&format!("not a JSON event line: {line:?}")),
                }
            }
            let status = match timeout(STEP_TIMEOUT, self.child.wait()).await {
                Ok(Ok(status)) => status,
                Ok(Err(err)) => self.fail(&format!("waiting for exit: {err}")),
                Err(_) => self.fail(&format!("did not exit within {STEP_TIMEOUT:?}")),
            };
            if !status.success() {
                self.fail(&format!("exited with {status}; events: {events:?}"));
            }
            Events {
                peer: self.peer,
                events,
            }
        }
    }

    /// What a peer printed, in order.
    pub(crate) struct Events {
        pub(crate) peer: Peer,
        pub(crate) events: Vec<Event>,
    }

    impl Events {
        /// The events named `name`.
        pub(crate) fn named(&self, name: &str) -> Vec<&Event> {
            self.events.iter().filter(|e| e.name() == name).collect()
        }

        /// The one event named `name`.
        pub(crate) fn one(&self, name: &str) -> &Event {
            match self.named(name)[..] {
                [event] => event,
                _ => panic!(
                    "{} peer: expected one {name:?} event, got {:?}",
                    self.peer.name(),
                    self.events
                ),
            }
        }

        /// Asserts the peer saw a close frame with `code` and `reason`.
        pub(crate) fn assert_closed(&self, code: u16, reason: &str) {
            let closed = self.one("closed");
            assert_eq!(
                (closed.int("code"), closed.str("reason")),
                (i64::from(code), reason),
                "{} peer: the close frame it received (code, reason)",
                self.peer.name()
            );
        }

        /// The `(kind, len)` of each echo the peer checked.
        pub(crate) fn echoes(&self) -> Vec<(&str, i64)> {
            self.named("echo")
                .into_iter()
                .map(|e| (e.str("kind"), e.int("len")))
                .collect()
        }
    }

    /// One JSON line from a peer: a flat object with an `event` name.
    #[derive(Debug)]
    pub(crate) struct Event(BTreeMap<String, Json>);

    /// The JSON values a flat event holds.
    #[derive(Debug, PartialEq)]
    pub(crate) enum Json {
        Str(String),
        Int(i64),
        Bool(bool),
        Null,
    }

    impl Event {
        pub(crate) fn name(&self) -> &str {
            match self.0.get("event") {
                Some(Json::Str(name)) => name,
                _ => "",
            }
        }

        pub(crate) fn get(&self, key: &str) -> Option<&Json> {
            self.0.get(key)
        }

        pub(crate) fn str(&self, key: &str) -> &str {
            match self.0.get(key) {
                Some(Json::Str(s)) => s,
                _ => panic!("event {self:?} has no string {key:?}"),
            }
        }

        pub(crate) fn int(&self, key: &str) -> i64 {
            match self.0.get(key) {
                Some(Json::Int(n)) => *n,
                _ => panic!("event {self:?} has no integer {key:?}"),
            }
        }

        /// Parses a flat JSON object of strings, integers, booleans and
        /// nulls (all the peers print); `None` for anything else.
        fn parse(line: &str) -> Option<Event> {
            let mut p = Parser {
                s: line.trim().as_bytes(),
                i: 0,
            };
            let mut map = BTreeMap::new();
            p.eat(b'{')?;
            if !p.peek_is(b'}') {
                loop {
                    let key = p.string()?;
                    p.eat(b':')?;
                    let value = p.value()?;
                    map.insert(key, value);
                    if p.peek_is(b',') {
                        p.eat(b',')?;
                    } else {
                        break;
                    }
                }
            }
            p.eat(b'}')?;
            (p.i == p.s.len() && map.contains_key("event")).then_some(Event(map))
        }
    }

    struct Parser<'a> {
        s: &'a [u8],
        i: usize,
    }

    impl Parser<'_> {
        fn skip_ws(&mut self) {
            while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
                self.i += 1;
            }
        }

        fn peek_is(&mut self, b: u8) -> bool {
            self.skip_ws();
            self.s.get(self.i) == Some(&b)
        }

        fn eat(&mut self, b: u8) -> Option<()> {
            self.peek_is(b).then(|| self.i += 1)
        }

        fn literal(&mut self, word: &str, value: Json) -> Option<Json> {
            self.s[self.i..].starts_with(word.as_bytes()).then(|| {
                self.i += word.len();
                value
            })
        }

        fn value(&mut self) -> Option<Json> {
            self.skip_ws();
            match *self.s.get(self.i)? {
                b'"' => self.string().map(Json::Str),
                b't' => self.literal("true", Json::Bool(true)),
                b'f' => self.literal("false", Json::Bool(false)),
                b'n' => self.literal("null", Json::Null),
                _ => {
                    let start = self.i;
                    if self.s.get(self.i) == Some(&b'-') {
                        self.i += 1;
                    }
                    while self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
                        self.i += 1;
                    }
                    let digits = std::str::from_utf8(&self.s[start..self.i]).ok()?;
                    digits.parse().ok().map(Json::Int)
                }
            }
        }

        fn hex4(&mut self) -> Option<u32> {
            let hex = std::str::from_utf8(self.s.get(self.i..self.i + 4)?).ok()?;
            self.i += 4;
            u32::from_str_radix(hex, 16).ok()
        }

        fn string(&mut self) -> Option<String> {
            self.eat(b'"')?;
            let mut out = Vec::new();
            loop {
                let b = *self.s.get(self.i)?;
                self.i += 1;
                match b {
                    b'"' => return String::from_utf8(out).ok(),
                    b'\\' => {
                        let esc = *self.s.get(self.i)?;
                        self.i += 1;
                        let c = match esc {
                            b'"' => '"',
                            b'\\' => '\\',
                            b'/' => '/',
                            b'b' => '\u{8}',
                            b'f' => '\u{c}',
                            b'n' => '\n',
                            b'r' => '\r',
                            b't' => '\t',
                            b'u' => {
                                let hi = self.hex4()?;
                                let code = if (0xD800..0xDC00).contains(&hi) {
                                    self.eat(b'\\')?;
                                    self.eat(b'u')?;
                                    let lo = self.hex4()?;
                                    if !(0xDC00..0xE000).contains(&lo) {
                                        return None;
                                    }
                                    0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                                } else {
                                    hi
                                };
                                char::from_u32(code)?
                            }
                            _ => return None,
                        };
                        out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                    }
                    _ => out.push(b),
                }
            }
        }
    }

    /// Percent-encodes a query value (everything but RFC 3986 unreserved).
    pub(crate) fn query_value(s: &str) -> String {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    char::from(b).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect()
    }

    #[test]
    fn event_lines_parse() {
        let e = Event::parse(
            r#"{"event": "closed", "code": 4001, "reason": "bye \u2713 \ud83d\udd12 \"q\""}"#,
        )
        .unwrap();
        assert_eq!(e.name(), "closed");
        assert_eq!(e.int("code"), 4001);
        assert_eq!(e.str("reason"), "bye \u{2713} \u{1f512} \"q\"");
        let e = Event::parse(r#"{"event":"x","a":true,"b":null,"c":-1}"#).unwrap();
        assert_eq!(e.get("a"), Some(&Json::Bool(true)));
        assert_eq!(e.get("b"), Some(&Json::Null));
        assert_eq!(e.int("c"), -1);
        assert!(Event::parse(r#"{"event":"x"} trailing"#).is_none());
        assert!(Event::parse("listening on 8080").is_none());
        assert_eq!(query_value("a b✓&"), "a%20b%E2%9C%93%26");
    }
}

use peers::{Json, Peer, PeerDeflate, query_value};

// ---------------------------------------------------------------------------
// Our client against their server
// ---------------------------------------------------------------------------

/// Starts `peer`'s server and connects our client to `path` on it.
async fn connect_to<D: Side>(peer: Peer, path: &str) -> (peers::Process, Ws<D, TcpStream>) {
    let (process, port) = peer.server().await;
    let url = format!("ws://127.0.0.1:{port}{path}");
    let tcp = match step("TCP connect", TcpStream::connect(("127.0.0.1", port))).await {
        Ok(tcp) => tcp,
        Err(err) => process.fail(&format!("connecting to {url}: {err}")),
    };
    tcp.set_nodelay(true).expect("TCP_NODELAY");
    let options = ClientOptions::new().config(config());
    let (ws, response) = match step(
        "client_async",
        driver::client_with::<D::Runtime, _, _>(&url, D::io(tcp), options),
    )
    .await
    {
        Ok(connected) => connected,
        Err(err) => process.fail(&format!("client_async({url}) failed: {err}")),
    };
    assert_eq!(response.status(), 101, "handshake response status");
    (process, ws)
}

/// Our client's next message; a failure shows the peer's stderr too.
async fn read<S, R>(process: &peers::Process, ws: &mut WebSocketStream<S, R>) -> Message
where
    S: Unpin,
    R: Transport<S>,
{
    match step("our client's read", ws.read()).await {
        Ok(msg) => msg,
        Err(err) => process.fail(&format!("our client's read failed: {err}")),
    }
}

/// After our client saw the peer's close frame (or sent its own and read
/// the reply), the next read ends the connection. The stream is handed back
/// so the caller keeps it open while checking what the peer saw.
///
/// That matters: a `websockets` server, having half-closed the TCP
/// connection, waits for the client's FIN before it reports the connection
/// closed (its close timeout does not apply on this path). tokio-lockgate
/// shuts down its write side when the closing handshake completes, so the
/// peer finishes even though we still hold the stream.
async fn assert_connection_closed<S, R>(
    process: &peers::Process,
    mut ws: WebSocketStream<S, R>,
) -> WebSocketStream<S, R>
where
    S: Unpin,
    R: Transport<S>,
{
    match step("our client's last read", ws.read()).await {
        Err(Error::ConnectionClosed) => {}
        other => process.fail(&format!(
            "expected Err(ConnectionClosed), got {:?}",
            other.as_ref().map(describe)
        )),
    }
    ws
}

/// Closes from our client with `frame`, expects the peer's reply to echo
/// `reply`, and the end of the connection.
async fn client_close<S, R>(
    process: &peers::Process,
    mut ws: WebSocketStream<S, R>,
    frame: CloseFrame,
    reply: (u16, &str),
) -> WebSocketStream<S, R>
where
    S: Unpin,
    R: Transport<S>,
{
    step("our client's close", ws.close(Some(frame)))
        .await
        .expect("our client's close");
    match read(process, &mut ws).await {
        Message::Close(frame) => assert_close(&frame, reply.0, reply.1),
        other => panic!("expected the peer's close reply, got {}", describe(&other)),
    }
    assert_connection_closed(process, ws).await
}

/// Text, binary, 64 KiB of each: written together, flushed once, echoed.
async fn client_messages<D: Side>(peer: Peer) {
    let (process, mut ws) = connect_to::<D>(peer, "/echo").await;
    let sent = [
        Message::text("h\u{e9}llo, lockgate \u{2713} \u{1f512}"),
        Message::binary((0..=255u8).collect::<Vec<u8>>()),
        Message::text("lock gate \u{e9}\u{2713} ".repeat(4096)),
        Message::binary(pattern(64 * KIB, 7)),
    ];
    assert_eq!(sent[2].len(), 64 * KIB);
    for msg in &sent {
        step("write", ws.write(msg.clone()))
            .await
            .expect("our client's write");
    }
    step("flush", ws.flush()).await.expect("our client's flush");
    for msg in &sent {
        assert_same(&read(&process, &mut ws).await, msg);
    }
    let _still_open = client_close(&process, ws, close_frame(1000, "bye"), (1000, "bye")).await;
    process.finish().await.assert_closed(1000, "bye");
}

/// One 16 MiB binary message each way.
async fn client_large<D: Side>(peer: Peer) {
    let (process, mut ws) = connect_to::<D>(peer, "/echo").await;
    let msg = Message::binary(pattern(16 * MIB, 11));
    step("send 16 MiB", ws.send(msg.clone()))
        .await
        .expect("our client's send");
    assert_same(&read(&process, &mut ws).await, &msg);
    let _still_open = client_close(&process, ws, close_frame(1000, "bye"), (1000, "bye")).await;
    process.finish().await.assert_closed(1000, "bye");
}

/// Our client pings; the peer's server answers with a pong.
async fn client_pings<D: Side>(peer: Peer) {
    let (process, mut ws) = connect_to::<D>(peer, "/echo").await;
    step("send ping", ws.send(Message::Ping("lockgate ping".into())))
        .await
        .expect("our client's ping");
    match read(&process, &mut ws).await {
        Message::Pong(data) => assert_eq!(&data[..], b"lockgate ping", "pong payload"),
        other => panic!("expected the pong, got {}", describe(&other)),
    }
    let _still_open = client_close(&process, ws, close_frame(1000, "bye"), (1000, "bye")).await;
    let events = process.finish().await;
    if peer == Peer::Node {
        // ws reports the pings it answers; websockets does not.
        assert_eq!(events.one("ping").str("data"), "lockgate ping");
    }
    events.assert_closed(1000, "bye");
}

/// The peer's server pings; our client's read answers with a pong.
async fn client_answers_ping<D: Side>(peer: Peer) {
    let data = format!("{} ping", peer.name());
    let path = format!("/ping?data={}", query_value(&data));
    let (process, mut ws) = connect_to::<D>(peer, &path).await;
    match read(&process, &mut ws).await {
        Message::Ping(got) => assert_eq!(&got[..], data.as_bytes(), "ping payload"),
        other => panic!("expected the peer's ping, got {}", describe(&other)),
    }
    // The peer sends this text once our pong has arrived.
    assert_same(
        &read(&process, &mut ws).await,
        &Message::text(format!("pong:{data}")),
    );
    let _still_open = client_close(&process, ws, close_frame(1000, "bye"), (1000, "bye")).await;
    let events = process.finish().await;
    assert_eq!(events.one("pong").str("data"), data);
    events.assert_closed(1000, "bye");
}

/// Our client starts the closing handshake with a code and a reason.
async fn client_closes<D: Side>(peer: Peer) {
    let (process, ws) = connect_to::<D>(peer, "/echo").await;
    let reason = "client bye \u{2713}";
    // Both peers echo the code and the reason in their reply.
    let _still_open = client_close(&process, ws, close_frame(4003, reason), (4003, reason)).await;
    process.finish().await.assert_closed(4003, reason);
}

/// The peer's server starts the closing handshake with a code and a reason.
async fn client_answers_close<D: Side>(peer: Peer) {
    let reason = "server bye \u{2713}";
    let path = format!("/close?code=4001&reason={}", query_value(reason));
    let (process, mut ws) = connect_to::<D>(peer, &path).await;
    match read(&process, &mut ws).await {
        Message::Close(frame) => assert_close(&frame, 4001, reason),
        other => panic!("expected the peer's close, got {}", describe(&other)),
    }
    // Still open on our side: the peer finishes on our FIN alone.
    let _still_open = assert_connection_closed(&process, ws).await;
    // Our reply echoes the code, without a reason.
    process.finish().await.assert_closed(4001, "");
}

// ---------------------------------------------------------------------------
// Their client against our server
// ---------------------------------------------------------------------------

/// What our server saw on its one connection.
#[derive(Debug, Default)]
struct Seen {
    /// Payloads of the pings it received (and answered).
    pings: Vec<Vec<u8>>,
    /// The close frame it received, if any.
    close: Option<Option<CloseFrame>>,
    /// Data messages echoed.
    echoed: usize,
    /// The permessage-deflate parameters negotiated, if any (recorded by
    /// the compressed tests' handler).
    deflate: Option<DeflateParams>,
}

/// Runs our server for one connection on 127.0.0.1 port 0 with `handler`;
/// returns the URL and the task, which yields what the handler returns.
async fn serve_one<D, F, Fut>(handler: F) -> (String, JoinHandle<Seen>)
where
    D: Side,
    F: FnOnce(Ws<D, TcpStream>) -> Fut + Send + 'static,
    Fut: Future<Output = Seen> + Send,
{
    serve_one_with::<D, _, _, _, _>(config(), |tcp| tcp, handler).await
}

/// [`serve_one`] with `config`, over the accepted TCP stream as wrapped by
/// `wrap`.
async fn serve_one_with<D, S, W, F, Fut>(
    config: Config,
    wrap: W,
    handler: F,
) -> (String, JoinHandle<Seen>)
where
    D: Side,
    D::Runtime: Transport<D::Io<S>>,
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    W: FnOnce(TcpStream) -> S + Send + 'static,
    F: FnOnce(Ws<D, S>) -> Fut + Send + 'static,
    Fut: Future<Output = Seen> + Send,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("ws://{}/", listener.local_addr().expect("local_addr"));
    let task = tokio::spawn(async move {
        let (tcp, _) = step("accept", listener.accept()).await.expect("TCP accept");
        tcp.set_nodelay(true).expect("TCP_NODELAY");
        let ws = step(
            "accept_async",
            driver::accept_with::<D::Runtime, _, _>(
                D::io(wrap(tcp)),
                ServerOptions::new().config(config),
            ),
        )
        .await
        .expect("our server's handshake");
        handler(ws).await
    });
    (url, task)
}

/// Echoes data messages until the closing handshake ends, recording pings
/// and the close frame.
async fn echo<S, R>(mut ws: WebSocketStream<S, R>, mut seen: Seen) -> Seen
where
    S: Unpin,
    R: Transport<S>,
{
    loop {
        match step("our server's read", ws.read()).await {
            Ok(msg) if msg.is_data() => {
                step("echo", ws.send(msg)).await.expect("our server's send");
                seen.echoed += 1;
            }
            Ok(Message::Ping(data)) => seen.pings.push(data.to_vec()),
            Ok(Message::Close(frame)) => seen.close = Some(frame),
            Ok(other) => panic!("our server got an unexpected {}", describe(&other)),
            Err(Error::ConnectionClosed) => return seen,
            Err(err) => panic!("our server's read failed: {err}"),
        }
    }
}

/// Waits for our server's task and returns what it saw.
async fn server_result(task: JoinHandle<Seen>) -> Seen {
    match step("our server's task", task).await {
        Ok(seen) => seen,
        Err(err) => resume_unwind(err.into_panic()),
    }
}

/// Waits for the peer's client to exit, then for our server. (Should one
/// side fail because the other did, both panic messages are in the test's
/// output: the panic hook prints a task's panic when it happens.)
async fn finish_both(process: peers::Process, task: JoinHandle<Seen>) -> (Seen, peers::Events) {
    let events = process.finish().await;
    (server_result(task).await, events)
}

/// Runs `peer`'s client scenario against our echo server.
async fn against_echo<D: Side>(peer: Peer, scenario: &[&str]) -> (Seen, peers::Events) {
    let (url, task) = serve_one::<D, _, _>(|ws| echo(ws, Seen::default())).await;
    finish_both(peer.client(&url, scenario).await, task).await
}

/// Text, binary, 64 KiB of each, sent by the peer before it reads.
async fn server_messages<D: Side>(peer: Peer) {
    let (seen, events) = against_echo::<D>(peer, &["messages"]).await;
    assert_eq!(
        events.echoes(),
        [
            ("text", 25),
            ("binary", 256),
            ("text", 64 * 1024),
            ("binary", 64 * 1024)
        ]
    );
    assert_eq!(seen.echoed, 4);
    assert_close(seen.close.as_ref().expect("no close frame"), 1000, "done");
    // Our reply echoes the code, without a reason.
    events.assert_closed(1000, "");
}

/// One 16 MiB binary message each way.
async fn server_large<D: Side>(peer: Peer) {
    let (seen, events) = against_echo::<D>(peer, &["large"]).await;
    assert_eq!(events.echoes(), [("binary", 16 * 1024 * 1024)]);
    assert_eq!(seen.echoed, 1);
    events.assert_closed(1000, "");
}

/// The peer's client pings; our server's read answers with a pong.
async fn server_answers_ping<D: Side>(peer: Peer) {
    let data = format!("{} ping", peer.name());
    let (seen, events) = against_echo::<D>(peer, &["ping", &data]).await;
    assert_eq!(seen.pings, [data.as_bytes()]);
    assert_eq!(events.one("pong").str("data"), data);
    events.assert_closed(1000, "");
}

/// Our server pings; the peer's client answers with a pong.
async fn server_pings<D: Side>(peer: Peer) {
    let (url, task) = serve_one::<D, _, _>(|mut ws| async move {
        step("send ping", ws.send(Message::Ping("lockgate ping".into())))
            .await
            .expect("our server's ping");
        match step("read pong", ws.read()).await {
            Ok(Message::Pong(data)) => assert_eq!(&data[..], b"lockgate ping", "pong payload"),
            other => panic!("expected the pong, got {:?}", other.as_ref().map(describe)),
        }
        // Tells the peer it may close.
        step("send", ws.send(Message::text("got your pong")))
            .await
            .expect("our server's send");
        echo(ws, Seen::default()).await
    })
    .await;
    let (seen, events) = finish_both(peer.client(&url, &["server-ping"]).await, task).await;
    assert_eq!(events.one("text").str("data"), "got your pong");
    if peer == Peer::Node {
        // ws reports the pings it answers; websockets does not.
        assert_eq!(events.one("ping").str("data"), "lockgate ping");
    }
    assert_close(seen.close.as_ref().expect("no close frame"), 1000, "done");
    events.assert_closed(1000, "");
}

/// The peer's client starts the closing handshake with a code and a reason.
async fn server_answers_close<D: Side>(peer: Peer) {
    let reason = "client bye \u{2713}";
    let (seen, events) = against_echo::<D>(peer, &["close", "4002", reason]).await;
    assert_close(seen.close.as_ref().expect("no close frame"), 4002, reason);
    // Our reply echoes the code, without a reason.
    events.assert_closed(4002, "");
}

/// Our server starts the closing handshake with a code and a reason.
async fn server_closes<D: Side>(peer: Peer) {
    let reason = "server bye \u{2713}";
    let (url, task) = serve_one::<D, _, _>(move |mut ws| async move {
        step("close", ws.close(Some(close_frame(4004, reason))))
            .await
            .expect("our server's close");
        echo(ws, Seen::default()).await
    })
    .await;
    let (seen, events) = finish_both(peer.client(&url, &["wait-close"]).await, task).await;
    // Both peers echo the code and the reason in their reply.
    assert_close(seen.close.as_ref().expect("no close reply"), 4004, reason);
    events.assert_closed(4004, reason);
}

// ---------------------------------------------------------------------------
// Compressed: permessage-deflate (RFC 7692)
// ---------------------------------------------------------------------------

/// The permessage-deflate variant a compressed test negotiates. The client
/// is the side that offers, the server the side that accepts; whichever of
/// them is ours gets `DeflateConfig::default().min_compress_size(0)`, plus
/// both no-context-takeover flags where the variant puts them on our side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Deflate {
    /// Both sides with their defaults: context takeover both ways.
    ContextTakeover,
    /// The client offers `server_no_context_takeover` and
    /// `client_no_context_takeover`; the server, with its defaults, grants
    /// them.
    NoContextTakeoverOffered,
    /// The client offers neither; the server requires both and answers
    /// them unasked.
    NoContextTakeoverRequired,
}

impl Deflate {
    fn no_context_takeover(self) -> bool {
        self != Deflate::ContextTakeover
    }

    /// Whether the side in `role` asks for the no-context-takeover flags.
    fn flags_on(self, role: Role) -> bool {
        matches!(
            (self, role),
            (Deflate::NoContextTakeoverOffered, Role::Client)
                | (Deflate::NoContextTakeoverRequired, Role::Server)
        )
    }

    /// Our configuration when we are `ours`.
    fn our_config(self, ours: Role) -> Config {
        let flags = self.flags_on(ours);
        config().deflate(Some(
            DeflateConfig::default()
                .min_compress_size(0)
                .server_no_context_takeover(flags)
                .client_no_context_takeover(flags),
        ))
    }

    /// The peer's setting when we are `ours`.
    fn peer_setting(self, ours: Role) -> PeerDeflate {
        let theirs = match ours {
            Role::Client => Role::Server,
            Role::Server => Role::Client,
        };
        if self.flags_on(theirs) {
            PeerDeflate::NoContextTakeover
        } else {
            PeerDeflate::On
        }
    }

    /// What both ends must agree on with `peer` when we are `ours`.
    fn expected(self, peer: Peer, ours: Role) -> DeflateParams {
        // websockets' server limits both windows to 12 bits by default
        // (`enable_server_permessage_deflate`; python_server.py keeps that
        // in its no-context-takeover variant). Nobody else limits them.
        let bits = if (peer, ours) == (Peer::Python, Role::Client) {
            12
        } else {
            15
        };
        DeflateParams {
            server_no_context_takeover: self.no_context_takeover(),
            client_no_context_takeover: self.no_context_takeover(),
            server_max_window_bits: bits,
            client_max_window_bits: bits,
        }
    }
}

/// `n` bytes of JSON lines: compressible (about 5:1), yet not a short
/// repetition, with a 2-byte UTF-8 character per line. The same bytes as
/// `json_lines` in the peers' client scripts.
fn json_lines(n: usize) -> String {
    let mut out = String::with_capacity(n);
    for i in 0u64.. {
        let line = format!(
            "{{\"id\":{i},\"user\":\"us\u{e9}r-{}\",\"score\":{},\"ok\":{}}}\n",
            i % 997,
            i * 7919 % 100_003,
            i % 3 == 0
        );
        if out.len() + line.len() > n {
            break;
        }
        out.push_str(&line);
    }
    let pad = n - out.len();
    out.extend(std::iter::repeat_n(' ', pad));
    out
}

/// The messages of the compressed `*_text_binary_64k` tests: text, binary,
/// an empty binary, 64 KiB of each, and the same 1 KiB of JSON lines three
/// times (back-references into the previous message with context takeover).
fn deflate_messages() -> Vec<Message> {
    let repeated = json_lines(KIB);
    vec![
        Message::text("h\u{e9}llo, lockgate \u{2713} \u{1f512}"),
        Message::binary((0..=255u8).collect::<Vec<u8>>()),
        Message::binary(Vec::new()),
        Message::text("lock gate \u{e9}\u{2713} ".repeat(4096)),
        Message::binary(pattern(64 * KIB, 7)),
        Message::text(repeated.clone()),
        Message::text(repeated.clone()),
        Message::text(repeated),
    ]
}

/// The echoes the peers' `deflate-messages` scenario checks: the messages
/// of [`deflate_messages`], then 12 KiB of JSON lines sent in 3 fragments.
const DEFLATE_ECHOES: [(&str, i64); 9] = [
    ("text", 25),
    ("binary", 256),
    ("binary", 0),
    ("text", 64 * 1024),
    ("binary", 64 * 1024),
    ("text", 1024),
    ("text", 1024),
    ("text", 1024),
    ("text", 12 * 1024),
];

/// The permessage-deflate parameters of a `Sec-WebSocket-Extensions`
/// answer accepting permessage-deflate alone, `None` for anything else.
/// A window-bits parameter the answer leaves out is 15: none of the offers
/// in these tests gives `client_max_window_bits` a value.
fn parse_answer(header: &str) -> Option<DeflateParams> {
    if header.contains(',') {
        return None;
    }
    let mut parts = header.split(';').map(str::trim);
    if !parts.next()?.eq_ignore_ascii_case("permessage-deflate") {
        return None;
    }
    let mut params = DeflateParams::default();
    for part in parts {
        let (name, value) = match part.split_once('=') {
            Some((name, value)) => (name.trim(), Some(value.trim().trim_matches('"'))),
            None => (part, None),
        };
        match (name.to_ascii_lowercase().as_str(), value) {
            ("server_no_context_takeover", None) => params.server_no_context_takeover = true,
            ("client_no_context_takeover", None) => params.client_no_context_takeover = true,
            ("server_max_window_bits", Some(bits)) => {
                params.server_max_window_bits = bits.parse().ok()?;
            }
            ("client_max_window_bits", Some(bits)) => {
                params.client_max_window_bits = bits.parse().ok()?;
            }
            _ => return None,
        }
    }
    Some(params)
}

#[test]
fn answers_parse() {
    assert_eq!(
        parse_answer("permessage-deflate"),
        Some(DeflateParams::default())
    );
    assert_eq!(
        parse_answer(
            "permessage-deflate; server_no_context_takeover; client_no_context_takeover; \
             server_max_window_bits=12; client_max_window_bits=\"12\""
        ),
        Some(DeflateParams {
            server_no_context_takeover: true,
            client_no_context_takeover: true,
            server_max_window_bits: 12,
            client_max_window_bits: 12,
        })
    );
    assert_eq!(parse_answer("permessage-deflate, x-other"), None);
    assert_eq!(parse_answer("permessage-deflate; unknown"), None);
    assert_eq!(parse_answer("x-other"), None);
}

/// Asserts the peer reported permessage-deflate active with `want`: in the
/// `Sec-WebSocket-Extensions` answer it sent or received and, where it
/// reports them (websockets), in the parameters it applies.
fn assert_peer_deflate(events: &peers::Events, want: &DeflateParams) {
    let name = events.peer.name();
    let open = events.one("open");
    assert_eq!(
        open.get("deflate"),
        Some(&Json::Bool(true)),
        "{name} peer: permessage-deflate is not active on its side: {open:?}"
    );
    let header = open.str("extensions");
    assert_eq!(
        parse_answer(header).as_ref(),
        Some(want),
        "{name} peer: the Sec-WebSocket-Extensions answer {header:?}"
    );
    let applied = [
        (
            "server_no_context_takeover",
            Json::Bool(want.server_no_context_takeover),
        ),
        (
            "client_no_context_takeover",
            Json::Bool(want.client_no_context_takeover),
        ),
        (
            "server_max_window_bits",
            Json::Int(want.server_max_window_bits.into()),
        ),
        (
            "client_max_window_bits",
            Json::Int(want.client_max_window_bits.into()),
        ),
    ];
    if events.peer == Peer::Python {
        for (key, value) in applied {
            assert_eq!(open.get(key), Some(&value), "{name} peer applies {key}");
        }
    }
}

/// Counts the bytes that cross a stream, to tell compressed traffic from
/// uncompressed.
mod wire {
    use std::io;
    use std::pin::Pin;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Context, Poll};

    use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

    /// Bytes read from and written to a [`Wire`].
    #[derive(Debug, Default)]
    pub(crate) struct Counts {
        read: AtomicUsize,
        written: AtomicUsize,
    }

    impl Counts {
        /// `(read, written)` so far.
        pub(crate) fn get(&self) -> (usize, usize) {
            (
                self.read.load(Ordering::Relaxed),
                self.written.load(Ordering::Relaxed),
            )
        }
    }

    /// A stream that adds what crosses it to shared [`Counts`].
    pub(crate) struct Wire<S> {
        inner: S,
        counts: Arc<Counts>,
    }

    impl<S> Wire<S> {
        pub(crate) fn new(inner: S, counts: Arc<Counts>) -> Self {
            Wire { inner, counts }
        }

        fn count_written(&self, n: &Poll<io::Result<usize>>) {
            if let Poll::Ready(Ok(n)) = n {
                self.counts.written.fetch_add(*n, Ordering::Relaxed);
            }
        }
    }

    impl<S: AsyncRead + Unpin> AsyncRead for Wire<S> {
        fn poll_read(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let this = self.get_mut();
            let before = buf.filled().len();
            let poll = Pin::new(&mut this.inner).poll_read(cx, buf);
            if let Poll::Ready(Ok(())) = poll {
                let n = buf.filled().len() - before;
                this.counts.read.fetch_add(n, Ordering::Relaxed);
            }
            poll
        }
    }

    impl<S: AsyncWrite + Unpin> AsyncWrite for Wire<S> {
        fn poll_write(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            let this = self.get_mut();
            let poll = Pin::new(&mut this.inner).poll_write(cx, buf);
            this.count_written(&poll);
            poll
        }

        fn poll_write_vectored(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            bufs: &[io::IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            let this = self.get_mut();
            let poll = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
            this.count_written(&poll);
            poll
        }

        fn is_write_vectored(&self) -> bool {
            self.inner.is_write_vectored()
        }

        fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.get_mut().inner).poll_flush(cx)
        }

        fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
        }
    }
}

use wire::{Counts, Wire};

/// Asserts both directions of a connection that carried `payload` bytes of
/// messages each way took well under `payload` bytes on the wire (the
/// handshake and close frames included): whoever sent them compressed them.
fn assert_compressed(who: &str, counts: &Counts, payload: usize) {
    let (read, written) = counts.get();
    assert!(
        written < payload / 2,
        "{who} wrote {written} bytes on the wire for {payload} bytes of messages: \
         not compressed"
    );
    assert!(
        read < payload / 2,
        "{who} read {read} bytes from the wire for {payload} bytes of messages: \
         the peer did not compress"
    );
}

/// Starts `peer`'s echo server for `mode` and connects our client to it
/// with compression on, over a counted TCP stream; checks what our client
/// negotiated.
async fn connect_deflate<D: Side>(
    peer: Peer,
    mode: Deflate,
) -> (peers::Process, Ws<D, Wire<TcpStream>>, Arc<Counts>) {
    let (process, port) = peer.server_with(mode.peer_setting(Role::Client)).await;
    let url = format!("ws://127.0.0.1:{port}/echo");
    let tcp = match step("TCP connect", TcpStream::connect(("127.0.0.1", port))).await {
        Ok(tcp) => tcp,
        Err(err) => process.fail(&format!("connecting to {url}: {err}")),
    };
    tcp.set_nodelay(true).expect("TCP_NODELAY");
    let counts = Arc::new(Counts::default());
    let stream = Wire::new(tcp, counts.clone());
    let config = mode.our_config(Role::Client);
    let (ws, response) = match step(
        "client_async",
        driver::client_with::<D::Runtime, _, _>(
            &url,
            D::io(stream),
            ClientOptions::new().config(config),
        ),
    )
    .await
    {
        Ok(connected) => connected,
        Err(err) => process.fail(&format!("client_async({url}) failed: {err}")),
    };
    assert_eq!(response.status(), 101, "handshake response status");
    assert_eq!(
        ws.context().deflate(),
        Some(&mode.expected(peer, Role::Client)),
        "permessage-deflate as negotiated by our client; the answer was {:?}",
        response.headers().get("sec-websocket-extensions")
    );
    (process, ws, counts)
}

/// Our client sends `sent` compressed (written together, flushed once) and
/// checks the echoes, closes, and checks what the peer negotiated and that
/// both directions were compressed.
async fn client_deflate_exchange<D: Side>(peer: Peer, mode: Deflate, sent: &[Message]) {
    let (process, mut ws, counts) = connect_deflate::<D>(peer, mode).await;
    for msg in sent {
        step("write", ws.write(msg.clone()))
            .await
            .expect("our client's write");
    }
    step("flush", ws.flush()).await.expect("our client's flush");
    for msg in sent {
        assert_same(&read(&process, &mut ws).await, msg);
    }
    let _still_open = client_close(&process, ws, close_frame(1000, "bye"), (1000, "bye")).await;
    let events = process.finish().await;
    events.assert_closed(1000, "bye");
    assert_peer_deflate(&events, &mode.expected(peer, Role::Client));
    let payload = sent.iter().map(Message::len).sum();
    assert_compressed("our client", &counts, payload);
}

/// Compressed text, binary, 64 KiB and repeated messages.
async fn client_deflate_messages<D: Side>(peer: Peer, mode: Deflate) {
    client_deflate_exchange::<D>(peer, mode, &deflate_messages()).await;
}

/// One compressed 16 MiB text message each way.
async fn client_deflate_large<D: Side>(peer: Peer, mode: Deflate) {
    let msg = Message::text(json_lines(16 * MIB));
    client_deflate_exchange::<D>(peer, mode, &[msg]).await;
}

/// Runs `peer`'s client `scenario` for `mode` against our echo server with
/// compression on, over a counted TCP stream; checks what both ends
/// negotiated, the echoes, the close and that both directions were
/// compressed.
async fn server_deflate_exchange<D: Side>(
    peer: Peer,
    mode: Deflate,
    scenario: &str,
    echoes: &[(&str, i64)],
) {
    let counts = Arc::new(Counts::default());
    let wire_counts = counts.clone();
    let (url, task) = serve_one_with::<D, _, _, _, _>(
        mode.our_config(Role::Server),
        move |tcp| Wire::new(tcp, wire_counts),
        |ws| async move {
            let deflate = ws.context().deflate().copied();
            echo(
                ws,
                Seen {
                    deflate,
                    ..Seen::default()
                },
            )
            .await
        },
    )
    .await;
    let process = peer
        .client_with(&url, &[scenario], mode.peer_setting(Role::Server))
        .await;
    let (seen, events) = finish_both(process, task).await;
    let want = mode.expected(peer, Role::Server);
    assert_eq!(
        seen.deflate,
        Some(want),
        "permessage-deflate as negotiated by our server"
    );
    assert_peer_deflate(&events, &want);
    assert_eq!(events.echoes(), echoes);
    assert_eq!(seen.echoed, echoes.len());
    assert_close(seen.close.as_ref().expect("no close frame"), 1000, "done");
    events.assert_closed(1000, "");
    let payload = echoes.iter().map(|(_, len)| *len as usize).sum();
    assert_compressed("our server", &counts, payload);
}

/// Compressed text, binary, 64 KiB, repeated and fragmented messages.
async fn server_deflate_messages<D: Side>(peer: Peer, mode: Deflate) {
    server_deflate_exchange::<D>(peer, mode, "deflate-messages", &DEFLATE_ECHOES).await;
}

/// One compressed 16 MiB text message each way.
async fn server_deflate_large<D: Side>(peer: Peer, mode: Deflate) {
    server_deflate_exchange::<D>(peer, mode, "deflate-large", &[("text", 16 * 1024 * 1024)]).await;
}

// ---------------------------------------------------------------------------
// The tests: every scenario against every peer
// ---------------------------------------------------------------------------

/// The compressed tests of one [`Deflate`] variant against one peer.
macro_rules! deflate_tests {
    ($driver:ty, $peer:expr, $mode:expr) => {
        #[tokio::test]
        async fn client_text_binary_64k() {
            bounded(client_deflate_messages::<$driver>($peer, $mode)).await;
        }

        #[tokio::test]
        async fn client_16mib() {
            bounded(client_deflate_large::<$driver>($peer, $mode)).await;
        }

        #[tokio::test]
        async fn server_text_binary_64k() {
            bounded(server_deflate_messages::<$driver>($peer, $mode)).await;
        }

        #[tokio::test]
        async fn server_16mib() {
            bounded(server_deflate_large::<$driver>($peer, $mode)).await;
        }
    };
}

macro_rules! interop_tests {
    ($driver:ty; $($module:ident => $peer:expr;)*) => {$(
        mod $module {
            use super::*;

            #[tokio::test]
            async fn client_text_binary_64k() {
                bounded(client_messages::<$driver>($peer)).await;
            }

            #[tokio::test]
            async fn client_16mib() {
                bounded(client_large::<$driver>($peer)).await;
            }

            #[tokio::test]
            async fn client_pings_peer() {
                bounded(client_pings::<$driver>($peer)).await;
            }

            #[tokio::test]
            async fn client_answers_peer_ping() {
                bounded(client_answers_ping::<$driver>($peer)).await;
            }

            #[tokio::test]
            async fn client_closes_with_code_and_reason() {
                bounded(client_closes::<$driver>($peer)).await;
            }

            #[tokio::test]
            async fn client_answers_peer_close() {
                bounded(client_answers_close::<$driver>($peer)).await;
            }

            #[tokio::test]
            async fn server_text_binary_64k() {
                bounded(server_messages::<$driver>($peer)).await;
            }

            #[tokio::test]
            async fn server_16mib() {
                bounded(server_large::<$driver>($peer)).await;
            }

            #[tokio::test]
            async fn server_pings_peer() {
                bounded(server_pings::<$driver>($peer)).await;
            }

            #[tokio::test]
            async fn server_answers_peer_ping() {
                bounded(server_answers_ping::<$driver>($peer)).await;
            }

            #[tokio::test]
            async fn server_closes_with_code_and_reason() {
                bounded(server_closes::<$driver>($peer)).await;
            }

            #[tokio::test]
            async fn server_answers_peer_close() {
                bounded(server_answers_close::<$driver>($peer)).await;
            }

            mod deflate_context_takeover {
                use super::*;
                deflate_tests!($driver, $peer, Deflate::ContextTakeover);
            }

            mod deflate_no_context_takeover_offered {
                use super::*;
                deflate_tests!($driver, $peer, Deflate::NoContextTakeoverOffered);
            }

            mod deflate_no_context_takeover_required {
                use super::*;
                deflate_tests!($driver, $peer, Deflate::NoContextTakeoverRequired);
            }
        }
    )*};
}

/// tokio-lockgate.
mod tokio_driver {
    use super::*;

    interop_tests! {
        TokioDriver;
        python_websockets => Peer::Python;
        node_ws => Peer::Node;
    }
}

/// async-lockgate's futures-io driver.
mod futures_io_driver {
    use super::*;

    interop_tests! {
        FuturesIoDriver;
        python_websockets => Peer::Python;
        node_ws => Peer::Node;
    }
}
