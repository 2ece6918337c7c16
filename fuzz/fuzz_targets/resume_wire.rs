//! lockgate-fanout's `lockgate.seq.v1` wire format on arbitrary input: a
//! frame as a client decodes it, and a request's query as a node reads
//! its `since`.
//!
//! Invariants: no panic; a frame that decodes encodes back to the same
//! bytes; a `since` that parses prints back to what parses to it again,
//! with a valid epoch; decoding allocates nothing, and parsing a query at
//! most a small multiple of it.
#![no_main]

#[cfg(fuzzing)]
mod target {
    use libfuzzer_sys::fuzz_target;
    use lockgate_fanout::seq::{Sequenced, Since, is_valid_epoch};
    use lockgate_fuzz::HeapWatch;

    fuzz_target!(|data: &[u8]| {
        let watch = HeapWatch::start();
        let decoded = Sequenced::decode(data);
        watch.check(0, "nothing", data);
        if let Some(message) = decoded {
            let again = Sequenced::encode(message.position, message.kind, message.payload);
            assert_eq!(&again[..], data);
            assert_eq!(Sequenced::position_of(data), Some(message.position));
        }

        let Ok(query) = std::str::from_utf8(data) else {
            return;
        };
        let watch = HeapWatch::start();
        let since = Since::from_query(query);
        watch.check(2 * data.len() + 64, "2 x input + 64", data);
        if let Some(Ok(since)) = since {
            assert!(is_valid_epoch(since.epoch()));
            let printed = since.to_string();
            assert_eq!(printed.parse::<Since>().as_ref(), Ok(&since));
            // The position may have had leading zeros; the epoch is as sent.
            let sent = format!("since={}:", since.epoch());
            assert!(query.contains(&sent), "{query:?} gave {printed:?}");
        }
    });
}
