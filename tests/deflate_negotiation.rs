//! permessage-deflate negotiation (RFC 7692 section 7.1) through the public
//! sans-IO handshake: the client's offer, the server's choice among offers,
//! the client's check of the answer, and complete handshakes between the
//! two.
//!
//! Needs the `deflate` feature (`required-features` in Cargo.toml): without
//! it nothing is negotiated, see `deflate_messages.rs`.

#![allow(
    clippy::result_large_err,
    reason = "callbacks return ErrorResponse by value"
)]

use http::header::{HeaderValue, SEC_WEBSOCKET_EXTENSIONS};
use http::{Request, Response, StatusCode};
use lockgate::deflate::{DeflateConfig, DeflateParams};
use lockgate::handshake::{
    Callback, ClientUpgrade, ClientUpgradeDone, NoCallback, OriginPolicy, ServerUpgrade,
    ServerUpgradeDone, error_response_bytes, upgrade_response, upgrade_response_with_deflate,
};
use lockgate::{Error, HandshakeFailure, Role};

/// The key of RFC 6455 section 1.3.
const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

/// A valid upgrade request head without its final empty line.
const REQUEST_HEAD: &str = "GET /chat HTTP/1.1\r\n\
                            Host: example.com\r\n\
                            Upgrade: websocket\r\n\
                            Connection: Upgrade\r\n\
                            Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
                            Sec-WebSocket-Version: 13\r\n";

/// A valid 101 for [`KEY`] without its final empty line.
const RESPONSE_HEAD: &str = "HTTP/1.1 101 Switching Protocols\r\n\
                             Upgrade: websocket\r\n\
                             Connection: Upgrade\r\n\
                             Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n";

fn params(snct: bool, cnct: bool, smwb: u8, cmwb: u8) -> DeflateParams {
    DeflateParams {
        server_no_context_takeover: snct,
        client_no_context_takeover: cnct,
        server_max_window_bits: smwb,
        client_max_window_bits: cmwb,
    }
}

fn handshake_error<T: std::fmt::Debug>(result: Result<T, Error>) -> HandshakeFailure {
    match result.map_err(Error::into_detail) {
        Err(Ok(lockgate::Detail::Handshake(error))) => error,
        other => panic!("expected a handshake error, got {other:?}"),
    }
}

/// The request with one `Sec-WebSocket-Extensions` field per element of
/// `offers`.
fn request_offering(offers: &[&str]) -> String {
    let mut request = REQUEST_HEAD.to_owned();
    for offer in offers {
        request.push_str(&format!("Sec-WebSocket-Extensions: {offer}\r\n"));
    }
    request.push_str("\r\n");
    request
}

/// Runs a server handshake with `config` on a request offering `offers`.
fn serve(config: Option<DeflateConfig>, offers: &[&str]) -> ServerUpgradeDone {
    ServerUpgrade::with_deflate(NoCallback, config)
        .receive(request_offering(offers).as_bytes())
        .unwrap()
        .expect("complete")
}

/// The server's parameters and `Sec-WebSocket-Extensions` answer for a
/// request offering `offers`, checking that they agree with the bytes.
fn negotiate(config: DeflateConfig, offers: &[&str]) -> Option<(DeflateParams, String)> {
    let done = serve(Some(config), offers);
    let answers: Vec<&HeaderValue> = done
        .response
        .headers()
        .get_all(SEC_WEBSOCKET_EXTENSIONS)
        .iter()
        .collect();
    let bytes = String::from_utf8(done.response_bytes.clone()).unwrap();
    match (done.deflate, answers.as_slice()) {
        (None, []) => {
            assert!(!bytes.contains("Sec-WebSocket-Extensions"), "{bytes}");
            None
        }
        (Some(params), [answer]) => {
            let answer = answer.to_str().unwrap().to_owned();
            assert!(
                bytes.contains(&format!("\r\nSec-WebSocket-Extensions: {answer}\r\n")),
                "{bytes}"
            );
            Some((params, answer))
        }
        other => panic!("params and header disagree: {other:?}"),
    }
}

/// A client handshake with the RFC key offering deflate with `config`.
fn deflate_client(config: DeflateConfig) -> ClientUpgrade {
    let request = Request::get("ws://example.com/chat")
        .header("Sec-WebSocket-Key", KEY)
        .body(())
        .unwrap();
    ClientUpgrade::with_deflate(request, Some(config)).unwrap()
}

