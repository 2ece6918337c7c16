//! [`Registration`]: one connection's place in a drain, and the
//! [`DrainSignal`]s it waits for.

use std::future::{Future, poll_fn};
use std::sync::Arc;
use std::task::{Context, Poll};

use lockgate::{CloseFrame, Error, Message, Result, TimeoutKind};

use super::registered::DrainRead;
use super::registry::{Seen, Slot, Turn};
use super::{Registered, Shared, Started, lock};
use crate::hub::Subscriber;

/// One connection's place in a [`Drain`](super::Drain); dropping it tells
/// the drain the connection is gone. See [`guard`](Self::guard).
#[derive(Debug)]
pub struct Registration {
    pub(super) shared: Arc<Shared>,
    pub(super) slot: Arc<Slot>,
    pub(super) key: usize,
}

/// What a registered connection must do now; see [`Registration::signal`].
#[must_use = "a drain expects the connection to close, or to be dropped"]
#[derive(Debug, Clone, PartialEq)]
pub enum DrainSignal {
    /// Its turn: send this close frame behind what is queued, and read on
    /// until the closing handshake completes.
    Close(CloseFrame),
    /// The deadline passed: drop the connection.
    Cut,
}

impl Registration {
    /// Wraps the connection this registration is for (a
    /// [`WebSocketStream`](crate::WebSocketStream) or a
    /// [`WebSocketReadHalf`](crate::WebSocketReadHalf)), so that its
    /// `read` handles the drain; see [`Registered`].
    pub fn guard<W>(self, ws: W) -> Registered<W> {
        Registered {
            ws,
            registration: self,
        }
    }

    /// Hands the close to the connection's hub [`Subscriber`]: at the
    /// connection's turn the subscriber stops taking messages, and its
    /// [`forward`](Subscriber::forward) writes everything that was queued
    /// for it, then the drain's close frame, and returns. The registered
    /// read sends no close of its own then; it reads on until the closing
    /// handshake completes. At the deadline the subscriber is closed at
    /// once, and what it still held is dropped.
    pub fn attach_subscriber(&self, subscriber: &Subscriber) {
        // Its turn may have come before it was attached.
        if let Some((hook, now)) = self.slot.attach(subscriber.drain_hook()) {
            let frame = &self.started().frame;
            match now {
                Seen::Cut => hook.cut(frame),
                _ => hook.close_after_queued(frame),
            }
        }
    }

    /// Whether the drain has given this connection its turn (or cut it).
    pub fn is_closing(&self) -> bool {
        !matches!(self.slot.turn(), Turn::Open | Turn::Released)
    }

    /// Waits for what the connection must do: [`DrainSignal::Close`] at its
    /// turn (once; never with a hub subscriber attached, which closes it
    /// itself), then [`DrainSignal::Cut`] at the deadline (and at every
    /// call from then on). For a task that waits on something other than a
    /// registered `read`. Cancel-safe: a signal is taken only by the poll
    /// that returns it.
    pub fn signal(&mut self) -> impl Future<Output = DrainSignal> + '_ {
        poll_fn(|cx| self.poll_signal(cx))
    }

    /// [`signal`](Self::signal) as a poll function.
    pub fn poll_signal(&mut self, cx: &mut Context<'_>) -> Poll<DrainSignal> {
        loop {
            match self.slot.observe() {
                Seen::Close => {
                    return Poll::Ready(DrainSignal::Close(self.started().frame.clone()));
                }
                Seen::Cut | Seen::AlreadyCut => return Poll::Ready(DrainSignal::Cut),
                Seen::Nothing if !self.slot.park(cx.waker()) => return Poll::Pending,
                Seen::Nothing => {}
            }
        }
    }

    fn started(&self) -> &Started {
        self.shared
            .started
            .get()
            .expect("a connection has a turn only once the drain started")
    }

    /// A registered read: what the drain asks first, then the connection.
    /// The waker is left in the slot only when the connection has nothing
    /// to return, so a read that completes at once costs one atomic load.
    pub(super) fn poll_read<W: DrainRead>(
        &mut self,
        ws: &mut W,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Message>> {
        loop {
            match self.slot.observe() {
                // Behind the out buffer, owed a flush that the read below
                // gives it. A connection closing already has its own close
                // out, and a closed one needs none.
                Seen::Close => {
                    let _ = ws.queue_close(self.started().frame.clone());
                }
                Seen::Cut => return Poll::Ready(Err(TimeoutKind::Close.into())),
                Seen::AlreadyCut => return Poll::Ready(Err(Error::AlreadyClosed)),
                Seen::Nothing => {}
            }
            if let Poll::Ready(result) = ws.poll_message(cx) {
                return Poll::Ready(result);
            }
            if !self.slot.park(cx.waker()) {
                return Poll::Pending;
            }
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut registry = lock(&self.shared.registry);
        if registry.release(self.key, &self.slot) {
            drop(registry);
            self.shared.emptied.notify_one();
        }
    }
}
