//! The `Origin` check on every server path of the tokio adapter, over
//! real sockets: `accept_async*` (tokio-tungstenite's names keep the
//! default policy) and `accept_async_with`'s `ServerOptions`; hyper's
//! HTTP/1.1 upgrades and HTTP/2 extended CONNECT through
//! `upgrade::accept_response` (feature `hyper`), where `:authority` names
//! the server's own origin; and the axum extractor (feature `axum`),
//! whose policy comes from an `Extension` layer. An upgrade from another
//! origin is answered with 403 and never reaches the callback or the
//! handler; one without `Origin`, from the server's own origin or from an
//! allowed one opens; a real browser's page of another origin is refused
//! by the `axum` example unless allowed with `--allow-origin`. Every test
//! is bounded in time.
#![allow(
    clippy::result_large_err,
    reason = "callbacks return ErrorResponse by value, tungstenite's signature"
)]

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio::time::timeout;
use tokio_lockgate::handshake::OriginPolicy;
use tokio_lockgate::http::{Request, Response};
use tokio_lockgate::{
    ClientOptions, Error, HandshakeFailure, ServerOptions, WebSocketStream, client_async_with,
};

/// The most any one exchange may take.
const LIMIT: Duration = Duration::from_secs(20);

/// An upgrade request for `url`, with `Origin: origin` if given.
fn request(url: &str, origin: Option<&str>) -> Request<()> {
    let mut request = Request::get(url);
    if let Some(origin) = origin {
        request = request.header("origin", origin);
    }
    request.body(()).unwrap()
}

/// Upgrades over HTTP/1.1 to `ws://addr/ws` with `origin`: the status the
/// client got and the body of a refusal.
async fn http1_status(addr: SocketAddr, origin: Option<&str>) -> (u16, String) {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let url = format!("ws://{addr}/ws");
    let outcome = timeout(
        LIMIT,
        client_async_with(request(&url, origin), tcp, ClientOptions::new()),
    )
    .await
    .unwrap();
    match outcome {
        Ok((_ws, response)) => (response.status().as_u16(), String::new()),
        Err(Error::Http(response)) => {
            let body = response.body().as_deref().unwrap_or_default();
            (
                response.status().as_u16(),
                String::from_utf8_lossy(body).into_owned(),
            )
        }
        Err(other) => panic!("{other:?}"),
    }
}

/// Runs `accept` on the first connection to a new listener; the task's
/// result is whether it opened a WebSocket.
async fn serve_once<F, Fut>(accept: F) -> (SocketAddr, JoinHandle<tokio_lockgate::Result<()>>)
where
    F: FnOnce(TcpStream) -> Fut + Send + 'static,
    Fut: Future<Output = tokio_lockgate::Result<WebSocketStream<TcpStream>>> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        accept(tcp).await.map(drop)
    });
    (addr, server)
}

async fn outcome(server: JoinHandle<tokio_lockgate::Result<()>>) -> tokio_lockgate::Result<()> {
    timeout(LIMIT, server).await.unwrap().unwrap()
}

fn is_origin_refused(result: &tokio_lockgate::Result<()>) -> bool {
    matches!(
        result.as_ref().err().and_then(|e| e.handshake_failure()),
        Some(HandshakeFailure::OriginRefused { .. })
    )
}

#[tokio::test]
async fn accept_async_refuses_other_origins_with_403() {
    // (Origin, or the server's own if None inside; status)
    let cases: [(Option<&str>, u16); 4] = [
        (Some("https://evil.example"), 403),
        (Some("null"), 403),
        (Some("own"), 101),
        (None, 101),
    ];
    for (origin, status) in cases {
        let (addr, server) = serve_once(tokio_lockgate::accept_async).await;
        let own = format!("http://{addr}");
        let origin = origin.map(|origin| {
            if origin == "own" {
                own.as_str()
            } else {
                origin
            }
        });
        let (got, body) = http1_status(addr, origin).await;
        assert_eq!(got, status, "{origin:?}");
        let result = outcome(server).await;
        if status == 403 {
            assert!(body.contains("is not allowed"), "{body}");
            assert!(is_origin_refused(&result), "{result:?}");
        } else {
            result.unwrap();
        }
    }
    let (addr, server) =
        serve_once(|tcp| tokio_lockgate::accept_async_with_config(tcp, None)).await;
    assert_eq!(http1_status(addr, Some("http://localhost:1")).await.0, 403);
    assert!(is_origin_refused(&outcome(server).await));
}

