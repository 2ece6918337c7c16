//! The blocking driver against the conformance kit (kit/src/conformance),
//! the same cases every driver runs: over the scripted mock, the
//! write/flush contract and the closing handshake; over real sockets, the
//! opening handshake's refusals and deadlines, the deadlines of an
//! upgraded connection and its FIN, and dialling through every
//! kind of proxy (the `wss://` and `https://` cases with `--features
//! rustls`). And a measurement of dial times.

use std::net::TcpStream;
use std::time::Instant;

use lockgate::handshake::{IntoClientRequest, Proxy};
use lockgate::{ClientOptions, CloseFrame, Error, Message, Result, ServerOptions, WebSocket};
use lockgate_kit::conformance::dial::{self, Dialer};
use lockgate_kit::conformance::{Blocking, Dialed, Session, Sockets, echo_messages};
use lockgate_kit::proxies::{ProxyKind, ProxyServer, TestCa};

/// The cost case measures this thread's heap.
#[global_allocator]
static ALLOC: lockgate_kit::CountingAlloc = lockgate_kit::CountingAlloc;

lockgate_kit::conformance_suite!(Blocking);

/// `ClientOptions::connect` and `ServerOptions::accept`.
struct BlockingSockets;

impl Sockets for BlockingSockets {
    fn dial_and_echo(
        request: impl IntoClientRequest,
        options: ClientOptions,
        what: &str,
    ) -> Result<Dialed> {
        let (mut ws, response) = options.connect(request)?;
        assert_eq!(response.status(), 101, "{what}");
        let peer_port = ws.get_ref().get_ref().peer_addr().unwrap().port();
        let tls = ws.get_ref().is_tls();
        for message in echo_messages(what) {
            ws.send(message.clone()).unwrap();
            assert_eq!(ws.read().unwrap(), message, "{what}");
        }
        ws.close(None).unwrap();
        while ws.read().is_ok() {}
        Ok(Dialed {
            peer_port,
            tls,
            connection: Box::new(ws),
        })
    }

    fn accept(tcp: TcpStream, options: ServerOptions) -> Result<Box<dyn Session>> {
        let ws = options.accept(tcp).map_err(Error::from)?;
        Ok(Box::new(BlockingSession(ws)))
    }
}

struct BlockingSession(WebSocket<TcpStream>);

impl Session for BlockingSession {
    fn read(&mut self) -> Result<Message> {
        self.0.read()
    }
    fn write(&mut self, msg: Message) -> Result<()> {
        self.0.write(msg)
    }
    fn close(&mut self, frame: Option<CloseFrame>) -> Result<()> {
        self.0.close(frame)
    }
    fn buffered_output(&self) -> usize {
        self.0.buffered_output()
    }
}

impl Dialer for BlockingSockets {
    lockgate_kit::rustls_dialer_items!();
}

lockgate_kit::handshake_suite!(BlockingSockets);
lockgate_kit::dial_suite!(BlockingSockets);

/// How long a dial takes over each path on loopback: direct, and through
/// each kind of proxy, `ws://` and `wss://`; the median and the 90th
/// percentile of 50 dials each (to the first message echoed). A
/// measurement, not a check of speed: it asserts only that every dial
/// works. Run it with
/// `cargo test --release -p lockgate --features rustls --test kit -- --ignored --nocapture dial_times`.
#[test]
#[ignore = "a measurement; run it by hand"]
fn dial_times() {
    const DIALS: usize = 50;
    let ca = TestCa::new();
    let servers = dial::echo_servers::<BlockingSockets>(&ca);
    let proxies: Vec<ProxyServer> = ProxyKind::testable(BlockingSockets::TLS)
        .into_iter()
        .filter_map(|kind| ProxyServer::start(kind, None, &ca))
        .collect();
    for proxy in std::iter::once(None).chain(proxies.iter().map(Some)) {
        for (server, scheme) in &servers {
            let url = server.url(scheme, "127.0.0.1");
            let mut times = Vec::with_capacity(DIALS);
            for _ in 0..DIALS {
                let mut options = dial::options::<BlockingSockets>(&ca);
                if let Some(proxy) = proxy {
                    options = options.proxy(Proxy::from_url(&proxy.url(None)).unwrap());
                }
                let started = Instant::now();
                let (mut ws, _) = options.connect(url.as_str()).unwrap();
                ws.send(Message::text("ping")).unwrap();
                assert_eq!(ws.read().unwrap(), Message::text("ping"));
                times.push(started.elapsed());
                ws.close(None).unwrap();
                while ws.read().is_ok() {}
            }
            times.sort();
            let path = match proxy {
                Some(proxy) => format!("{} proxy", proxy.kind().scheme()),
                None => "direct".to_owned(),
            };
            println!(
                "{scheme:>3} {path:<14} median {:>7.3} ms  p90 {:>7.3} ms",
                times[DIALS / 2].as_secs_f64() * 1e3,
                times[DIALS * 9 / 10].as_secs_f64() * 1e3
            );
        }
    }
}
