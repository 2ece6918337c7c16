//! Rate limits through the blocking driver over loopback TCP: a flooding
//! client is throttled to its limit while another client of the same
//! server is answered as before. (The pace of a throttled read and the
//! Close policy are the kit's cases, which every driver runs.) Assertions are on
//! counts, never on the clock: the pace itself is asserted on simulated
//! time (the core's unit tests, tokio-lockgate's paused-clock tests).

use lockgate_kit::conformance::rate_limits::{
    BURST, RATE, assert_throttled_while_another_is_served,
};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::Duration;

use lockgate::{Config, Message, RateLimit, ServerOptions, WebSocket};

/// Generous: only there so that a broken test fails instead of hanging.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// A server on a fresh port: each connection in its own thread echoes
/// every data message back at once.
fn echo_server(config: Config) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}/", listener.local_addr().unwrap());
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            thread::spawn(move || {
                let Ok(mut ws) = ServerOptions::new().config(config).accept(stream) else {
                    return;
                };
                // Ends when the client goes (or the limit closes it).
                while let Ok(msg) = ws.read() {
                    if msg.is_data() && ws.send(msg).is_err() {
                        return;
                    }
                }
            });
        }
    });
    url
}

fn connect(url: &str) -> WebSocket<lockgate::stream::MaybeTlsStream<TcpStream>> {
    let (ws, _) = lockgate::connect(url).unwrap();
    ws.get_ref()
        .get_ref()
        .set_read_timeout(Some(READ_TIMEOUT))
        .unwrap();
    ws
}

#[test]
fn a_flooding_client_is_throttled_while_another_is_answered() {
    let limit = RateLimit::messages_per_second(RATE).message_burst(BURST);
    let url = echo_server(Config::default().rate_limit(limit));

    // 1,000 messages at once: 50 s' worth at the limit. Small enough
    // (about 12 KiB) to sit in the socket buffers unread.
    const FLOOD: usize = 1000;
    let mut flooder = connect(&url);
    for i in 0..FLOOD {
        flooder.write(Message::text(format!("{i:04}"))).unwrap();
    }
    flooder.flush().unwrap();
    // The flooder reads its echoes in a thread of its own, until told
    // where to stop.
    let stop = Arc::new(AtomicUsize::new(FLOOD));
    let (echoed, echoes) = mpsc::channel();
    let reading = {
        let stop = stop.clone();
        thread::spawn(move || {
            let mut count = 0;
            while count < stop.load(Ordering::SeqCst) {
                match flooder.read() {
                    Ok(Message::Text(_)) => count += 1,
                    other => panic!("flooder: {other:?}"),
                }
                echoed.send(()).unwrap();
            }
            count
        })
    };
    let mut flooded = 0;
    let echo = || {
        echoes.recv_timeout(READ_TIMEOUT).expect("an echo");
    };
    // The burst is through: the flooder is being throttled now.
    for _ in 0..BURST {
        echo();
        flooded += 1;
    }

    // Another client, on its own connection (its own buckets), gets its
    // answers: a burst's worth of round trips.
    let mut other = connect(&url);
    for i in 0..BURST {
        let msg = Message::text(format!("other {i}"));
        other.send(msg.clone()).unwrap();
        assert_eq!(other.read().unwrap(), msg);
    }
    flooded += echoes.try_iter().count();
    assert_throttled_while_another_is_served(flooded, FLOOD);

    // Not closed: the flooder keeps getting messages at the limit.
    stop.store(flooded + 5, Ordering::SeqCst);
    let flooded = reading.join().unwrap();
    assert_eq!(flooded, stop.load(Ordering::SeqCst));
    other.close(None).unwrap();
}
