//! Client for the Autobahn TestSuite (fuzzingserver mode), on io_uring
//! (tokio-uring).
//!
//! Asks the fuzzing server how many cases there are (`/getCaseCount`), runs
//! each one (`/runCase?case=N&agent=lockgate`: echo every data message back
//! until the server closes), then tells it to write the reports
//! (`/updateReports?agent=lockgate`).
//!
//! Run the whole conformance suite against it with
//! `AUTOBAHN_PACKAGE=uring-lockgate AUTOBAHN_SUFFIX=-uring bash autobahn/run.sh client`,
//! or by hand:
//!
//! ```text
//! kosoku -m fuzzingserver 127.0.0.1:9001 -x '12.*' -x '13.*'
//! cargo run --release -p uring-lockgate --example uring-autobahn-client -- ws://127.0.0.1:9001
//! ```

use std::process::ExitCode;
use std::time::Instant;

use std::net::ToSocketAddrs;

use uring_lockgate::lockgate::handshake::IntoClientRequest;
use uring_lockgate::{ClientOptions, Error, Message, UringStream, WebSocketStream};

const AGENT: &str = "lockgate";

fn main() -> ExitCode {
    tokio_uring::start(run())
}

async fn run() -> ExitCode {
    let base = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "ws://127.0.0.1:9001".to_owned());
    let base = base.trim_end_matches('/');
    let started = Instant::now();

    let count = match case_count(base).await {
        Ok(count) => count,
        Err(err) => {
            eprintln!("uring-autobahn-client: getCaseCount failed: {err}");
            return ExitCode::FAILURE;
        }
    };
    println!("uring-autobahn-client: running {count} cases against {base}");

    let mut failed = 0;
    for case in 1..=count {
        if let Err(err) = run_case(base, case).await {
            failed += 1;
            eprintln!("uring-autobahn-client: case {case}: {err}");
        }
        if case % 50 == 0 || case == count {
            println!(
                "uring-autobahn-client: {case}/{count} cases, {:.1}s",
                started.elapsed().as_secs_f64()
            );
        }
    }

    if let Err(err) = update_reports(base).await {
        eprintln!("uring-autobahn-client: updateReports failed: {err}");
        return ExitCode::FAILURE;
    }
    if failed > 0 {
        // The report holds the verdicts; these are connections that could
        // not even be opened.
        eprintln!("uring-autobahn-client: {failed} case(s) could not be run");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

async fn case_count(base: &str) -> uring_lockgate::Result<u32> {
    let mut ws = connect(format!("{base}/getCaseCount"), ClientOptions::new()).await?;
    let mut count = None;
    // The server sends the count as text, then closes.
    loop {
        match ws.read().await {
            Ok(Message::Text(text)) => {
                count = Some(text.trim().parse::<u32>().map_err(|_| {
                    Error::Io(std::io::Error::other(format!(
                        "bad case count {:?}",
                        text.as_str()
                    )))
                })?);
            }
            Ok(_) => {}
            Err(Error::ConnectionClosed | Error::AlreadyClosed) => break,
            Err(err) if count.is_some() => {
                // We have what we came for; how the server hung up is moot.
                eprintln!("uring-autobahn-client: getCaseCount: {err}");
                break;
            }
            Err(err) => return Err(err),
        }
    }
    count.ok_or_else(|| Error::Io(std::io::Error::other("no case count received")))
}

/// A `ws://` URL's connection (no `connect_async` here): TCP with
/// `TCP_NODELAY`, then the client handshake.
async fn connect(url: String, options: ClientOptions) -> uring_lockgate::Result<WebSocketStream> {
    let request = url.into_client_request()?;
    let uri = request.uri();
    let host = uri.host().unwrap_or("127.0.0.1");
    let port = uri.port_u16().unwrap_or(80);
    let addr = (host, port)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| Error::Io(std::io::Error::other("no address")))?;
    let tcp = UringStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    let (ws, _) = uring_lockgate::client_async_with(request, tcp, options).await?;
    Ok(ws)
}

/// Runs one case. Errors the case provokes on purpose (protocol violations)
/// are part of the test and not returned; only a failure to connect is.
async fn run_case(base: &str, case: u32) -> uring_lockgate::Result<()> {
    let mut ws = connect(
        format!("{base}/runCase?case={case}&agent={AGENT}"),
        ClientOptions::new().config(config()),
    )
    .await?;
    echo_until_closed(&mut ws).await;
    Ok(())
}

async fn echo_until_closed(ws: &mut WebSocketStream) {
    loop {
        match ws.read().await {
            Ok(msg @ (Message::Text(_) | Message::Binary(_))) => {
                if ws.send(msg).await.is_err() {
                    return;
                }
            }
            // Pongs and the close reply are queued and flushed by the library.
            Ok(Message::Ping(_) | Message::Pong(_) | Message::Close(_) | Message::Frame(_)) => {}
            Err(Error::ConnectionClosed | Error::AlreadyClosed) => return,
            // A protocol violation or a size limit: `read` has already sent
            // the close frame with the matching code. Give up on the case.
            Err(_) => return,
        }
    }
}

async fn update_reports(base: &str) -> uring_lockgate::Result<()> {
    let mut ws = connect(
        format!("{base}/updateReports?agent={AGENT}"),
        ClientOptions::new(),
    )
    .await?;
    // The server writes the reports and hangs up, possibly without a close
    // frame; whatever happens after the handshake does not matter.
    let _ = ws.close(None).await;
    while ws.read().await.is_ok() {}
    Ok(())
}

/// The conformance configuration: defaults, plus permessage-deflate offered
/// (client) or accepted (server) so Autobahn's 12.x and 13.x cases run.
/// Every message is compressed (no minimum size): kosoku 0.1.0 fails its
/// 12.x hash check on uncompressed text echoes, and compressing everything
/// exercises the codec hardest anyway. The offer includes
/// `client_no_context_takeover`: Autobahn's 13.2, 13.5 and 13.6 servers only
/// accept offers that say the client can work without context takeover.
fn config() -> uring_lockgate::Config {
    uring_lockgate::Config::default().deflate(Some(
        uring_lockgate::deflate::DeflateConfig::default()
            .min_compress_size(0)
            .client_no_context_takeover(true),
    ))
}
