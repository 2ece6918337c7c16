//! [`Lifecycle`]: a connection's state, what its read owes the stream at
//! the end ([`Ending`]), and what reports it (its counts and its span), in
//! one owner. The rest of the context reports what happened, one method
//! per event
//! ([`close_sent`](Lifecycle::close_sent),
//! [`close_received`](Lifecycle::close_received),
//! [`close_frame_queued`](Lifecycle::close_frame_queued),
//! [`peer_closing`](Lifecycle::peer_closing),
//! [`completed`](Lifecycle::completed),
//! [`failed`](Lifecycle::failed),
//! [`timed_out`](Lifecycle::timed_out),
//! [`stream_ended`](Lifecycle::stream_ended)), and the lifecycle
//! decides the next [`State`] itself, refuses an event the state does not
//! allow with an error ([`Refused`]), and traces and counts each
//! transition in one place. No caller names the state to go to. And the hooks
//! through which the rest of the context reports to metrics and tracing
//! (features `metrics` and `tracing`, see [`crate::observe`]): each is an
//! empty inline function without them, so a build without the features
//! has no field, no branch and no call for any of it.

#[cfg(feature = "tracing")]
use std::net::SocketAddr;

use crate::config::Role;
use crate::error::{Error, ProtocolError, TimeoutKind};
use crate::frame::CloseCode;
#[cfg(any(feature = "metrics", feature = "tracing"))]
use crate::observe::{self, By};
use crate::proto::linger::Ending;
use crate::proto::seam::Next;
use crate::proto::state::State;

/// What a rate limit did to a connection (see
/// [`Lifecycle::observe_rate_limit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RateLimitAction {
    /// The context stopped asking for input until its bucket refills.
    Throttled = 0,
    /// The connection was closed for exceeding its limit.
    Closed = 1,
}

impl RateLimitAction {
    #[cfg(any(feature = "metrics", feature = "tracing"))]
    pub(crate) const fn label(self) -> &'static str {
        match self {
            RateLimitAction::Throttled => "throttled",
            RateLimitAction::Closed => "closed",
        }
    }
}

/// What moved a connection to its new state: for the move out of
/// [`State::Active`], the close code and the side that closed.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(
    not(any(feature = "metrics", feature = "tracing")),
    allow(dead_code, reason = "read only to report the close")
)]
pub(crate) enum Cause {
    /// We queued our close frame, with this code or none.
    CloseSent(Option<CloseCode>),
    /// The peer's close frame arrived, with this code or none.
    CloseReceived(Option<CloseCode>),
    /// Our reply to the peer's close frame went into the out buffer.
    ReplyQueued,
    /// The closing handshake is complete and our output drained.
    Completed,
    /// The connection failed; our close frame (if we could still send
    /// one) carries this code.
    Failed(CloseCode),
    /// A deadline passed.
    Deadline,
    /// The stream ended.
    StreamEnded,
    /// The context was dropped.
    Dropped,
}

#[cfg(any(feature = "metrics", feature = "tracing"))]
impl Cause {
    /// For a connection leaving [`State::Active`]: the code its close
    /// counts under (1005: a close frame without one; 1006: no close
    /// frame) and who closed it.
    fn close(self) -> (u16, By) {
        let code = |code: Option<CloseCode>| code.map_or(1005, u16::from);
        match self {
            Cause::CloseSent(sent) => (code(sent), By::Local),
            Cause::CloseReceived(received) => (code(received), By::Peer),
            Cause::Failed(sent) => (sent.into(), By::Local),
            Cause::StreamEnded => (1006, By::Peer),
            Cause::ReplyQueued | Cause::Completed | Cause::Deadline | Cause::Dropped => {
                (1006, By::Local)
            }
        }
    }
}

/// An event the connection's state does not allow (see the diagram on
/// [`State`]): refused, and the state left as it was.
#[derive(Debug, Clone, Copy)]
#[must_use = "a refused event is an error to report"]
pub(crate) struct Refused {
    event: Cause,
}

impl From<Refused> for Error {
    fn from(refused: Refused) -> Self {
        match refused.event {
            Cause::CloseReceived(_) => ProtocolError::ReceivedAfterClosing.into(),
            _ => ProtocolError::SendAfterClosing.into(),
        }
    }
}

