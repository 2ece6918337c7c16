//! The opening handshake, and a proxy's tunnel: lockgate's sans-IO
//! [`Exchange`]s run over a stream of any runtime.
//!
//! The loop only moves bytes and waits: each read or write races the
//! exchange's deadline (one timer), and when the deadline wins the
//! exchange is told so.

use std::future::{Future, poll_fn};
use std::io;
use std::pin::{Pin, pin};
use std::task::{Context, Poll, ready};
use std::time::Instant;

use lockgate::handshake::client::Response;
use lockgate::handshake::{
    Callback, Exchange, HandshakeDriver, IntoClientRequest, Opened, Outgoing, ReceiveBuffer,
    ServerUpgrade, Step,
};
use lockgate::{ClientOptions, Error, Result, ServerOptions};

use super::core::DeadlineTimer;
use super::stream::WebSocketStream;
use crate::runtime::{Runtime, Transport};

/// Accepts a WebSocket upgrade on `stream` with `options` (config and
/// callback), within the config's handshake deadline, counted from the
/// first poll.
///
/// Not an `async fn`: the future holds the stream and the handshake once
/// each (an `async fn` keeps its arguments beside what it moves them
/// into), and a server task that accepts, then serves the connection, is
/// as large as this future for the connection's whole life.
///
/// # Errors
///
/// a [`HandshakeFailure`](lockgate::HandshakeFailure) ([`Error::handshake_failure`](lockgate::Error::handshake_failure)) or
/// [`Error::Protocol`](lockgate::Error::Protocol) for a bad request (the
/// matching HTTP error response was written), a refusal by the callback or
/// the Origin policy as [`Error::Http`](lockgate::Error::Http),
/// a timeout ([`Error::timeout`](lockgate::Error::timeout)) if the request did not
/// arrive in time, [`Error::Io`](lockgate::Error::Io).
pub fn accept_with<R, S, C>(
    mut stream: S,
    options: ServerOptions<C>,
) -> impl Future<Output = Result<WebSocketStream<S, R>>>
where
    R: Transport<S>,
    S: Unpin,
    C: Callback,
{
    let mut handshake = Starting::Options(Box::new(options));
    async move {
        let opened = drive::<R, _, _>(&mut stream, &mut handshake).await?;
        Ok(WebSocketStream::from_context(stream, opened.context))
    }
}

/// A server handshake that starts on its first poll, as an `async fn`
/// would: the deadline counts from then.
enum Starting<C: Callback> {
    /// Not polled yet. Boxed too: the options hold a whole `Config`,
    /// rate limit included, which the connection does not keep.
    Options(Box<ServerOptions<C>>),
    /// Polled: the handshake runs. Boxed: the future of a task that
    /// accepts and then serves the connection keeps its size for the
    /// connection's life, while the handshake's state is needed only until
    /// the upgrade.
    Running(Box<HandshakeDriver<ServerUpgrade<C>>>),
    /// Only while the options turn into the handshake.
    Empty,
}

impl<C: Callback> Starting<C> {
    /// The handshake, once started.
    fn running(&mut self) -> Option<&mut HandshakeDriver<ServerUpgrade<C>>> {
        match self {
            Starting::Running(handshake) => Some(handshake),
            _ => None,
        }
    }
}

/// The driver polls before anything else, so every input reaches a
/// running handshake.
impl<C: Callback> Exchange for Starting<C> {
    type Outcome = Result<Box<Opened>>;

    fn poll(&mut self, now: Instant) -> Step {
        if let Starting::Options(_) = self {
            let Starting::Options(options) = std::mem::replace(self, Starting::Empty) else {
                unreachable!("matched above");
            };
            *self = Starting::Running(Box::new(options.handshake(now)));
        }
        match self {
            Starting::Running(handshake) => handshake.poll(now),
            _ => Step::Done(Err(Error::AlreadyClosed)),
        }
    }

    fn receive(&mut self, input: &[u8], now: Instant) {
        if let Some(handshake) = self.running() {
            handshake.receive(input, now);
        }
    }

