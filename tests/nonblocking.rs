//! Non-blocking streams: partial writes, `WouldBlock` and `Interrupted` at
//! every point lose nothing and duplicate nothing.

use lockgate_kit as support;

use lockgate::frame::OpCode;
use lockgate::{Config, Error, Message, Role, WebSocket};
use support::{FlushStep, MockStream, ReadStep, WriteStep, client_frame, parse_frames};

/// A deterministic xorshift generator, so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn random_write_step(rng: &mut Rng) -> WriteStep {
    match rng.below(4) {
        0 => WriteStep::WouldBlock,
        1 => WriteStep::Interrupted,
        _ => WriteStep::Accept(1 + rng.below(40) as usize),
    }
}

fn messages(count: usize) -> Vec<Message> {
    (0..count)
        .map(|i| match i % 3 {
            0 => Message::text(format!("text {i} {}", "é".repeat(i % 17))),
            1 => Message::binary(vec![i as u8; i * 7 % 300]),
            _ => Message::Ping(vec![i as u8; i % 125].into()),
        })
        .collect()
}

#[test]
fn every_accepted_message_arrives_once_in_order_under_random_faults() {
    for seed in 1..=40u64 {
        for role in [Role::Server, Role::Client] {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let mut stream = MockStream::new();
            for _ in 0..2000 {
                stream.writes.push_back(random_write_step(&mut rng));
            }
            for _ in 0..200 {
                stream.flushes.push_back(match rng.below(3) {
                    0 => FlushStep::WouldBlock,
                    1 => FlushStep::Interrupted,
                    _ => FlushStep::Ok,
                });
            }
            let config = Config::default().write_buffer_size(rng.below(200) as usize);
            let mut ws = WebSocket::from_raw_socket(stream, role, config);
            let sent = messages(60);
            for msg in &sent {
                let mut msg = msg.clone();
                loop {
                    match ws.write(msg) {
                        Ok(()) => break,
                        // Accepted: the buffered message goes out later.
                        Err(e) if e.is_would_block() => break,
                        Err(Error::WriteBufferFull(back)) => {
                            msg = *back;
                            let _ = ws.flush();
                        }
                        Err(e) => panic!("seed {seed}: {e:?}"),
                    }
                }
                if rng.below(5) == 0 {
                    let _ = ws.flush();
                }
            }
            let mut attempts = 0;
            while let Err(e) = ws.flush() {
                assert!(e.is_would_block(), "seed {seed}: {e:?}");
                attempts += 1;
                assert!(attempts < 10_000, "seed {seed}: flush never completes");
            }
            let frames = parse_frames(&ws.get_ref().written);
            let got: Vec<Message> = frames
                .into_iter()
                .map(|f| match f.header.opcode {
                    OpCode::Text => Message::text(String::from_utf8(f.payload).unwrap()),
                    OpCode::Binary => Message::binary(f.payload),
                    OpCode::Ping => Message::Ping(f.payload.into()),
                    other => panic!("unexpected {other:?}"),
                })
                .collect();
            assert_eq!(got, sent, "seed {seed} {role:?}");
        }
    }
}

