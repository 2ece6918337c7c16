//! `ServerUpgrade::receive` on arbitrary bytes in arbitrary reads (with
//! or without a permessage-deflate config).
//!
//! Invariants: no panic; while the head is incomplete at most 64 KiB were
//! taken (the head limit); memory is bounded by the head limit and the
//! largest read, not by what was sent; a completed handshake's leftover is
//! exactly the bytes after the head (the first empty line) in the reads so
//! far, and its response is a 101; after a result or an error, further
//! calls give `AlreadyClosed`; every error has an HTTP answer.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lockgate::Error;
use lockgate::handshake::{NoCallback, ServerUpgrade, error_response_bytes};
use lockgate_fuzz::{HeapWatch, handshake_heap_bound, handshake_input, head_end};

fuzz_target!(|data: &[u8]| {
    let (shape, stream, config) = handshake_input(data);

    let watch = HeapWatch::start();
    let mut handshake = ServerUpgrade::with_deflate(NoCallback, config);
    let mut fed = 0;
    let mut finished = false;
    for chunk in shape.chunks(&stream) {
        fed += chunk.len();
        match handshake.receive(chunk) {
            Ok(None) => assert!(fed <= 64 << 10, "{fed} bytes buffered without a head"),
            Ok(Some(done)) => {
                finished = true;
                let end = head_end(&stream[..fed]).expect("a head was found");
                assert!(end > fed - chunk.len(), "the head ended in an earlier read");
                assert_eq!(&done.leftover[..], &stream[end..fed], "leftover");
                assert!(
                    done.response_bytes
                        .starts_with(b"HTTP/1.1 101 Switching Protocols\r\n")
                );
                assert!(done.response_bytes.ends_with(b"\r\n\r\n"));
                assert!(config.is_some() || done.deflate.is_none());
                assert_eq!(done.response.status(), 101);
                break;
            }
            Err(error)
                if error.handshake_failure().is_some()
                    || matches!(error, Error::Protocol(_) | Error::Capacity(_)) =>
            {
                finished = true;
                assert!(error_response_bytes(&error).starts_with(b"HTTP/1.1 "));
                break;
            }
            Err(other) => panic!("unexpected error {other:?}"),
        }
    }
    if finished {
        assert!(matches!(handshake.receive(b"x"), Err(Error::AlreadyClosed)));
    }
    let bound = handshake_heap_bound(shape.max_chunk(stream.len()));
    watch.check(bound, "handshake bound", data);
});
