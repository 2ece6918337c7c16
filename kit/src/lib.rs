//! lockgate's conformance kit: what every driver's tests share, in one
//! crate instead of files included by path.
//!
//! - A scripted, fault-injecting, counting mock stream ([`MockStream`]:
//!   partial writes, would-block, interrupts, resets and end of stream at
//!   chosen points), behind tokio's and futures-io's traits too
//!   ([`AsyncMock`], features `tokio`, `futures-io` and `uring`, with the
//!   conformance connections of the async driver over it, [`AsyncWhole`]
//!   and [`AsyncSplit`]), and an in-memory client/server pair ([`pair`]).
//! - Frame builders and parsers ([`client_frame`], [`parse_frames`]).
//! - Peers over real sockets: a raw client that does only what a test says
//!   ([`RawPeer`]), handshake peers that misbehave, and the cases both
//!   drivers must pass against them ([`silent_peer_cases`],
//!   [`stalled_peer_cases`], [`not_a_request`], [`not_a_response`]).
//! - The counting allocator of the cost tests and fuzz targets
//!   ([`CountingAlloc`]).
//! - The examples run as processes ([`programs`]); proxies, TLS servers and
//!   a test CA ([`proxies`], feature `tls`); the proptest settings
//!   ([`properties`], feature `properties`); a `metrics` recorder and a
//!   `tracing` subscriber ([`observe`], feature `observe`).
//!
//! A test file names it `support` (`use lockgate_kit as support;`); not
//! every file uses every helper.

#[cfg(any(feature = "tokio", feature = "futures-io", feature = "uring"))]
mod async_mock;
pub mod conformance;
mod counting_alloc;
mod handshake_peers;
#[cfg(feature = "observe")]
pub mod observe;
#[cfg(unix)]
pub mod programs;
#[cfg(feature = "properties")]
pub mod properties;
#[cfg(feature = "tls")]
pub mod proxies;
mod raw_peer;
#[cfg(feature = "tls")]
pub mod stalling;
#[cfg(feature = "uring")]
mod uring_mock;

#[cfg(any(feature = "tokio", feature = "futures-io", feature = "uring"))]
pub use async_mock::{
    AsyncMock, AsyncSplit, AsyncWhole, SplitConnection, WholeConnection, echo_exchange, poll_once,
};
pub use counting_alloc::{CountingAlloc, HeapUse};
pub use handshake_peers::*;
#[cfg(unix)]
pub use programs::chromium_installed;
/// Its former name (tokio-lockgate's `tls.rs` uses it).
#[cfg(feature = "tls")]
pub use proxies as tinyproxy;
pub use raw_peer::{
    Flood, Flooded, PING_THEN_1011, RawPeer, Received, STALLED_OUTPUT, SilentPeerCase,
    StalledPeerCase, silent_peer_cases, stalled_peer_cases,
};

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{self, IoSlice, Read, Write};
use std::rc::Rc;

use bytes::Buf;
use lockgate::frame::{FrameHeader, HeaderParse, MAX_HEADER_LEN, OpCode, apply_mask};
use lockgate::{Config, Next, Operation, Role, WebSocket, WebSocketContext};

/// What the mock does on one `read` call.
#[derive(Debug, Clone)]
pub enum ReadStep {
    /// Hand out these bytes (over several calls if the caller's buffer is
    /// smaller).
    Data(Vec<u8>),
    /// The same, from bytes the test shares: handing them out never
    /// allocates or frees (for heap measurements).
    Shared(bytes::Bytes),
    WouldBlock,
    Interrupted,
    /// Return `Ok(0)`.
    Eof,
    /// Fail with `ConnectionReset`.
    Reset,
    /// A peer that never stops sending: each of this many reads hands out
    /// the start of these bytes (as much as the caller's buffer takes).
    Repeat(bytes::Bytes, usize),
}

/// What the mock does on one `write`/`write_vectored` call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteStep {
    /// Accept at most this many bytes.
    Accept(usize),
    WouldBlock,
    Interrupted,
    Reset,
}

/// What the mock does on one `flush` call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushStep {
    Ok,
    WouldBlock,
    Interrupted,
}

