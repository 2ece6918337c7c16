//! What connections report to the `metrics` facade (and, with the
//! `tracing` feature, to `tracing`): exact counts for known workloads,
//! read from a debugging recorder. Run with `--features metrics,tracing`.

use lockgate_kit as support;
use lockgate_kit::observe as observe_support;

use std::time::{Duration, Instant};

use lockgate::handshake::{ClientUpgrade, HandshakeDriver, NoCallback, ServerUpgrade, Step};
use lockgate::observe::names;
use lockgate::{
    CloseCode, CloseFrame, Config, Error, Message, Next, Operation, PreparedMessage, Role,
    TimeoutKind, WebSocketContext,
};

use metrics::Unit;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use observe_support::{Counts, recorder};
use support::{client_frame, pair, take_output};

const SECOND: Duration = Duration::from_secs(1);

/// The close counts that moved: `(code, by, count)`, sorted.
fn closes(counts: &Counts) -> Vec<(u16, &'static str, u64)> {
    let mut closes = Vec::new();
    for code in [1000, 1002, 1005, 1006, 1011, 4001] {
        for by in ["local", "peer"] {
            let code_label = code.to_string();
            let n = counts.counter(names::CLOSES, &[("code", &code_label), ("by", by)]);
            if n > 0 {
                closes.push((code, by, n));
            }
        }
    }
    closes
}

/// The rows of the metrics table in `lockgate::observe`'s docs: name,
/// type, labels.
fn documented() -> Vec<(&'static str, &'static str, &'static str)> {
    include_str!("../src/observe/mod.rs")
        .lines()
        .filter_map(|line| line.strip_prefix("//! | `"))
        .map(|row| {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            (cells[0].trim_end_matches('`'), cells[1], cells[2])
        })
        .collect()
}

/// A recorder of this test's own, on this thread only (a fresh one: no
/// connection has reported to it), and what was registered with it once
/// `work` ran.
fn registered_by(work: impl FnOnce()) -> Vec<(String, Option<Unit>, bool, DebugValue)> {
    // Leaked: lockgate keeps handles per recorder address, which must not
    // be reused by another recorder in this process.
    let recorder: &'static DebuggingRecorder = Box::leak(Box::new(DebuggingRecorder::new()));
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(recorder, work);
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, unit, help, value)| {
            let name = key.key().name().to_owned();
            let labelled = key.key().labels().next().is_some();
            (name, unit, labelled || help.is_none(), value)
        })
        .collect()
}

#[test]
fn every_documented_series_exists_at_zero_once_registered_before_any_connection() {
    let registered = registered_by(lockgate::observe::register_metrics);
    let rows = documented();
    assert_eq!(rows.len(), 11, "the table in src/observe/mod.rs: {rows:?}");
    for (name, kind, labels) in rows {
        let series: Vec<_> = registered.iter().filter(|s| s.0 == name).collect();
        let zero = match kind {
            "counter" => DebugValue::Counter(0),
            "gauge" => DebugValue::Gauge(0.0.into()),
            other => panic!("{name}: a {other} in the table"),
        };
        if labels.is_empty() {
            // One series, unlabelled and described (unit and help), at 0.
            assert_eq!(series.len(), 1, "{name}: {series:?}");
            let (_, unit, labelled_or_undescribed, value) = series[0];
            assert!(unit.is_some() && !labelled_or_undescribed, "{name}");
            assert_eq!(*value, zero, "{name}");
        } else if name == names::CLOSES {
            // Its codes appear as connections close.
            assert!(series.is_empty(), "{name}: {series:?}");
        } else {
            // Labels known in advance: each value at 0.
            assert!(!series.is_empty(), "{name}");
            assert!(series.iter().all(|s| s.3 == zero), "{name}: {series:?}");
        }
    }
    // Twice is once.
    let again = registered_by(|| {
        lockgate::observe::register_metrics();
        lockgate::observe::register_metrics();
    });
    assert_eq!(again.len(), registered.len());
}

