//! What the blocking driver knows of the standard streams, recognised by
//! type: their socket, whose read timeout bounds a read by a deadline, and
//! how to end their write side after the closing handshake (TLS's
//! close_notify first, then the socket's FIN).

use std::any::{Any, TypeId};
use std::io;
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use bytes::buf::Limit;
use bytes::{BufMut, BytesMut};
use socket2::SockRef;

use crate::proto::WebSocketContext;
use crate::stream::MaybeTlsStream;

/// One `recv` into `buf`'s spare capacity (up to its limit), which it
/// extends by what arrived; returns the count.
#[allow(unsafe_code)]
fn recv_into(socket: &SockRef<'_>, buf: &mut Limit<&mut BytesMut>) -> io::Result<usize> {
    let room = buf.remaining_mut();
    let spare = buf.get_mut().spare_capacity_mut();
    let room = room.min(spare.len());
    let n = socket.recv(&mut spare[..room])?;
    assert!(
        n <= room,
        "recv reported more bytes than it was given room for"
    );
    // SAFETY: `recv` wrote the first `n` bytes of the spare capacity it was
    // given (the system call's contract, which socket2 passes on), and `n`
    // is within both that capacity and the limit (checked above).
    unsafe { buf.advance_mut(n) };
    Ok(n)
}

/// Sets a stream's read timeout (`None`: reads block until data arrives).
///
/// The blocking [`WebSocket`](crate::WebSocket) and the blocking handshake
/// call it before each read with the time left until the next deadline.
/// They find it on their own for `TcpStream`, `UnixStream` on Unix, and
/// TLS over a `TcpStream` (lockgate's `MaybeTlsStream`, rustls'
/// `StreamOwned`, native-tls' `TlsStream`); give one to
/// [`WebSocket::set_read_timeout_fn`](crate::WebSocket::set_read_timeout_fn)
/// for any other stream that can time out a read.
pub type ReadTimeoutFn<S> = fn(&S, Option<Duration>) -> io::Result<()>;

/// The standard library's sockets, whose reads can time out.
pub(crate) trait StdSocket {
    fn read_timeout(&self) -> io::Result<Option<Duration>>;
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()>;
    fn write_timeout(&self) -> io::Result<Option<Duration>>;
    fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()>;
    /// The peer's IP address, for the connection's span.
    #[cfg(feature = "tracing")]
    fn peer_addr(&self) -> Option<std::net::SocketAddr>;
}

macro_rules! std_socket {
    ($type:ty, $peer_addr:expr) => {
        impl StdSocket for $type {
            fn read_timeout(&self) -> io::Result<Option<Duration>> {
                <$type>::read_timeout(self)
            }
            fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
                <$type>::set_read_timeout(self, timeout)
            }
            fn write_timeout(&self) -> io::Result<Option<Duration>> {
                <$type>::write_timeout(self)
            }
            fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
                <$type>::set_write_timeout(self, timeout)
            }
            #[cfg(feature = "tracing")]
            fn peer_addr(&self) -> Option<std::net::SocketAddr> {
                $peer_addr(self)
            }
        }
    };
}

std_socket!(TcpStream, |socket: &TcpStream| socket.peer_addr().ok());
#[cfg(unix)]
std_socket!(std::os::unix::net::UnixStream, |_| None);

/// A stream the blocking driver knows: the socket under it and how to end
/// its write side.
trait KnownStream {
    fn socket(&self) -> &dyn StdSocket;
    /// The socket itself when the stream is nothing more (no TLS), so
    /// reads can go straight into uninitialised memory.
    fn plain(&self) -> Option<SockRef<'_>>;
    /// Ends the write side: close_notify on TLS, then the socket's FIN.
    fn end_write(&mut self) -> io::Result<()>;
}

