//! The `Origin` check of the server handshake: the matching rules of
//! `OriginPolicy` as tables (same origin, default ports, case, IPv6,
//! `null`, malformed values, wildcards, ports in patterns), the refusal
//! (403, the origin shortened in the message), and every server path of
//! the core crate: the sans-IO `ServerUpgrade`, `upgrade_response` and
//! tungstenite's `create_response`, HTTP/2's `extended_connect_response`
//! (which compares with `:authority`), and the blocking `accept`,
//! `accept_hdr` and `ServerOptions` over TCP, where a refused upgrade is
//! answered with 403 and the callback never runs.
#![allow(
    clippy::result_large_err,
    reason = "callbacks return ErrorResponse by value, tungstenite's signature"
)]

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

use http::{Request, Response, StatusCode, Version};
use lockgate::handshake::server::create_response;
use lockgate::handshake::{
    NoCallback, OriginPolicy, ServerUpgrade, WEBSOCKET_PROTOCOL, error_response_bytes,
    extended_connect_response, upgrade_response, upgrade_response_with_deflate,
};
use lockgate::{ClientOptions, Error, HandshakeFailure, ServerOptions, WebSocket};

/// An upgrade request for `Host: host` with these `Origin` fields.
fn upgrade(host: &str, origins: &[&str]) -> Request<()> {
    let mut request = Request::get("/chat")
        .header("host", host)
        .header("upgrade", "websocket")
        .header("connection", "Upgrade")
        .header("sec-websocket-version", "13")
        .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==");
    for origin in origins {
        request = request.header("origin", *origin);
    }
    request.body(()).unwrap()
}

fn accepted(policy: &OriginPolicy, host: &str, origin: &str) -> bool {
    match policy.check(&upgrade(host, &[origin])) {
        Ok(()) => true,
        Err(HandshakeFailure::OriginRefused { .. }) => false,
        Err(other) => panic!("{host} / {origin}: {other:?}"),
    }
}

#[test]
fn same_origin_rules() {
    // (Host, Origin, accepted by the default policy)
    let cases: &[(&str, &str, bool)] = &[
        // The server's own origin, through either scheme.
        ("example.com", "https://example.com", true),
        ("example.com", "http://example.com", true),
        ("example.com:8443", "https://example.com:8443", true),
        ("example.com:8080", "http://example.com:8080", true),
        // Default ports: an Origin without one has its scheme's; a Host
        // without one is port 80 or 443.
        ("example.com:443", "https://example.com", true),
        ("example.com:80", "http://example.com", true),
        ("example.com", "https://example.com:443", true),
        ("example.com", "http://example.com:80", true),
        ("example.com", "http://example.com:443", true),
        ("example.com", "https://example.com:80", true),
        ("example.com:443", "http://example.com", false),
        ("example.com:80", "https://example.com", false),
        ("example.com", "https://example.com:8443", false),
        ("example.com:8443", "https://example.com", false),
        ("example.com:8443", "https://example.com:9443", false),
        // Case-insensitive hosts and schemes.
        ("Example.COM", "https://example.com", true),
        ("example.com", "HTTPS://EXAMPLE.com", true),
        // IPv4 and IPv6 (in brackets, compared as addresses).
        ("127.0.0.1:9001", "http://127.0.0.1:9001", true),
        ("127.0.0.1:9001", "http://localhost:9001", false),
        ("[::1]:9001", "http://[::1]:9001", true),
        ("[::1]:9001", "http://[0:0:0:0:0:0:0:1]:9001", true),
        ("[2001:DB8::1]", "https://[2001:db8::1]", true),
        ("[::1]:9001", "http://[::2]:9001", false),
        ("[::1]:9001", "http://::1:9001", false),
        // Other sites, subdomains and parents are other origins.
        ("example.com", "https://evil.example", false),
        ("example.com", "https://app.example.com", false),
        ("app.example.com", "https://example.com", false),
        ("example.com", "https://example.com.evil.example", false),
        // Only web pages' schemes can be the server's own.
        ("example.com", "ws://example.com", false),
        ("example.com", "chrome-extension://example.com", false),
        // No normalization beyond case.
        ("example.com", "https://example.com.", false),
        // null and malformed values are refused.
        ("example.com", "null", false),
        ("example.com", "", false),
        ("example.com", "example.com", false),
        ("example.com", "https://example.com/", false),
        ("example.com", "https://example.com/chat", false),
        ("example.com", "https://user@example.com", false),
        ("example.com", "https://example.com:", false),
        ("example.com", "https://example.com:99999", false),
        (
            "example.com",
            "https://example.com, https://evil.example",
            false,
        ),
        ("example.com", "https://exa mple.com", false),
        // A Host that is no host matches nothing.
        ("exa$mple.com", "https://exa$mple.com", false),
    ];
    let policy = OriginPolicy::default();
    assert_eq!(policy, OriginPolicy::same_origin());
    for &(host, origin, expected) in cases {
        assert_eq!(
            accepted(&policy, host, origin),
            expected,
            "Host {host}, Origin {origin}"
        );
    }
}

