//! The fan-out server child: one topic, every connection subscribed to it,
//! `messages` 64-byte binaries published in bursts of `burst` (the
//! publisher yields after each burst) once the load process says `go`.
//!
//! Like [`crate::fanout`], but on the scale servers' 2-worker multi-thread
//! runtime and with connections arriving over the network:
//! - tokio-lockgate: its hub (`Wait` policy, so nothing is dropped, queues
//!   of [`QUEUE`] messages); one `PreparedMessage` per message,
//!   `Hub::publish`, and `Subscriber::forward` per connection, which writes
//!   everything queued with `write_prepared` and flushes once. The hub is
//!   its one form, in both the natural and the batching rows.
//! - each peer: the message cloned per connection into a bounded channel
//!   ([`QUEUE`] messages) and a task per connection writing into the
//!   connection's own sink. Natural form: the publisher awaits
//!   `Sender::send` for each connection and the task `send`s (queue and
//!   flush) each message. Batching form: the publisher `try_send`s (an
//!   awaited `send` spends tokio's cooperative budget, see BENCHMARKS.md),
//!   and the task feeds everything waiting, then flushes once;
//!   fastwebsockets writes through a tokio `BufWriter` there.
//!
//! Payloads are [`payload`]`(index)`; the load process checks every one.

use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};

use super::Form;
use super::servers::{self, Echo, Live};
use crate::report::Lib;
use crate::upgrade;

/// Payload bytes per message; the first 8 are its index.
pub(super) const SIZE: usize = 64;
/// Messages a connection may have waiting (hub queue, peer channel).
const QUEUE: usize = 1024;
/// The topic.
const TOPIC: &str = "t";

/// What the publisher sends.
#[derive(Debug, Clone, Copy)]
pub(super) struct Publish {
    /// Messages in all.
    pub(super) messages: usize,
    /// Messages published between yields.
    pub(super) burst: usize,
}

/// The payload of message `index`: the index (little-endian), then bytes
/// that depend on it.
pub(super) fn payload(index: usize) -> [u8; SIZE] {
    let mut p = [0u8; SIZE];
    p[..8].copy_from_slice(&(index as u64).to_le_bytes());
    for (i, b) in p[8..].iter_mut().enumerate() {
        *b = (index as u8).wrapping_mul(31).wrapping_add(i as u8);
    }
    p
}

/// Accepts subscribers until `go`, then publishes; runs until the process
/// ends.
pub(super) async fn serve(
    listener: TcpListener,
    lib: Lib,
    form: Form,
    shape: Publish,
    live: Arc<AtomicUsize>,
    go: oneshot::Receiver<()>,
) {
    match (lib, form) {
        (Lib::TokioLockgate, _) => hub(listener, shape, live, go).await,
        (Lib::TokioTungstenite, _) => {
            channels::<servers::TokioTungstenite>(listener, form, shape, live, go).await
        }
        (Lib::Fastwebsockets, Form::Natural) => {
            channels::<servers::Fastwebsockets>(listener, form, shape, live, go).await
        }
        (Lib::Fastwebsockets, Form::Batching) => {
            channels::<servers::FastwebsocketsBuffered>(listener, form, shape, live, go).await
        }
        (Lib::TokioWebsockets, _) => {
            channels::<servers::TokioWebsockets>(listener, form, shape, live, go).await
        }
        (Lib::SockudoWs, _) => {
            channels::<servers::SockudoWs>(listener, form, shape, live, go).await
        }
        (Lib::Yawc, _) => channels::<servers::Yawc>(listener, form, shape, live, go).await,
        (other, _) => crate::fail(other.name(), "no scale fan-out server"),
    }
    // Published: the connection tasks drain while the load process reads.
    std::future::pending::<()>().await;
}