/// What a client with `config` makes of a 101 carrying `answers` as
/// `Sec-WebSocket-Extensions` fields.
fn client_sees(
    config: DeflateConfig,
    answers: &[&str],
) -> Result<Option<ClientUpgradeDone>, Error> {
    let mut response = RESPONSE_HEAD.to_owned();
    for answer in answers {
        response.push_str(&format!("Sec-WebSocket-Extensions: {answer}\r\n"));
    }
    response.push_str("\r\n");
    deflate_client(config).receive(response.as_bytes())
}

fn client_params(config: DeflateConfig, answers: &[&str]) -> Option<DeflateParams> {
    client_sees(config, answers)
        .unwrap()
        .expect("complete")
        .deflate
}

fn client_failure(config: DeflateConfig, answers: &[&str]) -> &'static str {
    match handshake_error(client_sees(config, answers)) {
        HandshakeFailure::BadResponse(message) => message,
        other => panic!("{answers:?}: expected BadResponse, got {other:?}"),
    }
}

/// Client and server talking through memory; returns both results.
fn pair(
    client: ClientUpgrade,
    mut server: ServerUpgrade<impl Callback>,
) -> (ClientUpgradeDone, ServerUpgradeDone) {
    let mut client = client;
    let accepted = server
        .receive(client.request_bytes())
        .unwrap()
        .expect("complete request");
    let opened = client
        .receive(&accepted.response_bytes)
        .unwrap()
        .expect("complete response");
    (opened, accepted)
}

// ---------------------------------------------------------------- offers

#[test]
fn client_offers_for_several_configs() {
    let offer = |config: DeflateConfig| {
        let handshake = ClientUpgrade::with_deflate("ws://example.com/", Some(config)).unwrap();
        let value = handshake.request().headers()[SEC_WEBSOCKET_EXTENSIONS]
            .to_str()
            .unwrap()
            .to_owned();
        let bytes = std::str::from_utf8(handshake.request_bytes()).unwrap();
        assert!(
            bytes.contains(&format!("\r\nSec-WebSocket-Extensions: {value}\r\n")),
            "{bytes}"
        );
        value
    };
    assert_eq!(
        offer(DeflateConfig::default()),
        "permessage-deflate; client_max_window_bits"
    );
    assert_eq!(
        offer(DeflateConfig::default().client_max_window_bits(8)),
        "permessage-deflate; client_max_window_bits=8"
    );
    assert_eq!(
        offer(DeflateConfig::default().server_max_window_bits(11)),
        "permessage-deflate; client_max_window_bits; server_max_window_bits=11"
    );
    assert_eq!(
        offer(DeflateConfig::default().server_no_context_takeover(true)),
        "permessage-deflate; client_max_window_bits; server_no_context_takeover"
    );
    assert_eq!(
        offer(DeflateConfig::default().client_no_context_takeover(true)),
        "permessage-deflate; client_max_window_bits; client_no_context_takeover"
    );
    // Settings that do not take part in negotiation change nothing.
    assert_eq!(
        offer(
            DeflateConfig::default()
                .compression_level(9)
                .mem_level(1)
                .min_compress_size(0)
        ),
        "permessage-deflate; client_max_window_bits"
    );
}

#[test]
fn no_config_offers_nothing() {
    let plain = ClientUpgrade::new("ws://example.com/").unwrap();
    let none = ClientUpgrade::with_deflate("ws://example.com/", None).unwrap();
    for handshake in [plain, none] {
        assert!(
            !handshake
                .request()
                .headers()
                .contains_key(SEC_WEBSOCKET_EXTENSIONS)
        );
    }
}

#[test]
fn a_hand_written_extension_header_conflicts_with_a_deflate_config() {
    let request = || {
        Request::get("ws://example.com/")
            .header("Sec-WebSocket-Extensions", "permessage-deflate")
            .body(())
            .unwrap()
    };
    let result = ClientUpgrade::with_deflate(request(), Some(DeflateConfig::default()));
    assert!(
        matches!(
            result.as_ref().err().and_then(Error::detail),
            Some(lockgate::Detail::InvalidUrl(_))
        ),
        "{result:?}"
    );
    // Without a config the header is sent as given (and any acceptance
    // fails the handshake, as before).
    let handshake = ClientUpgrade::with_deflate(request(), None).unwrap();
    assert_eq!(
        handshake.request().headers()[SEC_WEBSOCKET_EXTENSIONS],
        "permessage-deflate"
    );
}

