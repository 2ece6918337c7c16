//! A hyper 1 HTTP/1.1 server that serves plain HTTP and hands WebSocket
//! upgrades to tokio-lockgate, which echoes every text and binary message.
//!
//! ```text
//! cargo run -p tokio-lockgate --example hyper-upgrade              # 127.0.0.1:9003
//! cargo run -p tokio-lockgate --example hyper-upgrade -- 0.0.0.0:8080
//! curl http://127.0.0.1:9003/                                       # plain HTTP
//! ```
//!
//! Then connect any WebSocket client to `ws://127.0.0.1:9003/ws`, say
//! `cargo run -p tokio-lockgate --example tokio-client -- ws://127.0.0.1:9003/ws`.
//!
//! hyper owns the HTTP connection: it parses the request and writes the
//! `101 Switching Protocols` response. The upgrade request is checked
//! against RFC 6455 section 4.2.1 by lockgate's sans-IO
//! [`upgrade_response`], which also builds the 101; once hyper has sent it,
//! `hyper::upgrade::on` yields the raw connection (with any bytes hyper read
//! past the request), and [`WebSocketStream::from_raw_socket`] takes it from
//! there.

use std::convert::Infallible;
use std::time::{Duration, Instant};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio_lockgate::handshake::upgrade_response;
use tokio_lockgate::{Config, Error, Role, WebSocketStream};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:9003".to_owned());
    let listener = TcpListener::bind(&addr).await?;
    let local = listener.local_addr()?;
    println!("hyper-upgrade listening on http://{local}/ (WebSocket echo at ws://{local}/ws)");
    println!("try: cargo run -p tokio-lockgate --example tokio-client -- ws://{local}/ws");

    let mut backoff = AcceptBackoff::default();
    loop {
        let (tcp, peer) = match listener.accept().await {
            Ok(accepted) => {
                backoff.succeeded();
                accepted
            }
            Err(err) => {
                // Out of file descriptors, for one: wait for connections to
                // close instead of spinning on the error.
                tokio::time::sleep(backoff.failed(&err)).await;
                continue;
            }
        };
        // Each WebSocket flush is one message or one batch: send it now.
        let _ = tcp.set_nodelay(true);
        tokio::spawn(async move {
            let connection = http1::Builder::new()
                .serve_connection(TokioIo::new(tcp), service_fn(route))
                // Without this hyper never hands the connection over.
                .with_upgrades();
            if let Err(err) = connection.await {
                eprintln!("{peer}: HTTP connection failed: {err}");
            }
        });
    }
}

/// The whole site: a greeting at `/`, the WebSocket echo at `/ws`.
async fn route(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(match request.uri().path() {
        "/ws" => upgrade(request),
        "/" if request.method() == Method::GET => text(
            StatusCode::OK,
            "Hello from hyper. The WebSocket echo is at /ws.\n",
        ),
        _ => text(StatusCode::NOT_FOUND, "Not found.\n"),
    })
}

/// Answers an upgrade request with 101 and starts the echo once hyper has
/// sent it, or refuses the request.
fn upgrade(mut request: Request<Incoming>) -> Response<Full<Bytes>> {
    // The 101 with `Connection`, `Upgrade` and `Sec-WebSocket-Accept`, or
    // why the request is not a valid upgrade.
    let switching = match upgrade_response(&request) {
        Ok(switching) => switching,
        // 400, or 426 with `Sec-WebSocket-Version: 13`, in one call.
        Err(err) => return err.to_response(request.version()).map(Full::from),
    };
    // Resolves once the 101 is written and hyper lets go of the connection.
    let on_upgrade = hyper::upgrade::on(&mut request);
    tokio::spawn(async move {
        let upgraded = match on_upgrade.await {
            Ok(upgraded) => upgraded,
            Err(err) => return eprintln!("upgrade failed: {err}"),
        };
        let ws = WebSocketStream::from_raw_socket(
            TokioIo::new(upgraded),
            Role::Server,
            Config::default(),
        )
        .await;
        match echo(ws).await {
            Ok(echoed) => println!("WebSocket closed after echoing {echoed} message(s)"),
            Err(err) => println!("WebSocket dropped: {err}"),
        }
    });
    // hyper uses the same `http` types: keep status and headers, add the
    // (empty) body.
    switching.map(|()| Full::default())
}

/// Echoes every data message until the closing handshake completes;
/// returns how many were echoed.
async fn echo<S>(mut ws: WebSocketStream<S>) -> tokio_lockgate::Result<u64>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut echoed = 0;
    loop {
        match ws.read().await {
            Ok(message) if message.is_data() => {
                // `send` = `write` + `flush`: the echo goes out right away.
                ws.send(message).await?;
                echoed += 1;
            }
            // Pongs and the close reply are queued and sent by the library.
            Ok(_) => {}
            Err(Error::ConnectionClosed) => return Ok(echoed),
            Err(err) => return Err(err),
        }
    }
}

/// A `text/plain` response.
fn text(status: StatusCode, body: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::copy_from_slice(body.as_bytes())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// The wait after a failed `accept`. Out of file descriptors (EMFILE), every
/// `accept` fails until a connection closes: retrying at once would spin a
/// core and flood the log. The wait doubles from 5 ms to 1 s and an accepted
/// connection resets it; failures are reported at most once a second, with
/// a count.
#[derive(Default)]
struct AcceptBackoff {
    delay: Duration,
    unreported: u64,
    last_report: Option<Instant>,
}

impl AcceptBackoff {
    const FIRST: Duration = Duration::from_millis(5);
    const MAX: Duration = Duration::from_secs(1);
    const REPORT_EVERY: Duration = Duration::from_secs(1);

    /// Counts a failure, reports it unless the last report is recent, and
    /// returns how long to wait before the next `accept`.
    fn failed(&mut self, err: &std::io::Error) -> Duration {
        self.unreported += 1;
        self.delay = (self.delay * 2).clamp(Self::FIRST, Self::MAX);
        if self
            .last_report
            .is_none_or(|at| at.elapsed() >= Self::REPORT_EVERY)
        {
            eprintln!(
                "accept failed: {err} ({} failure(s) since the last report; next try in {:?})",
                self.unreported, self.delay
            );
            self.unreported = 0;
            self.last_report = Some(Instant::now());
        }
        self.delay
    }

    fn succeeded(&mut self) {
        self.delay = Duration::ZERO;
    }
}
