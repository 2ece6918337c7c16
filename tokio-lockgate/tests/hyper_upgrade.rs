//! The `hyper-upgrade` example's server, in process: hyper 1 serves plain
//! HTTP and upgrades `GET /ws`, tokio-lockgate echoes over the upgraded
//! connection. The serving functions are copied from
//! `examples/hyper-upgrade.rs` (examples cannot be imported), with one
//! addition: each finished echo reports its outcome on a channel, so the
//! tests can check the server side too. Every test is bounded in time.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONNECTION, CONTENT_TYPE, HeaderValue, SEC_WEBSOCKET_VERSION, UPGRADE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::timeout;
use tokio_lockgate::handshake::upgrade_response;
use tokio_lockgate::{
    CloseCode, CloseFrame, Config, Error, HandshakeFailure, Message, Role, WebSocketContext,
    WebSocketStream,
};

/// The most any test may take.
const LIMIT: Duration = Duration::from_secs(20);

/// Where a finished echo reports how many messages it echoed.
type Done = mpsc::UnboundedSender<tokio_lockgate::Result<u64>>;

/// Starts the server on a fresh loopback port; returns its address and the
/// channel on which finished echoes report.
async fn start() -> (
    SocketAddr,
    mpsc::UnboundedReceiver<tokio_lockgate::Result<u64>>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (done, finished) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let _ = tcp.set_nodelay(true);
            let done = done.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request| route(request, done.clone()));
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), service)
                    .with_upgrades()
                    .await;
            });
        }
    });
    (addr, finished)
}

// ---- copied from examples/hyper-upgrade.rs (plus the `done` channel) ----

async fn route(
    request: Request<Incoming>,
    done: Done,
) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(match request.uri().path() {
        "/ws" => upgrade(request, done),
        "/" if request.method() == Method::GET => text(
            StatusCode::OK,
            "Hello from hyper. The WebSocket echo is at /ws.\n",
        ),
        _ => text(StatusCode::NOT_FOUND, "Not found.\n"),
    })
}

fn upgrade(mut request: Request<Incoming>, done: Done) -> Response<Full<Bytes>> {
    let switching = match upgrade_response(&request) {
        Ok(switching) => switching,
        Err(err) => return refusal(&err),
    };
    let on_upgrade = hyper::upgrade::on(&mut request);
    tokio::spawn(async move {
        let upgraded = match on_upgrade.await {
            Ok(upgraded) => upgraded,
            Err(err) => return eprintln!("upgrade failed: {err}"),
        };
        let ws = WebSocketStream::from_context(
            TokioIo::new(upgraded),
            WebSocketContext::new(Role::Server, Config::default()),
        );
        let _ = done.send(echo(ws).await);
    });
    switching.map(|()| Full::default())
}

async fn echo<S>(mut ws: WebSocketStream<S>) -> tokio_lockgate::Result<u64>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut echoed = 0;
    loop {
        match ws.read().await {
            Ok(message) if message.is_data() => {
                ws.send(message).await?;
                echoed += 1;
            }
            Ok(_) => {}
            Err(Error::ConnectionClosed) => return Ok(echoed),
            Err(err) => return Err(err),
        }
    }
}

fn refusal(err: &HandshakeFailure) -> Response<Full<Bytes>> {
    let status = err.status();
    let mut response = text(status, &format!("{err}\n"));
    if status == StatusCode::UPGRADE_REQUIRED {
        let headers = response.headers_mut();
        headers.insert(SEC_WEBSOCKET_VERSION, HeaderValue::from_static("13"));
        headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
        headers.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    }
    response
}

fn text(status: StatusCode, body: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::copy_from_slice(body.as_bytes())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

// ---- end of the copy ----

/// Sends `request` on a fresh connection and reads the whole answer (the
/// request should carry `Connection: close`).
async fn raw_http(addr: SocketAddr, request: &str) -> String {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tcp.read_to_end(&mut answer).await.unwrap();
    String::from_utf8(answer).unwrap()
}

#[tokio::test]
async fn websocket_echo_through_a_hyper_upgrade() {
    timeout(LIMIT, async {
        let (addr, mut finished) = start().await;
        let (mut ws, response) = tokio_lockgate::connect_async(format!("ws://{addr}/ws"))
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::SWITCHING_PROTOCOLS);
        assert!(!ws.get_ref().is_tls());

        ws.send(Message::text("through hyper")).await.unwrap();
        assert_eq!(ws.read().await.unwrap(), Message::text("through hyper"));
        ws.write(Message::binary(vec![7u8; 100_000])).await.unwrap();
        ws.write(Message::text("second")).await.unwrap();
        ws.flush().await.unwrap();
        assert_eq!(
            ws.read().await.unwrap(),
            Message::binary(vec![7u8; 100_000])
        );
        assert_eq!(ws.read().await.unwrap(), Message::text("second"));

        ws.close(Some(CloseFrame::new(CloseCode::Normal, "bye")))
            .await
            .unwrap();
        match ws.read().await.unwrap() {
            Message::Close(Some(frame)) => assert_eq!(frame.code, CloseCode::Normal),
            other => panic!("expected the close reply, got {other:?}"),
        }
        assert!(matches!(ws.read().await, Err(Error::ConnectionClosed)));
        assert_eq!(finished.recv().await.unwrap().unwrap(), 3);
    })
    .await
    .expect("test timed out");
}

