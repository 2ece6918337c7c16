//! The HTTP proxy's side of a CONNECT: `ProxyTunnel` (an `Exchange`) on
//! arbitrary bytes in arbitrary reads, and the proxy URL and `NO_PROXY`
//! parsers on the same bytes as text.
//!
//! Invariants: no panic; while the head is incomplete at most 64 KiB were
//! taken; the tunnel opens only on a 2xx head that ends exactly where the
//! reads so far end; a refusal's body summary is one short line; after
//! the outcome, `poll` says `AlreadyClosed`; memory is bounded by the head
//! limit and the largest read.
#![no_main]

use std::time::Instant;

use libfuzzer_sys::fuzz_target;
use lockgate::handshake::{Exchange, Proxy, Step};
use lockgate::{Error, HandshakeFailure};
use lockgate_fuzz::{HeapWatch, handshake_heap_bound, handshake_input, head_end};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(proxy) = Proxy::from_url(&text) {
        assert!(!proxy.host().is_empty());
    }
    let _ = Proxy::bypasses(&text, "api.example.com", 443);
    let _ = Proxy::bypasses(&text, "10.1.2.3", 80);

    let (shape, stream, _) = handshake_input(data);
    let now = Instant::now();
    let watch = HeapWatch::start();
    let proxy = Proxy::http("http://user:pass@proxy.test:3128").expect("valid proxy");
    let mut tunnel = proxy.tunnel("example.com", 443, None, None);
    assert!(matches!(tunnel.poll(now), Step::Transmit(_)));
    let mut fed = 0;
    let mut outcome = None;
    for chunk in shape.chunks(&stream) {
        fed += chunk.len();
        tunnel.receive(chunk, now);
        match tunnel.poll(now) {
            Step::Receive { .. } => assert!(fed <= 64 << 10, "{fed} bytes without a head"),
            Step::Done(result) => {
                outcome = Some(result);
                break;
            }
            Step::Transmit(_) => panic!("the request is sent once"),
        }
    }
    let finished = outcome.is_some();
    match outcome {
        None => {}
        Some(Ok(())) => {
            let end = head_end(&stream[..fed]).expect("a head was found");
            assert_eq!(end, fed, "bytes after the proxy's answer were accepted");
        }
        Some(Err(error)) => match error.handshake_failure() {
            Some(HandshakeFailure::ProxyRefused(refusal)) => {
                assert!(!refusal.status.is_success());
                assert!(refusal.body.chars().count() <= 121, "{}", refusal.body);
                assert!(!refusal.body.contains(['\r', '\n']));
            }
            Some(_) => {}
            None => panic!("unexpected {error:?}"),
        },
    }
    if finished {
        assert!(matches!(
            tunnel.poll(now),
            Step::Done(Err(Error::AlreadyClosed))
        ));
    }
    let bound = handshake_heap_bound(shape.max_chunk(stream.len()));
    watch.check(bound, "proxy tunnel bound", data);
});
