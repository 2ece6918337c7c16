//! [`WebSocketReadHalf`] and [`WebSocketWriteHalf`]: one connection used
//! from two tasks that do not wait for each other.
//!
//! The halves own their sides of the connection. The read half owns the
//! receiving context (input, assembly, inflating, rate limits, deadlines)
//! and the stream's read part; decoding takes no lock. The write half owns
//! the [`SendHalf`] that [`WebSocketContext::split_sender`] splits off
//! (the out buffer, the compressor) and the stream's write part, behind a
//! mutex that only the write half takes on its path. What crosses:
//!
//! - the control frames the read half owes (a pong, the reply to a close,
//!   a keepalive ping, the close that fails the connection) are handed to
//!   the sending side as encoded bytes, behind what is queued there, and
//!   written and flushed by the read half at once (taking the write side's
//!   mutex for that alone, at most one write poll's wait), or by the next
//!   write, flush or read if the stream cannot take them now;
//! - the close frame the write half sends, and the end of the read half's
//!   connection, are states each side is told of.
//!
//! The stream itself is split by the runtime (`tokio::io::split`,
//! `futures_util::io::split`), whose parts share it behind a lock taken for
//! each read or write call.
//!
//! Both halves may wait for the socket to become writable (the read half to
//! deliver a pong, the write half to send data), but a stream keeps a single
//! waker for write readiness. Writes therefore register a waker that wakes
//! both halves, so neither can steal the other's wake-up.

use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};

use futures_core::{FusedStream, Stream};
use futures_sink::Sink;
use futures_util::task::AtomicWaker;
use lockgate::{
    CloseCode, CloseFrame, Config, Error, Message, Next, Operation, PreparedMessage, Result,
    SendHalf, WebSocketContext,
};

use super::core::{Core, DeadlineTimer, poll_output_step, settle};
use super::stream::{WebSocketStream, stream_item};
use crate::runtime::{SplitParts, SplitTransport};

/// The tasks of the two halves waiting on the stream: registered without
/// a lock, woken by either half or by write readiness.
#[derive(Debug, Default)]
struct HalfWakers {
    read_half: OwnLine<AtomicWaker>,
    write_half: OwnLine<AtomicWaker>,
}

/// A value on cache lines of its own (128 bytes: a pair of 64-byte lines,
/// which some processors fetch together), so that what one half writes on
/// every call does not evict what the other half is using on its core.
#[derive(Debug, Default)]
#[repr(align(128))]
struct OwnLine<T>(T);

impl<T> std::ops::Deref for OwnLine<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl Wake for HalfWakers {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.read_half.wake();
        self.write_half.wake();
    }
}

/// A panic while holding a lock cannot leave the state torn (every update is
/// a single call), so a poisoned lock is still usable.
fn relock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The sending side: the context split off the connection's and the
/// stream's write part.
struct Sender<S, R: SplitParts<S>> {
    context: SendHalf,
    write: R::WritePart,
}

impl<S, R: SplitTransport<S>> Sender<S, R> {
    /// Runs what `op` owes (after a write: what the buffer's size calls
    /// for; after a flush, everything and the flush) until it is done or
    /// the stream must be waited for (registering `wcx`).
    fn poll_output(&mut self, op: Operation, wcx: &mut Context<'_>) -> Poll<Result<()>> {
        loop {
            let Self { context, write } = self;
            let next = context.poll(op);
            if !matches!(next, Next::Transmit | Next::Flush) {
                return Poll::Ready(Ok(()));
            }
            let polled = poll_output_step::<_, R>(Pin::new(write), context, &next, wcx);
            std::task::ready!(settle(polled, context))?;
        }
    }
}

/// What the read half publishes after each poll.
#[derive(Debug)]
struct ReadSide {
    buffered_input: AtomicUsize,
    terminated: AtomicBool,
}

