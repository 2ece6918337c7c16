//! The blocking `connect` through every kind of proxy, each a real server
//! we did not write (`support/proxies.rs`): `http://` (tinyproxy),
//! `https://` (stunnel in front of tinyproxy), `socks5://` and
//! `socks5h://` (microsocks). `ws://` and `wss://` echo through each, with
//! and without credentials; refusals name the proxy; the environment's
//! proxy is used unless `NO_PROXY` says otherwise; silent peers are cut
//! short by the handshake timeout; a TLS server sees close_notify, then
//! EOF, after the closing handshake.
//!
//! The `wss://` and `https://` cases need `--features rustls`.

use lockgate_kit as support;

use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use lockgate::handshake::Proxy;
use lockgate::stream::MaybeTlsStream;
use lockgate::{ClientOptions, Config, Error, HandshakeFailure, Message, TimeoutKind, WebSocket};
use support::proxies::{
    EchoServer, ProxyEnv, ProxyEnvFixture, ProxyKind, ProxyRules, ProxyServer, SilentPeer, TestCa,
    TinyProxy,
};

/// The credentials the proxies require, when they require any.
/// The driver under test speaks TLS: the `https://` proxy and `wss://`
/// cases run.
const TLS: bool = cfg!(feature = "rustls");

const CREDENTIALS: (&str, &str) = ("alice", "wonder");

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
fn peer_port(ws: &WebSocket<MaybeTlsStream<TcpStream>>) -> u16 {
    ws.get_ref().get_ref().peer_addr().unwrap().port()
}

/// Three messages there and back, then the closing handshake.
fn echo_three(ws: &mut WebSocket<MaybeTlsStream<TcpStream>>, what: &str) {
    for i in 0..3 {
        let message = Message::text(format!("{what}: {i}"));
        ws.send(message.clone()).unwrap();
        assert_eq!(ws.read().unwrap(), message, "{what}");
    }
    ws.close(None).unwrap();
    while ws.read().is_ok() {}
}

