//! Completion I/O: reads and writes that own their buffer until the
//! kernel is done with it, as io_uring's are. The transports of
//! [`Uring`](crate::Uring) are written once over these two traits, so the
//! conformance kit's scripted mock runs the same owned-buffer code as a
//! socket.

use std::io::{self, IoSlice};
use std::task::{Context, Poll};

use bytes::buf::Limit;
use bytes::{BufMut, Bytes, BytesMut};

/// What polling an owned-buffer operation came to.
#[derive(Debug)]
#[must_use = "a completed operation hands its buffer back"]
pub enum Completion<B> {
    /// The operation completed: its outcome, and the buffer it owned.
    Done(io::Result<usize>, B),
    /// It has not completed. The buffer offered is handed back when no
    /// operation took it (the I/O would block and keeps nothing in
    /// flight); `None` when an operation in flight owns it.
    Pending(Option<B>),
}

/// A stream that reads into buffers it owns while the read is in flight.
///
/// The read in flight lives in the stream, not in the future polling it:
/// a poll that is dropped while pending loses nothing, and the next one
/// resumes the same read.
pub trait CompletionRead {
    /// Whether a read is in flight (it owns a buffer lent earlier).
    fn read_in_flight(&self) -> bool;

    /// Polls the read in flight or, with none, starts one into `buf`'s
    /// spare capacity, at most its limit, and polls it (`buf` is `Some`
    /// exactly when no read is in flight). Done: the buffer, its length
    /// grown by the count read (0 at the end of the stream).
    fn poll_read_owned(
        &mut self,
        cx: &mut Context<'_>,
        buf: Option<Limit<BytesMut>>,
    ) -> Completion<BytesMut>;
}

/// A stream that writes from buffers it owns while the write is in
/// flight. As for reads, the write in flight lives in the stream.
pub trait CompletionWrite {
    /// Whether a write is in flight.
    fn write_in_flight(&self) -> bool;

    /// `chunks` copied into one owned buffer for the next write: a buffer
    /// the stream reuses from write to write where it has one.
    fn owned_copy(&mut self, chunks: &[IoSlice<'_>]) -> Bytes;

    /// Copies what it can of `chunks` into the bytes waiting for the write
    /// in flight to end (at most [`STAGE_LIMIT`] of them), like a socket's
    /// send buffer; returns the count. A stream that never has a write in
    /// flight keeps nothing and returns 0.
    fn stage(&mut self, chunks: &[IoSlice<'_>]) -> usize;

    /// The bytes staged, taken for the next write; `None` when there are
    /// none.
    fn take_staged(&mut self) -> Option<Bytes>;

    /// Whether bytes are staged.
    fn has_staged(&self) -> bool;

    /// How the write in flight is accounted for in the connection's
    /// output (zero with none in flight).
    fn in_flight(&self) -> InFlight;

    /// Records how the write in flight is accounted for.
    fn set_in_flight(&mut self, in_flight: InFlight);

    /// Polls the write in flight or, with none, starts one of `buf` and
    /// polls it (`buf` is `Some` exactly when no write is in flight).
    /// Done: the count written and the buffer; a short write leaves the
    /// rest for the caller to write next.
    fn poll_write_owned(&mut self, cx: &mut Context<'_>, buf: Option<Bytes>) -> Completion<Bytes>;

    /// Flushes what the stream itself buffers (a socket buffers nothing:
    /// once no write is in flight, it is flushed).
    ///
    /// # Errors
    ///
    /// The stream's.
    fn poll_flush_owned(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;

    /// Shuts the write side down (the FIN) once no write is in flight.
    ///
    /// # Errors
    ///
    /// The stream's.
    fn poll_shutdown_owned(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
}

/// How much of a write in flight the connection's output still counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InFlight {
    /// Bytes at the front of the write, already taken off the output
    /// (staged ones, or the first [`STAGE_LIMIT`] of a larger write).
    pub ahead: usize,
    /// The bytes after those: the head of the output, taken off it as the
    /// kernel takes them.
    pub counted: usize,
}

/// The most bytes of a write taken off the output when it starts, and
/// the most a stream stages behind its write in flight.
pub const STAGE_LIMIT: usize = 256 * 1024;

/// What [`CompletionWrite::stage`] does for a stream whose staged bytes
/// are `staged`.
pub fn stage_into(staged: &mut BytesMut, chunks: &[IoSlice<'_>]) -> usize {
    let mut copied = 0;
    for chunk in chunks {
        let room = STAGE_LIMIT.saturating_sub(staged.len());
        let take = chunk.len().min(room);
        staged.put_slice(&chunk[..take]);
        copied += take;
        if take < chunk.len() {
            break;
        }
    }
    copied
}

/// `chunks` copied into `buf` (emptied first), frozen: the owned buffer of
/// one write, for a [`CompletionWrite::owned_copy`].
pub fn copy_into(buf: &mut BytesMut, chunks: &[IoSlice<'_>]) -> Bytes {
    buf.clear();
    buf.reserve(chunks.iter().map(|c| c.len()).sum());
    for chunk in chunks {
        buf.put_slice(chunk);
    }
    buf.split().freeze()
}

/// A lent buffer's spare capacity up to its limit, as an owned read
/// buffer's bounds: (the buffer, how many bytes the read may fill).
pub fn lent_parts(lent: Limit<BytesMut>) -> (BytesMut, usize) {
    let limit = Limit::limit(&lent);
    let buf = lent.into_inner();
    let room = buf.capacity() - buf.len();
    (buf, limit.min(room))
}
