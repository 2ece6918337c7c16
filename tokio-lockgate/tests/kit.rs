//! The tokio driver against the conformance kit (kit/src/conformance), the
//! same cases every driver runs: over the scripted mock, the write/flush
//! contract and the closing handshake, each call polled once and dropped
//! when pending (so every case is also a cancellation case); over real
//! sockets, the opening handshake's refusals and deadlines, the deadlines
//! of an upgraded connection and its FIN, and dialling through every kind
//! of proxy (the `wss://` and `https://` cases with
//! `--features rustls`). Every call is bounded in time.

use std::net::TcpStream as StdTcpStream;
use std::sync::LazyLock;
use std::time::Duration;

use lockgate::handshake::IntoClientRequest;
use lockgate_kit::conformance::dial::Dialer;
use lockgate_kit::conformance::{Dialed, Session, Sockets};
use tokio::net::TcpStream;
use tokio::runtime::Runtime;
use tokio::time::timeout;
use tokio_lockgate::{
    ClientOptions, CloseFrame, Message, Result, ServerOptions, WebSocketStream, accept_async_with,
    connect_async_with,
};

/// The most any one dial, handshake or exchange may take.
const LIMIT: Duration = Duration::from_secs(20);

lockgate_kit::async_conformance_suites!(tokio_lockgate::Tokio);

/// The runtime the socket cases run on (two workers, as a server's).
static RUNTIME: LazyLock<Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
});

/// `connect_async_with` and `accept_async_with`.
struct TokioSockets;

impl Sockets for TokioSockets {
    fn dial_and_echo(
        request: impl IntoClientRequest,
        options: ClientOptions,
        what: &str,
    ) -> Result<Dialed> {
        RUNTIME.block_on(async {
            let (mut ws, response) = timeout(LIMIT, connect_async_with(request, options))
                .await
                .unwrap_or_else(|_| panic!("{what}: no outcome within {LIMIT:?}"))?;
            assert_eq!(response.status(), 101, "{what}");
            let peer_port = ws.get_ref().get_ref().peer_addr().unwrap().port();
            let tls = ws.get_ref().is_tls();
            let exchange = lockgate_kit::echo_exchange(&mut ws, what);
            timeout(LIMIT, exchange)
                .await
                .unwrap_or_else(|_| panic!("{what}: the exchange took over {LIMIT:?}"));
            Ok(Dialed {
                peer_port,
                tls,
                connection: Box::new(ws),
            })
        })
    }

    fn accept(tcp: StdTcpStream, options: ServerOptions) -> Result<Box<dyn Session>> {
        RUNTIME.block_on(async {
            tcp.set_nonblocking(true)?;
            let tcp = TcpStream::from_std(tcp)?;
            let ws = timeout(LIMIT, accept_async_with(tcp, options))
                .await
                .unwrap_or_else(|_| panic!("no outcome within {LIMIT:?}"))?;
            Ok(Box::new(TokioSession(ws)) as Box<dyn Session>)
        })
    }
}

/// Each call blocks on the runtime (the kit's cases bound them).
struct TokioSession(WebSocketStream<TcpStream>);

impl Session for TokioSession {
    fn read(&mut self) -> Result<Message> {
        RUNTIME.block_on(self.0.read())
    }
    fn write(&mut self, msg: Message) -> Result<()> {
        RUNTIME.block_on(self.0.write(msg))
    }
    fn close(&mut self, frame: Option<CloseFrame>) -> Result<()> {
        RUNTIME.block_on(self.0.close(frame))
    }
    fn buffered_output(&self) -> usize {
        self.0.buffered_output()
    }
}

impl Dialer for TokioSockets {
    lockgate_kit::rustls_dialer_items!();
}

lockgate_kit::handshake_suite!(TokioSockets);
lockgate_kit::dial_suite!(TokioSockets);
