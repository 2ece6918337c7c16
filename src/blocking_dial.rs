//! The blocking driver's dial: a [`Dial`]'s steps over `std::net`, every
//! wait bounded by what is left of the dial's one deadline.
//!
//! A read timeout bounds one read, not the several a TLS library makes to
//! assemble a record, so a peer sending one byte at a time could hold a
//! blocking TLS handshake long past any timeout set on the socket. Here
//! the socket is non-blocking for the whole dial: the TLS libraries and
//! the exchanges return as soon as they would block, and this driver
//! waits for input itself, never past the deadline.

use std::io;
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::dial::{AttemptStep, Dial, first_address, time_left};
use crate::error::{Result, TimeoutKind};
use crate::mid_handshake::HandshakeMachine;
use crate::stream::MaybeTlsStream;
use crate::upgrade::messages::client::Response;
use crate::upgrade::{Exchange, Opened};
use crate::websocket::WebSocket;

/// The longest a wait for input lasts before the step that would block is
/// tried again: a step blocked on writing (a full send buffer) makes
/// progress without input arriving.
const RETRY_AFTER: Duration = Duration::from_millis(50);

/// Dials `dial` to the end: each attempt's steps, then the redirect it
/// answered with, if one is to be followed, all by the dial's deadline.
///
/// # Errors
///
/// As for [`ClientOptions::connect`](crate::ClientOptions::connect).
pub(crate) fn connect(mut dial: Dial) -> Result<(WebSocket<MaybeTlsStream<TcpStream>>, Response)> {
    loop {
        match attempt(&dial) {
            Err(error) => dial.follow(error)?,
            opened => return opened,
        }
    }
}

/// One attempt: the route's steps, then the opening handshake.
fn attempt(dial: &Dial) -> Result<(WebSocket<MaybeTlsStream<TcpStream>>, Response)> {
    let mut steps = dial.attempt();
    let deadline = steps.deadline();
    let (host, port) = steps.first_hop();
    let tcp = steps.handle_connect(connect_tcp(host, port, deadline))?;
    tcp.set_nodelay(true)?;
    tcp.set_nonblocking(true)?;
    let waiter = Waiter {
        socket: tcp.try_clone()?,
        deadline,
    };
    let mut stream = MaybeTlsStream::Plain(tcp);
    while let Some(step) = steps.poll_step() {
        match step {
            AttemptStep::Tls { host, connector } => {
                stream = connector.secure(stream, host, &mut || waiter.wait())?;
            }
            AttemptStep::Resolve { host, port } => {
                let found = resolve(host, port, deadline)
                    .and_then(|found| Ok(first_address(found.into_iter())?));
                steps.handle_resolved(found)?;
            }
            AttemptStep::Tunnel(mut tunnel) => {
                let mut machine = HandshakeMachine::new(stream);
                exchange(&mut machine, &mut tunnel, &waiter)?;
                stream = machine.into_inner();
            }
        }
    }
    let mut machine = HandshakeMachine::new(stream);
    let Opened {
        context, response, ..
    } = *exchange(&mut machine, &mut dial.handshake()?, &waiter)?;
    // From here on the connection's own deadlines bound its reads.
    machine.get_ref().get_ref().set_nonblocking(false)?;
    Ok((
        WebSocket::from_opened(machine, context),
        response.map(|()| None),
    ))
}

/// Runs `exchange` on the non-blocking stream in `machine` to its end,
/// waiting for input in between.
fn exchange<S, E, T>(
    machine: &mut HandshakeMachine<S>,
    exchange: &mut E,
    waiter: &Waiter,
) -> Result<T>
where
    S: io::Read + io::Write,
    E: Exchange<Outcome = Result<T>>,
{
    loop {
        match machine.run(exchange) {
            Some(outcome) => return outcome,
            None => waiter.wait()?,
        }
    }
}

/// Waits for a dial's non-blocking socket, by its deadline.
#[derive(Debug)]
struct Waiter {
    /// The dial's TCP socket (another handle to it: the stream itself is
    /// inside the TLS layers and exchanges being driven).
    socket: TcpStream,
    deadline: Option<Instant>,
}

impl Waiter {
    /// Returns when input arrives, the stream ends, or [`RETRY_AFTER`]
    /// passes, whichever is first.
    ///
    /// # Errors
    ///
    /// a timeout ([`Error::timeout`](crate::Error::timeout)) once the deadline has passed.
    fn wait(&self) -> Result<()> {
        let wait = time_left(self.deadline, Instant::now())?
            .map_or(RETRY_AFTER, |left| left.min(RETRY_AFTER));
        // A blocking peek with a read timeout is the standard library's
        // wait for input; the socket is non-blocking again before the
        // step is retried.
        self.socket.set_nonblocking(false)?;
        self.socket.set_read_timeout(Some(wait))?;
        // Input, the end of the stream, a timeout, or an error that the
        // step meets itself when it tries again.
        let _ = self.socket.peek(&mut [0; 1]);
        self.socket.set_read_timeout(None)?;
        self.socket.set_nonblocking(true)?;
        Ok(())
    }
}

/// Resolves `host:port`, by `deadline`: an IP address at once, a name on
/// a thread of its own, given up on (and left to finish alone) when the
/// deadline passes.
fn resolve(host: &str, port: u16, deadline: Option<Instant>) -> Result<Vec<SocketAddr>> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let Some(left) = time_left(deadline, Instant::now())? else {
        return Ok((host, port).to_socket_addrs()?.collect());
    };
    let (sender, receiver) = mpsc::sync_channel(1);
    let name = host.to_owned();
    std::thread::Builder::new()
        .name("lockgate-resolve".to_owned())
        .spawn(move || {
            let found = (name.as_str(), port)
                .to_socket_addrs()
                .map(Iterator::collect::<Vec<_>>);
            // The dial may have given up waiting: nobody to tell.
            let _ = sender.send(found);
        })?;
    match receiver.recv_timeout(left) {
        Ok(found) => Ok(found?),
        Err(_) => Err(TimeoutKind::Handshake.into()),
    }
}

/// Connects to the first address of `host` that answers, each attempt
/// bounded by what is left of `deadline`.
fn connect_tcp(host: &str, port: u16, deadline: Option<Instant>) -> Result<TcpStream> {
    let mut last_error = None;
    for addr in resolve(host, port, deadline)? {
        let attempt = match time_left(deadline, Instant::now())? {
            Some(left) => TcpStream::connect_timeout(&addr, left),
            None => TcpStream::connect(addr),
        };
        match attempt {
            Ok(stream) => return Ok(stream),
            // A failure once the deadline has passed is the timeout.
            Err(error) => {
                time_left(deadline, Instant::now())?;
                last_error = Some(error.into());
            }
        }
    }
    Err(last_error.unwrap_or_else(|| {
        io::Error::new(io::ErrorKind::NotFound, "host resolved to no address").into()
    }))
}
