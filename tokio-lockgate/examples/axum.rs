//! An axum server with a WebSocket echo at `/ws`, over HTTP/1.1 and
//! HTTP/2, compression offered, subprotocol `echo.v1` chosen when the
//! client offers it.
//!
//! ```text
//! cargo run -p tokio-lockgate --features axum --example axum -- 127.0.0.1:3000
//! cargo run -p tokio-lockgate --features axum --example axum -- 127.0.0.1:3443 --tls
//! cargo run -p tokio-lockgate --features axum --example axum -- 127.0.0.1:3000 \
//!     --allow-origin 'https://*.example.com'
//! ```
//!
//! Plain: HTTP/1.1, and HTTP/2 with prior knowledge (h2c). With `--tls`:
//! a self-signed certificate made at start (printed as PEM, for clients
//! to trust) and ALPN `h2` and `http/1.1`. Over HTTP/2 the server
//! advertises extended CONNECT (RFC 8441), so a browser holding an HTTP/2
//! connection to it (after loading `/`) opens the WebSocket on it.
//!
//! The page at `/` may open the echo (it is the server's own origin), and
//! so may clients other than browsers, which send no `Origin`; pages of
//! other sites are refused with 403 (the default [`OriginPolicy`]). Each
//! `--allow-origin PATTERN` allows more (`https://app.example.com`,
//! `*.example.com`, `example.com:8443`, ...; `'*'`: any page), through an
//! `Extension` layer the extractor reads.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::RawQuery;
use axum::response::{Html, Response};
use axum::routing::{any, get};
use axum::{Extension, Router};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_lockgate::axum::{WebSocket, WebSocketUpgrade};
use tokio_lockgate::handshake::OriginPolicy;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

/// The WebSocket endpoint: the whole integration is these lines.
async fn ws(upgrade: WebSocketUpgrade) -> Response {
    let http = if upgrade.is_http2() {
        "HTTP/2"
    } else {
        "HTTP/1.1"
    };
    upgrade
        .protocols(["echo.v1"])
        .deflate(true)
        .on_upgrade(move |ws| echo(ws, http))
}

/// Echoes every text and binary message until the connection closes.
async fn echo(mut ws: WebSocket, http: &'static str) {
    let deflate = if ws.context().deflate().is_some() {
        "on"
    } else {
        "off"
    };
    println!(
        "websocket opened over {http}, subprotocol {}, deflate {deflate}",
        ws.subprotocol().unwrap_or("none"),
    );
    while let Ok(message) = ws.read().await {
        if message.is_data() && ws.send(message).await.is_err() {
            break;
        }
    }
}

/// A page whose script opens the echo and reports what it saw to
/// `/report` (printed by the server, for browser tests).
async fn index() -> Html<&'static str> {
    Html(
        r#"<!doctype html><title>lockgate echo</title><script>
const report = (what) => fetch("/report?" + encodeURIComponent(what));
const ws = new WebSocket(location.origin.replace(/^http/, "ws") + "/ws", ["echo.v1"]);
ws.onopen = () => ws.send("hello from the browser");
ws.onmessage = (e) => {
  report(`echo ${e.data === "hello from the browser" ? "ok" : "wrong"} ${ws.protocol} ${ws.extensions}`);
  ws.close();
};
ws.onerror = () => report("echo failed");
</script>"#,
    )
}

/// Prints what the page reports.
async fn report(RawQuery(query): RawQuery) -> &'static str {
    let query = query.unwrap_or_default();
    let decoded = percent_decode(&query);
    println!("browser report: {decoded}");
    "thanks\n"
}

/// `%XX` escapes decoded (the page's report is ASCII).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| text.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

const USAGE: &str = "usage: axum [ADDR] [--tls] [--allow-origin PATTERN]...";

