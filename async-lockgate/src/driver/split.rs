//! [`WebSocketReadHalf`] and [`WebSocketWriteHalf`]: one connection used
//! from two tasks.
//!
//! Both halves share the stream and the context behind a `std` mutex that
//! is held only inside a single poll, never across an await, so neither half
//! can block the other for longer than one non-blocking read or write. The
//! read half writes owed pongs and close replies itself, so a task that only
//! reads still answers pings.
//!
//! Both halves may wait for the socket to become writable (the read half to
//! send a pong, the write half to send data), but a stream keeps a single
//! waker for write readiness. Write operations therefore register a waker
//! that wakes both halves, so neither can steal the other's wake-up.

use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};

use futures_core::Stream;
use futures_sink::Sink;
use lockgate::{CloseFrame, Config, Error, Message, PreparedMessage, Result};

use super::core::Core;
use super::stream::{WebSocketStream, stream_item};
use crate::runtime::{Runtime, Transport};

/// The tasks of the two halves waiting on the stream.
#[derive(Debug, Default)]
struct HalfWakers {
    read_half: Mutex<Option<Waker>>,
    write_half: Mutex<Option<Waker>>,
}

impl HalfWakers {
    fn remember(slot: &Mutex<Option<Waker>>, waker: &Waker) {
        let mut slot = relock(slot);
        if !slot.as_ref().is_some_and(|w| w.will_wake(waker)) {
            *slot = Some(waker.clone());
        }
    }
}

impl Wake for HalfWakers {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        for slot in [&self.read_half, &self.write_half] {
            if let Some(waker) = relock(slot).take() {
                waker.wake();
            }
        }
    }
}

struct SplitState<S, R: Runtime> {
    core: Mutex<Core<S, R>>,
    wakers: Arc<HalfWakers>,
    /// Wakes both halves; registered for write readiness.
    both: Waker,
}

type Shared<S, R> = Arc<SplitState<S, R>>;

impl<S: fmt::Debug, R: Runtime> fmt::Debug for SplitState<S, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SplitState")
            .field("core", &self.core)
            .finish_non_exhaustive()
    }
}

/// A panic while holding a lock cannot leave the state torn (every update is
/// a single call), so a poisoned lock is still usable.
fn relock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn lock<S, R: Runtime>(shared: &Shared<S, R>) -> MutexGuard<'_, Core<S, R>> {
    relock(&shared.core)
}

/// Polls `f` on the core, with write readiness waking both halves and
/// `cx`'s task remembered in `slot`.
fn poll_shared<S, R: Runtime, T>(
    shared: &Shared<S, R>,
    slot: &Mutex<Option<Waker>>,
    cx: &mut Context<'_>,
    f: impl FnOnce(&mut Core<S, R>, &mut Context<'_>, &mut Context<'_>) -> Poll<T>,
) -> Poll<T> {
    HalfWakers::remember(slot, cx.waker());
    let mut wcx = Context::from_waker(&shared.both);
    f(&mut lock(shared), cx, &mut wcx)
}

/// Polls a read for the read half: its task waits for input and deadlines.
fn poll_read_half<S: Unpin, R: Transport<S>>(
    shared: &Shared<S, R>,
    cx: &mut Context<'_>,
) -> Poll<Result<Message>> {
    poll_shared(shared, &shared.wakers.read_half, cx, |core, cx, wcx| {
        core.poll_read(cx, wcx)
    })
}

/// Polls a write for the write half.
fn poll_write_half<S: Unpin, R: Transport<S>>(
    shared: &Shared<S, R>,
    cx: &mut Context<'_>,
) -> Poll<Result<()>> {
    poll_shared(shared, &shared.wakers.write_half, cx, |core, _, wcx| {
        core.poll_write(wcx)
    })
}

/// Polls a flush (or what `send` and `close` owe) for the write half.
fn poll_flush_half<S: Unpin, R: Transport<S>>(
    shared: &Shared<S, R>,
    cx: &mut Context<'_>,
) -> Poll<Result<()>> {
    poll_shared(shared, &shared.wakers.write_half, cx, |core, _, wcx| {
        core.poll_flush(wcx)
    })
}

pub(crate) fn split<S, R: Runtime>(
    ws: WebSocketStream<S, R>,
) -> (WebSocketWriteHalf<S, R>, WebSocketReadHalf<S, R>) {
    let wakers = Arc::new(HalfWakers::default());
    let both = Waker::from(wakers.clone());
    let shared = Arc::new(SplitState {
        core: Mutex::new(ws.into_core()),
        wakers,
        both,
    });
    (
        WebSocketWriteHalf {
            shared: shared.clone(),
        },
        WebSocketReadHalf { shared },
    )
}

/// The reading half of a split [`WebSocketStream`]: [`read`](Self::read)
/// and [`Stream`].
pub struct WebSocketReadHalf<S, R: Runtime> {
    shared: Shared<S, R>,
}

/// The writing half of a split [`WebSocketStream`]: `write`, `flush`,
/// `send`, `close` and [`Sink`].
pub struct WebSocketWriteHalf<S, R: Runtime> {
    shared: Shared<S, R>,
}

impl<S: fmt::Debug, R: Runtime> fmt::Debug for WebSocketReadHalf<S, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("WebSocketReadHalf")
            .field(&self.shared)
            .finish()
    }
}

impl<S: fmt::Debug, R: Runtime> fmt::Debug for WebSocketWriteHalf<S, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("WebSocketWriteHalf")
            .field(&self.shared)
            .finish()
    }
}

