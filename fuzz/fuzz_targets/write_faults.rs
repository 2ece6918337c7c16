//! The blocking driver `WebSocket` over an in-memory stream whose every
//! write, flush and read is scripted by the input: complete, partial,
//! `WouldBlock` or `Interrupted`. The input also picks the calls (write,
//! send, flush, read of the peer's pings), the message sizes and the
//! buffer limits, with or without permessage-deflate.
//!
//! Invariants: `Interrupted` never surfaces; `WriteBufferFull` hands back
//! the message unchanged; the out buffer stays within
//! `max_write_buffer_size` plus one pong; a `write` never flushes the
//! stream (even after a flush that failed), unless a pong is owed; once the stream takes everything,
//! a peer context reading all the bytes it accepted gets every message
//! accepted by `write`/`send` (including those that failed with
//! would-block after queueing), intact, in order, nothing more, no partial
//! frame, and pongs for pings read, in order, the newest last.
#![no_main]

use std::collections::VecDeque;
use std::io::{self, IoSlice, Read, Write};

use libfuzzer_sys::fuzz_target;
use lockgate::{
    Buf, CapacityError, Config, Error, Message, PreparedMessage, Role, WebSocket, WebSocketContext,
};
use lockgate_fuzz::{Knobs, deflate_config, deflate_params, peer};

/// A stream that does what its script says, then completes everything.
struct FaultStream {
    /// Owned: the blocking driver takes only `'static` streams.
    script: Vec<u8>,
    pos: usize,
    /// Every byte the stream accepted.
    wire: Vec<u8>,
    /// What the peer sent, and how much of it was read.
    incoming: Vec<u8>,
    read: usize,
    /// Calls to `flush`, whatever they returned.
    flush_calls: usize,
}

impl FaultStream {
    /// The next script byte: bits 0-1 say complete (0), partial (1),
    /// `WouldBlock` (2) or `Interrupted` (3); the rest sizes a partial
    /// operation. 0 once the script is over.
    fn next(&mut self) -> io::Result<u8> {
        let b = self.script.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        match b & 3 {
            2 => Err(io::ErrorKind::WouldBlock.into()),
            3 => Err(io::ErrorKind::Interrupted.into()),
            _ => Ok(b),
        }
    }
}

impl Write for FaultStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_vectored(&[IoSlice::new(buf)])
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        let b = self.next()?;
        let total: usize = bufs.iter().map(|s| s.len()).sum();
        let mut n = if b & 3 == 1 && total > 0 {
            1 + usize::from(b >> 2) % total
        } else {
            total
        };
        let accepted = n;
        for buf in bufs {
            let take = buf.len().min(n);
            self.wire.extend_from_slice(&buf[..take]);
            n -= take;
        }
        Ok(accepted)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flush_calls += 1;
        self.next().map(drop)
    }
}

impl Read for FaultStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let b = self.next()?;
        let rest = &self.incoming[self.read..];
        if rest.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = rest.len().min(buf.len()).min(1 + usize::from(b >> 2) * 3);
        buf[..n].copy_from_slice(&rest[..n]);
        self.read += n;
        Ok(n)
    }
}

/// Message number `i` of `len` bytes, recognisable by its content.
fn message(i: usize, len: usize) -> Message {
    let bytes: Vec<u8> = (0..len).map(|j| b'a' + ((i + j) % 26) as u8).collect();
    if i.is_multiple_of(2) {
        Message::text(String::from_utf8(bytes).expect("ASCII"))
    } else {
        Message::binary(bytes)
    }
}

fn ok_or_would_block(result: lockgate::Result<()>, what: &str) {
    match result {
        Ok(()) => {}
        Err(e) if e.is_would_block() => {}
        Err(e) => panic!("{what}: {e:?}"),
    }
}

/// Flushes until it completes: every call that would block uses up at
/// least one script byte, so it does within `script_len + 1` calls.
fn finish(ws: &mut WebSocket<FaultStream>, script_len: usize) {
    for _ in 0..=script_len {
        match ws.flush() {
            Ok(()) => return,
            Err(e) if e.is_would_block() => {}
            Err(e) => panic!("flush: {e:?}"),
        }
    }
    panic!("flush never completed");
}

