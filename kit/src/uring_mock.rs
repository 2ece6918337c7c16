//! The scripted mock behind uring-lockgate's owned-buffer completion I/O
//! (feature `uring`): each operation completes at once, or is pending
//! without keeping anything in flight where the script would block, so the
//! conformance cases run uring-lockgate's transports unchanged.

use std::io::{self, IoSlice, Read, Write};
use std::task::{Context, Poll};

use bytes::buf::Limit;
use bytes::{Bytes, BytesMut};
use uring_lockgate::completion::{
    Completion, CompletionRead, CompletionWrite, InFlight, copy_into, lent_parts,
};

use crate::AsyncMock;

impl CompletionRead for AsyncMock {
    fn read_in_flight(&self) -> bool {
        false
    }

    fn poll_read_owned(
        &mut self,
        _: &mut Context<'_>,
        buf: Option<Limit<BytesMut>>,
    ) -> Completion<BytesMut> {
        let (mut buf, room) = lent_parts(buf.expect("nothing is ever in flight"));
        let start = buf.len();
        // The mock reads into initialised memory; the zeroing is the
        // test's cost, not the driver's.
        buf.resize(start + room, 0);
        let read = self.0.read(&mut buf[start..]);
        buf.truncate(start + *read.as_ref().unwrap_or(&0));
        match read {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Completion::Pending(Some(buf)),
            read => Completion::Done(read, buf),
        }
    }
}

impl CompletionWrite for AsyncMock {
    fn write_in_flight(&self) -> bool {
        false
    }

    /// A new buffer per write: the mock keeps no staging buffer.
    fn owned_copy(&mut self, chunks: &[IoSlice<'_>]) -> Bytes {
        copy_into(&mut BytesMut::new(), chunks)
    }

    /// Nothing is ever in flight, so nothing waits behind it.
    fn stage(&mut self, _: &[IoSlice<'_>]) -> usize {
        0
    }

    fn take_staged(&mut self) -> Option<Bytes> {
        None
    }

    fn has_staged(&self) -> bool {
        false
    }

    fn in_flight(&self) -> InFlight {
        InFlight::default()
    }

    fn set_in_flight(&mut self, _: InFlight) {}

    fn poll_write_owned(&mut self, _: &mut Context<'_>, buf: Option<Bytes>) -> Completion<Bytes> {
        let buf = buf.expect("nothing is ever in flight");
        match self.0.write(&buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Completion::Pending(Some(buf)),
            written => Completion::Done(written, buf),
        }
    }

    fn poll_flush_owned(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.0.flush() {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Poll::Pending,
            flushed => Poll::Ready(flushed),
        }
    }

    fn poll_shutdown_owned(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
