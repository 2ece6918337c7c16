//! A drain, start to finish, in one program: a server whose connections
//! are registered with a [`Drain`], three clients, then the drain: each
//! client is sent 1001 (Going Away) at its turn, a client that arrives
//! during the drain is refused with 503, and the [`DrainReport`] counts
//! what happened.
//!
//! ```text
//! cargo run -p tokio-lockgate --example drain
//! ```
//!
//! Why drain instead of exiting: a process that exits cuts every
//! WebSocket (the clients see 1006, with no reason, and all reconnect in
//! the same second). A drain tells each client to go (1001, or 1012 for
//! a restart) after what was already queued for it, spreads those turns
//! over a window so the reconnects are spread too, and cuts only what is
//! still open at a deadline. `examples/production.rs` shows it started by
//! SIGTERM in an axum server.
//!
//! [`DrainReport`]: tokio_lockgate::drain::DrainReport

use std::time::Duration;

use tokio::net::TcpListener;
use tokio_lockgate::drain::{Drain, DrainOptions};
use tokio_lockgate::{Error, Message, connect_async};

const CLIENTS: usize = 3;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("ws://{}/", listener.local_addr()?);
    let drain = Drain::new();

    // The server: `Drain::accept_async` registers each connection as its
    // upgrade is accepted (and answers 503 once the drain started); the
    // `Registered` stream's `read` learns of the connection's turn.
    let accepting = drain.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let drain = accepting.clone();
            tokio::spawn(async move {
                let Ok(mut ws) = drain.accept_async(tcp).await else {
                    return;
                };
                while let Ok(message) = ws.read().await {
                    if message.is_data() && ws.send(message).await.is_err() {
                        break;
                    }
                }
            });
        }
    });

    // The clients: each says hello, then reads until the server closes.
    let mut clients = Vec::new();
    for i in 0..CLIENTS {
        let (mut ws, _) = connect_async(&url).await?;
        ws.send(Message::text(format!("client {i}"))).await?;
        println!("echo: {}", ws.read().await?);
        clients.push(tokio::spawn(async move {
            loop {
                match ws.read().await {
                    Ok(Message::Close(frame)) => return frame,
                    Ok(_) => {}
                    Err(_) => return None,
                }
            }
        }));
    }
    println!("{} connection(s) registered", drain.live());

    // The drain: the turns of the three spread over 300 ms, the rest cut
    // at 5 s. `start` begins at once (on a task of its own); its future
    // resolves with the report.
    let options = DrainOptions::default()
        .window(Duration::from_millis(300))
        .deadline(Duration::from_secs(5));
    let report = drain.start(options);

    // A newcomer during the drain is refused, told when to retry.
    match connect_async(&url).await {
        Err(Error::Http(response)) => println!(
            "a new client during the drain: {} (Retry-After: {:?})",
            response.status(),
            response.headers().get("retry-after")
        ),
        other => println!("a new client during the drain: {:?}", other.map(|_| ())),
    }

    for client in clients {
        match client.await? {
            Some(frame) => println!(
                "a client was closed: {} {}",
                u16::from(frame.code),
                frame.reason
            ),
            None => println!("a client's connection ended without a close frame"),
        }
    }
    let report = report.await;
    println!(
        "drain report: {} connection(s), {} closed, {} left before their turn, {} cut",
        report.connections, report.closed, report.left, report.cut
    );
    Ok(())
}