/// What both halves share: the sending side, and what the read half is
/// told and tells.
struct SplitState<S, R: SplitParts<S>> {
    /// Locked by the write half on every call.
    sender: OwnLine<Mutex<Sender<S, R>>>,
    /// Written by the read half on every message.
    read_side: OwnLine<ReadSide>,
    /// The code of the close frame the write half sent, for the read half
    /// to learn ([`WebSocketContext::close_sent_by_sender`]).
    sender_close: Mutex<Option<Option<CloseCode>>>,
    /// `sender_close` or `new_config` holds news for the read half.
    news: AtomicBool,
    /// A configuration set through either half, for the read half's
    /// context.
    new_config: Mutex<Option<Config>>,
    /// Control frames the read half handed over could not all go out: it
    /// tries again on its next poll.
    owed: AtomicBool,
    /// The read half holds control frames back until those handed over
    /// went out: the write half wakes it when they did.
    held: AtomicBool,
    wakers: Arc<HalfWakers>,
    /// Wakes both halves; registered for write readiness.
    both: Waker,
}

impl<S, R: SplitTransport<S>> SplitState<S, R> {
    fn sender(&self) -> MutexGuard<'_, Sender<S, R>> {
        relock(&self.sender)
    }

    /// Polls `op` on the sending side for the write half.
    fn poll_write_half(&self, op: Operation, cx: &mut Context<'_>) -> Poll<Result<()>> {
        self.wakers.write_half.register(cx.waker());
        let mut wcx = Context::from_waker(&self.both);
        let mut sender = self.sender();
        if op == Operation::Flush {
            sender.context.flush();
        }
        let polled = sender.poll_output(op, &mut wcx);
        drop(sender);
        match polled {
            // What is left may be owed (a pong, a close): the read half
            // delivers it too if it polls first.
            Poll::Pending => self.owed.store(true, Ordering::Release),
            // The stream took everything: the read half may hand over
            // what it held back meanwhile.
            Poll::Ready(Ok(())) if self.held.load(Ordering::Acquire) => {
                self.owed.store(false, Ordering::Release);
                self.wakers.read_half.wake();
            }
            Poll::Ready(_) => {}
        }
        polled
    }

    /// Tells the read half the write half sent a close frame with `code`.
    fn sent_close(&self, code: Option<CloseCode>) {
        *relock(&self.sender_close) = Some(code);
        self.news.store(true, Ordering::Release);
        self.wakers.read_half.wake();
    }
}

/// The receiving side, which the read half owns.
struct Receiver<S, R: SplitParts<S>> {
    context: WebSocketContext,
    read: R::ReadPart,
    timer: DeadlineTimer<R>,
}

type Shared<S, R> = Arc<SplitState<S, R>>;

pub(crate) fn split<S, R: SplitTransport<S>>(
    ws: WebSocketStream<S, R>,
) -> (WebSocketWriteHalf<S, R>, WebSocketReadHalf<S, R>) {
    let (stream, mut context) = ws.into_core().into_parts();
    let (read, write) = R::split(stream);
    let sender = Sender {
        context: context.split_sender(),
        write,
    };
    let wakers = Arc::new(HalfWakers::default());
    let both = Waker::from(wakers.clone());
    let shared = Arc::new(SplitState {
        sender: OwnLine(Mutex::new(sender)),
        read_side: OwnLine(ReadSide {
            buffered_input: AtomicUsize::new(context.buffered_input()),
            terminated: AtomicBool::new(context.is_terminated()),
        }),
        sender_close: Mutex::new(None),
        news: AtomicBool::new(false),
        new_config: Mutex::new(None),
        // What the sending side took over may be owed: the first read
        // finds out.
        owed: AtomicBool::new(true),
        held: AtomicBool::new(false),
        wakers,
        both,
    });
    (
        WebSocketWriteHalf {
            shared: shared.clone(),
        },
        WebSocketReadHalf {
            shared,
            receiver: Receiver {
                context,
                read,
                timer: DeadlineTimer::default(),
            },
        },
    )
}

/// The reading half of a split [`WebSocketStream`]: [`read`](Self::read)
/// and [`Stream`].
pub struct WebSocketReadHalf<S, R: SplitParts<S>> {
    shared: Shared<S, R>,
    receiver: Receiver<S, R>,
}

