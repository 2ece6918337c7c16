//! The sans-IO opening handshake: requests and responses as bytes, checked
//! from the outside through the public API.

#![allow(
    clippy::result_large_err,
    reason = "callbacks return ErrorResponse by value"
)]

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::header::{HeaderValue, SEC_WEBSOCKET_PROTOCOL};
use http::{Request, Response, StatusCode};
use lockgate::error::SubProtocolError;
use lockgate::handshake::{
    ClientUpgrade, ClientUpgradeDone, ErrorResponse, HandshakeLimits, IntoClientRequest,
    NoCallback, ServerUpgrade, ServerUpgradeDone, derive_accept_key, error_response_bytes,
    generate_key,
};
use lockgate::{Detail, Error, HandshakeFailure, ProtocolError};

/// The key of RFC 6455 section 1.3 and its accept value.
const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";
const ACCEPT: &str = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

/// A valid upgrade request offering two subprotocols.
const REQUEST: &str = "GET /chat?room=1 HTTP/1.1\r\n\
                       Host: example.com:8080\r\n\
                       Upgrade: websocket\r\n\
                       Connection: Upgrade\r\n\
                       Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
                       Sec-WebSocket-Version: 13\r\n\
                       Sec-WebSocket-Protocol: chat, superchat\r\n\
                       \r\n";

/// A masked text frame "Hello" (RFC 6455 section 5.7).
const CLIENT_FRAME: &[u8] = &[
    0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58,
];
/// An unmasked text frame "Hello".
const SERVER_FRAME: &[u8] = &[0x81, 0x05, b'H', b'e', b'l', b'l', b'o'];

fn replace(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{from:?} not in {text:?}");
    text.replacen(from, to, 1)
}

/// Parses request bytes with httparse; returns (target, headers).
fn parse_request(bytes: &[u8]) -> (String, Vec<(String, String)>) {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut request = httparse::Request::new(&mut headers);
    let status = request.parse(bytes).expect("valid HTTP");
    assert_eq!(
        status,
        httparse::Status::Complete(bytes.len()),
        "exactly one head"
    );
    assert_eq!(request.method, Some("GET"));
    assert_eq!(request.version, Some(1));
    let headers = request
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_owned(),
                String::from_utf8(h.value.to_vec()).unwrap(),
            )
        })
        .collect();
    (request.path.unwrap().to_owned(), headers)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Vec<&'a str> {
    headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
        .collect()
}

fn failure<T: std::fmt::Debug>(result: Result<T, Error>) -> Error {
    match result {
        Err(error) => error,
        Ok(value) => panic!("expected an error, got {value:?}"),
    }
}

/// A response (or request) the handshake refused: tungstenite's variant
/// where it has one for the condition, else lockgate's own reason.
fn refused<T: std::fmt::Debug>(result: &Result<T, Error>) -> bool {
    match result {
        Err(Error::Protocol(_)) => true,
        Err(error) => error.handshake_failure().is_some(),
        Ok(value) => panic!("expected an error, got {value:?}"),
    }
}

fn handshake_error<T: std::fmt::Debug>(result: Result<T, Error>) -> HandshakeFailure {
    match result.map_err(Error::into_detail) {
        Err(Ok(Detail::Handshake(error))) => error,
        other => panic!("expected a handshake error, got {other:?}"),
    }
}

// ---------------------------------------------------------------- keys

#[test]
fn accept_key_matches_rfc_6455_example() {
    assert_eq!(derive_accept_key(KEY.as_bytes()), ACCEPT);
}

#[test]
fn generated_keys_are_fresh_16_byte_nonces() {
    let a = generate_key();
    let b = generate_key();
    assert_eq!(STANDARD.decode(&a).unwrap().len(), 16);
    assert_ne!(a, b);
}

// ---------------------------------------------------------------- client request

