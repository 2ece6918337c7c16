//! `connect_async` through a real HTTP proxy (tinyproxy; `wss://` through
//! it is in `tls.rs`): the tunnel carries the WebSocket, refusals carry the
//! proxy's status, and the proxy's answer counts against the handshake
//! deadline.

mod support;

use std::time::Duration;

use support::tinyproxy::{ProxyRules, TinyProxy};
use tokio::net::TcpListener;
use tokio::time::timeout;
use tokio_lockgate::handshake::Proxy;
use tokio_lockgate::{
    ClientOptions, Config, Error, HandshakeFailure, Message, TimeoutKind, connect_async_with,
};

const LIMIT: Duration = Duration::from_secs(20);

/// An echo server on 127.0.0.1 for one connection; returns its port.
async fn echo_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut ws = tokio_lockgate::accept_async(tcp).await.unwrap();
        while let Ok(message) = ws.read().await {
            if message.is_data() {
                ws.send(message).await.unwrap();
            }
        }
    });
    port
}

#[tokio::test]
async fn echo_through_the_proxy() {
    let port = echo_server().await;
    let rules = ProxyRules {
        basic_auth: Some(("bob", "s3cret")),
        connect_ports: &[port],
    };
    let Some(proxy) = TinyProxy::start(rules) else {
        return;
    };
    let options = ClientOptions::new().proxy(
        Proxy::http(&proxy.url(None))
            .unwrap()
            .basic_auth("bob", "s3cret"),
    );
    let url = format!("ws://127.0.0.1:{port}/chat");
    let (mut ws, response) = timeout(LIMIT, connect_async_with(url.as_str(), options))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(response.status(), 101);
    assert_eq!(
        ws.get_ref().get_ref().peer_addr().unwrap().port(),
        proxy.port()
    );
    for i in 0..3 {
        ws.write(Message::text(format!("tunnelled {i}")))
            .await
            .unwrap();
    }
    ws.flush().await.unwrap();
    for i in 0..3 {
        assert_eq!(
            ws.read().await.unwrap(),
            Message::text(format!("tunnelled {i}"))
        );
    }
    ws.close(None).await.unwrap();
}

#[tokio::test]
async fn a_refusal_names_proxy_target_and_status() {
    let allowed = echo_server().await;
    let rules = ProxyRules {
        basic_auth: None,
        connect_ports: &[allowed],
    };
    let Some(proxy) = TinyProxy::start(rules) else {
        return;
    };
    let options = ClientOptions::new().proxy(Proxy::http(&proxy.url(None)).unwrap());
    let error = timeout(LIMIT, connect_async_with("ws://127.0.0.1:9/", options))
        .await
        .unwrap()
        .unwrap_err();
    let Error::Handshake(HandshakeFailure::ProxyRefused(refusal)) = &error else {
        panic!("{error:?}")
    };
    assert_eq!(refusal.status, 403);
    assert_eq!(refusal.target, "127.0.0.1:9");
    assert!(error.to_string().contains("403 Forbidden"), "{error}");
}

#[tokio::test]
async fn a_silent_proxy_is_bounded_by_the_handshake_timeout() {
    // Accepts the connection and says nothing.
    let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = silent.local_addr().unwrap();
    let _held = tokio::spawn(async move {
        let connection = silent.accept().await;
        tokio::time::sleep(LIMIT).await;
        drop(connection);
    });
    let config = Config::default().handshake_timeout(Some(Duration::from_millis(300)));
    let options = ClientOptions::new()
        .config(config)
        .proxy(Proxy::http(&addr.to_string()).unwrap());
    let error = timeout(LIMIT, connect_async_with("ws://example.invalid/", options))
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(error, Error::Timeout(TimeoutKind::Handshake)),
        "{error:?}"
    );
}