/// The writing half of a split [`WebSocketStream`]: `write`, `flush`,
/// `send`, `close` and [`Sink`].
pub struct WebSocketWriteHalf<S, R: SplitParts<S>> {
    shared: Shared<S, R>,
}

impl<S, R: SplitTransport<S>> fmt::Debug for WebSocketReadHalf<S, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebSocketReadHalf")
            .field("context", &self.receiver.context)
            .finish_non_exhaustive()
    }
}

impl<S, R: SplitTransport<S>> fmt::Debug for WebSocketWriteHalf<S, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebSocketWriteHalf").finish_non_exhaustive()
    }
}

/// What both halves can ask of the connection they share.
macro_rules! shared_state_accessors {
    ($half:ident) => {
        impl<S, R: SplitTransport<S>> $half<S, R> {
            /// Bytes received but not yet returned as messages (as of the
            /// read half's last poll): when non-zero, the read half's next
            /// `read` may complete without waiting for the socket, so a
            /// reply can wait for those messages before a flush.
            pub fn buffered_input(&self) -> usize {
                self.shared.read_side.buffered_input.load(Ordering::Acquire)
            }

            /// Bytes written (by either half) but not yet handed to the
            /// stream.
            pub fn buffered_output(&self) -> usize {
                self.shared.sender().context.buffered_output()
            }

            /// Whether more messages can be read: the closing handshake has
            /// not completed and the connection has not failed (as of the
            /// read half's last poll).
            pub fn can_read(&self) -> bool {
                !self.shared.read_side.terminated.load(Ordering::Acquire)
            }

            /// The configuration (a copy: the halves share it).
            pub fn config(&self) -> Config {
                self.shared.sender().context.config()
            }

            /// Replaces the configuration of the connection (both halves;
            /// the read half's from its next poll).
            pub fn set_config(&self, config: Config) {
                self.shared.sender().context.set_config(config);
                *relock(&self.shared.new_config) = Some(config);
                self.shared.news.store(true, Ordering::Release);
            }
        }
    };
}

shared_state_accessors!(WebSocketReadHalf);
shared_state_accessors!(WebSocketWriteHalf);

impl<S, R: SplitTransport<S>> Receiver<S, R> {
    /// Applies what the write half told: its close frame, a new
    /// configuration.
    fn catch_up(&mut self, shared: &SplitState<S, R>) {
        if !shared.news.load(Ordering::Acquire) || !shared.news.swap(false, Ordering::AcqRel) {
            return;
        }
        if let Some(config) = relock(&shared.new_config).take() {
            self.context.set_config(config);
        }
        if let Some(code) = relock(&shared.sender_close).take() {
            self.context.close_sent_by_sender(code);
        }
    }

    /// Hands the control frames the receiving context queued to the
    /// sending side, behind what is queued there, and writes them out
    /// with a flush as far as the stream takes them now. Returns `false`
    /// if frames handed over earlier are still waiting for the stream:
    /// then nothing is handed over, and the receiving context keeps its
    /// frames (and answers only the newest ping meanwhile), as a context
    /// whose writes block does.
    fn hand_over(&mut self, shared: &SplitState<S, R>, wcx: &mut Context<'_>) -> Result<bool> {
        let mut sender = shared.sender();
        if shared.owed.load(Ordering::Acquire) && !Self::deliver(shared, &mut sender, wcx)? {
            return Ok(false);
        }
        sender
            .context
            .queue_control(self.context.take_control_frames());
        shared.owed.store(true, Ordering::Release);
        Self::deliver(shared, &mut sender, wcx)?;
        Ok(true)
    }

    /// Writes out what the sending side owes (the frames handed over, and
    /// whatever data is queued ahead of them) and flushes, as far as the
    /// stream takes them now.
    /// Returns whether everything owed went out.
    fn deliver(
        shared: &SplitState<S, R>,
        sender: &mut Sender<S, R>,
        wcx: &mut Context<'_>,
    ) -> Result<bool> {
        match sender.poll_output(Operation::Write, wcx) {
            Poll::Ready(Ok(())) => {
                shared.owed.store(false, Ordering::Release);
                Ok(true)
            }
            Poll::Ready(Err(error)) => Err(error),
            // The write side registered `wcx`, which wakes this half too.
            Poll::Pending => Ok(false),
        }
    }