// ---------------------------------------------------------------- server

#[test]
fn server_accepts_a_plain_offer() {
    let (params, answer) =
        negotiate(DeflateConfig::default(), &["permessage-deflate"]).expect("accepted");
    assert_eq!(params, DeflateParams::default());
    assert_eq!(answer, "permessage-deflate");
}

#[test]
fn server_answers_each_parameter() {
    let cases = [
        (
            "permessage-deflate; server_no_context_takeover",
            params(true, false, 15, 15),
            "permessage-deflate; server_no_context_takeover",
        ),
        (
            "permessage-deflate; client_no_context_takeover",
            params(false, true, 15, 15),
            "permessage-deflate; client_no_context_takeover",
        ),
        (
            "permessage-deflate; server_max_window_bits=12",
            params(false, false, 12, 15),
            "permessage-deflate; server_max_window_bits=12",
        ),
        (
            "permessage-deflate; server_max_window_bits=8",
            params(false, false, 8, 15),
            "permessage-deflate; server_max_window_bits=8",
        ),
        (
            "permessage-deflate; client_max_window_bits",
            params(false, false, 15, 15),
            "permessage-deflate",
        ),
        (
            "permessage-deflate; client_max_window_bits=9",
            params(false, false, 15, 9),
            "permessage-deflate; client_max_window_bits=9",
        ),
        // What browsers send.
        (
            "permessage-deflate; client_max_window_bits",
            params(false, false, 15, 15),
            "permessage-deflate",
        ),
    ];
    for (offer, expected, answer) in cases {
        let (p, a) = negotiate(DeflateConfig::default(), &[offer]).expect(offer);
        assert_eq!(p, expected, "{offer}");
        assert_eq!(a, answer, "{offer}");
    }
}

#[test]
fn server_accepts_quoted_values() {
    let (p, answer) = negotiate(
        DeflateConfig::default(),
        &["permessage-deflate; client_max_window_bits=\"10\"; server_max_window_bits = \"11\""],
    )
    .expect("accepted");
    assert_eq!(p, params(false, false, 11, 10));
    assert_eq!(
        answer,
        "permessage-deflate; server_max_window_bits=11; client_max_window_bits=10"
    );
}

#[test]
fn server_config_limits_and_requirements() {
    let config = DeflateConfig::default()
        .server_max_window_bits(10)
        .client_max_window_bits(12)
        .server_no_context_takeover(true)
        .client_no_context_takeover(true);
    let (p, answer) =
        negotiate(config, &["permessage-deflate; client_max_window_bits"]).expect("accepted");
    assert_eq!(p, params(true, true, 10, 12));
    assert_eq!(
        answer,
        "permessage-deflate; server_no_context_takeover; client_no_context_takeover; \
         server_max_window_bits=10; client_max_window_bits=12"
    );
    // A client limit below ours wins; a server limit above ours does not.
    let (p, _) = negotiate(
        config,
        &["permessage-deflate; client_max_window_bits=9; server_max_window_bits=14"],
    )
    .expect("accepted");
    assert_eq!(p, params(true, true, 10, 9));
    // The client's window can only be limited if it offered the parameter.
    assert_eq!(negotiate(config, &["permessage-deflate"]), None);
}

#[test]
fn server_takes_the_first_acceptable_offer() {
    let config = DeflateConfig::default();
    // Several offers in one field.
    let (p, _) = negotiate(
        config,
        &["permessage-deflate; server_max_window_bits=9, permessage-deflate"],
    )
    .unwrap();
    assert_eq!(p, params(false, false, 9, 15));
    // Across fields.
    let (p, _) = negotiate(
        config,
        &[
            "permessage-deflate; server_no_context_takeover",
            "permessage-deflate; server_max_window_bits=9",
        ],
    )
    .unwrap();
    assert_eq!(p, params(true, false, 15, 15));
    // An invalid first offer is skipped, in one field or across fields.
    let (p, _) = negotiate(
        config,
        &["permessage-deflate; server_max_window_bits=7, permessage-deflate; client_no_context_takeover"],
    )
    .unwrap();
    assert_eq!(p, params(false, true, 15, 15));
    let (p, _) = negotiate(
        config,
        &[
            "permessage-deflate; foo=bar",
            "permessage-deflate; server_max_window_bits=13",
        ],
    )
    .unwrap();
    assert_eq!(p, params(false, false, 13, 15));
    // An offer the config cannot honour is skipped.
    let (p, _) = negotiate(
        config.client_max_window_bits(11),
        &["permessage-deflate, permessage-deflate; client_max_window_bits"],
    )
    .unwrap();
    assert_eq!(p, params(false, false, 15, 11));
}

