//! Real proxy servers for the proxy tests, and the servers behind them.
//!
//! The proxies are programs we did not write, from Debian's packages
//! (`scripts/install-proxy.sh`), each run in the foreground on 127.0.0.1
//! with a configuration written for the test and ended by its PID when
//! dropped:
//!
//! - `http://`: tinyproxy (CONNECT, `BasicAuth`);
//! - `https://`: stunnel4 in front of a tinyproxy, with a certificate for
//!   `localhost` and 127.0.0.1 issued by a [`TestCa`] made at test time;
//! - `socks5://` and `socks5h://`: microsocks (`-u`/`-P` for
//!   username/password), which logs each target as the client named it.
//!
//! And [`PProxy`], pproxy from PyPI (`scripts/install-pproxy.sh`, into
//! `target/pproxy-venv`), which serves every kind of proxy from one
//! program and compares header names case-sensitively.
//!
//! Plain `cargo test` must pass without them, so a missing program skips
//! the test (with a note) unless `LOCKGATE_REQUIRE_PROXIES` is set (or,
//! for tinyproxy, the older `LOCKGATE_REQUIRE_TINYPROXY`): `scripts/test.sh`
//! sets it after installing them, and a missing program then fails.
//!
//! Behind the proxies: [`EchoServer`] (plain or, with the `rustls`
//! feature, TLS), [`SilentPeer`] (accepts TCP, says nothing), and
//! [`TlsCloseWatch`] (a TLS server that reports how the client ended
//! the TLS session). [`ProxyEnv`] sets the proxy environment variables for
//! the tests of `proxy_from_env`, one test at a time.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use lockgate::{Error, WebSocket};

mod pproxy;
pub use pproxy::PProxy;

/// Set by `scripts/test.sh` once `scripts/install-proxy.sh` ran: a missing
/// proxy program fails the test instead of skipping it.
pub const REQUIRE_PROXIES: &str = "LOCKGATE_REQUIRE_PROXIES";

/// The earlier variable, for tinyproxy alone; still honoured.
const REQUIRE_TINYPROXY: &str = "LOCKGATE_REQUIRE_TINYPROXY";

/// How long a program may take to listen, and how long a server here
/// waits for a client before giving up.
const START_LIMIT: Duration = Duration::from_secs(10);

/// How long a server here waits on one read or write.
const IO_LIMIT: Duration = Duration::from_secs(20);

/// How many ports to try when the one picked was taken meanwhile.
const PORT_TRIES: usize = 5;

/// Whether `program` is on `PATH`. If not, panics when the proxies are
/// required (`required_by` names the variables that require it), else
/// prints why the test is skipped.
fn available(program: &str, required_by: &[&str]) -> bool {
    let on_path = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()));
    if !on_path {
        let required = required_by
            .iter()
            .find(|name| std::env::var_os(name).is_some());
        if let Some(name) = required {
            panic!(
                "{program} is required ({name} is set) but not installed; run scripts/install-proxy.sh"
            );
        }
        eprintln!("skipped: {program} is not installed (scripts/install-proxy.sh)");
    }
    on_path
}

/// The ports [`free_port`] picks from: below Linux's ephemeral range
/// (32768 up), which every `bind(":0")` and outgoing connection of the
/// other tests draws from. A port picked there could be handed to another
/// test's listener between the moment it was found free and the moment
/// the program binds it, and a connection to it would reach that listener
/// instead, as if the program listened.
const DAEMON_PORTS: std::ops::Range<u32> = 20_000..32_000;

