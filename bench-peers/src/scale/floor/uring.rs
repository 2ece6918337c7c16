//! The io_uring floors: one ring per thread, one multishot receive per
//! connection into a ring of provided buffers, and each pass's sends
//! submitted together with its wait; how the ring is set up and waited
//! for is the [`Setup`].
//!
//! The only `unsafe` in bench-peers: the provided-buffer ring is memory
//! the kernel reads (the entries) and writes (the buffers) while this
//! thread runs, and every operation names memory by raw pointer.
#![allow(unsafe_code)]

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::io;
use std::net::TcpStream;
use std::os::fd::{AsRawFd, FromRawFd};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::mpsc;

use io_uring::{IoUring, cqueue, opcode, squeue, types};

use super::{Echo, Hand, Shared};

/// Provided buffers per ring (a power of two, as the kernel requires).
const BUFFERS: u16 = 4096;
/// The size of each.
const BUFFER_LEN: usize = 4096;
/// The buffer group the receives select from.
const GROUP: u16 = 0;
/// A receive's `user_data` tag (the low 32 bits are the connection slot).
const RECV: u64 = 1 << 32;
/// A send's.
const SEND: u64 = 2 << 32;
/// `IORING_ENTER_GETEVENTS` (io-uring keeps its `sys` module private):
/// run deferred completion work and post what it completes.
const ENTER_GETEVENTS: u32 = 1;
/// How long the loop waits for completions before it looks for arrived
/// sockets.
const ARRIVAL_CHECK_NS: u32 = 1_000_000;

/// How a floor's ring is set up and waited for.
#[derive(Debug, Clone, Copy)]
pub(super) struct Setup {
    /// `DEFER_TASKRUN` (with `SINGLE_ISSUER`): completion work runs when
    /// the thread enters the ring to wait, in one batch.
    defer: bool,
    /// The thread waits in `epoll_wait` for an eventfd the ring signals,
    /// then reaps without waiting; otherwise it waits in `io_uring_enter`.
    epoll: bool,
}

impl Setup {
    /// The floor: deferred work, waiting in the ring.
    pub(super) const FLOOR: Self = Self {
        defer: true,
        epoll: false,
    };
    /// Deferred work, waiting in epoll.
    pub(super) const EPOLL: Self = Self {
        defer: true,
        epoll: true,
    };
    /// Work run on interrupt, waiting in the ring.
    pub(super) const NO_DEFER: Self = Self {
        defer: false,
        epoll: false,
    };
}

/// Starts a ring on its own thread; the function returned hands it a
/// socket.
pub(super) fn spawn(setup: Setup, shared: Shared) -> Hand {
    let (tx, rx) = mpsc::channel::<TcpStream>();
    std::thread::spawn(move || {
        let fail = |e: io::Error| crate::fail("floor-uring", &e.to_string());
        let mut ring = Ring::new(setup.defer).unwrap_or_else(&fail);
        if setup.epoll
            && let Err(e) = ring.run_in_epoll(&rx, &shared)
        {
            fail(e);
        }
        ring.run(&rx, &shared);
    });
    Box::new(move |s| {
        s.set_nodelay(true).expect("TCP_NODELAY");
        tx.send(s).expect("a ring ended");
    })
}

/// One connection.
struct Conn {
    tcp: TcpStream,
    echo: Echo,
    /// Replies produced while a send was in flight.
    out: Vec<u8>,
    /// The bytes of the send in flight (the kernel reads them until it
    /// completes), and how many of them it took so far.
    sending: Vec<u8>,
    sent: usize,
    send_busy: bool,
    recv_busy: bool,
    ending: bool,
}

/// The ring, its provided buffers, and the connections on it. Field order
/// matters: the ring drops (and with it the kernel's use of the buffers)
/// before the buffers do.
struct Ring {
    uring: IoUring,
    buffers: Provided,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    /// Connections with replies to send after this pass.
    ready: Vec<usize>,
    /// The completions of this pass, taken off the queue before they are
    /// handled (handling one pushes entries); kept to reuse its room.
    completions: Vec<cqueue::Entry>,
}