#[test]
fn the_first_connection_registers_every_series_without_the_call() {
    let registered = registered_by(|| {
        drop(WebSocketContext::new(Role::Server, Config::default()));
    });
    let value = |name: &str| registered.iter().find(|s| s.0 == name).map(|s| &s.3);
    assert_eq!(
        value(names::CONNECTIONS_OPENED),
        Some(&DebugValue::Counter(1))
    );
    assert_eq!(
        value(names::CONNECTIONS_OPEN),
        Some(&DebugValue::Gauge(0.0.into()))
    );
    for name in [
        names::MESSAGES_RECEIVED,
        names::MESSAGES_SENT,
        names::BYTES_RECEIVED,
        names::BYTES_SENT,
        names::WRITE_BUFFER_FULL,
    ] {
        assert_eq!(value(name), Some(&DebugValue::Counter(0)), "{name}");
    }
}

#[test]
fn a_known_workload_counts_exactly() {
    let recorder = recorder();
    let (mut client, mut server) = pair(Config::default());
    let opened = recorder.take();
    assert_eq!(opened.counter(names::CONNECTIONS_OPENED, &[]), 2);
    assert_eq!(opened.gauge(names::CONNECTIONS_OPEN), 2.0);

    // N texts one way, N binaries (one of them empty) the other, each
    // burst written then flushed once.
    const N: usize = 25;
    let texts: Vec<String> = (0..N).map(|i| format!("message number {i}")).collect();
    let binaries: Vec<Vec<u8>> = (0..N).map(|i| vec![i as u8; i * 37]).collect();
    for text in &texts {
        client.write(Message::text(text.as_str())).unwrap();
    }
    client.flush().unwrap();
    for text in &texts {
        assert_eq!(server.read().unwrap(), Message::text(text.as_str()));
    }
    for binary in &binaries {
        server.write(Message::binary(binary.clone())).unwrap();
    }
    // Control messages are not data: not counted.
    server.write(Message::Ping("not counted".into())).unwrap();
    server.flush().unwrap();
    for binary in &binaries {
        assert_eq!(client.read().unwrap(), Message::binary(binary.clone()));
    }
    assert!(matches!(client.read().unwrap(), Message::Ping(_)));

    // Traffic has stopped and nobody waited or closed: every count is in.
    let text_bytes: usize = texts.iter().map(String::len).sum();
    let binary_bytes: usize = binaries.iter().map(Vec::len).sum();
    let traffic = recorder.take();
    assert_eq!(
        traffic.counter(names::MESSAGES_SENT, &[]),
        2 * N as u64,
        "{traffic:?}"
    );
    assert_eq!(traffic.counter(names::MESSAGES_RECEIVED, &[]), 2 * N as u64);
    let bytes = (text_bytes + binary_bytes) as u64;
    assert_eq!(traffic.counter(names::BYTES_SENT, &[]), bytes);
    assert_eq!(traffic.counter(names::BYTES_RECEIVED, &[]), bytes);
    assert_eq!(traffic.gauge(names::CONNECTIONS_OPEN), 0.0);

    // The client closes with 4001 (its pong goes first); the server
    // echoes it.
    let frame = CloseFrame::new(CloseCode::from(4001), "done");
    client.close(Some(frame)).unwrap();
    assert!(matches!(server.read(), Ok(Message::Pong(_))));
    match server.read() {
        Ok(Message::Close(Some(frame))) => assert_eq!(u16::from(frame.code), 4001),
        other => panic!("{other:?}"),
    }
    assert!(matches!(server.read(), Err(Error::ConnectionClosed)));
    assert!(matches!(client.read(), Ok(Message::Close(_))));
    assert!(matches!(client.read(), Err(Error::ConnectionClosed)));
    let closed = recorder.take();
    assert_eq!(
        closes(&closed),
        [(4001, "local", 1), (4001, "peer", 1)],
        "{closed:?}"
    );
    assert_eq!(closed.gauge(names::CONNECTIONS_OPEN), -2.0);
    assert_eq!(closed.counter(names::MESSAGES_SENT, &[]), 0);

    // Ended connections report nothing more when dropped.
    drop((client, server));
    assert!(recorder.take().moved().is_empty());
}