#[test]
fn server_skips_other_extensions() {
    let (p, answer) = negotiate(
        DeflateConfig::default(),
        &[
            "x-webkit-deflate-frame, foo; bar=\"a, permessage-deflate\"",
            "permessage-deflate; client_no_context_takeover",
        ],
    )
    .unwrap();
    assert_eq!(p, params(false, true, 15, 15));
    assert_eq!(answer, "permessage-deflate; client_no_context_takeover");
    assert_eq!(
        negotiate(DeflateConfig::default(), &["x-webkit-deflate-frame"]),
        None
    );
}

#[test]
fn server_declines_malformed_offers() {
    for offer in [
        "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
        "permessage-deflate; server_max_window_bits=10; server_max_window_bits=10",
        "permessage-deflate; unknown_parameter",
        "permessage-deflate; client_no_context_takeover=true",
        "permessage-deflate; server_max_window_bits=7",
        "permessage-deflate; server_max_window_bits=16",
        "permessage-deflate; server_max_window_bits=abc",
        "permessage-deflate; server_max_window_bits=\"abc\"",
        "permessage-deflate; server_max_window_bits=09",
        "permessage-deflate; server_max_window_bits",
        "permessage-deflate; client_max_window_bits=7",
        "permessage-deflate; client_max_window_bits=16",
        "permessage-deflate; client_max_window_bits=abc",
        "permessage-deflate; client_max_window_bits=\"10",
        "permessage-deflate;;",
    ] {
        assert_eq!(
            negotiate(DeflateConfig::default(), &[offer]),
            None,
            "{offer}"
        );
    }
}

#[test]
fn server_without_config_declines_every_offer() {
    let done = serve(None, &["permessage-deflate; client_max_window_bits"]);
    assert_eq!(done.deflate, None);
    assert!(
        !done
            .response
            .headers()
            .contains_key(SEC_WEBSOCKET_EXTENSIONS)
    );
    let done = ServerUpgrade::new(NoCallback)
        .receive(request_offering(&["permessage-deflate"]).as_bytes())
        .unwrap()
        .unwrap();
    assert_eq!(done.deflate, None);
    assert!(
        !done
            .response
            .headers()
            .contains_key(SEC_WEBSOCKET_EXTENSIONS)
    );
}

// ---------------------------------------------------------------- client

#[test]
fn client_accepts_valid_answers() {
    let config = DeflateConfig::default();
    assert_eq!(client_params(config, &[]), None);
    assert_eq!(
        client_params(config, &["permessage-deflate"]),
        Some(DeflateParams::default())
    );
    assert_eq!(
        client_params(
            config,
            &[
                "permessage-deflate;server_no_context_takeover;client_no_context_takeover;\
               server_max_window_bits=8;client_max_window_bits=\"9\""
            ]
        ),
        Some(params(true, true, 8, 9))
    );
    // What we asked for applies, echoed or not (client side).
    let asked = DeflateConfig::default()
        .client_max_window_bits(10)
        .client_no_context_takeover(true)
        .server_max_window_bits(12);
    assert_eq!(
        client_params(asked, &["permessage-deflate; server_max_window_bits=12"]),
        Some(params(false, true, 12, 10))
    );
}

