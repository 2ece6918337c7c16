//! The behaviour every driver must show, written once.
//!
//! A driver implements [`Driver`]: it opens a [`Connection`] over a
//! scripted [`MockStream`] and runs each call to its end, or until the
//! stream would block, which it reports as an [`Error::Io`] of kind
//! `WouldBlock` (an async driver polls the call's future once, with a
//! waker that does nothing, and drops it when it is pending: a cancelled
//! call). Its test file then runs every case with
//! [`conformance_suite!`](crate::conformance_suite):
//!
//! ```ignore
//! lockgate_kit::conformance_suite!(lockgate_kit::conformance::Blocking);
//! ```
//!
//! The cases: the write/flush contract ([`write_flush`]), the closing
//! handshake ([`closing`]) and the cost of assembling a message ([`cost`],
//! which needs [`CountingAlloc`](crate::CountingAlloc) as the test
//! binary's global allocator) over the mock; over real sockets, through a
//! driver's [`Sockets`], the opening handshake's refusals and deadlines
//! ([`handshake`], `handshake_suite!`), the deadlines of an upgraded
//! connection and its FIN ([`deadlines`], in the same suite), rate limits
//! under a flooding peer ([`rate_limits`], in the same suite), the
//! lingering close that gets a failure's close code to a flooding peer
//! ([`lingering`], in the same suite), and dialling through every kind of
//! proxy ([`dial`], `dial_suite!`, feature `tls`). What needs real sockets and time (deadlines
//! under a stalled or silent peer, handshake refusals) is shared as case
//! tables instead ([`stalled_peer_cases`](crate::stalled_peer_cases),
//! [`silent_peer_cases`](crate::silent_peer_cases),
//! [`not_a_request`](crate::not_a_request)), which each driver's test
//! drives with its own clock.

pub mod closing;
pub mod cost;
pub mod deadlines;
#[cfg(feature = "tls")]
pub mod dial;
pub mod handshake;
pub mod lingering;
pub mod rate_limits;
pub mod write_flush;

use std::any::Any;
use std::io;
use std::net::TcpStream;

use lockgate::handshake::IntoClientRequest;
use lockgate::{
    ClientOptions, CloseFrame, Config, Error, Message, Result, Role, ServerOptions, WebSocket,
};

use crate::MockStream;

/// One connection of the driver under test, over a [`MockStream`].
pub trait Connection {
    /// Reads the next message.
    fn read(&mut self) -> Result<Message>;
    /// Queues `msg`; writes only what the contract allows.
    fn write(&mut self, msg: Message) -> Result<()>;
    /// Writes everything out and flushes the stream.
    fn flush(&mut self) -> Result<()>;
    /// `write`, then `flush`.
    fn send(&mut self, msg: Message) -> Result<()>;
    /// Starts the closing handshake.
    fn close(&mut self, frame: Option<CloseFrame>) -> Result<()>;
    /// Bytes queued and not yet handed to the stream.
    fn buffered_output(&self) -> usize;
    /// The stream, to read what was written (a copy where the driver
    /// cannot lend it, as split halves cannot).
    fn mock(&self) -> MockView<'_>;
    /// Changes the stream's script (what comes next).
    fn script(&mut self, change: impl FnOnce(&mut MockStream));
}

/// The stream of a [`Connection`], lent or copied.
#[derive(Debug)]
pub enum MockView<'a> {
    /// The driver's own stream.
    Lent(&'a MockStream),
    /// A copy, taken when asked for.
    Copied(Box<MockStream>),
}

impl std::ops::Deref for MockView<'_> {
    type Target = MockStream;

    fn deref(&self) -> &MockStream {
        match self {
            MockView::Lent(stream) => stream,
            MockView::Copied(stream) => stream,
        }
    }
}

/// A driver: how it opens a connection over a scripted stream.
pub trait Driver {
    /// Its connection.
    type Connection: Connection;
    /// A connection in `role` whose opening handshake is done.
    fn open(stream: MockStream, role: Role, config: Config) -> Self::Connection;
}

