//! The HTTP upgrade, done once by the harness for every library so that only
//! framing is compared: a minimal RFC 6455 request and 101 response over a
//! fresh loopback connection, after which each library is handed the already
//! upgraded socket. The accept key is derived with tungstenite's helper (plain
//! SHA-1 + base64; no framing code is involved).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The request's Sec-WebSocket-Key (RFC 6455's example nonce).
const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

/// The upgrade request every client sends.
pub(crate) fn request() -> String {
    format!(
        "GET /bench HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Key: {KEY}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
}

/// The Sec-WebSocket-Accept value that answers [`request`].
pub(crate) fn accept_key() -> String {
    tungstenite::handshake::derive_accept_key(KEY.as_bytes())
}

/// The 101 response to [`request`].
pub(crate) fn response() -> String {
    let accept = accept_key();
    format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
    )
}

/// Where the HTTP head in `buf` ends (just past its blank line), once
/// `buf` holds all of it.
pub(crate) fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}

/// Reads an HTTP head into `buf` (no heap use) and returns its length. The
/// peer sends nothing after its head until it hears back, so reading past
/// the head would be a harness bug: abort.
pub(crate) fn read_head_sync<R: Read>(r: &mut R, buf: &mut [u8]) -> usize {
    let mut n = 0;
    loop {
        let got = r.read(&mut buf[n..]).expect("handshake read");
        assert!(got > 0, "peer closed during the handshake");
        n += got;
        if let Some(end) = head_end(&buf[..n]) {
            assert_eq!(end, n, "bytes after the handshake head");
            return n;
        }
        assert!(n < buf.len(), "handshake head too long");
    }
}

/// Async [`read_head_sync`].
pub(crate) async fn read_head_async<R: tokio::io::AsyncRead + Unpin>(
    r: &mut R,
    buf: &mut [u8],
) -> usize {
    let mut n = 0;
    loop {
        let got = r.read(&mut buf[n..]).await.expect("handshake read");
        assert!(got > 0, "peer closed during the handshake");
        n += got;
        if let Some(end) = head_end(&buf[..n]) {
            assert_eq!(end, n, "bytes after the handshake head");
            return n;
        }
        assert!(n < buf.len(), "handshake head too long");
    }
}

/// Checks a request head carries our key and version.
pub(crate) fn check_request(head: &[u8]) {
    let s = std::str::from_utf8(head).expect("request is ASCII");
    assert!(s.starts_with("GET "), "not a GET: {s}");
    assert!(
        s.contains(&format!("Sec-WebSocket-Key: {KEY}\r\n")),
        "no key: {s}"
    );
    assert!(
        s.contains("Sec-WebSocket-Version: 13\r\n"),
        "no version: {s}"
    );
}

/// Checks a response head is the 101 with the right accept key.
pub(crate) fn check_response(head: &[u8], expected: &str) {
    assert_eq!(head, expected.as_bytes(), "unexpected upgrade response");
}

/// Client side over a blocking socket.
pub(crate) fn client_sync(c: &mut TcpStream, req: &str, resp: &str) {
    c.write_all(req.as_bytes()).expect("send request");
    let mut buf = [0u8; 512];
    let n = read_head_sync(c, &mut buf);
    check_response(&buf[..n], resp);
}

/// Server side over a tokio socket.
pub(crate) async fn server_async(s: &mut tokio::net::TcpStream, resp: &str) {
    let mut buf = [0u8; 512];
    let n = read_head_async(s, &mut buf).await;
    check_request(&buf[..n]);
    s.write_all(resp.as_bytes()).await.expect("send response");
}

/// A fresh loopback connection, upgraded, with TCP_NODELAY on both ends:
/// `(server end, client end)`, both blocking std sockets.
pub(crate) fn upgraded_pair(listener: &TcpListener) -> (TcpStream, TcpStream) {
    let addr = listener.local_addr().expect("listener address");
    let mut client = TcpStream::connect(addr).expect("connect");
    let (mut server, _) = listener.accept().expect("accept");
    let (req, resp) = (request(), response());
    // The request and response are far smaller than the socket buffers, so
    // one thread can play both sides in turn.
    client.write_all(req.as_bytes()).expect("send request");
    let mut buf = [0u8; 512];
    let n = read_head_sync(&mut server, &mut buf);
    check_request(&buf[..n]);
    server.write_all(resp.as_bytes()).expect("send response");
    let n = read_head_sync(&mut client, &mut buf);
    check_response(&buf[..n], &resp);
    for s in [&server, &client] {
        s.set_nodelay(true).expect("TCP_NODELAY");
    }
    (server, client)
}
