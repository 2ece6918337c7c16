//! The futures-io driver against the conformance kit (kit/src/conformance),
//! the same cases every driver runs: over the scripted mock, the
//! write/flush contract, the closing handshake and the cost of assembly,
//! through the whole stream and the split halves, each call polled once
//! and dropped when pending (so every case is also a cancellation case);
//! over real sockets on smol, the opening handshake's refusals and
//! deadlines, and the deadlines of an upgraded connection and its FIN.
//!
//! The kit's proxy cases (`dial_suite!`) are not run: this crate dials
//! nothing, the application brings a connected stream.

use std::net::TcpStream as StdTcpStream;
use std::time::Duration;

use async_lockgate::{
    ClientOptions, CloseFrame, FuturesIo, Message, Result, ServerOptions, WebSocketStream,
    accept_async_with, client_async_with,
};
use futures_util::FutureExt;
use lockgate_kit::conformance::{Dialed, Session, Sockets, echo_messages};
use smol::net::TcpStream;

/// The most any one dial, handshake or exchange may take.
const LIMIT: Duration = Duration::from_secs(20);

lockgate_kit::async_conformance_suites!(async_lockgate::FuturesIo);

/// `future`, or a panic naming `what` if it takes over [`LIMIT`].
async fn bounded<T>(what: &str, future: impl Future<Output = T>) -> T {
    let timer = async {
        smol::Timer::after(LIMIT).await;
        panic!("{what}: no outcome within {LIMIT:?}")
    };
    futures_util::select! {
        outcome = std::pin::pin!(future.fuse()) => outcome,
        never = std::pin::pin!(timer.fuse()) => never,
    }
}

/// TCP from smol, then `client_async_with`; `accept_async_with` on smol.
struct SmolSockets;

impl Sockets for SmolSockets {
    fn dial_and_echo(url: &str, options: ClientOptions, what: &str) -> Result<Dialed> {
        smol::block_on(async {
            let uri: async_lockgate::http::Uri = url.parse().expect("a ws:// URL");
            let address = (uri.host().expect("a host"), uri.port_u16().unwrap_or(80));
            let tcp = TcpStream::connect(address).await?;
            let peer_port = tcp.peer_addr()?.port();
            let (mut ws, response) = bounded(what, client_async_with(url, tcp, options)).await?;
            assert_eq!(response.status(), 101, "{what}");
            // Written and flushed once, read back, then the closing
            // handshake.
            bounded(what, async {
                let messages = echo_messages(what);
                for message in &messages {
                    ws.write(message.clone()).await.unwrap();
                }
                ws.flush().await.unwrap();
                for message in messages {
                    assert_eq!(ws.read().await.unwrap(), message, "{what}");
                }
                ws.close(None).await.unwrap();
                while ws.read().await.is_ok() {}
            })
            .await;
            Ok(Dialed {
                peer_port,
                tls: false,
                connection: Box::new(ws),
            })
        })
    }

    fn accept(tcp: StdTcpStream, options: ServerOptions) -> Result<Box<dyn Session>> {
        smol::block_on(async {
            // smol's stream, whose `poll_close` sends the FIN (async-io's
            // `Async<TcpStream>` only flushes there).
            let tcp = TcpStream::try_from(tcp)?;
            let ws = bounded("accept", accept_async_with(tcp, options)).await?;
            Ok(Box::new(SmolSession(ws)) as Box<dyn Session>)
        })
    }
}

/// Each call blocks on smol (the kit's cases bound them).
struct SmolSession(WebSocketStream<TcpStream>);

impl Session for SmolSession {
    fn read(&mut self) -> Result<Message> {
        smol::block_on(self.0.read())
    }
    fn write(&mut self, msg: Message) -> Result<()> {
        smol::block_on(self.0.write(msg))
    }
    fn close(&mut self, frame: Option<CloseFrame>) -> Result<()> {
        smol::block_on(self.0.close(frame))
    }
    fn buffered_output(&self) -> usize {
        self.0.buffered_output()
    }
}

lockgate_kit::handshake_suite!(SmolSockets);

/// The runtime type names what this crate instantiates.
#[test]
fn the_root_names_are_the_driver_on_futures_io() {
    fn same<T>(_: Option<T>, _: Option<T>) {}
    same(
        None::<async_lockgate::WebSocketStream<TcpStream>>,
        None::<async_lockgate::driver::WebSocketStream<TcpStream, FuturesIo>>,
    );
}