#[test]
fn without_origin_any_request_is_accepted() {
    for policy in [
        OriginPolicy::same_origin(),
        OriginPolicy::allow(["https://*.example.com"]).unwrap(),
        OriginPolicy::any(),
    ] {
        assert!(policy.check(&upgrade("example.com", &[])).is_ok());
    }
}

#[test]
fn two_origin_fields_are_refused() {
    let request = upgrade(
        "example.com",
        &["https://example.com", "https://example.com"],
    );
    match OriginPolicy::default().check(&request) {
        Err(HandshakeFailure::OriginRefused { origin }) => {
            assert_eq!(&*origin, "https://example.com, https://example.com");
        }
        other => panic!("{other:?}"),
    }
    assert!(OriginPolicy::any().check(&request).is_ok());
}

#[test]
fn allow_list_rules() {
    // (patterns, Origin, accepted), all for Host: server.test
    let cases: &[(&[&str], &str, bool)] = &[
        // Scheme, host and default port.
        (
            &["https://app.example.com"],
            "https://app.example.com",
            true,
        ),
        (
            &["https://app.example.com"],
            "https://app.example.com:443",
            true,
        ),
        (
            &["https://app.example.com"],
            "HTTPS://App.Example.Com",
            true,
        ),
        (
            &["HTTPS://APP.example.com"],
            "https://app.example.com",
            true,
        ),
        (
            &["https://app.example.com"],
            "http://app.example.com",
            false,
        ),
        (
            &["https://app.example.com"],
            "https://app.example.com:8443",
            false,
        ),
        (&["https://app.example.com"], "https://example.com", false),
        (
            &["https://app.example.com"],
            "https://x.app.example.com",
            false,
        ),
        // Subdomains at any depth, not the domain itself, not look-alikes.
        (&["https://*.example.com"], "https://a.example.com", true),
        (&["https://*.example.com"], "https://a.b.example.com", true),
        (&["https://*.example.com"], "https://A.EXAMPLE.COM", true),
        (&["https://*.example.com"], "https://example.com", false),
        (&["https://*.example.com"], "https://badexample.com", false),
        (
            &["https://*.example.com"],
            "https://a.example.com.evil",
            false,
        ),
        (&["https://*.example.com"], "http://a.example.com", false),
        (
            &["https://*.example.com"],
            "https://a.example.com:8443",
            false,
        ),
        (&["https://*.example.com"], "https://[::1]", false),
        // No scheme: http and https, on their default ports.
        (&["*.example.com"], "http://a.example.com", true),
        (&["*.example.com"], "https://a.b.example.com:443", true),
        (&["*.example.com"], "http://a.example.com:80", true),
        (&["*.example.com"], "http://a.example.com:443", false),
        (&["*.example.com"], "https://a.example.com:8443", false),
        (&["*.example.com"], "wss://a.example.com", false),
        (&["example.com"], "https://example.com", true),
        (&["example.com"], "https://www.example.com", false),
        // Ports in patterns.
        (&["example.com:8443"], "https://example.com:8443", true),
        (&["example.com:8443"], "http://example.com:8443", true),
        (&["example.com:8443"], "https://example.com", false),
        (&["example.com:8443"], "ws://example.com:8443", false),
        (&["https://example.com:443"], "https://example.com", true),
        (&["example.com:443"], "http://example.com:443", true),
        (&["example.com:443"], "http://example.com", false),
        (&["http://localhost:*"], "http://localhost:5173", true),
        (&["http://localhost:*"], "http://localhost", true),
        (&["http://localhost:*"], "https://localhost:5173", false),
        (&["*.example.com:*"], "https://a.example.com:1234", true),
        // IPv6 and IPv4.
        (&["http://[::1]:3000"], "http://[0:0::1]:3000", true),
        (&["http://[::1]:3000"], "http://[::2]:3000", false),
        (&["http://127.0.0.1:3000"], "http://127.0.0.1:3000", true),
        // Schemes of their own.
        (
            &["chrome-extension://abcdefgh"],
            "chrome-extension://abcdefgh",
            true,
        ),
        (
            &["chrome-extension://abcdefgh"],
            "chrome-extension://other",
            false,
        ),
        (&["ws://tool.test:9000"], "ws://tool.test:9000", true),
        // Several patterns; the server's own origin stays accepted.
        (
            &["https://a.test", "https://b.test"],
            "https://b.test",
            true,
        ),
        (
            &["https://a.test", "https://b.test"],
            "https://c.test",
            false,
        ),
        (&["https://a.test"], "https://server.test", true),
        // null and malformed values match no pattern.
        (&["https://*.example.com"], "null", false),
        (&["https://*.example.com"], "https://a.example.com/", false),
        // `*` alone: any origin at all.
        (&["https://a.test", "*"], "null", true),
        (&["*"], "https://evil.example", true),
    ];
    for &(patterns, origin, expected) in cases {
        let policy = OriginPolicy::allow(patterns).unwrap();
        assert_eq!(
            accepted(&policy, "server.test", origin),
            expected,
            "{patterns:?}, Origin {origin}"
        );
    }
}