#[test]
fn client_request_from_url() {
    let handshake = ClientUpgrade::new("ws://example.com:8080/chat?x=1").unwrap();
    let (target, headers) = parse_request(handshake.request_bytes());
    assert_eq!(target, "/chat?x=1");
    assert_eq!(
        headers[0],
        ("Host".to_owned(), "example.com:8080".to_owned()),
        "Host comes first"
    );
    assert_eq!(header(&headers, "connection"), ["Upgrade"]);
    assert_eq!(header(&headers, "upgrade"), ["websocket"]);
    assert_eq!(header(&headers, "sec-websocket-version"), ["13"]);
    let key = header(&headers, "sec-websocket-key");
    assert_eq!(key.len(), 1);
    assert_eq!(STANDARD.decode(key[0]).expect("base64").len(), 16);
    assert_eq!(headers.len(), 5);
    // The request object says the same as the bytes.
    assert_eq!(handshake.request().headers()["sec-websocket-key"], key[0]);
    assert_eq!(handshake.request().uri(), "ws://example.com:8080/chat?x=1");
}

#[test]
fn client_request_omits_default_ports() {
    for (url, host, target) in [
        ("ws://example.com:80", "example.com", "/"),
        ("wss://example.com:443/a", "example.com", "/a"),
        ("wss://example.com:80/", "example.com:80", "/"),
        ("ws://127.0.0.1:9001?x", "127.0.0.1:9001", "/?x"),
    ] {
        let handshake = ClientUpgrade::new(url.to_owned()).unwrap();
        let (actual_target, headers) = parse_request(handshake.request_bytes());
        assert_eq!(header(&headers, "host"), [host], "{url}");
        assert_eq!(actual_target, target, "{url}");
    }
}

#[test]
fn client_request_keeps_caller_headers() {
    let request = Request::builder()
        .uri("wss://example.com/feed")
        .header("Origin", "https://example.com")
        .header("Authorization", "Bearer abc")
        .header("Sec-WebSocket-Protocol", "v2.feed")
        .header("Sec-WebSocket-Protocol", "v1.feed")
        .header("Sec-WebSocket-Key", KEY)
        .header("Connection", "keep-alive, Upgrade")
        .body(())
        .unwrap();
    let handshake = ClientUpgrade::new(request).unwrap();
    let (target, headers) = parse_request(handshake.request_bytes());
    assert_eq!(target, "/feed");
    assert_eq!(header(&headers, "host"), ["example.com"]);
    assert_eq!(header(&headers, "origin"), ["https://example.com"]);
    assert_eq!(header(&headers, "authorization"), ["Bearer abc"]);
    assert_eq!(
        header(&headers, "sec-websocket-protocol"),
        ["v2.feed", "v1.feed"]
    );
    assert_eq!(header(&headers, "sec-websocket-key"), [KEY]);
    assert_eq!(header(&headers, "connection"), ["keep-alive, Upgrade"]);
    assert_eq!(header(&headers, "upgrade"), ["websocket"]);
    assert_eq!(header(&headers, "sec-websocket-version"), ["13"]);
}

#[test]
fn every_url_form_is_accepted() {
    let uri: http::Uri = "ws://example.com/a".parse().unwrap();
    let string = String::from("ws://example.com/a");
    let requests = [
        "ws://example.com/a".into_client_request().unwrap(),
        string.clone().into_client_request().unwrap(),
        (&string).into_client_request().unwrap(),
        (&uri).into_client_request().unwrap(),
        uri.into_client_request().unwrap(),
    ];
    for request in requests {
        assert_eq!(request.uri().path(), "/a");
        assert_eq!(request.headers()["host"], "example.com");
    }
}

#[test]
fn client_rejects_unusable_urls() {
    for url in [
        "http://example.com/",
        "https://example.com/",
        "example.com",
        "ws://exa mple.com/",
        "ws://a/#x",
        "",
    ] {
        let result = ClientUpgrade::new(url);
        assert!(
            matches!(result, Err(Error::Url(_)))
                || matches!(
                    result.as_ref().err().and_then(Error::detail),
                    Some(Detail::InvalidUrl(_))
                ),
            "{url:?}: {result:?}"
        );
    }
}

// ---------------------------------------------------------------- client response

