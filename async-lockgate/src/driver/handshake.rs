//! The opening handshake, and a proxy's tunnel: lockgate's sans-IO
//! [`Exchange`]s run over a stream of any runtime.
//!
//! The loop only moves bytes and waits: each read or write races the
//! exchange's deadline (one timer), and when the deadline wins the
//! exchange is told so.

use std::future::{Future, poll_fn};
use std::io;
use std::pin::{Pin, pin};
use std::task::Poll;
use std::time::Instant;

use lockgate::handshake::client::Response;
use lockgate::handshake::{Callback, Exchange, IntoClientRequest, Opened, Step};
use lockgate::{ClientOptions, Result, ServerOptions};

use super::stream::WebSocketStream;
use crate::runtime::{Runtime, Transport};

/// How much one handshake read asks for.
const HANDSHAKE_READ: usize = 4096;

/// Accepts a WebSocket upgrade on `stream` with `options` (config and
/// callback), within the config's handshake deadline.
///
/// # Errors
///
/// [`Error::Handshake`](lockgate::Error::Handshake) or
/// [`Error::Protocol`](lockgate::Error::Protocol) for a bad request (the
/// matching HTTP error response was written), a refusal by the callback or
/// the Origin policy as [`Error::Http`](lockgate::Error::Http),
/// [`Error::Timeout`](lockgate::Error::Timeout) if the request did not
/// arrive in time, [`Error::Io`](lockgate::Error::Io).
pub async fn accept_with<R, S, C>(
    mut stream: S,
    options: ServerOptions<C>,
) -> Result<WebSocketStream<S, R>>
where
    R: Transport<S>,
    S: Unpin,
    C: Callback,
{
    let opened = exchange::<R, _, _>(&mut stream, options.handshake(R::now())).await?;
    Ok(WebSocketStream::from_context(stream, opened.context))
}

/// The client handshake for `request` over `stream` with `options`'
/// config, within its handshake deadline. The stream is used as it is.
///
/// # Errors
///
/// [`Error::Url`](lockgate::Error::Url) for a bad URL,
/// [`Error::Http`](lockgate::Error::Http) for a refusal,
/// [`Error::Handshake`](lockgate::Error::Handshake) for a bad response,
/// [`Error::Timeout`](lockgate::Error::Timeout) if the response did not
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
pub async fn finish_client<R, S, E>(
    mut stream: S,
    handshake: E,
) -> Result<(WebSocketStream<S, R>, Response)>
where
    R: Transport<S>,
    S: Unpin,
    E: Exchange<Outcome = Result<Box<Opened>>>,
{
    let opened = exchange::<R, _, _>(&mut stream, handshake).await?;
    Ok((
        WebSocketStream::from_context(stream, opened.context),
        opened.response.map(|()| None),
    ))
}

/// Runs `exchange` (an opening handshake, or a proxy's tunnel) over
/// `stream` until it is over: does what each step says, racing every wait
/// against the deadline.
pub async fn exchange<R, S, E>(stream: &mut S, mut exchange: E) -> E::Outcome
where
    R: Transport<S>,
    S: Unpin,
    E: Exchange,
{
    // On the heap: a future holding the buffer would keep its size for
    // the life of the task that awaited it.
    let mut buf = vec![0u8; HANDSHAKE_READ];
    loop {
        match exchange.poll(R::now()) {
            Step::Transmit(bytes) => {
                let written = write_all_and_flush::<R, S>(stream, &bytes);
                match until::<R, _>(exchange.deadline(), written).await {
                    Some(Ok(())) => {}
                    Some(Err(error)) => exchange.transmit_failed(error.into()),
                    None => exchange.handle_timeout(R::now()),
                }
            }
            Step::Receive { deadline } => {
                let read = poll_fn(|cx| R::poll_read(Pin::new(&mut *stream), cx, &mut buf));
                match until::<R, _>(deadline, read).await {
                    Some(Ok(n)) => exchange.receive(&buf[..n], R::now()),
                    Some(Err(error)) => exchange.read_failed(error.into(), R::now()),
                    None => exchange.handle_timeout(R::now()),
                }
            }
            Step::Done(result) => return result,
        }
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

async fn write_all_and_flush<R: Transport<S>, S: Unpin>(
    stream: &mut S,
    mut bytes: &[u8],
) -> io::Result<()> {
    while !bytes.is_empty() {
        match poll_fn(|cx| R::poll_write(Pin::new(&mut *stream), cx, bytes)).await {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    poll_fn(|cx| R::poll_flush(Pin::new(&mut *stream), cx)).await
}
