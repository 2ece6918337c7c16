//! The epoll floor: one mio loop per thread, edge-triggered.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, mpsc};

use mio::net::TcpStream as MioStream;
use mio::{Events, Interest, Poll, Token, Waker};

use super::{Echo, Hand, Shared};

/// The token of the waker that says a socket arrived.
const ARRIVALS: Token = Token(usize::MAX);

/// One connection: its socket, protocol state, and the replies not yet
/// taken by the kernel.
struct Conn {
    tcp: MioStream,
    echo: Echo,
    out: Vec<u8>,
    sent: usize,
}

/// Starts a loop on its own thread; the function returned hands it a
/// socket.
pub(super) fn spawn(shared: Shared) -> Hand {
    let poll = Poll::new().expect("epoll");
    let waker = Arc::new(Waker::new(poll.registry(), ARRIVALS).expect("waker"));
    let (tx, rx) = mpsc::channel::<TcpStream>();
    std::thread::spawn(move || run(poll, &rx, &shared));
    Box::new(move |s| {
        s.set_nodelay(true).expect("TCP_NODELAY");
        tx.send(s).expect("an epoll loop ended");
        waker.wake().expect("wake");
    })
}

fn run(mut poll: Poll, arrivals: &mpsc::Receiver<TcpStream>, shared: &Shared) {
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut free = Vec::new();
    let mut events = Events::with_capacity(1024);
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        poll.poll(&mut events, None).expect("epoll_wait");
        for event in &events {
            if event.token() == ARRIVALS {
                while let Ok(s) = arrivals.try_recv() {
                    s.set_nonblocking(true).expect("non-blocking");
                    let slot = free.pop().unwrap_or_else(|| {
                        conns.push(None);
                        conns.len() - 1
                    });
                    let mut tcp = MioStream::from_std(s);
                    poll.registry()
                        .register(
                            &mut tcp,
                            Token(slot),
                            Interest::READABLE | Interest::WRITABLE,
                        )
                        .expect("register");
                    conns[slot] = Some(Conn {
                        tcp,
                        echo: Echo::default(),
                        out: Vec::new(),
                        sent: 0,
                    });
                }
                continue;
            }
            let slot = event.token().0;
            let Some(conn) = conns[slot].as_mut() else {
                continue;
            };
            let open = (!event.is_readable() || conn.read(&mut chunk, shared)) && conn.write();
            if !open {
                let mut conn = conns[slot].take().expect("connection");
                let _ = poll.registry().deregister(&mut conn.tcp);
                free.push(slot);
            }
        }
    }
}

impl Conn {
    /// Reads until the socket would block, answering as it goes; `false`
    /// once the connection is to end.
    fn read(&mut self, chunk: &mut [u8], shared: &Shared) -> bool {
        loop {
            match self.tcp.read(chunk) {
                Ok(0) => return false,
                Ok(n) => {
                    if !self.echo.feed(&chunk[..n], &mut self.out, shared) {
                        return false;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
    }

    /// Writes the replies until done or the socket would block; `false`
    /// on an error.
    fn write(&mut self) -> bool {
        while self.sent < self.out.len() {
            match self.tcp.write(&self.out[self.sent..]) {
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        self.out.clear();
        self.sent = 0;
        true
    }
}