/// A client handshake with the RFC key, offering `chat` and `superchat`.
fn client() -> ClientUpgrade {
    let request = Request::get("ws://example.com/chat")
        .header("Sec-WebSocket-Key", KEY)
        .header("Sec-WebSocket-Protocol", "chat, superchat")
        .body(())
        .unwrap();
    ClientUpgrade::new(request).unwrap()
}

const RESPONSE: &str = "HTTP/1.1 101 Switching Protocols\r\n\
                        Upgrade: websocket\r\n\
                        Connection: Upgrade\r\n\
                        Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\
                        \r\n";

fn client_receives(response: &str) -> Result<Option<ClientUpgradeDone>, Error> {
    client().receive(response.as_bytes())
}

#[test]
fn client_accepts_101_and_keeps_early_frames() {
    let mut input = RESPONSE.as_bytes().to_vec();
    input.extend_from_slice(SERVER_FRAME);
    let done = client().receive(&input).unwrap().expect("complete");
    assert_eq!(done.response.status(), StatusCode::SWITCHING_PROTOCOLS);
    assert_eq!(&done.leftover[..], SERVER_FRAME);

    // Byte by byte: nothing until the head's last byte, then the frame
    // bytes that came with that byte (none) are the leftover.
    let mut handshake = client();
    let head_len = RESPONSE.len();
    for byte in &input[..head_len - 1] {
        assert!(
            handshake
                .receive(std::slice::from_ref(byte))
                .unwrap()
                .is_none()
        );
    }
    let mut last = vec![input[head_len - 1]];
    last.extend_from_slice(&SERVER_FRAME[..3]);
    let done = handshake.receive(&last).unwrap().expect("complete");
    assert_eq!(&done.leftover[..], &SERVER_FRAME[..3]);
}

#[test]
fn client_accepts_offered_protocol_and_loose_header_forms() {
    let response = replace(RESPONSE, "Upgrade: websocket", "upgrade: WebSocket");
    let response = replace(
        &response,
        "Connection: Upgrade",
        "connection: keep-alive, upgrade",
    );
    let response = replace(
        &response,
        "\r\n\r\n",
        "\r\nSec-WebSocket-Protocol: superchat\r\n\r\n",
    );
    let done = client_receives(&response).unwrap().unwrap();
    assert_eq!(done.response.headers()[SEC_WEBSOCKET_PROTOCOL], "superchat");
}

