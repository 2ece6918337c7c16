//! One small driver per library, behind two traits (blocking and async), so
//! every scenario runs the same code for every library. Each driver uses the
//! library's default configuration and its ordinary API for "queue a
//! message", "flush", and "read the next message".

use std::future::Future;
use std::io::{Read, Write};

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite, BufWriter};

/// A library driven through blocking `std::io` streams.
pub(crate) trait SyncLib {
    /// The library's WebSocket over stream `S`.
    type Ws<S: Read + Write>;
    /// The library's message type.
    type Msg;
    /// Wraps an already-upgraded stream, default configuration.
    fn wrap<S: Read + Write + 'static>(stream: S, server: bool) -> Self::Ws<S>;
    /// A text message from an owned string (no copy where the library allows).
    fn text(s: String) -> Self::Msg;
    /// A binary message.
    fn binary(b: Bytes) -> Self::Msg;
    /// Queues a message (the library may write when its buffer is full).
    fn write<S: Read + Write>(ws: &mut Self::Ws<S>, m: Self::Msg);
    /// Writes everything queued and flushes the stream.
    fn flush<S: Read + Write>(ws: &mut Self::Ws<S>);
    /// The next data message.
    fn read<S: Read + Write>(ws: &mut Self::Ws<S>) -> Self::Msg;
    /// A data message's payload.
    fn payload(m: &Self::Msg) -> &[u8];
}

/// A library driven through tokio's `AsyncRead + AsyncWrite`.
pub(crate) trait AsyncLib {
    /// The library's WebSocket over stream `S`.
    type Ws<S: AsyncRead + AsyncWrite + Unpin>;
    /// The library's message type.
    type Msg;
    /// Wraps an already-upgraded stream, default configuration.
    fn wrap<S: AsyncRead + AsyncWrite + Unpin>(
        stream: S,
        server: bool,
    ) -> impl Future<Output = Self::Ws<S>>;
    /// A text message from an owned string.
    fn text(s: String) -> Self::Msg;
    /// A binary message.
    fn binary(b: Bytes) -> Self::Msg;
    /// Queues a message (`Sink::feed` for Sink-based libraries).
    fn write<S: AsyncRead + AsyncWrite + Unpin>(
        ws: &mut Self::Ws<S>,
        m: Self::Msg,
    ) -> impl Future<Output = ()>;
    /// Writes everything queued and flushes the stream.
    fn flush<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut Self::Ws<S>) -> impl Future<Output = ()>;
    /// The next data message.
    fn read<S: AsyncRead + AsyncWrite + Unpin>(
        ws: &mut Self::Ws<S>,
    ) -> impl Future<Output = Self::Msg>;
    /// A data message's payload.
    fn payload(m: &Self::Msg) -> &[u8];
}

fn lg_role(server: bool) -> lockgate::Role {
    if server {
        lockgate::Role::Server
    } else {
        lockgate::Role::Client
    }
}

fn lg_payload(m: &lockgate::Message) -> &[u8] {
    match m {
        lockgate::Message::Text(t) => t.as_bytes(),
        lockgate::Message::Binary(b) => b,
        other => panic!("lockgate: unexpected message {other:?}"),
    }
}

fn tung_role(server: bool) -> tungstenite::protocol::Role {
    if server {
        tungstenite::protocol::Role::Server
    } else {
        tungstenite::protocol::Role::Client
    }
}

fn tung_payload(m: &tungstenite::Message) -> &[u8] {
    match m {
        tungstenite::Message::Text(t) => t.as_bytes(),
        tungstenite::Message::Binary(b) => b,
        other => panic!("tungstenite: unexpected message {other:?}"),
    }
}

/// lockgate's blocking `WebSocket<S>`.
pub(crate) struct Lockgate;

impl SyncLib for Lockgate {
    type Ws<S: Read + Write> = lockgate::WebSocket<S>;
    type Msg = lockgate::Message;
    fn wrap<S: Read + Write + 'static>(stream: S, server: bool) -> Self::Ws<S> {
        lockgate::WebSocket::from_raw_socket(stream, lg_role(server), lockgate::Config::default())
    }
    fn text(s: String) -> Self::Msg {
        lockgate::Message::text(s)
    }
    fn binary(b: Bytes) -> Self::Msg {
        lockgate::Message::binary(b)
    }
    fn write<S: Read + Write>(ws: &mut Self::Ws<S>, m: Self::Msg) {
        ws.write(m).expect("lockgate write");
    }
    fn flush<S: Read + Write>(ws: &mut Self::Ws<S>) {
        ws.flush().expect("lockgate flush");
    }
    fn read<S: Read + Write>(ws: &mut Self::Ws<S>) -> Self::Msg {
        ws.read().expect("lockgate read")
    }
    fn payload(m: &Self::Msg) -> &[u8] {
        lg_payload(m)
    }
}