#[test]
fn allow_origin_adds_to_the_list() {
    let policy = OriginPolicy::same_origin()
        .allow_origin("https://a.test")
        .unwrap()
        .allow_origin("https://*.b.test")
        .unwrap();
    assert_eq!(
        policy,
        OriginPolicy::allow(["https://a.test", "https://*.b.test"]).unwrap()
    );
    assert!(accepted(&policy, "server.test", "https://a.test"));
    assert!(accepted(&policy, "server.test", "https://x.b.test"));
    assert!(!accepted(&policy, "server.test", "https://c.test"));
    assert!(
        format!("{policy:?}").contains("https://*.b.test"),
        "{policy:?}"
    );
    assert!(OriginPolicy::allow(["*"]).unwrap().is_any());
    assert!(
        OriginPolicy::any()
            .allow_origin("https://a.test")
            .unwrap()
            .is_any()
    );
    assert!(!policy.is_any());
}

#[test]
fn invalid_patterns() {
    // (pattern, words of the reason)
    let cases = [
        ("null", "null"),
        ("", "host"),
        ("https://", "host"),
        ("https://example.com/", "path"),
        ("https://example.com/app", "path"),
        ("https://user@example.com", "user"),
        ("example.com?x", "query"),
        (" example.com", "spaces"),
        ("https://example.com:", "port"),
        ("https://example.com:65536", "port"),
        ("https://example.com:x", "port"),
        ("*example.com", "*"),
        ("app.*.example.com", "*"),
        ("https://*", "*"),
        ("*:8080", "*"),
        ("*.", "host"),
        ("https://a..b", "host"),
        ("https://[::1", "bracket"),
        ("https://[not-v6]", "IPv6"),
        ("1https://example.com", "scheme"),
        ("bücher.example", "punycode"),
    ];
    for (pattern, words) in cases {
        let error = OriginPolicy::allow(["https://ok.test", pattern]).unwrap_err();
        assert_eq!(error.pattern(), pattern);
        assert!(error.reason().contains(words), "{pattern:?}: {error}");
        assert!(
            error.to_string().contains(&format!("{pattern:?}")),
            "{error}"
        );
    }
}

#[test]
fn the_refusal_is_a_403_naming_the_origin() {
    let long = format!("https://{}.example", "a".repeat(300));
    let error = OriginPolicy::default()
        .check(&upgrade("example.com", &[&long]))
        .unwrap_err();
    assert_eq!(error.status(), StatusCode::FORBIDDEN);
    let HandshakeFailure::OriginRefused { origin } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(
        origin.chars().count(),
        121,
        "120 characters and an ellipsis"
    );
    assert!(
        origin.starts_with("https://aaaa") && origin.ends_with('…'),
        "{origin}"
    );

    let error = OriginPolicy::default()
        .check(&upgrade("example.com", &["https://evil.example"]))
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "Origin https://evil.example is not allowed to open a WebSocket on this server"
    );
    let response = error.to_response(Version::HTTP_11);
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert!(response.body().contains("https://evil.example"));
    assert_eq!(
        error.to_response(Version::HTTP_2).status(),
        StatusCode::FORBIDDEN
    );
    let bytes = String::from_utf8(error_response_bytes(&error.into())).unwrap();
    assert!(bytes.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{bytes}");
    assert!(bytes.contains("\r\nConnection: close\r\n"), "{bytes}");
    assert!(
        bytes.ends_with(
            "Origin https://evil.example is not allowed to open a WebSocket on this server\n"
        ),
        "{bytes}"
    );
}

