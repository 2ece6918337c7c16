//! How the blocking driver bounds a read by a deadline: by setting the
//! stream's read timeout, for the streams that have one.

use std::any::{Any, TypeId};
use std::io;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::stream::MaybeTlsStream;

/// Sets a stream's read timeout (`None`: reads block until data arrives).
///
/// The blocking [`WebSocket`](crate::WebSocket) and the blocking handshake
/// call it before each read with the time left until the next deadline.
/// They find it on their own for `TcpStream` (and `UnixStream` on Unix);
/// give one to [`WebSocket::set_read_timeout_fn`](crate::WebSocket::set_read_timeout_fn)
/// for any other stream that can time out a read (a TLS stream over TCP,
/// say).
pub type ReadTimeoutFn<S> = fn(&S, Option<Duration>) -> io::Result<()>;

/// The standard library's sockets, whose reads can time out.
pub(crate) trait StdSocket {
    fn read_timeout(&self) -> io::Result<Option<Duration>>;
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()>;
    fn shutdown_write(&self) -> io::Result<()>;
}

macro_rules! std_socket {
    ($type:ty) => {
        impl StdSocket for $type {
            fn read_timeout(&self) -> io::Result<Option<Duration>> {
                <$type>::read_timeout(self)
            }
            fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
                <$type>::set_read_timeout(self, timeout)
            }
            fn shutdown_write(&self) -> io::Result<()> {
                self.shutdown(std::net::Shutdown::Write)
            }
        }
    };
}

std_socket!(TcpStream);
#[cfg(unix)]
std_socket!(std::os::unix::net::UnixStream);

/// What `connect` returns: the TCP stream's timeout bounds TLS reads too.
impl StdSocket for MaybeTlsStream<TcpStream> {
    fn read_timeout(&self) -> io::Result<Option<Duration>> {
        self.get_ref().read_timeout()
    }
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.get_ref().set_read_timeout(timeout)
    }
    fn shutdown_write(&self) -> io::Result<()> {
        // A FIN without TLS's close_notify before it would read as a
        // truncation attack to the peer; that needs the TLS session,
        // mutably, which this does not have.
        if self.is_tls() {
            return Ok(());
        }
        self.get_ref().shutdown(std::net::Shutdown::Write)
    }
}

/// Finds the standard socket in a stream of type `S`, if it is one.
pub(crate) type SocketOf<S> = fn(&S) -> Option<&dyn StdSocket>;

/// How to see a stream of type `S` as a standard socket: recognised by
/// type, so a generic driver needs no extra bound.
pub(crate) fn socket_of<S: 'static>() -> Option<SocketOf<S>> {
    fn find<S: 'static>(stream: &S) -> Option<&dyn StdSocket> {
        let any: &dyn Any = stream;
        if let Some(tcp) = any.downcast_ref::<TcpStream>() {
            return Some(tcp);
        }
        #[cfg(unix)]
        if let Some(unix) = any.downcast_ref::<std::os::unix::net::UnixStream>() {
            return Some(unix);
        }
        if let Some(maybe_tls) = any.downcast_ref::<MaybeTlsStream<TcpStream>>() {
            return Some(maybe_tls);
        }
        None
    }
    let is_socket = TypeId::of::<S>() == TypeId::of::<TcpStream>()
        || TypeId::of::<S>() == TypeId::of::<MaybeTlsStream<TcpStream>>();
    #[cfg(unix)]
    let is_socket =
        is_socket || TypeId::of::<S>() == TypeId::of::<std::os::unix::net::UnixStream>();
    is_socket.then_some(find::<S> as SocketOf<S>)
}

/// The read timeout setter for the stream types the standard library can
/// time out, recognised by type.
fn builtin<S: 'static>() -> Option<ReadTimeoutFn<S>> {
    socket_of::<S>()?;
    Some(|stream, timeout| {
        let socket = socket_of::<S>().and_then(|of| of(stream));
        socket.expect("checked by type").set_read_timeout(timeout)
    })
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
    /// The standard socket inside `S`, when `S` is one.
    socket: Option<SocketOf<S>>,
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
        Self {
            socket: socket_of::<S>(),
            set: builtin::<S>(),
            armed: Armed::Unknown,
        }
    }
}

impl<S> ReadTimer<S> {
    /// The standard socket in `stream`, if it is one.
    pub(crate) fn socket<'a>(&self, stream: &'a S) -> Option<&'a dyn StdSocket> {
        self.socket.and_then(|of| of(stream))
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

    #[test]
    fn tcp_streams_are_recognised_and_others_are_not() {
        assert!(builtin::<TcpStream>().is_some());
        assert!(builtin::<std::io::Cursor<Vec<u8>>>().is_none());
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let stream = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let set = builtin::<TcpStream>().unwrap();
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