/// A port on 127.0.0.1 that was free a moment ago, from [`DAEMON_PORTS`],
/// searched from a random start (each call hashes with new random keys),
/// so that calls at the same moment rarely race for one port.
fn free_port() -> u16 {
    use std::hash::BuildHasher;
    let span = DAEMON_PORTS.end - DAEMON_PORTS.start;
    let start = std::collections::hash_map::RandomState::new().hash_one(std::process::id());
    let start = u32::try_from(start % u64::from(span)).expect("below the span");
    for step in 0..span {
        let port = DAEMON_PORTS.start + (start + step.wrapping_mul(97)) % span;
        let port = u16::try_from(port).expect("below 32000");
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in {DAEMON_PORTS:?}");
}

/// A directory for one server's configuration and log, removed when
/// dropped.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new(name: &str) -> ScratchDir {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "lockgate-{name}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        ScratchDir(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A program listening on 127.0.0.1, its stderr in a log file; killed by
/// its PID when dropped.
struct Daemon {
    name: &'static str,
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Daemon {
    /// Starts the program `command` builds for a free port, and waits
    /// (bounded) until it accepts connections on 127.0.0.1. If it exits
    /// first because the port was taken meanwhile, tries another.
    fn start(name: &'static str, dir: &Path, command: impl FnMut(u16) -> Command) -> Daemon {
        Self::start_logging(name, dir, false, command)
    }

    /// As [`Daemon::start`], its stdout in the log too when `stdout` (for
    /// a program that reports there, as pproxy does a port in use).
    fn start_logging(
        name: &'static str,
        dir: &Path,
        stdout: bool,
        mut command: impl FnMut(u16) -> Command,
    ) -> Daemon {
        let log = dir.join(format!("{name}.log"));
        for _ in 0..PORT_TRIES {
            let port = free_port();
            let stderr = File::create(&log).unwrap();
            let stdout = if stdout {
                Stdio::from(stderr.try_clone().unwrap())
            } else {
                Stdio::null()
            };
            let child = command(port)
                .stdin(Stdio::null())
                .stdout(stdout)
                .stderr(stderr)
                .spawn()
                .unwrap_or_else(|e| panic!("starting {name}: {e}"));
            let mut daemon = Daemon {
                name,
                child,
                port,
                log: log.clone(),
            };
            match daemon.wait_until_listening() {
                Ok(()) => return daemon,
                // "Address already in use" (stunnel, microsocks), "address
                // already in use" (pproxy), "Could not create listening
                // sockets" (tinyproxy).
                Err(output) if output.contains("in use") || output.contains("listening socket") => {
                    continue;
                }
                Err(output) => panic!("{name} exited before listening on port {port}: {output}"),
            }
        }
        panic!("{name}: {PORT_TRIES} free ports were all taken before it could listen");
    }

    /// `Err` with the exit status and log when the program exited.
    fn wait_until_listening(&mut self) -> Result<(), String> {
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        let deadline = Instant::now() + START_LIMIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Err(format!("{status}: {}", self.log_text()));
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                // Still ours: a program that lost the port exits.
                if let Some(status) = self.child.try_wait().unwrap() {
                    return Err(format!("{status}: {}", self.log_text()));
                }
                return Ok(());
            }
            if Instant::now() >= deadline {
                // A hang guard, not a check of speed.
                panic!(
                    "{} did not listen on {addr} within {START_LIMIT:?}: {}",
                    self.name,
                    self.log_text()
                );
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `user:password@`, or nothing.
fn userinfo(credentials: Option<(&str, &str)>) -> String {
    credentials.map_or_else(String::new, |(user, password)| {
        format!("{user}:{password}@")
    })
}

/// A running tinyproxy: an `http://` proxy.
pub struct TinyProxy {
    daemon: Daemon,
    _dir: ScratchDir,
}

/// What the proxy allows.
#[derive(Default)]
pub struct ProxyRules<'a> {
    /// Credentials the proxy requires (`BasicAuth`), if any.
    pub basic_auth: Option<(&'a str, &'a str)>,
    /// The only ports CONNECT may reach (`ConnectPort`); empty: any.
    pub connect_ports: &'a [u16],
}

impl TinyProxy {
    /// Starts tinyproxy with `rules`, or returns `None` after printing why
    /// the test is skipped when it is not installed and not required.
    pub fn start(rules: ProxyRules<'_>) -> Option<TinyProxy> {
        if !available("tinyproxy", &[REQUIRE_PROXIES, REQUIRE_TINYPROXY]) {
            return None;
        }
        let dir = ScratchDir::new("tinyproxy");
        let config_path = dir.path().join("tinyproxy.conf");
        let daemon = Daemon::start("tinyproxy", dir.path(), |port| {
            let mut config = format!(
                "Port {port}\nListen 127.0.0.1\nTimeout 30\nMaxClients 50\nAllow 127.0.0.1\n\
                 LogLevel Warning\nDisableViaHeader Yes\n"
            );
            for connect_port in rules.connect_ports {
                config.push_str(&format!("ConnectPort {connect_port}\n"));
            }
            if let Some((user, password)) = rules.basic_auth {
                config.push_str(&format!("BasicAuth {user} {password}\n"));
            }
            std::fs::write(&config_path, config).unwrap();
            let mut command = Command::new("tinyproxy");
            command.arg("-d").arg("-c").arg(&config_path);
            command
        });
        Some(TinyProxy { daemon, _dir: dir })
    }

    /// The proxy's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.daemon.port
    }

    /// `http://127.0.0.1:PORT`, with credentials if given.
    pub fn url(&self, credentials: Option<(&str, &str)>) -> String {
        format!("http://{}127.0.0.1:{}", userinfo(credentials), self.port())
    }
}

/// A running stunnel: TLS on its port, the plaintext forwarded to a port
/// on 127.0.0.1.
pub struct Stunnel {
    daemon: Daemon,
    _dir: ScratchDir,
}

impl Stunnel {
    /// Starts stunnel in front of `127.0.0.1:target`, presenting
    /// `identity`; `None` (after a note) when skipped.
    pub fn start(target: u16, identity: &Identity) -> Option<Stunnel> {
        if !available("stunnel4", &[REQUIRE_PROXIES]) {
            return None;
        }
        let dir = ScratchDir::new("stunnel");
        let cert = dir.path().join("cert.pem");
        let key = dir.path().join("key.pem");
        std::fs::write(&cert, &identity.cert_pem).unwrap();
        std::fs::write(&key, &identity.key_pem).unwrap();
        let config_path = dir.path().join("stunnel.conf");
        let daemon = Daemon::start("stunnel4", dir.path(), |port| {
            // In the foreground it logs to stderr; no pid file.
            let config = format!(
                "foreground = yes\npid =\nsyslog = no\ndebug = warning\n\n\
                 [https-proxy]\naccept = 127.0.0.1:{port}\nconnect = 127.0.0.1:{target}\n\
                 cert = {}\nkey = {}\n",
                cert.display(),
                key.display()
            );
            std::fs::write(&config_path, config).unwrap();
            let mut command = Command::new("stunnel4");
            command.arg(&config_path);
            command
        });
        Some(Stunnel { daemon, _dir: dir })
    }

    /// The TLS port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.daemon.port
    }
}

/// A running microsocks: a SOCKS5 proxy.
pub struct MicroSocks {
    daemon: Daemon,
    _dir: ScratchDir,
}

impl MicroSocks {
    /// Starts microsocks, requiring `credentials` (username/password,
    /// RFC 1929) if given; `None` (after a note) when skipped.
    pub fn start(credentials: Option<(&str, &str)>) -> Option<MicroSocks> {
        if !available("microsocks", &[REQUIRE_PROXIES]) {
            return None;
        }
        let dir = ScratchDir::new("microsocks");
        let daemon = Daemon::start("microsocks", dir.path(), |port| {
            let mut command = Command::new("microsocks");
            command
                .args(["-i", "127.0.0.1", "-p"])
                .arg(port.to_string());
            if let Some((user, password)) = credentials {
                command.args(["-u", user, "-P", password]);
            }
            command
        });
        Some(MicroSocks { daemon, _dir: dir })
    }

    /// The proxy's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.daemon.port
    }

    /// Every target it connected to, `host:port` as the client named it
    /// (microsocks logs "client\[N\] ADDRESS: connected to HOST:PORT"): a
    /// name when the client left resolving to the proxy (`socks5h://`), an
    /// address when it resolved the name itself (`socks5://`).
    pub fn connected_to(&self) -> Vec<String> {
        self.daemon
            .log_text()
            .lines()
            .filter_map(|line| {
                line.split_once("connected to ")
                    .map(|(_, to)| to.to_owned())
            })
            .collect()
    }
}

