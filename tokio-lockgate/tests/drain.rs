//! Graceful drain: every connection gets what was queued for it, then the
//! drain's close, at a turn spread over the window; new upgrades get 503
//! with `Retry-After`; a peer that never answers is cut at the deadline,
//! and the drain resolves by then. In-memory connections on a paused
//! clock, except the axum extractor's (real sockets, no timing).

use lockgate_kit as support;

use std::time::Duration;

use support::{CountingAlloc, HeapUse};
use tokio::io::DuplexStream;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_lockgate::drain::{
    Drain, DrainOptions, DrainReport, DrainSignal, Registered, Registration,
};
use tokio_lockgate::handshake::ErrorResponse;
use tokio_lockgate::http::{Request, Response};
use tokio_lockgate::hub::{Ended, Hub, HubConfig};
use tokio_lockgate::{
    CloseCode, CloseFrame, Config, Error, Message, PreparedMessage, TimeoutKind, WebSocketStream,
    client_async,
};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

type Server = Registered<WebSocketStream<DuplexStream>>;
type Client = WebSocketStream<DuplexStream>;

const WINDOW: Duration = Duration::from_secs(4);
const DEADLINE: Duration = Duration::from_secs(8);

fn options() -> DrainOptions {
    DrainOptions::default().window(WINDOW).deadline(DEADLINE)
}

/// A connection accepted through `drain`, in memory.
async fn connect(drain: &Drain) -> (Server, Client) {
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    let (server, client) = tokio::join!(
        drain.accept_async(server_io),
        client_async("ws://localhost/", client_io)
    );
    (server.expect("accepted"), client.expect("connected").0)
}

/// Reads until the connection ends: the error that ended it.
fn serve(mut server: Server) -> JoinHandle<(Error, Instant)> {
    tokio::spawn(async move {
        loop {
            if let Err(e) = server.read().await {
                return (e, Instant::now());
            }
        }
    })
}

/// What a client saw: its data messages, the close frame's code and when
/// it arrived; it answers the close and reads until the end.
struct Seen {
    data: Vec<Message>,
    code: CloseCode,
    reason: String,
    at: Instant,
}

fn receive(mut client: Client) -> JoinHandle<Seen> {
    tokio::spawn(async move {
        let mut data = Vec::new();
        loop {
            match client.read().await.expect("no error before the close") {
                Message::Close(frame) => {
                    let at = Instant::now();
                    let frame = frame.expect("a close code");
                    // Reading on sends the reply and completes the handshake.
                    let end = loop {
                        if let Err(e) = client.read().await {
                            break e;
                        }
                    };
                    assert!(matches!(end, Error::ConnectionClosed), "{end:?}");
                    return Seen {
                        data,
                        code: frame.code,
                        reason: frame.reason.as_str().to_owned(),
                        at,
                    };
                }
                msg => data.push(msg),
            }
        }
    })
}

fn counts(report: DrainReport) -> [usize; 4] {
    [report.connections, report.closed, report.left, report.cut]
}

#[test]
fn a_registered_connection_costs_under_a_hundred_bytes_of_heap() {
    const N: usize = 10_000;
    let drain = Drain::new();
    let heap = HeapUse::start();
    let registrations: Vec<Registration> = (0..N).map(|_| drain.register().unwrap()).collect();
    // Without the test's own vector: the slot (64 bytes) and the slab's
    // entry (16, and the slab's growth).
    let own = registrations.capacity() * size_of::<Registration>();
    let per_connection = (heap.now() - own) / N;
    assert!(per_connection <= 96, "{per_connection} bytes");
    drop(registrations);
    assert_eq!(drain.live(), 0);
}

