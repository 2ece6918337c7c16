//! `upgrade::connect_async_h2` against servers built here on hyper-util's
//! auto server (HTTP/1.1 and HTTP/2 on one port, as production servers
//! are), over TLS with a certificate from a test CA: an HTTP/2 stream
//! where the server enables extended CONNECT, HTTP/1.1 (on a second
//! connection) where it speaks HTTP/2 without it, HTTP/1.1 on the same
//! connection where ALPN chose `http/1.1` or nothing, HTTP/1.1 for
//! `ws://` whatever the server speaks; callers' ALPN lists and native-tls
//! connectors used as given; through every proxy kind; against the axum
//! example; silent servers cut short by the handshake deadline at each
//! step; and a server's RST_STREAM(NO_ERROR) failing no flush. Every test
//! is bounded in time.
//!
//! Run with `--features axum,rustls` (the axum example's test needs
//! `axum`, the native-tls one `native-tls`). `h2_versus_http1_dial_times`
//! is `#[ignore]`d: run it with `--ignored --nocapture` for the medians.
#![cfg(all(feature = "hyper", feature = "rustls"))]

use lockgate_kit as support;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::timeout;
use tokio_lockgate::http::{Request, Response, StatusCode, Version};
use tokio_lockgate::lockgate::dial::rustls::{self, ClientConfig, RootCertStore};
use tokio_lockgate::upgrade::connect_async_h2;
use tokio_lockgate::upgrade::{DialedStream, UpgradeSettings, accept_response, accepted};
use tokio_lockgate::{
    ClientOptions, Config, Connector, Error, Message, TimeoutKind, WebSocketStream,
};
use tokio_rustls::TlsAcceptor;

use support::proxies::{Identity, ProxyKind, ProxyServer, TestCa};

/// The driver under test speaks TLS: the `https://` proxy and `wss://`
/// cases run.
const TLS: bool = cfg!(feature = "rustls");

/// The most any one exchange may take.
const LIMIT: Duration = Duration::from_secs(20);

/// The HTTP version of each upgrade a server accepted, and how many
/// messages its echo sent back before the closing handshake completed.
type Upgrades = mpsc::UnboundedReceiver<(Version, tokio_lockgate::Result<u64>)>;

/// What a test server speaks.
#[derive(Debug, Clone, Copy)]
struct Speaks {
    /// TLS with these ALPN protocols (`None`: plain TCP).
    alpn: Option<&'static [&'static str]>,
    /// HTTP/2 with extended CONNECT (SETTINGS_ENABLE_CONNECT_PROTOCOL).
    extended_connect: bool,
    /// HTTP/1.1 only (else HTTP/1.1 and HTTP/2 on one port).
    http1_only: bool,
}

const H2_WEBSOCKETS: Speaks = Speaks {
    alpn: Some(&["h2", "http/1.1"]),
    extended_connect: true,
    http1_only: false,
};

const H2_WITHOUT_WEBSOCKETS: Speaks = Speaks {
    extended_connect: false,
    ..H2_WEBSOCKETS
};

/// A WebSocket echo server on 127.0.0.1, for any number of connections.
struct Server {
    addr: SocketAddr,
    /// TCP connections accepted.
    connections: Arc<AtomicUsize>,
    upgrades: Upgrades,
    task: JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    async fn start(speaks: Speaks, identity: &Identity) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let acceptor = speaks.alpn.map(|alpn| {
            let mut config = rustls::ServerConfig::clone(&identity.server_config());
            config.alpn_protocols = alpn.iter().map(|p| p.as_bytes().to_vec()).collect();
            TlsAcceptor::from(Arc::new(config))
        });
        let connections = Arc::new(AtomicUsize::new(0));
        let accepted_count = Arc::clone(&connections);
        let (done, upgrades) = mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                tcp.set_nodelay(true).unwrap();
                accepted_count.fetch_add(1, Ordering::SeqCst);
                let (acceptor, done) = (acceptor.clone(), done.clone());
                tokio::spawn(async move {
                    match acceptor {
                        Some(acceptor) => {
                            let Ok(tls) = acceptor.accept(tcp).await else {
                                return;
                            };
                            serve_http(TokioIo::new(tls), speaks, done).await;
                        }
                        None => serve_http(TokioIo::new(tcp), speaks, done).await,
                    }
                });
            }
        });
        Server {
            addr,
            connections,
            upgrades,
            task,
        }
    }

    /// `wss://127.0.0.1:PORT/ws`, or `ws://` for a plain server.
    fn url(&self, speaks: Speaks) -> String {
        let scheme = if speaks.alpn.is_some() { "wss" } else { "ws" };
        format!("{scheme}://{}/ws", self.addr)
    }

    /// The next upgrade's HTTP version and echo outcome.
    async fn next_upgrade(&mut self) -> (Version, tokio_lockgate::Result<u64>) {
        timeout(LIMIT, self.upgrades.recv())
            .await
            .expect("the server's echo ended")
            .unwrap()
    }
}

