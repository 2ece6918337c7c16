//! Test support: a real `nats-server` on 127.0.0.1 and `lockgate-fanout`
//! processes, started and stopped by PID, broadcast clients, and a plain
//! HTTP GET; a 3-server JetStream cluster and `lockgate.seq.v1` clients
//! for the history's tests.
#![allow(dead_code, unused_imports, unreachable_pub)]

mod jetstream;
mod process;
mod seq_client;

pub use jetstream::JetStreamCluster;
pub use process::Process;
pub use seq_client::{
    Next, Publisher, Received, SeqClient, assert_increasing, connect_seq, plain_data, texts,
    topic_url,
};

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use lockgate_fanout::{Node, NodeConfig, NodeHandle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream as AsyncTcpStream;
use tokio_lockgate::{MaybeTlsStream, WebSocketStream, connect_async};

/// A `nats-server` child process on a free loopback port.
pub struct NatsServer {
    child: Option<Child>,
    pub port: u16,
}

impl NatsServer {
    /// Starts one on a free port and waits until it accepts connections.
    pub fn start() -> Self {
        for _ in 0..10 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port();
            let mut server = Self { child: None, port };
            // The port was free a moment ago; another test may have taken
            // it since, and then this server exits at once: try another.
            if server.try_start() {
                return server;
            }
        }
        panic!("nats-server did not start on any of 10 free ports");
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Starts it again on the same port.
    pub fn restart(&mut self) {
        assert!(
            self.try_start(),
            "nats-server did not restart on port {}",
            self.port
        );
    }

    /// Starts it on its port; `false` if it exited (the port was taken).
    fn try_start(&mut self) -> bool {
        assert!(self.child.is_none(), "already running");
        let mut child = Command::new("nats-server")
            .args(["-a", "127.0.0.1", "-p", &self.port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start nats-server ({e}): install it with scripts/install-nats.sh \
                     (Debian's nats-server package)"
                )
            });
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if child.try_wait().expect("child status").is_some() {
                return false;
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "nats-server did not come up on {addr}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        // Listening, and it is ours (not another test's on a reused port).
        std::thread::sleep(Duration::from_millis(50));
        if child.try_wait().expect("child status").is_some() {
            return false;
        }
        self.child = Some(child);
        true
    }

    /// Kills it (SIGKILL: the broker vanishes, as in a crash).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A node on a free port relaying through `nats`.
pub async fn node(nats: &NatsServer) -> NodeHandle {
    Node::start(NodeConfig::new(loopback()).nats(nats.url()))
        .await
        .expect("node starts")
}

pub fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

pub type MaybeTls = MaybeTlsStream<AsyncTcpStream>;
pub type Client = WebSocketStream<MaybeTls>;

/// A client of `topic` on `node`, subscribed once this returns.
pub async fn client(node: &NodeHandle, topic: &str) -> Client {
    let url = format!("ws://{}/topics/{topic}", node.local_addr());
    connect_async(url).await.expect("client connects").0
}

/// Runs `future` with a time limit, so a broken test fails rather than hangs.
pub async fn within<T>(secs: u64, what: &str, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), future)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {secs} s"))
}

/// An HTTP/1.1 response: status, head (lower-cased), body.
pub struct HttpResponse {
    pub status: u16,
    pub head: String,
    pub body: String,
}

/// `GET path` on `addr` (`HOST:PORT`), without `Upgrade`, as a scraper
/// sends it; the server closes the connection after its answer.
pub async fn http_get(addr: &str, path: &str) -> HttpResponse {
    within(10, "an HTTP answer", async {
        let mut tcp = AsyncTcpStream::connect(addr).await.expect("connects");
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: test\r\nAccept: */*\r\n\r\n"
        );
        tcp.write_all(request.as_bytes())
            .await
            .expect("request sent");
        let mut raw = Vec::new();
        tcp.read_to_end(&mut raw).await.expect("the answer");
        let raw = String::from_utf8(raw).expect("UTF-8");
        let (head, body) = raw.split_once("\r\n\r\n").expect("a head");
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("no status in {head:?}"));
        HttpResponse {
            status,
            head: head.to_ascii_lowercase(),
            body: body.to_owned(),
        }
    })
    .await
}
