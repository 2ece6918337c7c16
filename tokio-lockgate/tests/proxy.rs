//! `connect_async_with` through every kind of proxy, each a real server we
//! did not write (`support/proxies.rs` of the core crate): `http://`
//! (tinyproxy), `https://` (stunnel in front of tinyproxy), `socks5://` and
//! `socks5h://` (microsocks). `ws://` and `wss://` echo through each, with
//! and without credentials; refusals name the proxy; the environment's
//! proxy is used unless `NO_PROXY` says otherwise; silent peers are cut
//! short by the handshake timeout; a TLS server sees close_notify, then
//! EOF, after the closing handshake. Every test is bounded in time.
//!
//! The `wss://` and `https://` cases need `--features rustls`.

use lockgate_kit as support;

use std::time::Duration;

use support::proxies::{
    EchoServer, ProxyEnv, ProxyEnvFixture, ProxyKind, ProxyRules, ProxyServer, SilentPeer, TestCa,
    TinyProxy,
};
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout};
use tokio_lockgate::handshake::Proxy;
use tokio_lockgate::{
    ClientOptions, Config, Error, HandshakeFailure, MaybeTlsStream, Message, TimeoutKind,
    WebSocketStream, connect_async_with,
};

/// The most any one connection attempt may take.
/// The driver under test speaks TLS: the `https://` proxy and `wss://`
/// cases run.
const TLS: bool = cfg!(feature = "rustls");

const LIMIT: Duration = Duration::from_secs(20);

/// The credentials the proxies require, when they require any.
const CREDENTIALS: (&str, &str) = ("alice", "wonder");

type Client = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Options with a generous handshake deadline and, with the `rustls`
/// feature, a connector trusting `ca` (for `wss://` servers and `https://`
/// proxies alike).
fn options(ca: &TestCa) -> ClientOptions {
    let options = ClientOptions::new()
        .config(Config::default().handshake_timeout(Some(Duration::from_secs(10))));
    #[cfg(feature = "rustls")]
    let options = options.tls(lockgate::Connector::Rustls(std::sync::Arc::new(
        lockgate::dial::client_config(ca.roots()).unwrap(),
    )));
    #[cfg(not(feature = "rustls"))]
    let _ = ca;
    options
}

/// `connect_async_with`, bounded by [`LIMIT`].
async fn connect(url: &str, options: ClientOptions) -> tokio_lockgate::Result<Client> {
    let (ws, response) = timeout(LIMIT, connect_async_with(url, options))
        .await
        .unwrap_or_else(|_| panic!("{url}: no outcome within {LIMIT:?}"))?;
    assert_eq!(response.status(), 101, "{url}");
    Ok(ws)
}

/// The echo servers behind the proxies and their schemes: `ws://`, and
/// `wss://` with a certificate from `ca` (with the `rustls` feature).
fn echo_servers(ca: &TestCa) -> Vec<(EchoServer, &'static str)> {
    #[cfg(feature = "rustls")]
    let tls = Some((
        EchoServer::tls(&ca.issue(&["localhost", "127.0.0.1", "::1"])),
        "wss",
    ));
    #[cfg(not(feature = "rustls"))]
    let tls = {
        let _ = ca;
        None
    };
    std::iter::once((EchoServer::plain(), "ws"))
        .chain(tls)
        .collect()
}

/// The port of the TCP peer: the proxy's when tunnelled.
fn peer_port(ws: &Client) -> u16 {
    ws.get_ref().get_ref().peer_addr().unwrap().port()
}

/// Three messages written and flushed once, read back, then the closing
/// handshake.
async fn echo_three(ws: &mut Client, what: &str) {
    timeout(LIMIT, async {
        for i in 0..3 {
            ws.write(Message::text(format!("{what}: {i}")))
                .await
                .unwrap();
        }
        ws.flush().await.unwrap();
        for i in 0..3 {
            let expected = Message::text(format!("{what}: {i}"));
            assert_eq!(ws.read().await.unwrap(), expected, "{what}");
        }
        ws.close(None).await.unwrap();
        while ws.read().await.is_ok() {}
    })
    .await
    .unwrap_or_else(|_| panic!("{what}: the exchange took over {LIMIT:?}"));
}