    fn read_failed(&mut self, error: Error, now: Instant) {
        if let Some(handshake) = self.running() {
            handshake.read_failed(error, now);
        }
    }

    fn transmit_failed(&mut self, error: Error) {
        if let Some(handshake) = self.running() {
            handshake.transmit_failed(error);
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if let Some(handshake) = self.running() {
            handshake.handle_timeout(now);
        }
    }

    fn deadline(&self) -> Option<Instant> {
        match self {
            Starting::Running(handshake) => handshake.deadline(),
            _ => None,
        }
    }
}

/// The client handshake for `request` over `stream` with `options`'
/// config, within its handshake deadline. The stream is used as it is.
///
/// # Errors
///
/// [`Error::Url`](lockgate::Error::Url) for a bad URL,
/// [`Error::Http`](lockgate::Error::Http) for a refusal,
/// a [`HandshakeFailure`](lockgate::HandshakeFailure) ([`Error::handshake_failure`](lockgate::Error::handshake_failure)) for a bad response,
/// a timeout ([`Error::timeout`](lockgate::Error::timeout)) if the response did not
/// arrive in time, [`Error::Io`](lockgate::Error::Io).
pub async fn client_with<R, S, Q>(
    request: Q,
    stream: S,
    options: ClientOptions,
) -> Result<(WebSocketStream<S, R>, Response)>
where
    R: Transport<S>,
    S: Unpin,
    Q: IntoClientRequest,
{
    let handshake = options.handshake(request, R::now())?;
    finish_client(stream, handshake).await
}

/// Runs a client `handshake` (already built, its deadline running) over
/// `stream` and opens the connection.
///
/// # Errors
///
/// As for [`client_with`].
#[expect(
    clippy::manual_async_fn,
    reason = "an async fn holds its arguments twice (see accept_with)"
)]
pub fn finish_client<R, S, E>(
    mut stream: S,
    mut handshake: E,
) -> impl Future<Output = Result<(WebSocketStream<S, R>, Response)>>
where
    R: Transport<S>,
    S: Unpin,
    E: Exchange<Outcome = Result<Box<Opened>>>,
{
    // Not an `async fn`, for the reason given on `accept_with`.
    async move {
        let opened = drive::<R, _, _>(&mut stream, &mut handshake).await?;
        Ok((
            WebSocketStream::from_context(stream, opened.context),
            opened.response.map(|()| None),
        ))
    }
}

/// Runs `exchange` (an opening handshake, or a proxy's tunnel) over
/// `stream` until it is over: does what each step says, racing every wait
/// against the deadline.
#[expect(
    clippy::manual_async_fn,
    reason = "an async fn holds its arguments twice (see accept_with)"
)]
pub fn exchange<R, S, E>(stream: &mut S, mut exchange: E) -> impl Future<Output = E::Outcome>
where
    R: Transport<S>,
    S: Unpin,
    E: Exchange,
{
    // Not an `async fn`, which would hold `exchange` twice (as its
    // argument and as the local it moves it to).
    async move { drive::<R, _, _>(stream, &mut exchange).await }
}