/// The kinds of proxy a client dials through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyKind {
    /// HTTP CONNECT (tinyproxy).
    Http,
    /// HTTP CONNECT over TLS to the proxy (stunnel in front of tinyproxy).
    Https,
    /// SOCKS5, the client resolving the target's name (microsocks).
    Socks5,
    /// SOCKS5, the proxy resolving the target's name (microsocks).
    Socks5h,
}

impl ProxyKind {
    /// Every kind.
    pub const ALL: [ProxyKind; 4] = [
        ProxyKind::Http,
        ProxyKind::Https,
        ProxyKind::Socks5,
        ProxyKind::Socks5h,
    ];

    /// The proxy URL's scheme.
    pub fn scheme(self) -> &'static str {
        match self {
            ProxyKind::Http => "http",
            ProxyKind::Https => "https",
            ProxyKind::Socks5 => "socks5",
            ProxyKind::Socks5h => "socks5h",
        }
    }

    /// Whether the client needs a TLS connector to reach the proxy itself.
    pub fn is_tls(self) -> bool {
        self == ProxyKind::Https
    }

    /// Whether it is a SOCKS5 proxy.
    pub fn is_socks(self) -> bool {
        matches!(self, ProxyKind::Socks5 | ProxyKind::Socks5h)
    }

    /// Every kind a driver can dial through: an `https://` proxy only if
    /// it speaks `tls` (the tests' `rustls` feature, for the connector
    /// that trusts it).
    pub fn testable(tls: bool) -> Vec<ProxyKind> {
        ProxyKind::ALL
            .into_iter()
            .filter(|kind| tls || !kind.is_tls())
            .collect()
    }
}