/// tungstenite's blocking `WebSocket<S>`.
pub(crate) struct Tungstenite;

impl SyncLib for Tungstenite {
    type Ws<S: Read + Write> = tungstenite::WebSocket<S>;
    type Msg = tungstenite::Message;
    fn wrap<S: Read + Write + 'static>(stream: S, server: bool) -> Self::Ws<S> {
        tungstenite::WebSocket::from_raw_socket(stream, tung_role(server), None)
    }
    fn text(s: String) -> Self::Msg {
        tungstenite::Message::text(s)
    }
    fn binary(b: Bytes) -> Self::Msg {
        tungstenite::Message::binary(b)
    }
    fn write<S: Read + Write>(ws: &mut Self::Ws<S>, m: Self::Msg) {
        ws.write(m).expect("tungstenite write");
    }
    fn flush<S: Read + Write>(ws: &mut Self::Ws<S>) {
        ws.flush().expect("tungstenite flush");
    }
    fn read<S: Read + Write>(ws: &mut Self::Ws<S>) -> Self::Msg {
        ws.read().expect("tungstenite read")
    }
    fn payload(m: &Self::Msg) -> &[u8] {
        tung_payload(m)
    }
}

/// tokio-lockgate's `WebSocketStream<S>` (inherent async write/flush/read).
pub(crate) struct TokioLockgate;

impl AsyncLib for TokioLockgate {
    type Ws<S: AsyncRead + AsyncWrite + Unpin> = tokio_lockgate::WebSocketStream<S>;
    type Msg = lockgate::Message;
    async fn wrap<S: AsyncRead + AsyncWrite + Unpin>(stream: S, server: bool) -> Self::Ws<S> {
        tokio_lockgate::WebSocketStream::from_context(
            stream,
            tokio_lockgate::WebSocketContext::new(lg_role(server), lockgate::Config::default()),
        )
    }
    fn text(s: String) -> Self::Msg {
        lockgate::Message::text(s)
    }
    fn binary(b: Bytes) -> Self::Msg {
        lockgate::Message::binary(b)
    }
    async fn write<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut Self::Ws<S>, m: Self::Msg) {
        ws.write(m).await.expect("tokio-lockgate write");
    }
    async fn flush<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut Self::Ws<S>) {
        ws.flush().await.expect("tokio-lockgate flush");
    }
    async fn read<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut Self::Ws<S>) -> Self::Msg {
        ws.read().await.expect("tokio-lockgate read")
    }
    fn payload(m: &Self::Msg) -> &[u8] {
        lg_payload(m)
    }
}

/// tokio-tungstenite's `WebSocketStream<S>` (Sink `feed`/`flush`, Stream `next`).
pub(crate) struct TokioTungstenite;

impl AsyncLib for TokioTungstenite {
    type Ws<S: AsyncRead + AsyncWrite + Unpin> = tokio_tungstenite::WebSocketStream<S>;
    type Msg = tungstenite::Message;
    async fn wrap<S: AsyncRead + AsyncWrite + Unpin>(stream: S, server: bool) -> Self::Ws<S> {
        tokio_tungstenite::WebSocketStream::from_raw_socket(stream, tung_role(server), None).await
    }
    fn text(s: String) -> Self::Msg {
        tungstenite::Message::text(s)
    }
    fn binary(b: Bytes) -> Self::Msg {
        tungstenite::Message::binary(b)
    }
    async fn write<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut Self::Ws<S>, m: Self::Msg) {
        ws.feed(m).await.expect("tokio-tungstenite feed");
    }
    async fn flush<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut Self::Ws<S>) {
        SinkExt::flush(ws).await.expect("tokio-tungstenite flush");
    }
    async fn read<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut Self::Ws<S>) -> Self::Msg {
        ws.next()
            .await
            .expect("tokio-tungstenite: stream ended")
            .expect("tokio-tungstenite read")
    }
    fn payload(m: &Self::Msg) -> &[u8] {
        tung_payload(m)
    }
}

/// fastwebsockets' `WebSocket::after_handshake`.
///
/// fastwebsockets has no write buffer: every `write_frame` is a `write_all`
/// on the stream. So that "queue many, flush once" batches at all, the
/// stream is wrapped in a tokio `BufWriter` (default 8 KiB), the usual way
/// to use it, and `flush` is `WebSocket::flush`. `FragmentCollector` has no
/// `flush`, so messages are read with `WebSocket::read_frame`, asserting
/// that every frame is final: no scenario sends fragmented messages, so this
/// returns exactly what `FragmentCollector` would. (The idle-memory scenario
/// parks a `FragmentCollector` over the bare stream, since nothing is
/// written there.)
pub(crate) struct Fastwebsockets;