/// Where the connection is in its life ([`State`]), what its read owes
/// the stream once it is over ([`Ending`]), and, in builds that observe,
/// its counts, its span, and whether it reports at all. Only this file
/// reads or changes any of it.
#[derive(Debug)]
pub(super) struct Lifecycle {
    state: State,
    ending: Ending,
    /// Data messages and bytes not yet handed to the `metrics` recorder.
    #[cfg(feature = "metrics")]
    counters: crate::observe::Counters,
    /// The connection's `tracing` span, if a subscriber wanted it.
    #[cfg(feature = "tracing")]
    span: crate::observe::ConnectionSpan,
    /// The sending side split off a connection: its state changes and its
    /// drop are the receiving side's to report, not its own.
    #[cfg(any(feature = "metrics", feature = "tracing"))]
    quiet: bool,
}

impl Lifecycle {
    /// An open connection, not yet counted or traced: it reports nothing,
    /// not even its drop, until [`opened`](Self::opened).
    pub(super) fn new() -> Self {
        Self {
            state: State::Active,
            ending: Ending::Report,
            #[cfg(feature = "metrics")]
            counters: Default::default(),
            #[cfg(feature = "tracing")]
            span: None,
            #[cfg(any(feature = "metrics", feature = "tracing"))]
            quiet: true,
        }
    }

    /// The connection opened: count it, and open its span (in builds that
    /// observe).
    pub(super) fn opened(&mut self, role: Role) {
        #[cfg(feature = "metrics")]
        {
            self.counters = crate::observe::Counters::opened();
        }
        #[cfg(feature = "tracing")]
        {
            self.span = crate::observe::spans::connection(role);
        }
        #[cfg(any(feature = "metrics", feature = "tracing"))]
        {
            self.quiet = false;
        }
        #[cfg(not(feature = "tracing"))]
        let _ = role;
    }

    /// The lifecycle of the sending side split off this connection: in
    /// the same state, in the same span, but reporting nothing of its own.
    pub(super) fn for_send_half(&self) -> Self {
        let mut send_half = Self::new();
        send_half.state = self.state;
        #[cfg(feature = "tracing")]
        {
            send_half.span = self.span.clone();
        }
        send_half
    }

    /// The send half rejoins: what it counted is counted here.
    pub(super) fn absorb(&mut self, send_half: &mut Lifecycle) {
        #[cfg(feature = "metrics")]
        self.counters.absorb(&mut send_half.counters);
        #[cfg(not(feature = "metrics"))]
        let _ = send_half;
    }

    /// Where the connection is.
    #[inline]
    pub(super) fn state(&self) -> State {
        self.state
    }

    /// Whether the connection is over.
    #[inline]
    pub(super) fn is_terminated(&self) -> bool {
        self.state == State::Terminated
    }

    /// We queued our close frame, with `code` or none: the closing
    /// handshake begins. Refused once it has begun or the connection
    /// ended (RFC 6455 section 5.5.1: one close frame per side).
    pub(super) fn close_sent(&mut self, code: Option<CloseCode>) -> Result<(), Refused> {
        let event = Cause::CloseSent(code);
        match self.state {
            State::Active => {
                self.go(State::ClosedByUs, event);
                Ok(())
            }
            _ => Err(Refused { event }),
        }
    }

    /// The peer's close frame arrived, with `code` or none. Whether our
    /// reply is owed (we had not sent a close frame of our own). Refused
    /// where frames are no longer received.
    pub(super) fn close_received(&mut self, code: Option<CloseCode>) -> Result<bool, Refused> {
        let event = Cause::CloseReceived(code);
        match self.state {
            State::Active => {
                self.go(State::ClosedByPeer, event);
                Ok(true)
            }
            State::ClosedByUs => {
                self.go(State::CloseAcknowledged, event);
                Ok(false)
            }
            _ => Err(Refused { event }),
        }
    }

    /// A close frame went into the out buffer: our reply to the peer's
    /// acknowledges the close; the close frame of a failure changes
    /// nothing (the connection already ended).
    pub(super) fn close_frame_queued(&mut self) {
        if self.state == State::ClosedByPeer {
            self.go(State::CloseAcknowledged, Cause::ReplyQueued);
        }
    }

