//! The io_uring driver against the conformance kit (kit/src/conformance),
//! the same cases every driver runs: over the scripted mock (behind this
//! crate's completion I/O, so through the same owned-buffer transports as
//! a socket), the write/flush contract, the closing handshake and the cost
//! of assembly, through the whole stream and the split halves, each call
//! polled once and dropped when pending (so every case is also a
//! cancellation case); over real sockets on a tokio-uring ring, the
//! opening handshake's refusals and deadlines, the deadlines of an
//! upgraded connection and its FIN, rate limits and the lingering close.
//! Every call is bounded in time.

use std::net::{TcpStream as StdTcpStream, ToSocketAddrs};
use std::sync::LazyLock;
use std::sync::mpsc::{SyncSender, sync_channel};
use std::time::Duration;

use lockgate::Error;
use lockgate::handshake::IntoClientRequest;
use lockgate_kit::conformance::{Dialed, Session, Sockets};
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio::time::timeout;
use uring_lockgate::{
    ClientOptions, CloseFrame, Message, Result, ServerOptions, UringStream, WebSocketStream,
    accept_async_with, client_async_with,
};

/// The most any one dial, handshake or exchange may take.
const LIMIT: Duration = Duration::from_secs(20);

lockgate_kit::async_conformance_suites!(uring_lockgate::Uring);

/// Work for the ring thread: it spawns its task there.
type Job = Box<dyn FnOnce() + Send>;

/// The ring the socket cases run on: one thread that keeps running
/// between calls, as a server's does, so operations a call left in flight
/// (a close frame's write, the read a dropped connection shut down)
/// complete meanwhile.
static RING: LazyLock<UnboundedSender<Job>> = LazyLock::new(|| {
    let (jobs, mut queue) = unbounded_channel::<Job>();
    std::thread::spawn(move || {
        tokio_uring::start(async move {
            while let Some(job) = queue.recv().await {
                job();
            }
        });
    });
    jobs
});

