//! The opening handshake over real sockets on 127.0.0.1: a handshake that
//! cannot succeed ends, with a `TimeoutKind::Handshake` timeout for a silent peer
//! at the deadline, and at once for input that cannot be a WebSocket
//! handshake (a server answers it with an HTTP error and closes the
//! connection). The misbehaving peers are the kit's, on threads of their
//! own. Both sides accept a head with as many header fields as their
//! [`HandshakeLimits`] allow (124 by default, tungstenite's number) and
//! refuse one more (a server with 431). Run by
//! [`handshake_suite!`](crate::handshake_suite).
//!
//! No assertion reads a clock: the error's kind says whether the deadline
//! ended the handshake (`Timeout(Handshake)`) or a refusal did
//! (`Handshake`), and the peers' own read timeouts ([`SOON`]) are hang
//! guards, so a handshake that waits when it should refuse, or never
//! times out, fails with another error or a peer's panic. When the
//! deadline falls is asserted on simulated time (the handshake's unit
//! tests and tokio-lockgate's paused-clock tests).

use std::net::TcpListener;
use std::thread;
use std::time::Instant;

use lockgate::handshake::HandshakeLimits;
use lockgate::{ClientOptions, Config, Error, HandshakeFailure, ServerOptions, TimeoutKind};

use super::Sockets;
use crate::{
    SOON, answer_once, deadline_config, not_a_request, not_a_response, read_until_closed,
    send_and_read_answer, silent_client,
};

/// No handshake deadline: only the peer's bytes can end the handshake.
fn no_deadline() -> Config {
    Config::default().handshake_timeout(None)
}

fn is_handshake_timeout(error: &Error) -> bool {
    error.timeout() == Some(TimeoutKind::Handshake)
}

/// A server drops a client that never sends its request at the handshake
/// deadline, without a word.
pub fn accept_drops_a_silent_client_at_the_deadline<D: Sockets>() {
    let (mut client, server) = silent_client();
    // The hang guard: a deadline that never fires ends in an I/O error.
    let guard = super::HangGuard::on(server.try_clone().unwrap(), SOON);
    let started = Instant::now();
    let options = ServerOptions::new().config(deadline_config());
    let error = D::accept(server, options)
        .map(drop)
        .expect_err("a silent client cannot be accepted");
    println!("accept: {error:?} after {:?}", started.elapsed());
    drop(guard);
    assert!(is_handshake_timeout(&error), "{error:?}");
    assert!(
        read_until_closed(&mut client).is_empty(),
        "dropped without a word"
    );
}

/// A handshake's refusal: tungstenite's variant where it has one for the
/// condition (`Protocol(WrongHttpMethod)`, `Protocol(HttparseError(_))`),
/// else lockgate's [`HandshakeFailure`](lockgate::HandshakeFailure).
fn is_refusal(error: &Error) -> bool {
    error.handshake_failure().is_some() || matches!(error, Error::Protocol(_))
}

/// A server answers what cannot be an upgrade request with the right HTTP
/// error and `Connection: close` at once: with no deadline at all, so only
/// the refusal can end the handshake (the client's hang guard fails a
/// server that waits instead).
pub fn a_server_refuses_what_is_not_a_request_at_once<D: Sockets>() {
    for (what, bytes, status) in not_a_request() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = thread::spawn(move || {
            let (tcp, _) = listener.accept().unwrap();
            let options = ServerOptions::new().config(no_deadline());
            D::accept(tcp, options).map(drop)
        });
        let answer = send_and_read_answer(addr, &bytes);
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with(status), "{what}: {answer:?}");
        assert!(answer.contains("\r\nConnection: close\r\n"), "{what}");
        let result = server.join().unwrap();
        assert!(
            result.as_ref().err().is_some_and(is_refusal),
            "{what}: {result:?}"
        );
    }
}