#[test]
fn client_reports_non_101_with_its_body() {
    let response = "HTTP/1.1 403 Forbidden\r\nContent-Length: 6\r\n\r\ndenied";
    match failure(client_receives(response)) {
        Error::Http(response) => {
            assert_eq!(response.status(), StatusCode::FORBIDDEN);
            assert_eq!(response.headers()["content-length"], "6");
            assert_eq!(response.body().as_deref(), Some(&b"denied"[..]));
        }
        other => panic!("{other:?}"),
    }
    match failure(client_receives("HTTP/1.1 200 OK\r\n\r\n")) {
        Error::Http(response) => {
            assert_eq!(response.status(), StatusCode::OK);
            assert_eq!(response.body(), &None);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn client_rejects_invalid_101_responses() {
    let with = |extra: &str| replace(RESPONSE, "\r\n\r\n", &format!("\r\n{extra}\r\n\r\n"));
    let cases = [
        (
            "no Upgrade",
            replace(RESPONSE, "Upgrade: websocket\r\n", ""),
        ),
        (
            "wrong Upgrade",
            replace(RESPONSE, "Upgrade: websocket", "Upgrade: h2c"),
        ),
        (
            "no Connection",
            replace(RESPONSE, "Connection: Upgrade\r\n", ""),
        ),
        (
            "Connection without upgrade",
            replace(RESPONSE, "Connection: Upgrade", "Connection: keep-alive"),
        ),
        (
            "no accept",
            replace(RESPONSE, &format!("Sec-WebSocket-Accept: {ACCEPT}\r\n"), ""),
        ),
        (
            "wrong accept",
            replace(RESPONSE, ACCEPT, "AAAAAAAAAAAAAAAAAAAAAAAAAAA="),
        ),
        ("unoffered protocol", with("Sec-WebSocket-Protocol: mqtt")),
        (
            "protocol list",
            with("Sec-WebSocket-Protocol: chat, superchat"),
        ),
        (
            "unexpected extension",
            with("Sec-WebSocket-Extensions: permessage-deflate"),
        ),
    ];
    for (case, response) in cases {
        let result = client_receives(&response);
        assert!(refused(&result), "{case}: {result:?}");
    }
    // A protocol when none was offered.
    let mut plain = ClientUpgrade::new(
        Request::get("ws://example.com/")
            .header("Sec-WebSocket-Key", KEY)
            .body(())
            .unwrap(),
    )
    .unwrap();
    let error = failure(plain.receive(with("Sec-WebSocket-Protocol: chat").as_bytes()));
    assert!(
        matches!(
            error,
            Error::Protocol(ProtocolError::SecWebSocketSubProtocolError(
                SubProtocolError::ServerSentSubProtocolNoneRequested
            ))
        ),
        "{error:?}"
    );
}

#[test]
fn client_rejects_garbage_and_oversized_responses() {
    let error = failure(client_receives("HTTP/1.1 abc Nope\r\n\r\n"));
    assert!(
        matches!(error, Error::Protocol(ProtocolError::HttparseError(_))),
        "{error:?}"
    );
    let huge = format!(
        "HTTP/1.1 101 Switching Protocols\r\nX: {}\r\n\r\n",
        "a".repeat(65 * 1024)
    );
    let error = handshake_error(client_receives(&huge));
    assert!(matches!(error, HandshakeFailure::HeadTooLarge), "{error:?}");
}

// ---------------------------------------------------------------- server

fn server_receives(request: &str) -> Result<Option<ServerUpgradeDone>, Error> {
    ServerUpgrade::new(NoCallback).receive(request.as_bytes())
}

/// The status of the answer a server writes for `request`.
fn server_status(request: &[u8]) -> StatusCode {
    let error = failure(ServerUpgrade::new(NoCallback).receive(request));
    let (status, _, _) = parse_response(&error_response_bytes(&error));
    StatusCode::from_u16(status).unwrap()
}

fn parse_response(bytes: &[u8]) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut response = httparse::Response::new(&mut headers);
    let httparse::Status::Complete(len) = response.parse(bytes).expect("valid HTTP") else {
        panic!("incomplete response {:?}", String::from_utf8_lossy(bytes));
    };
    let headers = response
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_owned(),
                String::from_utf8(h.value.to_vec()).unwrap(),
            )
        })
        .collect();
    (response.code.unwrap(), headers, bytes[len..].to_vec())
}

#[test]
fn server_accepts_a_request_in_one_piece() {
    let done = server_receives(REQUEST).unwrap().expect("complete");
    assert_eq!(done.request.uri(), "/chat?room=1");
    assert_eq!(done.request.headers()["host"], "example.com:8080");
    assert_eq!(done.response.status(), StatusCode::SWITCHING_PROTOCOLS);
    let (status, headers, rest) = parse_response(&done.response_bytes);
    assert_eq!(status, 101);
    assert_eq!(header(&headers, "sec-websocket-accept"), [ACCEPT]);
    assert_eq!(header(&headers, "upgrade"), ["websocket"]);
    assert_eq!(header(&headers, "connection"), ["Upgrade"]);
    assert!(
        header(&headers, "sec-websocket-protocol").is_empty(),
        "no protocol chosen by default"
    );
    assert!(rest.is_empty());
    assert!(done.leftover.is_empty());
}

#[test]
fn server_accepts_a_request_one_byte_at_a_time() {
    let mut input = REQUEST.as_bytes().to_vec();
    input.extend_from_slice(CLIENT_FRAME);
    let whole = ServerUpgrade::new(NoCallback)
        .receive(&input)
        .unwrap()
        .unwrap();
    assert_eq!(
        &whole.leftover[..],
        CLIENT_FRAME,
        "frames after the head are kept"
    );

    let mut handshake = ServerUpgrade::new(NoCallback);
    for (i, byte) in input.iter().enumerate() {
        match handshake.receive(std::slice::from_ref(byte)).unwrap() {
            None => assert!(i + 1 < REQUEST.len(), "still waiting after the head at {i}"),
            Some(done) => {
                assert_eq!(i + 1, REQUEST.len(), "complete exactly at the empty line");
                assert_eq!(done.response_bytes, whole.response_bytes);
                assert_eq!(done.request.headers(), whole.request.headers());
                assert!(done.leftover.is_empty());
                return;
            }
        }
    }
    panic!("never completed");
}

