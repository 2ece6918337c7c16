//! What a connection costs while its opening handshake waits for the
//! rest of the request: a server with thousands of slow clients (a
//! slowloris peer sends its request a byte at a time) pays this for each.
//! Measured with the counting allocator, on one thread.

use lockgate_kit as support;

use std::task::Poll;

use bytes::Bytes;
use support::{AsyncMock, CountingAlloc, HeapUse, MockStream, ReadStep, poll_once};
use tokio_lockgate::{Message, accept_async};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

const REQUEST: &[u8] = b"GET /chat HTTP/1.1\r\nHost: example.com\r\nUpgrade: websocket\r\n\
    Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
    Sec-WebSocket-Version: 13\r\n\r\n";

/// A masked text frame, "hi", from the client.
const HELLO: &[u8] = b"\x81\x82\x01\x02\x03\x04\x69\x6b";

/// The most a server connection in its handshake may hold: the accept
/// future (boxed here, as a spawned task holds it), the handshake state,
/// the head so far and the deadline's timer. The read buffer of 4 KiB it
/// once kept would break this on its own.
const BOUND: usize = 2048;

/// A stream whose reads hand out `pieces`, each followed by a read that
/// would block. The bytes are shared, so handing them out allocates
/// nothing.
fn stalling(pieces: &[&'static [u8]]) -> AsyncMock {
    let mut mock = MockStream::new();
    for piece in pieces {
        mock.reads
            .push_back(ReadStep::Shared(Bytes::from_static(piece)));
        mock.reads.push_back(ReadStep::WouldBlock);
    }
    AsyncMock(mock)
}

#[tokio::test(flavor = "current_thread")]
async fn a_handshake_waiting_for_the_rest_of_its_request_holds_at_most_2_kib() {
    let half = REQUEST.len() / 2;
    let mut mock = stalling(&[&REQUEST[..half], &REQUEST[half..]]);
    // The client's first frame follows the request at once.
    mock.0.reads.pop_back();
    mock.0
        .reads
        .push_back(ReadStep::Shared(Bytes::from_static(HELLO)));
    let heap = HeapUse::start();
    let mut accept = Box::pin(accept_async(mock));
    assert!(poll_once(accept.as_mut()).is_pending(), "half a request");
    let held = heap.now();
    assert!(held <= BOUND, "{held} bytes held mid-handshake");
    assert!(heap.peak() <= BOUND, "{} bytes at the peak", heap.peak());

    // The rest arrives: the upgrade is real.
    let Poll::Ready(Ok(mut ws)) = poll_once(accept.as_mut()) else {
        panic!("the request is complete");
    };
    assert!(
        ws.get_ref()
            .0
            .written
            .starts_with(b"HTTP/1.1 101 Switching Protocols\r\n")
    );
    let Poll::Ready(Ok(msg)) = poll_once(ws.read()) else {
        panic!("the client's first frame");
    };
    assert_eq!(msg, Message::text("hi"));
}

#[tokio::test(flavor = "current_thread")]
async fn a_request_that_arrives_a_byte_at_a_time_holds_about_what_arrived() {
    let bytes: Vec<&'static [u8]> = REQUEST.chunks(1).collect();
    let mock = stalling(&bytes);
    let heap = HeapUse::start();
    let mut accept = Box::pin(accept_async(mock));
    let mut most = 0;
    for arrived in 1..REQUEST.len() {
        assert!(poll_once(accept.as_mut()).is_pending(), "byte {arrived}");
        most = most.max(heap.now());
    }
    // No read buffer is held between reads, and the head buffer grows
    // with the head (to 256 bytes for this one).
    assert!(most <= BOUND, "{most} bytes held");
    assert!(
        matches!(poll_once(accept.as_mut()), Poll::Ready(Ok(_))),
        "the last byte completes the request"
    );
}