/// Serves one connection with hyper-util's auto server: WebSocket
/// upgrades (either kind) echo, anything else gets its refusal.
async fn serve_http<I>(
    io: TokioIo<I>,
    speaks: Speaks,
    done: mpsc::UnboundedSender<(Version, tokio_lockgate::Result<u64>)>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |mut request: Request<Incoming>| {
        let done = done.clone();
        async move {
            let version = request.version();
            let accept = match accept_response(&mut request, UpgradeSettings::default()) {
                Ok(accept) => accept,
                Err(refusal) => return Ok::<_, Infallible>(refusal.to_response().map(Full::from)),
            };
            let response = accept.response.clone().map(|()| Full::<Bytes>::default());
            tokio::spawn(async move {
                let outcome = match accepted(accept).await {
                    Ok(ws) => echo(ws).await,
                    Err(error) => Err(error),
                };
                let _ = done.send((version, outcome));
            });
            Ok(response)
        }
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    if speaks.extended_connect {
        builder.http2().enable_connect_protocol();
    }
    if speaks.http1_only {
        builder = builder.http1_only();
    }
    let _ = builder.serve_connection_with_upgrades(io, service).await;
}

/// Echoes data messages until the closing handshake completes.
async fn echo<S: AsyncRead + AsyncWrite + Unpin>(
    mut ws: WebSocketStream<S>,
) -> tokio_lockgate::Result<u64> {
    let mut echoed = 0;
    loop {
        match ws.read().await {
            Ok(message) if message.is_data() => {
                ws.send(message).await?;
                echoed += 1;
            }
            Ok(_) => {}
            Err(Error::ConnectionClosed) => return Ok(echoed),
            Err(error) => return Err(error),
        }
    }
}

/// Options trusting `ca` (with ALPN `http/1.1`, as
/// `lockgate::dial::client_config` makes it), a 10 s handshake deadline.
fn options(ca: &TestCa) -> ClientOptions {
    ClientOptions::new()
        .config(Config::default().handshake_timeout(Some(Duration::from_secs(10))))
        .tls(lockgate::Connector::Rustls(std::sync::Arc::new(
            lockgate::dial::client_config(ca.roots()).unwrap(),
        )))
}

/// A connector trusting `ca` with exactly these ALPN protocols.
fn connector_with_alpn(ca: &TestCa, alpn: &[&str]) -> Connector {
    let mut roots = RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from(ca.cert_der()))
        .unwrap();
    let mut config: ClientConfig = tokio_lockgate::lockgate::dial::client_config(roots).unwrap();
    config.alpn_protocols = alpn.iter().map(|p| p.as_bytes().to_vec()).collect();
    Connector::Rustls(Arc::new(config))
}

/// `connect_async_h2`, bounded by [`LIMIT`].
async fn dial(
    url: &str,
    options: ClientOptions,
) -> tokio_lockgate::Result<(
    WebSocketStream<DialedStream>,
    tokio_lockgate::handshake::client::Response,
)> {
    timeout(LIMIT, connect_async_h2(url, options))
        .await
        .unwrap_or_else(|_| panic!("{url}: no outcome within {LIMIT:?}"))
}

