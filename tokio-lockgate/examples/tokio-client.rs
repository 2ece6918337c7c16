//! A tokio client that sends a batch of messages to an echo server, reads the
//! echoes and closes cleanly.
//!
//! It shows lockgate's write/flush contract: `write` only queues a message in
//! the out buffer, `flush` puts everything queued on the wire at once (one
//! `send(2)` when it fits), and `send` is `write` + `flush`.
//!
//! ```text
//! cargo run -p tokio-lockgate --example tokio-echo-server      # in one terminal
//! cargo run -p tokio-lockgate --example tokio-client           # ws://127.0.0.1:9001
//! cargo run -p tokio-lockgate --example tokio-client -- ws://127.0.0.1:9003/ws   # hyper-upgrade
//! cargo run -p tokio-lockgate --example tokio-client -- ws://example.com:8080/echo
//! ```
//!
//! It exits with an error unless every echo matches what was sent.

use std::process::ExitCode;

use tokio_lockgate::{CloseCode, CloseFrame, Error, Message, WebSocketStream};

#[tokio::main]
async fn main() -> ExitCode {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "ws://127.0.0.1:9001".to_owned());
    match run(&url).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("tokio-client: {url}: {err}");
            if matches!(&err, Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused) {
                eprintln!(
                    "tokio-client: no server there? \
                     `cargo run -p tokio-lockgate --example tokio-echo-server` starts one"
                );
            }
            ExitCode::FAILURE
        }
    }
}

/// Returns whether every echo matched what was sent.
async fn run(url: &str) -> tokio_lockgate::Result<bool> {
    let (mut ws, response) = tokio_lockgate::connect_async(url).await?;
    println!("connected to {url} ({})", response.status());

    // Queue a batch; nothing is sent yet.
    let batch = [
        Message::text("hello"),
        Message::text("lock gate"),
        Message::binary(vec![0xde, 0xad, 0xbe, 0xef]),
        Message::text("the chamber fills"),
        Message::binary(vec![0u8; 1000]),
    ];
    for msg in &batch {
        ws.write(msg.clone()).await?;
    }
    // Open the gate: the whole batch leaves together.
    ws.flush().await?;
    println!("sent {} messages with one flush", batch.len());

    // A single message can go out at once with `send`.
    let last = Message::text("one more, sent on its own");
    ws.send(last.clone()).await?;

    let mut all_matched = true;
    for expected in batch.iter().chain([&last]) {
        let echo = read_data(&mut ws).await?;
        println!("echo: {}", describe(&echo));
        if &echo != expected {
            eprintln!("unexpected echo; wanted {}", describe(expected));
            all_matched = false;
        }
    }

    // Start the closing handshake (`close` queues the frame and flushes),
    // then read until the server's reply completes it.
    ws.close(Some(CloseFrame::new(CloseCode::Normal, "done")))
        .await?;
    loop {
        match ws.read().await {
            Ok(Message::Close(Some(frame))) => println!("server replied to close: {frame}"),
            Ok(Message::Close(None)) => println!("server replied to close without a code"),
            Ok(other) => println!("after close: {}", describe(&other)),
            Err(Error::ConnectionClosed) => break,
            Err(err) => return Err(err),
        }
    }
    println!("closed cleanly");
    Ok(all_matched)
}

/// The next data message; pings are answered by the library.
async fn read_data<S>(ws: &mut WebSocketStream<S>) -> tokio_lockgate::Result<Message>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    loop {
        let msg = ws.read().await?;
        if msg.is_data() {
            return Ok(msg);
        }
    }
}

fn describe(msg: &Message) -> String {
    match msg {
        Message::Text(text) => format!("text {:?}", text.as_str()),
        Message::Binary(data) if data.len() <= 16 => format!("binary {:02x?}", &data[..]),
        Message::Binary(data) => format!("binary, {} bytes", data.len()),
        other => format!("{other:?}"),
    }
}
