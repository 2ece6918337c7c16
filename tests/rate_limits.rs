//! Rate limits through the blocking driver over loopback TCP: a flooding
//! client is throttled to its limit (or closed with 1008) while another
//! client of the same server is answered as before. Assertions are on
//! counts; the only use of the clock is the bound "at most burst + rate x
//! elapsed", where a slow machine only makes the elapsed time longer.

use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use lockgate::{
    CapacityError, CloseCode, Config, Error, Message, RateLimit, RatePolicy, ServerOptions,
    WebSocket,
};

const RATE: u32 = 20;
const BURST: u32 = 10;
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

/// At most this many messages may be handed over in `elapsed`.
fn allowed(elapsed: Duration) -> usize {
    BURST as usize + (f64::from(RATE) * elapsed.as_secs_f64()).ceil() as usize
}

#[test]
fn a_flooding_client_is_throttled_while_another_is_answered() {
    let limit = RateLimit::messages_per_second(RATE).message_burst(BURST);
    let url = echo_server(Config::default().rate_limit(limit));

    // 1,000 messages at once: 50 s' worth at the limit. Small enough
    // (about 12 KiB) to sit in the socket buffers unread.
    const FLOOD: usize = 1000;
    let mut flooder = connect(&url);
    let start = Instant::now();
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
    let elapsed = start.elapsed();
    assert!(
        flooded <= allowed(elapsed),
        "{flooded} echoes in {elapsed:?}: more than {BURST} + {RATE}/s"
    );
    assert!(
        flooded < FLOOD,
        "still throttled while the other was served"
    );

    // Not closed: the flooder keeps getting messages at the limit.
    stop.store(flooded + 5, Ordering::SeqCst);
    let flooded = reading.join().unwrap();
    let elapsed = start.elapsed();
    assert!(flooded <= allowed(elapsed), "{flooded} in {elapsed:?}");
    other.close(None).unwrap();
}

#[test]
fn the_close_policy_closes_a_flooding_client_with_1008() {
    let limit = RateLimit::messages_per_second(RATE)
        .message_burst(BURST)
        .policy(RatePolicy::Close);
    let url = echo_server(Config::default().rate_limit(limit));
    let mut flooder = connect(&url);
    for i in 0..200 {
        flooder.write(Message::text(format!("{i}"))).unwrap();
    }
    flooder.flush().unwrap();
    let mut echoes = 0;
    let close = loop {
        match flooder.read().unwrap() {
            Message::Text(_) => echoes += 1,
            Message::Close(frame) => break frame.expect("a close code"),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(close.code, CloseCode::Policy);
    // The burst got through (and whatever the rate allowed meanwhile:
    // 200 messages over loopback take well under a second).
    assert!(echoes >= BURST as usize, "{echoes}");
    assert!(echoes < 200, "{echoes}");
    assert!(matches!(flooder.read(), Err(Error::ConnectionClosed)));
}

#[test]
fn the_close_policy_fails_the_servers_read_with_rate_limited() {
    // The server's side of the Close policy: `read` fails with the
    // limit that was overrun.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}/", listener.local_addr().unwrap());
    let limit = RateLimit::bytes_per_second(1000).policy(RatePolicy::Close);
    let server = thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let config = Config::default().rate_limit(limit);
        let mut ws = ServerOptions::new().config(config).accept(stream).unwrap();
        let mut read = 0;
        loop {
            match ws.read() {
                Ok(_) => read += 1,
                Err(error) => return (read, error),
            }
        }
    });
    let mut client = connect(&url);
    // Two 600-byte messages: the second overruns the 1000-byte burst.
    for _ in 0..2 {
        client.send(Message::binary(vec![0; 600])).unwrap();
    }
    let (read, error) = server.join().unwrap();
    assert_eq!(read, 1);
    assert!(
        matches!(
            error,
            Error::Capacity(CapacityError::ByteRateExceeded {
                per_second: 1000,
                burst: 1000,
            })
        ),
        "{error:?}"
    );
    assert!(matches!(
        client.read().unwrap(),
        Message::Close(Some(frame)) if frame.code == CloseCode::Policy
    ));
}