fuzz_target!(|data: &[u8]| {
    let (mut knobs, body) = Knobs::split(data, 7);
    let flags = knobs.byte();
    let params = deflate_params(knobs.byte());
    let local = knobs.byte();
    let sizes = knobs.byte();
    let pings = usize::from(knobs.byte() & 7);
    let split = usize::from(knobs.u16()).min(body.len());
    let (ops, script) = body.split_at(split);

    let role = if flags & 1 != 0 {
        Role::Client
    } else {
        Role::Server
    };
    let params = (flags & 2 != 0).then_some(params);
    let max_write = [72 << 20, 4 << 10, 64 << 10, 1 << 10][usize::from(sizes & 3)];
    let config = Config::default()
        .write_buffer_size([128 << 10, 0, 16, 1024][usize::from(sizes >> 2 & 3)])
        .max_write_buffer_size(max_write)
        .deflate(Some(deflate_config(local)));
    let scale = [1, 16, 256, 1024][usize::from(sizes >> 4 & 3)];

    // The peer's pings, already on their way to us.
    let mut pinger = WebSocketContext::with_deflate(peer(role), config, params);
    for i in 0..pings {
        pinger
            .write(Message::Ping(vec![i as u8; i + 1].into()))
            .expect("ping");
    }
    let mut output = pinger.output();
    let incoming = output.copy_to_bytes(output.remaining()).to_vec();

    let stream = FaultStream {
        script: script.to_vec(),
        pos: 0,
        wire: Vec::new(),
        incoming,
        read: 0,
        flush_calls: 0,
    };
    let context = WebSocketContext::with_deflate(role, config, params);
    let mut ws = WebSocket::from_context(stream, context);
    let mut accepted = Vec::new();
    let mut refused: VecDeque<Message> = VecDeque::new();
    let mut pings_read = Vec::new();
    let mut written = 0;

    let offer = |ws: &mut WebSocket<FaultStream>,
                 msg: Message,
                 send: bool,
                 owes_pong: bool,
                 accepted: &mut Vec<Message>,
                 refused: &mut VecDeque<Message>| {
        let flushes_before = ws.get_ref().flush_calls;
        // Every other message goes out prepared, interleaved with plain
        // writes: the peer must read the same stream either way.
        let prepared = msg.len() % 2 == 1;
        let result = match (prepared, send) {
            (false, false) => ws.write(msg.clone()),
            (false, true) => ws.send(msg.clone()),
            (true, send) => ws
                .write_prepared(&PreparedMessage::new(msg.clone()))
                .and_then(|()| if send { ws.flush() } else { Ok(()) }),
        };
        match result {
            Ok(()) => accepted.push(msg),
            // Queued, then writing out would block.
            Err(e) if e.is_would_block() => accepted.push(msg),
            Err(Error::WriteBufferFull(back)) => {
                assert_eq!(*back, msg, "WriteBufferFull changed the message");
                refused.push_back(*back);
            }
            Err(Error::Capacity(CapacityError::MessageTooLong { size, max_size })) => {
                assert!(size > max_size && max_size == max_write);
            }
            Err(e) => panic!("write: {e:?}"),
        }
        // Only flush, send and close flush: not a write, even after a
        // flush that failed (unless it carries an owed pong).
        if !send && !owes_pong {
            assert_eq!(
                ws.get_ref().flush_calls,
                flushes_before,
                "a write flushed the stream"
            );
        }
    };

    for &op in ops {
        match op & 3 {
            0 | 3 => {
                let msg = refused.pop_front().unwrap_or_else(|| {
                    written += 1;
                    message(written, usize::from(op >> 2) * scale)
                });
                let owes_pong = !pings_read.is_empty();
                offer(
                    &mut ws,
                    msg,
                    op & 3 == 3,
                    owes_pong,
                    &mut accepted,
                    &mut refused,
                );
            }
            1 => ok_or_would_block(ws.flush(), "flush"),
            _ => match ws.read() {
                Ok(Message::Ping(payload)) => pings_read.push(payload),
                Ok(other) => panic!("read {other:?}"),
                Err(e) if e.is_would_block() => {}
                Err(e) => panic!("read: {e:?}"),
            },
        }
        assert!(
            ws.buffered_output() <= max_write + 131,
            "out buffer past its limit"
        );
    }

    // The script runs out, then every operation completes.
    finish(&mut ws, script.len());
    while let Some(msg) = refused.pop_front() {
        let before = accepted.len();
        offer(&mut ws, msg, true, true, &mut accepted, &mut refused);
        assert_eq!(accepted.len(), before + 1, "refused into an empty buffer");
    }
    finish(&mut ws, script.len());
    assert_eq!(ws.buffered_output(), 0);

    // Everything the stream accepted, read by the peer.
    let stream = ws.into_inner();
    let mut reader = WebSocketContext::with_deflate(peer(role), config, params);
    reader.feed(&stream.wire);
    let mut got = Vec::new();
    while let Some(msg) = reader.next_message().expect("peer reads the wire") {
        got.push(msg);
    }
    assert_eq!(reader.buffered_input(), 0, "a partial frame on the wire");
    let (pongs, data): (Vec<Message>, Vec<Message>) =
        got.into_iter().partition(|m| matches!(m, Message::Pong(_)));
    assert_eq!(data, accepted, "messages lost, duplicated or reordered");
    let pong_ids: Vec<u8> = pongs
        .iter()
        .map(|m| match m {
            Message::Pong(p) => p[0],
            _ => unreachable!(),
        })
        .collect();
    assert!(
        pong_ids.windows(2).all(|w| w[0] < w[1]),
        "pongs {pong_ids:?}"
    );
    assert_eq!(
        pong_ids.last().copied(),
        pings_read.last().map(|p| p[0]),
        "newest ping answered"
    );
});