    /// The closing handshake is complete: whatever the sending side still
    /// owes goes out, then its write part is shut down.
    fn poll_shutdown(
        &mut self,
        shared: &SplitState<S, R>,
        wcx: &mut Context<'_>,
    ) -> Poll<Result<()>> {
        let mut sender = shared.sender();
        std::task::ready!(sender.poll_output(Operation::Write, wcx))?;
        let shut = R::poll_shutdown(Pin::new(&mut sender.write), wcx);
        shut.map(|_| {
            // A failed shutdown changes nothing: the closing handshake is
            // complete either way.
            self.context.shut_down();
            Ok(())
        })
    }

    fn poll_receive(
        &mut self,
        shared: &SplitState<S, R>,
        cx: &mut Context<'_>,
        wcx: &mut Context<'_>,
    ) -> Poll<Result<Message>> {
        loop {
            let next = self.context.poll(Operation::Read)?;
            let polled = match next {
                Next::Message(msg) => return Poll::Ready(Ok(msg)),
                Next::Transmit => match self.hand_over(shared, wcx) {
                    Ok(true) => continue,
                    // The stream cannot take more now: read on if the
                    // peer may be waiting for us to, else wait for it.
                    Ok(false) => {
                        shared.held.store(true, Ordering::Release);
                        if self.context.write_would_block(Operation::Read) {
                            return Poll::Pending;
                        }
                        continue;
                    }
                    Err(error) => return Poll::Ready(Err(error)),
                },
                // Handed over: flushed once the sending side delivered it.
                // Until then the receiving context holds back what it
                // queues next (only the newest pong), as when its own
                // writes block.
                Next::Flush => {
                    let delivered = !shared.owed.load(Ordering::Acquire) || {
                        let mut sender = shared.sender();
                        match Self::deliver(shared, &mut sender, wcx) {
                            Ok(delivered) => delivered,
                            Err(error) => return Poll::Ready(Err(error)),
                        }
                    };
                    if delivered {
                        shared.held.store(false, Ordering::Release);
                        self.context.flushed();
                        continue;
                    }
                    shared.held.store(true, Ordering::Release);
                    if self.context.write_would_block(Operation::Read) {
                        return Poll::Pending;
                    }
                    continue;
                }
                Next::Shutdown => match self.poll_shutdown(shared, wcx) {
                    Poll::Ready(Ok(())) => continue,
                    Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
                    // A write side that cannot shut down now (a TLS
                    // close_notify to a peer that stopped reading) still
                    // leaves the read to its deadline, as the whole
                    // stream's does.
                    Poll::Pending => Poll::Pending,
                },
                // After our close, and while lingering, the deadline is
                // checked before every read (see the whole stream's loop).
                Next::Receive | Next::Discard => {
                    let Receiver {
                        context,
                        read,
                        timer,
                    } = self;
                    let bounded =
                        matches!(next, Next::Discard) || context.deadline_bounds_every_read();
                    if bounded && timer.poll(context, cx) {
                        continue;
                    }
                    R::poll_receive(Pin::new(read), cx, context).map_ok(|n| {
                        if n == 0 {
                            context.input_ended();
                        }
                    })
                }
                // A rate limit holds the next message back: only the timer.
                Next::Wait => Poll::Pending,
                Next::Done => unreachable!("a read ends with a message"),
            };
            if settle(polled, &mut self.context)?.is_pending() {
                let Receiver { context, timer, .. } = self;
                if !timer.poll(context, cx) {
                    return Poll::Pending;
                }
            }
        }
    }
}

