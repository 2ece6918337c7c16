//! The write/flush contract of [`WebSocket`] under random faults: random
//! messages, `write`/`send`/`flush` calls and buffer limits against a
//! stream that accepts partial writes, would block and is interrupted at
//! random points (the shared scripted [`MockStream`]).
//!
//! The driver below acts as the contract tells a caller to: a would-block
//! from `write` or `send` means the message was accepted (a `send` is then
//! finished by flushing), `Error::WriteBufferFull` hands the message back
//! (flush, then try it again), and a flush that would block is repeated.
//! After every call it checks that the out buffer stays within
//! `max_write_buffer_size` and that only `flush`/`send` flushed the stream;
//! at the end, that the bytes on the stream are exactly the accepted
//! messages, in order, each once.
//!
//! No pings are read, so no pong may be flushed implicitly.

use lockgate_kit as support;
use lockgate_kit::properties;

use std::fmt;

use lockgate::frame::{OpCode, encoded_header_len};
use lockgate::{CapacityError, Config, Error, Message, ProtocolError, Role, WebSocket};
use properties::proptest_config;
use proptest::prelude::*;
use support::{FlushStep, MockStream, WriteStep, parse_frames};

/// More calls than any case can need: each failed call uses up at least
/// one step of the fault script, after which the stream takes everything.
const MAX_RETRIES: usize = 1000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Text,
    Binary,
    Ping,
}

/// A message by kind and length; its payload is a pattern that depends on
/// the position and `seed`, so a lost, doubled or shifted byte shows.
#[derive(Clone, Copy)]
struct Msg {
    kind: Kind,
    len: usize,
    seed: u8,
}

impl fmt::Debug for Msg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}({} bytes, seed {})", self.kind, self.len, self.seed)
    }
}

impl Msg {
    fn payload(self) -> Vec<u8> {
        let seed = usize::from(self.seed);
        (0..self.len)
            .map(|i| match self.kind {
                Kind::Text => b'a' + ((i * 7 + seed) % 26) as u8,
                Kind::Binary | Kind::Ping => (i * 31 + seed) as u8,
            })
            .collect()
    }

    fn message(self) -> Message {
        let payload = self.payload();
        match self.kind {
            Kind::Text => Message::text(String::from_utf8(payload).expect("ASCII")),
            Kind::Binary => Message::binary(payload),
            Kind::Ping => Message::Ping(payload.into()),
        }
    }

    fn opcode(self) -> OpCode {
        match self.kind {
            Kind::Text => OpCode::Text,
            Kind::Binary => OpCode::Binary,
            Kind::Ping => OpCode::Ping,
        }
    }

    /// Bytes on the wire: header (with the mask for a client) and payload.
    fn encoded_len(self, role: Role) -> usize {
        encoded_header_len(self.len as u64, role == Role::Client) + self.len
    }
}

/// One call on the driver.
#[derive(Clone, Copy, Debug)]
enum Op {
    Write(Msg),
    Send(Msg),
    Flush,
    /// `read` with nothing to read: it must leave the output alone.
    Read,
}

