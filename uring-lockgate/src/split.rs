//! The parts [`Uring`] splits a stream into: both share it, the read part
//! using only its read and the write part only its write, so io_uring
//! runs a read and a write on one socket at once.

use std::cell::RefCell;
use std::fmt;
use std::io::{self, IoSlice};
use std::rc::Rc;
use std::task::{Context, Poll};

use async_lockgate::runtime::{SplitParts, Splits};
use bytes::buf::Limit;
use bytes::{Bytes, BytesMut};

use crate::Uring;
use crate::completion::{Completion, CompletionRead, CompletionWrite, InFlight};

/// The part of a split stream that reads.
pub struct ReadPart<S>(Rc<RefCell<S>>);

/// The part of a split stream that writes.
pub struct WritePart<S>(Rc<RefCell<S>>);

impl<S> fmt::Debug for ReadPart<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadPart").finish_non_exhaustive()
    }
}

impl<S> fmt::Debug for WritePart<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WritePart").finish_non_exhaustive()
    }
}

/// Each part borrows the stream only for one poll of its own operation:
/// the stream's read and its write are separate, each owned by one part,
/// and neither borrow is held while waiting.
impl<S: CompletionRead> CompletionRead for ReadPart<S> {
    fn read_in_flight(&self) -> bool {
        self.0.borrow().read_in_flight()
    }

    fn poll_read_owned(
        &mut self,
        cx: &mut Context<'_>,
        buf: Option<Limit<BytesMut>>,
    ) -> Completion<BytesMut> {
        self.0.borrow_mut().poll_read_owned(cx, buf)
    }
}

impl<S: CompletionWrite> CompletionWrite for WritePart<S> {
    fn write_in_flight(&self) -> bool {
        self.0.borrow().write_in_flight()
    }

    fn owned_copy(&mut self, chunks: &[IoSlice<'_>]) -> Bytes {
        self.0.borrow_mut().owned_copy(chunks)
    }

    fn stage(&mut self, chunks: &[IoSlice<'_>]) -> usize {
        self.0.borrow_mut().stage(chunks)
    }

    fn take_staged(&mut self) -> Option<Bytes> {
        self.0.borrow_mut().take_staged()
    }

    fn has_staged(&self) -> bool {
        self.0.borrow().has_staged()
    }

    fn in_flight(&self) -> InFlight {
        self.0.borrow().in_flight()
    }

    fn set_in_flight(&mut self, in_flight: InFlight) {
        self.0.borrow_mut().set_in_flight(in_flight);
    }

    fn poll_write_owned(&mut self, cx: &mut Context<'_>, buf: Option<Bytes>) -> Completion<Bytes> {
        self.0.borrow_mut().poll_write_owned(cx, buf)
    }

    fn poll_flush_owned(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.0.borrow_mut().poll_flush_owned(cx)
    }

    fn poll_shutdown_owned(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.0.borrow_mut().poll_shutdown_owned(cx)
    }
}

impl<S> SplitParts<S> for Uring {
    type ReadPart = ReadPart<S>;
    type WritePart = WritePart<S>;
}

impl<S: CompletionRead + CompletionWrite + Unpin> Splits<S> for Uring {
    fn split(stream: S) -> (ReadPart<S>, WritePart<S>) {
        let shared = Rc::new(RefCell::new(stream));
        (ReadPart(Rc::clone(&shared)), WritePart(shared))
    }

    /// # Panics
    ///
    /// If the parts are not of one stream.
    fn unsplit(read: ReadPart<S>, write: WritePart<S>) -> S {
        assert!(Rc::ptr_eq(&read.0, &write.0), "parts of one stream");
        drop(write);
        match Rc::try_unwrap(read.0) {
            Ok(stream) => stream.into_inner(),
            Err(_) => unreachable!("a stream is split into two parts only"),
        }
    }
}