impl Ring {
    fn new(defer: bool) -> io::Result<Self> {
        let mut builder = IoUring::builder();
        if defer {
            builder.setup_single_issuer().setup_defer_taskrun();
        }
        let uring = builder.setup_cqsize(32 * 1024).build(4096)?;
        let buffers = Provided::new(&uring)?;
        Ok(Self {
            uring,
            buffers,
            conns: Vec::new(),
            free: Vec::new(),
            ready: Vec::new(),
            completions: Vec::new(),
        })
    }

    fn run(&mut self, arrivals: &mpsc::Receiver<TcpStream>, shared: &Shared) -> ! {
        let wait = types::Timespec::new().nsec(ARRIVAL_CHECK_NS);
        let args = types::SubmitArgs::new().timespec(&wait);
        loop {
            self.take_arrivals(arrivals);
            match self.uring.submitter().submit_with_args(1, &args) {
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::ETIME | libc::EINTR | libc::EBUSY)
                    ) => {}
                Err(e) => crate::fail("floor-uring", &format!("io_uring_enter: {e}")),
            }
            self.reap(shared);
        }
    }

    /// Handles every completion posted, then starts the sends they made
    /// ready; `false` if there were none.
    fn reap(&mut self, shared: &Shared) -> bool {
        let mut completions = std::mem::take(&mut self.completions);
        completions.extend(self.uring.completion());
        for cqe in &completions {
            self.complete(cqe, shared);
        }
        self.buffers.publish();
        self.send_ready();
        let any = !completions.is_empty();
        completions.clear();
        self.completions = completions;
        any
    }

    /// Adds the sockets handed to this ring since the last pass.
    fn take_arrivals(&mut self, arrivals: &mpsc::Receiver<TcpStream>) {
        while let Ok(tcp) = arrivals.try_recv() {
            self.add(tcp);
        }
    }

    /// The loop of [`Setup::EPOLL`]: the ring signals an eventfd, and the
    /// thread enters the ring only to submit and run deferred work
    /// (`GETEVENTS` without a minimum), never to wait.
    fn run_in_epoll(
        &mut self,
        arrivals: &mpsc::Receiver<TcpStream>,
        shared: &Shared,
    ) -> io::Result<()> {
        // SAFETY: no pointer arguments; the descriptor is owned at once.
        let raw = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a new descriptor nothing else owns.
        let mut signal = std::fs::File::from(unsafe { std::os::fd::OwnedFd::from_raw_fd(raw) });
        self.uring.submitter().register_eventfd(raw)?;
        let mut poll = mio::Poll::new()?;
        poll.registry().register(
            &mut mio::unix::SourceFd(&raw),
            mio::Token(0),
            mio::Interest::READABLE,
        )?;
        let mut events = mio::Events::with_capacity(8);
        let wait = std::time::Duration::from_nanos(u64::from(ARRIVAL_CHECK_NS));
        loop {
            self.take_arrivals(arrivals);
            let queued = u32::try_from(self.uring.submission().len()).unwrap_or(u32::MAX);
            // SAFETY: no argument pointer; the entries queued name live
            // memory (see `push`).
            let entered = unsafe {
                self.uring
                    .submitter()
                    .enter::<libc::sigset_t>(queued, 0, ENTER_GETEVENTS, None)
            };
            match entered {
                Ok(_) => {}
                Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EBUSY)) => {}
                Err(e) => return Err(e),
            }
            if !self.reap(shared) && self.uring.submission().is_empty() {
                poll.poll(&mut events, Some(wait))?;
                // Drained so that the next signal is an edge; the count
                // does not matter.
                let _ = std::io::Read::read(&mut signal, &mut [0; 8]);
            }
        }
    }

    fn add(&mut self, tcp: TcpStream) {
        let slot = self.free.pop().unwrap_or_else(|| {
            self.conns.push(None);
            self.conns.len() - 1
        });
        self.conns[slot] = Some(Conn {
            tcp,
            echo: Echo::default(),
            out: Vec::new(),
            sending: Vec::new(),
            sent: 0,
            send_busy: false,
            recv_busy: false,
            ending: false,
        });
        self.receive(slot);
    }

    /// Arms the connection's multishot receive.
    fn receive(&mut self, slot: usize) {
        let conn = self.conns[slot].as_mut().expect("connection");
        conn.recv_busy = true;
        let sqe = opcode::RecvMulti::new(types::Fd(conn.tcp.as_raw_fd()), GROUP)
            .build()
            .user_data(RECV | slot as u64);
        self.push(&sqe);
    }

    fn push(&mut self, sqe: &squeue::Entry) {
        loop {
            // SAFETY: what the entry names outlives the operation: a
            // receive names the socket and the provided buffers, a send
            // the socket and its connection's `sending`, and a connection
            // (socket and `sending` with it) is dropped only once neither
            // is in flight; `sending` is not touched while its send is.
            if unsafe { self.uring.submission().push(sqe) }.is_ok() {
                return;
            }
            if let Err(e) = self.uring.submit() {
                crate::fail("floor-uring", &format!("submit: {e}"));
            }
        }
    }

    fn complete(&mut self, cqe: &cqueue::Entry, shared: &Shared) {
        let slot = (cqe.user_data() & 0xffff_ffff) as usize;
        let Some(conn) = self.conns[slot].as_mut() else {
            return;
        };
        let res = cqe.result();
        if cqe.user_data() & RECV != 0 {
            let more = cqueue::more(cqe.flags());
            conn.recv_busy = more;
            if res > 0 {
                let bid = cqueue::buffer_select(cqe.flags()).expect("a receive selects a buffer");
                let open = conn.echo.feed(
                    self.buffers.filled(bid, res as usize),
                    &mut conn.out,
                    shared,
                );
                self.buffers.provide(bid);
                conn.ending |= !open;
                if !conn.out.is_empty() && !conn.send_busy {
                    self.ready.push(slot);
                }
                if !more && !conn.ending {
                    self.receive(slot);
                }
            } else if res == -libc::ENOBUFS && !conn.ending {
                self.receive(slot);
            } else {
                conn.ending = true;
            }
        } else if cqe.user_data() & SEND != 0 {
            conn.send_busy = false;
            if res > 0 {
                conn.sent += res as usize;
                if conn.sent < conn.sending.len() || !conn.out.is_empty() {
                    self.ready.push(slot);
                }
            } else {
                conn.ending = true;
            }
        }
        self.end_if_idle(slot);
    }

    /// Drops an ending connection once nothing of it is in flight.
    fn end_if_idle(&mut self, slot: usize) {
        if let Some(conn) = &self.conns[slot]
            && conn.ending
        {
            if conn.recv_busy {
                // The peer may never close: the shutdown ends the receive.
                let _ = conn.tcp.shutdown(std::net::Shutdown::Read);
            } else if !conn.send_busy {
                self.conns[slot] = None;
                self.free.push(slot);
            }
        }
    }

    /// Starts a send for each connection with replies and none in flight.
    fn send_ready(&mut self) {
        let ready = std::mem::take(&mut self.ready);
        for &slot in &ready {
            let Some(conn) = self.conns[slot].as_mut() else {
                continue;
            };
            if conn.send_busy || conn.ending {
                continue;
            }
            if conn.sent == conn.sending.len() {
                if conn.out.is_empty() {
                    continue;
                }
                conn.sending.clear();
                std::mem::swap(&mut conn.sending, &mut conn.out);
                conn.sent = 0;
            }
            let rest = &conn.sending[conn.sent..];
            let len = u32::try_from(rest.len()).unwrap_or(u32::MAX);
            let sqe = opcode::Send::new(types::Fd(conn.tcp.as_raw_fd()), rest.as_ptr(), len)
                .flags(libc::MSG_NOSIGNAL)
                .build()
                .user_data(SEND | slot as u64);
            conn.send_busy = true;
            self.push(&sqe);
        }
        self.ready = ready;
        self.ready.clear();
    }
}