/// A stream that plays a script and records everything.
///
/// Reads: the `reads` script, then `WouldBlock` forever (so a test cannot
/// hang). Writes and flushes: the scripts, then accept everything.
#[derive(Debug, Default, Clone)]
pub struct MockStream {
    pub reads: VecDeque<ReadStep>,
    pub writes: VecDeque<WriteStep>,
    pub flushes: VecDeque<FlushStep>,
    /// Every byte accepted by a write, in order (unless `discard`).
    pub written: Vec<u8>,
    /// Bytes accepted by writes, counted even when `discard` is set.
    pub bytes_written: usize,
    /// Count written bytes without keeping them (benchmarks: no copying or
    /// page faults in the mock).
    pub discard: bool,
    /// How many bytes of `written` existed at each successful flush.
    pub flushed_at: Vec<usize>,
    /// Calls to `write` or `write_vectored` that accepted bytes.
    pub write_calls: usize,
    /// Calls to `flush` that succeeded.
    pub flush_calls: usize,
    /// Calls to `read`.
    pub read_calls: usize,
    /// While set, every write fails with `WouldBlock`.
    pub write_blocked: bool,
    /// Optional simulated cost per write and per flush (busy-wait, benches).
    pub write_cost: Option<std::time::Duration>,
    pub flush_cost: Option<std::time::Duration>,
}

impl MockStream {
    pub fn new() -> Self {
        Self::default()
    }

    /// A stream whose reads yield `bytes` in one piece.
    pub fn with_input(bytes: Vec<u8>) -> Self {
        let mut s = Self::default();
        s.reads.push_back(ReadStep::Data(bytes));
        s
    }

    /// Queues bytes to be read.
    pub fn push_input(&mut self, bytes: Vec<u8>) {
        self.reads.push_back(ReadStep::Data(bytes));
    }

    /// Bytes written since the last successful flush.
    pub fn unflushed(&self) -> usize {
        self.bytes_written - self.flushed_at.last().copied().unwrap_or(0)
    }

    fn next_write(&mut self) -> io::Result<usize> {
        if self.write_blocked {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        match self
            .writes
            .pop_front()
            .unwrap_or(WriteStep::Accept(usize::MAX))
        {
            WriteStep::Accept(n) => Ok(n),
            WriteStep::WouldBlock => Err(io::ErrorKind::WouldBlock.into()),
            WriteStep::Interrupted => Err(io::ErrorKind::Interrupted.into()),
            WriteStep::Reset => Err(io::ErrorKind::ConnectionReset.into()),
        }
    }
}

fn spin(cost: Option<std::time::Duration>) {
    if let Some(cost) = cost {
        let start = std::time::Instant::now();
        while start.elapsed() < cost {
            std::hint::spin_loop();
        }
    }
}

impl Read for MockStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_calls += 1;
        match self.reads.pop_front() {
            None | Some(ReadStep::WouldBlock) => Err(io::ErrorKind::WouldBlock.into()),
            Some(ReadStep::Interrupted) => Err(io::ErrorKind::Interrupted.into()),
            Some(ReadStep::Eof) => Ok(0),
            Some(ReadStep::Reset) => Err(io::ErrorKind::ConnectionReset.into()),
            Some(ReadStep::Data(mut data)) => {
                let n = data.len().min(buf.len());
                buf[..n].copy_from_slice(&data[..n]);
                if n < data.len() {
                    self.reads.push_front(ReadStep::Data(data.split_off(n)));
                }
                Ok(n)
            }
            Some(ReadStep::Repeat(data, reads)) => {
                let n = data.len().min(buf.len());
                buf[..n].copy_from_slice(&data[..n]);
                if reads > 1 {
                    self.reads.push_front(ReadStep::Repeat(data, reads - 1));
                }
                Ok(n)
            }
            Some(ReadStep::Shared(mut data)) => {
                let n = data.len().min(buf.len());
                buf[..n].copy_from_slice(&data[..n]);
                if n < data.len() {
                    self.reads.push_front(ReadStep::Shared(data.split_off(n)));
                }
                Ok(n)
            }
        }
    }
}

impl Write for MockStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_vectored(&[IoSlice::new(buf)])
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        let mut limit = self.next_write()?;
        spin(self.write_cost);
        let mut n = 0;
        for buf in bufs {
            let take = buf.len().min(limit);
            if !self.discard {
                self.written.extend_from_slice(&buf[..take]);
            }
            self.bytes_written += take;
            n += take;
            limit -= take;
            if limit == 0 {
                break;
            }
        }
        self.write_calls += 1;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.flushes.pop_front().unwrap_or(FlushStep::Ok) {
            FlushStep::Ok => {
                spin(self.flush_cost);
                self.flush_calls += 1;
                self.flushed_at.push(self.bytes_written);
                Ok(())
            }
            FlushStep::WouldBlock => Err(io::ErrorKind::WouldBlock.into()),
            FlushStep::Interrupted => Err(io::ErrorKind::Interrupted.into()),
        }
    }
}

/// One direction of an in-memory pipe.
type Lane = Rc<RefCell<VecDeque<u8>>>;

/// One end of an in-memory, non-blocking duplex pipe.
#[derive(Debug, Clone)]
pub struct PipeEnd {
    incoming: Lane,
    outgoing: Lane,
    /// The most bytes one read may return.
    pub read_chunk: usize,
}