/// The programs behind one [`ProxyServer`], dropped (killed) with it.
enum Programs {
    Http(TinyProxy),
    Https(
        Stunnel,
        #[allow(dead_code, reason = "held to be killed when dropped")] TinyProxy,
    ),
    Socks(MicroSocks),
}

/// A proxy of any [`ProxyKind`] on 127.0.0.1.
pub struct ProxyServer {
    kind: ProxyKind,
    programs: Programs,
}

impl ProxyServer {
    /// Starts a proxy of `kind` that requires `credentials`, if given;
    /// an `https://` proxy presents a certificate from `ca` for
    /// `localhost` and 127.0.0.1. `None` (after a note) when a program it
    /// needs is not installed and not required.
    pub fn start(
        kind: ProxyKind,
        credentials: Option<(&str, &str)>,
        ca: &TestCa,
    ) -> Option<ProxyServer> {
        let rules = || ProxyRules {
            basic_auth: credentials,
            connect_ports: &[],
        };
        let programs = match kind {
            ProxyKind::Http => Programs::Http(TinyProxy::start(rules())?),
            ProxyKind::Https => {
                let tinyproxy = TinyProxy::start(rules())?;
                let identity = ca.issue(&["localhost", "127.0.0.1"]);
                Programs::Https(Stunnel::start(tinyproxy.port(), &identity)?, tinyproxy)
            }
            ProxyKind::Socks5 | ProxyKind::Socks5h => {
                Programs::Socks(MicroSocks::start(credentials)?)
            }
        };
        Some(ProxyServer { kind, programs })
    }

    pub fn kind(&self) -> ProxyKind {
        self.kind
    }

    /// The port clients connect to on 127.0.0.1.
    pub fn port(&self) -> u16 {
        match &self.programs {
            Programs::Http(tinyproxy) => tinyproxy.port(),
            Programs::Https(stunnel, _) => stunnel.port(),
            Programs::Socks(microsocks) => microsocks.port(),
        }
    }

    /// `127.0.0.1:PORT`, as errors name the proxy.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port())
    }

    /// `SCHEME://[user:password@]127.0.0.1:PORT`.
    pub fn url(&self, credentials: Option<(&str, &str)>) -> String {
        format!(
            "{}://{}{}",
            self.kind.scheme(),
            userinfo(credentials),
            self.address()
        )
    }

    /// The microsocks of a SOCKS5 proxy.
    pub fn socks(&self) -> Option<&MicroSocks> {
        match &self.programs {
            Programs::Socks(microsocks) => Some(microsocks),
            _ => None,
        }
    }
}

/// A certificate authority made at test time: it signs the certificates
/// of the `https://` proxies and of the `wss://` servers, so that one set
/// of roots (one `Connector`) verifies both.
pub struct TestCa {
    cert: rcgen::Certificate,
    key: rcgen::KeyPair,
}

/// A certificate issued by a [`TestCa`], and its private key.
pub struct Identity {
    /// The certificate, DER.
    pub cert_der: Vec<u8>,
    /// The private key, PKCS #8 DER.
    pub key_der: Vec<u8>,
    /// The certificate, PEM.
    pub cert_pem: String,
    /// The private key, PKCS #8 PEM.
    pub key_pem: String,
}

