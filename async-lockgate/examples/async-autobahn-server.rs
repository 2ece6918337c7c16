//! Echo server for the Autobahn TestSuite (fuzzingclient mode), on smol
//! through the `futures-io` driver.
//!
//! Run the whole conformance suite against it with
//! `AUTOBAHN_PACKAGE=async-lockgate AUTOBAHN_SUFFIX=-async bash autobahn/run.sh server`.

use std::time::Duration;

use async_lockgate::deflate::DeflateConfig;
use async_lockgate::{Config, Error, Message, ServerOptions};
use smol::net::{TcpListener, TcpStream};

fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:9002".to_owned());
    smol::block_on(async {
        let listener = TcpListener::bind(&addr).await?;
        println!(
            "async-autobahn-server listening on {}",
            listener.local_addr()?
        );
        loop {
            match listener.accept().await {
                Ok((stream, _)) => smol::spawn(handle(stream)).detach(),
                // Out of descriptors: wait for connections to close rather
                // than spin.
                Err(error) => {
                    eprintln!("accept failed: {error}");
                    smol::Timer::after(Duration::from_millis(50)).await;
                }
            }
        }
    })
}

async fn handle(stream: TcpStream) {
    // Each echo is one flush; without NODELAY the small ones would wait for
    // the peer's delayed ACK.
    let _ = stream.set_nodelay(true);
    let options = ServerOptions::new().config(config());
    let Ok(mut ws) = async_lockgate::accept_async_with(stream, options).await else {
        return;
    };
    loop {
        match ws.read().await {
            Ok(msg @ (Message::Text(_) | Message::Binary(_))) => {
                if ws.send(msg).await.is_err() {
                    break;
                }
            }
            // Pongs and the close reply are queued and flushed by the
            // library.
            Ok(_) => {}
            // The closing handshake completed, or the peer broke the
            // protocol and `read` sent the matching close frame.
            Err(Error::ConnectionClosed | Error::AlreadyClosed) | Err(_) => break,
        }
    }
}

/// permessage-deflate accepted and every message compressed, so the 12.x
/// and 13.x cases run and exercise the codec hardest.
///
/// The connection sleeps whenever it waits quietly for input (a zero
/// `sleep_after`): with context takeover its compressor and decompressor
/// are dropped and rebuilt from their windows before nearly every message,
/// so the 12.x and 13.x cases prove that waking loses nothing, in the run
/// CI already makes.
fn config() -> Config {
    Config::default().deflate(Some(
        DeflateConfig::default()
            .min_compress_size(0)
            .sleep_after(Some(Duration::ZERO)),
    ))
}
