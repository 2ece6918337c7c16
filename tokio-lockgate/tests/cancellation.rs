//! Cancellation safety: dropping a `read`, `write`, `flush` or `send` future
//! at any await point loses no received message and no accepted byte.
//!
//! Every test polls each future exactly once and drops it if it is not
//! ready, so every await point where the stream says "not yet" is also a
//! point where the future is cancelled.

use lockgate_kit as support;

use std::task::Poll;

use lockgate::frame::OpCode;
use support::{
    AsyncMock, FlushStep, MockStream, ReadStep, WriteStep, client_frame, frame, parse_frames,
    poll_once,
};
use tokio_lockgate::{Config, Message, Role, WebSocketContext, WebSocketStream};

fn messages() -> Vec<Message> {
    (0..40)
        .map(|i| match i % 3 {
            0 => Message::text(format!("text {i} {}", "ü".repeat(i))),
            1 => Message::binary(vec![i as u8; i * 37]),
            _ => Message::binary(vec![i as u8; 70_000 + i]),
        })
        .collect()
}

fn wire_of(msgs: &[Message]) -> Vec<u8> {
    let mut wire = Vec::new();
    for (i, msg) in msgs.iter().enumerate() {
        let (opcode, payload) = match msg {
            Message::Text(t) => (OpCode::Text, t.as_bytes().to_vec()),
            Message::Binary(b) => (OpCode::Binary, b.to_vec()),
            _ => unreachable!(),
        };
        // Fragment every other message to exercise assembly state too.
        if i % 2 == 0 && payload.len() > 2 {
            let mid = payload.len() / 2;
            wire.extend(frame(false, opcode, &payload[..mid], Some([1, 2, 3, 4])));
            wire.extend(client_frame(OpCode::Ping, b"between"));
            wire.extend(frame(
                true,
                OpCode::Continuation,
                &payload[mid..],
                Some([5, 6, 7, 8]),
            ));
        } else {
            wire.extend(client_frame(opcode, &payload));
        }
    }
    wire
}

fn decode(wire: &[u8]) -> Vec<Message> {
    parse_frames(wire)
        .into_iter()
        .filter_map(|f| match f.header.opcode {
            OpCode::Text => Some(Message::text(String::from_utf8(f.payload).unwrap())),
            OpCode::Binary => Some(Message::binary(f.payload)),
            _ => None,
        })
        .collect()
}

#[test]
fn read_cancelled_at_every_pending_loses_no_message() {
    let sent = messages();
    let wire = wire_of(&sent);
    let mut mock = MockStream::new();
    // Deliver in uneven chunks with a "not yet" between every two.
    let mut pos = 0;
    let mut step = 1;
    while pos < wire.len() {
        let end = (pos + step).min(wire.len());
        mock.reads
            .push_back(ReadStep::Data(wire[pos..end].to_vec()));
        mock.reads.push_back(ReadStep::WouldBlock);
        pos = end;
        step = step * 7 % 5003 + 1;
    }
    let mut ws = WebSocketStream::from_context(
        AsyncMock(mock),
        WebSocketContext::new(Role::Server, Config::default()),
    );
    let mut got = Vec::new();
    let mut cancelled = 0;
    while got.len() < sent.len() {
        match poll_once(ws.read()) {
            Poll::Ready(Ok(msg)) if msg.is_data() => got.push(msg),
            Poll::Ready(Ok(_)) => {}
            Poll::Ready(Err(e)) => panic!("{e:?}"),
            Poll::Pending => {
                cancelled += 1;
                assert!(cancelled < 100_000, "no progress");
            }
        }
    }
    assert!(
        cancelled > 100,
        "the test must actually cancel reads ({cancelled})"
    );
    assert_eq!(got, sent);
}