#[test]
fn control_characters_in_a_refused_origin_are_escaped() {
    let mut request = upgrade("example.com", &[]);
    request.headers_mut().insert(
        "origin",
        http::HeaderValue::from_bytes(b"https://evil.example\tx\xff").unwrap(),
    );
    let error = OriginPolicy::default().check(&request).unwrap_err();
    let HandshakeFailure::OriginRefused { origin } = error else {
        panic!("{error:?}");
    };
    assert_eq!(&*origin, "https://evil.example x\u{fffd}");
}

#[test]
fn sans_io_handshake_refuses_before_the_callback() {
    let wire = |origin: &str| {
        format!(
            "GET /chat HTTP/1.1\r\nHost: example.com\r\nUpgrade: websocket\r\n\
             Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
             Sec-WebSocket-Version: 13\r\n{origin}\r\n"
        )
    };
    let calls = AtomicUsize::new(0);
    let counting = || {
        |_: &Request<()>, response: Response<()>| {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok(response)
        }
    };
    // (Origin line, policy, accepted)
    let cases = [
        ("", OriginPolicy::default(), true),
        (
            "Origin: https://example.com\r\n",
            OriginPolicy::default(),
            true,
        ),
        (
            "Origin: https://evil.example\r\n",
            OriginPolicy::default(),
            false,
        ),
        ("Origin: null\r\n", OriginPolicy::default(), false),
        (
            "Origin: https://app.example.com\r\n",
            OriginPolicy::allow(["https://*.example.com"]).unwrap(),
            true,
        ),
        (
            "Origin: https://evil.example\r\n",
            OriginPolicy::any(),
            true,
        ),
    ];
    for (origin, policy, expected) in cases {
        let before = calls.load(Ordering::SeqCst);
        let mut handshake = ServerUpgrade::new(counting()).origin_policy(policy);
        let result = handshake.receive(wire(origin).as_bytes());
        let called = calls.load(Ordering::SeqCst) - before;
        if expected {
            let done = result.unwrap().expect("complete");
            assert_eq!(done.response.status(), 101, "{origin}");
            assert_eq!(called, 1, "{origin}");
        } else {
            let error = result.unwrap_err();
            assert!(
                matches!(
                    error.handshake_failure(),
                    Some(HandshakeFailure::OriginRefused { .. })
                ),
                "{origin}: {error:?}"
            );
            assert_eq!(called, 0, "{origin}: the callback never runs");
            let answer = error_response_bytes(&error);
            assert!(
                answer.starts_with(b"HTTP/1.1 403 Forbidden\r\n"),
                "{origin}"
            );
        }
    }
    // The default of ServerUpgrade::new is the same-origin policy.
    let mut handshake = ServerUpgrade::new(NoCallback);
    assert!(
        handshake
            .receive(wire("Origin: http://other.example\r\n").as_bytes())
            .is_err()
    );
}

#[test]
fn the_origin_is_checked_after_the_request_is_found_valid() {
    let mut request = upgrade("example.com", &["https://evil.example"]);
    *request.method_mut() = http::Method::POST;
    assert!(matches!(
        upgrade_response(&request),
        Err(HandshakeFailure::BadRequest(_))
    ));
}

#[test]
fn http_server_functions_check_the_origin() {
    let cross = upgrade("example.com", &["https://evil.example"]);
    let own = upgrade("example.com", &["https://example.com"]);
    let error = upgrade_response(&cross).unwrap_err();
    assert!(
        matches!(error, HandshakeFailure::OriginRefused { .. }),
        "{error:?}"
    );
    assert_eq!(upgrade_response(&own).unwrap().status(), 101);
    // tungstenite's name for it.
    let refused = create_response(&cross);
    assert!(
        matches!(
            refused.as_ref().err().and_then(Error::handshake_failure),
            Some(HandshakeFailure::OriginRefused { .. })
        ),
        "{refused:?}"
    );
    assert_eq!(create_response(&own).unwrap().status(), 101);
    // The policy given.
    let evil = OriginPolicy::allow(["https://evil.example"]).unwrap();
    assert!(upgrade_response_with_deflate(&cross, None, &evil).is_ok());
    assert!(upgrade_response_with_deflate(&cross, None, &OriginPolicy::any()).is_ok());
    assert!(upgrade_response_with_deflate(&cross, None, &OriginPolicy::default()).is_err());
}