fn msg() -> impl Strategy<Value = Msg> {
    let data_len = prop_oneof![3 => 0..200usize, 1 => 0..4096usize];
    prop_oneof![
        3 => (data_len.clone(), any::<u8>()).prop_map(|(len, seed)| Msg { kind: Kind::Text, len, seed }),
        3 => (data_len, any::<u8>()).prop_map(|(len, seed)| Msg { kind: Kind::Binary, len, seed }),
        // Up to 140: pings over 125 bytes are refused.
        1 => (0..=140usize, any::<u8>()).prop_map(|(len, seed)| Msg { kind: Kind::Ping, len, seed }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => msg().prop_map(Op::Write),
        2 => msg().prop_map(Op::Send),
        2 => Just(Op::Flush),
        1 => Just(Op::Read),
    ]
}

fn role() -> impl Strategy<Value = Role> {
    prop_oneof![Just(Role::Client), Just(Role::Server)]
}

/// The two write buffer settings of a [`Config`] (a type of its own so a
/// failing case prints just these).
#[derive(Clone, Copy, Debug)]
struct Limits {
    write_buffer_size: usize,
    max_write_buffer_size: usize,
}

impl Limits {
    fn config(self) -> Config {
        Config::default()
            .write_buffer_size(self.write_buffer_size)
            .max_write_buffer_size(self.max_write_buffer_size)
    }
}

fn limits() -> impl Strategy<Value = Limits> {
    let write_buffer_size = prop_oneof![
        1 => Just(0),
        3 => 0..8192usize,
        // Never writes before a flush: the buffer fills up.
        2 => Just(usize::MAX),
    ];
    let max_write_buffer_size =
        prop_oneof![1 => 16..512usize, 2 => 512..4096usize, 2 => 4096..=16_384usize];
    (write_buffer_size, max_write_buffer_size).prop_map(
        |(write_buffer_size, max_write_buffer_size)| Limits {
            write_buffer_size,
            max_write_buffer_size,
        },
    )
}

fn write_step() -> impl Strategy<Value = WriteStep> {
    prop_oneof![
        3 => (1..64usize).prop_map(WriteStep::Accept),
        2 => (64..8192usize).prop_map(WriteStep::Accept),
        2 => Just(WriteStep::WouldBlock),
        1 => Just(WriteStep::Interrupted),
    ]
}

fn flush_step() -> impl Strategy<Value = FlushStep> {
    prop_oneof![
        2 => Just(FlushStep::Ok),
        2 => Just(FlushStep::WouldBlock),
        1 => Just(FlushStep::Interrupted),
    ]
}

/// A short description of a message, for assertion messages.
fn describe(msg: &Message) -> String {
    format!("{:?} of {} bytes", std::mem::discriminant(msg), msg.len())
}

/// The driver and what it expects to find on the stream.
struct Harness {
    ws: WebSocket<MockStream>,
    role: Role,
    max: usize,
    write_buffer_size: usize,
    /// Messages the connection took, in order.
    accepted: Vec<Msg>,
    /// Their encoded length.
    accepted_bytes: usize,
    /// Successful `flush` (or the flush of `send`) calls.
    flushes: usize,
}

/// Counters of the stream and the driver before a call.
#[derive(Clone, Copy)]
struct Before {
    buffered: usize,
    bytes_written: usize,
    flush_calls: usize,
}

impl Harness {
    fn new(role: Role, config: Config, writes: Vec<WriteStep>, flushes: Vec<FlushStep>) -> Self {
        let mut stream = MockStream::new();
        stream.writes = writes.into();
        stream.flushes = flushes.into();
        Self {
            ws: WebSocket::from_raw_socket(stream, role, config),
            role,
            max: config.get_max_write_buffer_size(),
            write_buffer_size: config.get_write_buffer_size(),
            accepted: Vec::new(),
            accepted_bytes: 0,
            flushes: 0,
        }
    }

    fn before(&self) -> Before {
        let stream = self.ws.get_ref();
        Before {
            buffered: self.ws.buffered_output(),
            bytes_written: stream.bytes_written,
            flush_calls: stream.flush_calls,
        }
    }

    /// Checks after every call: the out buffer is within its limit, every
    /// byte the connection took is either on the stream or buffered, and
    /// only `flush`/`send` (`may_flush`) flushed, at most once (no pongs).
    fn after(&self, call: &str, before: Before, may_flush: bool) {
        let stream = self.ws.get_ref();
        let buffered = self.ws.buffered_output();
        assert!(
            buffered <= self.max,
            "{call}: {buffered} bytes buffered, over max_write_buffer_size {}",
            self.max
        );
        let new_flushes = stream.flush_calls - before.flush_calls;
        assert!(
            new_flushes <= usize::from(may_flush),
            "{call} flushed the stream {new_flushes} times"
        );
        assert_eq!(
            stream.flushed_at.len(),
            stream.flush_calls,
            "every successful flush leaves a flush point"
        );
        if new_flushes == 1 {
            assert_eq!(
                stream.flushed_at.last(),
                Some(&stream.bytes_written),
                "{call}: flushed before writing everything out"
            );
        }
    }

    /// `flush` until it succeeds.
    fn flush(&mut self) {
        for _ in 0..MAX_RETRIES {
            let before = self.before();
            let result = self.ws.flush();
            self.after("flush", before, true);
            match result {
                Ok(()) => return self.flushed(),
                Err(e) if e.is_would_block() => {}
                Err(e) => panic!("flush: {e:?}"),
            }
        }
        panic!("flush still blocked after {MAX_RETRIES} calls");
    }

    /// A `flush` (or `send`) succeeded: everything the connection took is
    /// on the stream, and that was flushed.
    fn flushed(&mut self) {
        self.flushes += 1;
        let stream = self.ws.get_ref();
        assert_eq!(self.ws.buffered_output(), 0, "flush left bytes buffered");
        assert_eq!(
            stream.bytes_written, self.accepted_bytes,
            "bytes on the stream after a flush vs the messages accepted"
        );
        assert_eq!(stream.flushed_at.last(), Some(&self.accepted_bytes));
    }

    /// `write` (or `send`) `msg` as the contract says, until it is taken
    /// (or refused for good).
    fn offer(&mut self, msg: Msg, send: bool) {
        let call = if send { "send" } else { "write" };
        let message = msg.message();
        let encoded = msg.encoded_len(self.role);
        for _ in 0..MAX_RETRIES {
            let before = self.before();
            let result = if send {
                self.ws.send(message.clone())
            } else {
                self.ws.write(message.clone())
            };
            self.after(call, before, send);
            // Whether the call finished (as opposed to taking the message
            // and blocking while writing it out or flushing).
            let finished = match result {
                Ok(()) => true,
                Err(e) if e.is_would_block() => false,
                Err(Error::WriteBufferFull(back)) => {
                    assert!(
                        *back == message,
                        "{call}: WriteBufferFull handed back {} for {}",
                        describe(&back),
                        describe(&message)
                    );
                    self.assert_untouched(call, before);
                    assert!(
                        before.buffered + encoded > self.max,
                        "{call}: refused {encoded} bytes with {} of {} buffered",
                        before.buffered,
                        self.max
                    );
                    self.flush();
                    continue;
                }
                Err(Error::Capacity(CapacityError::MessageTooLong { .. })) => {
                    assert!(encoded > self.max, "{call}: {msg:?} refused as too large");
                    self.assert_untouched(call, before);
                    return;
                }
                Err(Error::Protocol(ProtocolError::ControlFrameTooBig)) => {
                    assert!(msg.kind == Kind::Ping && msg.len > 125, "{call}: {msg:?}");
                    self.assert_untouched(call, before);
                    return;
                }
                Err(e) => panic!("{call}({msg:?}): {e:?}"),
            };
            assert!(
                msg.kind != Kind::Ping || msg.len <= 125,
                "{call} took a ping of {} bytes",
                msg.len
            );
            assert!(encoded <= self.max, "{call} took {encoded} bytes");
            self.accepted.push(msg);
            self.accepted_bytes += encoded;
            let wrote = self.ws.get_ref().bytes_written > before.bytes_written;
            assert!(
                !wrote || send || before.buffered + encoded >= self.write_buffer_size,
                "write wrote to the stream below write_buffer_size {} \
                 ({} buffered + {encoded})",
                self.write_buffer_size,
                before.buffered
            );
            match (send, finished) {
                (true, true) => self.flushed(),
                // A send that blocked is finished by flushing.
                (true, false) => self.flush(),
                (false, true) => {
                    let buffered = self.ws.buffered_output();
                    assert!(
                        buffered == 0 || buffered < self.write_buffer_size,
                        "write returned with {buffered} bytes buffered, at or over \
                         write_buffer_size {}",
                        self.write_buffer_size
                    );
                }
                (false, false) => {}
            }
            return;
        }
        panic!("{call}({msg:?}) not taken after {MAX_RETRIES} calls");
    }

    /// A refused call changed nothing: nothing buffered, written or flushed.
    fn assert_untouched(&self, call: &str, before: Before) {
        let now = self.before();
        assert_eq!(
            (now.buffered, now.bytes_written, now.flush_calls),
            (before.buffered, before.bytes_written, before.flush_calls),
            "{call}: a refused message changed (buffered, written, flushes)"
        );
    }

    /// `read` with nothing to read.
    fn read(&mut self) {
        let before = self.before();
        let result = self.ws.read();
        self.after("read", before, false);
        assert!(
            result.as_ref().is_err_and(Error::is_would_block),
            "read: {result:?}"
        );
        let now = self.before();
        assert_eq!(
            (now.buffered, now.bytes_written),
            (before.buffered, before.bytes_written),
            "read moved data that is not owed a flush"
        );
    }

    /// The stream holds exactly the accepted messages, in order, as one
    /// unfragmented frame each, masked by a client only.
    fn check_stream(&self) {
        let stream = self.ws.get_ref();
        assert_eq!(stream.bytes_written, self.accepted_bytes);
        assert_eq!(stream.flush_calls, self.flushes);
        let frames = parse_frames(&stream.written);
        let got: Vec<(OpCode, usize)> = frames
            .iter()
            .map(|f| (f.header.opcode, f.payload.len()))
            .collect();
        let want: Vec<(OpCode, usize)> =
            self.accepted.iter().map(|m| (m.opcode(), m.len)).collect();
        assert_eq!(got, want, "frames on the stream vs messages accepted");
        for (i, (frame, msg)) in frames.iter().zip(&self.accepted).enumerate() {
            assert!(frame.header.is_final, "frame {i} is a fragment");
            assert!(!frame.header.rsv1, "frame {i} has RSV1");
            assert_eq!(
                frame.header.mask.is_some(),
                self.role == Role::Client,
                "frame {i}: only clients mask"
            );
            assert!(frame.payload == msg.payload(), "frame {i}: payload differs");
        }
    }
}

proptest! {
    #![proptest_config(proptest_config())]

    #[test]
    fn the_stream_gets_exactly_the_accepted_messages_and_only_flush_flushes(
        role in role(),
        limits in limits(),
        ops in prop::collection::vec(op(), 0..40),
        writes in prop::collection::vec(write_step(), 0..48),
        flushes in prop::collection::vec(flush_step(), 0..16),
    ) {
        let mut harness = Harness::new(role, limits.config(), writes, flushes);
        for op in ops {
            match op {
                Op::Write(msg) => harness.offer(msg, false),
                Op::Send(msg) => harness.offer(msg, true),
                Op::Flush => harness.flush(),
                Op::Read => harness.read(),
            }
        }
        harness.flush();
        harness.check_stream();
    }
}