/// `ws://` and `wss://`, by name and by address, through a proxy of
/// `kind` without and then with credentials.
async fn echo_through(kind: ProxyKind) {
    let ca = TestCa::new();
    let servers = echo_servers(&ca);
    for credentials in [None, Some(CREDENTIALS)] {
        let Some(proxy) = ProxyServer::start(kind, credentials, &ca) else {
            return;
        };
        let proxy_url = proxy.url(credentials);
        for (server, scheme) in &servers {
            for host in ["localhost", "127.0.0.1"] {
                let url = server.url(scheme, host);
                let what = format!("{url} through {proxy_url}");
                let options = options(&ca).proxy(Proxy::from_url(&proxy_url).unwrap());
                let mut ws = connect(&url, options)
                    .await
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!(peer_port(&ws), proxy.port(), "{what}");
                assert_eq!(
                    ws.get_ref().is_tls(),
                    *scheme == "wss" || kind.is_tls(),
                    "{what}"
                );
                echo_three(&mut ws, &what).await;
            }
        }
        if let Some(socks) = proxy.socks() {
            // microsocks logs each target as the client named it: by
            // name, or by the address the client resolved the name to.
            let targets = socks.connected_to();
            for (server, _) in &servers {
                let port = format!(":{}", server.port());
                let to_server = targets.iter().filter(|to| to.ends_with(&port)).count();
                let by_name = targets.contains(&format!("localhost{port}"));
                assert_eq!(to_server, 2, "{kind:?}: the proxy saw {targets:?}");
                assert_eq!(
                    by_name,
                    kind == ProxyKind::Socks5h,
                    "{kind:?}: who resolved localhost? the proxy saw {targets:?}"
                );
            }
        }
    }
}

#[tokio::test]
async fn echo_through_an_http_proxy() {
    echo_through(ProxyKind::Http).await;
}

#[cfg(feature = "rustls")]
#[tokio::test]
async fn echo_through_an_https_proxy() {
    echo_through(ProxyKind::Https).await;
}

#[tokio::test]
async fn echo_through_a_socks5_proxy_the_client_resolving() {
    echo_through(ProxyKind::Socks5).await;
}

#[tokio::test]
async fn echo_through_a_socks5h_proxy_the_proxy_resolving() {
    echo_through(ProxyKind::Socks5h).await;
}

#[tokio::test]
async fn basic_auth_set_on_the_proxy_is_sent() {
    let ca = TestCa::new();
    let server = EchoServer::plain();
    let rules = ProxyRules {
        basic_auth: Some(("bob", "s3cret")),
        connect_ports: &[server.port()],
    };
    let Some(proxy) = TinyProxy::start(rules) else {
        return;
    };
    let proxy = Proxy::http(&proxy.url(None))
        .unwrap()
        .basic_auth("bob", "s3cret");
    let url = server.url("ws", "127.0.0.1");
    let mut ws = connect(&url, options(&ca).proxy(proxy)).await.unwrap();
    echo_three(&mut ws, "basic_auth").await;
}

#[tokio::test]
async fn missing_or_wrong_credentials_are_refused_naming_the_proxy() {
    let ca = TestCa::new();
    let server = EchoServer::plain();
    let url = server.url("ws", "127.0.0.1");
    for kind in ProxyKind::testable(TLS) {
        let Some(proxy) = ProxyServer::start(kind, Some(CREDENTIALS), &ca) else {
            continue;
        };
        for credentials in [None, Some(("alice", "wrong"))] {
            let proxy_url = proxy.url(credentials);
            let options = options(&ca).proxy(Proxy::from_url(&proxy_url).unwrap());
            let error = connect(&url, options).await.unwrap_err();
            let needs_authentication = match &error {
                Error::Handshake(HandshakeFailure::ProxyRefused(refusal)) if !kind.is_socks() => {
                    refusal.needs_authentication()
                }
                Error::Handshake(HandshakeFailure::Socks5Refused(refusal)) if kind.is_socks() => {
                    refusal.needs_authentication()
                }
                other => panic!("{proxy_url}: {other:?}"),
            };
            assert!(needs_authentication, "{proxy_url}: {error}");
            let message = error.to_string();
            assert!(message.contains(&proxy.address()), "{proxy_url}: {message}");
        }
    }
    assert_eq!(server.served(), 0);
}