    /// The other half of a split connection received the peer's close:
    /// this (sending) half sends nothing more but the reply. Nothing
    /// changes once our own close went out.
    pub(super) fn peer_closing(&mut self) {
        if self.state == State::Active {
            self.go(State::ClosedByPeer, Cause::CloseReceived(None));
        }
    }

    /// The closing handshake is complete and our output drained (or, for
    /// a split sending half, the connection ended).
    pub(super) fn completed(&mut self) {
        self.go(State::Terminated, Cause::Completed);
    }

    /// The connection failed; our close frame (if we could still send
    /// one) carries `code`.
    pub(super) fn failed(&mut self, code: CloseCode) {
        self.go(State::Terminated, Cause::Failed(code));
    }

    /// A deadline passed and ended the connection.
    pub(super) fn timed_out(&mut self) {
        self.go(State::Terminated, Cause::Deadline);
    }

    /// The stream ended.
    pub(super) fn stream_ended(&mut self) {
        self.go(State::Terminated, Cause::StreamEnded);
    }

    /// The one place `state` changes, for the event methods above, which
    /// chose `to`. Ending again is allowed (a failure reported after the
    /// stream ended, say) and not observed twice.
    #[inline]
    fn go(&mut self, to: State, cause: Cause) {
        #[cfg(any(feature = "metrics", feature = "tracing"))]
        if self.state != to && !self.quiet {
            self.observe_transition(to, cause);
        }
        #[cfg(not(any(feature = "metrics", feature = "tracing")))]
        let _ = cause;
        self.state = to;
    }

    #[cfg(any(feature = "metrics", feature = "tracing"))]
    #[inline(never)]
    fn observe_transition(&mut self, to: State, cause: Cause) {
        let from = self.state;
        #[cfg(feature = "tracing")]
        observe::spans::transition(&self.span, &from, &to);
        if from == State::Active {
            let (code, by) = cause.close();
            #[cfg(feature = "metrics")]
            observe::counters::closed(code, by);
            #[cfg(feature = "tracing")]
            observe::spans::closing(&self.span, code, by);
        }
        #[cfg(feature = "metrics")]
        if to == State::Terminated {
            self.counters.flush();
            observe::counters::ended();
        }
    }

    // ----- what the read owes the stream at the end (`linger.rs`) -----

    /// The closing handshake is complete (or the stream ended after it):
    /// the read shuts down the write side before it reports it.
    pub(super) fn end_with_shutdown(&mut self) {
        self.ending = Ending::ShutDown;
    }

    /// The connection failed for a close-coded error and our close frame
    /// is queued or went out earlier: the read that reports it shuts down
    /// the write side and lingers first.
    pub(super) fn linger(&mut self) {
        self.ending = Ending::ShutDownThenLinger;
    }

    /// Whether the read lingers ([`Ending::Linger`] or on its way to it).
    #[inline]
    pub(super) fn is_lingering(&self) -> bool {
        matches!(self.ending, Ending::ShutDownThenLinger | Ending::Linger)
    }

    /// What the read does before it reports: shut down, discard, or
    /// nothing (`None`).
    pub(super) fn ending_step(&self) -> Option<Next> {
        match self.ending {
            Ending::Report => None,
            Ending::ShutDown | Ending::ShutDownThenLinger => Some(Next::Shutdown),
            Ending::Linger => Some(Next::Discard),
        }
    }

    /// The write side was shut down (or could not be): a linger begins,
    /// anything else reports next.
    pub(super) fn shut_down(&mut self) {
        self.ending = match self.ending {
            Ending::ShutDownThenLinger => Ending::Linger,
            _ => Ending::Report,
        };
    }

    /// The read reports next: no (more) shutdown, no (more) linger.
    pub(super) fn report_next(&mut self) {
        self.ending = Ending::Report;
    }

    // ----- what the context reports (nothing without the features) -----