#[test]
fn client_rejects_invalid_answers() {
    let config = DeflateConfig::default();
    let cases: &[(&[&str], &str)] = &[
        (
            &["x-webkit-deflate-frame"],
            "the server accepted an extension that was not offered",
        ),
        (
            &["permessage-deflate", "x-foo"],
            "the server accepted an extension that was not offered",
        ),
        (
            &["permessage-deflate, permessage-deflate"],
            "the server accepted permessage-deflate more than once",
        ),
        (
            &["permessage-deflate", "permessage-deflate"],
            "the server accepted permessage-deflate more than once",
        ),
        (
            &["permessage-deflate; foo"],
            "permessage-deflate: unknown parameter",
        ),
        (
            &["permessage-deflate; client_no_context_takeover; client_no_context_takeover"],
            "permessage-deflate: a parameter appears twice",
        ),
        (
            &["permessage-deflate; server_no_context_takeover=yes"],
            "permessage-deflate: a no_context_takeover parameter has a value",
        ),
        (
            &["permessage-deflate; server_max_window_bits"],
            "permessage-deflate: server_max_window_bits needs a value",
        ),
        (
            &["permessage-deflate; client_max_window_bits"],
            "permessage-deflate: client_max_window_bits in a response needs a value",
        ),
        (
            &["permessage-deflate; server_max_window_bits=7"],
            "permessage-deflate: window bits must be an integer from 8 to 15",
        ),
        (
            &["permessage-deflate; client_max_window_bits=16"],
            "permessage-deflate: window bits must be an integer from 8 to 15",
        ),
        (
            &["permessage-deflate; client_max_window_bits=ten"],
            "permessage-deflate: window bits must be an integer from 8 to 15",
        ),
        (
            &["permessage-deflate; client_max_window_bits=\"1\"0"],
            "malformed Sec-WebSocket-Extensions",
        ),
    ];
    for (answers, expected) in cases {
        assert_eq!(client_failure(config, answers), *expected, "{answers:?}");
    }

    let limited = DeflateConfig::default()
        .server_max_window_bits(10)
        .client_max_window_bits(10);
    assert_eq!(
        client_failure(limited, &["permessage-deflate; server_max_window_bits=11"]),
        "permessage-deflate: server_max_window_bits is larger than requested"
    );
    assert_eq!(
        client_failure(
            limited,
            &["permessage-deflate; server_max_window_bits=10; client_max_window_bits=12"]
        ),
        "permessage-deflate: client_max_window_bits is larger than offered"
    );
    assert_eq!(
        client_failure(limited, &["permessage-deflate"]),
        "permessage-deflate: server_max_window_bits was requested but not answered"
    );
    assert_eq!(
        client_failure(
            DeflateConfig::default().server_no_context_takeover(true),
            &["permessage-deflate"]
        ),
        "permessage-deflate: server_no_context_takeover was requested but not granted"
    );
}

#[test]
fn plain_client_still_rejects_any_extension() {
    let mut client = ClientUpgrade::new(
        Request::get("ws://example.com/")
            .header("Sec-WebSocket-Key", KEY)
            .body(())
            .unwrap(),
    )
    .unwrap();
    let response = format!("{RESPONSE_HEAD}Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n");
    let error = handshake_error(client.receive(response.as_bytes()));
    assert!(
        matches!(error, HandshakeFailure::BadResponse(_)),
        "{error:?}"
    );
}

// ---------------------------------------------------------------- both ends

#[test]
fn both_ends_agree_for_every_pair_of_configs() {
    let configs = [
        DeflateConfig::default(),
        DeflateConfig::default().server_no_context_takeover(true),
        DeflateConfig::default().client_no_context_takeover(true),
        DeflateConfig::default().server_max_window_bits(8),
        DeflateConfig::default().server_max_window_bits(12),
        DeflateConfig::default().client_max_window_bits(8),
        DeflateConfig::default().client_max_window_bits(13),
        DeflateConfig::default()
            .server_no_context_takeover(true)
            .client_no_context_takeover(true)
            .server_max_window_bits(9)
            .client_max_window_bits(10),
    ];
    for client_config in configs {
        for server_config in configs {
            let client = ClientUpgrade::with_deflate("ws://x/", Some(client_config)).unwrap();
            let server = ServerUpgrade::with_deflate(NoCallback, Some(server_config));
            let (opened, accepted) = pair(client, server);
            let agreed = accepted.deflate.expect("our offer is always acceptable");
            assert_eq!(opened.deflate, Some(agreed));
            // Each side's limits hold.
            let c = client_config;
            let s = server_config;
            assert_eq!(
                agreed.server_max_window_bits,
                c.get_server_max_window_bits()
                    .min(s.get_server_max_window_bits())
            );
            assert_eq!(
                agreed.client_max_window_bits,
                c.get_client_max_window_bits()
                    .min(s.get_client_max_window_bits())
            );
            assert_eq!(
                agreed.server_no_context_takeover,
                c.get_server_no_context_takeover() || s.get_server_no_context_takeover()
            );
            assert_eq!(
                agreed.client_no_context_takeover,
                c.get_client_no_context_takeover() || s.get_client_no_context_takeover()
            );
            // What one end compresses with, the other decompresses with.
            assert_eq!(
                agreed.compress_window_bits(Role::Server),
                agreed.decompress_window_bits(Role::Client)
            );
            assert_eq!(
                agreed.compress_no_context_takeover(Role::Client),
                agreed.decompress_no_context_takeover(Role::Server)
            );
        }
    }
}