/// A server-side context fed `input` and read until it reports an error.
fn read_until_error(mut ctx: WebSocketContext) -> Error {
    for _ in 0..10 {
        match ctx.poll(Operation::Read) {
            Ok(Next::Transmit | Next::Flush) => {
                let _ = take_output(&mut ctx);
            }
            Ok(Next::Shutdown) => ctx.shut_down(),
            // The lingering close after a failure: the peer's FIN.
            Ok(Next::Discard) => ctx.input_ended(),
            Ok(_) => {}
            Err(error) => return error,
        }
    }
    panic!("no error");
}

#[test]
fn each_way_to_end_counts_its_code_and_side() {
    use lockgate::frame::OpCode;
    type End = fn(WebSocketContext);
    let cases: [(&str, End, (u16, &str)); 6] = [
        (
            "we close without a code",
            |mut ctx| {
                ctx.close(None).unwrap();
                let _ = take_output(&mut ctx);
            },
            (1005, "local"),
        ),
        (
            "the peer closes with 1000",
            |mut ctx| {
                ctx.feed(&client_frame(OpCode::Close, &1000u16.to_be_bytes()));
                assert!(matches!(read_until_error(ctx), Error::ConnectionClosed));
            },
            (1000, "peer"),
        ),
        (
            "a protocol error (an unmasked frame)",
            |mut ctx| {
                ctx.feed(&[0x81, 0x00]);
                assert!(matches!(read_until_error(ctx), Error::Protocol(_)));
            },
            (1002, "local"),
        ),
        (
            "the stream ends",
            |mut ctx| {
                ctx.input_ended();
                assert!(matches!(read_until_error(ctx), Error::Protocol(_)));
            },
            (1006, "peer"),
        ),
        ("dropped while open", drop, (1006, "local")),
        (
            "our close after the peer's counts once, as the peer's",
            |mut ctx| {
                ctx.feed(&client_frame(OpCode::Close, &[]));
                loop {
                    match ctx.poll(Operation::Read).unwrap() {
                        Next::Message(msg) => break assert_eq!(msg, Message::Close(None)),
                        _ => drop(take_output(&mut ctx)),
                    }
                }
                ctx.close(None).unwrap();
            },
            (1005, "peer"),
        ),
    ];
    let recorder = recorder();
    for (name, end, (code, by)) in cases {
        end(WebSocketContext::new(Role::Server, Config::default()));
        let counts = recorder.take();
        assert_eq!(closes(&counts), [(code, by, 1)], "{name}: {counts:?}");
        assert_eq!(counts.counter(names::CONNECTIONS_OPENED, &[]), 1, "{name}");
        assert_eq!(counts.gauge(names::CONNECTIONS_OPEN), 0.0, "{name}");
    }
}

