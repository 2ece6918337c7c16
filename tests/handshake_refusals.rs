//! What only the blocking handshake has: the deadline on a stream it cannot
//! set a read timeout on, and the read timeouts it set cleared afterwards.
//! The refusals and deadlines every driver shares are the conformance
//! kit's (tests/kit.rs).

use lockgate_kit as support;

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread;
use std::time::Duration;

use lockgate::{ClientOptions, Error, ServerOptions, TimeoutKind};
use support::{DEADLINE, deadline_config, silent_client};

fn is_handshake_timeout(error: &Error) -> bool {
    error.timeout() == Some(TimeoutKind::Handshake)
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