#[test]
fn absolute_form_targets_name_the_authority() {
    // RFC 9112 section 3.2.2: the target's authority wins over Host.
    let mut request = upgrade("ignored.example", &["https://example.com:8443"]);
    *request.uri_mut() = "https://example.com:8443/chat".parse().unwrap();
    assert!(OriginPolicy::default().check(&request).is_ok());
    *request.uri_mut() = "https://user@example.com:8443/chat".parse().unwrap();
    assert!(OriginPolicy::default().check(&request).is_ok());
    *request.uri_mut() = "https://ignored.example/chat".parse().unwrap();
    assert!(OriginPolicy::default().check(&request).is_err());
}

/// An HTTP/2 extended CONNECT to `uri` (its authority is `:authority`).
fn connect(uri: &str, origin: Option<&str>) -> Request<()> {
    let mut request = Request::connect(uri)
        .version(Version::HTTP_2)
        .header("sec-websocket-version", "13");
    if let Some(origin) = origin {
        request = request.header("origin", origin);
    }
    request.body(()).unwrap()
}

#[test]
fn extended_connect_compares_with_the_authority() {
    let default = OriginPolicy::default();
    let respond = |request: &Request<()>, policy: &OriginPolicy| {
        extended_connect_response(request, Some(WEBSOCKET_PROTOCOL), None, policy)
            .map(|(response, _)| response.status())
    };
    // (URI, Origin, accepted by the default policy)
    let cases = [
        (
            "https://example.com/chat",
            Some("https://example.com"),
            true,
        ),
        (
            "https://example.com:8443/chat",
            Some("https://example.com:8443"),
            true,
        ),
        (
            "https://EXAMPLE.com/chat",
            Some("https://example.com:443"),
            true,
        ),
        ("https://[::1]:8443/chat", Some("https://[::1]:8443"), true),
        ("https://example.com/chat", None, true),
        (
            "https://example.com/chat",
            Some("https://evil.example"),
            false,
        ),
        (
            "https://example.com:8443/chat",
            Some("https://example.com"),
            false,
        ),
        ("https://example.com/chat", Some("null"), false),
    ];
    for (uri, origin, expected) in cases {
        match respond(&connect(uri, origin), &default) {
            Ok(status) => {
                assert!(expected, "{uri} / {origin:?}");
                assert_eq!(status, StatusCode::OK);
            }
            Err(error) => {
                assert!(!expected, "{uri} / {origin:?}: {error}");
                assert!(matches!(error, HandshakeFailure::OriginRefused { .. }));
                assert_eq!(error.to_response(Version::HTTP_2).status(), 403);
            }
        }
    }
    // A Host field does not override :authority.
    let mut request = connect("https://example.com/chat", Some("https://other.example"));
    request
        .headers_mut()
        .insert("host", http::HeaderValue::from_static("other.example"));
    assert!(respond(&request, &default).is_err());
    // Allowed by pattern.
    let policy = OriginPolicy::allow(["https://*.example.com"]).unwrap();
    let request = connect(
        "https://api.example.net/chat",
        Some("https://app.example.com"),
    );
    assert_eq!(respond(&request, &policy).unwrap(), StatusCode::OK);
    assert!(respond(&request, &default).is_err());
}

/// Runs `accept` on the first connection to a new listener; the thread's
/// result is whether it opened a WebSocket.
fn serve_once(
    accept: impl FnOnce(TcpStream) -> Result<WebSocket<TcpStream>, Error> + Send + 'static,
) -> (SocketAddr, thread::JoinHandle<Result<(), Error>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = thread::spawn(move || {
        let (tcp, _) = listener.accept().unwrap();
        accept(tcp).map(drop)
    });
    (addr, server)
}