fn usage_error(problem: &str) -> ! {
    eprintln!("axum: {problem}\n{USAGE}");
    std::process::exit(2);
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut addr = "127.0.0.1:3000".to_owned();
    let mut tls = false;
    let mut origins = OriginPolicy::same_origin();
    let mut patterns = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--tls" => tls = true,
            "--allow-origin" => {
                let Some(pattern) = args.next() else {
                    usage_error("--allow-origin needs a pattern");
                };
                origins = origins
                    .allow_origin(&pattern)
                    .unwrap_or_else(|error| usage_error(&error.to_string()));
                patterns.push(pattern);
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            _ if !arg.starts_with('-') => addr = arg,
            _ => usage_error(&format!("unexpected argument {arg:?}")),
        }
    }
    if origins.is_any() {
        println!("accepting web pages from any origin");
    } else if !patterns.is_empty() {
        println!(
            "accepting web pages from its own origin and {}",
            patterns.join(", ")
        );
    }
    // `any`: an HTTP/1.1 upgrade is a GET, an HTTP/2 one a CONNECT. The
    // extractor refuses upgrades from origins the policy does not accept.
    let app = Router::new()
        .route("/", get(index))
        .route("/report", get(report))
        .route("/ws", any(ws))
        .layer(Extension(origins));
    let listener = TcpListener::bind(&addr).await?;
    let local = listener.local_addr()?;
    if !tls {
        println!(
            "listening on http://{local}/ (WebSocket echo at ws://{local}/ws, HTTP/1.1 and h2c)"
        );
        // axum::serve speaks HTTP/1.1 and h2c and enables extended CONNECT;
        // it waits a second after a failed accept.
        return axum::serve(listener, app).await;
    }

    let (acceptor, certificate_pem) = self_signed_tls(local.ip().to_string())?;
    println!("{certificate_pem}");
    println!(
        "listening on https://{local}/ (WebSocket echo at wss://{local}/ws, ALPN h2 and http/1.1)"
    );
    let mut backoff = AcceptBackoff::default();
    loop {
        let (tcp, peer) = match listener.accept().await {
            Ok(accepted) => {
                backoff.succeeded();
                accepted
            }
            Err(err) => {
                // Out of file descriptors, for one: wait for connections to
                // close instead of spinning on the error.
                tokio::time::sleep(backoff.failed(&err)).await;
                continue;
            }
        };
        let acceptor = acceptor.clone();
        let service = TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let tls = match acceptor.accept(tcp).await {
                Ok(tls) => tls,
                Err(error) => return eprintln!("{peer}: TLS failed: {error}"),
            };
            let mut builder = auto::Builder::new(TokioExecutor::new());
            builder.http2().enable_connect_protocol();
            if let Err(error) = builder
                .serve_connection_with_upgrades(TokioIo::new(tls), service)
                .await
            {
                eprintln!("{peer}: HTTP connection failed: {error}");
            }
        });
    }
}

/// A TLS acceptor with a certificate for `localhost` and `ip`, made now,
/// offering HTTP/2 first; and the certificate as PEM.
fn self_signed_tls(ip: String) -> std::io::Result<(TlsAcceptor, String)> {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), ip])
        .map_err(std::io::Error::other)?;
    let key = PrivatePkcs8KeyDer::from(certified.key_pair.serialize_der());
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(std::io::Error::other)?
        .with_no_client_auth()
        .with_single_cert(vec![certified.cert.der().clone()], PrivateKeyDer::from(key))
        .map_err(std::io::Error::other)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok((TlsAcceptor::from(Arc::new(config)), certified.cert.pem()))
}

/// The wait after a failed `accept`. Out of file descriptors (EMFILE), every
/// `accept` fails until a connection closes: retrying at once would spin a
/// core and flood the log. The wait doubles from 5 ms to 1 s and an accepted
/// connection resets it; failures are reported at most once a second, with
/// a count.
#[derive(Default)]
struct AcceptBackoff {
    delay: Duration,
    unreported: u64,
    last_report: Option<Instant>,
}

impl AcceptBackoff {
    const FIRST: Duration = Duration::from_millis(5);
    const MAX: Duration = Duration::from_secs(1);
    const REPORT_EVERY: Duration = Duration::from_secs(1);

    /// Counts a failure, reports it unless the last report is recent, and
    /// returns how long to wait before the next `accept`.
    fn failed(&mut self, err: &std::io::Error) -> Duration {
        self.unreported += 1;
        self.delay = (self.delay * 2).clamp(Self::FIRST, Self::MAX);
        if self
            .last_report
            .is_none_or(|at| at.elapsed() >= Self::REPORT_EVERY)
        {
            eprintln!(
                "accept failed: {err} ({} failure(s) since the last report; next try in {:?})",
                self.unreported, self.delay
            );
            self.unreported = 0;
            self.last_report = Some(Instant::now());
        }
        self.delay
    }

    fn succeeded(&mut self) {
        self.delay = Duration::ZERO;
    }
}
