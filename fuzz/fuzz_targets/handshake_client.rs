//! `ClientUpgrade::receive` on arbitrary bytes in arbitrary reads (the
//! request has a fixed key, so a response can be accepted; with or without
//! a permessage-deflate offer).
//!
//! Invariants: no panic; while the head is incomplete at most 64 KiB were
//! taken; memory is bounded by the head limit and the largest read; a
//! completed handshake's leftover, or a refusal's body, is exactly the
//! bytes after the head in the reads so far; after a result or an error,
//! further calls give `AlreadyClosed`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lockgate::handshake::ClientUpgrade;
use lockgate::{Error, http};
use lockgate_fuzz::{HeapWatch, handshake_heap_bound, handshake_input, head_end};

fuzz_target!(|data: &[u8]| {
    let (shape, stream, config) = handshake_input(data);
    let request = http::Request::get("ws://example.com/chat")
        .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
        .body(())
        .expect("valid request");

    let watch = HeapWatch::start();
    let mut handshake = ClientUpgrade::with_deflate(request, config).expect("valid request");
    let mut fed = 0;
    let mut finished = false;
    for chunk in shape.chunks(&stream) {
        fed += chunk.len();
        let result = handshake.receive(chunk);
        if matches!(result, Ok(None)) {
            assert!(fed <= 64 << 10, "{fed} bytes buffered without a head");
            continue;
        }
        finished = true;
        let after_head = || {
            let end = head_end(&stream[..fed]).expect("a head was found");
            assert!(end > fed - chunk.len(), "the head ended in an earlier read");
            &stream[end..fed]
        };
        match result {
            Ok(Some(done)) => {
                assert_eq!(&done.leftover[..], after_head(), "leftover");
                assert_eq!(done.response.status(), 101);
                assert!(config.is_some() || done.deflate.is_none());
            }
            Err(Error::Http(response)) => {
                assert_ne!(response.status(), 101);
                let rest = after_head();
                assert_eq!(
                    response.body().as_deref(),
                    (!rest.is_empty()).then_some(rest)
                );
            }
            // A refused response: tungstenite's variant where it has one.
            Err(error)
                if error.handshake_failure().is_some()
                    || matches!(error, Error::Protocol(_) | Error::Capacity(_)) => {}
            other => panic!("unexpected {other:?}"),
        }
        break;
    }
    if finished {
        assert!(matches!(handshake.receive(b"x"), Err(Error::AlreadyClosed)));
    }
    let bound = handshake_heap_bound(shape.max_chunk(stream.len()));
    watch.check(bound, "handshake bound", data);
});