/// A text, a 1 MiB binary message (more than HTTP/2's initial 64 KiB
/// window) and a ping over `ws`, then the closing handshake, which the
/// client starts.
async fn exchange(ws: &mut WebSocketStream<DialedStream>) {
    let big = Bytes::from((0..1 << 20).map(|i| (i % 251) as u8).collect::<Vec<u8>>());
    for message in [Message::text("hello"), Message::binary(big)] {
        ws.send(message.clone()).await.unwrap();
        assert_eq!(timeout(LIMIT, ws.read()).await.unwrap().unwrap(), message);
    }
    ws.send(Message::Ping(Bytes::from_static(b"p")))
        .await
        .unwrap();
    let pong = timeout(LIMIT, ws.read()).await.unwrap().unwrap();
    assert_eq!(pong, Message::Pong(Bytes::from_static(b"p")));
    ws.close(None).await.unwrap();
    loop {
        match timeout(LIMIT, ws.read()).await.unwrap() {
            Ok(message) => assert!(message.is_close(), "{message:?}"),
            Err(Error::ConnectionClosed) => break,
            Err(error) => panic!("closing: {error}"),
        }
    }
}

/// One row of `each_server_gets_the_protocol_it_can_carry_websockets_on`.
struct Case {
    name: &'static str,
    server: Speaks,
    /// The client's ALPN list (`None`: its connector's `http/1.1`, which
    /// connect_async_h2 replaces with `h2` and `http/1.1`).
    client_alpn: Option<&'static [&'static str]>,
    /// Whether the WebSocket is an HTTP/2 stream.
    http2: bool,
    /// How many connections the dial took.
    connections: usize,
}

#[tokio::test]
async fn each_server_gets_the_protocol_it_can_carry_websockets_on() {
    let ca = TestCa::new();
    let identity = ca.issue(&["localhost", "127.0.0.1"]);
    let http1_tls = Speaks {
        alpn: Some(&["http/1.1"]),
        extended_connect: false,
        http1_only: true,
    };
    let no_alpn = Speaks {
        alpn: Some(&[]),
        ..H2_WITHOUT_WEBSOCKETS
    };
    let plain = Speaks {
        alpn: None,
        ..H2_WEBSOCKETS
    };
    let case = |name, server, client_alpn, http2, connections| Case {
        name,
        server,
        client_alpn,
        http2,
        connections,
    };
    let cases = [
        case("h2 + extended CONNECT", H2_WEBSOCKETS, None, true, 1),
        case("h2 only", H2_WITHOUT_WEBSOCKETS, None, false, 2),
        case("http/1.1 only", http1_tls, None, false, 1),
        case("no ALPN answer", no_alpn, None, false, 1),
        case("ws:// to an h2c server", plain, None, false, 1),
        // A caller's list other than `http/1.1` is kept ...
        case("caller's [h2]", H2_WEBSOCKETS, Some(&["h2"]), true, 1),
        // ... and loses `h2` for the second connection.
        case(
            "caller's [h2], h2 only",
            H2_WITHOUT_WEBSOCKETS,
            Some(&["h2"]),
            false,
            2,
        ),
    ];
    for Case {
        name,
        server: speaks,
        client_alpn,
        http2,
        connections,
    } in cases
    {
        let mut server = Server::start(speaks, &identity).await;
        let mut options = options(&ca);
        if let Some(alpn) = client_alpn {
            options = options.tls(connector_with_alpn(&ca, alpn));
        }
        let (mut ws, response) = dial(&server.url(speaks), options)
            .await
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_eq!(ws.get_ref().is_http2(), http2, "{name}");
        let (status, version) = match http2 {
            true => (StatusCode::OK, Version::HTTP_2),
            false => (StatusCode::SWITCHING_PROTOCOLS, Version::HTTP_11),
        };
        assert_eq!(response.status(), status, "{name}");
        assert_eq!(response.version(), version, "{name}");
        assert!(response.body().is_none(), "{name}");
        exchange(&mut ws).await;
        let (upgraded_as, echoed) = server.next_upgrade().await;
        assert_eq!(upgraded_as, version, "{name}");
        assert_eq!(echoed.unwrap(), 2, "{name}");
        assert_eq!(
            server.connections.load(Ordering::SeqCst),
            connections,
            "{name}"
        );
    }
}