#[test]
fn write_send_and_flush_cancelled_at_every_pending_lose_no_accepted_byte() {
    for role in [Role::Server, Role::Client] {
        let sent = messages();
        let mut mock = MockStream::new();
        for i in 0..5000u32 {
            mock.writes.push_back(match i % 4 {
                0 => WriteStep::WouldBlock,
                1 => WriteStep::Accept(1 + (i as usize * 31) % 9000),
                2 => WriteStep::Interrupted,
                _ => WriteStep::Accept(3),
            });
            mock.flushes.push_back(if i % 2 == 0 {
                FlushStep::WouldBlock
            } else {
                FlushStep::Ok
            });
        }
        let config = Config::default().write_buffer_size(1000);
        let mut ws =
            WebSocketStream::from_context(AsyncMock(mock), WebSocketContext::new(role, config));
        let mut cancelled = 0;
        for (i, msg) in sent.iter().enumerate() {
            // The message is accepted on the first poll whatever happens to
            // the future afterwards.
            let polled = if i % 2 == 0 {
                poll_once(ws.write(msg.clone()))
            } else {
                poll_once(ws.send(msg.clone()))
            };
            match polled {
                Poll::Ready(result) => result.unwrap(),
                Poll::Pending => cancelled += 1,
            }
            if i % 5 == 0 && poll_once(ws.flush()).is_pending() {
                cancelled += 1;
            }
        }
        loop {
            match poll_once(ws.flush()) {
                Poll::Ready(result) => break result.unwrap(),
                Poll::Pending => cancelled += 1,
            }
            assert!(cancelled < 100_000, "flush never completes");
        }
        assert!(
            cancelled > 10,
            "{role:?}: the test must actually cancel ({cancelled})"
        );
        assert_eq!(decode(&ws.get_ref().0.written), sent, "{role:?}");
    }
}

#[test]
fn a_pong_owed_by_a_cancelled_read_goes_out_with_the_next_call() {
    let mut mock = MockStream::new();
    mock.push_input(client_frame(OpCode::Ping, b"hi"));
    mock.writes.push_back(WriteStep::WouldBlock);
    let mut ws = WebSocketStream::from_context(
        AsyncMock(mock),
        WebSocketContext::new(Role::Server, Config::default()),
    );
    assert!(matches!(
        poll_once(ws.read()),
        Poll::Ready(Ok(Message::Ping(_)))
    ));
    assert!(
        ws.get_ref().0.written.is_empty(),
        "the socket refused the pong"
    );
    assert!(
        poll_once(ws.read()).is_pending(),
        "nothing more to read; the pong goes out"
    );
    let frames = parse_frames(&ws.get_ref().0.written);
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].header.opcode, OpCode::Pong);
    assert_eq!(ws.get_ref().0.flush_calls, 1);
}

#[test]
fn a_write_after_a_cancelled_flush_does_not_flush() {
    // A flush future dropped before the stream took the bytes (a timeout
    // around `flush`, say) leaves nothing behind for the next write, the
    // Sink's `poll_ready` or the write half: only `flush`, `send` and
    // `close` flush.
    use futures_util::SinkExt;
    for split in [false, true] {
        let mut mock = MockStream::new();
        mock.writes.push_back(WriteStep::WouldBlock);
        let mut ws = WebSocketStream::from_context(
            AsyncMock(mock),
            WebSocketContext::new(Role::Server, Config::default()),
        );
        assert!(poll_once(ws.write(Message::text("queued"))).is_ready());
        if split {
            let (mut write, read) = ws.into_split();
            assert!(poll_once(write.flush()).is_pending(), "the socket blocks");
            for _ in 0..3 {
                assert!(matches!(
                    poll_once(write.write(Message::text("more"))),
                    Poll::Ready(Ok(()))
                ));
            }
            assert!(matches!(
                poll_once(SinkExt::feed(&mut write, Message::text("fed"))),
                Poll::Ready(Ok(()))
            ));
            ws = read.reunite(write).expect("halves of one stream");
        } else {
            assert!(poll_once(ws.flush()).is_pending(), "the socket blocks");
            for _ in 0..3 {
                assert!(matches!(
                    poll_once(ws.write(Message::text("more"))),
                    Poll::Ready(Ok(()))
                ));
            }
            assert!(matches!(
                poll_once(SinkExt::feed(&mut ws, Message::text("fed"))),
                Poll::Ready(Ok(()))
            ));
        }
        let mock = &ws.get_ref().0;
        assert!(mock.written.is_empty(), "split {split}: a write wrote");
        assert_eq!(mock.flush_calls, 0, "split {split}: a write flushed");
        assert!(matches!(poll_once(ws.flush()), Poll::Ready(Ok(()))));
        assert_eq!(parse_frames(&ws.get_ref().0.written).len(), 5);
        assert_eq!(ws.get_ref().0.flush_calls, 1);
    }
}
