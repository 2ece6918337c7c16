//! [`Registered`]: a connection whose `read` handles the drain.

use std::future::{Future, poll_fn};
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use futures_sink::Sink;
use lockgate::{CloseFrame, Error, Message, Result};
use tokio::io::{AsyncRead, AsyncWrite};

use super::Registration;
use crate::{WebSocketReadHalf, WebSocketStream, WebSocketWriteHalf};
use async_lockgate::driver::stream_item;

/// A connection registered with a [`Drain`](super::Drain): a
/// [`WebSocketStream`] or a [`WebSocketReadHalf`] whose `read` (and
/// [`Stream`]) sends the drain's close frame at the connection's turn and
/// ends at the drain's deadline. Everything else is the connection's
/// own, through `Deref`.
///
/// The drain is seen by a task that reads (as a connection's task usually
/// does while it waits): the turn waits in the registration for the next
/// `read`, and is never lost if a `read` is dropped.
#[derive(Debug)]
pub struct Registered<W> {
    pub(super) ws: W,
    pub(super) registration: Registration,
}

impl<W> Registered<W> {
    /// The connection.
    pub fn get_ref(&self) -> &W {
        &self.ws
    }

    /// The connection, mutably.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.ws
    }

    /// The connection and its registration, apart (the connection is
    /// registered until the registration is dropped).
    pub fn into_parts(self) -> (W, Registration) {
        (self.ws, self.registration)
    }

    /// Its registration.
    pub fn registration(&self) -> &Registration {
        &self.registration
    }
}

impl<W> Deref for Registered<W> {
    type Target = W;

    fn deref(&self) -> &W {
        &self.ws
    }
}

impl<W> DerefMut for Registered<W> {
    fn deref_mut(&mut self) -> &mut W {
        &mut self.ws
    }
}

/// What a registered read drives: a whole connection or a read half.
pub(super) trait DrainRead {
    fn poll_message(&mut self, cx: &mut Context<'_>) -> Poll<Result<Message>>;

    /// Queues the close, owed a flush that the next read gives it.
    fn queue_close(&mut self, frame: CloseFrame) -> Result<()>;
}

impl<S: AsyncRead + AsyncWrite + Unpin> DrainRead for WebSocketStream<S> {
    fn poll_message(&mut self, cx: &mut Context<'_>) -> Poll<Result<Message>> {
        // The read future holds nothing but the borrow: a new one polled
        // each time is the same read.
        Pin::new(&mut self.read()).poll(cx)
    }

    fn queue_close(&mut self, frame: CloseFrame) -> Result<()> {
        WebSocketStream::queue_close(self, frame)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> DrainRead for WebSocketReadHalf<S> {
    fn poll_message(&mut self, cx: &mut Context<'_>) -> Poll<Result<Message>> {
        Pin::new(&mut self.read()).poll(cx)
    }

    fn queue_close(&mut self, frame: CloseFrame) -> Result<()> {
        WebSocketReadHalf::queue_close(self, frame)
    }
}

/// A registered connection's `read` and [`Stream`].
macro_rules! registered_read {
    ($ws:ident, $written:literal) => {
        impl<S: AsyncRead + AsyncWrite + Unpin> Registered<$ws<S>> {
            #[doc = concat!("[`", stringify!($ws), "::read`], which at the connection's turn queues")]
            #[doc = concat!("the drain's close frame behind what was written ", $written, ",")]
            /// and reads on: the peer's last messages, its close, then
            /// [`Error::ConnectionClosed`]. With a hub subscriber attached
            /// ([`Registration::attach_subscriber`]) the subscriber sends
            /// the close instead. Cancel-safe.
            ///
            /// # Errors
            ///
            #[doc = concat!("As for [`", stringify!($ws), "::read`]; at the drain's deadline")]
            /// a timeout ([`Error::timeout`] is `Some(TimeoutKind::Close)`),
            /// then [`Error::AlreadyClosed`]: drop the connection.
            // Not an `async fn`: the future is one pointer, as the
            // connection's own.
            pub fn read(&mut self) -> impl Future<Output = Result<Message>> + '_ {
                poll_fn(move |cx| self.registration.poll_read(&mut self.ws, cx))
            }
        }

        impl<S: AsyncRead + AsyncWrite + Unpin> Stream for Registered<$ws<S>> {
            type Item = Result<Message>;

            /// Messages as [`read`](Registered::read) returns them; ends
            /// after the closing handshake, or after the drain's deadline
            /// (yielding the timeout once).
            fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
                let this = self.get_mut();
                this.registration
                    .poll_read(&mut this.ws, cx)
                    .map(stream_item)
            }
        }
    };
}

registered_read!(WebSocketStream, "to the connection");
registered_read!(WebSocketReadHalf, "by either half");

impl<S: AsyncRead + AsyncWrite + Unpin> Registered<WebSocketStream<S>> {
    /// Splits like [`WebSocketStream::into_split`]; the read half keeps
    /// the registration.
    pub fn into_split(self) -> (WebSocketWriteHalf<S>, Registered<WebSocketReadHalf<S>>) {
        let (write, read) = self.ws.into_split();
        (write, self.registration.guard(read))
    }
}

/// The connection's own [`Sink`].
impl<S: AsyncRead + AsyncWrite + Unpin> Sink<Message> for Registered<WebSocketStream<S>> {
    type Error = Error;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        Pin::new(&mut self.get_mut().ws).poll_ready(cx)
    }

    fn start_send(self: Pin<&mut Self>, msg: Message) -> Result<()> {
        Pin::new(&mut self.get_mut().ws).start_send(msg)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        Pin::new(&mut self.get_mut().ws).poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        Pin::new(&mut self.get_mut().ws).poll_close(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::mem::size_of;

    use lockgate::{Config, Role, WebSocketContext};

    use super::*;
    use crate::drain::Drain;

    #[test]
    fn a_parked_registered_read_adds_one_pointer_to_its_task() {
        let (a, _b) = tokio::io::duplex(64);
        let ws = WebSocketStream::from_context(
            a,
            WebSocketContext::new(Role::Server, Config::default()),
        );
        let mut ws = Drain::new().register().unwrap().guard(ws);
        let read = ws.read();
        assert_eq!(std::mem::size_of_val(&read), size_of::<usize>());
    }
}