impl TestCa {
    pub fn new() -> TestCa {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "lockgate test CA");
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        TestCa { cert, key }
    }

    /// The CA's certificate, DER: the root to trust.
    pub fn cert_der(&self) -> Vec<u8> {
        self.cert.der().to_vec()
    }

    /// A server certificate for `names` (DNS names or IP addresses).
    pub fn issue(&self, names: &[&str]) -> Identity {
        let names: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
        let mut params = rcgen::CertificateParams::new(names.clone()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, names[0].as_str());
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        Identity {
            cert_der: cert.der().to_vec(),
            key_der: key.serialize_der(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}

impl Default for TestCa {
    fn default() -> Self {
        TestCa::new()
    }
}

/// What a server here does with each accepted connection.
pub(crate) type Serve = Arc<dyn Fn(TcpStream) + Send + Sync>;

/// Accept loops on 127.0.0.1 (and on [::1] with the same port where the
/// machine has it, so that `localhost` reaches it whichever address a
/// resolver picks), each connection handed to its own thread; stopped and
/// joined when dropped.
pub(crate) struct Acceptor {
    port: u16,
    stop: Arc<AtomicBool>,
    loops: Vec<(SocketAddr, JoinHandle<()>)>,
}

impl Acceptor {
    pub(crate) fn start(serve: Serve) -> Acceptor {
        let v4 = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = v4.local_addr().unwrap().port();
        let v6 = TcpListener::bind((Ipv6Addr::LOCALHOST, port)).ok();
        let stop = Arc::new(AtomicBool::new(false));
        let loops = [Some(v4), v6]
            .into_iter()
            .flatten()
            .map(|listener| {
                let addr = listener.local_addr().unwrap();
                let (stop, serve) = (Arc::clone(&stop), Arc::clone(&serve));
                let handle = thread::spawn(move || {
                    for tcp in listener.incoming() {
                        if stop.load(Ordering::SeqCst) {
                            break;
                        }
                        let Ok(tcp) = tcp else { continue };
                        let serve = Arc::clone(&serve);
                        thread::spawn(move || serve(tcp));
                    }
                });
                (addr, handle)
            })
            .collect();
        Acceptor { port, stop, loops }
    }

    /// The port, on 127.0.0.1 (and `[::1]` where there is one).
    pub(crate) fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for Acceptor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for (addr, handle) in self.loops.drain(..) {
            // Wakes the blocked `accept`, which then sees `stop`.
            if TcpStream::connect_timeout(&addr, START_LIMIT).is_ok() {
                let _ = handle.join();
            }
        }
    }
}

/// A WebSocket echo server on 127.0.0.1 (and `[::1]`, same port, where
/// there is one) for any number of connections: data messages come back
/// as they were sent, until the closing handshake.
pub struct EchoServer {
    acceptor: Acceptor,
    served: Arc<AtomicUsize>,
}

impl EchoServer {
    /// `ws://`.
    pub fn plain() -> EchoServer {
        let served = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&served);
        let acceptor = Acceptor::start(Arc::new(move |tcp: TcpStream| {
            tcp.set_read_timeout(Some(IO_LIMIT)).unwrap();
            if let Ok(ws) = lockgate::accept(tcp) {
                count.fetch_add(1, Ordering::SeqCst);
                let _ = echo(ws);
            }
        }));
        EchoServer { acceptor, served }
    }

    /// `wss://`, presenting `identity`.
    pub fn tls(identity: &Identity) -> EchoServer {
        let config = identity.server_config();
        let served = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&served);
        let acceptor = Acceptor::start(Arc::new(move |tcp: TcpStream| {
            tcp.set_read_timeout(Some(IO_LIMIT)).unwrap();
            tcp.set_nodelay(true).unwrap();
            let connection = rustls::ServerConnection::new(Arc::clone(&config)).unwrap();
            let tls = rustls::StreamOwned::new(connection, tcp);
            if let Ok(ws) = lockgate::accept(tls) {
                count.fetch_add(1, Ordering::SeqCst);
                // The driver sends close_notify after the closing handshake.
                let _ = echo(ws);
            }
        }));
        EchoServer { acceptor, served }
    }

    /// The port, on 127.0.0.1 (and `[::1]` where there is one).
    pub fn port(&self) -> u16 {
        self.acceptor.port
    }

    /// `SCHEME://HOST:PORT/`.
    pub fn url(&self, scheme: &str, host: &str) -> String {
        format!("{scheme}://{host}:{}/", self.port())
    }

    /// How many WebSocket handshakes it completed.
    pub fn served(&self) -> usize {
        self.served.load(Ordering::SeqCst)
    }
}

/// Echoes data messages until the closing handshake completes (`Ok`, the
/// stream given back) or the connection fails.
fn echo<S: Read + Write>(mut ws: WebSocket<S>) -> Result<S, Error> {
    loop {
        match ws.read() {
            Ok(message) if message.is_data() => ws.send(message)?,
            // Pongs and the close reply go out by themselves.
            Ok(_) => {}
            Err(Error::ConnectionClosed) => return Ok(ws.into_inner()),
            Err(e) => return Err(e),
        }
    }
}

/// A peer on 127.0.0.1 that accepts TCP connections and says nothing: a
/// TLS server that never answers the ClientHello, a proxy that never
/// answers CONNECT or the SOCKS5 greeting. Each connection is read (and
/// what arrives dropped) until the client closes it.
pub struct SilentPeer {
    acceptor: Acceptor,
    accepted: Arc<AtomicUsize>,
}