/// What `make`'s future comes to, run as a task on the ring.
fn on_ring<T, F>(make: impl FnOnce() -> F + Send + 'static) -> T
where
    T: Send + 'static,
    F: Future<Output = T> + 'static,
{
    let (tx, rx) = std::sync::mpsc::channel();
    let job: Job = Box::new(move || {
        tokio_uring::spawn(async move {
            let _ = tx.send(make().await);
        });
    });
    RING.send(job).expect("the ring runs");
    rx.recv().expect("the ring task panicked")
}

/// `client_async_with` over a connected `UringStream`, and
/// `accept_async_with`.
struct UringSockets;

impl Sockets for UringSockets {
    fn dial_and_echo(
        request: impl IntoClientRequest,
        options: ClientOptions,
        what: &str,
    ) -> Result<Dialed> {
        let request = request.into_client_request()?;
        let uri = request.uri();
        let port = uri.port_u16().unwrap_or(80);
        let host = uri.host().expect("a host").to_owned();
        let addr = (host.as_str(), port)
            .to_socket_addrs()?
            .next()
            .expect("an address");
        let what = what.to_owned();
        let session = on_ring(move || async move {
            let tcp = UringStream::connect(addr).await?;
            let (mut ws, response) = timeout(LIMIT, client_async_with(request, tcp, options))
                .await
                .unwrap_or_else(|_| panic!("{what}: no outcome within {LIMIT:?}"))?;
            assert_eq!(response.status(), 101, "{what}");
            timeout(LIMIT, lockgate_kit::echo_exchange(&mut ws, &what))
                .await
                .unwrap_or_else(|_| panic!("{what}: the exchange took over {LIMIT:?}"));
            Ok::<_, Error>(UringSession::serve(ws))
        })?;
        Ok(Dialed {
            peer_port: port,
            tls: false,
            connection: Box::new(session),
        })
    }

    fn accept(tcp: StdTcpStream, options: ServerOptions) -> Result<Box<dyn Session>> {
        let session = on_ring(move || async move {
            let ws = timeout(
                LIMIT,
                accept_async_with(UringStream::from_std(tcp)?, options),
            )
            .await
            .unwrap_or_else(|_| panic!("no outcome within {LIMIT:?}"))?;
            Ok::<_, Error>(UringSession::serve(ws))
        })?;
        Ok(Box::new(session))
    }
}

/// A call on a connection that lives on the ring, with where its answer
/// goes.
enum Call {
    Read(SyncSender<Result<Message>>),
    Write(Message, SyncSender<Result<()>>),
    Close(Option<CloseFrame>, SyncSender<Result<()>>),
    BufferedOutput(SyncSender<usize>),
}

/// A connection served by its task on the ring: each call blocks until
/// the task answered (the kit's cases bound them). Dropping it drops the
/// connection there.
struct UringSession(UnboundedSender<Call>);

impl UringSession {
    /// Spawns `ws`'s task on the ring (called there).
    fn serve(mut ws: WebSocketStream) -> Self {
        let (calls, mut queue) = unbounded_channel();
        tokio_uring::spawn(async move {
            while let Some(call) = queue.recv().await {
                // The caller waits for every answer it asked for.
                let answered = match call {
                    Call::Read(answer) => answer.send(ws.read().await).is_ok(),
                    Call::Write(msg, answer) => answer.send(ws.write(msg).await).is_ok(),
                    Call::Close(frame, answer) => answer.send(ws.close(frame).await).is_ok(),
                    Call::BufferedOutput(answer) => answer.send(ws.buffered_output()).is_ok(),
                };
                assert!(answered, "the caller waits");
            }
        });
        Self(calls)
    }

    fn call<T>(&self, call: impl FnOnce(SyncSender<T>) -> Call) -> T {
        let (answer, rx) = sync_channel(1);
        let sent = self.0.send(call(answer)).is_ok();
        assert!(sent, "the connection's task runs");
        rx.recv().expect("the connection's task panicked")
    }
}

impl Session for UringSession {
    fn read(&mut self) -> Result<Message> {
        self.call(Call::Read)
    }
    fn write(&mut self, msg: Message) -> Result<()> {
        self.call(|answer| Call::Write(msg, answer))
    }
    fn close(&mut self, frame: Option<CloseFrame>) -> Result<()> {
        self.call(|answer| Call::Close(frame, answer))
    }
    fn buffered_output(&self) -> usize {
        self.call(Call::BufferedOutput)
    }
}

lockgate_kit::handshake_suite!(UringSockets);

/// A read cancelled while its operation is in flight loses nothing: the
/// bytes the kernel puts in the lent buffer after the cancellation are
/// the next read's.
#[test]
fn a_read_dropped_while_in_flight_loses_no_bytes() {
    on_ring(|| async {
        let listener = tokio_uring::net::TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
        let addr = listener.local_addr()?;
        let (cancelled_tx, cancelled_rx) = tokio::sync::oneshot::channel();
        let (sent_tx, sent_rx) = tokio::sync::oneshot::channel();
        let client = tokio_uring::spawn(async move {
            let tcp = UringStream::connect(addr).await?;
            let (mut ws, _) =
                client_async_with(format!("ws://{addr}"), tcp, ClientOptions::new()).await?;
            // Nothing is sent before the signal: each read submits (or
            // resumes) the one read, then is dropped while it waits.
            for _ in 0..3 {
                let cancelled = timeout(Duration::from_millis(1), ws.read()).await;
                assert!(cancelled.is_err(), "nothing was sent yet");
            }
            cancelled_tx.send(()).unwrap();
            // The message arrives into the read no future is polling.
            sent_rx.await.unwrap();
            let msg = timeout(LIMIT, ws.read()).await.expect("within the limit")?;
            ws.close(None).await?;
            while ws.read().await.is_ok() {}
            Ok::<_, Error>(msg)
        });
        let (tcp, _) = listener.accept().await?;
        let mut ws = accept_async_with(UringStream::new(tcp), ServerOptions::new()).await?;
        cancelled_rx.await.unwrap();
        ws.send(Message::text("after the cancellations")).await?;
        sent_tx.send(()).unwrap();
        while ws.read().await.is_ok() {}
        let got = client.await.expect("the client task")?;
        assert_eq!(got, Message::text("after the cancellations"));
        Ok::<_, Error>(())
    })
    .unwrap();
}
