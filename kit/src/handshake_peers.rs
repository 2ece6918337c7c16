//! Peers that misbehave during the opening handshake, over real sockets on
//! 127.0.0.1, for the blocking and the tokio entry points alike. Plain
//! `std::net`: a test runs them on a thread of its own.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use lockgate::Config;

/// The handshake deadline of the deadline tests.
pub const DEADLINE: Duration = Duration::from_millis(300);

/// A generous bound for "within the deadline" and "at once" on a loaded
/// machine, far below the default 30 s deadline and far above
/// [`DEADLINE`]. Also bounds every wait of these peers.
pub const SOON: Duration = Duration::from_secs(5);

/// A config with the [`DEADLINE`].
pub fn deadline_config() -> Config {
    Config::default().handshake_timeout(Some(DEADLINE))
}

/// Bytes that are not a WebSocket upgrade request, each with the start of
/// the status line a server must answer them with at once.
pub fn not_a_request() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    // One byte past the default head limit (64 KiB; lines have no lower
    // limit of their own): the last byte sent is the one refused.
    let mut long_line = b"GET /".to_vec();
    long_line.resize(64 * 1024 + 1, b'a');
    vec![
        ("4 KiB of random bytes", random_bytes(4096), "HTTP/1.1 400 "),
        (
            "a TLS ClientHello",
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03".to_vec(),
            "HTTP/1.1 400 ",
        ),
        ("NUL bytes", vec![0; 64], "HTTP/1.1 400 "),
        (
            "an SSH banner",
            b"SSH-2.0-OpenSSH_9.6\r\n".to_vec(),
            "HTTP/1.1 400 ",
        ),
        (
            "a control byte in the target",
            b"GET /\x01".to_vec(),
            "HTTP/1.1 400 ",
        ),
        (
            "HTTP/1.0",
            b"GET / HTTP/1.0\r\nHost: a\r\n".to_vec(),
            "HTTP/1.1 400 ",
        ),
        ("a first line over 64 KiB", long_line, "HTTP/1.1 431 "),
    ]
}

/// Status lines that cannot start the answer to an upgrade request, sent
/// without the rest of a head.
pub fn not_a_response() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("HTTP/1.0 200", b"HTTP/1.0 200 OK\r\n".to_vec()),
        (
            "HTTP/1.0 101",
            b"HTTP/1.0 101 Switching Protocols\r\n".to_vec(),
        ),
        ("garbage", b"garbage\r\n".to_vec()),
        ("4 KiB of random bytes", random_bytes(4096)),
        ("NUL bytes", vec![0; 16]),
    ]
}

/// `len` bytes from a fixed xorshift sequence (the same in every run).
pub fn random_bytes(len: usize) -> Vec<u8> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

/// Connects to `addr`, sends `bytes` and leaves the connection open, then
/// reads until the server closes it. Returns what the server answered.
/// Panics if it does not close within [`SOON`] (a hang guard: a server
/// waiting for its deadline instead of refusing at once).
pub fn send_and_read_answer(addr: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.write_all(bytes).expect("send");
    read_until_closed(&mut stream)
}

/// Reads `stream` until the peer closes it (end of stream or reset) and
/// returns what it sent. Panics if that takes longer than [`SOON`].
pub fn read_until_closed(stream: &mut TcpStream) -> Vec<u8> {
    stream.set_read_timeout(Some(SOON)).expect("read timeout");
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    // Bounded: every read returns data, the end, or fails within SOON.
    for _ in 0..10_000 {
        match stream.read(&mut buf) {
            Ok(0) => return answer,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return answer,
            Err(e) => panic!(
                "the peer neither closed nor answered within {SOON:?} ({e}); got {:?}",
                String::from_utf8_lossy(&answer)
            ),
        }
    }
    panic!("endless answer");
}

/// A server on `listener` that, for one connection, reads what arrives at
/// once, answers `answer` (possibly nothing) and keeps the connection open
/// until the client closes it (or [`SOON`] passes).
pub fn answer_once(listener: TcpListener, answer: Vec<u8>) -> JoinHandle<()> {
    thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        stream.set_read_timeout(Some(SOON)).expect("read timeout");
        let mut request = [0u8; 4096];
        let _ = stream.read(&mut request);
        let _ = stream.write_all(&answer);
        let _ = read_until_closed(&mut stream);
    })
}

/// A connected pair: a client that will say nothing, and the server's end.
pub fn silent_client() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let client = TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
    let (server, _) = listener.accept().expect("accept");
    (client, server)
}