impl SilentPeer {
    pub fn start() -> SilentPeer {
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&accepted);
        let acceptor = Acceptor::start(Arc::new(move |mut tcp: TcpStream| {
            count.fetch_add(1, Ordering::SeqCst);
            tcp.set_read_timeout(Some(IO_LIMIT)).unwrap();
            let _ = io::copy(&mut tcp, &mut io::sink());
        }));
        SilentPeer { acceptor, accepted }
    }

    /// `127.0.0.1:PORT`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.acceptor.port)
    }

    /// The connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Every way a client can meet this peer: as the `wss://` server
    /// itself, and as each kind of proxy (the TLS ones with the `rustls`
    /// feature only).
    pub fn routes(&self, tls: bool) -> Vec<SilentRoute> {
        let address = self.address();
        let through = |kind: ProxyKind| SilentRoute {
            what: format!("a silent {} proxy", kind.scheme()),
            proxy: Some(format!("{}://{address}", kind.scheme())),
            url: "ws://localhost:9/".to_owned(),
        };
        let mut routes: Vec<SilentRoute> =
            ProxyKind::testable(tls).into_iter().map(through).collect();
        if tls {
            routes.push(SilentRoute {
                what: "a silent TLS server".to_owned(),
                proxy: None,
                url: format!("wss://{address}/"),
            });
        }
        routes
    }
}

/// How a client meets a [`SilentPeer`].
#[derive(Debug)]
pub struct SilentRoute {
    /// What the peer plays, for messages.
    pub what: String,
    /// The proxy URL, when the peer is the proxy.
    pub proxy: Option<String>,
    /// The URL to connect to.
    pub url: String,
}

/// The rustls of the tests' TLS servers (the same crate as the drivers').
pub use rustls;

impl TestCa {
    /// Roots trusting this CA alone (for the server and, through an
    /// `https://` proxy, for the proxy too): give them to
    /// `lockgate::dial::client_config` for a `Connector::Rustls`.
    pub fn roots(&self) -> rustls::RootCertStore {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(rustls::pki_types::CertificateDer::from(self.cert_der()))
            .unwrap();
        roots
    }
}

impl Identity {
    /// A rustls server configuration presenting this certificate.
    pub fn server_config(&self) -> Arc<rustls::ServerConfig> {
        let key = rustls::pki_types::PrivatePkcs8KeyDer::from(self.key_der.clone());
        let cert = rustls::pki_types::CertificateDer::from(self.cert_der.clone());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert], key.into())
            .unwrap();
        Arc::new(config)
    }
}

/// A `wss://` server for one connection that watches how the client ends
/// the TLS session after the closing handshake.
pub struct TlsCloseWatch {
    port: u16,
    close_notify: std::sync::mpsc::Receiver<()>,
    server: JoinHandle<Result<u64, String>>,
}

