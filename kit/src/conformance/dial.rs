//! Dialling through every kind of proxy, each a real server we did not
//! write ([`proxies`](crate::proxies)): `http://` (tinyproxy), `https://`
//! (stunnel in front of tinyproxy), `socks5://` and `socks5h://`
//! (microsocks). `ws://` and `wss://` echo through each, with and without
//! credentials; refusals name the proxy, the target and the status; only a
//! `socks5h://` proxy resolves names; the environment's proxy is used
//! unless `NO_PROXY` says otherwise; silent peers are cut short by the
//! handshake timeout, and so are peers that send a byte at a time and
//! redirect chains ([`stalling`](crate::stalling)); a redirect to another
//! origin carries no credentials; a TLS server sees close_notify, then
//! EOF, after the closing handshake. And every kind of proxy again through
//! pproxy ([`PProxy`]), which reads `Proxy-Authorization` only when it is
//! spelled so. Run by [`dial_suite!`](crate::dial_suite).

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use lockgate::handshake::{IntoClientRequest, Proxy};
use lockgate::http::HeaderValue;
use lockgate::{ClientOptions, Config, Connector, Error, HandshakeFailure, TimeoutKind};

use super::Sockets;
use crate::proxies::{
    EchoServer, PProxy, ProxyEnv, ProxyEnvFixture, ProxyKind, ProxyRules, ProxyServer, SilentPeer,
    TestCa, TinyProxy, TlsCloseWatch,
};
use crate::stalling::{Answer, Dribble, DribblingPeer, HeadRecorder, RedirectLoop, answer};

/// A driver's client with its TLS, as the dial cases use it.
pub trait Dialer: Sockets {
    /// Whether it speaks TLS (built with `rustls`): the `https://` proxy
    /// and `wss://` cases run.
    const TLS: bool;

    /// `options` trusting `ca` for `wss://` servers and `https://` proxies
    /// alike (unchanged without TLS).
    fn trusting(options: ClientOptions, ca: &TestCa) -> ClientOptions;
}

/// The credentials the proxies require, when they require any.
const CREDENTIALS: (&str, &str) = ("alice", "wonder");

/// Options with a generous handshake deadline, trusting `ca`.
pub fn options<D: Dialer>(ca: &TestCa) -> ClientOptions {
    let options = ClientOptions::new()
        .config(Config::default().handshake_timeout(Some(Duration::from_secs(10))));
    D::trusting(options, ca)
}

/// The echo servers behind the proxies and their schemes: `ws://`, and
/// `wss://` with a certificate from `ca` for a driver that speaks TLS.
pub fn echo_servers<D: Dialer>(ca: &TestCa) -> Vec<(EchoServer, &'static str)> {
    let tls = D::TLS.then(|| {
        (
            EchoServer::tls(&ca.issue(&["localhost", "127.0.0.1", "::1"])),
            "wss",
        )
    });
    std::iter::once((EchoServer::plain(), "ws"))
        .chain(tls)
        .collect()
}

/// The error of a dial that must fail.
fn dial_error<D: Dialer>(url: impl AsRef<str>, options: ClientOptions) -> Error {
    let url = url.as_ref();
    match D::dial_and_echo(url, options, url) {
        Ok(_) => panic!("{url}: connected"),
        Err(error) => error,
    }
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    closed.local_addr().unwrap().port()
}

