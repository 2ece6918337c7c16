//! The write/flush contract: `write` queues (and writes out only a full
//! buffer), `flush` sends, `send` does both; only pongs and close replies
//! are flushed without being asked, and a failed or cancelled `flush` is
//! not carried out by the next `write`.

use lockgate::frame::OpCode;
use lockgate::{Config, Error, Message, Role};

use super::{Connection, Driver, server, until_done};
use crate::{FlushStep, MockStream, WriteStep, client_frame, parse_frames};

/// Many writes then one flush cost one socket flush.
pub fn many_writes_then_one_flush_cost_one_socket_flush<D: Driver>() {
    for role in [Role::Server, Role::Client] {
        let mut ws = D::open(MockStream::new(), role, Config::default());
        for i in 0..100_000u32 {
            ws.write(Message::text(format!("message number {i}")))
                .unwrap();
        }
        assert_eq!(ws.mock().flush_calls, 0, "{role:?}: write must never flush");
        ws.flush().unwrap();
        let stream = ws.mock();
        assert_eq!(stream.flush_calls, 1, "{role:?}");
        let frames = parse_frames(&stream.written);
        assert_eq!(frames.len(), 100_000);
        assert_eq!(frames[99_999].payload, b"message number 99999");
        assert_eq!(frames[0].header.mask.is_some(), role == Role::Client);
        // Writes happen in write_buffer_size batches, not per message.
        assert!(
            stream.write_calls < 100,
            "{role:?}: {} write calls",
            stream.write_calls
        );
    }
}

/// Write touches the socket only at write buffer size.
pub fn write_touches_the_socket_only_at_write_buffer_size<D: Driver>() {
    let config = Config::default().write_buffer_size(1000);
    let mut ws = D::open(MockStream::new(), Role::Server, config);
    let msg = Message::binary(vec![0u8; 98]); // 100 bytes on the wire
    for _ in 0..9 {
        ws.write(msg.clone()).unwrap();
    }
    assert_eq!(ws.mock().write_calls, 0);
    ws.write(msg.clone()).unwrap();
    assert_eq!(
        ws.mock().write_calls,
        1,
        "the tenth message fills the buffer"
    );
    assert_eq!(ws.mock().written.len(), 1000);
    assert_eq!(ws.mock().flush_calls, 0, "writing out is not flushing");
}

/// A message with a body goes out in one write call.
pub fn a_message_with_a_body_goes_out_in_one_write_call<D: Driver>() {
    for (role, len) in [
        (Role::Server, 10),
        (Role::Server, 70_000),
        (Role::Client, 70_000),
        (Role::Server, 1 << 20),
    ] {
        let mut ws = D::open(MockStream::new(), role, Config::default());
        ws.send(Message::binary(vec![7u8; len])).unwrap();
        let stream = ws.mock();
        assert_eq!(stream.write_calls, 1, "{role:?} {len}");
        assert_eq!(stream.flush_calls, 1);
        let frames = parse_frames(&stream.written);
        assert_eq!(frames.len(), 1);
        assert_eq!(frames[0].payload.len(), len);
    }
}

/// Write buffer full hands back the message as given and the connection survives.
pub fn write_buffer_full_hands_back_the_message_as_given_and_the_connection_survives<D: Driver>() {
    let config = Config::default()
        .write_buffer_size(usize::MAX)
        .max_write_buffer_size(1000);
    let mut ws = D::open(MockStream::new(), Role::Server, config);
    let filler = Message::binary(vec![1u8; 500]);
    ws.write(filler.clone()).unwrap();
    let big = Message::text("x".repeat(600));
    match ws.write(big.clone()) {
        Err(Error::WriteBufferFull(returned)) => assert_eq!(*returned, big),
        other => panic!("expected WriteBufferFull, got {other:?}"),
    }
    assert_eq!(
        ws.buffered_output(),
        504,
        "nothing of the refused message was buffered"
    );
    ws.flush().unwrap();
    ws.send(big.clone()).unwrap();
    let frames = parse_frames(&ws.mock().written);
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[1].payload, "x".repeat(600).as_bytes());
}

/// A message larger than the whole buffer is a capacity error.
pub fn a_message_larger_than_the_whole_buffer_is_a_capacity_error<D: Driver>() {
    let config = Config::default().max_write_buffer_size(100);
    let mut ws = D::open(MockStream::new(), Role::Server, config);
    let err = ws.write(Message::binary(vec![0u8; 200])).unwrap_err();
    assert!(matches!(err, Error::Capacity(_)), "{err:?}");
    ws.send(Message::text("still usable")).unwrap();
}

/// Pong is flushed on the next read even behind unflushed data.
pub fn pong_is_flushed_on_the_next_read_even_behind_unflushed_data<D: Driver>() {
    let mut stream = MockStream::new();
    stream.push_input(client_frame(OpCode::Ping, b"are you there"));
    let mut ws = server::<D>(stream);
    ws.write(Message::text("queued")).unwrap();
    assert_eq!(ws.mock().written.len(), 0);
    assert_eq!(ws.read().unwrap(), Message::Ping("are you there".into()));
    let stream = ws.mock();
    assert_eq!(stream.flush_calls, 1, "read sent the pong before returning");
    let frames = parse_frames(&stream.written);
    assert_eq!(frames.len(), 2);
    assert_eq!(
        frames[0].payload, b"queued",
        "data ahead of the pong keeps its place"
    );
    assert_eq!(frames[1].header.opcode, OpCode::Pong);
    assert_eq!(frames[1].payload, b"are you there");
}