/// A native-tls connector of the caller's is used as given: one asking
/// for `h2` gets HTTP/2 where the server enables extended CONNECT, and a
/// plain error where it does not (the second connection would offer `h2`
/// again).
#[cfg(feature = "native-tls")]
#[tokio::test]
async fn a_callers_native_tls_connector_is_used_as_given() {
    use tokio_lockgate::lockgate::dial::native_tls;

    let ca = TestCa::new();
    let identity = ca.issue(&["localhost", "127.0.0.1"]);
    let connector = native_tls::TlsConnector::builder()
        .add_root_certificate(native_tls::Certificate::from_der(&ca.cert_der()).unwrap())
        .request_alpns(&["h2", "http/1.1"])
        .build()
        .unwrap();
    let options = || ClientOptions::new().tls(Connector::NativeTls(connector.clone()));

    let mut server = Server::start(H2_WEBSOCKETS, &identity).await;
    let (mut ws, _) = dial(&server.url(H2_WEBSOCKETS), options()).await.unwrap();
    assert!(ws.get_ref().is_http2());
    exchange(&mut ws).await;
    assert_eq!(server.next_upgrade().await.1.unwrap(), 2);

    let server = Server::start(H2_WITHOUT_WEBSOCKETS, &identity).await;
    let result = dial(&server.url(H2_WITHOUT_WEBSOCKETS), options()).await;
    let Err(error) = result else {
        panic!("{:?}", result.map(|(ws, _)| ws.get_ref().is_http2()));
    };
    let Some(lockgate::Detail::InvalidUrl(message)) = error.detail() else {
        panic!("{error:?}");
    };
    assert!(
        message.contains("offers h2 on every connection"),
        "{message}"
    );
    assert_eq!(server.connections.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn through_every_proxy_kind() {
    let ca = TestCa::new();
    let identity = ca.issue(&["localhost", "127.0.0.1"]);
    let mut server = Server::start(H2_WEBSOCKETS, &identity).await;
    for kind in ProxyKind::testable(TLS) {
        let Some(proxy) = ProxyServer::start(kind, None, &ca) else {
            continue;
        };
        let proxy_url = tokio_lockgate::handshake::Proxy::from_url(&proxy.url(None)).unwrap();
        let options = options(&ca).proxy(proxy_url);
        let (mut ws, _) = dial(&server.url(H2_WEBSOCKETS), options)
            .await
            .unwrap_or_else(|error| panic!("{kind:?}: {error}"));
        // Inside an https:// proxy's TLS the server's ALPN answer cannot
        // be read, so h2 is not offered there.
        assert_eq!(ws.get_ref().is_http2(), !kind.is_tls(), "{kind:?}");
        exchange(&mut ws).await;
        assert_eq!(server.next_upgrade().await.1.unwrap(), 2, "{kind:?}");
    }
}

/// The axum example (run as a process): HTTP/2 with its subprotocol and
/// permessage-deflate.
#[cfg(feature = "axum")]
#[tokio::test]
async fn the_axum_example_over_http2() {
    use support::programs::{Program, free_address};
    use tokio_lockgate::deflate::DeflateConfig;

    let addr = free_address();
    let server = Program::start("axum", &[&addr, "--tls"]);
    let pem = server.expect_block("BEGIN CERTIFICATE", "END CERTIFICATE");
    server.expect_line("listening on");
    let mut roots = RootCertStore::empty();
    use rustls::pki_types::pem::PemObject;
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_slice(pem.as_bytes()).unwrap())
        .unwrap();
    let tls = tokio_lockgate::lockgate::dial::client_config(roots).unwrap();
    let config = Config::default().deflate(Some(DeflateConfig::default()));
    let options = ClientOptions::new()
        .config(config)
        .tls(Connector::Rustls(Arc::new(tls)));
    let request = Request::get(format!("wss://{addr}/ws"))
        .header("sec-websocket-protocol", "other.v9, echo.v1")
        .body(())
        .unwrap();
    let (mut ws, response) = dial_request(request, options).await.unwrap();
    assert!(ws.get_ref().is_http2());
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(ws.subprotocol(), Some("echo.v1"));
    assert!(ws.context().deflate().is_some(), "deflate was agreed");
    let opened = server.expect_line("websocket opened over");
    assert_eq!(
        opened,
        "websocket opened over HTTP/2, subprotocol echo.v1, deflate on"
    );
    exchange(&mut ws).await;
}

#[cfg(feature = "axum")]
async fn dial_request(
    request: Request<()>,
    options: ClientOptions,
) -> tokio_lockgate::Result<(
    WebSocketStream<DialedStream>,
    tokio_lockgate::handshake::client::Response,
)> {
    timeout(LIMIT, connect_async_h2(request, options))
        .await
        .expect("an outcome in time")
}

/// Servers that stop answering at each step of the dial: the handshake
/// deadline ends it with `Timeout(Handshake)`.
#[tokio::test]
async fn silent_servers_time_out_at_every_step() {
    let ca = TestCa::new();
    let identity = ca.issue(&["localhost", "127.0.0.1"]);
    let deadline = Duration::from_secs(1);
    for silence in [
        Silence::Tcp,
        Silence::Tls,
        Silence::Settings,
        Silence::Connect,
    ] {
        let (addr, _server) = silent_server(silence, &identity).await;
        let options = ClientOptions::new()
            .config(Config::default().handshake_timeout(Some(deadline)))
            .tls(lockgate::Connector::Rustls(std::sync::Arc::new(
                lockgate::dial::client_config(ca.roots()).unwrap(),
            )));
        let started = Instant::now();
        let result = dial(&format!("wss://{addr}/ws"), options).await;
        println!("{silence:?}: after {:?}", started.elapsed());
        // The error's kind is the evidence: the server stays silent, so
        // only the deadline ends the dial with a timeout (`dial` has its
        // own hang guard). When it falls is asserted on a paused clock in
        // tests/deadlines.rs and the core's unit tests.
        assert!(
            result.as_ref().err().and_then(|e| e.timeout()) == Some(TimeoutKind::Handshake),
            "{silence:?}: {:?}",
            result.map(|(ws, _)| ws.get_ref().is_http2())
        );
    }
}

/// Where a silent server stops.
#[derive(Debug, Clone, Copy)]
enum Silence {
    /// Accepts TCP, never answers the ClientHello.
    Tcp,
    /// Completes TLS with ALPN http/1.1, never answers the upgrade.
    Tls,
    /// Completes TLS with ALPN h2, never sends its SETTINGS.
    Settings,
    /// Speaks HTTP/2 with extended CONNECT, never answers the CONNECT.
    Connect,
}

async fn silent_server(silence: Silence, identity: &Identity) -> (SocketAddr, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let alpn: &[&[u8]] = match silence {
        Silence::Tls => &[b"http/1.1"],
        _ => &[b"h2"],
    };
    let mut config = rustls::ServerConfig::clone(&identity.server_config());
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            match silence {
                Silence::Tcp => held.push(tokio::spawn(async move {
                    let _tcp = tcp;
                    std::future::pending::<()>().await;
                })),
                Silence::Tls | Silence::Settings => {
                    let acceptor = acceptor.clone();
                    held.push(tokio::spawn(async move {
                        let _tls = acceptor.accept(tcp).await;
                        std::future::pending::<()>().await;
                    }));
                }
                Silence::Connect => {
                    let acceptor = acceptor.clone();
                    held.push(tokio::spawn(async move {
                        let Ok(tls) = acceptor.accept(tcp).await else {
                            return;
                        };
                        let never = service_fn(|_: Request<Incoming>| async {
                            std::future::pending::<Result<Response<Full<Bytes>>, Infallible>>()
                                .await
                        });
                        let mut builder = auto::Builder::new(TokioExecutor::new());
                        builder.http2().enable_connect_protocol();
                        let _ = builder
                            .serve_connection_with_upgrades(TokioIo::new(tls), never)
                            .await;
                    }));
                }
            }
        }
    });
    (addr, task)
}

