//! The blocking `connect` through a real HTTP proxy (tinyproxy, see
//! `support/tinyproxy.rs`): the tunnel carries the WebSocket, credentials
//! are sent, and the proxy's refusals and absence are reported with its
//! status and address.

mod support;

use std::net::TcpListener;
use std::thread;
use std::time::Duration;

use lockgate::handshake::Proxy;
use lockgate::{ClientOptions, Config, Error, HandshakeFailure, Message};
use support::tinyproxy::{ProxyRules, TinyProxy};

/// A one-connection echo server on 127.0.0.1; returns its port.
fn echo_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    thread::spawn(move || {
        let (tcp, _) = listener.accept().unwrap();
        let mut ws = lockgate::accept(tcp).unwrap();
        while let Ok(message) = ws.read() {
            if message.is_data() {
                ws.send(message).unwrap();
            }
        }
    });
    port
}

fn options(proxy: &str) -> ClientOptions {
    let config = Config::default().handshake_timeout(Some(Duration::from_secs(10)));
    ClientOptions::new()
        .config(config)
        .proxy(Proxy::http(proxy).unwrap())
}

#[test]
fn echo_through_the_proxy_with_credentials() {
    let port = echo_server();
    let rules = ProxyRules {
        basic_auth: Some(("alice", "wonder")),
        connect_ports: &[port],
    };
    let Some(proxy) = TinyProxy::start(rules) else {
        return;
    };
    let url = format!("ws://127.0.0.1:{port}/");
    let (mut ws, response) = options(&proxy.url(Some(("alice", "wonder"))))
        .connect(url.as_str())
        .unwrap();
    assert_eq!(response.status(), 101);
    ws.send(Message::text("through the tunnel")).unwrap();
    assert_eq!(ws.read().unwrap(), Message::text("through the tunnel"));
    ws.close(None).unwrap();
}

#[test]
fn refusals_carry_the_proxy_status() {
    let allowed = echo_server();
    let rules = ProxyRules {
        basic_auth: Some(("alice", "wonder")),
        connect_ports: &[allowed],
    };
    let Some(proxy) = TinyProxy::start(rules) else {
        return;
    };
    let forbidden = TcpListener::bind("127.0.0.1:0").unwrap();
    let forbidden_port = forbidden.local_addr().unwrap().port();
    // (credentials, target port, expected status: None for "credentials
    // needed", which tinyproxy says with 401 or 407).
    let cases = [
        (None, allowed, None),
        (Some(("alice", "wrong")), allowed, None),
        (Some(("alice", "wonder")), forbidden_port, Some(403)),
    ];
    for (credentials, port, status) in cases {
        let url = format!("ws://127.0.0.1:{port}/");
        let error = options(&proxy.url(credentials))
            .connect(url.as_str())
            .unwrap_err();
        let Error::Handshake(HandshakeFailure::ProxyRefused(refusal)) = &error else {
            panic!("{credentials:?} {port}: {error:?}");
        };
        match status {
            Some(status) => assert_eq!(refusal.status, status, "{error}"),
            None => assert!(refusal.needs_authentication(), "{error}"),
        }
        let message = error.to_string();
        let status = refusal.status.as_u16();
        assert!(
            message.contains(&format!("127.0.0.1:{}", proxy.port())),
            "{message}"
        );
        assert!(message.contains(&format!("127.0.0.1:{port}")), "{message}");
        assert!(message.contains(&status.to_string()), "{message}");
    }
}

#[test]
fn an_absent_proxy_is_named_in_the_error() {
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let error = options(&format!("127.0.0.1:{port}"))
        .connect("ws://example.invalid/")
        .unwrap_err();
    let Error::Io(io) = &error else {
        panic!("{error:?}")
    };
    assert_eq!(io.kind(), std::io::ErrorKind::ConnectionRefused);
    let message = error.to_string();
    assert!(
        message.contains(&format!("proxy 127.0.0.1:{port} for example.invalid:80")),
        "{message}"
    );
}

#[test]
fn a_refused_direct_connection_names_the_server() {
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let error = lockgate::connect(format!("ws://127.0.0.1:{port}/")).unwrap_err();
    assert!(
        error
            .to_string()
            .contains(&format!("connecting to 127.0.0.1:{port}")),
        "{error}"
    );
}
