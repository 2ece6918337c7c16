//! What a read costs the runtime while it waits: clock reads and timer
//! polls, counted on a runtime whose clock and timer count their use. A
//! connection with keepalive (the default) waits with a deadline; once its
//! timer is armed for that deadline, a wait that finds it unchanged needs
//! no clock, only the timer's poll.

use std::cell::Cell;
use std::future::Future;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use lockgate::frame::{FrameHeader, MAX_HEADER_LEN, OpCode, apply_mask};
use lockgate::{Config, Message, Role, WebSocketContext};

use super::Core;
use crate::runtime::{ReadTransport, Runtime, WriteTransport};

thread_local! {
    /// The test's clock: only the test moves it.
    static NOW: Cell<Option<Instant>> = const { Cell::new(None) };
    static CLOCK_READS: Cell<u32> = const { Cell::new(0) };
    static TIMER_POLLS: Cell<u32> = const { Cell::new(0) };
}

fn now() -> Instant {
    NOW.with(|now| *now.get().get_or_insert_with(Instant::now))
}

fn advance(by: Duration) {
    NOW.with(|now| now.set(Some(self::now() + by)));
}

/// A runtime whose clock is the test's and whose timer completes once the
/// test's clock reached it; both count their use.
struct Counting;

struct TestTimer {
    at: Instant,
}

impl Future for TestTimer {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        TIMER_POLLS.with(|n| n.set(n.get() + 1));
        if now() >= self.at {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl Runtime for Counting {
    type Timer = TestTimer;

    fn now() -> Instant {
        CLOCK_READS.with(|n| n.set(n.get() + 1));
        now()
    }

    fn timer_at(at: Instant) -> Option<TestTimer> {
        Some(TestTimer { at })
    }

    fn deadline(timer: &TestTimer) -> Instant {
        timer.at
    }

    fn reset(mut timer: Pin<&mut TestTimer>, at: Instant) {
        timer.at = at;
    }
}

/// A stream the test fills: pending while it holds nothing to read;
/// writes are kept.
#[derive(Default)]
struct Script {
    input: Vec<u8>,
    written: Vec<u8>,
}

impl ReadTransport<Script> for Counting {
    fn poll_receive(
        stream: Pin<&mut Script>,
        _: &mut Context<'_>,
        context: &mut WebSocketContext,
    ) -> Poll<io::Result<usize>> {
        let stream = stream.get_mut();
        if stream.input.is_empty() {
            return Poll::Pending;
        }
        context.feed(&stream.input);
        let n = stream.input.len();
        stream.input.clear();
        Poll::Ready(Ok(n))
    }

    fn poll_read(
        _: Pin<&mut Script>,
        _: &mut Context<'_>,
        _: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        unreachable!("no handshake here")
    }
}

impl WriteTransport<Script> for Counting {
    fn poll_write(
        stream: Pin<&mut Script>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        stream.get_mut().written.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_write_vectored(
        stream: Pin<&mut Script>,
        _: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let stream = stream.get_mut();
        let before = stream.written.len();
        for buf in bufs {
            stream.written.extend_from_slice(buf);
        }
        Poll::Ready(Ok(stream.written.len() - before))
    }

    fn poll_flush(_: Pin<&mut Script>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(_: Pin<&mut Script>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// A client's masked text frame.
fn client_text(text: &str) -> Vec<u8> {
    let mask = [1, 2, 3, 4];
    let mut header = FrameHeader::new(OpCode::Text, text.len() as u64);
    header.mask = Some(mask);
    let mut head = [0; MAX_HEADER_LEN];
    let n = header.encode(&mut head);
    let mut frame = head[..n].to_vec();
    let start = frame.len();
    frame.extend_from_slice(text.as_bytes());
    apply_mask(&mut frame[start..], mask);
    frame
}

/// The clock reads and timer polls of `waits` echoes: a read that waits,
/// a message that arrives, the echo written and flushed.
fn echo(core: &mut Core<Script, Counting>, waits: u32) -> (u32, u32) {
    let waker = Waker::noop();
    let mut cx = Context::from_waker(waker);
    let mut wcx = Context::from_waker(waker);
    let reads = CLOCK_READS.with(Cell::get);
    let polls = TIMER_POLLS.with(Cell::get);
    for i in 0..waits {
        assert!(
            core.poll_read(&mut cx, &mut wcx).is_pending(),
            "nothing sent yet"
        );
        core.stream.input = client_text(&format!("message {i}"));
        let Poll::Ready(Ok(msg)) = core.poll_read(&mut cx, &mut wcx) else {
            panic!("the message arrived");
        };
        assert_eq!(msg, Message::text(format!("message {i}")));
        core.context.write(msg).expect("room to echo");
        assert!(
            core.poll_flush(&mut wcx).is_ready(),
            "the script takes it all"
        );
        advance(Duration::from_millis(1));
    }
    (
        CLOCK_READS.with(Cell::get) - reads,
        TIMER_POLLS.with(Cell::get) - polls,
    )
}

#[test]
fn a_wait_for_an_unchanged_deadline_reads_no_clock() {
    let config = Config::default()
        .ping_interval(Some(Duration::from_secs(20)))
        .ping_timeout(Some(Duration::from_secs(20)));
    let mut core = Core::<_, Counting>::new(
        Script::default(),
        WebSocketContext::new(Role::Server, config),
    );
    // The first wait arms the keepalive deadline and the timer.
    let (reads, polls) = echo(&mut core, 1);
    assert!(
        reads >= 1 && polls >= 1,
        "{reads} clock reads, {polls} polls"
    );
    let (reads, polls) = echo(&mut core, 100);
    println!("100 echoes: {reads} clock reads, {polls} timer polls");
    assert_eq!(reads, 0, "clock reads");
    // Each wait polls the timer once: nothing else tells whether it fired
    // since the last wait.
    assert_eq!(polls, 100, "timer polls");
}

#[test]
fn the_deadline_still_fires_and_the_ping_goes_out() {
    let config = Config::default()
        .ping_interval(Some(Duration::from_secs(20)))
        .ping_timeout(Some(Duration::from_secs(20)));
    let mut core = Core::<_, Counting>::new(
        Script::default(),
        WebSocketContext::new(Role::Server, config),
    );
    echo(&mut core, 3);
    let waker = Waker::noop();
    let mut cx = Context::from_waker(waker);
    let mut wcx = Context::from_waker(waker);
    // Heard from within the first interval: the next one starts; silent
    // through that one: the keepalive ping goes out.
    core.stream.written.clear();
    for _ in 0..2 {
        advance(Duration::from_secs(21));
        assert!(core.poll_read(&mut cx, &mut wcx).is_pending());
    }
    assert_eq!(core.stream.written.first(), Some(&0x89), "a ping went out");
    // And unanswered, the keepalive times out.
    advance(Duration::from_secs(21));
    let Poll::Ready(Err(error)) = core.poll_read(&mut cx, &mut wcx) else {
        panic!("the keepalive timed out");
    };
    assert_eq!(error.timeout(), Some(lockgate::TimeoutKind::Keepalive));
}
