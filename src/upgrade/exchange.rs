//! What every exchange of heads is to a driver: the [`Exchange`] trait a
//! driver's one loop runs (the opening handshake, a proxy's tunnel), the
//! [`Step`] it asks for, and the [`Opened`] connection the handshake ends
//! with. Its own file, below the handshake driver and the tunnels that
//! implement it.

use std::io;
use std::time::Instant;

use http::{Request, Response};

use crate::error::{Error, Result};
use crate::proto::WebSocketContext;

/// What [`HandshakeDriver::poll`](crate::handshake::HandshakeDriver::poll) asks the driver to do next.
///
/// `T` is what the exchange ends with: the opened connection for a
/// [`HandshakeDriver`](crate::handshake::HandshakeDriver), the tunnel for a
/// [`ProxyTunnel`](crate::dial::ProxyTunnel).
#[derive(Debug)]
#[must_use = "the handshake only progresses if the driver does what the step says"]
pub enum Step<T = Result<Box<Opened>>> {
    /// Write all of these bytes to the connection and flush it. If that
    /// fails, report it with [`HandshakeDriver::transmit_failed`](crate::handshake::HandshakeDriver::transmit_failed).
    Transmit(Vec<u8>),
    /// Read from the connection once, waiting no later than `deadline`,
    /// and report what happened with [`HandshakeDriver::receive`](crate::handshake::HandshakeDriver::receive),
    /// [`HandshakeDriver::read_failed`](crate::handshake::HandshakeDriver::read_failed) or
    /// [`HandshakeDriver::handle_timeout`](crate::handshake::HandshakeDriver::handle_timeout).
    Receive {
        /// When the handshake times out; `None` if it never does.
        deadline: Option<Instant>,
    },
    /// The handshake is over: the connection is open, or it failed and
    /// should be dropped. (Boxed: a driver that keeps its handshake inside
    /// a long-lived future or struct should not carry a whole connection
    /// state next to the connection.)
    Done(T),
}

/// An exchange of HTTP heads over a connection, sans-IO, under one
/// deadline: what a driver's single loop runs. [`HandshakeDriver`](crate::handshake::HandshakeDriver) (the
/// opening handshake) and [`ProxyTunnel`](crate::dial::ProxyTunnel) (a CONNECT
/// through an HTTP proxy) are exchanges; the calling contract is
/// [`HandshakeDriver`](crate::handshake::HandshakeDriver)'s.
pub trait Exchange {
    /// What [`Step::Done`] carries.
    type Outcome;
    /// What to do next.
    fn poll(&mut self, now: Instant) -> Step<Self::Outcome>;
    /// Bytes read from the connection (empty: the end of the stream).
    fn receive(&mut self, input: &[u8], now: Instant);
    /// Reading failed.
    fn read_failed(&mut self, error: Error, now: Instant);
    /// Writing the last [`Step::Transmit`] failed.
    fn transmit_failed(&mut self, error: Error);
    /// A wait was cut short by the deadline.
    fn handle_timeout(&mut self, now: Instant);
    /// When the exchange times out; `None` if it never does.
    fn deadline(&self) -> Option<Instant>;

    /// Reports one read's outcome, the same way for every driver: the
    /// bytes read to [`receive`](Self::receive) (empty: the end of the
    /// stream), a failure to [`read_failed`](Self::read_failed).
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::WouldBlock`] and [`io::ErrorKind::Interrupted`]
    /// are not the exchange's to hear: they are handed back for the driver
    /// to wait, or read again, as its way of waiting says.
    fn handle_read(&mut self, read: io::Result<&[u8]>, now: Instant) -> io::Result<()> {
        match read {
            Ok(input) => self.receive(input, now),
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) =>
            {
                return Err(error);
            }
            Err(error) => self.read_failed(error.into(), now),
        }
        Ok(())
    }
}

/// A completed opening handshake: the connection's protocol state and the
/// HTTP messages that opened it.
#[derive(Debug)]
#[non_exhaustive]
#[must_use = "the context is the connection"]
pub struct Opened {
    /// The connection, ready to be driven over the stream the handshake
    /// ran on ([`WebSocket::from_context`](crate::WebSocket::from_context)).
    /// It already holds the negotiated permessage-deflate parameters and
    /// any bytes that arrived after the peer's head.
    pub context: WebSocketContext,
    /// The upgrade request: received (server) or sent (client).
    pub request: Request<()>,
    /// The `101 Switching Protocols` response: sent (server) or received
    /// (client). The chosen subprotocol, if any, is its
    /// `Sec-WebSocket-Protocol` header.
    pub response: Response<()>,
}