impl KnownStream for TcpStream {
    fn socket(&self) -> &dyn StdSocket {
        self
    }
    fn plain(&self) -> Option<SockRef<'_>> {
        Some(SockRef::from(self))
    }
    fn end_write(&mut self) -> io::Result<()> {
        self.shutdown(Shutdown::Write)
    }
}

#[cfg(unix)]
impl KnownStream for std::os::unix::net::UnixStream {
    fn socket(&self) -> &dyn StdSocket {
        self
    }
    fn plain(&self) -> Option<SockRef<'_>> {
        Some(SockRef::from(self))
    }
    fn end_write(&mut self) -> io::Result<()> {
        self.shutdown(Shutdown::Write)
    }
}

/// What `connect` returns, plain or TLS (inside an `https://` proxy's TLS
/// too): the TCP stream's timeout bounds TLS reads as well.
impl KnownStream for MaybeTlsStream<TcpStream> {
    fn socket(&self) -> &dyn StdSocket {
        self.get_ref()
    }
    fn plain(&self) -> Option<SockRef<'_>> {
        match self {
            MaybeTlsStream::Plain(tcp) => Some(SockRef::from(tcp)),
            _ => None,
        }
    }
    fn end_write(&mut self) -> io::Result<()> {
        self.close_notify()?;
        self.get_ref().shutdown(Shutdown::Write)
    }
}

/// rustls over TCP, as a server (or a client) sets it up by hand.
#[cfg(feature = "rustls")]
macro_rules! rustls_stream {
    ($connection:ty) => {
        impl KnownStream for rustls::StreamOwned<$connection, TcpStream> {
            fn socket(&self) -> &dyn StdSocket {
                &self.sock
            }
            fn plain(&self) -> Option<SockRef<'_>> {
                None
            }
            fn end_write(&mut self) -> io::Result<()> {
                self.conn.send_close_notify();
                io::Write::flush(self)?;
                self.sock.shutdown(Shutdown::Write)
            }
        }
    };
}

#[cfg(feature = "rustls")]
rustls_stream!(rustls::ClientConnection);
#[cfg(feature = "rustls")]
rustls_stream!(rustls::ServerConnection);

#[cfg(feature = "native-tls")]
impl KnownStream for native_tls::TlsStream<TcpStream> {
    fn socket(&self) -> &dyn StdSocket {
        self.get_ref()
    }
    fn plain(&self) -> Option<SockRef<'_>> {
        None
    }
    fn end_write(&mut self) -> io::Result<()> {
        self.shutdown()?;
        self.get_ref().shutdown(Shutdown::Write)
    }
}

/// How to reach what lockgate knows of a stream of type `S`, recognised by
/// type so that a generic driver needs no extra bound.
pub(crate) struct Known<S> {
    socket: fn(&S) -> &dyn StdSocket,
    plain: fn(&S) -> Option<SockRef<'_>>,
    end_write: fn(&mut S) -> io::Result<()>,
}

// By hand: derived, they would ask `S: Clone`.
impl<S> Clone for Known<S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for Known<S> {}

impl<S> std::fmt::Debug for Known<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Known")
    }
}

fn downcast<S: 'static, T: 'static>(stream: &S) -> &T {
    (stream as &dyn Any)
        .downcast_ref()
        .expect("checked by type")
}

fn downcast_mut<S: 'static, T: 'static>(stream: &mut S) -> &mut T {
    (stream as &mut dyn Any)
        .downcast_mut()
        .expect("checked by type")
}

/// The read timeout set on `stream`'s socket, if lockgate knows the
/// stream and one is set.
#[cfg(feature = "native-tls")]
pub(crate) fn read_timeout_of<S: 'static>(stream: &S) -> Option<Duration> {
    let known = known::<S>()?;
    (known.socket)(stream).read_timeout().ok().flatten()
}

