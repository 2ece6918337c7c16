//! pproxy, a widely used proxy written in Python (PyPI), installed by
//! `scripts/install-pproxy.sh` into `target/pproxy-venv`. One program
//! serves every [`ProxyKind`]: `http+socks5://` on one port for
//! `http://`, `socks5://` and `socks5h://`, `http+ssl://` (with `--ssl`)
//! for `https://`. It reads request header fields into a dictionary keyed
//! by the name as sent, so credentials reach it only in a
//! `Proxy-Authorization` field spelled so.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{Daemon, ProxyKind, REQUIRE_PROXIES, ScratchDir, TestCa, userinfo};

/// Where `scripts/install-pproxy.sh` installs the program, in the
/// workspace.
const VENV_PROGRAM: &str = "target/pproxy-venv/bin/pproxy";

/// The pproxy to run: the workspace's venv's, else one on `PATH`. If
/// neither, panics when the proxies are required, else prints why the
/// test is skipped.
fn program() -> Option<PathBuf> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent();
    let venv = workspace.map(|dir| dir.join(VENV_PROGRAM));
    let on_path = || {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .map(|dir| dir.join("pproxy"))
            .find(|program| program.is_file())
    };
    let found = venv.filter(|program| program.is_file()).or_else(on_path);
    if found.is_none() {
        if std::env::var_os(REQUIRE_PROXIES).is_some() {
            panic!(
                "pproxy is required ({REQUIRE_PROXIES} is set) but not installed; \
                 run scripts/install-pproxy.sh"
            );
        }
        eprintln!("skipped: pproxy is not installed (scripts/install-pproxy.sh)");
    }
    found
}

/// A running pproxy on 127.0.0.1 serving one [`ProxyKind`]; killed by its
/// PID when dropped.
pub struct PProxy {
    kind: ProxyKind,
    daemon: Daemon,
    _dir: ScratchDir,
}

impl PProxy {
    /// Starts pproxy serving `kind`, requiring `credentials` if given (for
    /// HTTP and SOCKS5 alike), an `https://` proxy presenting a
    /// certificate from `ca` for `localhost` and 127.0.0.1. `None` (after
    /// a note) when pproxy is not installed and not required.
    ///
    /// `--auth 0`: pproxy otherwise lets a client address in without
    /// credentials for 30 days once it authenticated, and each connection
    /// must show its own.
    pub fn start(
        kind: ProxyKind,
        credentials: Option<(&str, &str)>,
        ca: &TestCa,
    ) -> Option<PProxy> {
        let program = program()?;
        let dir = ScratchDir::new("pproxy");
        let tls = kind.is_tls().then(|| {
            let identity = ca.issue(&["localhost", "127.0.0.1"]);
            let cert = dir.path().join("cert.pem");
            let key = dir.path().join("key.pem");
            std::fs::write(&cert, &identity.cert_pem).unwrap();
            std::fs::write(&key, &identity.key_pem).unwrap();
            format!("{},{}", cert.display(), key.display())
        });
        let schemes = if tls.is_some() {
            "http+ssl"
        } else {
            "http+socks5"
        };
        let auth = credentials.map_or_else(String::new, |(user, password)| {
            format!("#{user}:{password}")
        });
        let daemon = Daemon::start_logging("pproxy", dir.path(), true, |port| {
            let mut command = Command::new(&program);
            command
                .env("PYTHONUNBUFFERED", "1")
                .arg("-l")
                .arg(format!("{schemes}://127.0.0.1:{port}{auth}"))
                .args(["--auth", "0"]);
            if let Some(files) = &tls {
                command.arg("--ssl").arg(files);
            }
            command
        });
        Some(PProxy {
            kind,
            daemon,
            _dir: dir,
        })
    }

    /// The kind it serves.
    pub fn kind(&self) -> ProxyKind {
        self.kind
    }

    /// The proxy's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.daemon.port
    }

    /// `SCHEME://[user:password@]127.0.0.1:PORT`.
    pub fn url(&self, credentials: Option<(&str, &str)>) -> String {
        format!(
            "{}://{}127.0.0.1:{}",
            self.kind.scheme(),
            userinfo(credentials),
            self.port()
        )
    }

    /// What pproxy printed so far, for messages.
    pub fn log(&self) -> String {
        self.daemon.log_text()
    }
}