impl TlsCloseWatch {
    /// Serves one connection on 127.0.0.1 presenting `identity`: TLS, the
    /// WebSocket handshake, echo until the closing handshake; then the
    /// client's next TLS data must be close_notify (rustls reads `Ok(0)`,
    /// and fails with `UnexpectedEof` when the TCP connection ends without
    /// it), and the TCP connection must then reach EOF.
    pub fn start(identity: &Identity) -> TlsCloseWatch {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let config = identity.server_config();
        let (seen, close_notify) = std::sync::mpsc::channel();
        let server = thread::spawn(move || {
            let tcp = accept_within(&listener, START_LIMIT)?;
            tcp.set_read_timeout(Some(IO_LIMIT)).unwrap();
            let connection = rustls::ServerConnection::new(config).unwrap();
            let tls = rustls::StreamOwned::new(connection, tcp);
            let mut ws =
                lockgate::accept(tls).map_err(|e| format!("handshake: {}", Error::from(e)))?;
            let mut echoed = 0;
            let mut tls = loop {
                match ws.read() {
                    Ok(message) if message.is_data() => {
                        ws.send(message).map_err(|e| format!("echo: {e}"))?;
                        echoed += 1;
                    }
                    Ok(_) => {}
                    Err(Error::ConnectionClosed) => break ws.into_inner(),
                    Err(e) => return Err(format!("before the closing handshake completed: {e}")),
                }
            };
            let mut buf = [0; 64];
            match tls.read(&mut buf) {
                Ok(0) => {
                    let _ = seen.send(());
                }
                Ok(n) => return Err(format!("{n} bytes of data after the closing handshake")),
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    return Err(format!(
                        "the TCP connection ended without close_notify: {e}"
                    ));
                }
                Err(e) => return Err(format!("no close_notify within {IO_LIMIT:?}: {e}")),
            }
            match tls.sock.read(&mut buf) {
                Ok(0) => Ok(echoed),
                Ok(n) => Err(format!(
                    "{n} bytes on the TCP connection after close_notify"
                )),
                Err(e) => Err(format!(
                    "no EOF within {IO_LIMIT:?} after close_notify: {e}"
                )),
            }
        });
        TlsCloseWatch {
            port,
            close_notify,
            server,
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether the server saw close_notify within `limit` (false at once
    /// when it failed before).
    pub fn close_notify_within(&self, limit: Duration) -> bool {
        self.close_notify.recv_timeout(limit).is_ok()
    }

    /// How many messages it echoed, once it saw close_notify then EOF; or
    /// what went wrong.
    pub fn verdict(self) -> Result<u64, String> {
        self.server.join().unwrap()
    }
}

/// One connection from `listener`, or an error after `limit`.
fn accept_within(listener: &TcpListener, limit: Duration) -> Result<TcpStream, String> {
    listener.set_nonblocking(true).unwrap();
    let deadline = Instant::now() + limit;
    loop {
        match listener.accept() {
            Ok((tcp, _)) => {
                tcp.set_nonblocking(false).unwrap();
                return Ok(tcp);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && Instant::now() < deadline => {
                thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(format!("no client within {limit:?}: {e}")),
        }
    }
}

/// Servers for the tests of `proxy_from_env`: an `http://`, a
/// `socks5h://` and (with the `rustls` feature) an `https://` proxy, none
/// requiring credentials, and a `ws://` and a `wss://` echo server.
pub struct ProxyEnvFixture {
    /// The CA of the `https://` proxy and the `wss://` server.
    pub ca: TestCa,
    ws: EchoServer,
    wss: Option<EchoServer>,
    http: Option<ProxyServer>,
    socks5h: Option<ProxyServer>,
    https: Option<ProxyServer>,
}

/// One setting of the proxy variables, a URL, and the port the client's
/// TCP connection must reach: a proxy's when the variables send it there,
/// the server's when `NO_PROXY` sends it direct.
#[derive(Debug)]
pub struct EnvCase {
    /// What the case shows, for messages.
    pub what: &'static str,
    pub vars: Vec<(&'static str, String)>,
    pub url: String,
    /// The port the client's TCP peer must have.
    pub via: u16,
}

impl EnvCase {
    /// `vars` as [`ProxyEnv::set`] takes them.
    pub fn vars(&self) -> Vec<(&str, &str)> {
        self.vars
            .iter()
            .map(|(name, value)| (*name, value.as_str()))
            .collect()
    }
}

impl ProxyEnvFixture {
    /// Starts the servers; a proxy whose program is missing is left out
    /// (after a note), and so are the cases that need it.
    /// `tls`: the driver under test speaks TLS (the `https://` proxy and
    /// `wss://` server, and their cases).
    pub fn start(tls: bool) -> ProxyEnvFixture {
        let ca = TestCa::new();
        let http = ProxyServer::start(ProxyKind::Http, None, &ca);
        let socks5h = ProxyServer::start(ProxyKind::Socks5h, None, &ca);
        let https = if tls {
            ProxyServer::start(ProxyKind::Https, None, &ca)
        } else {
            None
        };
        ProxyEnvFixture {
            ws: EchoServer::plain(),
            wss: tls.then(|| EchoServer::tls(&ca.issue(&["localhost", "127.0.0.1"]))),
            ca,
            http,
            socks5h,
            https,
        }
    }

    /// The cases the running servers allow.
    pub fn cases(&self) -> Vec<EnvCase> {
        let ws = self.ws.port();
        let closed = free_port();
        let mut cases = vec![EnvCase {
            what: "NO_PROXY=* sends everything direct",
            vars: vec![
                ("ALL_PROXY", format!("http://127.0.0.1:{closed}")),
                ("NO_PROXY", "*".to_owned()),
            ],
            url: self.ws.url("ws", "localhost"),
            via: ws,
        }];
        if let Some(http) = &self.http {
            cases.extend([
                EnvCase {
                    what: "HTTP_PROXY carries ws://",
                    vars: vec![("HTTP_PROXY", http.url(None))],
                    url: self.ws.url("ws", "127.0.0.1"),
                    via: http.port(),
                },
                EnvCase {
                    what: "NO_PROXY naming the address sends it direct",
                    vars: vec![
                        ("HTTP_PROXY", http.url(None)),
                        ("NO_PROXY", "127.0.0.1".to_owned()),
                    ],
                    url: self.ws.url("ws", "127.0.0.1"),
                    via: ws,
                },
                EnvCase {
                    what: "no_proxy naming the host in a list sends it direct",
                    vars: vec![
                        ("http_proxy", http.url(None)),
                        ("no_proxy", "example.com, localhost".to_owned()),
                    ],
                    url: self.ws.url("ws", "localhost"),
                    via: ws,
                },
                EnvCase {
                    what: "no_proxy naming another host leaves the proxy",
                    vars: vec![
                        ("http_proxy", http.url(None)),
                        ("no_proxy", "example.com,127.0.0.2".to_owned()),
                    ],
                    url: self.ws.url("ws", "localhost"),
                    via: http.port(),
                },
            ]);
        }
        if let Some(socks5h) = &self.socks5h {
            cases.extend([
                EnvCase {
                    what: "ALL_PROXY=socks5h:// carries ws://",
                    vars: vec![("ALL_PROXY", socks5h.url(None))],
                    url: self.ws.url("ws", "localhost"),
                    via: socks5h.port(),
                },
                EnvCase {
                    what: "NO_PROXY naming a network sends an address in it direct",
                    vars: vec![
                        ("ALL_PROXY", socks5h.url(None)),
                        ("NO_PROXY", "127.0.0.0/8".to_owned()),
                    ],
                    url: self.ws.url("ws", "127.0.0.1"),
                    via: ws,
                },
            ]);
        }
        if let (Some(https), Some(wss_server)) = (&self.https, &self.wss) {
            let wss = wss_server.port();
            cases.extend([
                EnvCase {
                    what: "HTTPS_PROXY, not HTTP_PROXY, carries wss://",
                    vars: vec![
                        ("HTTPS_PROXY", https.url(None)),
                        ("HTTP_PROXY", format!("http://127.0.0.1:{closed}")),
                    ],
                    url: wss_server.url("wss", "localhost"),
                    via: https.port(),
                },
                EnvCase {
                    what: "NO_PROXY naming host and port sends wss:// direct",
                    vars: vec![
                        ("HTTPS_PROXY", https.url(None)),
                        ("NO_PROXY", format!("localhost:{wss}")),
                    ],
                    url: wss_server.url("wss", "localhost"),
                    via: wss,
                },
            ]);
        }
        cases
    }
}

/// The variables `ClientOptions::proxy_from_env` reads.
pub const PROXY_VARIABLES: [&str; 8] = [
    "http_proxy",
    "HTTP_PROXY",
    "https_proxy",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "no_proxy",
    "NO_PROXY",
];

/// Serializes the tests that set the proxy variables.
static PROXY_ENV: Mutex<()> = Mutex::new(());

/// The process's proxy variables as a test set them: while it lives, no
/// other test of the binary holds one, and the variables are exactly
/// those given (the inherited ones removed); dropped, they are as before.
///
/// Only the tests that read the proxy variables (through
/// `proxy_from_env`) take a `ProxyEnv`; the others name their proxy.
pub struct ProxyEnv {
    saved: Vec<(&'static str, Option<OsString>)>,
    _serial: MutexGuard<'static, ()>,
}

impl ProxyEnv {
    /// Holds the proxy variables, all unset.
    pub fn lock() -> ProxyEnv {
        let serial = PROXY_ENV.lock().unwrap_or_else(PoisonError::into_inner);
        let saved = PROXY_VARIABLES
            .iter()
            .map(|name| (*name, std::env::var_os(name)))
            .collect();
        let env = ProxyEnv {
            saved,
            _serial: serial,
        };
        env.set(&[]);
        env
    }

    /// Sets `vars` (names from [`PROXY_VARIABLES`]) and unsets the others.
    #[allow(unsafe_code)]
    pub fn set(&self, vars: &[(&str, &str)]) {
        for (name, _) in vars {
            assert!(
                PROXY_VARIABLES.contains(name),
                "{name} is not a proxy variable"
            );
        }
        for name in PROXY_VARIABLES {
            let value = vars.iter().find(|(set, _)| *set == name).map(|(_, v)| v);
            // SAFETY: std serializes its own environment reads and writes
            // (`env::var`, name resolution, spawning), and nothing in the
            // test binaries reads the environment around std; tests that
            // read these variables hold `PROXY_ENV`.
            unsafe {
                match value {
                    Some(value) => std::env::set_var(name, value),
                    None => std::env::remove_var(name),
                }
            }
        }
    }
}

impl Drop for ProxyEnv {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        for (name, value) in &self.saved {
            // SAFETY: as in `set`.
            unsafe {
                match value {
                    Some(value) => std::env::set_var(name, value),
                    None => std::env::remove_var(name),
                }
            }
        }
    }
}