fn fws_role(server: bool) -> fastwebsockets::Role {
    if server {
        fastwebsockets::Role::Server
    } else {
        fastwebsockets::Role::Client
    }
}

impl AsyncLib for Fastwebsockets {
    type Ws<S: AsyncRead + AsyncWrite + Unpin> = fastwebsockets::WebSocket<BufWriter<S>>;
    type Msg = fastwebsockets::Frame<'static>;
    async fn wrap<S: AsyncRead + AsyncWrite + Unpin>(stream: S, server: bool) -> Self::Ws<S> {
        fastwebsockets::WebSocket::after_handshake(BufWriter::new(stream), fws_role(server))
    }
    fn text(s: String) -> Self::Msg {
        fastwebsockets::Frame::text(fastwebsockets::Payload::Owned(s.into_bytes()))
    }
    fn binary(b: Bytes) -> Self::Msg {
        fastwebsockets::Frame::binary(fastwebsockets::Payload::Owned(b.to_vec()))
    }
    async fn write<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut Self::Ws<S>, m: Self::Msg) {
        ws.write_frame(m).await.expect("fastwebsockets write_frame");
    }
    async fn flush<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut Self::Ws<S>) {
        ws.flush().await.expect("fastwebsockets flush");
    }
    async fn read<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut Self::Ws<S>) -> Self::Msg {
        let f = ws.read_frame().await.expect("fastwebsockets read_frame");
        assert!(
            f.fin
                && matches!(
                    f.opcode,
                    fastwebsockets::OpCode::Text | fastwebsockets::OpCode::Binary
                ),
            "fastwebsockets: unexpected frame {:?} fin={}",
            f.opcode,
            f.fin
        );
        // Without the masking key a server read keeps in the frame: an
        // echo of it would go out masked (not allowed from a server, and
        // work for both ends that no other library does).
        fastwebsockets::Frame::new(true, f.opcode, None, f.payload)
    }
    fn payload(m: &Self::Msg) -> &[u8] {
        &m.payload
    }
}

/// tokio-websockets' `WebSocketStream<S>` (`ServerBuilder::serve` /
/// `ClientBuilder::take_over`; Sink `feed`/`flush`, Stream `next`).
pub(crate) struct TokioWebsockets;

impl AsyncLib for TokioWebsockets {
    type Ws<S: AsyncRead + AsyncWrite + Unpin> = tokio_websockets::WebSocketStream<S>;
    type Msg = tokio_websockets::Message;
    async fn wrap<S: AsyncRead + AsyncWrite + Unpin>(stream: S, server: bool) -> Self::Ws<S> {
        if server {
            tokio_websockets::ServerBuilder::new().serve(stream)
        } else {
            tokio_websockets::ClientBuilder::new().take_over(stream)
        }
    }
    fn text(s: String) -> Self::Msg {
        tokio_websockets::Message::text(s)
    }
    fn binary(b: Bytes) -> Self::Msg {
        tokio_websockets::Message::binary(b)
    }
    async fn write<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut Self::Ws<S>, m: Self::Msg) {
        ws.feed(m).await.expect("tokio-websockets feed");
    }
    async fn flush<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut Self::Ws<S>) {
        SinkExt::flush(ws).await.expect("tokio-websockets flush");
    }
    async fn read<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut Self::Ws<S>) -> Self::Msg {
        let m = ws
            .next()
            .await
            .expect("tokio-websockets: stream ended")
            .expect("tokio-websockets read");
        assert!(
            m.is_text() || m.is_binary(),
            "tokio-websockets: unexpected {m:?}"
        );
        m
    }
    fn payload(m: &Self::Msg) -> &[u8] {
        m.as_payload()
    }
}

/// sockudo-ws's `WebSocketStream<S>` (`WebSocketStream::from_raw`; Sink
/// `feed`/`flush`, Stream `next`).
///
/// `feed` queues into its cork buffer, but Sink readiness drains whenever
/// 64 KiB (its default high-water mark) are pending, and every drain ends
/// with a flush of the transport: "queue without flushing" holds only up to
/// 64 KiB. Its read path also flushes pending output before it waits for
/// more input.
pub(crate) struct SockudoWs;