#[tokio::test]
async fn a_frame_sent_right_after_the_request_is_not_lost() {
    timeout(LIMIT, async {
        let (addr, mut finished) = start().await;
        // The request and a masked text frame "Hello" in one write: hyper
        // reads both, and must hand the frame over with the connection.
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        let mut bytes = format!(
            "GET /ws HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        .into_bytes();
        bytes.extend_from_slice(&[
            0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58,
        ]);
        tcp.write_all(&bytes).await.unwrap();

        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            let mut byte = [0u8; 1];
            tcp.read_exact(&mut byte).await.unwrap();
            head.push(byte[0]);
        }
        let head = String::from_utf8(head).unwrap().to_ascii_lowercase();
        assert!(
            head.starts_with("http/1.1 101 switching protocols\r\n"),
            "{head}"
        );
        assert!(
            head.contains("\r\nsec-websocket-accept: s3pplmbitxaq9kygzzhzrbk+xoo=\r\n"),
            "{head}"
        );

        let mut ws = WebSocketStream::from_context(
            tcp,
            WebSocketContext::new(Role::Client, Config::default()),
        );
        assert_eq!(ws.read().await.unwrap(), Message::text("Hello"));
        ws.close(None).await.unwrap();
        assert!(matches!(ws.read().await.unwrap(), Message::Close(_)));
        assert!(matches!(ws.read().await, Err(Error::ConnectionClosed)));
        assert_eq!(finished.recv().await.unwrap().unwrap(), 1);
    })
    .await
    .expect("test timed out");
}

#[tokio::test]
async fn plain_http_still_works() {
    timeout(LIMIT, async {
        let (addr, _finished) = start().await;
        let answer = raw_http(
            addr,
            &format!("GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
        assert!(
            answer.ends_with("\r\n\r\nHello from hyper. The WebSocket echo is at /ws.\n"),
            "{answer}"
        );

        let answer = raw_http(
            addr,
            &format!("GET /nowhere HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 404 Not Found\r\n"), "{answer}");
    })
    .await
    .expect("test timed out");
}

#[tokio::test]
async fn bad_upgrade_requests_are_refused() {
    timeout(LIMIT, async {
        let (addr, _finished) = start().await;
        let request = |extra: &str| {
            format!(
                "GET /ws HTTP/1.1\r\nHost: {addr}\r\nConnection: Upgrade, close\r\n\
                 Upgrade: websocket\r\n{extra}\r\n"
            )
        };
        let key = "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n";

        // A plain GET of the WebSocket endpoint.
        let answer = raw_http(
            addr,
            &format!("GET /ws HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
        )
        .await;
        assert!(
            answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
            "{answer}"
        );
        assert!(answer.contains("Upgrade is missing"), "{answer}");

        // No key.
        let answer = raw_http(addr, &request("Sec-WebSocket-Version: 13\r\n")).await;
        assert!(
            answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
            "{answer}"
        );
        assert!(answer.contains("Sec-WebSocket-Key"), "{answer}");

        // A key that is not 16 bytes in base64 (trailing bits set).
        let answer = raw_http(
            addr,
            &request(
                "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZR==\r\n",
            ),
        )
        .await;
        assert!(
            answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
            "{answer}"
        );

        // An old protocol version.
        let answer = raw_http(
            addr,
            &request(&format!("Sec-WebSocket-Version: 8\r\n{key}")),
        )
        .await;
        assert!(
            answer.starts_with("HTTP/1.1 426 Upgrade Required\r\n"),
            "{answer}"
        );
        let lower = answer.to_ascii_lowercase();
        assert!(
            lower.contains("\r\nsec-websocket-version: 13\r\n"),
            "{answer}"
        );
        assert!(lower.contains("\r\nupgrade: websocket\r\n"), "{answer}");

        // Not GET.
        let answer = raw_http(
            addr,
            &format!(
                "POST /ws HTTP/1.1\r\nHost: {addr}\r\nConnection: Upgrade, close\r\n\
                 Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n{key}\
                 Content-Length: 0\r\n\r\n"
            ),
        )
        .await;
        assert!(
            answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
            "{answer}"
        );
        assert!(answer.contains("not GET"), "{answer}");
    })
    .await
    .expect("test timed out");
}