#[test]
fn deflate_on_one_side_only_is_declined() {
    // Client offers, server has no config: declined on both ends.
    let client = ClientUpgrade::with_deflate("ws://x/", Some(DeflateConfig::default())).unwrap();
    let (opened, accepted) = pair(client, ServerUpgrade::new(NoCallback));
    assert_eq!((opened.deflate, accepted.deflate), (None, None));
    assert!(
        !opened
            .response
            .headers()
            .contains_key(SEC_WEBSOCKET_EXTENSIONS)
    );
    // Server accepts, client offers nothing.
    let client = ClientUpgrade::new("ws://x/").unwrap();
    let server = ServerUpgrade::with_deflate(NoCallback, Some(DeflateConfig::default()));
    let (opened, accepted) = pair(client, server);
    assert_eq!((opened.deflate, accepted.deflate), (None, None));
}

#[test]
fn server_requirement_the_client_cannot_meet_is_declined() {
    // Our client always offers client_max_window_bits, so a server limit on
    // the client's window is always acceptable to it...
    let client = ClientUpgrade::with_deflate("ws://x/", Some(DeflateConfig::default())).unwrap();
    let server = ServerUpgrade::with_deflate(
        NoCallback,
        Some(DeflateConfig::default().client_max_window_bits(9)),
    );
    let (opened, accepted) = pair(client, server);
    assert_eq!(opened.deflate, Some(params(false, false, 15, 9)));
    assert_eq!(accepted.deflate, opened.deflate);
    // ...but not to a client that did not offer it.
    let done = ServerUpgrade::with_deflate(
        NoCallback,
        Some(DeflateConfig::default().client_max_window_bits(9)),
    )
    .receive(request_offering(&["permessage-deflate"]).as_bytes())
    .unwrap()
    .unwrap();
    assert_eq!(done.deflate, None);
}

#[test]
fn callback_sees_the_answer_and_may_remove_it() {
    let seen = std::cell::Cell::new(false);
    let decline = |_: &Request<()>, mut response: Response<()>| {
        assert_eq!(
            response.headers()[SEC_WEBSOCKET_EXTENSIONS],
            "permessage-deflate"
        );
        seen.set(true);
        response.headers_mut().remove(SEC_WEBSOCKET_EXTENSIONS);
        Ok(response)
    };
    let client = ClientUpgrade::with_deflate("ws://x/", Some(DeflateConfig::default())).unwrap();
    let server = ServerUpgrade::with_deflate(decline, Some(DeflateConfig::default()));
    let (opened, accepted) = pair(client, server);
    assert!(seen.get());
    assert_eq!((opened.deflate, accepted.deflate), (None, None));
    let bytes = String::from_utf8(accepted.response_bytes).unwrap();
    assert!(!bytes.contains("Sec-WebSocket-Extensions"), "{bytes}");
}

#[test]
fn callback_keeping_the_answer_changes_nothing() {
    let keep = |_: &Request<()>, mut response: Response<()>| {
        response
            .headers_mut()
            .insert("x-extra", HeaderValue::from_static("1"));
        Ok(response)
    };
    let config = DeflateConfig::default().server_max_window_bits(10);
    let client = ClientUpgrade::with_deflate("ws://x/", Some(config)).unwrap();
    let server = ServerUpgrade::with_deflate(keep, Some(config));
    let (opened, accepted) = pair(client, server);
    assert_eq!(accepted.deflate, Some(params(false, false, 10, 15)));
    assert_eq!(opened.deflate, accepted.deflate);
}