/// A client fails at once on what cannot be an upgrade response: with no
/// deadline at all, and the server keeps the connection open, so only
/// the refusal ends the handshake (the server's hang guard panics if the
/// client does not close first).
pub fn a_client_refuses_what_is_not_a_response_at_once<D: Sockets>() {
    for (what, answer) in not_a_response() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("ws://{}/", listener.local_addr().unwrap());
        let server = answer_once(listener, answer);
        let options = ClientOptions::new().config(no_deadline());
        let result = D::dial_and_echo(&url, options, what);
        assert!(
            result.as_ref().err().is_some_and(is_refusal),
            "{what}: {:?}",
            result.map(drop)
        );
        server
            .join()
            .expect("the client closed, not the hang guard");
    }
}

/// A client gives up on a server that never answers at the handshake
/// deadline.
pub fn a_client_gives_up_on_a_silent_server_at_the_deadline<D: Sockets>() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}/", listener.local_addr().unwrap());
    let server = answer_once(listener, Vec::new());
    let started = Instant::now();
    let options = ClientOptions::new().config(deadline_config());
    let result = D::dial_and_echo(&url, options, "a silent server");
    let took = started.elapsed();
    // A deadline that never fired would see the server's hang guard close
    // the connection: another error.
    let error = result.map(drop).expect_err("a silent server");
    println!("dial: {error:?} after {took:?}");
    assert!(is_handshake_timeout(&error), "{error:?}");
    server.join().unwrap();
}

/// The header limits the limit cases try: the default (124, written out:
/// no fewer than tungstenite accepts), and configured ones below and
/// above it.
fn header_limits() -> [(usize, HandshakeLimits); 3] {
    let limits = HandshakeLimits::default();
    [
        (124, limits),
        (7, limits.max_headers(7)),
        (300, limits.max_headers(300)),
    ]
}

/// `X-Filler-N: f` lines for fields `from..to`.
fn fillers(from: usize, to: usize) -> String {
    (from..to).map(|i| format!("X-Filler-{i}: f\r\n")).collect()
}

/// A server accepts a request with as many header fields as its limit
/// allows and answers one more with 431 and `Connection: close`, at once.
pub fn a_server_accepts_as_many_header_fields_as_its_limit_and_431_past_it<D: Sockets>() {
    for (max, limits) in header_limits() {
        for fields in [max, max + 1] {
            // Five fields an upgrade needs, and fillers up to `fields`.
            let request = format!(
                "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                 Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n{}\r\n",
                fillers(5, fields)
            );
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let server = thread::spawn(move || {
                let (tcp, _) = listener.accept().unwrap();
                D::accept(tcp, ServerOptions::new().handshake_limits(limits)).map(drop)
            });
            // At once: `send_and_read_answer` panics if the server keeps
            // the connection past SOON (its deadline is 30 s).
            let answer = send_and_read_answer(addr, request.as_bytes());
            let answer = String::from_utf8_lossy(&answer);
            let result = server.join().unwrap();
            let what = format!("{fields} fields, at most {max}");
            if fields <= max {
                assert!(answer.starts_with("HTTP/1.1 101 "), "{what}: {answer:?}");
                assert!(result.is_ok(), "{what}: {result:?}");
            } else {
                assert!(
                    answer.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"),
                    "{what}: {answer:?}"
                );
                assert!(answer.contains("\r\nConnection: close\r\n"), "{what}");
                assert!(
                    matches!(
                        result.as_ref().err().and_then(|e| e.handshake_failure()),
                        Some(HandshakeFailure::HeadTooLarge)
                    ),
                    "{what}: {result:?}"
                );
            }
        }
    }
}

