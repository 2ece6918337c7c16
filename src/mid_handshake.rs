//! The opening handshake over a `std::io` stream, blocking or not: the
//! sans-IO [`Exchange`]s driven by one loop that can stop when the stream
//! would block and resume later ([`MidHandshake`]).
//!
//! The shapes are tungstenite's (`HandshakeRole`, `MidHandshake`,
//! `HandshakeError::{Interrupted, Failure}`), so code that drives
//! non-blocking handshakes, or matches on their errors, ports unchanged.

use std::error::Error as StdError;
use std::fmt;
use std::io::{self, Read, Write};
use std::time::Instant;

use crate::error::{Error, Result};
use crate::std_stream::ReadTimer;
use crate::upgrade::{Exchange, Opened, Outgoing, ReceiveBuffer, Step};

/// One side of a handshake over a stream: [`ServerHandshake`] or
/// [`ClientHandshake`]. It names what a [`MidHandshake`] holds and what it
/// ends with; lockgate implements it for those two only (its methods take
/// a token no other crate can name).
///
/// [`ServerHandshake`]: crate::ServerHandshake
/// [`ClientHandshake`]: crate::ClientHandshake
pub trait HandshakeRole: Sized {
    /// The stream the handshake runs over.
    type InternalStream;
    /// What a finished handshake gives: the [`WebSocket`](crate::WebSocket)
    /// (and, for a client, the server's response).
    type FinalResult;
    /// The stream and the bytes in flight.
    #[doc(hidden)]
    fn machine(&self, _: sealed::Token) -> &HandshakeMachine<Self::InternalStream>;
    /// The stream and the bytes in flight, mutably.
    #[doc(hidden)]
    fn machine_mut(&mut self, _: sealed::Token) -> &mut HandshakeMachine<Self::InternalStream>;
    /// Runs the handshake as far as the stream allows: `None` when it
    /// would block.
    #[doc(hidden)]
    fn resume(&mut self, _: sealed::Token) -> Option<Result<Box<Opened>>>;
    /// The result of a handshake that ended well.
    #[doc(hidden)]
    fn finish(self, opened: Box<Opened>, _: sealed::Token) -> Self::FinalResult;
}

pub(crate) mod sealed {
    /// Only lockgate can call [`HandshakeRole`](super::HandshakeRole)'s
    /// methods, or implement it.
    #[derive(Debug, Clone, Copy)]
    pub struct Token;
}

/// A handshake that has started: [`handshake`](Self::handshake) runs it
/// until it is over or the stream would block.
pub struct MidHandshake<Role: HandshakeRole> {
    /// Boxed: every accept and client call returns it inside its error
    /// type, which should stay small.
    role: Box<Role>,
}

impl<Role: HandshakeRole> MidHandshake<Role> {
    pub(crate) fn new(role: Role) -> Self {
        Self {
            role: Box::new(role),
        }
    }
}

impl<Role: HandshakeRole> MidHandshake<Role> {
    /// The stream, and the handshake's bytes in flight.
    pub fn get_ref(&self) -> &HandshakeMachine<Role::InternalStream> {
        self.role.machine(sealed::Token)
    }

    /// The stream, and the handshake's bytes in flight, mutably (to set
    /// socket options, say; reading or writing the stream breaks the
    /// handshake).
    pub fn get_mut(&mut self) -> &mut HandshakeMachine<Role::InternalStream> {
        self.role.machine_mut(sealed::Token)
    }

    /// Runs the handshake until it is over or the stream would block.
    ///
    /// # Errors
    ///
    /// [`HandshakeError::Interrupted`] with this handshake when a
    /// non-blocking stream would block: call `handshake` on it again once
    /// the stream is ready (the handshake deadline still runs).
    /// [`HandshakeError::Failure`] when the handshake failed.
    pub fn handshake(mut self) -> std::result::Result<Role::FinalResult, HandshakeError<Role>> {
        match self.role.resume(sealed::Token) {
            None => Err(HandshakeError::Interrupted(self)),
            Some(Ok(opened)) => Ok((*self.role).finish(opened, sealed::Token)),
            Some(Err(error)) => Err(HandshakeError::Failure(error)),
        }
    }
}

impl<Role: HandshakeRole> fmt::Debug for MidHandshake<Role> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MidHandshake { .. }")
    }
}

/// Why a handshake over a stream did not finish.
pub enum HandshakeError<Role: HandshakeRole> {
    /// The stream would block: resume with [`MidHandshake::handshake`].
    Interrupted(MidHandshake<Role>),
    /// The handshake failed.
    Failure(Error),
}

impl<Role: HandshakeRole> fmt::Debug for HandshakeError<Role> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandshakeError::Interrupted(_) => f.write_str("HandshakeError::Interrupted(...)"),
            HandshakeError::Failure(error) => f
                .debug_tuple("HandshakeError::Failure")
                .field(error)
                .finish(),
        }
    }
}

impl<Role: HandshakeRole> fmt::Display for HandshakeError<Role> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandshakeError::Interrupted(_) => f.write_str("interrupted handshake (would block)"),
            HandshakeError::Failure(error) => fmt::Display::fmt(error, f),
        }
    }
}

impl<Role: HandshakeRole> StdError for HandshakeError<Role> {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            HandshakeError::Interrupted(_) => None,
            HandshakeError::Failure(error) => Some(error),
        }
    }
}

impl<Role: HandshakeRole> From<Error> for HandshakeError<Role> {
    fn from(error: Error) -> Self {
        HandshakeError::Failure(error)
    }
}

