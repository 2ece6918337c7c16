//! The `axum` example, run as a process and talked to the ways clients
//! reach it: HTTP/1.1 upgrades, HTTP/2 extended CONNECT with prior
//! knowledge (h2c), and over TLS with ALPN `h2` and `http/1.1`. Each time
//! the subprotocol `echo.v1` is chosen, permessage-deflate is agreed, and
//! messages come back; requests that are not upgrades get their 400 or
//! 426.
#![cfg(feature = "axum")]

use lockgate_kit as support;

use std::sync::Arc;
use std::time::Duration;

use http_body_util::Empty;
use hyper::body::Bytes;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;
use tokio_lockgate::deflate::DeflateConfig;
use tokio_lockgate::http::{Request, Version};
use tokio_lockgate::upgrade::connect_h2;
use tokio_lockgate::{ClientOptions, Config, Message, WebSocketStream, client_async_with};
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};

use support::programs::{HeadlessChromium, Program, free_address};

/// The most any one exchange may take.
const LIMIT: Duration = Duration::from_secs(20);

fn client_config() -> Config {
    Config::default().deflate(Some(DeflateConfig::default()))
}

/// The upgrade request, offering the example's subprotocol among others.
fn request(url: &str) -> Request<()> {
    Request::get(url)
        .header("sec-websocket-protocol", "other.v9, echo.v1")
        .body(())
        .unwrap()
}

/// Sends a text and a large compressible binary message and expects both
/// back, then closes.
async fn echo_round_trip<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut WebSocketStream<S>) {
    assert_eq!(ws.subprotocol(), Some("echo.v1"));
    assert!(ws.context().deflate().is_some(), "deflate was agreed");
    let big = Bytes::from(b"lockgate ".repeat(10_000));
    for message in [Message::text("hello"), Message::binary(big)] {
        ws.send(message.clone()).await.unwrap();
        let echoed = timeout(LIMIT, ws.read()).await.unwrap().unwrap();
        assert_eq!(echoed, message);
    }
    ws.close(None).await.unwrap();
    while timeout(LIMIT, ws.read()).await.unwrap().is_ok() {}
}

/// An HTTP/2 connection over `io`, driven on its own task.
async fn h2_sender<I>(io: I) -> hyper::client::conn::http2::SendRequest<Empty<Bytes>>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(io))
            .await
            .unwrap();
    tokio::spawn(connection);
    sender
}

/// Two WebSockets at once on one HTTP/2 connection.
async fn two_websockets_over_h2(
    mut sender: hyper::client::conn::http2::SendRequest<Empty<Bytes>>,
    url: &str,
) {
    let mut sockets = Vec::new();
    for _ in 0..2 {
        let (ws, response) = timeout(
            LIMIT,
            connect_h2(&mut sender, request(url), client_config()),
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.version(), Version::HTTP_2);
        sockets.push(ws);
    }
    for ws in &mut sockets {
        echo_round_trip(ws).await;
    }
}

/// The status line a raw HTTP/1.1 request gets, and the whole head.
async fn raw_http1(addr: &str, request: &str) -> String {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut answer = vec![0; 4096];
    let n = timeout(LIMIT, tcp.read(&mut answer))
        .await
        .unwrap()
        .unwrap();
    String::from_utf8_lossy(&answer[..n]).into_owned()
}

#[tokio::test]
async fn plain_http1_and_h2c() {
    let addr = free_address();
    let server = Program::start("axum", &[&addr]);
    server.expect_line("listening on");
    let url = format!("ws://{addr}/ws");

    // HTTP/1.1 upgrade.
    let tcp = TcpStream::connect(&addr).await.unwrap();
    let (mut ws, response) = client_async_with(
        request(&url),
        tcp,
        ClientOptions::new().config(client_config()),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 101);
    echo_round_trip(&mut ws).await;

    // HTTP/2 with prior knowledge.
    let tcp = TcpStream::connect(&addr).await.unwrap();
    two_websockets_over_h2(h2_sender(tcp).await, &url).await;

    // Not upgrades: answered before the handler runs.
    let plain = raw_http1(
        &addr,
        "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(plain.starts_with("HTTP/1.1 400 "), "{plain}");
    let old = raw_http1(
        &addr,
        "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n",
    )
    .await;
    assert!(old.starts_with("HTTP/1.1 426 "), "{old}");
    assert!(
        old.to_ascii_lowercase()
            .contains("sec-websocket-version: 13\r\n"),
        "{old}"
    );
}

#[tokio::test]
async fn tls_with_alpn_h2_and_http1() {
    let addr = free_address();
    let server = Program::start("axum", &[&addr, "--tls"]);
    let pem = server.expect_block("BEGIN CERTIFICATE", "END CERTIFICATE");
    server.expect_line("listening on");
    let certificate = CertificateDer::from_pem_slice(pem.as_bytes()).unwrap();
    let url = format!("wss://{addr}/ws");

    // ALPN h2: WebSockets over HTTP/2.
    let tls = tls_connect(&addr, &certificate, b"h2").await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    two_websockets_over_h2(h2_sender(tls).await, &url).await;

    // ALPN http/1.1: the HTTP/1.1 upgrade inside TLS.
    let tls = tls_connect(&addr, &certificate, b"http/1.1").await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let (mut ws, response) = client_async_with(
        request(&url),
        tls,
        ClientOptions::new().config(client_config()),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 101);
    echo_round_trip(&mut ws).await;
}

/// TLS to the example, trusting its certificate, offering one protocol.
async fn tls_connect(
    addr: &str,
    certificate: &CertificateDer<'static>,
    alpn: &[u8],
) -> tokio_rustls::client::TlsStream<TcpStream> {
    let mut roots = RootCertStore::empty();
    roots.add(certificate.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    let tcp = TcpStream::connect(addr).await.unwrap();
    let ip: std::net::IpAddr = addr.rsplit_once(':').unwrap().0.parse().unwrap();
    timeout(
        LIMIT,
        TlsConnector::from(Arc::new(config)).connect(ServerName::from(ip), tcp),
    )
    .await
    .unwrap()
    .unwrap()
}

/// Headless Chromium (Debian's `chromium`) loads the page over TLS and
/// opens the echo on the same HTTP/2 connection, as browsers do when the
/// server advertises extended CONNECT. Skipped (with a note) when Chromium
/// is not installed, unless `LOCKGATE_REQUIRE_CHROMIUM=1`.
#[test]
fn chromium_opens_the_websocket_over_http2() {
    if !support::chromium_installed() {
        return;
    }
    let addr = free_address();
    let server = Program::start("axum", &[&addr, "--tls"]);
    server.expect_line("listening on");
    let browser = HeadlessChromium::open(
        "axum",
        &["--ignore-certificate-errors"],
        &format!("https://{addr}/"),
    );
    let opened = server.expect_line("websocket opened over");
    let report = server.expect_line("browser report:");
    drop(browser);
    assert_eq!(
        opened,
        "websocket opened over HTTP/2, subprotocol echo.v1, deflate on"
    );
    assert_eq!(report, "browser report: echo ok echo.v1 permessage-deflate");
}
