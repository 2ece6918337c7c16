//! How the blocking driver bounds a read by a deadline: by setting the
//! stream's read timeout, for the streams that have one.

use std::any::TypeId;
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

/// The read timeout setter for the stream types the standard library can
/// time out, recognised by type.
pub(crate) fn builtin<S: 'static>() -> Option<ReadTimeoutFn<S>> {
    if TypeId::of::<S>() == TypeId::of::<TcpStream>() {
        return Some(|stream, timeout| {
            let any: &dyn std::any::Any = stream;
            any.downcast_ref::<TcpStream>()
                .expect("checked by type id")
                .set_read_timeout(timeout)
        });
    }
    #[cfg(unix)]
    if TypeId::of::<S>() == TypeId::of::<std::os::unix::net::UnixStream>() {
        return Some(|stream, timeout| {
            let any: &dyn std::any::Any = stream;
            any.downcast_ref::<std::os::unix::net::UnixStream>()
                .expect("checked by type id")
                .set_read_timeout(timeout)
        });
    }
    None
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
