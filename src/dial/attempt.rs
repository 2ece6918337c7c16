//! One attempt of a dial, sans-IO: which step comes next, what it needs,
//! and what each outcome means. Every driver walks it the same way and
//! only does the I/O.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use super::route::{DialStep, Route};
use super::tls::Connector;
use super::tunnel::Tunnel;
use crate::error::{Error, Result, TimeoutKind, carries_detail};

/// The steps of one attempt of a dial up to the opening handshake, walked
/// in order: first the TCP connection to [`first_hop`](Self::first_hop),
/// then what [`poll_step`](Self::poll_step) says to do next (with
/// everything the step needs: the connector of a TLS step, a tunnel's
/// exchange already aimed at the address a `socks5://` dial resolved), and
/// the driver reports how a connect or a lookup went
/// ([`handle_connect`](Self::handle_connect),
/// [`handle_resolved`](Self::handle_resolved)), which says what error, if
/// any, ends the attempt. A driver's walk is then only its I/O:
///
/// ```text
/// let (host, port) = attempt.first_hop();
/// let mut stream = attempt.handle_connect(tcp(host, port))?;
/// while let Some(step) = attempt.poll_step() {
///     match step {
///         AttemptStep::Resolve { host, port } => attempt.handle_resolved(lookup(host, port))?,
///         AttemptStep::Tls { host, connector } => stream = tls(stream, host, connector)?,
///         AttemptStep::Tunnel(tunnel) => run(&mut stream, tunnel)?,
///     }
/// }
/// // then the opening handshake (Dial::handshake), and Dial::follow on failure
/// ```
///
/// All of it is bounded by [`deadline`](Self::deadline), the dial's.
#[derive(Debug)]
pub struct Attempt<'d> {
    route: &'d Route,
    /// Where the TCP connection goes: the first step's host and port.
    first_hop: (&'d str, u16),
    /// The steps after it.
    steps: std::vec::IntoIter<DialStep<'d>>,
    connector: Option<&'d Connector>,
    deadline: Option<Instant>,
    /// The server's address, once a [`DialStep::Resolve`] found it: where
    /// the tunnel asks the proxy to connect.
    resolved: Option<IpAddr>,
}

/// What a driver does next in an [`Attempt`], once connected: a
/// [`DialStep`] with what it needs. (Not `non_exhaustive`: a driver must
/// know every step there is.)
#[derive(Debug)]
pub enum AttemptStep<'d> {
    /// Resolve `host:port` (for a `socks5://` proxy), then report the
    /// first address with [`Attempt::handle_resolved`].
    Resolve {
        /// The server's host name.
        host: &'d str,
        /// The server's port.
        port: u16,
    },
    /// Secure the connection so far with TLS through `connector`,
    /// verifying `host`.
    Tls {
        /// The name the certificate must match.
        host: &'d str,
        /// The client's connector (or the default for `wss://`).
        connector: Connector,
    },
    /// Run the proxy's tunnel exchange on the connection, as any
    /// [`Exchange`](crate::handshake::Exchange).
    Tunnel(Tunnel),
}

impl<'d> Attempt<'d> {
    /// The walk of `steps` of `route` (those of [`Route::steps`], or the
    /// first of them), TLS through `connector`, all by `deadline`. A
    /// [`Dial`](super::Dial) makes its own with
    /// [`Dial::attempt`](super::Dial::attempt).
    ///
    /// # Panics
    ///
    /// When `steps` do not begin with [`DialStep::Connect`] (a route's
    /// always do).
    pub fn new(
        route: &'d Route,
        steps: Vec<DialStep<'d>>,
        connector: Option<&'d Connector>,
        deadline: Option<Instant>,
    ) -> Self {
        let mut steps = steps.into_iter();
        let Some(DialStep::Connect { host, port }) = steps.next() else {
            panic!("a route's steps begin with Connect");
        };
        Self {
            route,
            first_hop: (host, port),
            steps,
            connector,
            deadline,
            resolved: None,
        }
    }

    /// When the attempt (the whole dial) times out; `None` if it never
    /// does.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Where the attempt's first step, the TCP connection, goes (the
    /// proxy, or the server); report it with
    /// [`handle_connect`](Self::handle_connect), then walk the rest with
    /// [`poll_step`](Self::poll_step).
    pub fn first_hop(&self) -> (&'d str, u16) {
        self.first_hop
    }

