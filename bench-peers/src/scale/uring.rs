//! uring-lockgate's echo server: one tokio-uring ring per thread
//! ([`threads`] starts them and hands each its sockets).
//! The echo loops are tokio-lockgate's two forms on uring-lockgate's
//! `WebSocketStream`: natural (`read`, `write`, `flush` once the input
//! received so far is used up) and batching (what is ready at once,
//! queued, then one flush).

use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use futures_util::FutureExt;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use uring_lockgate::{Config, Role, UringStream, WebSocketContext, WebSocketStream};

use super::servers::{Live, upgrade_response};
use super::{Form, threads};
use crate::report::Lib;
use crate::upgrade;

/// The most messages one batch takes before it flushes (the tokio
/// servers' bound).
const MAX_BATCH: usize = 1024;

/// Serves the echo scenario until stdin closes (the control thread ends
/// the process).
pub(super) fn serve_echo(form: Form) -> ! {
    threads::serve(Lib::UringLockgate.name(), |live| {
        let (tx, rx) = unbounded_channel();
        std::thread::spawn(move || tokio_uring::start(ring(rx, form, live)));
        Box::new(move |s: TcpStream| {
            if tx.send(s).is_err() {
                crate::fail(Lib::UringLockgate.name(), "a ring ended");
            }
        })
    })
}

/// One ring: a task per socket handed to it.
async fn ring(mut sockets: UnboundedReceiver<TcpStream>, form: Form, live: Arc<AtomicUsize>) {
    let resp = upgrade_response();
    while let Some(s) = sockets.recv().await {
        let (resp, live) = (Arc::clone(&resp), Arc::clone(&live));
        tokio_uring::spawn(async move {
            s.set_nodelay(true).expect("TCP_NODELAY");
            let tcp = tokio_uring::net::TcpStream::from_std(s);
            handshake(&tcp, &resp).await;
            let ws = WebSocketStream::from_context(
                UringStream::new(tcp),
                WebSocketContext::new(Role::Server, Config::default()),
            );
            let _live = Live::new(&live);
            match form {
                Form::Natural => natural(ws).await,
                Form::Batching => batching(ws).await,
            }
        });
    }
}

/// The server half of the harness's neutral handshake, with the ring's
/// owned-buffer reads and writes (the client sends nothing more before
/// the response).
async fn handshake(tcp: &tokio_uring::net::TcpStream, resp: &str) {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let (got, buf) = tcp.read(Vec::with_capacity(1024)).await;
        let n = got.expect("handshake read");
        assert!(n > 0, "peer closed during the handshake");
        head.extend_from_slice(&buf[..n]);
        assert!(head.len() < 8192, "handshake head too long");
    }
    upgrade::check_request(&head);
    let (wrote, _) = tcp.write_all(resp.as_bytes().to_vec()).await;
    wrote.expect("handshake write");
}

/// tokio-lockgate's natural loop: `read`, `write`, and `flush` once the
/// input received so far is used up.
async fn natural(mut ws: WebSocketStream) {
    loop {
        match ws.read().await {
            Ok(m) if m.is_data() => {
                if ws.write(m).await.is_err() {
                    return;
                }
            }
            Ok(_) => {}
            Err(_) => return,
        }
        if ws.buffered_input() == 0 && ws.flush().await.is_err() {
            return;
        }
    }
}

/// The batching loop: after each message, the messages ready at once
/// (the read polled once and dropped if it would wait: the read in flight
/// stays in the stream), each queued, then one flush.
async fn batching(mut ws: WebSocketStream) {
    loop {
        let Some(m) = next(&mut ws).await else { return };
        if ws.write(m).await.is_err() {
            return;
        }
        for _ in 1..MAX_BATCH {
            match next(&mut ws).now_or_never() {
                Some(Some(m)) => {
                    if ws.write(m).await.is_err() {
                        return;
                    }
                }
                Some(None) => return,
                None => break,
            }
        }
        if ws.flush().await.is_err() {
            return;
        }
    }
}

/// The next data message; `None` once the connection ended.
async fn next(ws: &mut WebSocketStream) -> Option<lockgate::Message> {
    loop {
        match ws.read().await {
            Ok(m) if m.is_data() => return Some(m),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
}