/// A client reads a response with as many header fields as its limit
/// allows (a refusal, whose fields it hands back) and fails on one more.
pub fn a_client_accepts_as_many_header_fields_as_its_limit<D: Sockets>() {
    for (max, limits) in header_limits() {
        for fields in [max, max + 1] {
            let answer = format!(
                "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n{}\r\n",
                fillers(1, fields)
            );
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let url = format!("ws://{}/", listener.local_addr().unwrap());
            let server = answer_once(listener, answer.into_bytes());
            let what = format!("{fields} fields, at most {max}");
            let options = ClientOptions::new().handshake_limits(limits);
            let result = D::dial_and_echo(&url, options, &what).map(drop);
            server.join().unwrap();
            match result {
                Err(Error::Http(response)) if fields <= max => {
                    assert_eq!(response.status(), 403, "{what}");
                    assert_eq!(response.headers().len(), fields, "{what}");
                }
                Err(error)
                    if fields > max
                        && matches!(
                            error.handshake_failure(),
                            Some(HandshakeFailure::HeadTooLarge)
                        ) => {}
                other => panic!("{what}: {other:?}"),
            }
        }
    }
}

/// A client opens a connection whose 101 carries as many header fields
/// as the default limit allows: a blocking lockgate server whose callback
/// adds them, echoing.
#[allow(
    clippy::result_large_err,
    reason = "callbacks return ErrorResponse by value"
)]
pub fn a_client_opens_on_a_101_with_the_default_limit_of_header_fields<D: Sockets>() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}/", listener.local_addr().unwrap());
    let server = thread::spawn(move || {
        let (tcp, _) = listener.accept().unwrap();
        tcp.set_read_timeout(Some(SOON)).unwrap();
        let callback = |_: &lockgate::http::Request<()>,
                        mut response: lockgate::http::Response<()>| {
            // Connection, Upgrade and Sec-WebSocket-Accept are there.
            let headers = response.headers_mut();
            for i in 3..124 {
                let name = lockgate::http::HeaderName::try_from(format!("x-filler-{i}")).unwrap();
                headers.append(name, lockgate::http::HeaderValue::from_static("f"));
            }
            Ok(response)
        };
        let mut ws = ServerOptions::new().callback(callback).accept(tcp).unwrap();
        // Bounded: each read returns a message or fails within SOON.
        for _ in 0..100 {
            match ws.read() {
                Ok(message) if message.is_data() => ws.send(message).unwrap(),
                Ok(_) => {}
                Err(_) => break,
            }
        }
    });
    let what = "a 101 with 124 header fields";
    let dialed = D::dial_and_echo(&url, ClientOptions::new(), what);
    assert!(dialed.is_ok(), "{what}: {:?}", dialed.map(drop));
    server.join().unwrap();
}

/// The `#[test]` functions running every handshake case of the kit for
/// `$driver` (a type implementing [`Sockets`]).
#[macro_export]
macro_rules! handshake_suite {
    ($driver:ty) => {
        $crate::__kit_cases!($driver;
            handshake::accept_drops_a_silent_client_at_the_deadline,
            handshake::a_server_refuses_what_is_not_a_request_at_once,
            handshake::a_client_refuses_what_is_not_a_response_at_once,
            handshake::a_client_gives_up_on_a_silent_server_at_the_deadline,
            handshake::a_server_accepts_as_many_header_fields_as_its_limit_and_431_past_it,
            handshake::a_client_accepts_as_many_header_fields_as_its_limit,
            handshake::a_client_opens_on_a_101_with_the_default_limit_of_header_fields,
            deadlines::a_silent_peer_fails_the_read_with_a_timeout,
            deadlines::a_read_blocked_on_owed_output_still_fails_on_its_deadline,
            deadlines::after_the_peers_close_our_write_side_is_shut_down,
            deadlines::a_peer_that_answers_pings_stays_connected,
            rate_limits::a_throttled_read_keeps_the_pace_and_the_connection,
            rate_limits::the_close_policy_fails_the_read_and_tells_the_peer_1008,
            lingering::a_flooding_peer_receives_the_close_code,
            lingering::a_peer_that_never_stops_sending_is_given_up_at_the_close_timeout,
        );
    };
}