/// The median of `times`.
fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// Dial times on loopback, TLS 1.3 with a P-256 certificate, 50 dials
/// each (after 5 to warm up): an HTTP/2 stream, an HTTP/1.1 upgrade
/// (`connect_async_with`, ALPN http/1.1, same server), and the fallback
/// (h2 without extended CONNECT, then a second connection).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "timing: run with --ignored --nocapture"]
async fn h2_versus_http1_dial_times() {
    const DIALS: usize = 50;
    const WARMUP: usize = 5;
    let ca = TestCa::new();
    let identity = ca.issue(&["localhost", "127.0.0.1"]);
    let mut h2 = Server::start(H2_WEBSOCKETS, &identity).await;
    let mut fallback = Server::start(H2_WITHOUT_WEBSOCKETS, &identity).await;
    let url = h2.url(H2_WEBSOCKETS);
    let fallback_url = fallback.url(H2_WITHOUT_WEBSOCKETS);
    let mut times: [Vec<Duration>; 3] = Default::default();
    for round in 0..WARMUP + DIALS {
        for (kind, slot) in times.iter_mut().enumerate() {
            let started = Instant::now();
            let (took, server) = match kind {
                0 => {
                    let (ws, _) = dial(&url, options(&ca)).await.unwrap();
                    let took = started.elapsed();
                    assert!(ws.get_ref().is_http2());
                    close(ws).await;
                    (took, &mut h2)
                }
                1 => {
                    let connect = tokio_lockgate::connect_async_with(url.as_str(), options(&ca));
                    let (ws, _) = connect.await.unwrap();
                    let took = started.elapsed();
                    close(ws).await;
                    (took, &mut h2)
                }
                _ => {
                    let (ws, _) = dial(&fallback_url, options(&ca)).await.unwrap();
                    let took = started.elapsed();
                    assert!(!ws.get_ref().is_http2());
                    close(ws).await;
                    (took, &mut fallback)
                }
            };
            server.next_upgrade().await.1.unwrap();
            if round >= WARMUP {
                slot.push(took);
            }
        }
    }
    let [h2_times, http1_times, fallback_times] = times;
    println!(
        "median of {DIALS} dials on loopback: HTTP/2 extended CONNECT {:?}, \
         HTTP/1.1 (connect_async_with) {:?}, HTTP/2 refused then HTTP/1.1 {:?}",
        median(h2_times),
        median(http1_times),
        median(fallback_times)
    );
}