/// A ring of provided buffers: `BUFFERS` entries the kernel takes buffers
/// from (one per receive completion), and the buffers, handed back once
/// their bytes were used.
struct Provided {
    entries: *mut types::BufRingEntry,
    entries_layout: Layout,
    pool: *mut u8,
    pool_layout: Layout,
    /// The tail as this thread advanced it (published in batches).
    tail: u16,
}

impl Provided {
    fn new(uring: &IoUring) -> io::Result<Self> {
        let entries_layout =
            Layout::from_size_align(usize::from(BUFFERS) * 16, 4096).map_err(io::Error::other)?;
        let pool_layout = Layout::from_size_align(usize::from(BUFFERS) * BUFFER_LEN, 64)
            .map_err(io::Error::other)?;
        // SAFETY: both layouts have a non-zero size.
        let (entries, pool) = unsafe { (alloc_zeroed(entries_layout), alloc_zeroed(pool_layout)) };
        assert!(!entries.is_null() && !pool.is_null(), "out of memory");
        let mut provided = Self {
            entries: entries.cast(),
            entries_layout,
            pool,
            pool_layout,
            tail: 0,
        };
        // SAFETY: the entries are `BUFFERS` zeroed `io_uring_buf`s,
        // page-aligned, and stay allocated until `self` drops, which is
        // after the ring (see `Ring`'s field order).
        unsafe {
            uring
                .submitter()
                .register_buf_ring(provided.entries as u64, BUFFERS, GROUP)?;
        }
        for bid in 0..BUFFERS {
            provided.provide(bid);
        }
        provided.publish();
        Ok(provided)
    }