/// Only the newest unsent pong is kept.
pub fn only_the_newest_unsent_pong_is_kept<D: Driver>() {
    let mut ws = server::<D>(MockStream::new());
    // Writes block, so the first pong cannot leave while more pings arrive.
    ws.script(|mock| mock.write_blocked = true);
    for i in 0..100u8 {
        ws.script(|mock| mock.push_input(client_frame(OpCode::Ping, &[i])));
    }
    for i in 0..100u8 {
        assert_eq!(ws.read().unwrap(), Message::Ping(vec![i].into()));
    }
    assert!(
        ws.buffered_output() < 10,
        "a ping flood must not grow the out buffer"
    );
    ws.script(|mock| mock.write_blocked = false);
    ws.flush().unwrap();
    // With nothing to read, a read only delivers what it owes: nothing
    // more where the flush sent the newest pong, the newest pong where the
    // reading side holds it (split halves).
    assert!(ws.read().unwrap_err().is_would_block());
    let frames = parse_frames(&ws.mock().written);
    let pongs: Vec<_> = frames
        .iter()
        .map(|f| (f.header.opcode, f.payload.clone()))
        .collect();
    // The first pong was already in the out buffer; of the rest only the
    // newest is answered.
    assert_eq!(pongs, [(OpCode::Pong, vec![0]), (OpCode::Pong, vec![99])]);
}

/// A ping read while writes block gets its pong out first thing after unblocking.
pub fn a_ping_read_while_writes_block_gets_its_pong_out_first_thing_after_unblocking<D: Driver>() {
    let mut stream = MockStream::new();
    stream.write_blocked = true;
    let mut ws = server::<D>(stream);
    ws.write(Message::text("user data")).unwrap();
    assert!(ws.flush().unwrap_err().is_would_block());
    ws.script(|mock| mock.push_input(client_frame(OpCode::Ping, b"p")));
    assert_eq!(
        ws.read().unwrap(),
        Message::Ping("p".into()),
        "a blocked write does not fail the read"
    );
    assert_eq!(ws.mock().written.len(), 0);
    ws.script(|mock| mock.write_blocked = false);
    // The next call of any kind (here: a read with nothing to read) writes
    // the user data and the pong, and flushes.
    assert!(ws.read().unwrap_err().is_would_block());
    let stream = ws.mock();
    assert_eq!(stream.flush_calls, 1);
    let frames = parse_frames(&stream.written);
    assert_eq!(
        frames.iter().map(|f| f.header.opcode).collect::<Vec<_>>(),
        [OpCode::Text, OpCode::Pong]
    );
}

/// Pong is flushed by the next write too.
pub fn pong_is_flushed_by_the_next_write_too<D: Driver>() {
    let mut stream = MockStream::new();
    stream.write_blocked = true;
    stream.push_input(client_frame(OpCode::Ping, b"x"));
    let mut ws = server::<D>(stream);
    ws.read().unwrap();
    ws.script(|mock| mock.write_blocked = false);
    ws.write(Message::text("after")).unwrap();
    let stream = ws.mock();
    assert_eq!(stream.flush_calls, 1, "the owed pong is flushed by write");
    let frames = parse_frames(&stream.written);
    assert_eq!(
        frames[0].header.opcode,
        OpCode::Pong,
        "the pong goes ahead of the new message"
    );
}

/// Reading without pings never writes or flushes.
pub fn reading_without_pings_never_writes_or_flushes<D: Driver>() {
    let mut stream = MockStream::new();
    for i in 0..10u8 {
        stream.push_input(client_frame(OpCode::Binary, &[i; 10]));
    }
    let mut ws = server::<D>(stream);
    ws.write(Message::text("pending")).unwrap();
    for _ in 0..10 {
        ws.read().unwrap();
    }
    assert_eq!(ws.mock().write_calls, 0);
    assert_eq!(ws.mock().flush_calls, 0);
}

/// Interrupted and would block flushes are retried without loss.
pub fn interrupted_and_would_block_flushes_are_retried_without_loss<D: Driver>() {
    let mut stream = MockStream::new();
    stream
        .flushes
        .extend([FlushStep::Interrupted, FlushStep::WouldBlock]);
    stream.writes.extend([
        WriteStep::Interrupted,
        WriteStep::Accept(3),
        WriteStep::WouldBlock,
    ]);
    let mut ws = server::<D>(stream);
    ws.write(Message::text("hello world")).unwrap();
    assert!(ws.flush().unwrap_err().is_would_block());
    assert_eq!(ws.mock().written.len(), 3);
    assert!(
        ws.flush().unwrap_err().is_would_block(),
        "the flush itself would block"
    );
    ws.flush().unwrap();
    let frames = parse_frames(&ws.mock().written);
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].payload, b"hello world");
}

/// A write after a flush that would block does not flush.
pub fn a_write_after_a_flush_that_would_block_does_not_flush<D: Driver>() {
    // Only `flush`, `send` and `close` flush: a flush that failed is not
    // carried out by the next write, which only queues.
    for step in [FlushStep::WouldBlock, FlushStep::Interrupted] {
        let mut stream = MockStream::new();
        stream.writes.push_back(WriteStep::WouldBlock);
        let mut ws = server::<D>(stream);
        ws.write(Message::text("queued")).unwrap();
        assert!(ws.flush().unwrap_err().is_would_block());
        ws.script(|mock| mock.flushes.push_back(step));
        for _ in 0..3 {
            ws.write(Message::text("more")).unwrap();
        }
        assert_eq!(ws.mock().write_calls, 0, "{step:?}: a write wrote");
        assert_eq!(ws.mock().flush_calls, 0, "{step:?}: a write flushed");
        // The next flush sends all four.
        until_done(|| ws.flush());
        assert_eq!(parse_frames(&ws.mock().written).len(), 4);
        assert_eq!(ws.mock().flush_calls, 1);
    }
}