#[test]
fn a_keepalive_timeout_counts_its_kind_and_the_1011_close() {
    let recorder = recorder();
    let config = Config::default()
        .ping_interval(Some(SECOND))
        .ping_timeout(Some(SECOND));
    let mut ctx = WebSocketContext::new(Role::Client, config);
    let t0 = Instant::now();
    assert_eq!(ctx.poll(Operation::Read).unwrap(), Next::Receive);
    ctx.handle_timeout(t0);
    ctx.handle_timeout(t0 + SECOND);
    let _ping = take_output(&mut ctx);
    ctx.handle_timeout(t0 + SECOND);
    ctx.handle_timeout(t0 + 2 * SECOND);
    let _close = take_output(&mut ctx);
    assert!(matches!(
        ctx.poll(Operation::Read),
        Err(ref e) if e.timeout() == Some(TimeoutKind::Keepalive)
    ));
    let counts = recorder.take();
    assert_eq!(
        counts.counter(names::TIMEOUTS, &[("kind", "keepalive")]),
        1,
        "{counts:?}"
    );
    assert_eq!(closes(&counts), [(1011, "local", 1)]);
    assert_eq!(counts.gauge(names::CONNECTIONS_OPEN), 0.0);

    // An unanswered close times out too.
    let config = Config::default().close_timeout(Some(SECOND));
    let mut ctx = WebSocketContext::new(Role::Client, config);
    ctx.close(None).unwrap();
    let _close = take_output(&mut ctx);
    assert_eq!(ctx.poll(Operation::Read).unwrap(), Next::Receive);
    ctx.handle_timeout(t0);
    ctx.handle_timeout(t0 + SECOND);
    assert!(matches!(
        ctx.poll(Operation::Read),
        Err(ref e) if e.timeout() == Some(TimeoutKind::Close)
    ));
    let counts = recorder.take();
    assert_eq!(counts.counter(names::TIMEOUTS, &[("kind", "close")]), 1);
    assert_eq!(counts.counter(names::TIMEOUTS, &[("kind", "keepalive")]), 0);
    assert_eq!(closes(&counts), [(1005, "local", 1)]);
}

#[test]
fn a_refused_write_counts_and_a_flushed_one_is_sent() {
    let recorder = recorder();
    let config = Config::default().max_write_buffer_size(100);
    let mut ctx = WebSocketContext::new(Role::Server, config);
    ctx.write(Message::binary(vec![1; 60])).unwrap();
    let refused = ctx.write(Message::binary(vec![2; 60])).unwrap_err();
    assert!(refused.is_write_buffer_full());
    let prepared = PreparedMessage::new(Message::text("x".repeat(60)));
    assert!(
        ctx.write_prepared(&prepared)
            .unwrap_err()
            .is_write_buffer_full()
    );
    // Not handed over before the flush...
    let before = recorder.take();
    assert_eq!(before.counter(names::WRITE_BUFFER_FULL, &[]), 2);
    assert_eq!(before.counter(names::MESSAGES_SENT, &[]), 0);
    // ...exact after it.
    let _ = take_output(&mut ctx);
    ctx.write_prepared(&prepared).unwrap();
    let _ = take_output(&mut ctx);
    let after = recorder.take();
    assert_eq!(after.counter(names::MESSAGES_SENT, &[]), 2, "{after:?}");
    assert_eq!(after.counter(names::BYTES_SENT, &[]), 120);
}