impl<S, R: SplitTransport<S>> WebSocketReadHalf<S, R> {
    fn poll_read_message(&mut self, cx: &mut Context<'_>) -> Poll<Result<Message>> {
        let Self { shared, receiver } = self;
        // The usual case, a message already buffered with nothing to hear
        // from the write half and nothing owed: no waker to register, as
        // this poll does not wait.
        let quiet = !shared.news.load(Ordering::Acquire) && !shared.owed.load(Ordering::Acquire);
        let polled = if quiet {
            match receiver.context.poll(Operation::Read) {
                Ok(Next::Message(msg)) => Poll::Ready(Ok(msg)),
                Err(error) => Poll::Ready(Err(error)),
                Ok(_) => Self::poll_waiting(shared, receiver, cx),
            }
        } else {
            Self::poll_waiting(shared, receiver, cx)
        };
        let read_side = &shared.read_side;
        read_side
            .buffered_input
            .store(receiver.context.buffered_input(), Ordering::Release);
        if let Poll::Ready(Err(_)) = &polled {
            read_side.terminated.store(true, Ordering::Release);
            shared.sender().context.receiver_ended();
        }
        polled
    }

    /// A read that may wait: registers the task first, so that news or a
    /// hand-over arriving from here on wakes it.
    fn poll_waiting(
        shared: &SplitState<S, R>,
        receiver: &mut Receiver<S, R>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Message>> {
        shared.wakers.read_half.register(cx.waker());
        let mut wcx = Context::from_waker(&shared.both);
        receiver.catch_up(shared);
        if shared.owed.load(Ordering::Acquire) {
            let mut sender = shared.sender();
            if let Err(error) = Receiver::deliver(shared, &mut sender, &mut wcx) {
                return Poll::Ready(Err(error));
            }
        }
        receiver.poll_receive(shared, cx, &mut wcx)
    }

    /// Reads the next message; see [`WebSocketStream::read`]. Cancel-safe.
    ///
    /// # Errors
    ///
    /// As for [`WebSocketStream::read`].
    // Not an `async fn`: the future is one pointer (see
    // `WebSocketStream::read`).
    pub fn read(&mut self) -> impl Future<Output = Result<Message>> + '_ {
        poll_fn(move |cx| self.poll_read_message(cx))
    }

    /// Queues a close frame, owed a flush that the next read (or a write
    /// half's write or flush) gives it (a drain's turn, from inside a read).
    #[doc(hidden)]
    pub fn queue_close(&self, frame: CloseFrame) -> Result<()> {
        let code = frame.code;
        self.shared.sender().context.close(Some(frame))?;
        self.shared.owed.store(true, Ordering::Release);
        self.shared.sent_close(Some(code));
        Ok(())
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
    #[allow(
        clippy::result_large_err,
        reason = "the halves come back as they were given, as with tokio's split"
    )]
    pub fn reunite(
        self,
        other: WebSocketWriteHalf<S, R>,
    ) -> std::result::Result<WebSocketStream<S, R>, (Self, WebSocketWriteHalf<S, R>)> {
        if !self.is_pair_of(&other) {
            return Err((self, other));
        }
        drop(other);
        let Self {
            shared,
            mut receiver,
        } = self;
        receiver.catch_up(&shared);
        let sender = Arc::into_inner(shared)
            .expect("both halves were consumed")
            .sender
            .0
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let Receiver {
            mut context, read, ..
        } = receiver;
        context.rejoin_sender(sender.context);
        let stream = R::unsplit(read, sender.write);
        Ok(WebSocketStream::from_core(Core::new(stream, context)))
    }
}

impl<S, R: SplitTransport<S>> WebSocketWriteHalf<S, R> {
    /// Queues `msg`; see [`WebSocketStream::write`].
    ///
    /// # Errors
    ///
    /// As for [`WebSocketStream::write`].
    pub async fn write(&mut self, msg: Message) -> Result<()> {
        if let Message::Close(frame) = msg {
            self.start_close(frame)?;
        } else if self.queue(|context| context.write(msg))? {
            return Ok(());
        }
        poll_fn(|cx| self.shared.poll_write_half(Operation::Write, cx)).await
    }

    /// Queues with `encode` and returns whether the write is done (the
    /// usual case: it only queued), all under one lock.
    fn queue(&self, encode: impl FnOnce(&mut SendHalf) -> Result<()>) -> Result<bool> {
        let mut sender = self.shared.sender();
        encode(&mut sender.context)?;
        Ok(matches!(sender.context.poll(Operation::Write), Next::Done))
    }

