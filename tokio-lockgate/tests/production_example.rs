//! The `production` example, run as a process: its chat goes through the
//! hub (from headless Chromium too), a page of another site is refused
//! with 403, `/metrics` lists lockgate's counters, and SIGTERM drains the
//! open WebSockets with 1012 before the process exits with status 0.
#![cfg(all(feature = "axum", feature = "metrics", feature = "tracing"))]

use lockgate_kit as support;

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;
use tokio_lockgate::{CloseCode, MaybeTlsStream, Message, WebSocketStream, connect_async};

use support::programs::{HeadlessChromium, Program};

/// The most any one exchange may take.
const LIMIT: Duration = Duration::from_secs(20);

type Client = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// The example on a port of its own choosing, and the address it printed.
fn start() -> (Program, String) {
    let server = Program::start("production", &["127.0.0.1:0"]);
    let line = server.expect_line("listening on http://");
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    (server, addr)
}

/// A client in the chat. The 101 comes before the server's handler has
/// subscribed the connection to the hub, so it says `greeting` and waits
/// for it to come back: from then on it gets every message published.
async fn join(addr: &str, greeting: &str) -> Client {
    let (mut ws, response) = timeout(LIMIT, connect_async(format!("ws://{addr}/ws")))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(response.status(), 101);
    ws.send(Message::text(greeting)).await.unwrap();
    assert_eq!(next_text(&mut ws).await, greeting);
    ws
}

/// The next text message, skipping nothing else (the chat sends only text).
async fn next_text(ws: &mut Client) -> String {
    match timeout(LIMIT, ws.read()).await.unwrap().unwrap() {
        Message::Text(text) => text.as_str().to_owned(),
        other => panic!("expected a chat message, got {other:?}"),
    }
}

/// The head of what the server answers a raw HTTP/1.1 request (and the
/// body, for a request that asks it to close).
async fn raw_http1(addr: &str, request: &str) -> String {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut chunk = vec![0; 4096];
    loop {
        let n = timeout(LIMIT, tcp.read(&mut chunk)).await.unwrap().unwrap();
        answer.extend_from_slice(&chunk[..n]);
        let keeps_open = !request.contains("Connection: close");
        if n == 0 || (keeps_open && answer.windows(4).any(|w| w == b"\r\n\r\n")) {
            return String::from_utf8_lossy(&answer).into_owned();
        }
    }
}

#[tokio::test]
async fn chat_goes_to_everyone_other_sites_are_refused_and_metrics_are_served() {
    let (_server, addr) = start();

    let mut alice = join(&addr, "alice is here").await;
    let mut bob = join(&addr, "bob is here").await;
    alice.send(Message::text("hi all")).await.unwrap();
    // Alice was in the chat when Bob said hello.
    assert_eq!(next_text(&mut alice).await, "bob is here");
    assert_eq!(next_text(&mut alice).await, "hi all");
    assert_eq!(next_text(&mut bob).await, "hi all");

    // A page of another site: refused before the handler runs.
    let upgrade = |origin: &str| {
        format!(
            "GET /ws HTTP/1.1\r\nHost: {addr}\r\nOrigin: {origin}\r\nUpgrade: websocket\r\n\
             Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
             Sec-WebSocket-Version: 13\r\n\r\n"
        )
    };
    let refused = raw_http1(&addr, &upgrade("https://elsewhere.example")).await;
    assert!(refused.starts_with("HTTP/1.1 403 "), "{refused}");
    // The server's own page is accepted.
    let accepted = raw_http1(&addr, &upgrade(&format!("http://{addr}"))).await;
    assert!(accepted.starts_with("HTTP/1.1 101 "), "{accepted}");

    let scrape = raw_http1(
        &addr,
        &format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
    )
    .await;
    assert!(scrape.starts_with("HTTP/1.1 200 "), "{scrape}");
    for series in [
        "lockgate_connections_opened_total",
        "lockgate_handshake_failures_total",
        "lockgate_hub_published_total",
        "lockgate_hub_subscribers",
    ] {
        assert!(scrape.contains(series), "no {series} in {scrape}");
    }
}

#[tokio::test]
async fn sigterm_closes_open_websockets_with_1012_and_the_process_exits_0() {
    let (mut server, addr) = start();
    let mut ws = join(&addr, "still here").await;

    server.signal("TERM");
    server.expect_line("draining 1 WebSocket connection(s)");
    let Message::Close(Some(frame)) = timeout(LIMIT, ws.read()).await.unwrap().unwrap() else {
        panic!("expected the drain's close frame");
    };
    assert_eq!(frame.code, CloseCode::Restart);
    // The close reply goes out with this read; then the server ends it.
    while timeout(LIMIT, ws.read()).await.unwrap().is_ok() {}

    let report = server.expect_line("drained:");
    assert_eq!(
        report,
        "drained: 1 connection(s), 1 closed, 0 left before their turn, 0 cut at the deadline"
    );
    let status = server.wait_exit();
    assert!(status.success(), "{status}");
}

/// Headless Chromium (Debian's `chromium`) loads the page; its script
/// joins the chat and, once its greeting came back through the hub, says
/// so in the chat, where this test's own client reads both. Skipped (with
/// a note) when Chromium is not installed, unless
/// `LOCKGATE_REQUIRE_CHROMIUM=1`.
#[tokio::test]
async fn chromium_chats_through_the_hub() {
    if !support::chromium_installed() {
        return;
    }
    let (_server, addr) = start();
    let mut watcher = join(&addr, "watching").await;
    let browser = HeadlessChromium::open("production", &[], &format!("http://{addr}/"));
    assert_eq!(next_text(&mut watcher).await, "hello from the browser");
    assert_eq!(
        next_text(&mut watcher).await,
        "the browser got its greeting back through the hub"
    );
    drop(browser);
}