/// Lets `?` turn a handshake's error into an [`Error`] (lockgate's own
/// entry points return it this way). An interrupted handshake becomes an
/// [`io::ErrorKind::WouldBlock`] error and is dropped: on a non-blocking
/// stream, match on [`HandshakeError::Interrupted`] instead and resume it.
impl<Role: HandshakeRole> From<HandshakeError<Role>> for Error {
    fn from(error: HandshakeError<Role>) -> Self {
        match error {
            HandshakeError::Failure(error) => error,
            HandshakeError::Interrupted(_) => io::Error::new(
                io::ErrorKind::WouldBlock,
                "the handshake was interrupted: the stream would block",
            )
            .into(),
        }
    }
}

/// The stream of a handshake in progress, with the bytes it has yet to
/// write and how its reads are bounded by the deadline.
pub struct HandshakeMachine<S> {
    stream: S,
    /// The last transmit, until it is written and flushed.
    out: Outgoing,
    read_timer: ReadTimer<S>,
}

impl<S> HandshakeMachine<S> {
    /// The stream.
    pub fn get_ref(&self) -> &S {
        &self.stream
    }

    /// The stream, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.stream
    }

    /// The stream, once the handshake is over.
    pub(crate) fn into_inner(self) -> S {
        self.stream
    }

    /// The stream and its read timer, once the handshake is over.
    pub(crate) fn into_parts(self) -> (S, ReadTimer<S>) {
        (self.stream, self.read_timer.handed_over())
    }
}

impl<S: 'static> HandshakeMachine<S> {
    /// A machine for `stream`. On a `TcpStream` or `UnixStream` (also
    /// under TLS) without a read timeout of its own, each read's timeout is
    /// set to the time left before the deadline, and cleared when the
    /// exchange ends.
    pub(crate) fn new(stream: S) -> Self {
        Self {
            stream,
            out: Outgoing::default(),
            read_timer: ReadTimer::for_stream(),
        }
    }
}

impl<S: Read + Write> HandshakeMachine<S> {
    /// Runs `exchange` until it is over (`Some`), or until the stream would
    /// block (`None`: call again when it is ready).
    pub(crate) fn run<E: Exchange>(&mut self, exchange: &mut E) -> Option<E::Outcome> {
        // Local: a handshake parked on a stream that would block holds no
        // read buffer, only what its exchange has received.
        let mut buf = ReceiveBuffer::new();
        loop {
            if self.out.is_pending() {
                match self.write_out() {
                    Ok(()) => {}
                    Err(error) if error.kind() == io::ErrorKind::WouldBlock => return None,
                    Err(error) => {
                        // The transmit is given up: nothing more of it
                        // is owed.
                        self.out = Outgoing::default();
                        exchange.transmit_failed(error.into());
                    }
                }
            }
            match exchange.poll(Instant::now()) {
                Step::Transmit(bytes) => {
                    self.out = Outgoing::new(bytes);
                }
                Step::Receive { deadline } => {
                    if let Err(error) = self.read_timer.arm(&self.stream, deadline, Instant::now())
                    {
                        exchange.read_failed(error.into(), Instant::now());
                        continue;
                    }
                    let started = Instant::now();
                    let read = self.stream.read(buf.spare());
                    let now = Instant::now();
                    match read {
                        Err(error) if is_timeout(&error) && self.timer_fired(now - started) => {
                            // The read timeout set for the deadline fired:
                            // the exchange decides whether time is up.
                            exchange.handle_timeout(now);
                        }
                        read => match exchange.handle_read(read.map(|n| buf.filled(n)), now) {
                            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                                return None;
                            }
                            // Interrupted: read again.
                            _ => {}
                        },
                    }
                }
                Step::Done(outcome) => {
                    // A read timeout set here is taken back, either way; a
                    // failure to do so matters only to a connection that
                    // goes on.
                    let _ = self.read_timer.disarm(&self.stream);
                    return Some(outcome);
                }
            }
        }
    }

    /// Whether a read that failed as timed out after `waited` was cut short
    /// by the read timeout this machine set, rather than by a non-blocking
    /// stream that has nothing yet (which fails at once).
    fn timer_fired(&self, waited: std::time::Duration) -> bool {
        self.read_timer
            .armed_timeout()
            .is_some_and(|timeout| waited >= timeout / 2)
    }

    /// Writes the rest of the last transmit, then flushes.
    fn write_out(&mut self) -> io::Result<()> {
        while !self.out.unwritten().is_empty() {
            let wrote = self.stream.write(self.out.unwritten());
            self.out.wrote(wrote)?;
        }
        self.stream.flush()?;
        self.out.flushed();
        Ok(())
    }
}

impl<S: fmt::Debug> fmt::Debug for HandshakeMachine<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandshakeMachine")
            .field("stream", &self.stream)
            .field("unwritten", &self.out.unwritten().len())
            .finish_non_exhaustive()
    }
}

/// What a read cut short by its timeout fails with (`WouldBlock` on Unix,
/// `TimedOut` on Windows).
fn is_timeout(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// The handshake of one role, as the roles hold it: the stream and the
/// sans-IO exchange, driven together.
pub(crate) struct Driven<S, E> {
    pub(crate) machine: HandshakeMachine<S>,
    pub(crate) exchange: E,
}

impl<S: Read + Write, E: Exchange<Outcome = Result<Box<Opened>>>> Driven<S, E> {
    pub(crate) fn resume(&mut self) -> Option<Result<Box<Opened>>> {
        self.machine.run(&mut self.exchange)
    }
}