#[test]
fn each_handshake_failure_counts_its_reason() {
    const UPGRADE: &str =
        "GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: upgrade\r\n";
    let version_8 = format!("{UPGRADE}Sec-WebSocket-Version: 8\r\n\r\n");
    let no_key = format!("{UPGRADE}Sec-WebSocket-Version: 13\r\n\r\n");
    let cases: [(&str, &[u8], &str); 4] = [
        (
            "TLS instead of HTTP",
            b"\x16\x03\x01\x00\xa5\x01",
            "malformed",
        ),
        ("version 8", version_8.as_bytes(), "version"),
        ("no key", no_key.as_bytes(), "bad_request"),
        ("the client leaves", b"", "incomplete"),
    ];
    let recorder = recorder();
    let start = Instant::now();
    let server = |config| HandshakeDriver::server(ServerUpgrade::new(NoCallback), config, start);
    let run_to_failure = |step: &mut dyn FnMut() -> Step| loop {
        match step() {
            Step::Transmit(_) => {}
            Step::Done(Err(error)) => return error,
            other => panic!("{other:?}"),
        }
    };
    for (name, input, reason) in cases {
        let mut server = server(Config::default());
        assert!(matches!(server.poll(start), Step::Receive { .. }));
        server.receive(input, start);
        let _ = run_to_failure(&mut || server.poll(start));
        // Later polls answer AlreadyClosed and count nothing.
        let _ = server.poll(start);
        let counts = recorder.take();
        assert_eq!(
            counts.counter(names::HANDSHAKE_FAILURES, &[("reason", reason)]),
            1,
            "{name}: {counts:?}"
        );
        assert_eq!(counts.moved().len(), 1, "{name}: {counts:?}");
    }

    // The deadline: a failure and a timeout.
    let mut silent = server(Config::default().handshake_timeout(Some(SECOND)));
    silent.handle_timeout(start + SECOND);
    let error = run_to_failure(&mut || silent.poll(start + SECOND));
    assert!(error.timeout() == Some(TimeoutKind::Handshake));
    let counts = recorder.take();
    assert_eq!(
        counts.counter(names::HANDSHAKE_FAILURES, &[("reason", "timeout")]),
        1
    );
    assert_eq!(counts.counter(names::TIMEOUTS, &[("kind", "handshake")]), 1);

    // A client refused by the server.
    let request = ClientUpgrade::new("ws://example.com/").unwrap();
    let mut client = HandshakeDriver::client(request, Config::default(), start);
    assert!(matches!(client.poll(start), Step::Transmit(_)));
    client.receive(
        b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n",
        start,
    );
    let error = run_to_failure(&mut || client.poll(start));
    assert!(matches!(error, Error::Http(_)), "{error:?}");
    let counts = recorder.take();
    assert_eq!(
        counts.counter(names::HANDSHAKE_FAILURES, &[("reason", "refused")]),
        1,
        "{counts:?}"
    );
}

#[cfg(feature = "tracing")]
mod tracing_events {
    use std::net::TcpListener;

    use lockgate::handshake::server::{Request, Response};
    use lockgate::{ClientRequestBuilder, CloseCode, CloseFrame, Error, Message};

    use crate::observe_support::{Capture, EventSeen, SpanSeen, recorder};

    /// The `websocket` span of `capture`'s one connection, and that
    /// connection's `closed` events.
    fn connection(capture: &Capture) -> (SpanSeen, Vec<EventSeen>) {
        let spans = capture.spans("websocket");
        assert_eq!(spans.len(), 1, "{spans:?}");
        let closed = capture.events("closed");
        assert!(
            closed.iter().all(|e| e.parent == Some(spans[0].id)),
            "{closed:?}"
        );
        // Nothing per message: the close, and each state change at TRACE.
        let others: Vec<_> = capture
            .all_events()
            .into_iter()
            .filter(|event| !["closed", "state"].contains(&event.message()))
            .collect();
        assert!(others.is_empty(), "{others:?}");
        assert!(capture.events("state").len() <= 4);
        (spans[0].clone(), closed)
    }