/// A callback that counts its calls.
fn counting(
    calls: &Arc<AtomicUsize>,
) -> impl FnOnce(
    &Request<()>,
    Response<()>,
) -> Result<Response<()>, tokio_lockgate::handshake::server::ErrorResponse>
+ Send
+ 'static {
    let calls = Arc::clone(calls);
    move |_: &Request<()>, response: Response<()>| {
        calls.fetch_add(1, Ordering::SeqCst);
        Ok(response)
    }
}

#[tokio::test]
async fn callbacks_never_see_a_refused_upgrade() {
    let calls = Arc::new(AtomicUsize::new(0));
    let callback = counting(&calls);
    let (addr, server) =
        serve_once(move |tcp| tokio_lockgate::accept_hdr_async(tcp, callback)).await;
    assert_eq!(
        http1_status(addr, Some("https://evil.example")).await.0,
        403
    );
    assert!(is_origin_refused(&outcome(server).await));
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    let callback = counting(&calls);
    let (addr, server) = serve_once(move |tcp| {
        tokio_lockgate::accept_async_with(tcp, ServerOptions::new().callback(callback))
    })
    .await;
    assert_eq!(
        http1_status(addr, Some("https://evil.example")).await.0,
        403
    );
    assert!(is_origin_refused(&outcome(server).await));
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    let callback = counting(&calls);
    let (addr, server) =
        serve_once(move |tcp| tokio_lockgate::accept_hdr_async(tcp, callback)).await;
    let own = format!("http://{addr}");
    assert_eq!(http1_status(addr, Some(&own)).await.0, 101);
    outcome(server).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn server_options_take_a_policy() {
    let allow = OriginPolicy::allow(["https://*.example.com", "http://localhost:*"]).unwrap();
    // (policy, Origin, status)
    let cases = [
        (allow.clone(), "https://app.example.com", 101),
        (allow.clone(), "https://a.b.example.com", 101),
        (allow.clone(), "http://localhost:5173", 101),
        (allow.clone(), "https://example.com", 403),
        (allow, "https://evil.example", 403),
        (OriginPolicy::any(), "https://evil.example", 101),
        (OriginPolicy::any(), "null", 101),
    ];
    for (policy, origin, status) in cases {
        let options = ServerOptions::new().origin_policy(policy);
        let (addr, server) =
            serve_once(move |tcp| tokio_lockgate::accept_async_with(tcp, options)).await;
        assert_eq!(http1_status(addr, Some(origin)).await.0, status, "{origin}");
        assert_eq!(outcome(server).await.is_ok(), status == 101, "{origin}");
    }
}

/// An HTTP/2 extended CONNECT to `ws://addr/ws` (`:authority` is
/// `addr`) with `origin`, over hyper's client: the status, after checking
/// the echo when it opened. For the hyper and axum servers alike.
#[cfg(feature = "hyper")]
async fn h2_status(addr: SocketAddr, origin: Option<&str>) -> u16 {
    let tcp = TcpStream::connect(addr).await.unwrap();
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use tokio_lockgate::Message;

    let (mut sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .unwrap();
    tokio::spawn(connection);
    let url = format!("ws://{addr}/ws");
    let outcome = timeout(
        LIMIT,
        tokio_lockgate::upgrade::connect_h2::<http_body_util::Empty<hyper::body::Bytes>>(
            &mut sender,
            request(&url, origin),
            tokio_lockgate::Config::default(),
        ),
    )
    .await
    .unwrap();
    match outcome {
        Ok((mut ws, response)) => {
            assert_eq!(response.version(), tokio_lockgate::http::Version::HTTP_2);
            ws.send(Message::text("over h2")).await.unwrap();
            let echo = timeout(LIMIT, ws.read()).await.unwrap().unwrap();
            assert_eq!(echo, Message::text("over h2"));
            response.status().as_u16()
        }
        Err(Error::Http(response)) => response.status().as_u16(),
        Err(other) => panic!("{other:?}"),
    }
}

#[cfg(feature = "hyper")]
mod hyper_upgrades {
    use std::convert::Infallible;

    use http_body_util::Full;
    use hyper::body::{Bytes, Incoming};
    use hyper::service::service_fn;
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::server::conn::auto;
    use tokio_lockgate::http::StatusCode;
    use tokio_lockgate::upgrade::{UpgradeSettings, accept_response, accepted, check_request};

    use super::*;

    /// A hyper server (HTTP/1.1 and HTTP/2 with extended CONNECT) that
    /// accepts upgrades with `settings` and echoes; the count of upgrades
    /// it accepted.
    async fn serve(settings: UpgradeSettings) -> (SocketAddr, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let upgrades = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&upgrades);
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let settings = settings.clone();
                let counted = Arc::clone(&counted);
                let service = service_fn(move |mut request: Request<Incoming>| {
                    let settings = settings.clone();
                    let counted = Arc::clone(&counted);
                    async move {
                        let accept = match accept_response(&mut request, settings) {
                            Ok(accept) => accept,
                            Err(refusal) => {
                                return Ok::<_, Infallible>(
                                    refusal.to_response().map(Full::<Bytes>::from),
                                );
                            }
                        };
                        counted.fetch_add(1, Ordering::SeqCst);
                        let response = accept.response.clone().map(|()| Full::default());
                        tokio::spawn(async move {
                            let Ok(mut ws) = accepted(accept).await else {
                                return;
                            };
                            while let Ok(message) = ws.read().await {
                                if message.is_data() && ws.send(message).await.is_err() {
                                    break;
                                }
                            }
                        });
                        Ok(response)
                    }
                });
                tokio::spawn(async move {
                    let mut builder = auto::Builder::new(TokioExecutor::new());
                    builder.http2().enable_connect_protocol();
                    let _ = builder
                        .serve_connection_with_upgrades(TokioIo::new(tcp), service)
                        .await;
                });
            }
        });
        (addr, upgrades)
    }

    #[tokio::test]
    async fn http1_upgrades_check_the_host() {
        let (addr, upgrades) = serve(UpgradeSettings::default()).await;
        let own = format!("http://{addr}");
        let (status, body) = http1_status(addr, Some("https://evil.example")).await;
        assert_eq!(status, 403);
        assert!(
            body.contains("Origin https://evil.example is not allowed"),
            "{body}"
        );
        assert_eq!(upgrades.load(Ordering::SeqCst), 0);
        assert_eq!(http1_status(addr, Some(&own)).await.0, 101);
        assert_eq!(http1_status(addr, None).await.0, 101);
        assert_eq!(upgrades.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn http2_extended_connect_checks_the_authority() {
        let (addr, upgrades) = serve(UpgradeSettings::default()).await;
        let own = format!("http://{addr}");
        let other_port = format!("http://127.0.0.1:{}", addr.port() ^ 1);
        assert_eq!(h2_status(addr, Some("https://evil.example")).await, 403);
        assert_eq!(h2_status(addr, Some(&other_port)).await, 403);
        assert_eq!(upgrades.load(Ordering::SeqCst), 0);
        assert_eq!(h2_status(addr, Some(&own)).await, 200);
        assert_eq!(h2_status(addr, None).await, 200);
        assert_eq!(upgrades.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn settings_take_a_policy() {
        let allow = OriginPolicy::allow(["https://*.example.com"]).unwrap();
        let settings = UpgradeSettings::default().origin_policy(allow.clone());
        assert_eq!(settings.get_origin_policy(), &allow);
        let (addr, _) = serve(settings).await;
        assert_eq!(
            http1_status(addr, Some("https://app.example.com")).await.0,
            101
        );
        assert_eq!(h2_status(addr, Some("https://app.example.com")).await, 200);
        assert_eq!(http1_status(addr, Some("https://example.com")).await.0, 403);
        assert_eq!(h2_status(addr, Some("https://example.com")).await, 403);

        let (addr, _) = serve(UpgradeSettings::default().origin_policy(OriginPolicy::any())).await;
        assert_eq!(
            http1_status(addr, Some("https://evil.example")).await.0,
            101
        );
        assert_eq!(h2_status(addr, Some("https://evil.example")).await, 200);
    }

    #[test]
    fn check_request_checks_the_origin() {
        let cross = Request::get("/ws")
            .header("host", "example.com")
            .header("upgrade", "websocket")
            .header("connection", "Upgrade")
            .header("sec-websocket-version", "13")
            .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
            .header("origin", "https://evil.example")
            .body(())
            .unwrap();
        let refusal = check_request(&cross, &UpgradeSettings::default()).unwrap_err();
        assert_eq!(refusal.status(), StatusCode::FORBIDDEN);
        assert!(matches!(
            refusal.handshake_error(),
            Some(HandshakeFailure::OriginRefused { .. })
        ));
        // With any origin allowed, what is left is that hyper did not
        // make this request upgradable.
        let any = UpgradeSettings::default().origin_policy(OriginPolicy::any());
        let refusal = check_request(&cross, &any).unwrap_err();
        assert!(refusal.handshake_error().is_none(), "{refusal}");
    }
}

#[cfg(feature = "axum")]
mod axum_extractor {
    use axum::response::Response as AxumResponse;
    use axum::routing::any;
    use axum::{Extension, Router};
    use tokio_lockgate::axum::{WebSocket, WebSocketUpgrade};

    use super::*;

    /// Serves `/ws` with axum, `policy` (if any) as an `Extension` layer;
    /// the count of handler runs.
    async fn serve(policy: Option<OriginPolicy>) -> (SocketAddr, Arc<AtomicUsize>) {
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&runs);
        let handler = move |upgrade: WebSocketUpgrade| {
            counted.fetch_add(1, Ordering::SeqCst);
            async move {
                upgrade.on_upgrade(|mut ws: WebSocket| async move {
                    while let Ok(message) = ws.read().await {
                        if message.is_data() && ws.send(message).await.is_err() {
                            break;
                        }
                    }
                }) as AxumResponse
            }
        };
        let mut app = Router::new().route("/ws", any(handler));
        if let Some(policy) = policy {
            app = app.layer(Extension(policy));
        }
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        (addr, runs)
    }

    #[tokio::test]
    async fn the_extractor_refuses_other_origins_before_the_handler() {
        let (addr, runs) = serve(None).await;
        let own = format!("http://{addr}");
        let (status, body) = http1_status(addr, Some("https://evil.example")).await;
        assert_eq!(status, 403);
        assert!(body.contains("is not allowed"), "{body}");
        assert_eq!(h2_status(addr, Some("https://evil.example")).await, 403);
        assert_eq!(http1_status(addr, Some("null")).await.0, 403);
        assert_eq!(runs.load(Ordering::SeqCst), 0, "the handler never ran");

        assert_eq!(http1_status(addr, Some(&own)).await.0, 101);
        assert_eq!(h2_status(addr, Some(&own)).await, 200);
        assert_eq!(http1_status(addr, None).await.0, 101);
        assert_eq!(runs.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn an_extension_layer_sets_the_policy() {
        let allow = OriginPolicy::allow(["https://*.example.com"]).unwrap();
        let (addr, runs) = serve(Some(allow)).await;
        let own = format!("http://{addr}");
        assert_eq!(
            http1_status(addr, Some("https://app.example.com")).await.0,
            101
        );
        assert_eq!(h2_status(addr, Some("https://a.b.example.com")).await, 200);
        assert_eq!(http1_status(addr, Some(&own)).await.0, 101);
        assert_eq!(runs.load(Ordering::SeqCst), 3);
        assert_eq!(http1_status(addr, Some("https://example.com")).await.0, 403);
        assert_eq!(runs.load(Ordering::SeqCst), 3);

        let (addr, _) = serve(Some(OriginPolicy::any())).await;
        assert_eq!(
            http1_status(addr, Some("https://evil.example")).await.0,
            101
        );
        assert_eq!(h2_status(addr, Some("null")).await, 200);
    }
}

/// Headless Chromium (Debian's `chromium`) loads a page of another origin
/// (a server here, on another port) whose script opens the `axum`
/// example's echo: refused by default, opened once the example is started
/// with `--allow-origin` for that origin. Skipped (with a note) when
/// Chromium is not installed, unless `LOCKGATE_REQUIRE_CHROMIUM=1`.
#[cfg(all(feature = "axum", unix))]
mod chromium {
    use std::io::{Read, Write};
    use std::sync::mpsc;

    use lockgate_kit::programs::{HeadlessChromium, Program, free_address};

    /// Serves, on a port of its own, a page that opens `ws_url` and reports
    /// what happened to `/report`; the reports arrive on the receiver.
    fn page_server(ws_url: String) -> (String, mpsc::Receiver<String>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let (reports, received) = mpsc::channel();
        let page = format!(
            r#"<!doctype html><title>another origin</title><script>
const report = (what) => fetch("/report?" + encodeURIComponent(what));
const ws = new WebSocket("{ws_url}");
ws.onopen = () => ws.send("hello from another origin");
ws.onmessage = (e) => {{ report(e.data === "hello from another origin" ? "echo ok" : "echo wrong"); ws.close(); }};
ws.onerror = () => report("echo failed");
</script>"#
        );
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let _ = stream.set_read_timeout(Some(super::LIMIT));
                let mut head = Vec::new();
                let mut buf = [0; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&head);
                let path = head.split(' ').nth(1).unwrap_or("");
                let (status, body) = if let Some(what) = path.strip_prefix("/report?") {
                    if reports.send(what.replace("%20", " ")).is_err() {
                        return;
                    }
                    ("200 OK", "thanks".to_owned())
                } else if path == "/" {
                    ("200 OK", page.clone())
                } else {
                    ("404 Not Found", String::new())
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        (addr, received)
    }

    /// What the page reports when the example runs with `args` after its
    /// address.
    fn page_report(args: impl Fn(&str) -> Vec<String>) -> String {
        let addr = free_address();
        let (page, reports) = page_server(format!("ws://{addr}/ws"));
        let mut example_args = vec![addr.clone()];
        example_args.extend(args(&page));
        let example_args: Vec<&str> = example_args.iter().map(String::as_str).collect();
        let server = Program::start("axum", &example_args);
        server.expect_line("listening on");
        let tag = format!("origin-{page}");
        let browser = HeadlessChromium::open(&tag, &[], &format!("http://{page}/"));
        let report = reports
            .recv_timeout(super::LIMIT)
            .expect("the page reports");
        drop(browser);
        drop(server);
        report
    }

    #[test]
    fn chromium_pages_of_other_origins_need_allowing() {
        if !lockgate_kit::chromium_installed() {
            return;
        }
        assert_eq!(page_report(|_| Vec::new()), "echo failed");
        assert_eq!(
            page_report(|page| vec!["--allow-origin".into(), format!("http://{page}")]),
            "echo ok"
        );
        assert_eq!(
            page_report(|_| vec!["--allow-origin".into(), "*".into()]),
            "echo ok"
        );
    }
}