    /// [`write`](Self::write), but never compressed; see
    /// [`WebSocketStream::write_uncompressed`].
    ///
    /// # Errors
    ///
    /// As for [`write`](Self::write).
    pub async fn write_uncompressed(&mut self, msg: Message) -> Result<()> {
        if let Message::Close(frame) = msg {
            self.start_close(frame)?;
        } else if self.queue(|context| context.write_uncompressed(msg))? {
            return Ok(());
        }
        poll_fn(|cx| self.shared.poll_write_half(Operation::Write, cx)).await
    }

    /// Queues a [`PreparedMessage`]; see [`WebSocketStream::write_prepared`].
    ///
    /// # Errors
    ///
    /// As for [`WebSocketStream::write_prepared`].
    pub async fn write_prepared(&mut self, msg: &PreparedMessage) -> Result<()> {
        if let Message::Close(frame) = msg.message() {
            self.start_close(frame.clone())?;
        } else if self.queue(|context| context.write_prepared(msg))? {
            return Ok(());
        }
        poll_fn(|cx| self.shared.poll_write_half(Operation::Write, cx)).await
    }

    /// Writes everything and flushes; see [`SendFlush::flush`](super::SendFlush::flush).
    ///
    /// # Errors
    ///
    /// [`Error::Io`].
    pub async fn flush(&mut self) -> Result<()> {
        poll_fn(|cx| self.shared.poll_write_half(Operation::Flush, cx)).await
    }

    /// [`write`](Self::write) then [`flush`](Self::flush).
    ///
    /// # Errors
    ///
    /// As for both.
    pub async fn send(&mut self, msg: Message) -> Result<()> {
        self.start_send_message(msg)?;
        self.flush().await
    }

    /// Starts the closing handshake; see [`WebSocketStream::close`]. The
    /// read half sees the peer's reply.
    ///
    /// # Errors
    ///
    /// As for [`WebSocketStream::close`].
    pub async fn close(&mut self, frame: Option<CloseFrame>) -> Result<()> {
        self.start_close(frame)?;
        self.flush().await
    }

    /// Queues `msg`, telling the read half if it is a close frame.
    fn start_send_message(&self, msg: Message) -> Result<()> {
        match msg {
            Message::Close(frame) => self.start_close(frame),
            msg => self.shared.sender().context.write(msg),
        }
    }

    /// Queues a close frame and tells the read half, which then waits for
    /// the peer's within the close timeout.
    fn start_close(&self, frame: Option<CloseFrame>) -> Result<()> {
        let code = frame.as_ref().map(|frame| frame.code);
        let newly = {
            let mut sender = self.shared.sender();
            let before = sender.context.sent_close();
            sender.context.close(frame)?;
            !before && sender.context.sent_close()
        };
        if newly {
            self.shared.sent_close(code);
        }
        Ok(())
    }
}

impl<S, R: SplitTransport<S>> Stream for WebSocketReadHalf<S, R> {
    type Item = Result<Message>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_read_message(cx).map(stream_item)
    }
}

/// Ended as the whole stream's is ([`FusedStream`] on
/// [`WebSocketStream`]).
impl<S, R: SplitTransport<S>> FusedStream for WebSocketReadHalf<S, R> {
    fn is_terminated(&self) -> bool {
        self.receiver.context.is_read_over()
    }
}

impl<S, R: SplitTransport<S>> Sink<Message> for WebSocketWriteHalf<S, R> {
    type Error = Error;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        self.shared.poll_write_half(Operation::Write, cx)
    }

    fn start_send(self: Pin<&mut Self>, msg: Message) -> Result<()> {
        self.start_send_message(msg)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        self.shared.poll_write_half(Operation::Flush, cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        match self.start_close(None) {
            Ok(()) | Err(Error::AlreadyClosed) => {}
            Err(e) => return Poll::Ready(Err(e)),
        }
        self.shared.poll_write_half(Operation::Flush, cx)
    }
}
