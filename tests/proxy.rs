//! The blocking `connect` through every kind of proxy: the conformance
//! kit's dial cases (kit/src/conformance/dial.rs), the same every driver
//! runs, and a measurement of dial times.
//!
//! The `wss://` and `https://` cases need `--features rustls`.

use std::time::Instant;

use lockgate::handshake::Proxy;
use lockgate::{ClientOptions, Message, Result};
use lockgate_kit::conformance::dial::{self, Dialed, Dialer, echo_messages};
use lockgate_kit::proxies::{ProxyKind, ProxyServer, TestCa};

/// `connect` with [`ClientOptions`].
struct Blocking;

impl Dialer for Blocking {
    lockgate_kit::rustls_dialer_items!();

    fn dial_and_echo(url: &str, options: ClientOptions, what: &str) -> Result<Dialed> {
        let (mut ws, response) = options.connect(url)?;
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
}

lockgate_kit::dial_suite!(Blocking);

/// How long a dial takes over each path on loopback: direct, and through
/// each kind of proxy, `ws://` and `wss://`; the median and the 90th
/// percentile of 50 dials each (to the first message echoed). A
/// measurement, not a check of speed: it asserts only that every dial
/// works. Run it with
/// `cargo test --release -p lockgate --features rustls --test proxy -- --ignored --nocapture dial_times`.
#[test]
#[ignore = "a measurement; run it by hand"]
fn dial_times() {
    const DIALS: usize = 50;
    let ca = TestCa::new();
    let servers = dial::echo_servers::<Blocking>(&ca);
    let proxies: Vec<ProxyServer> = ProxyKind::testable(Blocking::TLS)
        .into_iter()
        .filter_map(|kind| ProxyServer::start(kind, None, &ca))
        .collect();
    for proxy in std::iter::once(None).chain(proxies.iter().map(Some)) {
        for (server, scheme) in &servers {
            let url = server.url(scheme, "127.0.0.1");
            let mut times = Vec::with_capacity(DIALS);
            for _ in 0..DIALS {
                let mut options = dial::options::<Blocking>(&ca);
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
