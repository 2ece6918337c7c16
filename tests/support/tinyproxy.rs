//! A real HTTP proxy for the proxy tests: Debian's `tinyproxy`, run in
//! the foreground on 127.0.0.1 with a configuration written for the test,
//! and ended by its PID when dropped.
//!
//! Plain `cargo test` must pass without it, so a missing `tinyproxy` skips
//! (with a note) unless `LOCKGATE_REQUIRE_TINYPROXY=1`, which
//! `scripts/test.sh` sets after `scripts/install-proxy.sh` installed it.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running tinyproxy.
pub struct TinyProxy {
    child: Child,
    port: u16,
    dir: PathBuf,
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
        let installed = Command::new("tinyproxy")
            .arg("-v")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok();
        if !installed {
            assert!(
                std::env::var_os("LOCKGATE_REQUIRE_TINYPROXY").is_none(),
                "tinyproxy is required (LOCKGATE_REQUIRE_TINYPROXY) but not installed; \
                 run scripts/install-proxy.sh"
            );
            eprintln!("skipped: tinyproxy is not installed (scripts/install-proxy.sh)");
            return None;
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir =
            std::env::temp_dir().join(format!("lockgate-tinyproxy-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut config = format!(
            "Port {port}\nListen 127.0.0.1\nTimeout 30\nMaxClients 50\nAllow 127.0.0.1\n\
             LogLevel Warning\nDisableViaHeader Yes\nPidFile \"{}\"\n",
            dir.join("pid").display()
        );
        for connect_port in rules.connect_ports {
            config.push_str(&format!("ConnectPort {connect_port}\n"));
        }
        if let Some((user, password)) = rules.basic_auth {
            config.push_str(&format!("BasicAuth {user} {password}\n"));
        }
        let path = dir.join("tinyproxy.conf");
        std::fs::write(&path, config).unwrap();
        let log = std::fs::File::create(dir.join("log")).unwrap();
        let child = Command::new("tinyproxy")
            .arg("-d")
            .arg("-c")
            .arg(&path)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut proxy = TinyProxy { child, port, dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            let log = || std::fs::read_to_string(proxy.dir.join("log")).unwrap_or_default();
            if let Ok(Some(status)) = proxy.child.try_wait() {
                panic!("tinyproxy exited ({status}): {}", log());
            }
            assert!(
                Instant::now() < deadline,
                "tinyproxy did not listen on {port}: {}",
                log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(proxy)
    }

    /// The proxy's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT`, with credentials if given.
    pub fn url(&self, credentials: Option<(&str, &str)>) -> String {
        match credentials {
            Some((user, password)) => format!("http://{user}:{password}@127.0.0.1:{}", self.port),
            None => format!("http://127.0.0.1:{}", self.port),
        }
    }
}

impl Drop for TinyProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
