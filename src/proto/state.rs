//! The connection state machine.

/// Where a connection is in its life.
///
/// ```text
///             we send Close                 peer's Close arrives
///   Active ──────────────────▶ ClosedByUs ──────────────────────┐
///     │                                                          ▼
///     │ peer's Close arrives              our reply queued  CloseAcknowledged
///     └────────────────────▶ ClosedByPeer ─────────────────────▶ │
///                                                                 │ output drained,
///   any state ── protocol error, EOF ──▶ Terminated ◀─────────────┘ read() reports it
/// ```
///
/// RFC 6455 section 5.5.1: "After sending a Close frame, the application
/// MUST NOT send any more data frames." and "If an endpoint receives a Close
/// frame and did not previously send a Close frame, the endpoint MUST send a
/// Close frame in response."
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// Open in both directions.
    Active,
    /// We sent a close frame and wait for the peer's.
    ClosedByUs,
    /// The peer sent a close frame; our reply is queued but not yet encoded.
    ClosedByPeer,
    /// Both close frames exchanged; what remains is draining our output.
    CloseAcknowledged,
    /// Finished, cleanly or not. Nothing more can be read or written.
    Terminated,
}

impl State {
    /// Whether frames from the peer are still expected.
    pub(crate) fn can_receive(self) -> bool {
        matches!(self, State::Active | State::ClosedByUs)
    }

    /// Whether pings should still be answered: not once we sent a close.
    pub(crate) fn answers_pings(self) -> bool {
        matches!(self, State::Active | State::ClosedByPeer)
    }
}
