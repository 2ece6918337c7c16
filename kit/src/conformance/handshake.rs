//! The opening handshake over real sockets on 127.0.0.1: a handshake that
//! cannot succeed ends, with `Error::Timeout(Handshake)` for a silent peer
//! at the deadline, and at once for input that cannot be a WebSocket
//! handshake (a server answers it with an HTTP error and closes the
//! connection). The misbehaving peers are the kit's, on threads of their
//! own. Run by [`handshake_suite!`](crate::handshake_suite).

use std::net::TcpListener;
use std::thread;
use std::time::Instant;

use lockgate::{ClientOptions, Error, ServerOptions, TimeoutKind};

use super::Sockets;
use crate::{
    DEADLINE, SOON, answer_once, deadline_config, not_a_request, not_a_response, read_until_closed,
    send_and_read_answer, silent_client,
};

fn is_handshake_timeout(error: &Error) -> bool {
    matches!(error, Error::Timeout(TimeoutKind::Handshake))
}

/// A server drops a client that never sends its request at the handshake
/// deadline, without a word.
pub fn accept_drops_a_silent_client_at_the_deadline<D: Sockets>() {
    let (mut client, server) = silent_client();
    let started = Instant::now();
    let options = ServerOptions::new().config(deadline_config());
    let error = D::accept(server, options)
        .map(drop)
        .expect_err("a silent client cannot be accepted");
    let took = started.elapsed();
    assert!(is_handshake_timeout(&error), "{error:?}");
    assert!(took >= DEADLINE && took < SOON, "{took:?}");
    assert!(
        read_until_closed(&mut client).is_empty(),
        "dropped without a word"
    );
}

/// A server answers what cannot be an upgrade request with the right HTTP
/// error and `Connection: close` at once, not at the (default, 30 s)
/// deadline.
pub fn a_server_refuses_what_is_not_a_request_at_once<D: Sockets>() {
    for (what, bytes, status) in not_a_request() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = thread::spawn(move || {
            let (tcp, _) = listener.accept().unwrap();
            D::accept(tcp, ServerOptions::new()).map(drop)
        });
        let (answer, took) = send_and_read_answer(addr, &bytes);
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with(status), "{what}: {answer:?}");
        assert!(answer.contains("\r\nConnection: close\r\n"), "{what}");
        assert!(took < SOON, "{what}: closed after {took:?}");
        let result = server.join().unwrap();
        assert!(
            matches!(result, Err(Error::Handshake(_))),
            "{what}: {result:?}"
        );
    }
}

/// A client fails at once on what cannot be an upgrade response.
pub fn a_client_refuses_what_is_not_a_response_at_once<D: Sockets>() {
    for (what, answer) in not_a_response() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("ws://{}/", listener.local_addr().unwrap());
        let server = answer_once(listener, answer);
        let started = Instant::now();
        let result = D::dial_and_echo(&url, ClientOptions::new(), what);
        let took = started.elapsed();
        assert!(
            matches!(result, Err(Error::Handshake(_))),
            "{what}: {:?}",
            result.map(drop)
        );
        assert!(took < SOON, "{what}: failed after {took:?}");
        server.join().unwrap();
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
    let error = result.map(drop).expect_err("a silent server");
    assert!(is_handshake_timeout(&error), "{error:?}");
    assert!(took >= DEADLINE && took < SOON, "{took:?}");
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