/// What lockgate knows of streams of type `S`, if it knows them.
pub(crate) fn known<S: 'static>() -> Option<Known<S>> {
    macro_rules! known {
        ($type:ty) => {
            if TypeId::of::<S>() == TypeId::of::<$type>() {
                return Some(Known {
                    socket: |stream| downcast::<S, $type>(stream).socket(),
                    plain: |stream| downcast::<S, $type>(stream).plain(),
                    end_write: |stream| downcast_mut::<S, $type>(stream).end_write(),
                });
            }
        };
    }
    known!(TcpStream);
    #[cfg(unix)]
    known!(std::os::unix::net::UnixStream);
    known!(MaybeTlsStream<TcpStream>);
    #[cfg(feature = "rustls")]
    known!(rustls::StreamOwned<rustls::ClientConnection, TcpStream>);
    #[cfg(feature = "rustls")]
    known!(rustls::StreamOwned<rustls::ServerConnection, TcpStream>);
    #[cfg(feature = "native-tls")]
    known!(native_tls::TlsStream<TcpStream>);
    None
}

/// Bounds a blocking stream's reads by deadlines through its read
/// timeout: the one piece the handshake loop and [`WebSocket`](crate::WebSocket)
/// share.
///
/// A caller that set a read timeout of its own keeps it (reads return at
/// its pace, and deadlines are checked when they do). Otherwise the
/// timeout is re-set only when the one in place would wake too early or
/// more than an eighth of the wait too late, so a busy connection rarely
/// pays for the system call.
#[derive(Debug)]
pub(crate) struct ReadTimer<S> {
    /// What lockgate knows of `S`, when it knows it.
    known: Option<Known<S>>,
    /// Sets the stream's read timeout, when it can have one.
    set: Option<ReadTimeoutFn<S>>,
    armed: Armed,
}

/// Who owns the stream's read timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Armed {
    /// Not looked at yet.
    Unknown,
    /// The caller set one.
    ByCaller,
    /// This timer's, currently this value.
    ByUs(Option<Duration>),
}

impl<S: 'static> ReadTimer<S> {
    /// A timer for the stream types the standard library can time out,
    /// recognised by type; inert for others.
    pub(crate) fn for_stream() -> Self {
        let found = known::<S>();
        let set: Option<ReadTimeoutFn<S>> = found.map(|_| {
            (|stream: &S, timeout| {
                let found = known::<S>().expect("checked by type");
                (found.socket)(stream).set_read_timeout(timeout)
            }) as ReadTimeoutFn<S>
        });
        Self {
            known: found,
            set,
            armed: Armed::Unknown,
        }
    }
}