/// Accepts connections, upgrading each and handing it to `setup` in a
/// task of its own.
fn accept<F, Fut>(listener: TcpListener, setup: F)
where
    F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let setup = Arc::new(setup);
    tokio::spawn(async move {
        let resp: Arc<str> = upgrade::response().into();
        loop {
            let (mut s, _) = listener
                .accept()
                .await
                .unwrap_or_else(|e| crate::fail("scale fan-out", &format!("accept: {e}")));
            let (resp, setup) = (Arc::clone(&resp), Arc::clone(&setup));
            tokio::spawn(async move {
                s.set_nodelay(true).expect("TCP_NODELAY");
                upgrade::server_async(&mut s, &resp).await;
                setup(s).await;
            });
        }
    });
}

/// tokio-lockgate: the hub.
async fn hub(
    listener: TcpListener,
    shape: Publish,
    live: Arc<AtomicUsize>,
    go: oneshot::Receiver<()>,
) {
    use tokio_lockgate::hub::{Hub, HubConfig, SlowConsumer};
    use tokio_lockgate::{Message, PreparedMessage};
    let hub = Hub::new(
        HubConfig::default()
            .queue_capacity(QUEUE)
            .slow_consumer(SlowConsumer::Wait),
    );
    let subscribers = hub.clone();
    accept(listener, move |s| {
        let (hub, live) = (subscribers.clone(), Arc::clone(&live));
        async move {
            let mut ws = <servers::TokioLockgate as Echo>::wrap(s);
            let mut subscriber = hub.subscriber();
            subscriber.subscribe(TOPIC);
            let _live = Live::new(&live);
            // Ends with an error once the load process drops the socket.
            let _ = subscriber.forward(&mut ws).await;
        }
    });
    if go.await.is_err() {
        return;
    }
    for i in 0..shape.messages {
        let msg = PreparedMessage::new(Message::Binary(Bytes::copy_from_slice(&payload(i))));
        hub.publish(TOPIC, &msg).await;
        if i % shape.burst == shape.burst - 1 {
            tokio::task::yield_now().await;
        }
    }
}

/// A peer: a bounded channel and a task per connection.
async fn channels<L: Echo>(
    listener: TcpListener,
    form: Form,
    shape: Publish,
    live: Arc<AtomicUsize>,
    go: oneshot::Receiver<()>,
) {
    let senders: Arc<Mutex<Vec<mpsc::Sender<L::Msg>>>> = Arc::default();
    let registry = Arc::clone(&senders);
    accept(listener, move |s| {
        let (registry, live) = (Arc::clone(&registry), Arc::clone(&live));
        async move {
            let mut ws = L::wrap(s);
            let (tx, mut rx) = mpsc::channel::<L::Msg>(QUEUE);
            registry.lock().expect("registry").push(tx);
            let _live = Live::new(&live);
            match form {
                Form::Natural => {
                    while let Some(m) = rx.recv().await {
                        if !L::send(&mut ws, m).await {
                            return;
                        }
                    }
                }
                Form::Batching => {
                    while let Some(m) = rx.recv().await {
                        if !L::feed(&mut ws, m).await {
                            return;
                        }
                        while let Ok(m) = rx.try_recv() {
                            if !L::feed(&mut ws, m).await {
                                return;
                            }
                        }
                        if !L::flush(&mut ws).await {
                            return;
                        }
                    }
                }
            }
        }
    });
    if go.await.is_err() {
        return;
    }
    let senders = std::mem::take(&mut *senders.lock().expect("registry"));
    for i in 0..shape.messages {
        let p = Bytes::copy_from_slice(&payload(i));
        for tx in &senders {
            let m = L::binary(p.clone());
            let sent = match form {
                Form::Natural => tx.send(m).await.is_ok(),
                Form::Batching => match tx.try_send(m) {
                    Ok(()) => true,
                    Err(mpsc::error::TrySendError::Full(m)) => tx.send(m).await.is_ok(),
                    Err(mpsc::error::TrySendError::Closed(_)) => false,
                },
            };
            if !sent {
                crate::fail("scale fan-out", "a connection task ended");
            }
        }
        if i % shape.burst == shape.burst - 1 {
            tokio::task::yield_now().await;
        }
    }
}
