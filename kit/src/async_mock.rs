//! The scripted mock stream behind tokio's `AsyncRead`/`AsyncWrite`, where
//! "would block" becomes `Pending`.

use std::io::{self, IoSlice, Read, Write};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use crate::MockStream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A [`MockStream`] as a tokio stream. `WouldBlock` from the script becomes
/// `Pending` without a wake-up: tests drive it by polling by hand.
#[derive(Debug, Default)]
pub struct AsyncMock(pub MockStream);

fn pending_on_would_block<T>(result: io::Result<T>) -> Poll<io::Result<T>> {
    match result {
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Poll::Pending,
        other => Poll::Ready(other),
    }
}

impl AsyncRead for AsyncMock {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let n = std::task::ready!(pending_on_would_block(
            self.get_mut().0.read(buf.initialize_unfilled())
        ))?;
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for AsyncMock {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        pending_on_would_block(self.get_mut().0.write(buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        pending_on_would_block(self.get_mut().0.write_vectored(bufs))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        pending_on_would_block(self.get_mut().0.flush())
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Polls `future` once with a waker that does nothing.
pub fn poll_once<F: std::future::Future>(future: F) -> Poll<F::Output> {
    let mut future = std::pin::pin!(future);
    future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
}