/// What both halves can ask of the connection they share.
macro_rules! shared_state_accessors {
    ($half:ident) => {
        impl<S, R: Runtime> $half<S, R> {
            /// Bytes received but not yet returned as messages: when
            /// non-zero, the read half's next `read` may complete without
            /// waiting for the socket, so a reply can wait for those
            /// messages before a flush.
            pub fn buffered_input(&self) -> usize {
                lock(&self.shared).context.buffered_input()
            }

            /// Bytes written (by either half) but not yet handed to the
            /// stream.
            pub fn buffered_output(&self) -> usize {
                lock(&self.shared).context.buffered_output()
            }

            /// Whether more messages can be read: the closing handshake has
            /// not completed and the connection has not failed.
            pub fn can_read(&self) -> bool {
                !lock(&self.shared).context.is_terminated()
            }

            /// The configuration (a copy: the halves share it).
            pub fn config(&self) -> Config {
                *lock(&self.shared).context.config()
            }

            /// Replaces the configuration of the connection (both halves).
            pub fn set_config(&self, config: Config) {
                lock(&self.shared).context.set_config(config);
            }
        }
    };
}

shared_state_accessors!(WebSocketReadHalf);
shared_state_accessors!(WebSocketWriteHalf);

impl<S: Unpin, R: Transport<S>> WebSocketReadHalf<S, R> {
    /// Reads the next message; see [`WebSocketStream::read`]. Cancel-safe.
    ///
    /// # Errors
    ///
    /// As for [`WebSocketStream::read`].
    // Not an `async fn`: the future is one pointer (see
    // `WebSocketStream::read`).
    pub fn read(&mut self) -> impl Future<Output = Result<Message>> + '_ {
        poll_fn(move |cx| poll_read_half(&self.shared, cx))
    }

    /// Queues a close frame, owed a flush that the next read (or a write
    /// half's write or flush) gives it (a drain's turn, from inside a read).
    #[doc(hidden)]
    pub fn queue_close(&self, frame: CloseFrame) -> Result<()> {
        lock(&self.shared).context.close(Some(frame))
    }

    /// Whether `other` is the write half split from the same stream.
    pub fn is_pair_of(&self, other: &WebSocketWriteHalf<S, R>) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// Joins the halves back into one [`WebSocketStream`].
    ///
    /// # Errors
    ///
    /// Gives both halves back if they were not split from the same stream.
    pub fn reunite(
        self,
        other: WebSocketWriteHalf<S, R>,
    ) -> std::result::Result<WebSocketStream<S, R>, (Self, WebSocketWriteHalf<S, R>)> {
        if !self.is_pair_of(&other) {
            return Err((self, other));
        }
        drop(other);
        let core = Arc::into_inner(self.shared)
            .expect("both halves were consumed")
            .core
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        Ok(WebSocketStream::from_core(core))
    }
}

impl<S: Unpin, R: Transport<S>> WebSocketWriteHalf<S, R> {
    /// Queues `msg`; see [`WebSocketStream::write`].
    ///
    /// # Errors
    ///
    /// As for [`WebSocketStream::write`].
    pub async fn write(&mut self, msg: Message) -> Result<()> {
        lock(&self.shared).context.write(msg)?;
        poll_fn(|cx| poll_write_half(&self.shared, cx)).await
    }

    /// [`write`](Self::write), but never compressed; see
    /// [`WebSocketStream::write_uncompressed`].
    ///
    /// # Errors
    ///
    /// As for [`write`](Self::write).
    pub async fn write_uncompressed(&mut self, msg: Message) -> Result<()> {
        lock(&self.shared).context.write_uncompressed(msg)?;
        poll_fn(|cx| poll_write_half(&self.shared, cx)).await
    }

    /// Queues a [`PreparedMessage`]; see [`WebSocketStream::write_prepared`].
    ///
    /// # Errors
    ///
    /// As for [`WebSocketStream::write_prepared`].
    pub async fn write_prepared(&mut self, msg: &PreparedMessage) -> Result<()> {
        lock(&self.shared).context.write_prepared(msg)?;
        poll_fn(|cx| poll_write_half(&self.shared, cx)).await
    }

    /// Writes everything and flushes; see [`SendFlush::flush`](super::SendFlush::flush).
    ///
    /// # Errors
    ///
    /// [`Error::Io`].
    pub async fn flush(&mut self) -> Result<()> {
        poll_fn(|cx| poll_flush_half(&self.shared, cx)).await
    }

    /// [`write`](Self::write) then [`flush`](Self::flush).
    ///
    /// # Errors
    ///
    /// As for both.
    pub async fn send(&mut self, msg: Message) -> Result<()> {
        lock(&self.shared).context.write(msg)?;
        self.flush().await
    }

    /// Starts the closing handshake; see [`WebSocketStream::close`]. The
    /// read half sees the peer's reply.
    ///
    /// # Errors
    ///
    /// As for [`WebSocketStream::close`].
    pub async fn close(&mut self, frame: Option<CloseFrame>) -> Result<()> {
        lock(&self.shared).context.close(frame)?;
        self.flush().await
    }
}

impl<S: Unpin, R: Transport<S>> Stream for WebSocketReadHalf<S, R> {
    type Item = Result<Message>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        poll_read_half(&self.shared, cx).map(stream_item)
    }
}

impl<S: Unpin, R: Transport<S>> Sink<Message> for WebSocketWriteHalf<S, R> {
    type Error = Error;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        poll_write_half(&self.shared, cx)
    }

    fn start_send(self: Pin<&mut Self>, msg: Message) -> Result<()> {
        lock(&self.shared).context.write(msg)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        poll_flush_half(&self.shared, cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        {
            let context = &mut lock(&self.shared).context;
            match context.close(None) {
                Ok(()) | Err(Error::AlreadyClosed) => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        poll_flush_half(&self.shared, cx)
    }
}
