//! The futures-io driver against the conformance kit (kit/src/conformance),
//! the same cases every driver runs: over the scripted mock, the
//! write/flush contract, the closing handshake and the cost of assembly,
//! through the whole stream and the split halves, each call polled once
//! and dropped when pending (so every case is also a cancellation case);
//! over real sockets on smol, the opening handshake's refusals and
//! deadlines, the deadlines of an upgraded connection and its FIN, rate
//! limits, and dialling through every kind of proxy (`connect_async`; the
//! `wss://` and `https://` proxy cases run with `--features rustls`, and
//! sit out without it).

use std::net::TcpStream as StdTcpStream;
use std::time::Duration;

use async_lockgate::{
    ClientOptions, CloseFrame, FuturesIo, Message, Result, ServerOptions, WebSocketStream,
    accept_async_with, connect_async_with,
};
use futures_util::FutureExt;
use lockgate::handshake::IntoClientRequest;
use lockgate_kit::conformance::dial::Dialer;
use lockgate_kit::conformance::{Dialed, Session, Sockets};
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

/// `connect_async_with` and `accept_async_with`, on smol.
struct SmolSockets;

impl Sockets for SmolSockets {
    fn dial_and_echo(
        request: impl IntoClientRequest,
        options: ClientOptions,
        what: &str,
    ) -> Result<Dialed> {
        smol::block_on(async {
            let (mut ws, response) = bounded(what, connect_async_with(request, options)).await?;
            assert_eq!(response.status(), 101, "{what}");
            let peer_port = ws.get_ref().get_ref().peer_addr()?.port();
            let tls = ws.get_ref().is_tls();
            bounded(what, lockgate_kit::echo_exchange(&mut ws, what)).await;
            Ok(Dialed {
                peer_port,
                tls,
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

/// The `wss://` and `https://` proxy cases run with the `rustls` feature.
impl Dialer for SmolSockets {
    lockgate_kit::rustls_dialer_items!();
}

lockgate_kit::handshake_suite!(SmolSockets);
lockgate_kit::dial_suite!(SmolSockets);

/// Without the `rustls` feature, `wss://` says TLS is not built in, before
/// any connection is made.
#[cfg(not(feature = "rustls"))]
#[test]
fn wss_says_tls_is_not_built_in() {
    let error = smol::block_on(async_lockgate::connect_async("wss://127.0.0.1:1/")).unwrap_err();
    assert!(
        matches!(
            error,
            async_lockgate::Error::Url(
                async_lockgate::lockgate::error::UrlError::TlsFeatureNotEnabled
            )
        ),
        "{error:?}"
    );
}

/// The runtime type names what this crate instantiates.
#[test]
fn the_root_names_are_the_driver_on_futures_io() {
    fn same<T>(_: Option<T>, _: Option<T>) {}
    same(
        None::<async_lockgate::WebSocketStream<TcpStream>>,
        None::<async_lockgate::driver::WebSocketStream<TcpStream, FuturesIo>>,
    );
}
