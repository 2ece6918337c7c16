//! What only the async API has of the write/flush contract: the Sink (feed
//! many, flush once; `poll_ready` writes, never flushes), the Stream's end
//! after the closing handshake, and prepared messages through the split
//! halves. The contract every driver shares is the conformance kit's
//! (tests/kit.rs).

use lockgate_kit as support;

use std::task::Poll;

use futures_util::{SinkExt, StreamExt};
use lockgate::frame::OpCode;
use support::{AsyncMock, MockStream, ReadStep, WriteStep, client_frame, parse_frames, poll_once};
use tokio_lockgate::{Config, Message, Role, WebSocketContext, WebSocketStream};

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

/// Polls `stream` to its end; whether it said it was ended
/// (`FusedStream::is_terminated`) before each item, and after the end.
async fn fused_flags<T>(
    mut stream: impl futures_util::stream::FusedStream<Item = T> + Unpin,
) -> (Vec<bool>, bool) {
    let mut before_each = vec![stream.is_terminated()];
    for _ in 0..10 {
        if stream.next().await.is_none() {
            assert!(stream.next().await.is_none(), "stays ended");
            return (before_each, stream.is_terminated());
        }
        before_each.push(stream.is_terminated());
    }
    panic!("the stream did not end");
}

#[tokio::test]
async fn the_stream_and_its_read_half_are_fused_once_they_yielded_the_end() {
    // A clean close yields the text, the close, then ends; an unmasked
    // client frame yields the error, after which only the end is left.
    let clean = vec![
        client_frame(OpCode::Text, b"last words"),
        client_frame(OpCode::Close, &[0x03, 0xE8]),
    ];
    let unmasked = vec![vec![0x81, 0x02, b'h', b'i']];
    let cases = [
        (clean, vec![false, false, false]),
        (unmasked, vec![false, true]),
    ];
    for (input, expected) in cases {
        for split in [false, true] {
            let mut mock = MockStream::new();
            for frame in &input {
                mock.push_input(frame.clone());
            }
            let ws = WebSocketStream::from_context(
                AsyncMock(mock),
                WebSocketContext::new(Role::Server, Config::default()),
            );
            let (before_each, after_end) = if split {
                let (_write, read) = ws.into_split();
                fused_flags(read).await
            } else {
                fused_flags(ws).await
            };
            assert_eq!(before_each, expected, "split: {split}");
            assert!(after_end, "split: {split}");
        }
    }
}

#[tokio::test]
async fn a_failed_connection_is_not_ended_before_it_yielded_its_error() {
    // The connection fails on the first frame (unmasked); its close frame
    // goes out and the read lingers for the peer's FIN before it yields
    // the error: until then the stream is not ended.
    let mut mock = MockStream::new();
    mock.reads
        .push_back(ReadStep::Data(vec![0x81, 0x02, b'h', b'i']));
    mock.reads.push_back(ReadStep::WouldBlock);
    mock.reads.push_back(ReadStep::Eof);
    let mut ws = WebSocketStream::from_context(
        AsyncMock(mock),
        WebSocketContext::new(Role::Server, Config::default()),
    );
    use futures_util::stream::FusedStream;
    assert!(poll_once(ws.next()).is_pending());
    let frames = parse_frames(&ws.get_ref().0.written);
    assert_eq!(frames[0].close_code(), Some(1002), "the close went out");
    assert!(!ws.is_terminated(), "the error has not been yielded");
    assert!(matches!(ws.next().await, Some(Err(_))));
    assert!(ws.is_terminated());
    assert!(ws.next().await.is_none());
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