    #[test]
    #[allow(
        clippy::result_large_err,
        reason = "a callback returns ErrorResponse by value"
    )]
    fn a_connection_has_one_span_and_its_close_one_event() {
        let _recorder = recorder();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // Each thread has a subscriber of its own (with a single scoped
        // subscriber, `tracing` would judge a callsite by the thread that
        // reaches it first).
        let server_capture = Capture::default();
        let server = std::thread::spawn({
            let capture = server_capture.clone();
            move || {
                let _subscriber = tracing::subscriber::set_default(capture);
                let choose = |request: &Request, mut response: Response| {
                    let chosen = lockgate::handshake::choose_subprotocol(request, &["chat.v2"]);
                    let value = chosen.unwrap().parse().unwrap();
                    response
                        .headers_mut()
                        .insert("sec-websocket-protocol", value);
                    Ok(response)
                };
                let (tcp, client) = listener.accept().unwrap();
                let mut ws = lockgate::accept_hdr(tcp, choose).unwrap();
                loop {
                    match ws.read() {
                        Ok(msg) if msg.is_data() => ws.send(msg).unwrap(),
                        Ok(_) => {}
                        Err(_) => break,
                    }
                }
                client
            }
        });

        let capture = Capture::default();
        let subscriber = tracing::subscriber::set_default(capture.clone());
        let uri = format!("ws://{addr}/chat").parse().unwrap();
        let request = ClientRequestBuilder::new(uri).with_sub_protocol("chat.v2");
        let (mut ws, _) = lockgate::connect(request).unwrap();
        for i in 0..100 {
            ws.send(Message::text(format!("echo {i}"))).unwrap();
            assert!(ws.read().unwrap().is_text());
        }
        ws.close(Some(CloseFrame::new(CloseCode::Normal, "bye")))
            .unwrap();
        loop {
            match ws.read() {
                Ok(_) => {}
                Err(Error::ConnectionClosed) => break,
                Err(error) => panic!("{error}"),
            }
        }
        drop(ws);
        drop(subscriber);
        let client_addr = server.join().unwrap();

        let (span, closed) = connection(&capture);
        assert_eq!(span.target, "lockgate");
        assert_eq!(span.fields["role"], "client");
        assert_eq!(span.fields["peer"], addr.to_string());
        assert_eq!(span.fields["subprotocol"], "chat.v2");
        assert_eq!(closed.len(), 1);
        assert_eq!(closed[0].fields["code"], "1000");
        assert_eq!(closed[0].fields["by"], "local");

        let (span, closed) = connection(&server_capture);
        assert_eq!(span.fields["role"], "server");
        assert_eq!(span.fields["peer"], client_addr.to_string());
        assert_eq!(span.fields["subprotocol"], "chat.v2");
        assert_eq!(closed.len(), 1);
        assert_eq!(closed[0].fields["code"], "1000");
        assert_eq!(closed[0].fields["by"], "peer");
    }

    #[test]
    fn a_protocol_error_and_a_handshake_refusal_are_events() {
        use lockgate::handshake::{HandshakeDriver, NoCallback, ServerUpgrade};
        use lockgate::{Config, Next, Operation, Role, WebSocketContext};

        let _recorder = recorder();
        let capture = Capture::default();
        let subscriber = tracing::subscriber::set_default(capture.clone());
        let mut ctx = WebSocketContext::new(Role::Server, Config::default());
        ctx.feed(&[0x81, 0x00]); // unmasked
        loop {
            match ctx.poll(Operation::Read) {
                Ok(Next::Transmit) => {
                    let _ = crate::support::take_output(&mut ctx);
                }
                Ok(Next::Flush) => ctx.flushed(),
                // The lingering close after the failure: the peer's FIN.
                Ok(Next::Shutdown) => ctx.shut_down(),
                Ok(Next::Discard) => ctx.input_ended(),
                Err(_) => break,
                Ok(other) => panic!("{other:?}"),
            }
        }
        let start = std::time::Instant::now();
        let mut server =
            HandshakeDriver::server(ServerUpgrade::new(NoCallback), Config::default(), start);
        server.receive(b"\x16\x03\x01", start);
        while !matches!(server.poll(start), lockgate::handshake::Step::Done(_)) {}
        drop(subscriber);

        let span = &capture.spans("websocket")[0];
        let errors = capture.events("protocol error");
        assert_eq!(errors.len(), 1, "{:?}", capture.all_events());
        assert_eq!(errors[0].parent, Some(span.id));
        assert_eq!(errors[0].fields["code"], "1002");
        let closed = capture.events("closed");
        assert_eq!(closed[0].fields["code"], "1002");
        assert_eq!(closed[0].fields["by"], "local");
        let refused = capture.events("handshake failed");
        assert_eq!(refused.len(), 1, "{:?}", capture.all_events());
        assert_eq!(refused[0].fields["reason"], "malformed");
        assert_eq!(refused[0].fields["role"], "server");
    }
}
