//! The write/flush contract through the async API and the Sink: feed many,
//! flush once; only pongs and close replies are flushed implicitly.

use lockgate_kit as support;

use std::task::Poll;

use futures_util::{SinkExt, StreamExt};
use lockgate::frame::OpCode;
use support::{AsyncMock, MockStream, WriteStep, client_frame, parse_frames, poll_once};
use tokio_lockgate::{Config, Error, Message, Role, WebSocketContext, WebSocketStream};

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

#[tokio::test]
async fn inherent_write_never_flushes_and_send_flushes_once() {
    let mut ws = WebSocketStream::from_context(
        AsyncMock::default(),
        WebSocketContext::new(Role::Server, Config::default()),
    );
    for _ in 0..1000 {
        ws.write(Message::binary(vec![1u8; 40])).await.unwrap();
    }
    assert_eq!(
        ws.get_ref().0.write_calls,
        0,
        "below write_buffer_size nothing is written"
    );
    ws.send(Message::text("last")).await.unwrap();
    assert_eq!(
        ws.get_ref().0.write_calls,
        1,
        "one write for the whole batch"
    );
    assert_eq!(ws.get_ref().0.flush_calls, 1);
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
async fn write_buffer_full_hands_back_the_message() {
    let config = Config::default()
        .write_buffer_size(usize::MAX)
        .max_write_buffer_size(1000);
    let mut ws = WebSocketStream::from_context(
        AsyncMock::default(),
        WebSocketContext::new(Role::Server, config),
    );
    ws.write(Message::binary(vec![0u8; 900])).await.unwrap();
    let msg = Message::text("y".repeat(200));
    match ws.write(msg.clone()).await {
        Err(Error::WriteBufferFull(back)) => assert_eq!(*back, msg),
        other => panic!("{other:?}"),
    }
    ws.flush().await.unwrap();
    ws.send(msg).await.unwrap();
}

#[tokio::test]
async fn a_reader_that_never_writes_still_answers_pings_behind_queued_data() {
    let mut mock = MockStream::new();
    mock.push_input(client_frame(OpCode::Ping, b"ping 1"));
    mock.push_input(client_frame(OpCode::Text, b"data"));
    let mut ws = WebSocketStream::from_context(
        AsyncMock(mock),
        WebSocketContext::new(Role::Server, Config::default()),
    );
    ws.write(Message::text("unflushed")).await.unwrap();
    assert_eq!(
        ws.next().await.unwrap().unwrap(),
        Message::Ping("ping 1".into())
    );
    assert_eq!(ws.next().await.unwrap().unwrap(), Message::text("data"));
    let mock = &ws.get_ref().0;
    assert_eq!(mock.flush_calls, 1, "the pong was flushed by the read side");
    let kinds: Vec<_> = parse_frames(&mock.written)
        .iter()
        .map(|f| f.header.opcode)
        .collect();
    assert_eq!(kinds, [OpCode::Text, OpCode::Pong]);
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
