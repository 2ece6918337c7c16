//! Echo server for the Autobahn TestSuite (fuzzingclient mode), on tokio.
//!
//! Echoes every text and binary message back; pongs and close replies are left
//! to the library. One task per connection.
//!
//! Run the whole conformance suite against it with
//! `AUTOBAHN_PACKAGE=tokio-lockgate AUTOBAHN_SUFFIX=-tokio bash autobahn/run.sh server`,
//! or by hand:
//!
//! ```text
//! cargo run --release -p tokio-lockgate --example autobahn-server -- 127.0.0.1:9002
//! kosoku 127.0.0.1:9002 -x '12.*' -x '13.*'
//! ```

use tokio::net::{TcpListener, TcpStream};
use tokio_lockgate::{Error, Message};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:9002".to_owned());
    let listener = TcpListener::bind(&addr).await?;
    println!("autobahn-server listening on {}", listener.local_addr()?);

    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(handle(stream));
            }
            Err(err) => eprintln!("accept failed: {err}"),
        }
    }
}

async fn handle(stream: TcpStream) {
    // Each echo is one flush; without NODELAY the small ones would wait for
    // the peer's delayed ACK.
    let _ = stream.set_nodelay(true);
    // A failed handshake (the runner's readiness probe, for one) just ends
    // the connection.
    let Ok(mut ws) = tokio_lockgate::accept_async_with(
        stream,
        tokio_lockgate::ServerOptions::new().config(config()),
    )
    .await
    else {
        return;
    };
    loop {
        match ws.read().await {
            Ok(msg @ (Message::Text(_) | Message::Binary(_))) => {
                if ws.send(msg).await.is_err() {
                    break;
                }
            }
            // Pongs to pings and the close reply are queued by the library
            // and flushed on the next call.
            Ok(Message::Ping(_) | Message::Pong(_) | Message::Close(_) | Message::Frame(_)) => {}
            // The closing handshake is complete: drop the TCP connection, as
            // a server should.
            Err(Error::ConnectionClosed | Error::AlreadyClosed) => break,
            // The peer broke the protocol (or a limit): `read` has already
            // sent the close frame with the matching code. Drop the
            // connection.
            Err(_) => break,
        }
    }
}

/// The conformance configuration: defaults, plus permessage-deflate offered
/// (client) or accepted (server) so Autobahn's 12.x and 13.x cases run.
/// Every message is compressed (no minimum size): kosoku 0.1.0 fails its
/// 12.x hash check on uncompressed text echoes, and compressing everything
/// exercises the codec hardest anyway.
fn config() -> tokio_lockgate::Config {
    tokio_lockgate::Config::default().deflate(Some(
        tokio_lockgate::deflate::DeflateConfig::default().min_compress_size(0),
    ))
}
