//! [`UringStream`]: a tokio-uring TCP stream with the read and the write
//! it has in flight.

use std::fmt;
use std::future::Future;
use std::io::{self, IoSlice};
use std::mem;
use std::net::{Shutdown, SocketAddr};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use bytes::buf::Limit;
use bytes::{Bytes, BytesMut};
use tokio_uring::buf::BoundedBuf;
use tokio_uring::net::TcpStream;
use tokio_uring::{InFlightOneshot, WriteData, WriteTransform};

use crate::completion::{
    Completion, CompletionRead, CompletionWrite, InFlight, copy_into, lent_parts, stage_into,
};

/// A read in flight: it owns the lent buffer and a handle on the socket
/// until the kernel completes it. Boxed: tokio-uring's read is an `async
/// fn` borrowing its stream, and only a future owning the socket (`Rc`)
/// can outlive the poll that started it.
type ReadOp = Pin<Box<dyn Future<Output = (io::Result<usize>, BytesMut)>>>;

/// A write in flight: tokio-uring's submitted write, owning its bytes.
type WriteOp = InFlightOneshot<WriteData<Bytes>, WriteTransform<Bytes>>;

/// Where the stream's write is.
enum WriteState {
    /// None in flight.
    Idle,
    /// Submitted; the kernel owns the bytes.
    InFlight(WriteOp),
    /// Completed while a flush waited for it; the next write poll
    /// collects it.
    Done(io::Result<usize>, Bytes),
}

/// A tokio-uring TCP stream as uring-lockgate's connections run over it:
/// the read and the write in flight live here, so a future polling one
/// that is dropped (cancelled) loses nothing and the next poll resumes
/// the same operation.
///
/// Must be used inside a tokio-uring runtime ([`tokio_uring::start`]).
pub struct UringStream {
    tcp: Rc<TcpStream>,
    read: Option<ReadOp>,
    write: WriteState,
    /// The owned buffer writes copy into: reused once the kernel gave the
    /// previous write's bytes back.
    staging: BytesMut,
    /// Bytes accepted while a write was in flight, for the next write.
    staged: BytesMut,
    in_flight: InFlight,
}

impl fmt::Debug for UringStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UringStream")
            .field("read_in_flight", &self.read.is_some())
            .field("write_in_flight", &!matches!(self.write, WriteState::Idle))
            .finish_non_exhaustive()
    }
}

impl UringStream {
    /// `tcp`, with nothing in flight.
    pub fn new(tcp: TcpStream) -> Self {
        Self {
            tcp: Rc::new(tcp),
            read: None,
            write: WriteState::Idle,
            staging: BytesMut::new(),
            staged: BytesMut::new(),
            in_flight: InFlight::default(),
        }
    }

    /// A connected std stream handed to the ring.
    ///
    /// # Errors
    ///
    /// Setting the socket blocking failed.
    pub fn from_std(tcp: std::net::TcpStream) -> io::Result<Self> {
        // Blocking: an operation on a non-blocking socket may complete
        // with `WouldBlock` instead of waiting in the kernel.
        tcp.set_nonblocking(false)?;
        Ok(Self::new(TcpStream::from_std(tcp)))
    }

    /// Connects to `addr`.
    ///
    /// # Errors
    ///
    /// The connection's.
    pub async fn connect(addr: SocketAddr) -> io::Result<Self> {
        Ok(Self::new(TcpStream::connect(addr).await?))
    }

    /// The TCP stream.
    pub fn get_ref(&self) -> &TcpStream {
        &self.tcp
    }

    /// Sets `TCP_NODELAY`.
    ///
    /// # Errors
    ///
    /// The socket's.
    pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.tcp.set_nodelay(nodelay)
    }
}

/// A read in flight holds the socket open until it completes, and a read
/// from a silent peer never does: the read side is shut down, which
/// completes it (the socket closes once the ring reaps it) and sends the
/// peer nothing. A write in flight is left to finish, as the kernel
/// finishes sending what a closed socket had buffered.
impl Drop for UringStream {
    fn drop(&mut self) {
        if self.read.is_some() {
            // Already shut down or reset by the peer: nothing to wake.
            let _ = self.tcp.shutdown(Shutdown::Read);
        }
    }
}

impl From<TcpStream> for UringStream {
    fn from(tcp: TcpStream) -> Self {
        Self::new(tcp)
    }
}

impl CompletionRead for UringStream {
    fn read_in_flight(&self) -> bool {
        self.read.is_some()
    }

    fn poll_read_owned(
        &mut self,
        cx: &mut Context<'_>,
        buf: Option<Limit<BytesMut>>,
    ) -> Completion<BytesMut> {
        if let Some(lent) = buf {
            let (buf, room) = lent_parts(lent);
            let start = buf.len();
            let tcp = Rc::clone(&self.tcp);
            self.read = Some(Box::pin(async move {
                let (read, slice) = tcp.read(buf.slice(start..start + room)).await;
                (read, slice.into_inner())
            }));
        }
        let Some(op) = self.read.as_mut() else {
            return Completion::Done(Err(io::ErrorKind::InvalidInput.into()), BytesMut::new());
        };
        match op.as_mut().poll(cx) {
            Poll::Ready((read, buf)) => {
                self.read = None;
                Completion::Done(read, buf)
            }
            Poll::Pending => Completion::Pending(None),
        }
    }
}

impl CompletionWrite for UringStream {
    fn write_in_flight(&self) -> bool {
        !matches!(self.write, WriteState::Idle)
    }

    fn owned_copy(&mut self, chunks: &[IoSlice<'_>]) -> Bytes {
        copy_into(&mut self.staging, chunks)
    }

    fn stage(&mut self, chunks: &[IoSlice<'_>]) -> usize {
        stage_into(&mut self.staged, chunks)
    }

    fn take_staged(&mut self) -> Option<Bytes> {
        (!self.staged.is_empty()).then(|| self.staged.split().freeze())
    }

    fn has_staged(&self) -> bool {
        !self.staged.is_empty()
    }

    fn in_flight(&self) -> InFlight {
        self.in_flight
    }

    fn set_in_flight(&mut self, in_flight: InFlight) {
        self.in_flight = in_flight;
    }

    fn poll_write_owned(&mut self, cx: &mut Context<'_>, buf: Option<Bytes>) -> Completion<Bytes> {
        if let Some(buf) = buf {
            self.write = WriteState::InFlight(self.tcp.write(buf).submit());
        }
        match mem::replace(&mut self.write, WriteState::Idle) {
            WriteState::Idle => {
                Completion::Done(Err(io::ErrorKind::InvalidInput.into()), Bytes::new())
            }
            WriteState::Done(written, buf) => Completion::Done(written, buf),
            WriteState::InFlight(mut op) => match Pin::new(&mut op).poll(cx) {
                Poll::Ready((written, buf)) => Completion::Done(written, buf),
                Poll::Pending => {
                    self.write = WriteState::InFlight(op);
                    Completion::Pending(None)
                }
            },
        }
    }

    /// A socket buffers nothing of its own: what a write in flight holds
    /// is the kernel's, as what a socket's send buffer holds is.
    fn poll_flush_owned(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    /// The FIN, once the write in flight completed (its outcome kept for
    /// the next write poll).
    fn poll_shutdown_owned(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let WriteState::InFlight(op) = &mut self.write {
            let (written, buf) = std::task::ready!(Pin::new(op).poll(cx));
            self.write = WriteState::Done(written, buf);
        }
        Poll::Ready(self.tcp.shutdown(Shutdown::Write))
    }
}
