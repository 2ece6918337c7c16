//! The `Sec-WebSocket-Extensions` parameter parser (through
//! `lockgate::fuzz_api`, built only with `--cfg fuzzing`) on arbitrary
//! header values: the server's negotiation of an offer and the client's
//! check of an answer.
//!
//! Invariants: no panic; whatever is agreed respects both configurations
//! (window bits 8 to 15, no larger than configured; required
//! no-context-takeover granted); an answer the server writes is accepted
//! by a client as exactly what the server agreed; a client's own offer is
//! always accepted by a server, and the answer checks out to the same
//! parameters on both ends.
#![no_main]

#[cfg(fuzzing)]
mod target {
    use libfuzzer_sys::fuzz_target;
    use lockgate::deflate::{DeflateConfig, DeflateParams};
    use lockgate::fuzz_api::{client_check_response, client_offer, server_negotiate};
    use lockgate::http::HeaderValue;
    use lockgate_fuzz::{HeapWatch, Knobs};

    /// Bits 0-2 server window bits (8 + n), bit 3 server no context
    /// takeover, bits 4-6 client window bits, bit 7 client no context
    /// takeover.
    fn config(b: u8) -> DeflateConfig {
        DeflateConfig::default()
            .server_max_window_bits(8 + (b & 7))
            .server_no_context_takeover(b & 0x08 != 0)
            .client_max_window_bits(8 + (b >> 4 & 7))
            .client_no_context_takeover(b & 0x80 != 0)
    }

    fn respects(p: &DeflateParams, c: &DeflateConfig) {
        assert!((8..=15).contains(&p.server_max_window_bits));
        assert!((8..=15).contains(&p.client_max_window_bits));
        assert!(p.server_max_window_bits <= c.get_server_max_window_bits());
        assert!(p.client_max_window_bits <= c.get_client_max_window_bits());
        assert!(p.server_no_context_takeover || !c.get_server_no_context_takeover());
        assert!(p.client_no_context_takeover || !c.get_client_no_context_takeover());
    }

    fuzz_target!(|data: &[u8]| {
        let (mut knobs, body) = Knobs::split(data, 2);
        let server = config(knobs.byte());
        let client = config(knobs.byte());
        let watch = HeapWatch::start();
        // One header field per line; fields http would refuse are dropped.
        let values: Vec<HeaderValue> = body
            .split(|&b| b == b'\n')
            .filter_map(|v| HeaderValue::from_bytes(v).ok())
            .collect();
        let permissive = DeflateConfig::default();

        if let Some((agreed, answer)) = server_negotiate(&server, &values) {
            respects(&agreed, &server);
            let checked = client_check_response(&permissive, std::slice::from_ref(&answer));
            assert_eq!(checked.ok(), Some(Some(agreed)), "answer {answer:?}");
        }
        if let Ok(Some(agreed)) = client_check_response(&client, &values) {
            respects(&agreed, &client);
        }

        let offer = client_offer(&client);
        let (agreed, answer) = server_negotiate(&server, std::slice::from_ref(&offer))
            .unwrap_or_else(|| panic!("server declined the client's own offer {offer:?}"));
        let checked = client_check_response(&client, std::slice::from_ref(&answer));
        assert_eq!(
            checked.ok(),
            Some(Some(agreed)),
            "{offer:?} answered {answer:?}"
        );

        // Each field costs a HeaderValue here and a HeaderMap entry in
        // fuzz_api (a few hundred bytes, even for an empty field); the
        // parser itself should add a small multiple of the input.
        let bound = 8 * data.len() + 512 * values.len() + (64 << 10);
        watch.check(bound, "8 x input + 512 x fields + 64 KiB", data);
    });
}