#[test]
fn server_accepts_a_60_kib_head_byte_by_byte() {
    let mut request = REQUEST.trim_end_matches("\r\n").to_owned() + "\r\n";
    for i in 0..94 {
        request.push_str(&format!("X-Filler-{i:02}: {}\r\n", "v".repeat(640)));
    }
    request.push_str("\r\n");
    assert!(request.len() > 60 * 1024 && request.len() < 64 * 1024);
    let mut handshake = ServerUpgrade::new(NoCallback);
    let mut done = None;
    for byte in request.as_bytes() {
        if let Some(d) = handshake.receive(std::slice::from_ref(byte)).unwrap() {
            done = Some(d);
        }
    }
    assert_eq!(done.expect("complete").request.headers().len(), 100);
}

#[test]
fn bad_requests_get_400() {
    let cases = [
        ("method", replace(REQUEST, "GET", "POST")),
        ("HTTP/1.0", replace(REQUEST, "HTTP/1.1", "HTTP/1.0")),
        (
            "missing host",
            replace(REQUEST, "Host: example.com:8080\r\n", ""),
        ),
        (
            "missing upgrade",
            replace(REQUEST, "Upgrade: websocket\r\n", ""),
        ),
        (
            "upgrade without websocket",
            replace(REQUEST, "Upgrade: websocket", "Upgrade: h2c"),
        ),
        (
            "missing connection",
            replace(REQUEST, "Connection: Upgrade\r\n", ""),
        ),
        (
            "connection without upgrade",
            replace(REQUEST, "Connection: Upgrade", "Connection: keep-alive"),
        ),
        (
            "missing key",
            replace(REQUEST, &format!("Sec-WebSocket-Key: {KEY}\r\n"), ""),
        ),
        (
            "short key",
            replace(REQUEST, KEY, "AAAAAAAAAAAAAAAAAAAAAA==AA"),
        ),
        (
            "15-byte key",
            replace(REQUEST, KEY, &STANDARD.encode([7u8; 15])),
        ),
        (
            "17-byte key",
            replace(REQUEST, KEY, &STANDARD.encode([7u8; 17])),
        ),
        (
            "malformed",
            "GET /chat HTTP/1.1\r\nHost example.com\r\n\r\n".to_owned(),
        ),
        (
            "bad version syntax",
            replace(REQUEST, "HTTP/1.1", "HTTP/2.0"),
        ),
    ];
    for (case, request) in cases {
        assert_eq!(
            server_status(request.as_bytes()),
            StatusCode::BAD_REQUEST,
            "{case}"
        );
        let (status, headers, body) =
            parse_response(&error_response_bytes(&failure(server_receives(&request))));
        assert_eq!(status, 400, "{case}");
        assert_eq!(header(&headers, "connection"), ["close"], "{case}");
        assert_eq!(
            header(&headers, "content-length"),
            [body.len().to_string().as_str()],
            "{case}"
        );
    }
}

#[test]
fn wrong_version_gets_426_with_the_supported_version() {
    let request = replace(
        REQUEST,
        "Sec-WebSocket-Version: 13",
        "Sec-WebSocket-Version: 8",
    );
    // tungstenite's variant for it, answered as RFC 6455 asks.
    let error = failure(server_receives(&request));
    assert!(
        matches!(
            error,
            Error::Protocol(ProtocolError::MissingSecWebSocketVersionHeader)
        ),
        "{error:?}"
    );
    assert_eq!(
        HandshakeFailure::UnsupportedVersion.status(),
        StatusCode::UPGRADE_REQUIRED
    );
    let (status, headers, _) = parse_response(&error_response_bytes(&error));
    assert_eq!(status, 426);
    assert_eq!(header(&headers, "sec-websocket-version"), ["13"]);
    assert!(header(&headers, "connection")[0].contains("close"));
}

