//! Client for the Autobahn TestSuite (fuzzingserver mode).
//!
//! Asks the fuzzing server how many cases there are (`/getCaseCount`), runs
//! each one (`/runCase?case=N&agent=lockgate`: echo every data message back
//! until the server closes), then tells it to write the reports
//! (`/updateReports?agent=lockgate`).
//!
//! Run the whole conformance suite against it with `bash autobahn/run.sh client`,
//! or by hand:
//!
//! ```text
//! kosoku -m fuzzingserver 127.0.0.1:9001 -x '12.*' -x '13.*'
//! cargo run --release --example autobahn-client -- ws://127.0.0.1:9001
//! ```

use std::net::TcpStream;

use lockgate::stream::MaybeTlsStream;
use std::process::ExitCode;
use std::time::Instant;

use lockgate::{Error, Message, WebSocket};

const AGENT: &str = "lockgate";

fn main() -> ExitCode {
    let base = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "ws://127.0.0.1:9001".to_owned());
    let base = base.trim_end_matches('/');
    let started = Instant::now();

    let count = match case_count(base) {
        Ok(count) => count,
        Err(err) => {
            eprintln!("autobahn-client: getCaseCount failed: {err}");
            return ExitCode::FAILURE;
        }
    };
    println!("autobahn-client: running {count} cases against {base}");

    let mut failed = 0;
    for case in 1..=count {
        if let Err(err) = run_case(base, case) {
            failed += 1;
            eprintln!("autobahn-client: case {case}: {err}");
        }
        if case % 50 == 0 || case == count {
            println!(
                "autobahn-client: {case}/{count} cases, {:.1}s",
                started.elapsed().as_secs_f64()
            );
        }
    }

    if let Err(err) = update_reports(base) {
        eprintln!("autobahn-client: updateReports failed: {err}");
        return ExitCode::FAILURE;
    }
    if failed > 0 {
        // The report holds the verdicts; these are connections that could
        // not even be opened.
        eprintln!("autobahn-client: {failed} case(s) could not be run");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

fn case_count(base: &str) -> lockgate::Result<u32> {
    let (mut ws, _) = lockgate::connect(format!("{base}/getCaseCount"))?;
    let mut count = None;
    // The server sends the count as text, then closes.
    loop {
        match ws.read() {
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
                eprintln!("autobahn-client: getCaseCount: {err}");
                break;
            }
            Err(err) => return Err(err),
        }
    }
    count.ok_or_else(|| Error::Io(std::io::Error::other("no case count received")))
}

/// Runs one case. Errors the case provokes on purpose (protocol violations)
/// are part of the test and not returned; only a failure to connect is.
fn run_case(base: &str, case: u32) -> lockgate::Result<()> {
    let (mut ws, _) = lockgate::ClientOptions::new()
        .config(config())
        .connect(format!("{base}/runCase?case={case}&agent={AGENT}"))?;
    echo_until_closed(&mut ws);
    Ok(())
}

fn echo_until_closed(ws: &mut WebSocket<MaybeTlsStream<TcpStream>>) {
    loop {
        match ws.read() {
            Ok(msg @ (Message::Text(_) | Message::Binary(_))) => {
                if ws.send(msg).is_err() {
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

fn update_reports(base: &str) -> lockgate::Result<()> {
    let (mut ws, _) = lockgate::connect(format!("{base}/updateReports?agent={AGENT}"))?;
    // The server writes the reports and hangs up, possibly without a close
    // frame; whatever happens after the handshake does not matter.
    let _ = ws.close(None);
    while ws.read().is_ok() {}
    Ok(())
}

/// The conformance configuration: defaults, plus permessage-deflate offered
/// (client) or accepted (server) so Autobahn's 12.x and 13.x cases run.
/// Every message is compressed (no minimum size): kosoku 0.1.0 fails its
/// 12.x hash check on uncompressed text echoes, and compressing everything
/// exercises the codec hardest anyway. The offer includes
/// `client_no_context_takeover`: Autobahn's 13.2, 13.5 and 13.6 servers only
/// accept offers that say the client can work without context takeover.
fn config() -> lockgate::Config {
    lockgate::Config::default().deflate(Some(
        lockgate::deflate::DeflateConfig::default()
            .min_compress_size(0)
            .client_no_context_takeover(true),
    ))
}