/// A driver over real sockets: its client and server entry points, as
/// the handshake and dial cases use them.
pub trait Sockets {
    /// Dials `request` (a URL, or a request with headers of its own) with
    /// `options`, bounded in time (a dial that neither connects nor fails
    /// within 20 s panics). Connected: checks the response is 101, sends
    /// three messages and reads them back (panics, naming `what`, if they
    /// do not come back), completes the closing handshake, and hands the
    /// connection over still open.
    fn dial_and_echo(
        request: impl IntoClientRequest,
        options: ClientOptions,
        what: &str,
    ) -> Result<Dialed>;

    /// Runs the server's opening handshake on `tcp` with `options`, bounded
    /// in time: the upgraded connection.
    fn accept(tcp: TcpStream, options: ServerOptions) -> Result<Box<dyn Session>>;
}

/// An upgraded connection over a real socket, each call run to its end
/// (an async driver blocks on it; a call that hangs is for the case to
/// bound, see [`HangGuard`]).
pub trait Session {
    /// Reads the next message.
    fn read(&mut self) -> Result<Message>;
    /// Queues `msg`.
    fn write(&mut self, msg: Message) -> Result<()>;
    /// Starts the closing handshake.
    fn close(&mut self, frame: Option<CloseFrame>) -> Result<()>;
    /// Bytes queued and not yet handed to the stream.
    fn buffered_output(&self) -> usize;
}

/// Makes a call that would hang (a deadline never firing) fail instead: if
/// not dropped within `after`, shuts `socket` (a clone of the driver's
/// own) down, so a blocked read sees the end of the stream and a blocked
/// write fails. Dropping it joins its thread.
pub struct HangGuard {
    disarm: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl HangGuard {
    /// Arms the guard on `socket`.
    pub fn on(socket: TcpStream, after: std::time::Duration) -> Self {
        let (disarm, disarmed) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            if disarmed.recv_timeout(after) == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
                let _ = socket.shutdown(std::net::Shutdown::Both);
            }
        });
        Self {
            disarm: Some(disarm),
            thread: Some(thread),
        }
    }
}