/// `ws://` and `wss://`, by name and by address, through a proxy of
/// `kind` without and then with credentials.
fn echo_through(kind: ProxyKind) {
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
                let (mut ws, response) = options(&ca)
                    .proxy(Proxy::from_url(&proxy_url).unwrap())
                    .connect(url.as_str())
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!(response.status(), 101, "{what}");
                assert_eq!(peer_port(&ws), proxy.port(), "{what}");
                assert_eq!(
                    ws.get_ref().is_tls(),
                    *scheme == "wss" || kind.is_tls(),
                    "{what}"
                );
                echo_three(&mut ws, &what);
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

#[test]
fn echo_through_an_http_proxy() {
    echo_through(ProxyKind::Http);
}

#[cfg(feature = "rustls")]
#[test]
fn echo_through_an_https_proxy() {
    echo_through(ProxyKind::Https);
}

#[test]
fn echo_through_a_socks5_proxy_the_client_resolving() {
    echo_through(ProxyKind::Socks5);
}

#[test]
fn echo_through_a_socks5h_proxy_the_proxy_resolving() {
    echo_through(ProxyKind::Socks5h);
}

#[test]
fn missing_or_wrong_credentials_are_refused_naming_the_proxy() {
    let ca = TestCa::new();
    let server = EchoServer::plain();
    let url = server.url("ws", "127.0.0.1");
    for kind in ProxyKind::testable(TLS) {
        let Some(proxy) = ProxyServer::start(kind, Some(CREDENTIALS), &ca) else {
            continue;
        };
        for credentials in [None, Some(("alice", "wrong"))] {
            let proxy_url = proxy.url(credentials);
            let error = options(&ca)
                .proxy(Proxy::from_url(&proxy_url).unwrap())
                .connect(url.as_str())
                .unwrap_err();
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

#[test]
fn refusals_carry_the_proxy_status() {
    let ca = TestCa::new();
    let allowed = EchoServer::plain();
    let rules = ProxyRules {
        basic_auth: Some(CREDENTIALS),
        connect_ports: &[allowed.port()],
    };
    let Some(proxy) = TinyProxy::start(rules) else {
        return;
    };
    let forbidden = TcpListener::bind("127.0.0.1:0").unwrap();
    let forbidden_port = forbidden.local_addr().unwrap().port();
    // (credentials, target port, expected status: None for "credentials
    // needed", which tinyproxy says with 401 or 407).
    let cases = [
        (None, allowed.port(), None),
        (Some(("alice", "wrong")), allowed.port(), None),
        (Some(CREDENTIALS), forbidden_port, Some(403)),
    ];
    for (credentials, port, status) in cases {
        let url = format!("ws://127.0.0.1:{port}/");
        let error = options(&ca)
            .proxy(Proxy::http(&proxy.url(credentials)).unwrap())
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
fn only_a_socks5h_proxy_is_asked_to_resolve_the_name() {
    let ca = TestCa::new();
    let url = "ws://lockgate-test.invalid:9/";
    for kind in [ProxyKind::Socks5, ProxyKind::Socks5h] {
        let Some(proxy) = ProxyServer::start(kind, None, &ca) else {
            return;
        };
        let error = options(&ca)
            .proxy(Proxy::from_url(&proxy.url(None)).unwrap())
            .connect(url)
            .unwrap_err();
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

#[test]
fn silent_peers_are_cut_short_by_the_handshake_timeout() {
    let ca = TestCa::new();
    let silent = SilentPeer::start();
    let timeout = Duration::from_millis(500);
    let routes = silent.routes(TLS);
    for route in &routes {
        let config = Config::default().handshake_timeout(Some(timeout));
        let mut options = options(&ca).config(config);
        if let Some(proxy) = &route.proxy {
            options = options.proxy(Proxy::from_url(proxy).unwrap());
        }
        let started = Instant::now();
        let error = options.connect(route.url.as_str()).unwrap_err();
        let took = started.elapsed();
        assert!(
            matches!(error, Error::Timeout(TimeoutKind::Handshake)),
            "{}: {error:?}",
            route.what
        );
        assert!(
            took >= timeout && took < timeout + Duration::from_secs(1),
            "{}: {took:?}",
            route.what
        );
    }
    assert_eq!(silent.accepted(), routes.len());
}

#[test]
fn proxy_from_env_honours_no_proxy() {
    let fixture = ProxyEnvFixture::start(TLS);
    let env = ProxyEnv::lock();
    for case in fixture.cases() {
        env.set(&case.vars());
        let what = format!("{}: {} with {:?}", case.what, case.url, case.vars);
        let (mut ws, _) = options(&fixture.ca)
            .proxy_from_env()
            .connect(case.url.as_str())
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(peer_port(&ws), case.via, "{what}");
        echo_three(&mut ws, &what);
    }
}

#[cfg(feature = "rustls")]
#[test]
fn a_tls_server_sees_close_notify_then_eof_after_the_closing_handshake() {
    let ca = TestCa::new();
    let watch = support::proxies::TlsCloseWatch::start(&ca.issue(&["localhost"]));
    let url = format!("wss://localhost:{}/", watch.port());
    let (mut ws, _) = options(&ca).connect(url.as_str()).unwrap();
    echo_three(&mut ws, "close_notify");
    // Still holding the connection: the closing handshake sent it.
    let seen = watch.close_notify_within(Duration::from_secs(5));
    drop(ws);
    let verdict = watch.verdict();
    assert!(
        seen,
        "no close_notify after the closing handshake: {verdict:?}"
    );
    assert_eq!(verdict, Ok(3));
}

#[test]
fn an_absent_proxy_is_named_in_the_error() {
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let error = options(&TestCa::new())
        .proxy(Proxy::http(&format!("127.0.0.1:{port}")).unwrap())
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

/// How long a dial takes over each path on loopback: direct, and through
/// each kind of proxy, `ws://` and `wss://`; the median and the 90th
/// percentile of 50 dials each (to the first message echoed). A
/// measurement, not a check of speed: it asserts only that every dial
/// works. Run it with
/// `cargo test --release -p lockgate --features rustls --test proxy -- --ignored --nocapture dial_times`.
#[test]
#[ignore = "a measurement; run it by hand"]
fn dial_times() {
    const DIALS: usize = 50;
    let ca = TestCa::new();
    let servers = echo_servers(&ca);
    let proxies: Vec<ProxyServer> = ProxyKind::testable(TLS)
        .into_iter()
        .filter_map(|kind| ProxyServer::start(kind, None, &ca))
        .collect();
    for proxy in std::iter::once(None).chain(proxies.iter().map(Some)) {
        for (server, scheme) in &servers {
            let url = server.url(scheme, "127.0.0.1");
            let mut times = Vec::with_capacity(DIALS);
            for _ in 0..DIALS {
                let mut options = options(&ca);
                if let Some(proxy) = proxy {
                    options = options.proxy(Proxy::from_url(&proxy.url(None)).unwrap());
                }
                let started = Instant::now();
                let (mut ws, _) = options.connect(url.as_str()).unwrap();
                ws.send(Message::text("ping")).unwrap();
                assert_eq!(ws.read().unwrap(), Message::text("ping"));
                times.push(started.elapsed());
                ws.close(None).unwrap();
                while ws.read().is_ok() {}
            }
            times.sort();
            let path = match proxy {
                Some(proxy) => format!("{} proxy", proxy.kind().scheme()),
                None => "direct".to_owned(),
            };
            println!(
                "{scheme:>3} {path:<14} median {:>7.3} ms  p90 {:>7.3} ms",
                times[DIALS / 2].as_secs_f64() * 1e3,
                times[DIALS * 9 / 10].as_secs_f64() * 1e3
            );
        }
    }
}
