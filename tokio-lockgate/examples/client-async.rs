//! [`client_async`]: the WebSocket handshake over a stream you opened
//! yourself, here a `TcpStream` to a server in the same program.
//!
//! ```text
//! cargo run -p tokio-lockgate --example client-async
//! ```
//!
//! Why dial yourself rather than `connect_async(url)`: to pick the
//! local address or socket options before the handshake, to reuse a
//! stream that is already connected (a tunnel, a Unix socket, a test's
//! in-memory pipe), or to run the handshake over TLS you set up. The URL
//! then only says what the request carries (`Host`, the path): nothing
//! is resolved or dialled from it.

use tokio::net::{TcpListener, TcpStream};
use tokio_lockgate::{Message, accept_async, client_async};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // An echo server on a free port.
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await?;
        let mut ws = accept_async(tcp).await?;
        while let Ok(message) = ws.read().await {
            if message.is_data() {
                ws.send(message).await?;
            }
        }
        Ok::<_, tokio_lockgate::Error>(())
    });

    // The stream, dialled and set up here: no Nagle delay, so each flush
    // goes out at once (`connect_async` sets this too; a stream you bring
    // is used as it is).
    let tcp = TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    let (mut ws, response) = client_async(format!("ws://{addr}/chat"), tcp).await?;
    println!("handshake: {}", response.status());

    ws.send(Message::text("over a stream I dialled")).await?;
    println!("echo: {}", ws.read().await?);

    // Close, then read until the server's close reply ends the stream.
    ws.close(None).await?;
    while ws.read().await.is_ok() {}
    server.await??;
    println!("closed cleanly");
    Ok(())
}
