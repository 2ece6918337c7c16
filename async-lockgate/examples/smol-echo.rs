//! An echo server on smol, with a client that talks to it: run it with
//! `cargo run -p async-lockgate --example smol-echo`.
//!
//! The server echoes each burst of messages with one flush: it writes
//! while more input is buffered and flushes once the input is drained.

use async_lockgate::{Error, Message, accept_async, client_async};
use smol::net::{TcpListener, TcpStream};

fn main() -> async_lockgate::Result<()> {
    smol::block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        println!("smol-echo listening on {addr}");
        let server = smol::spawn(async move {
            let (tcp, _) = listener.accept().await?;
            let mut ws = accept_async(tcp).await?;
            loop {
                match ws.read().await {
                    Ok(msg) if msg.is_data() => {
                        ws.write(msg).await?;
                        if ws.buffered_input() == 0 {
                            ws.flush().await?;
                        }
                    }
                    Ok(_) => {}
                    Err(Error::ConnectionClosed) => return Ok::<(), Error>(()),
                    Err(error) => return Err(error),
                }
            }
        });

        let tcp = TcpStream::connect(addr).await?;
        let (mut ws, _) = client_async(format!("ws://{addr}/echo"), tcp).await?;
        for i in 0..10 {
            ws.write(Message::text(format!("message {i}"))).await?;
        }
        ws.flush().await?;
        for _ in 0..10 {
            println!("echoed: {}", ws.read().await?);
        }
        ws.close(None).await?;
        while ws.read().await.is_ok() {}
        server.await?;
        println!("closed cleanly");
        Ok(())
    })
}
