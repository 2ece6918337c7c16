//! The streams the libraries are given: a costly in-memory sink for the write
//! scenario, an in-memory source for the read scenario, and a wrapper that
//! counts write calls around a TCP stream. Each implements both the std and
//! the tokio I/O traits, so sync and async libraries see the same thing.

use std::cell::RefCell;
use std::io::{self, IoSlice, Read, Write};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

fn spin(cost: Duration) {
    let start = Instant::now();
    while start.elapsed() < cost {
        std::hint::spin_loop();
    }
}

/// What a [`CostMock`] saw.
#[derive(Debug, Default)]
pub(crate) struct MockState {
    /// Every byte accepted, in order.
    pub(crate) written: Vec<u8>,
    /// Calls to write / write_vectored (each accepts everything it is given).
    pub(crate) writes: u64,
    /// Calls to flush.
    pub(crate) flushes: u64,
}

/// An in-memory sink whose every write call costs `write_cost` and every
/// flush `flush_cost` (busy-waits), like a socket with a costly send and a
/// costlier flush. Clones share state, so the harness keeps one to look at
/// the bytes afterwards.
#[derive(Debug, Clone)]
pub(crate) struct CostMock {
    state: Rc<RefCell<MockState>>,
    write_cost: Duration,
    flush_cost: Duration,
}

impl CostMock {
    /// A mock that appends into `buf` (cleared; its capacity is reused so the
    /// timed run does not page-fault a fresh buffer in).
    pub(crate) fn new(mut buf: Vec<u8>, write_cost: Duration, flush_cost: Duration) -> Self {
        buf.clear();
        Self {
            state: Rc::new(RefCell::new(MockState {
                written: buf,
                writes: 0,
                flushes: 0,
            })),
            write_cost,
            flush_cost,
        }
    }

    /// Takes the recorded state out.
    pub(crate) fn take(&self) -> MockState {
        std::mem::take(&mut *self.state.borrow_mut())
    }

    fn accept(&self, bufs: &[IoSlice<'_>]) -> usize {
        spin(self.write_cost);
        let mut st = self.state.borrow_mut();
        st.writes += 1;
        let mut n = 0;
        for b in bufs {
            st.written.extend_from_slice(b);
            n += b.len();
        }
        n
    }

    fn do_flush(&self) {
        spin(self.flush_cost);
        self.state.borrow_mut().flushes += 1;
    }
}

impl Read for CostMock {
    fn read(&mut self, _buf: &mut [u8]) -> io::Result<usize> {
        Err(io::ErrorKind::WouldBlock.into())
    }
}

impl Write for CostMock {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Ok(self.accept(&[IoSlice::new(buf)]))
    }
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        Ok(self.accept(bufs))
    }
    fn flush(&mut self) -> io::Result<()> {
        self.do_flush();
        Ok(())
    }
}

impl AsyncRead for CostMock {
    fn poll_read(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        _buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        // Nothing ever arrives; no scenario reads from this mock.
        Poll::Pending
    }
}

impl AsyncWrite for CostMock {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Poll::Ready(Ok(self.accept(&[IoSlice::new(buf)])))
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Poll::Ready(Ok(self.accept(bufs)))
    }
    fn is_write_vectored(&self) -> bool {
        true
    }
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.do_flush();
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// An in-memory source: reads hand out as much of `input` as the caller's
/// buffer takes. The input holds no ping or close, so a library has nothing
/// to write: a non-empty write aborts the run.
#[derive(Debug)]
pub(crate) struct MemStream {
    input: Bytes,
    pos: usize,
}

fn no_write(buf: &[u8]) -> usize {
    if !buf.is_empty() {
        crate::fail(
            "read scenario",
            &format!("a library wrote {} bytes while only reading", buf.len()),
        );
    }
    0
}

impl MemStream {
    /// A stream that will yield `input`, then end.
    pub(crate) fn new(input: Bytes) -> Self {
        Self { input, pos: 0 }
    }

    fn take(&mut self, want: usize) -> &[u8] {
        let n = want.min(self.input.len() - self.pos);
        let s = &self.input[self.pos..self.pos + n];
        self.pos += n;
        s
    }
}

