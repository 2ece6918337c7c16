//! How the blocking driver bounds a read by a deadline: by setting the
//! stream's read timeout, for the streams that have one.

use std::any::{Any, TypeId};
use std::io;
use std::net::TcpStream;
use std::time::Duration;

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
        None
    }
    let is_socket = TypeId::of::<S>() == TypeId::of::<TcpStream>();
    #[cfg(unix)]
    let is_socket =
        is_socket || TypeId::of::<S>() == TypeId::of::<std::os::unix::net::UnixStream>();
    is_socket.then_some(find::<S> as SocketOf<S>)
}

/// The read timeout setter for the stream types the standard library can
/// time out, recognised by type.
pub(crate) fn builtin<S: 'static>() -> Option<ReadTimeoutFn<S>> {
    socket_of::<S>()?;
    Some(|stream, timeout| {
        let socket = socket_of::<S>().and_then(|of| of(stream));
        socket.expect("checked by type").set_read_timeout(timeout)
    })
}

/// A read timeout for a wait that must end by `deadline`: at least 1 ms
/// (a zero timeout means "block forever" to the standard library).
pub(crate) fn until(deadline: std::time::Instant, now: std::time::Instant) -> Duration {
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
}