#[test]
fn callback_may_not_change_or_invent_the_answer() {
    let request = request_offering(&["permessage-deflate; client_max_window_bits"]);
    let set = |value: &'static str| {
        move |_: &Request<()>, mut response: Response<()>| {
            response
                .headers_mut()
                .insert(SEC_WEBSOCKET_EXTENSIONS, HeaderValue::from_static(value));
            Ok(response)
        }
    };
    let append = |_: &Request<()>, mut response: Response<()>| {
        response.headers_mut().append(
            SEC_WEBSOCKET_EXTENSIONS,
            HeaderValue::from_static("permessage-deflate"),
        );
        Ok(response)
    };
    let errors = [
        // Changed parameters.
        handshake_error(
            ServerUpgrade::with_deflate(
                set("permessage-deflate; server_no_context_takeover"),
                Some(DeflateConfig::default()),
            )
            .receive(request.as_bytes()),
        ),
        // Repeated.
        handshake_error(
            ServerUpgrade::with_deflate(append, Some(DeflateConfig::default()))
                .receive(request.as_bytes()),
        ),
        // Invented: nothing was negotiated.
        handshake_error(
            ServerUpgrade::with_deflate(set("permessage-deflate"), None)
                .receive(request.as_bytes()),
        ),
        handshake_error(
            ServerUpgrade::with_deflate(set("permessage-deflate"), Some(DeflateConfig::default()))
                .receive(request_offering(&[]).as_bytes()),
        ),
    ];
    for error in errors {
        assert!(
            matches!(error, HandshakeFailure::InvalidCallbackResponse(_)),
            "{error:?}"
        );
        assert_eq!(error.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(error_response_bytes(&Error::from(error)).starts_with(b"HTTP/1.1 500 "));
    }
}

// ---------------------------------------------------------------- HTTP servers

fn http_request(offers: &[&str]) -> Request<()> {
    let mut request = Request::get("/ws")
        .header("host", "example.com")
        .header("upgrade", "websocket")
        .header("connection", "Upgrade")
        .header("sec-websocket-version", "13")
        .header("sec-websocket-key", KEY);
    for offer in offers {
        request = request.header("sec-websocket-extensions", *offer);
    }
    request.body(()).unwrap()
}

#[test]
fn upgrade_response_with_deflate_negotiates() {
    let config = DeflateConfig::default().server_no_context_takeover(true);
    let request = http_request(&[
        "permessage-deflate; server_max_window_bits=5",
        "permessage-deflate; client_max_window_bits=10",
    ]);
    let origin = OriginPolicy::default();
    let (response, deflate) =
        upgrade_response_with_deflate(&request, Some(&config), &origin).unwrap();
    assert_eq!(response.status(), StatusCode::SWITCHING_PROTOCOLS);
    assert_eq!(deflate, Some(params(true, false, 15, 10)));
    assert_eq!(
        response.headers()[SEC_WEBSOCKET_EXTENSIONS],
        "permessage-deflate; server_no_context_takeover; client_max_window_bits=10"
    );

    // The answer is one a lockgate client with the same view accepts.
    let client_config = DeflateConfig::default().client_max_window_bits(10);
    let answer = response.headers()[SEC_WEBSOCKET_EXTENSIONS]
        .to_str()
        .unwrap();
    assert_eq!(client_params(client_config, &[answer]), deflate);

    // Without a config, or with the plain function, nothing is accepted.
    let (response, deflate) = upgrade_response_with_deflate(&request, None, &origin).unwrap();
    assert_eq!(deflate, None);
    assert!(!response.headers().contains_key(SEC_WEBSOCKET_EXTENSIONS));
    let response = upgrade_response(&request).unwrap();
    assert!(!response.headers().contains_key(SEC_WEBSOCKET_EXTENSIONS));

    // No acceptable offer: a plain 101.
    let (response, deflate) =
        upgrade_response_with_deflate(&http_request(&["x-foo"]), Some(&config), &origin).unwrap();
    assert_eq!(deflate, None);
    assert!(!response.headers().contains_key(SEC_WEBSOCKET_EXTENSIONS));
}

#[test]
fn upgrade_response_with_deflate_checks_the_request() {
    let mut request = http_request(&["permessage-deflate"]);
    request.headers_mut().remove("sec-websocket-key");
    let error = upgrade_response_with_deflate(
        &request,
        Some(&DeflateConfig::default()),
        &OriginPolicy::default(),
    )
    .unwrap_err();
    assert!(
        matches!(error, HandshakeFailure::BadRequest(_)),
        "{error:?}"
    );
}