    /// The next step to do once connected; `None` when the steps before the opening
    /// handshake are done (the connection is ready for it).
    ///
    /// # Panics
    ///
    /// At a [`DialStep::Tls`] without a connector, or a
    /// [`DialStep::Tunnel`] on a route without a proxy, or at a second
    /// [`DialStep::Connect`]: steps and
    /// connector that did not come from the same [`Route`] (a
    /// [`Dial`](super::Dial)'s always do).
    pub fn poll_step(&mut self) -> Option<AttemptStep<'d>> {
        Some(match self.steps.next()? {
            DialStep::Connect { .. } => panic!("a route connects once, first"),
            DialStep::Resolve { host, port } => AttemptStep::Resolve { host, port },
            DialStep::Tls { host } => AttemptStep::Tls {
                host,
                connector: self
                    .connector
                    .cloned()
                    .expect("a connector for every Tls step"),
            },
            DialStep::Tunnel => AttemptStep::Tunnel(
                self.route
                    .tunnel(self.resolved, self.deadline)
                    .expect("a Tunnel step only on a proxy's route"),
            ),
            DialStep::Handshake => return None,
        })
    }

    /// How the connection to [`first_hop`](Self::first_hop) went: the connection, or the
    /// error that ends the attempt, an I/O error naming the hop
    /// ([`Route::connect_error`]).
    ///
    /// # Errors
    ///
    /// `result`'s error, [`Error::Io`] with the hop named.
    pub fn handle_connect<S>(&self, result: Result<S>) -> Result<S> {
        result.map_err(|error| match error {
            // A lockgate detail (a deadline) says what it is already.
            Error::Io(error) if !carries_detail(&error) => self.route.connect_error(error),
            other => other,
        })
    }

    /// How an [`AttemptStep::Resolve`] went: the first address found
    /// ([`first_address`]) is where the tunnel goes.
    ///
    /// # Errors
    ///
    /// `result`'s error, [`Error::Io`] with the name in it
    /// ([`Route::resolve_error`]).
    pub fn handle_resolved(&mut self, result: Result<IpAddr>) -> Result<()> {
        match result {
            Ok(address) => {
                self.resolved = Some(address);
                Ok(())
            }
            Err(Error::Io(error)) if !carries_detail(&error) => {
                Err(self.route.resolve_error(error))
            }
            Err(other) => Err(other),
        }
    }
}

/// The first of the `addresses` a lookup found: the one a dial uses.
///
/// # Errors
///
/// [`io::ErrorKind::NotFound`] for a lookup that found none.
pub fn first_address(mut addresses: impl Iterator<Item = SocketAddr>) -> io::Result<IpAddr> {
    addresses
        .next()
        .map(|address| address.ip())
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address"))
}

/// What is left of `deadline` at `now` (`None`: no deadline), for a
/// driver that bounds each blocking wait itself.
///
/// # Errors
///
/// a timeout ([`Error::timeout`](crate::Error::timeout)) at or past the deadline.
pub(crate) fn time_left(deadline: Option<Instant>, now: Instant) -> Result<Option<Duration>> {
    match deadline {
        None => Ok(None),
        Some(deadline) => match deadline.checked_duration_since(now) {
            Some(left) if !left.is_zero() => Ok(Some(left)),
            _ => Err(TimeoutKind::Handshake.into()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ClientOptions;
    use crate::dial::{Dial, Proxy};

    #[test]
    fn a_socks5_tunnel_goes_to_the_address_resolved() {
        let options = ClientOptions::new()
            .tls(Connector::Plain)
            .proxy(Proxy::from_url("socks5://127.0.0.1:1080").unwrap());
        let dial = Dial::new("wss://example.com/", options, Instant::now()).unwrap();
        let mut attempt = dial.attempt();
        assert_eq!(attempt.first_hop(), ("127.0.0.1", 1080));
        assert!(matches!(
            attempt.poll_step(),
            Some(AttemptStep::Resolve {
                host: "example.com",
                port: 443
            })
        ));
        let found = [SocketAddr::from(([192, 0, 2, 7], 443))];
        attempt
            .handle_resolved(Ok(first_address(found.into_iter()).unwrap()))
            .unwrap();
        let Some(AttemptStep::Tunnel(Tunnel::Socks5(tunnel))) = attempt.poll_step() else {
            panic!("the tunnel comes next");
        };
        assert!(format!("{tunnel:?}").contains("192.0.2.7"), "{tunnel:?}");
        assert!(matches!(
            attempt.poll_step(),
            Some(AttemptStep::Tls {
                host: "example.com",
                connector: Connector::Plain
            })
        ));
        assert!(attempt.poll_step().is_none());
    }

    #[test]
    fn failures_name_what_failed_and_other_errors_pass() {
        let options =
            ClientOptions::new().proxy(Proxy::from_url("socks5://127.0.0.1:1080").unwrap());
        let dial = Dial::new("ws://example.com/", options, Instant::now()).unwrap();
        let mut attempt = dial.attempt();
        let refused = Error::Io(io::ErrorKind::ConnectionRefused.into());
        let error = attempt.handle_connect::<()>(Err(refused)).unwrap_err();
        assert!(
            error.to_string().contains("socks5 proxy 127.0.0.1:1080"),
            "{error}"
        );
        let none = first_address(std::iter::empty()).map_err(Error::from);
        let error = attempt.handle_resolved(none).unwrap_err();
        assert!(
            error.to_string().contains("resolving example.com:80"),
            "{error}"
        );
        let timeout = crate::Error::from(TimeoutKind::Handshake);
        assert!(matches!(
            attempt.handle_connect::<()>(Err(timeout)),
            Err(error) if error.timeout().is_some()
        ));
    }

    #[test]
    fn time_left_ends_at_the_deadline() {
        let now = Instant::now();
        let second = Duration::from_secs(1);
        assert_eq!(time_left(None, now).unwrap(), None);
        assert_eq!(time_left(Some(now + second), now).unwrap(), Some(second));
        for later in [now, now + second] {
            assert!(matches!(
                time_left(Some(now), later),
                Err(ref e) if e.timeout() == Some(TimeoutKind::Handshake)
            ));
        }
    }
}