#[test]
fn reads_survive_would_block_and_interrupted_between_every_byte() {
    let frames: Vec<Vec<u8>> = vec![
        client_frame(OpCode::Text, "héllo".as_bytes()),
        support::frame(false, OpCode::Binary, &[1, 2, 3], Some([9, 9, 9, 9])),
        client_frame(OpCode::Ping, b"mid"),
        support::frame(true, OpCode::Continuation, &[4, 5], Some([1, 2, 3, 4])),
        client_frame(OpCode::Binary, &vec![0xAB; 70_000]),
    ];
    let wire: Vec<u8> = frames.concat();
    let mut stream = MockStream::new();
    for (i, byte) in wire.iter().enumerate() {
        stream.reads.push_back(ReadStep::Data(vec![*byte]));
        stream.reads.push_back(if i % 2 == 0 {
            ReadStep::WouldBlock
        } else {
            ReadStep::Interrupted
        });
    }
    stream.reads.push_back(ReadStep::WouldBlock);
    let mut ws = WebSocket::from_raw_socket(stream, Role::Server, Config::default());
    let mut got = Vec::new();
    let mut would_blocks = 0;
    while got.len() < 4 {
        match ws.read() {
            Ok(msg) => got.push(msg),
            Err(e) if e.is_would_block() => {
                would_blocks += 1;
                assert!(would_blocks < wire.len() + 10, "no progress");
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(got[0], Message::text("héllo"));
    assert_eq!(got[1], Message::Ping("mid".into()));
    assert_eq!(got[2], Message::binary(vec![1, 2, 3, 4, 5]));
    assert_eq!(got[3], Message::binary(vec![0xAB; 70_000]));
    // The pong went out despite all the blocking reads.
    let out = parse_frames(&ws.get_ref().written);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].header.opcode, OpCode::Pong);
}

#[test]
fn pair_exchanges_everything_with_tiny_reads() {
    let (mut client, mut server) = support::pair(Config::default().write_buffer_size(0));
    client.get_mut().read_chunk = 1;
    server.get_mut().read_chunk = 3;
    let sent = messages(30);
    for msg in &sent {
        client.write(msg.clone()).unwrap();
    }
    client.flush().unwrap();
    let mut got = Vec::new();
    while got.len() < sent.len() {
        match server.read() {
            Ok(msg) => got.push(msg),
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(got, sent);
}

/// A non-blocking server socket: the handshake is interrupted while the
/// request trickles in, resumes where it stopped, and the connection then
/// works without blocking.
#[test]
fn a_non_blocking_handshake_is_interrupted_and_resumed() {
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::time::Duration;

    use lockgate::handshake::HandshakeError;
    use lockgate::util::NonBlockingResult;

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let client = std::thread::spawn(move || {
        let mut tcp = TcpStream::connect(addr).unwrap();
        let request = "GET /chat HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n\
                       Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
                       Sec-WebSocket-Version: 13\r\n\r\n";
        let (first, rest) = request.split_at(40);
        tcp.write_all(first.as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        tcp.write_all(rest.as_bytes()).unwrap();
        // One masked text frame, "Hello" (RFC 6455 section 5.7).
        tcp.write_all(&[
            0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58,
        ])
        .unwrap();
        tcp
    });
    let (stream, _) = listener.accept().unwrap();
    stream.set_nonblocking(true).unwrap();
    let mut interruptions = 0;
    let mut attempt = lockgate::accept(stream);
    let mut ws = loop {
        match attempt {
            Ok(ws) => break ws,
            Err(HandshakeError::Interrupted(mid)) => {
                interruptions += 1;
                assert!(interruptions < 2000, "the handshake never finished");
                std::thread::sleep(Duration::from_millis(1));
                attempt = mid.handshake();
            }
            Err(HandshakeError::Failure(error)) => panic!("{error:?}"),
        }
    };
    assert!(interruptions > 0, "the request came in two pieces");
    let mut message = None;
    for _ in 0..2000 {
        if let Some(msg) = ws.read().no_block().unwrap() {
            message = Some(msg);
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(message, Some(Message::text("Hello")));
    drop(client.join().unwrap());
}

#[test]
fn after_a_read_that_would_block_the_deadline_says_when_to_read_again() {
    let interval = std::time::Duration::from_secs(7);
    let config = Config::default().ping_interval(Some(interval));
    let mut stream = MockStream::new();
    stream.reads.push_back(ReadStep::WouldBlock);
    let mut ws = WebSocket::from_raw_socket(stream, Role::Server, config);
    // Nothing armed before the first read: asking does not arm it.
    assert_eq!(ws.deadline(), None);
    assert_eq!(ws.deadline(), None);
    assert!(ws.read().unwrap_err().is_would_block());
    // The read told the connection the time and armed keepalive from it.
    let deadline = ws.deadline().expect("keepalive is armed by the read");
    // Asking is a query: it changes nothing.
    assert_eq!(ws.deadline(), Some(deadline));
}