impl Read for MemStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let src = self.take(buf.len());
        let n = src.len();
        buf[..n].copy_from_slice(src);
        Ok(n)
    }
}

impl Write for MemStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Ok(no_write(buf))
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl AsyncRead for MemStream {
    fn poll_read(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let src = this.take(buf.remaining());
        buf.put_slice(src);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for MemStream {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Poll::Ready(Ok(no_write(buf)))
    }
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Calls and bytes counted by [`Counted`].
#[derive(Debug, Default)]
pub(crate) struct Calls {
    /// Successful write / write_vectored calls.
    pub(crate) writes: AtomicU64,
    /// Successful read calls.
    pub(crate) reads: AtomicU64,
    /// Bytes those write calls accepted.
    pub(crate) bytes_written: AtomicU64,
    /// Bytes those read calls returned.
    pub(crate) bytes_read: AtomicU64,
    /// While set, written bytes are also copied into `head` (up to 4 KiB),
    /// so a handshake's response can be checked afterwards.
    pub(crate) capture: AtomicBool,
    /// The captured bytes.
    pub(crate) head: Mutex<Vec<u8>>,
}

impl Calls {
    /// Counters that also capture written bytes until [`Calls::stop_capture`].
    pub(crate) fn capturing() -> Self {
        let c = Self::default();
        c.capture.store(true, Relaxed);
        c
    }

    /// Stops capturing and returns what was captured.
    pub(crate) fn stop_capture(&self) -> Vec<u8> {
        self.capture.store(false, Relaxed);
        std::mem::take(&mut *self.head.lock().expect("head lock"))
    }

    /// (bytes written, bytes read) so far.
    pub(crate) fn bytes(&self) -> (u64, u64) {
        (
            self.bytes_written.load(Relaxed),
            self.bytes_read.load(Relaxed),
        )
    }

    fn record(&self, bufs: &[IoSlice<'_>], n: usize) {
        const CAP: usize = 4096;
        let mut head = self.head.lock().expect("head lock");
        let mut left = n;
        for b in bufs {
            if left == 0 || head.len() >= CAP {
                break;
            }
            let k = b.len().min(left).min(CAP - head.len());
            head.extend_from_slice(&b[..k]);
            left -= b.len().min(left);
        }
    }
}

/// Wraps a stream and counts the write calls (write / write_vectored,
/// poll_write / poll_write_vectored) and read calls that succeeded: with a
/// socket inside, each is one send(2)/writev(2) or recv(2).
#[derive(Debug)]
pub(crate) struct Counted<S> {
    inner: S,
    calls: Arc<Calls>,
}

impl<S> Counted<S> {
    /// Wraps `inner`; successful calls are added to `calls`.
    pub(crate) fn new(inner: S, calls: Arc<Calls>) -> Self {
        Self { inner, calls }
    }

    fn count(&self, r: &io::Result<usize>, bufs: &[IoSlice<'_>]) {
        if let Ok(n) = r {
            self.calls.writes.fetch_add(1, Relaxed);
            self.calls.bytes_written.fetch_add(*n as u64, Relaxed);
            if self.calls.capture.load(Relaxed) {
                self.calls.record(bufs, *n);
            }
        }
    }

    fn count_read(&self, n: usize) {
        self.calls.reads.fetch_add(1, Relaxed);
        self.calls.bytes_read.fetch_add(n as u64, Relaxed);
    }
}

impl<S: Read> Read for Counted<S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let r = self.inner.read(buf);
        if let Ok(n) = r {
            self.count_read(n);
        }
        r
    }
}

impl<S: Write> Write for Counted<S> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let r = self.inner.write(buf);
        self.count(&r, &[IoSlice::new(buf)]);
        r
    }
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        let r = self.inner.write_vectored(bufs);
        self.count(&r, bufs);
        r
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &r {
            this.count_read(buf.filled().len() - before);
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(r) = &r {
            this.count(r, &[IoSlice::new(buf)]);
        }
        r
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(r) = &r {
            this.count(r, bufs);
        }
        r
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
