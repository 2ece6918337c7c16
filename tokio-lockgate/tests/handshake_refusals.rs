//! The async entry points end a handshake that cannot succeed: a silent
//! peer at the handshake deadline, with `Error::Timeout(Handshake)`, and
//! input that cannot be a WebSocket handshake at once (a server answers it
//! with an HTTP error and closes the connection). Real sockets on
//! 127.0.0.1; the misbehaving peers are the core's, from `support`, on
//! blocking threads.

use lockgate_kit as support;

use std::net::TcpListener as StdListener;
use std::time::Instant;

use support::{
    DEADLINE, SOON, answer_once, deadline_config, not_a_request, not_a_response, read_until_closed,
    send_and_read_answer, silent_client,
};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::spawn_blocking;
use tokio::time::timeout;
use tokio_lockgate::{
    ClientOptions, Error, ServerOptions, TimeoutKind, accept_async, accept_async_with,
    connect_async, connect_async_with,
};

fn is_handshake_timeout(error: &Error) -> bool {
    matches!(error, Error::Timeout(TimeoutKind::Handshake))
}

/// The server's end of a [`silent_client`], as a tokio stream.
fn tokio_stream(stream: std::net::TcpStream) -> TcpStream {
    stream.set_nonblocking(true).unwrap();
    TcpStream::from_std(stream).unwrap()
}

#[tokio::test]
async fn accept_drops_a_silent_client_at_the_deadline() {
    let (mut client, server) = silent_client();
    let started = Instant::now();
    let options = ServerOptions::new().config(deadline_config());
    let accepted = timeout(SOON, accept_async_with(tokio_stream(server), options))
        .await
        .expect("bounded by the handshake deadline");
    let took = started.elapsed();
    let error = accepted.map(drop).expect_err("a silent client");
    assert!(is_handshake_timeout(&error), "{error:?}");
    assert!(took >= DEADLINE && took < SOON, "{took:?}");
    let said = spawn_blocking(move || read_until_closed(&mut client))
        .await
        .unwrap();
    assert!(said.is_empty(), "dropped without a word");
}

#[tokio::test]
async fn a_server_refuses_what_is_not_a_request_at_once() {
    for (what, bytes, status) in not_a_request() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // The default deadline, 30 s: the refusal must not wait for it.
        let server = tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            accept_async(tcp).await.map(drop)
        });
        let (answer, took) = spawn_blocking(move || send_and_read_answer(addr, &bytes))
            .await
            .unwrap();
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with(status), "{what}: {answer:?}");
        assert!(answer.contains("\r\nConnection: close\r\n"), "{what}");
        assert!(took < SOON, "{what}: closed after {took:?}");
        let result = server.await.unwrap();
        assert!(
            matches!(result, Err(Error::Handshake(_))),
            "{what}: {result:?}"
        );
    }
}

#[tokio::test]
async fn a_client_refuses_what_is_not_a_response_at_once() {
    for (what, answer) in not_a_response() {
        let listener = StdListener::bind("127.0.0.1:0").unwrap();
        let url = format!("ws://{}/", listener.local_addr().unwrap());
        let server = answer_once(listener, answer);
        let started = Instant::now();
        let result = timeout(SOON, connect_async(url))
            .await
            .expect("at once")
            .map(drop);
        let took = started.elapsed();
        assert!(
            matches!(result, Err(Error::Handshake(_))),
            "{what}: {result:?}"
        );
        assert!(took < SOON, "{what}: failed after {took:?}");
        spawn_blocking(move || server.join().unwrap())
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn a_client_gives_up_on_a_silent_server_at_the_deadline() {
    let listener = StdListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}/", listener.local_addr().unwrap());
    let server = answer_once(listener, Vec::new());
    let started = Instant::now();
    let options = ClientOptions::new().config(deadline_config());
    let result = timeout(SOON, connect_async_with(url, options))
        .await
        .expect("bounded by the handshake deadline")
        .map(drop);
    let took = started.elapsed();
    let error = result.expect_err("a silent server");
    assert!(is_handshake_timeout(&error), "{error:?}");
    assert!(took >= DEADLINE && took < SOON, "{took:?}");
    spawn_blocking(move || server.join().unwrap())
        .await
        .unwrap();
}