/// The loop of [`exchange`], over an exchange that the caller's future
/// holds.
///
/// Its state is small: bytes are read into a [`ReceiveBuffer`] that is
/// given back whenever the stream has nothing to read, so a handshake
/// waiting for its peer holds only what it has received; the deadline's
/// timer is boxed, made on the first wait that needs one and reused after.
#[expect(
    clippy::manual_async_fn,
    reason = "an async fn holds its arguments twice (see accept_with)"
)]
fn drive<'a, R, S, E>(stream: &'a mut S, exchange: &'a mut E) -> impl Future<Output = E::Outcome>
where
    R: Transport<S>,
    S: Unpin,
    E: Exchange,
{
    async move {
        let mut buf = ReceiveBuffer::new();
        let mut timer = DeadlineTimer::<R>::default();
        let mut out = Outgoing::default();
        loop {
            // Taken apart before anything awaits: whatever a match holds
            // (the `Step`, or an `Option` of its bytes) would stay in the
            // future's state beside what was moved out of it.
            let (transmit, deadline) = match exchange.poll(R::now()) {
                Step::Transmit(bytes) => {
                    out = Outgoing::new(bytes);
                    (true, exchange.deadline())
                }
                Step::Receive { deadline } => (false, deadline),
                Step::Done(result) => return result,
            };
            if transmit {
                let write = poll_fn(|cx| poll_write_all_and_flush::<R, S>(stream, cx, &mut out));
                let sent = timer.race(deadline, write).await;
                // Sent or given up: its buffer goes either way.
                out = Outgoing::default();
                match sent {
                    Some(Ok(())) => {}
                    Some(Err(error)) => exchange.transmit_failed(error.into()),
                    None => exchange.handle_timeout(R::now()),
                }
            } else {
                let read = poll_fn(|cx| {
                    let polled = R::poll_read(Pin::new(&mut *stream), cx, buf.spare());
                    if polled.is_pending() {
                        // Nothing to read yet: no buffer while waiting.
                        buf.release();
                    }
                    polled
                });
                match timer.race(deadline, read).await {
                    Some(read) => {
                        let now = R::now();
                        if let Err(error) = exchange.handle_read(read.map(|n| buf.filled(n)), now) {
                            // A runtime's read that is ready with
                            // WouldBlock or Interrupted broke its
                            // contract: the exchange fails rather than
                            // spins.
                            exchange.read_failed(error.into(), now);
                        }
                    }
                    None => exchange.handle_timeout(R::now()),
                }
            }
        }
    }
}

/// An exchange's one timer for its deadline is a [`DeadlineTimer`]: boxed,
/// made on the first wait with a deadline and dropped with the exchange,
/// so the futures of a connection's task never carry it.
impl<R: Runtime> DeadlineTimer<R> {
    /// `future`, unless `deadline` comes first (`None`). Without a timer
    /// from the runtime, `future` alone.
    fn race<F: Future + Unpin>(
        &mut self,
        deadline: Option<Instant>,
        mut future: F,
    ) -> impl Future<Output = Option<F::Output>> {
        poll_fn(move |cx| {
            if let Poll::Ready(output) = Pin::new(&mut future).poll(cx) {
                return Poll::Ready(Some(output));
            }
            if self.fired(deadline, cx) {
                Poll::Ready(None)
            } else {
                Poll::Pending
            }
        })
    }

    /// Whether `deadline` has come, the timer armed for it (and `cx`
    /// registered) if not.
    fn fired(&mut self, deadline: Option<Instant>, cx: &mut Context<'_>) -> bool {
        deadline
            .and_then(|deadline| self.armed_for(deadline))
            .is_some_and(|timer| timer.poll(cx).is_ready())
    }
}

/// `future`, unless `deadline` comes first (`None`). Without a timer from
/// the runtime, `future` alone.
pub async fn until<R: Runtime, F: Future>(
    deadline: Option<Instant>,
    future: F,
) -> Option<F::Output> {
    let mut future = pin!(future);
    let mut timer = pin!(deadline.and_then(R::timer_at));
    poll_fn(|cx| {
        if let Poll::Ready(output) = future.as_mut().poll(cx) {
            return Poll::Ready(Some(output));
        }
        let fired = timer
            .as_mut()
            .as_pin_mut()
            .is_some_and(|timer| timer.poll(cx).is_ready());
        if fired {
            Poll::Ready(None)
        } else {
            Poll::Pending
        }
    })
    .await
}

/// Writes what is left of `out`, counting what the stream takes (the
/// core's [`Outgoing`] says what each result means), then flushes.
fn poll_write_all_and_flush<R: Transport<S>, S: Unpin>(
    stream: &mut S,
    cx: &mut Context<'_>,
    out: &mut Outgoing,
) -> Poll<io::Result<()>> {
    while !out.unwritten().is_empty() {
        let wrote = ready!(R::poll_write(Pin::new(&mut *stream), cx, out.unwritten()));
        if let Err(error) = out.wrote(wrote) {
            return Poll::Ready(Err(error));
        }
    }
    R::poll_flush(Pin::new(stream), cx)
}
