//! The tokio driver against the conformance kit (kit/src/conformance): the
//! write/flush contract and the closing handshake, the same cases every
//! driver runs, each call polled once and dropped when pending (a
//! cancelled call). Then what only the async API has: the Sink (feed many,
//! flush once; `poll_ready` writes, never flushes), the Stream's end, and
//! the split halves.

use lockgate_kit as support;

use std::future::Future;
use std::task::Poll;

use futures_util::{SinkExt, StreamExt};
use lockgate::frame::OpCode;
use support::conformance::{Connection, Driver, would_block};
use support::{AsyncMock, MockStream, WriteStep, client_frame, parse_frames, poll_once};
use tokio_lockgate::{
    CloseFrame, Config, Message, Result, Role, WebSocketContext, WebSocketStream,
};

/// [`WebSocketStream`] over the kit's mock.
struct Tokio;

struct TokioConnection(WebSocketStream<AsyncMock>);

/// The call's outcome if it completes in one poll; would-block if not
/// (the future is dropped, as a timeout around it would).
fn at_once<T>(call: impl Future<Output = Result<T>>) -> Result<T> {
    match poll_once(call) {
        Poll::Ready(outcome) => outcome,
        Poll::Pending => Err(would_block()),
    }
}

impl Driver for Tokio {
    type Connection = TokioConnection;

    fn open(stream: MockStream, role: Role, config: Config) -> TokioConnection {
        TokioConnection(WebSocketStream::from_context(
            AsyncMock(stream),
            WebSocketContext::new(role, config),
        ))
    }
}

impl Connection for TokioConnection {
    fn read(&mut self) -> Result<Message> {
        at_once(self.0.read())
    }
    fn write(&mut self, msg: Message) -> Result<()> {
        at_once(self.0.write(msg))
    }
    fn flush(&mut self) -> Result<()> {
        at_once(self.0.flush())
    }
    fn send(&mut self, msg: Message) -> Result<()> {
        at_once(self.0.send(msg))
    }
    fn close(&mut self, frame: Option<CloseFrame>) -> Result<()> {
        at_once(self.0.close(frame))
    }
    fn buffered_output(&self) -> usize {
        self.0.buffered_output()
    }
    fn mock(&self) -> &MockStream {
        &self.0.get_ref().0
    }
    fn mock_mut(&mut self) -> &mut MockStream {
        &mut self.0.get_mut().0
    }
}

support::conformance_suite!(Tokio);

#[tokio::test]
async fn sink_feed_hundred_thousand_then_flush_is_one_socket_flush() {
    for role in [Role::Server, Role::Client] {
        let mut ws = WebSocketStream::from_context(
            AsyncMock::default(),
            WebSocketContext::new(role, Config::default()),
        );
        for i in 0..100_000u32 {
            ws.feed(Message::text(format!("event {i}"))).await.unwrap();
        }
        assert_eq!(
            ws.get_ref().0.flush_calls,
            0,
            "{role:?}: feed must not flush"
        );
        ws.flush().await.unwrap();
        let mock = &ws.get_ref().0;
        assert_eq!(mock.flush_calls, 1, "{role:?}");
        assert!(
            mock.write_calls < 100,
            "{role:?}: {} writes",
            mock.write_calls
        );
        let frames = parse_frames(&mock.written);
        assert_eq!(frames.len(), 100_000);
        assert_eq!(frames[99_999].payload, b"event 99999");
    }
}

#[test]
fn poll_ready_applies_backpressure_by_writing_not_flushing() {
    let mut mock = MockStream::new();
    mock.writes.push_back(WriteStep::WouldBlock);
    let config = Config::default().write_buffer_size(100);
    let mut ws =
        WebSocketStream::from_context(AsyncMock(mock), WebSocketContext::new(Role::Server, config));
    ws.start_send_unpin(Message::binary(vec![0u8; 200]))
        .unwrap();
    assert!(poll_once(futures_util::future::poll_fn(|cx| ws.poll_ready_unpin(cx))).is_pending());
    assert!(matches!(
        poll_once(futures_util::future::poll_fn(|cx| ws.poll_ready_unpin(cx))),
        Poll::Ready(Ok(()))
    ));
    let mock = &ws.get_ref().0;
    assert_eq!(mock.written.len(), 204);
    assert_eq!(mock.flush_calls, 0, "poll_ready writes, it does not flush");
}

#[tokio::test]
async fn stream_ends_after_the_closing_handshake() {
    let mut mock = MockStream::new();
    mock.push_input(client_frame(OpCode::Text, b"last words"));
    mock.push_input(client_frame(OpCode::Close, &[0x03, 0xE8]));
    let mut ws = WebSocketStream::from_context(
        AsyncMock(mock),
        WebSocketContext::new(Role::Server, Config::default()),
    );
    assert_eq!(
        ws.next().await.unwrap().unwrap(),
        Message::text("last words")
    );
    assert!(matches!(
        ws.next().await.unwrap().unwrap(),
        Message::Close(Some(_))
    ));
    assert!(ws.next().await.is_none());
    assert!(ws.next().await.is_none());
    let frames = parse_frames(&ws.get_ref().0.written);
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].close_code(), Some(1000), "the close was echoed");
}

#[tokio::test]
async fn prepared_messages_follow_the_write_flush_contract_whole_and_split() {
    use tokio_lockgate::PreparedMessage;
    // Small frames are copied, large ones shared: both kinds, interleaved.
    let small = PreparedMessage::new(Message::text("tick"));
    let large = PreparedMessage::new(Message::binary(vec![9u8; 4096]));
    let mut ws = WebSocketStream::from_context(
        AsyncMock::default(),
        WebSocketContext::new(Role::Server, Config::default()),
    );
    for _ in 0..10 {
        ws.write_prepared(&small).await.unwrap();
        ws.write_prepared(&large).await.unwrap();
    }
    assert_eq!(
        ws.get_ref().0.write_calls,
        0,
        "write_prepared never flushes"
    );
    ws.flush().await.unwrap();
    assert_eq!(ws.get_ref().0.flush_calls, 1);
    let frames = parse_frames(&ws.get_ref().0.written);
    assert_eq!(frames.len(), 20);
    assert!(frames.iter().step_by(2).all(|f| f.payload == b"tick"));
    assert!(
        frames
            .iter()
            .skip(1)
            .step_by(2)
            .all(|f| f.payload == [9u8; 4096])
    );

    let (mut write, read) = ws.into_split();
    write.write_prepared(&small).await.unwrap();
    write.flush().await.unwrap();
    let ws = read.reunite(write).unwrap();
    let frames = parse_frames(&ws.get_ref().0.written);
    assert_eq!(frames.len(), 21);
    assert_eq!(frames[20].payload, b"tick");
}