#[test]
fn oversized_heads_get_431() {
    // A 70 KiB head of ordinary lines.
    let mut big = REQUEST.trim_end_matches("\r\n").to_owned() + "\r\n";
    for i in 0..90 {
        big.push_str(&format!("X-Filler-{i:02}: {}\r\n", "v".repeat(780)));
    }
    big.push_str("\r\n");
    assert!(big.len() > 70 * 1024);
    // One header line of `len` bytes.
    let line = |len: usize| {
        replace(
            REQUEST,
            "\r\n\r\n",
            &format!("\r\nX-Long: {}\r\n\r\n", "v".repeat(len - 8)),
        )
    };
    // `fields` header fields (6 real ones and fillers).
    let fields = |fields: usize| {
        let mut many = REQUEST.trim_end_matches("\r\n").to_owned() + "\r\n";
        for i in 6..fields {
            many.push_str(&format!("X-{i}: v\r\n"));
        }
        many + "\r\n"
    };
    let defaults = HandshakeLimits::default();
    let short_lines = defaults.max_line_size(8 * 1024);
    let hundred = defaults.max_headers(100);
    // Within the limits (tungstenite's by default: no line limit of its
    // own, 124 fields): accepted.
    for (case, limits, request) in [
        ("a 9 KiB line", defaults, line(9 * 1024)),
        ("an 8 KiB line, at most 8 KiB", short_lines, line(8 * 1024)),
        ("124 fields", defaults, fields(124)),
        ("100 fields, at most 100", hundred, fields(100)),
    ] {
        let mut handshake = ServerUpgrade::new(NoCallback).handshake_limits(limits);
        let done = handshake.receive(request.as_bytes());
        assert!(matches!(done, Ok(Some(_))), "{case}: {done:?}");
    }
    for (case, limits, request) in [
        ("70 KiB", defaults, big),
        ("a 65 KiB line", defaults, line(65 * 1024)),
        ("a 9 KiB line, at most 8 KiB", short_lines, line(9 * 1024)),
        ("125 fields", defaults, fields(125)),
        ("101 fields, at most 100", hundred, fields(101)),
    ] {
        let mut handshake = ServerUpgrade::new(NoCallback).handshake_limits(limits);
        let error = handshake_error(handshake.receive(request.as_bytes()));
        assert!(
            matches!(error, HandshakeFailure::HeadTooLarge),
            "{case}: {error:?}"
        );
        // Fed in pieces, the limit trips the same way.
        let mut handshake = ServerUpgrade::new(NoCallback).handshake_limits(limits);
        let mut outcome = None;
        for piece in request.as_bytes().chunks(1000) {
            match handshake.receive(piece) {
                Ok(None) => {}
                other => {
                    outcome = Some(handshake_error(other));
                    break;
                }
            }
        }
        let error = outcome.expect("an error");
        assert!(
            matches!(error, HandshakeFailure::HeadTooLarge),
            "{case}: {error:?}"
        );
        let (status, _, _) = parse_response(&error_response_bytes(&Error::from(error)));
        assert_eq!(status, 431, "{case}");
    }
}

#[test]
fn callback_adds_a_subprotocol_the_client_sees() {
    let mut client = client();
    let mut server = ServerUpgrade::new(|request: &Request<()>, mut response: Response<()>| {
        let offers = request.headers()["sec-websocket-protocol"]
            .to_str()
            .unwrap();
        assert_eq!(offers, "chat, superchat");
        response.headers_mut().insert(
            SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static("superchat"),
        );
        Ok(response)
    });
    let mut wire = client.request_bytes().to_vec();
    wire.extend_from_slice(CLIENT_FRAME);
    let accepted = server.receive(&wire).unwrap().unwrap();
    assert_eq!(&accepted.leftover[..], CLIENT_FRAME);

    let mut wire = accepted.response_bytes.clone();
    wire.extend_from_slice(SERVER_FRAME);
    let opened = client.receive(&wire).unwrap().unwrap();
    assert_eq!(
        opened.response.headers()[SEC_WEBSOCKET_PROTOCOL],
        "superchat"
    );
    assert_eq!(&opened.leftover[..], SERVER_FRAME);
}

