//! The axum extractor in process, for what the example does not show:
//! refusals over HTTP/2, what the handler sees before it answers, and a
//! client that offers no subprotocol.
#![cfg(feature = "axum")]

use std::time::Duration;

use axum::Router;
use axum::response::Response;
use axum::routing::any;
use http_body_util::Empty;
use hyper::body::Bytes;
use hyper::ext::Protocol;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::timeout;
use tokio_lockgate::axum::{WebSocket, WebSocketUpgrade};
use tokio_lockgate::http::{Method, Request, Version};
use tokio_lockgate::upgrade::connect_h2;
use tokio_lockgate::{Config, Message, connect_async};

const LIMIT: Duration = Duration::from_secs(20);

/// What a handler saw: the chosen subprotocol and whether it was HTTP/2.
type Seen = (Option<String>, bool);

/// Serves `/ws` with a handler that reports what it saw and echoes.
async fn serve() -> (String, mpsc::UnboundedReceiver<Seen>) {
    let (seen_tx, seen) = mpsc::unbounded_channel();
    let handler = move |upgrade: WebSocketUpgrade| {
        let seen_tx = seen_tx.clone();
        async move {
            let upgrade = upgrade.protocols(["b.v1", "a.v1"]);
            let _ = seen_tx.send((
                upgrade.selected_protocol().map(str::to_owned),
                upgrade.is_http2(),
            ));
            upgrade.on_upgrade(|mut ws: WebSocket| async move {
                while let Ok(message) = ws.read().await {
                    if message.is_data() && ws.send(message).await.is_err() {
                        break;
                    }
                }
            }) as Response
        }
    };
    let app = Router::new().route("/ws", any(handler));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, seen)
}

async fn h2(addr: &str) -> hyper::client::conn::http2::SendRequest<Empty<Bytes>> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .unwrap();
    tokio::spawn(connection);
    sender
}

#[tokio::test]
async fn the_server_preference_wins_and_no_offer_means_no_subprotocol() {
    let (addr, mut seen) = serve().await;
    let offer = Request::get(format!("ws://{addr}/ws"))
        .header("sec-websocket-protocol", "a.v1, b.v1")
        .body(())
        .unwrap();
    let (mut ws, _) = timeout(LIMIT, connect_async(offer)).await.unwrap().unwrap();
    assert_eq!(ws.subprotocol(), Some("b.v1"));
    assert_eq!(seen.recv().await.unwrap(), (Some("b.v1".into()), false));
    ws.send(Message::text("x")).await.unwrap();
    assert_eq!(ws.read().await.unwrap(), Message::text("x"));

    let mut sender = h2(&addr).await;
    let (ws, response) = timeout(
        LIMIT,
        connect_h2(&mut sender, format!("ws://{addr}/ws"), Config::default()),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(response.headers().get("sec-websocket-protocol").is_none());
    assert_eq!(ws.subprotocol(), None);
    assert_eq!(seen.recv().await.unwrap(), (None, true));
}

#[tokio::test]
async fn bad_extended_connects_are_refused_with_400() {
    let (addr, mut seen) = serve().await;
    let mut sender = h2(&addr).await;
    // (what is wrong, :protocol, Sec-WebSocket-Version)
    let cases = [
        ("version 8", Some("websocket"), "8"),
        ("another :protocol", Some("webtransport"), "13"),
        ("an empty version", Some("websocket"), ""),
    ];
    for (name, protocol, version) in cases {
        let mut request = Request::builder()
            .method(Method::CONNECT)
            .version(Version::HTTP_2)
            .uri(format!("http://{addr}/ws"))
            .header("sec-websocket-version", version)
            .body(Empty::<Bytes>::new())
            .unwrap();
        if let Some(protocol) = protocol {
            request
                .extensions_mut()
                .insert(Protocol::from_static(protocol));
        }
        sender.ready().await.unwrap();
        let response = timeout(LIMIT, sender.send_request(request))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(response.status(), 400, "{name}");
        if version != "13" {
            assert_eq!(response.headers()["sec-websocket-version"], "13", "{name}");
        }
    }
    assert!(seen.try_recv().is_err(), "no handler ran");
}