#[tokio::test]
async fn a_refusal_names_proxy_target_and_status() {
    let ca = TestCa::new();
    let allowed = EchoServer::plain();
    let rules = ProxyRules {
        basic_auth: None,
        connect_ports: &[allowed.port()],
    };
    let Some(proxy) = TinyProxy::start(rules) else {
        return;
    };
    let options = options(&ca).proxy(Proxy::http(&proxy.url(None)).unwrap());
    let error = connect("ws://127.0.0.1:9/", options).await.unwrap_err();
    let Error::Handshake(HandshakeFailure::ProxyRefused(refusal)) = &error else {
        panic!("{error:?}")
    };
    assert_eq!(refusal.status, 403);
    assert_eq!(refusal.target, "127.0.0.1:9");
    let message = error.to_string();
    assert!(message.contains("403 Forbidden"), "{message}");
    assert!(
        message.contains(&format!("127.0.0.1:{}", proxy.port())),
        "{message}"
    );
}

#[tokio::test]
async fn only_a_socks5h_proxy_is_asked_to_resolve_the_name() {
    let ca = TestCa::new();
    let url = "ws://lockgate-test.invalid:9/";
    for kind in [ProxyKind::Socks5, ProxyKind::Socks5h] {
        let Some(proxy) = ProxyServer::start(kind, None, &ca) else {
            return;
        };
        let options = options(&ca).proxy(Proxy::from_url(&proxy.url(None)).unwrap());
        let error = connect(url, options).await.unwrap_err();
        let message = error.to_string();
        if kind == ProxyKind::Socks5h {
            // The proxy could not resolve it, and says so.
            let Error::Handshake(HandshakeFailure::Socks5Refused(refusal)) = &error else {
                panic!("{kind:?}: {error:?}");
            };
            assert!(!refusal.needs_authentication(), "{message}");
            assert!(message.contains(&proxy.address()), "{message}");
        } else {
            // The client could not resolve it, and never asked the proxy.
            assert!(
                !matches!(
                    error,
                    Error::Handshake(HandshakeFailure::Socks5Refused(_)) | Error::Timeout(_)
                ),
                "{kind:?}: {error:?}"
            );
            assert!(message.contains("lockgate-test.invalid"), "{message}");
            let targets = proxy.socks().unwrap().connected_to();
            assert!(targets.is_empty(), "the proxy was asked: {targets:?}");
        }
    }
}

#[tokio::test]
async fn silent_peers_are_cut_short_by_the_handshake_timeout() {
    let ca = TestCa::new();
    let silent = SilentPeer::start();
    let handshake_timeout = Duration::from_millis(500);
    let routes = silent.routes(TLS);
    for route in &routes {
        let config = Config::default().handshake_timeout(Some(handshake_timeout));
        let mut options = options(&ca).config(config);
        if let Some(proxy) = &route.proxy {
            options = options.proxy(Proxy::from_url(proxy).unwrap());
        }
        let started = Instant::now();
        let error = connect(&route.url, options).await.unwrap_err();
        let took = started.elapsed();
        assert!(
            matches!(error, Error::Timeout(TimeoutKind::Handshake)),
            "{}: {error:?}",
            route.what
        );
        assert!(
            took >= handshake_timeout && took < handshake_timeout + Duration::from_secs(1),
            "{}: {took:?}",
            route.what
        );
    }
    assert_eq!(silent.accepted(), routes.len());
}

#[tokio::test]
async fn proxy_from_env_honours_no_proxy() {
    let fixture = ProxyEnvFixture::start(TLS);
    let env = ProxyEnv::lock();
    for case in fixture.cases() {
        env.set(&case.vars());
        let what = format!("{}: {} with {:?}", case.what, case.url, case.vars);
        let mut ws = connect(&case.url, options(&fixture.ca).proxy_from_env())
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(peer_port(&ws), case.via, "{what}");
        echo_three(&mut ws, &what).await;
    }
}

#[cfg(feature = "rustls")]
#[tokio::test]
async fn a_tls_server_sees_close_notify_then_eof_after_the_closing_handshake() {
    let ca = TestCa::new();
    let watch = support::proxies::TlsCloseWatch::start(&ca.issue(&["localhost"]));
    let url = format!("wss://localhost:{}/", watch.port());
    let mut ws = connect(&url, options(&ca)).await.unwrap();
    echo_three(&mut ws, "close_notify").await;
    // Still holding the connection: the closing handshake sent it. (The
    // server is a thread; blocking this one briefly stalls nothing.)
    let seen = watch.close_notify_within(Duration::from_secs(5));
    drop(ws);
    let verdict = tokio::task::spawn_blocking(move || watch.verdict())
        .await
        .unwrap();
    assert!(
        seen,
        "no close_notify after the closing handshake: {verdict:?}"
    );
    assert_eq!(verdict, Ok(3));
}