async fn close<S: AsyncRead + AsyncWrite + Unpin>(mut ws: WebSocketStream<S>) {
    ws.close(None).await.unwrap();
    while ws.read().await.is_ok() {}
}

/// A server that ends its side of the stream while the client's is open
/// resets it with NO_ERROR (h2 does; the echo servers here do it as soon
/// as they have the client's close frame): a flush waiting then
/// succeeds, while writes fail.
#[tokio::test]
async fn a_stream_reset_with_no_error_fails_no_flush() {
    use tokio::io::AsyncWriteExt;

    let ca = TestCa::new();
    let identity = ca.issue(&["localhost", "127.0.0.1"]);
    let (addr, release, _server) = holding_server(&identity).await;
    let (ws, _) = dial(&format!("wss://{addr}/ws"), options(&ca))
        .await
        .unwrap();
    let mut stream = ws.into_inner();
    assert!(stream.is_http2());
    // The server reads nothing: once its flow-control window is full,
    // hyper's send task holds the last write, so a flush waits.
    let chunk = vec![0u8; 256 << 10];
    let mut written = 0;
    tokio::select! {
        () = async {
            loop {
                stream.write_all(&chunk).await.unwrap();
                written += chunk.len();
            }
        } => {}
        () = tokio::time::sleep(Duration::from_millis(300)) => {}
    }
    assert!(
        written < 64 << 20,
        "{written} bytes to a server that reads nothing"
    );
    let flush = stream.flush();
    tokio::pin!(flush);
    assert!(support::poll_once(flush.as_mut()).is_pending());
    release.send(()).unwrap();
    timeout(LIMIT, flush).await.unwrap().unwrap();
    assert!(stream.write(b"x").await.is_err());
    stream.shutdown().await.unwrap();
}

/// An HTTP/2 server for one WebSocket, which it neither reads nor writes
/// until `release` fires; then it ends its side of the stream and drops
/// it.
async fn holding_server(
    identity: &Identity,
) -> (SocketAddr, tokio::sync::oneshot::Sender<()>, JoinHandle<()>) {
    use std::sync::Mutex;
    use tokio::io::AsyncWriteExt;

    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut config = rustls::ServerConfig::clone(&identity.server_config());
    config.alpn_protocols = vec![b"h2".to_vec()];
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let released = Arc::new(Mutex::new(Some(released)));
    let task = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let tls = acceptor.accept(tcp).await.unwrap();
        let service = service_fn(move |mut request: Request<Incoming>| {
            let released = released.lock().unwrap().take();
            async move {
                let accept = accept_response(&mut request, UpgradeSettings::default()).unwrap();
                let response = accept.response.clone().map(|()| Full::<Bytes>::default());
                tokio::spawn(async move {
                    let ws = accepted(accept).await.unwrap();
                    let _ = released.unwrap().await;
                    let mut stream = ws.into_inner();
                    let _ = stream.shutdown().await;
                });
                Ok::<_, Infallible>(response)
            }
        });
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder.http2().enable_connect_protocol();
        let _ = builder
            .serve_connection_with_upgrades(TokioIo::new(tls), service)
            .await;
    });
    (addr, release, task)
}
