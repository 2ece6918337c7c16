//! A client that sends a few messages to an echo server and closes cleanly.
//!
//! It shows lockgate's write/flush contract: `write` only queues a message in
//! the out buffer, `flush` puts everything queued on the wire at once (one
//! `send(2)` when it fits), and `send` is `write` + `flush`.
//!
//! ```text
//! cargo run --example echo-server                 # in one terminal
//! cargo run --example client                      # ws://127.0.0.1:9001
//! cargo run --example client -- ws://example.com:8080/echo
//! ```
//!
//! It exits with an error unless every echo matches what was sent.

use std::process::ExitCode;

use lockgate::{CloseCode, CloseFrame, Error, Message};

fn main() -> ExitCode {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "ws://127.0.0.1:9001".to_owned());
    match run(&url) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("client: {url}: {err}");
            if matches!(&err, Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused) {
                eprintln!("client: no server there? `cargo run --example echo-server` starts one");
            }
            ExitCode::FAILURE
        }
    }
}

/// Returns whether every echo matched what was sent.
fn run(url: &str) -> lockgate::Result<bool> {
    let (mut ws, response) = lockgate::connect(url)?;
    println!("connected to {url} ({})", response.status());

    // Queue three messages; nothing is sent yet.
    let batch = [
        Message::text("hello"),
        Message::text("lock gate"),
        Message::binary(vec![0xde, 0xad, 0xbe, 0xef]),
    ];
    for msg in &batch {
        ws.write(msg.clone())?;
    }
    // Open the gate: all three leave together.
    ws.flush()?;
    println!("sent {} messages with one flush", batch.len());

    // A single message can go out at once with `send`.
    let last = Message::text("one more, sent on its own");
    ws.send(last.clone())?;

    let mut all_matched = true;
    for expected in batch.iter().chain([&last]) {
        let echo = read_data(&mut ws)?;
        println!("echo: {}", describe(&echo));
        if &echo != expected {
            eprintln!("unexpected echo; wanted {}", describe(expected));
            all_matched = false;
        }
    }

    // Start the closing handshake (`close` queues the frame and flushes),
    // then read until the server's reply completes it.
    ws.close(Some(CloseFrame::new(CloseCode::Normal, "done")))?;
    loop {
        match ws.read() {
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
fn read_data(
    ws: &mut lockgate::WebSocket<lockgate::stream::MaybeTlsStream<std::net::TcpStream>>,
) -> lockgate::Result<Message> {
    loop {
        let msg = ws.read()?;
        if msg.is_data() {
            return Ok(msg);
        }
    }
}

fn describe(msg: &Message) -> String {
    match msg {
        Message::Text(text) => format!("text {:?}", text.as_str()),
        Message::Binary(data) => format!("binary {:02x?}", &data[..]),
        other => format!("{other:?}"),
    }
}