impl<S> ReadTimer<S> {
    /// The standard socket in `stream`, if lockgate knows it.
    fn socket<'a>(&self, stream: &'a S) -> Option<&'a dyn StdSocket> {
        self.known.map(|known| (known.socket)(stream))
    }

    /// Reads from `stream` straight into `context`'s receive buffer, without
    /// zeroing it first, if `stream` is a plain socket lockgate knows;
    /// `None` (nothing done) otherwise. Reports the count to `context`, as
    /// [`WebSocketContext::input_appended`] asks.
    pub(crate) fn receive_plain(
        &self,
        stream: &S,
        context: &mut WebSocketContext,
    ) -> Option<io::Result<usize>> {
        let socket = (self.known?.plain)(stream)?;
        let read = recv_into(&socket, &mut context.input_buffer());
        context.input_appended(*read.as_ref().unwrap_or(&0));
        Some(read)
    }

    /// Ends `stream`'s write side after the closing handshake, if lockgate
    /// knows how: close_notify on TLS, then the socket's FIN.
    ///
    /// # Errors
    ///
    /// The stream's; `Ok` for a stream lockgate does not know.
    pub(crate) fn end_write(&self, stream: &mut S) -> io::Result<()> {
        match self.known {
            Some(known) => (known.end_write)(stream),
            None => Ok(()),
        }
    }

    /// The peer's IP address, if `stream` is a socket lockgate knows (also
    /// under TLS) and it has one.
    #[cfg(feature = "tracing")]
    pub(crate) fn peer_addr(&self, stream: &S) -> Option<std::net::SocketAddr> {
        self.socket(stream)?.peer_addr()
    }

    /// The same timer for a new owner of the stream, who may set a read
    /// timeout of its own before the next read: it is looked at again then.
    pub(crate) fn handed_over(self) -> Self {
        Self {
            armed: Armed::Unknown,
            ..self
        }
    }

    /// The read timeout this timer set on the stream, if any.
    pub(crate) fn armed_timeout(&self) -> Option<Duration> {
        match self.armed {
            Armed::ByUs(timeout) => timeout,
            _ => None,
        }
    }

    /// Whether a blocking read of the stream can be bounded by a deadline
    /// (a stream lockgate knows, or one given a read timeout function).
    pub(crate) fn bounds_reads(&self) -> bool {
        self.set.is_some()
    }

    /// Uses `set` for a stream this timer does not recognise.
    pub(crate) fn set_fn(&mut self, set: ReadTimeoutFn<S>) {
        self.set = Some(set);
        self.armed = Armed::ByUs(None);
    }

    /// Sets `stream`'s read timeout so a blocking read returns by
    /// `deadline` (`None`: no deadline).
    pub(crate) fn arm(
        &mut self,
        stream: &S,
        deadline: Option<Instant>,
        now: Instant,
    ) -> io::Result<()> {
        let Some(set) = self.set else {
            return Ok(());
        };
        if self.armed == Armed::Unknown {
            let current = match self.socket(stream) {
                Some(socket) => socket.read_timeout()?,
                None => None,
            };
            self.armed = match current {
                Some(_) => Armed::ByCaller,
                None => Armed::ByUs(None),
            };
        }
        let Armed::ByUs(armed) = self.armed else {
            return Ok(());
        };
        let wanted = deadline.map(|d| until(d, now));
        let keep = match (armed, wanted) {
            (None, None) => true,
            (Some(armed), Some(wanted)) => armed >= wanted && armed - wanted <= wanted / 8,
            _ => false,
        };
        if !keep {
            set(stream, wanted)?;
            self.armed = Armed::ByUs(wanted);
        }
        Ok(())
    }
}

impl<S> ReadTimer<S> {
    /// Bounds the writes a read owes (a pong, a close reply, a keepalive
    /// ping) by `deadline`, as the read itself is bounded: a peer that
    /// stops reading must not keep a blocking `read` from its keepalive
    /// and close deadlines. Sets the write timeout of a socket lockgate
    /// knows and whose caller set none; returns whether it did, so that
    /// [`unbound_write`](Self::unbound_write) takes it back after the
    /// write (a `write` or `flush` of the caller is never bounded).
    ///
    /// # Errors
    ///
    /// The socket's.
    pub(crate) fn bound_write(
        &self,
        stream: &S,
        deadline: Instant,
        now: Instant,
    ) -> io::Result<bool> {
        let Some(socket) = self.socket(stream) else {
            return Ok(false);
        };
        if socket.write_timeout()?.is_some() {
            return Ok(false);
        }
        socket.set_write_timeout(Some(until(deadline, now)))?;
        Ok(true)
    }

    /// Takes back the write timeout [`bound_write`](Self::bound_write) set.
    ///
    /// # Errors
    ///
    /// The socket's.
    pub(crate) fn unbound_write(&self, stream: &S) -> io::Result<()> {
        match self.socket(stream) {
            Some(socket) => socket.set_write_timeout(None),
            None => Ok(()),
        }
    }

    /// Takes back a read timeout this timer set (a caller's own stays).
    pub(crate) fn disarm(&mut self, stream: &S) -> io::Result<()> {
        self.arm(stream, None, Instant::now())
    }
}