    /// A data message of `bytes` payload bytes was received. The last
    /// complete message of what arrived (`burst_over`: nothing more is
    /// buffered) hands the counts to the recorder (a read that finds more
    /// buffered leaves them to the next).
    #[inline(always)]
    pub(super) fn count_received(&mut self, bytes: usize, burst_over: bool) {
        #[cfg(feature = "metrics")]
        {
            self.counters.received(bytes);
            if burst_over {
                self.counters.hand_over();
            }
        }
        #[cfg(not(feature = "metrics"))]
        let _ = (bytes, burst_over);
    }

    /// A data message of `bytes` payload bytes was accepted to be sent.
    #[inline(always)]
    pub(super) fn count_sent(&mut self, bytes: usize) {
        #[cfg(feature = "metrics")]
        self.counters.sent(bytes);
        #[cfg(not(feature = "metrics"))]
        let _ = bytes;
    }

    /// Hands the message counts to the recorder at the end of a burst: the
    /// received bytes hold no more frame (the driver reads next), a flush
    /// completed, or the driver is about to wait. Cheap when nothing was
    /// counted since the last time.
    #[inline(always)]
    pub(super) fn report_counts(&mut self) {
        #[cfg(feature = "metrics")]
        self.counters.flush();
    }

    /// A write was refused for lack of room in the out buffer.
    #[inline(always)]
    pub(super) fn observe_write_buffer_full(&self) {
        #[cfg(feature = "metrics")]
        observe::counters::write_buffer_full();
    }

    /// A deadline failed the connection.
    #[inline(always)]
    pub(super) fn observe_timeout(&self, kind: TimeoutKind) {
        #[cfg(feature = "metrics")]
        observe::counters::timeout(kind);
        #[cfg(feature = "tracing")]
        observe::spans::timeout(&self.span, kind);
        #[cfg(not(any(feature = "metrics", feature = "tracing")))]
        let _ = kind;
    }

    /// A protocol or size violation by the peer is failing the connection.
    #[inline(always)]
    pub(super) fn observe_protocol_error(&self, error: &crate::error::Error) {
        #[cfg(feature = "tracing")]
        if matches!(error, Error::Protocol(_) | Error::Capacity(_)) {
            observe::spans::protocol_error(&self.span, error);
        }
        #[cfg(not(feature = "tracing"))]
        let _ = error;
    }

    /// A rate limit acted on this connection: counts
    /// `lockgate_rate_limit_actions_total{action}` and traces it.
    #[inline(always)]
    pub(super) fn observe_rate_limit(&self, action: RateLimitAction) {
        #[cfg(feature = "metrics")]
        observe::counters::rate_limited(action);
        #[cfg(feature = "tracing")]
        observe::spans::rate_limited(&self.span, action);
        #[cfg(not(any(feature = "metrics", feature = "tracing")))]
        let _ = action;
    }

    /// The subprotocol the handshake chose, for the span.
    #[inline(always)]
    pub(super) fn observe_subprotocol(&self, protocol: &str) {
        #[cfg(feature = "tracing")]
        observe::spans::record_subprotocol(&self.span, protocol);
        #[cfg(not(feature = "tracing"))]
        let _ = protocol;
    }

    /// Records the peer's address in the span.
    #[cfg(feature = "tracing")]
    pub(super) fn record_peer(&self, peer: SocketAddr) {
        observe::spans::record_peer(&self.span, peer);
    }

    /// The connection's span, or a disabled one.
    #[cfg(feature = "tracing")]
    pub(super) fn span(&self) -> tracing::Span {
        self.span
            .as_deref()
            .cloned()
            .unwrap_or_else(tracing::Span::none)
    }

    /// Whether the connection has a span a peer address would go to.
    #[cfg(feature = "tracing")]
    pub(super) fn is_traced(&self) -> bool {
        self.span.is_some()
    }
}

/// A connection dropped before it ended ends now: it stops counting as
/// open, its last counts are handed over, and one dropped while open
/// counts as closed (1006, by us).
#[cfg(any(feature = "metrics", feature = "tracing"))]
impl Drop for Lifecycle {
    fn drop(&mut self) {
        if self.state != State::Terminated && !self.quiet {
            self.go(State::Terminated, Cause::Dropped);
        }
        #[cfg(feature = "metrics")]
        self.counters.flush();
    }
}