impl Read for PipeEnd {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut incoming = self.incoming.borrow_mut();
        if incoming.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = buf.len().min(incoming.len()).min(self.read_chunk);
        for (slot, byte) in buf.iter_mut().zip(incoming.drain(..n)) {
            *slot = byte;
        }
        Ok(n)
    }
}

impl Write for PipeEnd {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.outgoing.borrow_mut().extend(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A connected client and server over an in-memory pipe.
pub fn pair(config: Config) -> (WebSocket<PipeEnd>, WebSocket<PipeEnd>) {
    let a: Lane = Rc::default();
    let b: Lane = Rc::default();
    let client = PipeEnd {
        incoming: a.clone(),
        outgoing: b.clone(),
        read_chunk: usize::MAX,
    };
    let server = PipeEnd {
        incoming: b,
        outgoing: a,
        read_chunk: usize::MAX,
    };
    (
        WebSocket::from_raw_socket(client, Role::Client, config),
        WebSocket::from_raw_socket(server, Role::Server, config),
    )
}

/// Encodes one frame; `mask` makes it a client frame.
pub fn frame(fin: bool, opcode: OpCode, payload: &[u8], mask: Option<[u8; 4]>) -> Vec<u8> {
    let mut header = FrameHeader::new(opcode, payload.len() as u64);
    header.is_final = fin;
    header.mask = mask;
    let mut head = [0; MAX_HEADER_LEN];
    let n = header.encode(&mut head);
    let mut wire = head[..n].to_vec();
    let mut body = payload.to_vec();
    if let Some(mask) = mask {
        apply_mask(&mut body, mask);
    }
    wire.extend_from_slice(&body);
    wire
}

/// A complete masked frame, as a client sends it.
pub fn client_frame(opcode: OpCode, payload: &[u8]) -> Vec<u8> {
    frame(true, opcode, payload, Some([0x12, 0x34, 0x56, 0x78]))
}

/// A complete unmasked frame, as a server sends it.
pub fn server_frame(opcode: OpCode, payload: &[u8]) -> Vec<u8> {
    frame(true, opcode, payload, None)
}

/// A parsed frame from written bytes, payload unmasked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireFrame {
    pub header: FrameHeader,
    pub payload: Vec<u8>,
}

impl WireFrame {
    /// The close code of a close frame, if it has one.
    pub fn close_code(&self) -> Option<u16> {
        (self.header.opcode == OpCode::Close && self.payload.len() >= 2)
            .then(|| u16::from_be_bytes([self.payload[0], self.payload[1]]))
    }
}

/// Each frame as its opcode and close code, for comparing with a table.
pub fn summary(frames: &[WireFrame]) -> Vec<(OpCode, Option<u16>)> {
    frames
        .iter()
        .map(|f| (f.header.opcode, f.close_code()))
        .collect()
}

/// Whether one of `frames` is a close frame.
pub fn has_close(frames: &[WireFrame]) -> bool {
    frames.iter().any(|f| f.header.opcode == OpCode::Close)
}

/// Parses every frame in `wire`; panics on a malformed or truncated frame.
pub fn parse_frames(wire: &[u8]) -> Vec<WireFrame> {
    let (frames, used) = parse_complete_frames(wire);
    assert_eq!(used, wire.len(), "truncated frame in output");
    frames
}

/// Parses the complete frames at the start of `wire` (bytes still arriving
/// from a socket): the frames, and how many bytes they took. Panics on a
/// malformed frame.
pub fn parse_complete_frames(mut wire: &[u8]) -> (Vec<WireFrame>, usize) {
    let mut frames = Vec::new();
    let mut used = 0;
    while let HeaderParse::Complete(header, head_len) =
        FrameHeader::decode(wire).expect("valid header")
    {
        let end = head_len + header.payload_len as usize;
        if wire.len() < end {
            break;
        }
        let mut payload = wire[head_len..end].to_vec();
        if let Some(mask) = header.mask {
            apply_mask(&mut payload, mask);
        }
        frames.push(WireFrame { header, payload });
        wire = &wire[end..];
        used += end;
    }
    (frames, used)
}

/// Writes the context's pending output out and flushes, as a driver
/// would, returning the bytes.
pub fn take_output(ctx: &mut WebSocketContext) -> Vec<u8> {
    let mut out = Vec::new();
    ctx.flush();
    loop {
        match ctx.poll(Operation::Flush).expect("a flush does not fail") {
            Next::Transmit => {
                let mut output = ctx.output();
                let chunk = output.chunk();
                out.extend_from_slice(chunk);
                let n = chunk.len();
                output.advance(n);
            }
            Next::Flush => ctx.flushed(),
            Next::Done => return out,
            other => panic!("a flush asked for {other:?}"),
        }
    }
}
