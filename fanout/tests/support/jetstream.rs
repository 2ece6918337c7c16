//! Three `nats-server` processes forming one JetStream cluster on
//! 127.0.0.1, with their monitor ports, so that a test can kill the
//! server that leads a stream and watch the history survive it.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Servers in the cluster: the fewest for which a replicated stream keeps
/// a quorum with one of them gone.
pub const SIZE: usize = 3;

/// One server's ports. Its name (`{cluster}-n{i}`) is what the monitor
/// reports as a stream's leader, and what tells our server from another
/// test's that took the port meanwhile.
struct Server {
    child: Option<Child>,
    name: String,
    client: u16,
    route: u16,
    monitor: u16,
    store: PathBuf,
}

/// A 3-server JetStream cluster, killed and its storage removed on drop.
pub struct JetStreamCluster {
    servers: Vec<Server>,
    dir: PathBuf,
}

/// Bounds the wait for servers to listen and for the meta leader.
const STARTUP: Duration = Duration::from_secs(30);

impl JetStreamCluster {
    /// Starts the 3 servers on free ports and waits until each listens.
    /// Call [`wait_ready`](Self::wait_ready) before creating streams.
    pub fn start() -> Self {
        let (id, dir) = fresh_dir();
        for attempt in 0..10 {
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("a storage directory");
            let ports = free_ports(3 * SIZE);
            let servers = (0..SIZE)
                .map(|i| Server {
                    child: None,
                    name: format!("{id}-n{i}"),
                    client: ports[3 * i],
                    route: ports[3 * i + 1],
                    monitor: ports[3 * i + 2],
                    store: dir.join(format!("n{i}")),
                })
                .collect();
            let mut cluster = Self {
                servers,
                dir: dir.clone(),
            };
            // A port free a moment ago may have been taken by another
            // test since: that server exits, and the cluster starts over
            // on other ports.
            if (0..SIZE).all(|i| cluster.try_start(i)) {
                return cluster;
            }
            eprintln!("JetStreamCluster: a port was taken (attempt {attempt}), trying others");
            drop(cluster);
        }
        panic!("the JetStream cluster did not start on 10 sets of free ports");
    }

    /// All client URLs, comma-separated, as `--nats` takes them.
    pub fn urls(&self) -> String {
        (0..SIZE).map(|i| self.url(i)).collect::<Vec<_>>().join(",")
    }

    /// Server `i`'s client URL.
    pub fn url(&self, i: usize) -> String {
        format!("nats://127.0.0.1:{}", self.servers[i].client)
    }

    /// All client URLs, server `i`'s first: the node's preferred server.
    pub fn urls_from(&self, i: usize) -> String {
        format!("{},{}", self.url(i), self.urls_except(i))
    }

