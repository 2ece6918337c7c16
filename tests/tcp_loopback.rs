//! The blocking entry points over real loopback TCP: `connect` against
//! `accept`/`accept_hdr`, with a bounded exchange on both ends.

// The accept callback returns `Result<Response, ErrorResponse>`, the shape
// tungstenite users know; the error response is an HTTP response by value.
#![allow(clippy::result_large_err)]

use std::net::TcpListener;
use std::thread;
use std::time::Duration;

use lockgate::handshake::ErrorResponse;
use lockgate::http::{Request, Response, StatusCode};
use lockgate::{CloseCode, CloseFrame, Error, HandshakeError, Message};

/// Serves one connection on a fresh loopback port with `serve`, returning
/// the URL to connect to.
fn serve_one<F>(serve: F) -> (String, thread::JoinHandle<()>)
where
    F: FnOnce(std::net::TcpStream) + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}/socket", listener.local_addr().unwrap());
    let handle = thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        serve(stream);
    });
    (url, handle)
}

#[test]
fn echo_over_tcp_then_clean_close() {
    let (url, server) = serve_one(|stream| {
        let mut ws = lockgate::accept(stream).unwrap();
        loop {
            match ws.read() {
                Ok(msg) if msg.is_data() => ws.send(msg).unwrap(),
                Ok(_) => {}
                Err(Error::ConnectionClosed) => break,
                Err(e) => panic!("server: {e}"),
            }
        }
    });
    let (mut ws, response) = lockgate::connect(url.as_str()).unwrap();
    assert_eq!(response.status(), StatusCode::SWITCHING_PROTOCOLS);
    assert!(
        ws.get_ref().get_ref().nodelay().unwrap(),
        "connect turns TCP_NODELAY on"
    );
    ws.get_ref()
        .get_ref()
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    for i in 0..100 {
        ws.write(Message::text(format!("msg {i}"))).unwrap();
    }
    ws.write(Message::binary(vec![5u8; 1 << 20])).unwrap();
    ws.flush().unwrap();
    for i in 0..100 {
        assert_eq!(ws.read().unwrap(), Message::text(format!("msg {i}")));
    }
    assert_eq!(ws.read().unwrap(), Message::binary(vec![5u8; 1 << 20]));
    ws.close(Some(CloseFrame::new(CloseCode::Normal, "done")))
        .unwrap();
    match ws.read().unwrap() {
        Message::Close(Some(frame)) => assert_eq!(frame.code, CloseCode::Normal),
        other => panic!("expected the close reply, got {other:?}"),
    }
    assert!(matches!(ws.read(), Err(Error::ConnectionClosed)));
    assert!(matches!(ws.read(), Err(Error::AlreadyClosed)));
    server.join().unwrap();
}

#[test]
fn accept_hdr_selects_a_subprotocol() {
    let (url, server) = serve_one(|stream| {
        let callback =
            |request: &Request<()>, mut response: Response<()>| -> Result<_, ErrorResponse> {
                let offered = request.headers()["sec-websocket-protocol"]
                    .to_str()
                    .unwrap();
                assert!(offered.contains("chat.v2"));
                response
                    .headers_mut()
                    .insert("sec-websocket-protocol", "chat.v2".parse().unwrap());
                Ok(response)
            };
        let mut ws = lockgate::accept_hdr(stream, callback).unwrap();
        ws.send(Message::text("hello")).unwrap();
        ws.close(None).unwrap();
        while ws.read().is_ok() {}
    });
    let request = Request::builder()
        .uri(url)
        .header("sec-websocket-protocol", "chat.v1, chat.v2")
        .body(())
        .unwrap();
    let (mut ws, response) = lockgate::connect(request).unwrap();
    assert_eq!(response.headers()["sec-websocket-protocol"], "chat.v2");
    assert_eq!(ws.read().unwrap(), Message::text("hello"));
    assert!(matches!(ws.read().unwrap(), Message::Close(None)));
    assert!(matches!(ws.read(), Err(Error::ConnectionClosed)));
    server.join().unwrap();
}

#[test]
fn a_refusing_callback_sends_its_status_and_the_client_sees_it() {
    let (url, server) = serve_one(|stream| {
        let callback = |_: &Request<()>, _: Response<()>| -> Result<Response<()>, ErrorResponse> {
            Err(Response::builder()
                .status(StatusCode::FORBIDDEN)
                .body(Some("no".into()))
                .unwrap())
        };
        let err = lockgate::accept_hdr(stream, callback).unwrap_err();
        assert!(
            matches!(&err, HandshakeError::Failure(Error::Http(response))
                if response.status() == StatusCode::FORBIDDEN),
            "{err:?}"
        );
    });
    let err = lockgate::connect(url.as_str()).unwrap_err();
    match err {
        Error::Http(response) => {
            assert_eq!(response.status(), StatusCode::FORBIDDEN);
        }
        other => panic!("{other:?}"),
    }
    server.join().unwrap();
}

#[cfg(not(any(feature = "rustls", feature = "native-tls")))]
#[test]
fn connect_refuses_wss_without_tls() {
    let err = lockgate::connect("wss://127.0.0.1:1/").unwrap_err();
    assert!(
        matches!(
            err,
            Error::Url(lockgate::error::UrlError::TlsFeatureNotEnabled)
        ),
        "{err:?}"
    );
}

/// Answers one request with a redirect to `location`, having read the
/// request head.
fn redirect_once(location: String) -> (String, thread::JoinHandle<()>) {
    serve_one(move |mut stream| {
        use std::io::{BufRead, BufReader, Write};
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap() > 0 && line != "\r\n" {
            line.clear();
        }
        let answer =
            format!("HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n");
        stream.write_all(answer.as_bytes()).unwrap();
    })
}

#[test]
fn connect_follows_redirects_as_far_as_allowed() {
    let (target, server) = serve_one(|stream| {
        let callback = |request: &Request<()>, response: Response<()>| {
            assert_eq!(request.uri().path(), "/moved");
            Ok(response)
        };
        let mut ws = lockgate::accept_hdr(stream, callback).unwrap();
        ws.send(Message::text("arrived")).unwrap();
        while ws.read().is_ok() {}
    });
    let target = target.replace("/socket", "/moved");
    let (url, redirect) = redirect_once(target.clone());
    let (mut ws, response) = lockgate::connect(url.as_str()).unwrap();
    assert_eq!(response.status(), StatusCode::SWITCHING_PROTOCOLS);
    assert_eq!(ws.read().unwrap(), Message::text("arrived"));
    ws.close(None).unwrap();
    while ws.read().is_ok() {}
    server.join().unwrap();
    redirect.join().unwrap();

    // Without redirects allowed, the 302 is the answer.
    let (url, redirect) = redirect_once(target);
    let error = lockgate::ClientOptions::new()
        .max_redirects(0)
        .connect(url.as_str())
        .unwrap_err();
    match error {
        Error::Http(response) => assert_eq!(response.status(), StatusCode::FOUND),
        other => panic!("{other:?}"),
    }
    redirect.join().unwrap();
}