#[tokio::test(start_paused = true)]
async fn each_connection_gets_what_was_queued_then_1001_at_a_turn_spread_over_the_window() {
    const N: usize = 8;
    const QUEUED: usize = 5;
    let drain = Drain::new();
    let (mut servers, mut clients) = (Vec::new(), Vec::new());
    for i in 0..N {
        let (mut server, client) = connect(&drain).await;
        for m in 0..QUEUED {
            // Queued in the out buffer, never flushed: the close goes
            // behind it.
            server
                .write(Message::text(format!("{i}:{m}")))
                .await
                .unwrap();
        }
        assert!(server.buffered_output() > 0);
        servers.push(serve(server));
        clients.push(receive(client));
    }
    assert_eq!(drain.live(), N);
    tokio::task::yield_now().await; // every read is parked

    let start = Instant::now();
    let report = drain.start(options()).await;
    let resolved = Instant::now();
    assert_eq!(counts(report), [N, N, 0, 0]);
    assert!(resolved < start + WINDOW, "resolved once all were closed");
    assert_eq!(drain.live(), 0);

    let mut turns = Vec::new();
    for (i, client) in clients.into_iter().enumerate() {
        let seen = client.await.unwrap();
        let queued: Vec<_> = (0..QUEUED)
            .map(|m| Message::text(format!("{i}:{m}")))
            .collect();
        assert_eq!(seen.data, queued, "client {i}: everything queued, first");
        assert_eq!(
            (seen.code, seen.reason.as_str()),
            (CloseCode::Away, "draining")
        );
        assert!(seen.at >= start && seen.at < start + WINDOW, "client {i}");
        turns.push(seen.at);
    }
    turns.sort();
    turns.dedup();
    assert_eq!(turns.len(), N, "one turn per connection, not all at once");
    for server in servers {
        let (end, _) = server.await.unwrap();
        assert!(matches!(end, Error::ConnectionClosed), "{end:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn new_upgrades_during_a_drain_get_503_with_retry_after() {
    let drain = Drain::new();
    let (server, client) = connect(&drain).await;
    let server = serve(server);
    let client = receive(client);
    let options = options().retry_after(Duration::from_millis(2500));
    let draining = tokio::spawn(drain.start(options));
    assert!(drain.is_draining());

    // The plain accept path, without and with a callback: refused before
    // the callback runs.
    for with_callback in [false, true] {
        let (server_io, client_io) = tokio::io::duplex(1 << 16);
        let accept = async {
            if with_callback {
                #[allow(clippy::result_large_err, reason = "tungstenite's callback signature")]
                let callback = |_: &Request<()>, _: Response<()>| -> Result<_, ErrorResponse> {
                    panic!("the drain answers first")
                };
                drain.accept_hdr_async(server_io, callback).await
            } else {
                drain.accept_async(server_io).await
            }
        };
        let (accepted, connected) =
            tokio::join!(accept, client_async("ws://localhost/", client_io));
        let Err(Error::Http(response)) = connected else {
            panic!("expected a refusal, got {:?}", connected.map(|_| ()));
        };
        assert_eq!(response.status().as_u16(), 503);
        assert_eq!(response.headers()["retry-after"], "3", "rounded up");
        assert!(matches!(accepted, Err(Error::Http(_))));
    }
    let refused = drain.register().expect_err("draining");
    assert_eq!(refused.retry_after(), Duration::from_millis(2500));
    assert_eq!(refused.to_response().status().as_u16(), 503);

    let report = draining.await.unwrap();
    assert_eq!(counts(report), [1, 1, 0, 0]);
    assert_eq!(client.await.unwrap().code, CloseCode::Away);
    assert!(matches!(server.await.unwrap().0, Error::ConnectionClosed));
    // Still refused once drained: the server is going away.
    assert!(drain.register().is_err());
    // A second start gives the same report.
    assert_eq!(drain.start(DrainOptions::default()).await, report);
}

#[tokio::test(start_paused = true)]
async fn a_peer_that_never_answers_is_cut_at_the_deadline_and_the_drain_resolves_then() {
    let drain = Drain::new();
    // Connection 0 answers; 1 never reads, so never answers the close; 2
    // leaves before its turn.
    let (polite, polite_client) = connect(&drain).await;
    let (silent, silent_client) = connect(&drain).await;
    let (leaving, leaving_client) = connect(&drain).await;
    // The connection's own close deadline would come after the drain's.
    let mut silent = silent;
    silent.reconfigure(Config::default().close_timeout(Some(DEADLINE * 2)));
    let servers = [serve(polite), serve(silent), serve(leaving)];
    let polite_client = receive(polite_client);
    tokio::spawn(async move {
        tokio::time::sleep(WINDOW / 3).await;
        drop(leaving_client);
    });

    let start = Instant::now();
    let report = drain.start(options().code(CloseCode::Restart)).await;
    assert_eq!(Instant::now(), start + DEADLINE, "resolved at the deadline");
    assert_eq!(counts(report), [3, 1, 1, 1]);

    let seen = polite_client.await.unwrap();
    assert_eq!(seen.code, CloseCode::Restart);
    let [polite, silent, leaving] = servers;
    let (end, at) = polite.await.unwrap();
    assert!(matches!(end, Error::ConnectionClosed), "{end:?}");
    assert!(at < start + WINDOW);
    let (end, at) = silent.await.unwrap();
    assert!(end.timeout() == Some(TimeoutKind::Close), "cut: {end:?}");
    assert_eq!(at, start + DEADLINE);
    let (_, at) = leaving.await.unwrap();
    assert!(at < start + WINDOW);
    drop(silent_client);
}

#[tokio::test(start_paused = true)]
async fn a_cut_read_reports_the_timeout_once_and_then_the_stream_ends() {
    use futures_util::StreamExt;
    let drain = Drain::new();
    let (mut server, _silent_client) = connect(&drain).await;
    // Before the connection's own close timeout (10 s).
    let draining = drain.start(options().window(Duration::ZERO));
    let next = server.next().await;
    assert!(
        matches!(next, Some(Err(ref e)) if e.timeout() == Some(TimeoutKind::Close)),
        "{next:?}"
    );
    assert!(server.next().await.is_none());
    assert!(matches!(server.read().await, Err(Error::AlreadyClosed)));
    drop(server);
    assert_eq!(counts(draining.await), [1, 0, 0, 1]);
}

#[tokio::test(start_paused = true)]
async fn a_read_dropped_while_waiting_loses_nothing_and_the_peers_last_message_is_read() {
    let drain = Drain::new();
    let (mut server, mut client) = connect(&drain).await;
    // A read that waits, dropped.
    assert!(
        tokio::time::timeout(Duration::from_millis(10), server.read())
            .await
            .is_err()
    );
    let draining = tokio::spawn(drain.start(DrainOptions::default().window(Duration::ZERO)));
    // The turn comes while nothing reads the connection: it waits in the
    // slot for the next read.
    tokio::task::yield_now().await;
    assert!(server.registration().is_closing());
    assert_eq!(server.buffered_output(), 0, "not yet queued");
    // Sent before the client sees the close.
    client.send(Message::text("last words")).await.unwrap();
    assert_eq!(server.read().await.unwrap(), Message::text("last words"));
    let Message::Close(Some(frame)) = client.read().await.unwrap() else {
        panic!("expected the close");
    };
    assert_eq!(frame.code, CloseCode::Away);
    let reply = server.read().await.unwrap();
    assert!(matches!(reply, Message::Close(_)), "{reply:?}");
    assert!(matches!(server.read().await, Err(Error::ConnectionClosed)));
    drop(server);
    assert_eq!(counts(draining.await.unwrap()), [1, 1, 0, 0]);
}

#[tokio::test(start_paused = true)]
async fn a_task_that_waits_on_something_else_gets_the_close_then_the_cut() {
    let drain = Drain::new();
    let mut registration = drain.register().unwrap();
    let start = Instant::now();
    let draining = tokio::spawn(drain.start(options().window(Duration::ZERO)));
    assert_eq!(
        registration.signal().await,
        DrainSignal::Close(CloseFrame::new(CloseCode::Away, "draining"))
    );
    assert!(registration.is_closing());
    assert_eq!(registration.signal().await, DrainSignal::Cut);
    assert_eq!(Instant::now(), start + DEADLINE);
    assert_eq!(
        registration.signal().await,
        DrainSignal::Cut,
        "from then on"
    );
    drop(registration);
    assert_eq!(counts(draining.await.unwrap()), [1, 0, 0, 1]);
}

#[tokio::test(start_paused = true)]
async fn hub_messages_published_before_the_drain_are_all_delivered_before_the_close() {
    const N: usize = 4;
    const BEFORE: usize = 300;
    let hub = Hub::new(HubConfig::default());
    let drain = Drain::new();
    let (mut forwards, mut readers, mut clients) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..N {
        let (server, client) = connect(&drain).await;
        let mut subscriber = hub.subscriber();
        subscriber.subscribe("t");
        server.registration().attach_subscriber(&subscriber);
        let (mut write, mut read) = server.into_split();
        forwards.push(tokio::spawn(
            async move { subscriber.forward(&mut write).await },
        ));
        readers.push(tokio::spawn(async move {
            loop {
                if let Err(e) = read.read().await {
                    return e;
                }
            }
        }));
        clients.push(receive(client));
    }
    let text = |i: usize| PreparedMessage::new(Message::text(format!("{i}")));
    // Published without yielding: all of it is in the queues when the
    // drain starts.
    for i in 0..BEFORE {
        assert_eq!(hub.publish("t", &text(i)).await.queued, N);
    }
    let start = Instant::now();
    let draining = tokio::spawn(drain.start(options()));
    // Published during the window: a subscriber gets these until its
    // turn, none after.
    let mut i = BEFORE;
    while !draining.is_finished() {
        hub.publish("t", &text(i)).await;
        i += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let report = draining.await.unwrap();
    assert_eq!(counts(report), [N, N, 0, 0]);

    for (n, client) in clients.into_iter().enumerate() {
        let seen = client.await.unwrap();
        assert_eq!(seen.code, CloseCode::Away, "subscriber {n}");
        assert!(
            seen.data.len() >= BEFORE,
            "subscriber {n}: {}",
            seen.data.len()
        );
        for (k, msg) in seen.data.iter().enumerate() {
            assert_eq!(
                *msg,
                Message::text(format!("{k}")),
                "subscriber {n}, in order"
            );
        }
        assert!(seen.at < start + WINDOW);
    }
    for forward in forwards {
        let ended = forward.await.unwrap().expect("no write error");
        assert_eq!(
            ended,
            Ended {
                code: CloseCode::Away,
                reason: "draining".into()
            }
        );
    }
    for reader in readers {
        let end = reader.await.unwrap();
        assert!(matches!(end, Error::ConnectionClosed), "{end:?}");
    }
    assert_eq!(hub.stats().subscribers, 0);
}

#[cfg(feature = "axum")]
mod axum_extractor {
    use axum::Router;
    use axum::response::Response;
    use axum::routing::any;
    use tokio::net::TcpListener;
    use tokio::time::timeout;
    use tokio_lockgate::axum::{WebSocket, WebSocketUpgrade};
    use tokio_lockgate::connect_async;

    use super::*;

    const LIMIT: Duration = Duration::from_secs(20);

    #[tokio::test]
    async fn registered_upgrades_are_closed_by_the_drain_and_new_ones_get_503() {
        let drain = Drain::new();
        let serving = drain.clone();
        let handler = move |upgrade: WebSocketUpgrade| {
            let drain = serving.clone();
            async move {
                upgrade.on_upgrade_registered(&drain, |mut ws: Registered<WebSocket>| async move {
                    while let Ok(message) = ws.read().await {
                        if message.is_data() && ws.send(message).await.is_err() {
                            break;
                        }
                    }
                }) as Response
            }
        };
        let app = Router::new().route("/ws", any(handler));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("ws://{}/ws", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });

        let (mut ws, _) = timeout(LIMIT, connect_async(&url)).await.unwrap().unwrap();
        ws.send(Message::text("echo")).await.unwrap();
        assert_eq!(ws.read().await.unwrap(), Message::text("echo"));
        assert_eq!(drain.live(), 1);

        let draining = tokio::spawn(drain.start(options().window(Duration::ZERO)));
        let Message::Close(Some(frame)) = timeout(LIMIT, ws.read()).await.unwrap().unwrap() else {
            panic!("expected the drain's close");
        };
        assert_eq!(frame.code, CloseCode::Away);
        match timeout(LIMIT, connect_async(&url)).await.unwrap() {
            Err(Error::Http(response)) => {
                assert_eq!(response.status().as_u16(), 503);
                assert_eq!(response.headers()["retry-after"], "5");
            }
            other => panic!("expected 503, got {:?}", other.map(|_| ())),
        }
        while ws.read().await.is_ok() {}
        let report = timeout(LIMIT, draining).await.unwrap().unwrap();
        assert_eq!(counts(report), [1, 1, 0, 0]);
    }
}
