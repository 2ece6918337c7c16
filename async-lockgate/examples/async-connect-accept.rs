//! `connect_async` and `accept_async` on smol: the two calls a
//! futures-io program needs, a server and its client in one program.
//!
//! ```text
//! cargo run -p async-lockgate --example async-connect-accept
//! ```
//!
//! `connect_async(url)` does the whole dial (name lookup, TCP with
//! `TCP_NODELAY`, TLS for `wss://` with the `rustls` feature, proxies
//! from the options) and the handshake; `accept_async(stream)` answers
//! the handshake on a stream your listener accepted. Deadlines run on
//! async-io's timer, so any executor works: smol here, async-std or
//! `futures::executor` as well. (`smol-echo` shows `client_async`, the
//! handshake over a stream you dialled yourself.)

use async_lockgate::{CloseCode, CloseFrame, Message, accept_async, connect_async};
use smol::net::TcpListener;

fn main() -> async_lockgate::Result<()> {
    smol::block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("ws://{}/greet", listener.local_addr()?);

        // The server: answers each text with a greeting, until the close.
        let server = smol::spawn(async move {
            let (tcp, peer) = listener.accept().await?;
            let mut ws = accept_async(tcp).await?;
            println!("server: accepted {peer}");
            while let Ok(message) = ws.read().await {
                if let Message::Text(name) = message {
                    ws.send(Message::text(format!("hello, {name}"))).await?;
                }
            }
            Ok::<_, async_lockgate::Error>(())
        });

        // The client: the URL is all it needs.
        let (mut ws, response) = connect_async(url.as_str()).await?;
        println!("client: connected to {url} ({})", response.status());
        ws.send(Message::text("smol")).await?;
        println!("client: got {}", ws.read().await?);
        ws.close(Some(CloseFrame::new(CloseCode::Normal, "bye")))
            .await?;
        while ws.read().await.is_ok() {}
        server.await?;
        println!("closed cleanly");
        Ok(())
    })
}