/// `ws://` and `wss://`, by name and by address, through a proxy of
/// `kind` without and then with credentials.
fn echo_through<D: Dialer>(kind: ProxyKind) {
    if kind.is_tls() && !D::TLS {
        return;
    }
    let ca = TestCa::new();
    let servers = echo_servers::<D>(&ca);
    for credentials in [None, Some(CREDENTIALS)] {
        let Some(proxy) = ProxyServer::start(kind, credentials, &ca) else {
            return;
        };
        let proxy_url = proxy.url(credentials);
        for (server, scheme) in &servers {
            for host in ["localhost", "127.0.0.1"] {
                let url = server.url(scheme, host);
                let what = format!("{url} through {proxy_url}");
                let options = options::<D>(&ca).proxy(Proxy::from_url(&proxy_url).unwrap());
                let dialed = D::dial_and_echo(&url, options, &what)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!(dialed.peer_port, proxy.port(), "{what}");
                assert_eq!(dialed.tls, *scheme == "wss" || kind.is_tls(), "{what}");
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

/// Echo through an `http://` proxy (tinyproxy).
pub fn echo_through_an_http_proxy<D: Dialer>() {
    echo_through::<D>(ProxyKind::Http);
}

/// Echo through an `https://` proxy (stunnel in front of tinyproxy).
pub fn echo_through_an_https_proxy<D: Dialer>() {
    echo_through::<D>(ProxyKind::Https);
}

/// Echo through a `socks5://` proxy, the client resolving the name.
pub fn echo_through_a_socks5_proxy_the_client_resolving<D: Dialer>() {
    echo_through::<D>(ProxyKind::Socks5);
}

/// Echo through a `socks5h://` proxy, the proxy resolving the name.
pub fn echo_through_a_socks5h_proxy_the_proxy_resolving<D: Dialer>() {
    echo_through::<D>(ProxyKind::Socks5h);
}

/// Through pproxy, each kind of proxy (`https://` with TLS), without and
/// with credentials: `ws://` (and `wss://` with TLS) to `localhost` echo,
/// through the proxy. One that requires credentials refuses a client
/// without them or with wrong ones, so the right ones were read: pproxy
/// looks `Proxy-Authorization` up case-sensitively, and answered 407 to
/// correct credentials under a lower-case name.
pub fn echo_through_pproxy_every_kind_with_and_without_credentials<D: Dialer>() {
    let ca = TestCa::new();
    let servers = echo_servers::<D>(&ca);
    for kind in ProxyKind::testable(D::TLS) {
        for credentials in [None, Some(CREDENTIALS)] {
            let Some(proxy) = PProxy::start(kind, credentials, &ca) else {
                return;
            };
            let proxy_url = proxy.url(credentials);
            for (server, scheme) in &servers {
                let url = server.url(scheme, "localhost");
                let what = format!("{url} through pproxy at {proxy_url}");
                let options = options::<D>(&ca).proxy(Proxy::from_url(&proxy_url).unwrap());
                let dialed = D::dial_and_echo(&url, options, &what)
                    .unwrap_or_else(|e| panic!("{what}: {e}\npproxy: {}", proxy.log()));
                assert_eq!(dialed.peer_port, proxy.port(), "{what}");
                assert_eq!(dialed.tls, *scheme == "wss" || kind.is_tls(), "{what}");
            }
            if credentials.is_none() {
                continue;
            }
            let (server, scheme) = &servers[0];
            let url = server.url(scheme, "localhost");
            let served = server.served();
            for refused in [None, Some(("alice", "wrong"))] {
                let proxy_url = proxy.url(refused);
                let options = options::<D>(&ca).proxy(Proxy::from_url(&proxy_url).unwrap());
                let error = dial_error::<D>(&url, options);
                // pproxy answers HTTP with 407; it ends a SOCKS5 exchange
                // without a reply.
                if let Some(HandshakeFailure::ProxyRefused(refusal)) = error.handshake_failure() {
                    assert!(refusal.needs_authentication(), "{proxy_url}: {error}");
                } else {
                    assert!(kind.is_socks(), "{proxy_url}: {error:?}");
                }
            }
            assert_eq!(
                server.served(),
                served,
                "{kind:?}: no refused client got through"
            );
        }
    }
}

/// Credentials given to the [`Proxy`] itself (not in its URL) are sent.
pub fn basic_auth_set_on_the_proxy_is_sent<D: Dialer>() {
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
    D::dial_and_echo(&url, options::<D>(&ca).proxy(proxy), "basic_auth").unwrap();
    assert_eq!(server.served(), 1);
}

/// Every kind of proxy requiring credentials refuses a client without
/// them or with wrong ones, and the error names the proxy.
pub fn missing_or_wrong_credentials_are_refused_naming_the_proxy<D: Dialer>() {
    let ca = TestCa::new();
    let server = EchoServer::plain();
    let url = server.url("ws", "127.0.0.1");
    for kind in ProxyKind::testable(D::TLS) {
        let Some(proxy) = ProxyServer::start(kind, Some(CREDENTIALS), &ca) else {
            continue;
        };
        for credentials in [None, Some(("alice", "wrong"))] {
            let proxy_url = proxy.url(credentials);
            let options = options::<D>(&ca).proxy(Proxy::from_url(&proxy_url).unwrap());
            let error = dial_error::<D>(&url, options);
            let needs_authentication = match error.handshake_failure() {
                Some(HandshakeFailure::ProxyRefused(refusal)) if !kind.is_socks() => {
                    refusal.needs_authentication()
                }
                Some(HandshakeFailure::Socks5Refused(refusal)) if kind.is_socks() => {
                    refusal.needs_authentication()
                }
                _ => panic!("{proxy_url}: {error:?}"),
            };
            assert!(needs_authentication, "{proxy_url}: {error}");
            let message = error.to_string();
            assert!(message.contains(&proxy.address()), "{proxy_url}: {message}");
        }
    }
    assert_eq!(server.served(), 0);
}

/// A refusal carries the proxy's status and target, and its message names
/// the proxy, the target and the status.
pub fn refusals_carry_the_proxy_status<D: Dialer>() {
    let ca = TestCa::new();
    let allowed = EchoServer::plain();
    let rules = ProxyRules {
        basic_auth: Some(CREDENTIALS),
        connect_ports: &[allowed.port()],
    };
    let Some(proxy) = TinyProxy::start(rules) else {
        return;
    };
    let forbidden_port = closed_port();
    // (credentials, target port, expected status: None for "credentials
    // needed", which tinyproxy says with 401 or 407).
    let cases = [
        (None, allowed.port(), None),
        (Some(("alice", "wrong")), allowed.port(), None),
        (Some(CREDENTIALS), forbidden_port, Some(403)),
    ];
    for (credentials, port, status) in cases {
        let url = format!("ws://127.0.0.1:{port}/");
        let options = options::<D>(&ca).proxy(Proxy::http(&proxy.url(credentials)).unwrap());
        let error = dial_error::<D>(&url, options);
        let Some(HandshakeFailure::ProxyRefused(refusal)) = error.handshake_failure() else {
            panic!("{credentials:?} {port}: {error:?}");
        };
        match status {
            Some(status) => assert_eq!(refusal.status, status, "{error}"),
            None => assert!(refusal.needs_authentication(), "{error}"),
        }
        assert_eq!(refusal.target, format!("127.0.0.1:{port}"), "{error}");
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

/// A name a `socks5://` proxy's client cannot resolve never reaches the
/// proxy; a `socks5h://` proxy is asked, and its refusal names it.
pub fn only_a_socks5h_proxy_is_asked_to_resolve_the_name<D: Dialer>() {
    let ca = TestCa::new();
    let url = "ws://lockgate-test.invalid:9/";
    for kind in [ProxyKind::Socks5, ProxyKind::Socks5h] {
        let Some(proxy) = ProxyServer::start(kind, None, &ca) else {
            return;
        };
        let options = options::<D>(&ca).proxy(Proxy::from_url(&proxy.url(None)).unwrap());
        let error = dial_error::<D>(url, options);
        let message = error.to_string();
        if kind == ProxyKind::Socks5h {
            // The proxy could not resolve it, and says so.
            let Some(HandshakeFailure::Socks5Refused(refusal)) = error.handshake_failure() else {
                panic!("{kind:?}: {error:?}");
            };
            assert!(!refusal.needs_authentication(), "{message}");
            assert!(message.contains(&proxy.address()), "{message}");
        } else {
            // The client could not resolve it, and never asked the proxy.
            assert!(
                !(matches!(
                    error.handshake_failure(),
                    Some(HandshakeFailure::Socks5Refused(_))
                ) || error.timeout().is_some()),
                "{kind:?}: {error:?}"
            );
            assert!(message.contains("lockgate-test.invalid"), "{message}");
            let targets = proxy.socks().unwrap().connected_to();
            assert!(targets.is_empty(), "the proxy was asked: {targets:?}");
        }
    }
}

/// A peer that accepts TCP and says nothing (a server, each kind of
/// proxy, a TLS server) fails the dial at the handshake timeout. (Each
/// silent peer gives up on its own after 20 s: a dial without a deadline
/// would end otherwise, and the case fail.)
pub fn silent_peers_are_cut_short_by_the_handshake_timeout<D: Dialer>() {
    let ca = TestCa::new();
    let silent = SilentPeer::start();
    let routes = silent.routes(D::TLS);
    for route in &routes {
        let mut options = options::<D>(&ca).config(short_deadline());
        if let Some(proxy) = &route.proxy {
            options = options.proxy(Proxy::from_url(proxy).unwrap());
        }
        let error = dial_error::<D>(&route.url, options);
        // The error's kind is the proof, not the time it took: only the
        // deadline ends a dial to a peer that says nothing (one that never
        // fired would outlast the silent peer, which then closes: another
        // error). When it falls is the dial's rule, on simulated time in
        // its unit tests.
        assert!(
            error.timeout() == Some(TimeoutKind::Handshake),
            "{}: {error:?}",
            route.what
        );
    }
    assert_eq!(silent.accepted(), routes.len());
}

/// The deadline of the stalling cases: short, so they finish soon, and
/// far shorter than a [`DribblingPeer`]'s dribble, so a dial that does not
/// keep it meets the end of the stream instead.
fn short_deadline() -> Config {
    Config::default().handshake_timeout(Some(Duration::from_millis(500)))
}

/// A peer that keeps sending, a byte at a time, without ever completing
/// what the client waits for (a `wss://` server's TLS flight, an
/// `https://` proxy's, an HTTP proxy's answer to CONNECT) fails the dial
/// at the handshake timeout: the deadline bounds the sum of the reads,
/// not each one. With TLS, through the kit's rustls connector and through
/// the default one for `wss://` (native-tls where that feature is on).
pub fn a_peer_sending_a_byte_at_a_time_is_cut_short_by_the_handshake_timeout<D: Dialer>() {
    let ca = TestCa::new();
    let mut connectors = vec![("the kit's connector", options::<D>(&ca))];
    if let (true, Ok(default)) = (D::TLS, Connector::for_wss()) {
        connectors.push(("the default connector", ClientOptions::new().tls(default)));
    }
    for dribble in [Dribble::HttpHead, Dribble::TlsFlight] {
        let peer = DribblingPeer::start(dribble);
        let routes = peer.routes(dribble, D::TLS);
        for (what, proxy, url) in &routes {
            for (connector, options) in &connectors {
                let mut options = options.clone().config(short_deadline());
                if let Some(proxy) = proxy {
                    options = options.proxy(Proxy::from_url(proxy).unwrap());
                }
                let error = dial_error::<D>(url, options);
                assert!(
                    error.timeout() == Some(TimeoutKind::Handshake),
                    "{what}, {connector}: {error:?} (a dial that outlives the deadline meets \
                     the end of the dribble)"
                );
            }
        }
        assert_eq!(peer.accepted(), routes.len() * connectors.len());
    }
}

/// A server that redirects each attempt to itself, late, cannot stretch
/// the dial: every redirect is dialled within what is left of the one
/// handshake deadline, so the dial times out long before it runs out of
/// redirects.
pub fn a_redirect_chain_is_cut_short_by_the_one_handshake_deadline<D: Dialer>() {
    const REDIRECTS: u8 = 50;
    let server = RedirectLoop::start(Duration::from_millis(150));
    let options = options::<D>(&TestCa::new())
        .config(short_deadline())
        .max_redirects(REDIRECTS);
    let error = dial_error::<D>(server.url(), options);
    assert!(
        error.timeout() == Some(TimeoutKind::Handshake),
        "{error:?} after {} redirects (a deadline per attempt ends with the 302 after {REDIRECTS})",
        server.answered()
    );
    assert!(server.answered() < usize::from(REDIRECTS));
}

/// A redirect to another origin (here 127.0.0.1 to `localhost`) carries
/// no `Authorization`, `Cookie` or `Proxy-Authorization`; one within the
/// origin keeps them.
pub fn a_redirect_to_another_origin_carries_no_credentials<D: Dialer>() {
    const CREDENTIALS: [(&str, &str); 3] = [
        ("authorization", "Bearer for-the-first-server"),
        ("cookie", "session=first"),
        ("proxy-authorization", "Basic Zmlyc3Q6c2VydmVy"),
    ];
    let refuse: Answer = Arc::new(|_| answer(403, &[]));
    let elsewhere = HeadRecorder::start(refuse);
    let location = format!("ws://localhost:{}/moved", elsewhere.port());
    let across: Answer = Arc::new(move |_| answer(302, &[("Location", &location)]));
    let across = HeadRecorder::start(across);
    let within: Answer = Arc::new(|head| match head.starts_with("GET /first ") {
        true => answer(302, &[("Location", "/second")]),
        false => answer(403, &[]),
    });
    let within = HeadRecorder::start(within);
    let cases = [
        ("to another origin", &across, &elsewhere, false),
        ("within the origin", &within, &within, true),
    ];
    for (what, first, last, kept) in cases {
        let mut request = format!("ws://127.0.0.1:{}/first", first.port())
            .into_client_request()
            .unwrap();
        for (name, value) in CREDENTIALS {
            request
                .headers_mut()
                .insert(name, HeaderValue::from_static(value));
        }
        let error = match D::dial_and_echo(request, options::<D>(&TestCa::new()), what) {
            Ok(_) => panic!("{what}: connected"),
            Err(error) => error,
        };
        assert!(
            matches!(&error, Error::Http(response) if response.status() == 403),
            "{what}: {error:?}"
        );
        let heads = last.heads();
        let head = heads
            .last()
            .expect("the redirect was followed")
            .to_ascii_lowercase();
        for (name, value) in CREDENTIALS {
            let line = format!("{name}: {}", value.to_ascii_lowercase());
            assert_eq!(head.contains(&line), kept, "{what}: {name}\n{head}");
        }
    }
}

/// `proxy_from_env` takes the proxy the environment names for the
/// scheme, and none for a host `NO_PROXY` lists.
pub fn proxy_from_env_honours_no_proxy<D: Dialer>() {
    let fixture = ProxyEnvFixture::start(D::TLS);
    let env = ProxyEnv::lock();
    for case in fixture.cases() {
        env.set(&case.vars());
        let what = format!("{}: {} with {:?}", case.what, case.url, case.vars);
        let options = options::<D>(&fixture.ca).proxy_from_env();
        let dialed =
            D::dial_and_echo(&case.url, options, &what).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(dialed.peer_port, case.via, "{what}");
    }
}

/// After the closing handshake a TLS connection sends close_notify, then
/// its FIN (the server reads the end of the stream).
pub fn a_tls_server_sees_close_notify_then_eof_after_the_closing_handshake<D: Dialer>() {
    if !D::TLS {
        return;
    }
    let ca = TestCa::new();
    let watch = TlsCloseWatch::start(&ca.issue(&["localhost"]));
    let url = format!("wss://localhost:{}/", watch.port());
    let dialed = D::dial_and_echo(&url, options::<D>(&ca), "close_notify").unwrap();
    // Still holding the connection: the closing handshake sent it.
    let seen = watch.close_notify_within(Duration::from_secs(5));
    drop(dialed);
    let verdict = watch.verdict();
    assert!(
        seen,
        "no close_notify after the closing handshake: {verdict:?}"
    );
    assert_eq!(verdict, Ok(3));
}

/// A `wss://` server whose certificate does not verify (issued by a CA the
/// client does not trust, or for another name) fails the dial with
/// [`Error::Tls`], and no WebSocket handshake reaches it.
pub fn a_certificate_that_does_not_verify_fails_the_dial_with_a_tls_error<D: Dialer>() {
    if !D::TLS {
        return;
    }
    let trusted = TestCa::new();
    let stranger = TestCa::new();
    let cases = [
        (
            "issued by a CA the client does not trust",
            EchoServer::tls(&stranger.issue(&["localhost"])),
        ),
        (
            "issued for another name",
            EchoServer::tls(&trusted.issue(&["elsewhere.invalid"])),
        ),
    ];
    for (what, server) in cases {
        let url = server.url("wss", "localhost");
        match dial_error::<D>(&url, options::<D>(&trusted)) {
            Error::Tls(_) => {}
            other => panic!("{what} ({url}): expected Error::Tls, got {other:?}"),
        }
        assert_eq!(server.served(), 0, "{what}: a handshake got through");
    }
}

/// A proxy that refuses the TCP connection is named, with the target, in
/// the error.
pub fn an_absent_proxy_is_named_in_the_error<D: Dialer>() {
    let port = closed_port();
    let options =
        options::<D>(&TestCa::new()).proxy(Proxy::http(&format!("127.0.0.1:{port}")).unwrap());
    let error = dial_error::<D>("ws://example.invalid/", options);
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

/// A server that refuses the TCP connection is named in the error.
pub fn a_refused_direct_connection_names_the_server<D: Dialer>() {
    let port = closed_port();
    let error = dial_error::<D>(&format!("ws://127.0.0.1:{port}/"), ClientOptions::new());
    assert!(
        error
            .to_string()
            .contains(&format!("connecting to 127.0.0.1:{port}")),
        "{error}"
    );
}

/// The TLS items of a [`Dialer`] impl in a suite whose TLS comes from its
/// `rustls` feature: `TLS` is that feature, and `trusting` gives the
/// options a `Connector::Rustls` trusting the CA (expanded in the test
/// crate, so the feature is the suite's, and `lockgate` its dependency).
#[macro_export]
macro_rules! rustls_dialer_items {
    () => {
        const TLS: bool = cfg!(feature = "rustls");

        fn trusting(
            options: ::lockgate::ClientOptions,
            ca: &$crate::proxies::TestCa,
        ) -> ::lockgate::ClientOptions {
            #[cfg(feature = "rustls")]
            let options = options.tls(::lockgate::Connector::Rustls(::std::sync::Arc::new(
                ::lockgate::dial::client_config(ca.roots()).unwrap(),
            )));
            #[cfg(not(feature = "rustls"))]
            let _ = ca;
            options
        }
    };
}

/// The `#[test]` functions running every dial case of the kit for
/// `$dialer` (a type implementing [`Dialer`]).
#[macro_export]
macro_rules! dial_suite {
    ($dialer:ty) => {
        $crate::__kit_cases!($dialer;
            dial::echo_through_an_http_proxy,
            dial::echo_through_an_https_proxy,
            dial::a_certificate_that_does_not_verify_fails_the_dial_with_a_tls_error,
            dial::echo_through_a_socks5_proxy_the_client_resolving,
            dial::echo_through_a_socks5h_proxy_the_proxy_resolving,
            dial::echo_through_pproxy_every_kind_with_and_without_credentials,
            dial::basic_auth_set_on_the_proxy_is_sent,
            dial::missing_or_wrong_credentials_are_refused_naming_the_proxy,
            dial::refusals_carry_the_proxy_status,
            dial::only_a_socks5h_proxy_is_asked_to_resolve_the_name,
            dial::silent_peers_are_cut_short_by_the_handshake_timeout,
            dial::a_peer_sending_a_byte_at_a_time_is_cut_short_by_the_handshake_timeout,
            dial::a_redirect_chain_is_cut_short_by_the_one_handshake_deadline,
            dial::a_redirect_to_another_origin_carries_no_credentials,
            dial::proxy_from_env_honours_no_proxy,
            dial::a_tls_server_sees_close_notify_then_eof_after_the_closing_handshake,
            dial::an_absent_proxy_is_named_in_the_error,
            dial::a_refused_direct_connection_names_the_server,
        );
    };
}