fn sockudo_role(server: bool) -> sockudo_ws::Role {
    if server {
        sockudo_ws::Role::Server
    } else {
        sockudo_ws::Role::Client
    }
}

/// A sockudo-ws data message's payload.
pub(crate) fn sockudo_payload(m: &sockudo_ws::Message) -> &[u8] {
    match m {
        sockudo_ws::Message::Text(b) | sockudo_ws::Message::Binary(b) => b,
        other => crate::fail("sockudo-ws", &format!("unexpected message {other:?}")),
    }
}

impl AsyncLib for SockudoWs {
    type Ws<S: AsyncRead + AsyncWrite + Unpin> = sockudo_ws::WebSocketStream<S>;
    type Msg = sockudo_ws::Message;
    async fn wrap<S: AsyncRead + AsyncWrite + Unpin>(stream: S, server: bool) -> Self::Ws<S> {
        sockudo_ws::WebSocketStream::from_raw(
            stream,
            sockudo_role(server),
            sockudo_ws::Config::default(),
        )
    }
    fn text(s: String) -> Self::Msg {
        sockudo_ws::Message::text(s)
    }
    fn binary(b: Bytes) -> Self::Msg {
        sockudo_ws::Message::binary(b)
    }
    async fn write<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut Self::Ws<S>, m: Self::Msg) {
        ws.feed(m).await.expect("sockudo-ws feed");
    }
    async fn flush<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut Self::Ws<S>) {
        SinkExt::flush(ws).await.expect("sockudo-ws flush");
    }
    async fn read<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut Self::Ws<S>) -> Self::Msg {
        let m = ws
            .next()
            .await
            .expect("sockudo-ws: stream ended")
            .expect("sockudo-ws read");
        if !(m.is_text() || m.is_binary()) {
            crate::fail("sockudo-ws", &format!("unexpected message {m:?}"));
        }
        m
    }
    fn payload(m: &Self::Msg) -> &[u8] {
        sockudo_payload(m)
    }
}

/// yawc's `WebSocket<S>` (`WebSocket::from_stream`; Sink `feed`/`flush`,
/// `next_frame`).
///
/// Its default options with one exception, [`yawc_plain_options`]. yawc
/// does not validate UTF-8 by default, so it sits out the in-memory
/// small-text read row; in the TCP rows its receiving end does not check the
/// 64-byte texts.
pub(crate) struct Yawc;

/// The largest message yawc reads in the uncompressed scenarios (64 MiB,
/// the default limit of tungstenite, fastwebsockets, tokio-websockets and
/// sockudo-ws). yawc's own default, 1 MiB, is exclusive: it refuses the
/// 1 MiB messages of the large-message rows.
pub(crate) const YAWC_MAX_PAYLOAD: usize = 64 << 20;

/// yawc's options in the uncompressed scenarios: the defaults (no
/// compression, no UTF-8 check) with [`YAWC_MAX_PAYLOAD`].
pub(crate) fn yawc_plain_options() -> yawc::Options {
    yawc::Options::default().with_max_payload_read(YAWC_MAX_PAYLOAD)
}

fn yawc_role(server: bool) -> yawc::Role {
    if server {
        yawc::Role::Server
    } else {
        yawc::Role::Client
    }
}

impl AsyncLib for Yawc {
    type Ws<S: AsyncRead + AsyncWrite + Unpin> = yawc::WebSocket<S>;
    type Msg = yawc::Frame;
    async fn wrap<S: AsyncRead + AsyncWrite + Unpin>(stream: S, server: bool) -> Self::Ws<S> {
        yawc::WebSocket::from_stream(stream, yawc_role(server), yawc_plain_options())
            .expect("yawc from_stream")
    }
    fn text(s: String) -> Self::Msg {
        yawc::Frame::text(s)
    }
    fn binary(b: Bytes) -> Self::Msg {
        yawc::Frame::binary(b)
    }
    async fn write<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut Self::Ws<S>, m: Self::Msg) {
        ws.feed(m).await.expect("yawc feed");
    }
    async fn flush<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut Self::Ws<S>) {
        SinkExt::flush(ws).await.expect("yawc flush");
    }
    async fn read<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut Self::Ws<S>) -> Self::Msg {
        let f = ws.next_frame().await.expect("yawc next_frame");
        if !(f.is_fin() && matches!(f.opcode(), yawc::OpCode::Text | yawc::OpCode::Binary)) {
            crate::fail(
                "yawc",
                &format!("unexpected frame {:?} fin={}", f.opcode(), f.is_fin()),
            );
        }
        f
    }
    fn payload(m: &Self::Msg) -> &[u8] {
        m.payload()
    }
}