/// A read timeout for a wait that must end by `deadline`: at least 1 ms
/// (a zero timeout means "block forever" to the standard library).
pub(crate) fn until(deadline: Instant, now: Instant) -> Duration {
    deadline
        .saturating_duration_since(now)
        .max(Duration::from_millis(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::io::Write;
    use std::net::TcpListener;

    fn tcp_pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        (client, server)
    }

    #[test]
    fn recv_into_keeps_exactly_what_arrived_within_the_limit() {
        let (mut sender, receiver) = tcp_pair();
        let sent: Vec<u8> = (0..5000u32).map(|i| (i * 7 + 3) as u8).collect();
        sender.write_all(&sent).unwrap();
        drop(sender);
        let socket = SockRef::from(&receiver);
        let mut buf = BytesMut::from(&b"kept"[..]);
        let mut got = 0;
        loop {
            buf.reserve(4096);
            // A limit below the capacity: the read must stop there.
            let mut limited = (&mut buf).limit(1000);
            let n = recv_into(&socket, &mut limited).unwrap();
            assert!(n <= 1000);
            if n == 0 {
                break;
            }
            got += n;
            assert_eq!(buf.len(), 4 + got);
        }
        assert_eq!(&buf[..4], b"kept");
        assert_eq!(&buf[4..], &sent[..]);
    }

    #[test]
    fn a_plain_socket_is_read_into_spare_capacity_and_other_streams_are_not() {
        let (mut sender, receiver) = tcp_pair();
        sender.write_all(b"\x82\x03abc").unwrap();
        let timer = ReadTimer::<TcpStream>::for_stream();
        let mut context = WebSocketContext::new(crate::Role::Client, crate::Config::default());
        let n = timer.receive_plain(&receiver, &mut context);
        assert!(matches!(n, Some(Ok(5))), "{n:?}");
        assert_eq!(context.buffered_input(), 5);
        let other = ReadTimer::<std::io::Cursor<Vec<u8>>>::for_stream();
        let cursor = std::io::Cursor::new(vec![1, 2, 3]);
        assert!(other.receive_plain(&cursor, &mut context).is_none());
    }

    #[test]
    fn tcp_streams_are_recognised_and_others_are_not() {
        assert!(known::<TcpStream>().is_some());
        assert!(known::<MaybeTlsStream<TcpStream>>().is_some());
        assert!(known::<std::io::Cursor<Vec<u8>>>().is_none());
        assert!(
            ReadTimer::<std::io::Cursor<Vec<u8>>>::for_stream()
                .set
                .is_none()
        );
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let stream = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let set = ReadTimer::<TcpStream>::for_stream().set.unwrap();
        set(&stream, Some(Duration::from_millis(250))).unwrap();
        // The kernel rounds to its clock tick.
        let set_to = stream.read_timeout().unwrap().expect("a timeout");
        assert!(set_to >= Duration::from_millis(250), "{set_to:?}");
    }

    fn connected() -> TcpStream {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        TcpStream::connect(listener.local_addr().unwrap()).unwrap()
    }

    #[test]
    fn the_timer_sets_and_takes_back_only_its_own_read_timeout() {
        let now = Instant::now();
        let deadline = now + Duration::from_secs(5);

        let ours = connected();
        let mut timer = ReadTimer::<TcpStream>::for_stream();
        timer.arm(&ours, Some(deadline), now).unwrap();
        let set_to = ours.read_timeout().unwrap().expect("armed");
        assert!(set_to >= Duration::from_secs(5), "{set_to:?}");
        timer.disarm(&ours).unwrap();
        assert_eq!(ours.read_timeout().unwrap(), None);

        let callers = connected();
        let own = Duration::from_millis(100);
        callers.set_read_timeout(Some(own)).unwrap();
        let before = callers.read_timeout().unwrap();
        let mut timer = ReadTimer::<TcpStream>::for_stream();
        timer.arm(&callers, Some(deadline), now).unwrap();
        timer.disarm(&callers).unwrap();
        assert_eq!(
            callers.read_timeout().unwrap(),
            before,
            "the caller's stays"
        );
    }
}