    /// The first `len` bytes of buffer `bid`, which a receive completion
    /// just handed over.
    fn filled(&self, bid: u16, len: usize) -> &[u8] {
        assert!(
            bid < BUFFERS && len <= BUFFER_LEN,
            "the kernel named a buffer it was not given"
        );
        // SAFETY: in bounds (asserted); the kernel wrote the bytes before
        // posting the completion and does not touch the buffer again until
        // `provide` hands it back, which takes `&mut self`.
        unsafe { std::slice::from_raw_parts(self.pool.add(usize::from(bid) * BUFFER_LEN), len) }
    }

    /// Hands buffer `bid` back (seen by the kernel at the next `publish`).
    fn provide(&mut self, bid: u16) {
        let index = usize::from(self.tail & (BUFFERS - 1));
        // SAFETY: `index` < BUFFERS; the entry is past the published tail,
        // so the kernel is not reading it; the address is buffer `bid`'s.
        unsafe {
            let entry = &mut *self.entries.add(index);
            entry.set_addr(self.pool.add(usize::from(bid) * BUFFER_LEN) as u64);
            entry.set_len(BUFFER_LEN as u32);
            entry.set_bid(bid);
        }
        self.tail = self.tail.wrapping_add(1);
    }

    /// Lets the kernel see every buffer handed back so far.
    fn publish(&self) {
        // SAFETY: the tail is the `u16` at offset 14 of the first entry,
        // aligned, in the allocation; the kernel reads it concurrently,
        // hence the atomic store, and `AtomicU16` has `u16`'s layout.
        unsafe {
            let tail = types::BufRingEntry::tail(self.entries).cast_mut();
            AtomicU16::from_ptr(tail).store(self.tail, Ordering::Release);
        }
    }
}

impl Drop for Provided {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with these layouts; the ring that
        // used them dropped first.
        unsafe {
            dealloc(self.entries.cast(), self.entries_layout);
            dealloc(self.pool, self.pool_layout);
        }
    }
}