    /// The client URLs of every server but `i`, comma-separated.
    pub fn urls_except(&self, i: usize) -> String {
        (0..SIZE)
            .filter(|&j| j != i)
            .map(|j| self.url(j))
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn is_running(&self, i: usize) -> bool {
        self.servers[i].child.is_some()
    }

    /// Kills server `i` with SIGKILL, as in a crash; its storage stays.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.servers[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts server `i` again, on its ports and with its storage.
    pub fn restart(&mut self, i: usize) {
        assert!(
            self.try_start(i),
            "nats-server {i} did not restart on port {}",
            self.servers[i].client
        );
    }

    /// Waits until the running servers agree on a JetStream meta leader
    /// that is running, and each reports itself healthy: from then on a
    /// stream can be created (or has a quorum again).
    pub async fn wait_ready(&self) {
        let deadline = tokio::time::Instant::now() + STARTUP;
        loop {
            let Err(last) = self.meta_leader().await else {
                return;
            };
            assert!(
                tokio::time::Instant::now() < deadline,
                "JetStream cluster not ready within {STARTUP:?}: {last}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn meta_leader(&self) -> Result<(), String> {
        let mut leaders = Vec::new();
        for (i, server) in self.servers.iter().enumerate() {
            if server.child.is_none() {
                continue;
            }
            let (status, body) = get(server.monitor, "/healthz?js-enabled-only=true")
                .await
                .ok_or(format!("server {i}: no /healthz answer"))?;
            if status != 200 {
                return Err(format!("server {i}: /healthz {status} {body}"));
            }
            let jsz = get_json(server.monitor, "/jsz")
                .await
                .ok_or(format!("server {i}: no /jsz"))?;
            let leader = jsz["meta_cluster"]["leader"].as_str().unwrap_or("");
            leaders.push(leader.to_owned());
        }
        let first = leaders.first().ok_or("no server running")?;
        let running = self
            .servers
            .iter()
            .any(|s| s.child.is_some() && &s.name == first);
        if first.is_empty() || !running || leaders.iter().any(|l| l != first) {
            return Err(format!("meta leaders reported: {leaders:?}"));
        }
        Ok(())
    }

    /// The names of the streams server `i` knows of (`None`: no answer).
    pub async fn streams(&self, i: usize) -> Option<Vec<String>> {
        let jsz = get_json(self.servers[i].monitor, "/jsz?accounts=true&streams=true").await?;
        Some(
            stream_details(&jsz)
                .filter_map(|s| s["name"].as_str().map(str::to_owned))
                .collect(),
        )
    }

    /// `stream`'s state (`messages`, `first_seq`, `last_seq`, ...) as each
    /// running server reports it: what a failing test prints.
    pub async fn stream_states(&self, stream: &str) -> Vec<(usize, Value)> {
        let mut states = Vec::new();
        for (i, server) in self.servers.iter().enumerate() {
            if server.child.is_none() {
                continue;
            }
            if let Some(jsz) = get_json(server.monitor, "/jsz?accounts=true&streams=true").await {
                if let Some(s) = stream_details(&jsz).find(|s| s["name"].as_str() == Some(stream)) {
                    states.push((i, s["state"].clone()));
                }
            }
        }
        states
    }

    /// The server leading `stream`, by index. Only a server that names
    /// itself as the leader is believed: a follower may still report a
    /// leader that has just been killed.
    pub async fn stream_leader(&self, stream: &str) -> Option<usize> {
        for (i, server) in self.servers.iter().enumerate() {
            if server.child.is_none() {
                continue;
            }
            let Some(jsz) = get_json(server.monitor, "/jsz?accounts=true&streams=true").await
            else {
                continue;
            };
            let leads = stream_details(&jsz).any(|s| {
                s["name"].as_str() == Some(stream)
                    && s["cluster"]["leader"].as_str() == Some(server.name.as_str())
            });
            if leads {
                return Some(i);
            }
        }
        None
    }

    /// Waits (at most `limit`) until `stream` has a running leader.
    pub async fn wait_stream_leader(&self, stream: &str, limit: Duration) -> usize {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(i) = self.stream_leader(stream).await {
                return i;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "stream {stream} has no leader after {limit:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Starts server `i`; `false` if it exited or another process answers
    /// on its monitor port (a port was taken).
    fn try_start(&mut self, i: usize) -> bool {
        assert!(self.servers[i].child.is_none(), "already running");
        let routes = self
            .servers
            .iter()
            .map(|s| format!("nats://127.0.0.1:{}", s.route))
            .collect::<Vec<_>>()
            .join(",");
        let cluster_name = self.servers[0].name.trim_end_matches("-n0").to_owned();
        let server = &self.servers[i];
        let log = std::fs::File::create(self.dir.join(format!("n{i}.log"))).expect("a log file");
        let mut child = Command::new("nats-server")
            .args(["-a", "127.0.0.1", "-p", &server.client.to_string()])
            .args(["-m", &server.monitor.to_string()])
            .args(["-js", "-sd", server.store.to_str().expect("UTF-8 path")])
            .args(["-n", &server.name, "--cluster_name", &cluster_name])
            .args(["--cluster", &format!("nats://127.0.0.1:{}", server.route)])
            .args(["--routes", &routes])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start nats-server ({e}): install it with scripts/install-nats.sh \
                     (Debian's nats-server package)"
                )
            });
        let deadline = Instant::now() + STARTUP;
        let ours = loop {
            if child.try_wait().expect("child status").is_some() {
                break false;
            }
            if listening(server.client) && listening(server.monitor) {
                // Whoever answers on the monitor port must be this one.
                break varz_name(server.monitor).as_deref() == Some(server.name.as_str());
            }
            assert!(
                Instant::now() < deadline,
                "nats-server {i} did not come up on port {}",
                server.client
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        if !ours || child.try_wait().expect("child status").is_some() {
            let _ = child.kill();
            let _ = child.wait();
            return false;
        }
        self.servers[i].child = Some(child);
        true
    }
}

impl Drop for JetStreamCluster {
    fn drop(&mut self) {
        for i in 0..SIZE {
            self.kill(i);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn stream_details(jsz: &Value) -> impl Iterator<Item = &Value> {
    jsz["account_details"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|account| account["stream_detail"].as_array().into_iter().flatten())
}

/// `n` distinct free ports, held together while chosen so none repeats.
fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<_> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("a free port"))
        .collect();
    listeners
        .iter()
        .map(|l| l.local_addr().expect("bound").port())
        .collect()
}

fn listening(port: u16) -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
}

/// The server name the monitor on `port` reports (blocking: used while
/// starting, outside any runtime's concern).
fn varz_name(port: u16) -> Option<String> {
    use std::io::{Read, Write};
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut tcp = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    tcp.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let request = format!("GET /varz HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    tcp.write_all(request.as_bytes()).ok()?;
    let mut raw = Vec::new();
    tcp.read_to_end(&mut raw).ok()?;
    let (_, body) = parse_response(&raw)?;
    let varz: Value = serde_json::from_str(&body).ok()?;
    varz["server_name"].as_str().map(str::to_owned)
}

/// `GET path` on the monitor at `port`: status and body, or `None` when
/// the server is down or does not answer within a few seconds (a killed
/// server is an expected state, not a failure).
async fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let exchange = async {
        let mut tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()?;
        let request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
        tcp.write_all(request.as_bytes()).await.ok()?;
        let mut raw = Vec::new();
        tcp.read_to_end(&mut raw).await.ok()?;
        parse_response(&raw)
    };
    tokio::time::timeout(Duration::from_secs(5), exchange)
        .await
        .ok()
        .flatten()
}

async fn get_json(port: u16, path: &str) -> Option<Value> {
    let (status, body) = get(port, path).await?;
    if status != 200 {
        return None;
    }
    serde_json::from_str(&body).ok()
}

/// Status and body of a response the server ended by closing. The
/// requests are HTTP/1.0 so that Go's server never chunks a long body.
fn parse_response(raw: &[u8]) -> Option<(u16, String)> {
    let raw = std::str::from_utf8(raw).ok()?;
    let (head, body) = raw.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, body.to_owned()))
}

/// A new directory under the temporary one, and its name: made with
/// `create_dir`, which fails if another cluster (of this process or
/// another) has the name, so the name is this cluster's alone.
fn fresh_dir() -> (String, PathBuf) {
    use std::hash::{BuildHasher, Hasher};
    for _ in 0..100 {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        let id = format!("lgjs{:x}", hasher.finish() & 0xffff_ffff);
        let dir = std::env::temp_dir().join(&id);
        match std::fs::create_dir(&dir) {
            Ok(()) => return (id, dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => panic!("a storage directory {}: {e}", dir.display()),
        }
    }
    panic!("no free name for a storage directory in 100 tries");
}
