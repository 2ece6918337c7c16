//! Client for the Autobahn TestSuite (fuzzingserver mode), on smol through
//! the `futures-io` driver: asks for the case count, runs every case
//! (echoing each data message until the server closes), then asks for the
//! reports.
//!
//! Run the whole conformance suite against it with
//! `AUTOBAHN_PACKAGE=async-lockgate AUTOBAHN_SUFFIX=-async bash autobahn/run.sh client`.

use std::process::ExitCode;
use std::time::Duration;

use async_lockgate::deflate::DeflateConfig;
use async_lockgate::http::Uri;
use async_lockgate::{ClientOptions, Config, Error, Message, Result, WebSocketStream};
use smol::net::TcpStream;

const AGENT: &str = "lockgate";

fn main() -> ExitCode {
    let base = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "ws://127.0.0.1:9001".to_owned());
    let base = base.trim_end_matches('/').to_owned();
    smol::block_on(async {
        let count = match case_count(&base).await {
            Ok(count) => count,
            Err(error) => {
                eprintln!("async-autobahn-client: getCaseCount failed: {error}");
                return ExitCode::FAILURE;
            }
        };
        println!("async-autobahn-client: running {count} cases against {base}");
        let mut failed = 0;
        for case in 1..=count {
            let url = format!("{base}/runCase?case={case}&agent={AGENT}");
            match connect(&url, config()).await {
                Ok(mut ws) => echo_until_closed(&mut ws).await,
                Err(error) => {
                    failed += 1;
                    eprintln!("async-autobahn-client: case {case}: {error}");
                }
            }
        }
        let reports = format!("{base}/updateReports?agent={AGENT}");
        match connect(&reports, Config::default()).await {
            Ok(mut ws) => {
                // The server writes the reports and hangs up.
                let _ = ws.close(None).await;
                while ws.read().await.is_ok() {}
            }
            Err(error) => {
                eprintln!("async-autobahn-client: updateReports failed: {error}");
                return ExitCode::FAILURE;
            }
        }
        if failed > 0 {
            eprintln!("async-autobahn-client: {failed} case(s) could not be run");
            return ExitCode::FAILURE;
        }
        ExitCode::SUCCESS
    })
}

/// TCP to the URL's host and port, then the handshake.
async fn connect(url: &str, config: Config) -> Result<WebSocketStream<TcpStream>> {
    let uri: Uri = url
        .parse()
        .map_err(|_| Error::Io(std::io::Error::other("bad URL")))?;
    let host = uri.host().unwrap_or("127.0.0.1");
    let port = uri.port_u16().unwrap_or(80);
    let tcp = TcpStream::connect((host, port)).await?;
    tcp.set_nodelay(true)?;
    let options = ClientOptions::new().config(config);
    let (ws, _) = async_lockgate::client_async_with(url, tcp, options).await?;
    Ok(ws)
}

async fn case_count(base: &str) -> Result<u32> {
    let mut ws = connect(&format!("{base}/getCaseCount"), Config::default()).await?;
    let mut count = None;
    loop {
        match ws.read().await {
            Ok(Message::Text(text)) => count = text.trim().parse::<u32>().ok(),
            Ok(_) => {}
            // Once the count is in, how the server hangs up is moot.
            Err(_) if count.is_some() => break,
            Err(Error::ConnectionClosed | Error::AlreadyClosed) => break,
            Err(error) => return Err(error),
        }
    }
    count.ok_or_else(|| Error::Io(std::io::Error::other("no case count received")))
}

async fn echo_until_closed(ws: &mut WebSocketStream<TcpStream>) {
    while let Ok(msg) = ws.read().await {
        if msg.is_data() && ws.send(msg).await.is_err() {
            return;
        }
    }
}

/// permessage-deflate offered (with `client_no_context_takeover`, which
/// Autobahn's 13.2, 13.5 and 13.6 servers require) and every message
/// compressed.
///
/// The connection sleeps whenever it waits quietly for input (a zero
/// `sleep_after`): its decompressor, which keeps the server's context, is
/// dropped and rebuilt from the window before nearly every message, so the
/// 12.x and 13.x cases prove that waking loses nothing, in the run CI
/// already makes.
fn config() -> Config {
    Config::default().deflate(Some(
        DeflateConfig::default()
            .min_compress_size(0)
            .client_no_context_takeover(true)
            .sleep_after(Some(Duration::ZERO)),
    ))
}