impl Drop for HangGuard {
    fn drop(&mut self) {
        drop(self.disarm.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A connection [`Sockets::dial_and_echo`] made.
pub struct Dialed {
    /// The port of the TCP peer: the proxy's when tunnelled.
    pub peer_port: u16,
    /// The stream is TLS (to the server, or to an `https://` proxy).
    pub tls: bool,
    /// The connection, closed by the handshake and not yet dropped.
    pub connection: Box<dyn Any>,
}

/// The three messages [`Sockets::dial_and_echo`] sends, for a `what`.
pub fn echo_messages(what: &str) -> [Message; 3] {
    [0, 1, 2].map(|i| Message::text(format!("{what}: {i}")))
}

/// The blocking driver, [`WebSocket`], over the mock as it is (the mock
/// reports would-block as an error, like a non-blocking socket).
#[derive(Debug)]
pub struct Blocking;

impl Driver for Blocking {
    type Connection = WebSocket<MockStream>;

    fn open(stream: MockStream, role: Role, config: Config) -> Self::Connection {
        WebSocket::from_raw_socket(stream, role, config)
    }
}

impl Connection for WebSocket<MockStream> {
    fn read(&mut self) -> Result<Message> {
        WebSocket::read(self)
    }
    fn write(&mut self, msg: Message) -> Result<()> {
        WebSocket::write(self, msg)
    }
    fn flush(&mut self) -> Result<()> {
        WebSocket::flush(self)
    }
    fn send(&mut self, msg: Message) -> Result<()> {
        WebSocket::send(self, msg)
    }
    fn close(&mut self, frame: Option<CloseFrame>) -> Result<()> {
        WebSocket::close(self, frame)
    }
    fn buffered_output(&self) -> usize {
        WebSocket::buffered_output(self)
    }
    fn mock(&self) -> MockView<'_> {
        MockView::Lent(self.get_ref())
    }
    fn script(&mut self, change: impl FnOnce(&mut MockStream)) {
        change(self.get_mut());
    }
}

/// The error a driver reports for a call that would block.
pub fn would_block() -> Error {
    Error::Io(io::ErrorKind::WouldBlock.into())
}

/// A server connection with the default configuration.
fn server<D: Driver>(stream: MockStream) -> D::Connection {
    D::open(stream, Role::Server, Config::default())
}

/// Runs `call` until it does not would-block (the stream's script ends
/// its would-blocks), at most 100 times.
fn until_done<T>(mut call: impl FnMut() -> Result<T>) -> T {
    for _ in 0..100 {
        match call() {
            Ok(done) => return done,
            Err(e) if e.is_would_block() => {}
            Err(e) => panic!("{e}"),
        }
    }
    panic!("still would-block after 100 calls");
}

/// One `#[test]` per `module::case` of the kit, running it for `$driver`:
/// what every suite macro expands to.
#[doc(hidden)]
#[macro_export]
macro_rules! __kit_cases {
    ($driver:ty; $($module:ident :: $case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                $crate::conformance::$module::$case::<$driver>();
            }
        )*
    };
}

/// The `#[test]` functions running every case of the kit for `$driver`
/// (a type implementing [`Driver`]).
#[macro_export]
macro_rules! conformance_suite {
    ($driver:ty) => {
        $crate::__kit_cases!($driver;
            write_flush::many_writes_then_one_flush_cost_one_socket_flush,
            write_flush::write_touches_the_socket_only_at_write_buffer_size,
            write_flush::a_message_with_a_body_goes_out_in_one_write_call,
            write_flush::write_buffer_full_hands_back_the_message_as_given_and_the_connection_survives,
            write_flush::a_message_larger_than_the_whole_buffer_is_a_capacity_error,
            write_flush::pong_is_flushed_on_the_next_read_even_behind_unflushed_data,
            write_flush::only_the_newest_unsent_pong_is_kept,
            write_flush::a_ping_read_while_writes_block_gets_its_pong_out_first_thing_after_unblocking,
            write_flush::pong_is_flushed_by_the_next_write_too,
            write_flush::reading_without_pings_never_writes_or_flushes,
            write_flush::interrupted_and_would_block_flushes_are_retried_without_loss,
            write_flush::a_write_after_a_flush_that_would_block_does_not_flush,
            closing::read_eof_in_the_middle_is_a_reset_not_a_hang,
            closing::the_peers_close_is_returned_echoed_and_ends_the_connection,
            closing::our_close_is_flushed_and_the_peers_reply_ends_the_connection,
            closing::a_close_reply_the_stream_cannot_take_is_sent_by_the_next_call,
            closing::a_linger_whose_input_never_stops_ends_at_the_close_timeout,
            closing::our_close_with_input_that_never_stops_ends_at_the_close_timeout,
            cost::a_message_in_assembly_costs_its_bytes_whatever_the_fragmentation,
        );
    };
}

/// Every mock case of the kit for async-lockgate's driver on runtime
/// `$runtime`, through the whole stream (module `whole`) and through the
/// split halves (module `split`), with the counting allocator the cost
/// case needs as the test binary's global allocator (features `tokio` or
/// `futures-io`).
#[macro_export]
macro_rules! async_conformance_suites {
    ($runtime:ty) => {
        /// The cost case measures this thread's heap.
        #[global_allocator]
        static ALLOC: $crate::CountingAlloc = $crate::CountingAlloc;

        /// The whole stream.
        mod whole {
            $crate::conformance_suite!($crate::AsyncWhole<$runtime>);
        }

        /// The split halves, against the same contract.
        mod split {
            $crate::conformance_suite!($crate::AsyncSplit<$runtime>);
        }
    };
}
