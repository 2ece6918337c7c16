//! The blocking entry points end a handshake that cannot succeed: a silent
//! peer at the handshake deadline, with `Error::Timeout(Handshake)`, and
//! input that cannot be a WebSocket handshake at once (a server answers it
//! with an HTTP error and closes the connection). Real sockets on
//! 127.0.0.1; the peers are in `support`.

use lockgate_kit as support;

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use lockgate::{ClientOptions, Error, ServerOptions, TimeoutKind};
use support::{
    DEADLINE, SOON, answer_once, deadline_config, not_a_request, not_a_response, read_until_closed,
    send_and_read_answer, silent_client,
};

fn is_handshake_timeout(error: &Error) -> bool {
    matches!(error, Error::Timeout(TimeoutKind::Handshake))
}

#[test]
fn accept_drops_a_silent_client_at_the_deadline() {
    let (mut client, server) = silent_client();
    let started = Instant::now();
    let error = ServerOptions::new()
        .config(deadline_config())
        .accept(server)
        .map_err(Error::from)
        .expect_err("a silent client cannot be accepted");
    let took = started.elapsed();
    assert!(is_handshake_timeout(&error), "{error:?}");
    assert!(took >= DEADLINE && took < SOON, "{took:?}");
    assert!(
        read_until_closed(&mut client).is_empty(),
        "dropped without a word"
    );
}

/// A stream lockgate cannot set a read timeout on: the deadline is checked
/// when a read returns.
#[derive(Debug)]
struct Opaque(TcpStream);

impl Read for Opaque {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl Write for Opaque {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[test]
fn on_any_stream_a_read_that_returns_after_the_deadline_fails() {
    let (mut client, server) = silent_client();
    let trickle = thread::spawn(move || {
        client.write_all(b"GET / HTTP/1.1\r\n").unwrap();
        thread::sleep(DEADLINE * 2);
        let _ = client.write_all(b"Host: a\r\n");
        client
    });
    let error = ServerOptions::new()
        .config(deadline_config())
        .accept(Opaque(server))
        .map_err(Error::from)
        .expect_err("too late");
    assert!(is_handshake_timeout(&error), "{error:?}");
    drop(trickle.join().unwrap());
}

#[test]
fn a_server_refuses_what_is_not_a_request_at_once() {
    for (what, bytes, status) in not_a_request() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // The default deadline, 30 s: the refusal must not wait for it.
        let server = thread::spawn(move || {
            lockgate::accept(listener.accept().unwrap().0).map_err(Error::from)
        });
        let (answer, took) = send_and_read_answer(addr, &bytes);
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with(status), "{what}: {answer:?}");
        assert!(answer.contains("\r\nConnection: close\r\n"), "{what}");
        assert!(took < SOON, "{what}: closed after {took:?}");
        let result = server.join().unwrap();
        assert!(
            matches!(result, Err(Error::Handshake(_))),
            "{what}: {:?}",
            result.map(drop)
        );
    }
}

#[test]
fn a_client_refuses_what_is_not_a_response_at_once() {
    for (what, answer) in not_a_response() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("ws://{}/", listener.local_addr().unwrap());
        let server = answer_once(listener, answer);
        let started = Instant::now();
        let result = lockgate::connect(url.as_str());
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

#[test]
fn a_client_gives_up_on_a_silent_server_at_the_deadline() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}/", listener.local_addr().unwrap());
    let server = answer_once(listener, Vec::new());
    let started = Instant::now();
    let result = ClientOptions::new()
        .config(deadline_config())
        .connect(url.as_str());
    let took = started.elapsed();
    let error = result.map(drop).expect_err("a silent server");
    assert!(is_handshake_timeout(&error), "{error:?}");
    assert!(took >= DEADLINE && took < SOON, "{took:?}");
    server.join().unwrap();
}

#[test]
fn read_timeouts_are_cleared_after_the_handshake() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}/", listener.local_addr().unwrap());
    let server = thread::spawn(move || {
        let (tcp, _) = listener.accept().unwrap();
        let ws = ServerOptions::new()
            .config(deadline_config())
            .accept(tcp)
            .unwrap();
        ws.get_ref().read_timeout().unwrap()
    });
    let (ws, _) = ClientOptions::new()
        .config(deadline_config())
        .connect(url.as_str())
        .unwrap();
    assert_eq!(ws.get_ref().get_ref().read_timeout().unwrap(), None);
    assert_eq!(ws.get_ref().get_ref().write_timeout().unwrap(), None);
    assert_eq!(server.join().unwrap(), None::<Duration>);
}