#[test]
fn callback_rejects_with_403_and_a_body() {
    let mut server = ServerUpgrade::new(|request: &Request<()>, _response: Response<()>| {
        assert_eq!(request.uri().path(), "/chat");
        let mut refusal = ErrorResponse::new(Some("no chat for you".to_owned()));
        *refusal.status_mut() = StatusCode::FORBIDDEN;
        refusal
            .headers_mut()
            .insert("x-policy", HeaderValue::from_static("closed"));
        Err(refusal)
    });
    let error = failure(server.receive(REQUEST.as_bytes()));
    assert!(
        matches!(&error, Error::Http(response) if response.status() == StatusCode::FORBIDDEN
            && response.body().as_deref() == Some(&b"no chat for you"[..]))
    );
    let bytes = error_response_bytes(&error);
    let (status, headers, body) = parse_response(&bytes);
    assert_eq!(status, 403);
    assert!(bytes.starts_with(b"HTTP/1.1 403 Forbidden\r\n"));
    assert_eq!(header(&headers, "x-policy"), ["closed"]);
    assert_eq!(header(&headers, "connection"), ["close"]);
    assert_eq!(header(&headers, "content-length"), ["15"]);
    assert_eq!(body, b"no chat for you");

    // The client sees the refusal as an unexpected response with the body.
    match failure(client().receive(&bytes)) {
        Error::Http(response) => {
            assert_eq!(response.status(), StatusCode::FORBIDDEN);
            assert_eq!(response.body().as_deref(), Some(&b"no chat for you"[..]));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn callback_choosing_an_unoffered_protocol_is_a_server_error() {
    let mut server = ServerUpgrade::new(|_: &Request<()>, mut response: Response<()>| {
        response
            .headers_mut()
            .insert(SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static("mqtt"));
        Ok(response)
    });
    let error = handshake_error(server.receive(REQUEST.as_bytes()));
    assert_eq!(error.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let (status, _, _) = parse_response(&error_response_bytes(&Error::from(error)));
    assert_eq!(status, 500);
}

// ---------------------------------------------------------------- garbage

/// A fixed-seed linear congruential generator (Knuth's MMIX constants).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const PIECES: &[&str] = &[
    "GET",
    "HTTP/1.1",
    "HTTP/1.0",
    "HTTP/1.1 101 Switching Protocols",
    " ",
    "/",
    "\r\n",
    "\n",
    "\r",
    ":",
    ",",
    "Host",
    "Upgrade",
    "websocket",
    "Connection",
    "upgrade",
    "Sec-WebSocket-Key",
    KEY,
    "Sec-WebSocket-Version",
    "13",
    "Sec-WebSocket-Accept",
    ACCEPT,
    "Sec-WebSocket-Protocol",
    "chat",
    "\0",
    "\x7f",
    "é",
    "\t",
];

/// A pseudo-random input: raw bytes, HTTP-ish tokens, or a mutated `valid`.
fn garbage(rng: &mut Lcg, valid: &[u8]) -> Vec<u8> {
    match rng.below(4) {
        0 => (0..rng.below(300)).map(|_| rng.next() as u8).collect(),
        1 => {
            let mut out = Vec::new();
            for _ in 0..rng.below(80) {
                out.extend_from_slice(PIECES[rng.below(PIECES.len())].as_bytes());
            }
            out
        }
        2 => {
            let mut out = valid.to_vec();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(out.len() + 1);
                match rng.below(3) {
                    0 if at < out.len() => out[at] = rng.next() as u8,
                    1 if at < out.len() => {
                        out.remove(at);
                    }
                    _ => out.insert(at, rng.next() as u8),
                }
            }
            out
        }
        _ => {
            // Valid start, then a long run that may cross the limits.
            let mut out = valid[..valid.len() - 2].to_vec();
            let unit = PIECES[rng.below(PIECES.len())].as_bytes();
            for _ in 0..rng.below(12_000) {
                out.extend_from_slice(unit);
            }
            out
        }
    }
}

/// What feeding produced: the outcome (Debug-formatted) and, once
/// complete, the leftover plus the bytes that were never fed, which must
/// equal what a single feed leaves over.
fn feed<T: std::fmt::Debug>(
    input: &[u8],
    chunks: &mut dyn FnMut() -> usize,
    mut receive: impl FnMut(&[u8]) -> Result<Option<T>, Error>,
    leftover: impl Fn(&T) -> Vec<u8>,
) -> (String, Vec<u8>) {
    let mut at = 0;
    while at < input.len() {
        let end = at.saturating_add(chunks()).min(input.len());
        match receive(&input[at..end]) {
            Ok(None) => at = end,
            Ok(Some(done)) => {
                let mut rest = leftover(&done);
                rest.extend_from_slice(&input[end..]);
                return ("complete".to_owned(), rest);
            }
            Err(error) => {
                // Whatever failed, the answer is well-formed HTTP.
                let (status, _, _) = parse_response(&error_response_bytes(&error));
                if let Some(failure) = error.handshake_failure() {
                    assert_eq!(status, failure.status().as_u16());
                }
                // What arrived before the answer was known depends on the
                // split; that it is not HTTP does not.
                if let Some(HandshakeFailure::NotHttp(_)) = error.handshake_failure() {
                    return ("NotHttp".to_owned(), Vec::new());
                }
                // Named by the handshake failure where there is one.
                return match error.handshake_failure() {
                    Some(failure) => (format!("Handshake({failure:?})"), Vec::new()),
                    None => (format!("{error:?}"), Vec::new()),
                };
            }
        }
    }
    ("pending".to_owned(), Vec::new())
}

#[test]
fn garbage_never_panics_and_splitting_never_matters() {
    let mut rng = Lcg(0x5eed_1ee7);
    let mut outcomes = std::collections::BTreeMap::<String, usize>::new();
    for round in 0..400 {
        let server_side = round % 2 == 0;
        let valid = if server_side { REQUEST } else { RESPONSE };
        let input = garbage(&mut rng, valid.as_bytes());
        let sizes: Vec<usize> = (0..input.len() + 1)
            .map(|_| 1 + rng.below(if round % 3 == 0 { 4 } else { 64 }))
            .collect();
        let mut size = sizes.iter().copied();
        let mut split_size = || size.next().unwrap_or(1);
        let (whole, split) = if server_side {
            let (mut once, mut pieces) = (
                ServerUpgrade::new(NoCallback),
                ServerUpgrade::new(NoCallback),
            );
            let leftover = |done: &ServerUpgradeDone| -> Vec<u8> { done.leftover.to_vec() };
            (
                feed(&input, &mut || usize::MAX, |b| once.receive(b), leftover),
                feed(&input, &mut split_size, |b| pieces.receive(b), leftover),
            )
        } else {
            let (mut once, mut pieces) = (client(), client());
            let leftover = |done: &ClientUpgradeDone| -> Vec<u8> { done.leftover.to_vec() };
            (
                feed(&input, &mut || usize::MAX, |b| once.receive(b), leftover),
                feed(&input, &mut split_size, |b| pieces.receive(b), leftover),
            )
        };
        assert_eq!(
            whole,
            split,
            "round {round}: {:?}",
            String::from_utf8_lossy(&input)
        );
        let kind = whole
            .0
            .split(['(', ')', ' '])
            .filter(|part| !part.is_empty())
            .take(2)
            .collect::<Vec<_>>()
            .join(" ");
        *outcomes.entry(kind).or_default() += 1;
    }
    // The generator reaches every outcome, so the loop tests something.
    let kinds: Vec<&String> = outcomes.keys().collect();
    for expected in [
        "complete",
        "pending",
        "Protocol HttparseError",
        "Handshake HeadTooLarge",
        "Handshake BadRequest",
        "Protocol WrongHttpMethod",
        "Protocol SecWebSocketAcceptKeyMismatch",
    ] {
        assert!(
            kinds.iter().any(|k| k.as_str() == expected),
            "{expected} not reached: {outcomes:?}"
        );
    }
}