/// A client upgrade to `addr` sending `origin` (if any): the status it got.
fn client_status(addr: SocketAddr, origin: Option<&str>) -> (u16, String) {
    let mut request = Request::get(format!("ws://{addr}/chat"));
    if let Some(origin) = origin {
        request = request.header("origin", origin);
    }
    let tcp = TcpStream::connect(addr).unwrap();
    match ClientOptions::new()
        .client(request.body(()).unwrap(), tcp)
        .map_err(Error::from)
    {
        Ok((_ws, response)) => (response.status().as_u16(), String::new()),
        Err(Error::Http(response)) => {
            let body = String::from_utf8_lossy(response.body().as_deref().unwrap_or_default());
            (response.status().as_u16(), body.into_owned())
        }
        Err(other) => panic!("{other:?}"),
    }
}

fn is_origin_refused(result: &Result<(), Error>) -> bool {
    matches!(
        result.as_ref().err().and_then(|e| e.handshake_failure()),
        Some(HandshakeFailure::OriginRefused { .. })
    )
}

#[test]
fn blocking_accept_refuses_other_origins_with_403() {
    // tungstenite's entry points keep the default.
    type Accept = fn(TcpStream) -> Result<WebSocket<TcpStream>, Error>;
    let paths: [Accept; 3] = [
        |tcp| lockgate::accept(tcp).map_err(Error::from),
        |tcp| lockgate::accept_with_config(tcp, None).map_err(Error::from),
        |tcp| ServerOptions::new().accept(tcp).map_err(Error::from),
    ];
    for accept_with in paths {
        let (addr, server) = serve_once(accept_with);
        let (status, body) = client_status(addr, Some("https://evil.example"));
        assert_eq!(status, 403);
        assert!(
            body.contains("Origin https://evil.example is not allowed"),
            "{body}"
        );
        assert!(is_origin_refused(&server.join().unwrap()));

        let (addr, server) = serve_once(accept_with);
        let own = format!("http://{addr}");
        assert_eq!(client_status(addr, Some(&own)).0, 101);
        server.join().unwrap().unwrap();

        let (addr, server) = serve_once(accept_with);
        assert_eq!(client_status(addr, None).0, 101);
        server.join().unwrap().unwrap();
    }
}

#[test]
fn blocking_callbacks_never_see_a_refused_upgrade() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counting = |calls: &Arc<AtomicUsize>| {
        let calls = Arc::clone(calls);
        move |_: &Request<()>, response: Response<()>| {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok(response)
        }
    };
    let callback = counting(&calls);
    let (addr, server) =
        serve_once(move |tcp| lockgate::accept_hdr(tcp, callback).map_err(Error::from));
    assert_eq!(client_status(addr, Some("http://localhost:1")).0, 403);
    assert!(is_origin_refused(&server.join().unwrap()));
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    let callback = counting(&calls);
    let (addr, server) = serve_once(move |tcp| {
        ServerOptions::new()
            .callback(callback)
            .accept(tcp)
            .map_err(Error::from)
    });
    assert_eq!(client_status(addr, Some("null")).0, 403);
    assert!(is_origin_refused(&server.join().unwrap()));
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    let callback = counting(&calls);
    let (addr, server) =
        serve_once(move |tcp| lockgate::accept_hdr(tcp, callback).map_err(Error::from));
    assert_eq!(client_status(addr, Some(&format!("http://{addr}"))).0, 101);
    server.join().unwrap().unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn server_options_take_a_policy() {
    let allow = OriginPolicy::allow(["https://*.example.com", "http://localhost:*"]).unwrap();
    let options = ServerOptions::new().origin_policy(allow.clone());
    assert_eq!(options.get_origin_policy(), &allow);
    // (Origin, status)
    let cases = [
        ("https://app.example.com", 101),
        ("http://localhost:5173", 101),
        ("https://example.com", 403),
        ("https://evil.example", 403),
    ];
    for (origin, status) in cases {
        let options = options.clone();
        let (addr, server) = serve_once(move |tcp| options.accept(tcp).map_err(Error::from));
        assert_eq!(client_status(addr, Some(origin)).0, status, "{origin}");
        let result = server.join().unwrap();
        assert_eq!(result.is_ok(), status == 101, "{origin}: {result:?}");
    }
    let (addr, server) = serve_once(|tcp| {
        ServerOptions::new()
            .origin_policy(OriginPolicy::any())
            .accept(tcp)
            .map_err(Error::from)
    });
    assert_eq!(client_status(addr, Some("https://evil.example")).0, 101);
    server.join().unwrap().unwrap();
}
