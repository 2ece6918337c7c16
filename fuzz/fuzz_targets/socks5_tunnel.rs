//! The SOCKS5 proxy's side of a CONNECT: `Socks5Tunnel` (an `Exchange`,
//! made through `lockgate::fuzz_api`, built only with `--cfg fuzzing`) on
//! arbitrary bytes in arbitrary reads, with or without credentials, to an
//! IPv4, IPv6 or domain target.
//!
//! Invariants: no panic; the outcome is the one the same bytes give read
//! one at a time (a refusal or a bad answer decided at the same byte),
//! except that the tunnel opens only when a read ends exactly where a
//! successful answer (parsed here independently) ends, and is refused for
//! the bytes after its reply otherwise; at most 266 bytes (the longest
//! answer) are taken before the outcome; what is sent is a prefix of the
//! RFC's requests, all of them, identical whatever the reads, when the
//! tunnel opens; after the outcome `poll` says `AlreadyClosed`; the heap
//! stays within a constant whatever the reads (up to 1 MiB in one).
#![no_main]

#[cfg(fuzzing)]
mod target {
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
    use std::time::Instant;

    use libfuzzer_sys::fuzz_target;
    use lockgate::dial::{Socks5Reason, Socks5Target, Socks5Tunnel};
    use lockgate::fuzz_api::socks5_tunnel;
    use lockgate::handshake::{Exchange, Step};
    use lockgate::{Detail, Error, HandshakeFailure, ProtocolError};
    use lockgate_fuzz::{HeapWatch, Knobs, Shape};

    const PROXY: &str = "127.0.0.1:1080";
    /// The most a proxy says before the outcome: a method choice, an
    /// authentication status and a reply with a 255-byte name.
    const LONGEST_ANSWER: usize = 2 + 2 + (4 + 1 + 255 + 2);
    /// The tunnel's requests, its error and what a run records, with room
    /// to spare; not a function of the bytes received.
    const HEAP_BOUND: usize = 4 << 10;

    /// How a run ended, comparably.
    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Outcome {
        Open,
        Refused(Socks5Reason),
        Bad(&'static str),
        Incomplete,
    }

    struct Run {
        outcome: Outcome,
        /// Everything transmitted.
        sent: Vec<u8>,
        /// Bytes received before the outcome.
        fed: usize,
        /// The length of the last read.
        last: usize,
        /// Whether the end of the stream was reported.
        eof: bool,
    }

    /// One knob byte: bits 0-1 the credentials, bits 2-3 the target.
    struct Setup {
        credentials: Option<(String, String)>,
        target: Socks5Target,
    }

    impl Setup {
        fn read(b: u8) -> Self {
            let credentials = match b & 3 {
                0 => None,
                1 => Some(("user".to_owned(), "pass".to_owned())),
                2 => Some(("u".repeat(255), "p".repeat(255))),
                _ => Some(("u".to_owned(), String::new())),
            };
            let target = match b >> 2 & 3 {
                0 => Socks5Target::Domain("example.com".to_owned(), 443),
                1 => Socks5Target::Ip(SocketAddr::new(Ipv4Addr::new(10, 1, 2, 3).into(), 8080)),
                2 => Socks5Target::Ip(SocketAddr::new(Ipv6Addr::LOCALHOST.into(), 443)),
                _ => Socks5Target::Domain("d".repeat(255), 1),
            };
            Self {
                credentials,
                target,
            }
        }

        fn tunnel(&self) -> Socks5Tunnel {
            let credentials = self
                .credentials
                .as_ref()
                .map(|(user, password)| (user.as_str(), password.as_str()));
            socks5_tunnel(PROXY, credentials, self.target.clone(), None)
        }

        /// The greeting, authentication and CONNECT requests, written
        /// here from RFC 1928 and 1929.
        fn requests(&self) -> Vec<u8> {
            let mut out = vec![5, 1, if self.credentials.is_some() { 2 } else { 0 }];
            if let Some((user, password)) = &self.credentials {
                out.extend_from_slice(&[1, user.len() as u8]);
                out.extend_from_slice(user.as_bytes());
                out.push(password.len() as u8);
                out.extend_from_slice(password.as_bytes());
            }
            out.extend_from_slice(&[5, 1, 0]);
            let port = match &self.target {
                Socks5Target::Ip(SocketAddr::V4(a)) => {
                    out.push(1);
                    out.extend_from_slice(&a.ip().octets());
                    a.port()
                }
                Socks5Target::Ip(SocketAddr::V6(a)) => {
                    out.push(4);
                    out.extend_from_slice(&a.ip().octets());
                    a.port()
                }
                Socks5Target::Domain(name, port) => {
                    out.extend_from_slice(&[3, name.len() as u8]);
                    out.extend_from_slice(name.as_bytes());
                    *port
                }
            };
            out.extend_from_slice(&port.to_be_bytes());
            out
        }

        /// Where a successful answer at the start of `stream` ends, if
        /// there is one: the method offered, a zero status if credentials
        /// were sent, a zero reply with its whole address.
        fn success_end(&self, stream: &[u8]) -> Option<usize> {
            let method = if self.credentials.is_some() { 2 } else { 0 };
            let mut at = 0;
            let mut expect = |bytes: &[u8]| {
                let ok = stream.get(at..at + bytes.len()) == Some(bytes);
                at += bytes.len();
                ok
            };
            let answered = expect(&[5, method])
                && (self.credentials.is_none() || expect(&[1, 0]))
                && expect(&[5, 0, 0]);
            if !answered {
                return None;
            }
            let address = match *stream.get(at)? {
                1 => 4,
                4 => 16,
                3 => 1 + usize::from(*stream.get(at + 1)?),
                _ => return None,
            };
            let end = at + 1 + address + 2;
            (end <= stream.len()).then_some(end)
        }
    }

    fn outcome(setup: &Setup, result: Result<(), Error>) -> Outcome {
        match result.map_err(Error::into_detail) {
            Ok(()) => Outcome::Open,
            Err(Ok(Detail::Handshake(HandshakeFailure::Socks5Refused(refusal)))) => {
                assert_eq!(refusal.proxy, PROXY);
                let credentials = setup.credentials.is_some();
                match refusal.reason {
                    Socks5Reason::NoAcceptableMethod => {
                        assert_eq!(refusal.needs_authentication(), !credentials);
                    }
                    Socks5Reason::AuthenticationFailed => {
                        assert!(credentials, "no credentials were sent");
                        assert!(refusal.needs_authentication());
                    }
                    Socks5Reason::Reply(code) => {
                        assert_ne!(code, 0, "success is no refusal");
                        assert!(!refusal.needs_authentication());
                    }
                    _ => {}
                }
                Outcome::Refused(refusal.reason)
            }
            Err(Ok(Detail::Handshake(HandshakeFailure::BadProxyAnswer(why)))) => Outcome::Bad(why),
            Err(Err(Error::Protocol(ProtocolError::HandshakeIncomplete))) => Outcome::Incomplete,
            Err(other) => panic!("unexpected {other:?}"),
        }
    }

    /// Runs `tunnel` on `reads`, then the end of the stream.
    fn run<'s>(
        setup: &Setup,
        mut tunnel: Socks5Tunnel,
        mut reads: impl Iterator<Item = &'s [u8]>,
    ) -> Run {
        let now = Instant::now();
        let (mut sent, mut fed, mut last, mut eof, mut transmits) = (Vec::new(), 0, 0, false, 0);
        loop {
            match tunnel.poll(now) {
                Step::Transmit(bytes) => {
                    transmits += 1;
                    assert!(transmits <= 3 && !bytes.is_empty(), "one send per request");
                    sent.extend_from_slice(&bytes);
                }
                Step::Receive { deadline } => {
                    assert_eq!(deadline, None);
                    match reads.next() {
                        Some(chunk) => {
                            fed += chunk.len();
                            last = chunk.len();
                            tunnel.receive(chunk, now);
                        }
                        None => {
                            assert!(!eof, "Receive after the end of the stream");
                            eof = true;
                            tunnel.receive(b"", now);
                        }
                    }
                }
                Step::Done(result) => {
                    assert!(matches!(
                        tunnel.poll(now),
                        Step::Done(Err(Error::AlreadyClosed))
                    ));
                    return Run {
                        outcome: outcome(setup, result),
                        sent,
                        fed,
                        last,
                        eof,
                    };
                }
            }
        }
    }

    fuzz_target!(|data: &[u8]| {
        let (mut knobs, body) = Knobs::split(data, 8);
        let setup = Setup::read(knobs.byte());
        let shape = Shape::read(&mut knobs);
        let stream = shape.expand(body);
        let requests = setup.requests();

        let watch = HeapWatch::start();
        let shaped = run(&setup, setup.tunnel(), shape.chunks(&stream));
        watch.check(HEAP_BOUND, "socks5 tunnel", data);

        let one_by_one = run(&setup, setup.tunnel(), stream.chunks(1));
        assert!(
            one_by_one.fed <= LONGEST_ANSWER,
            "{} bytes taken",
            one_by_one.fed
        );
        for run in [&shaped, &one_by_one] {
            assert!(requests.starts_with(&run.sent), "sent {:02x?}", run.sent);
            assert_eq!(run.outcome == Outcome::Incomplete, run.eof);
        }
        // The decision falls in the read that holds its byte.
        let decided = one_by_one.fed;
        if !one_by_one.eof {
            assert!(
                shaped.fed >= decided && shaped.fed - shaped.last < decided,
                "decided at {decided}, shaped reads ended at {} (last {})",
                shaped.fed,
                shaped.last
            );
        }
        match setup.success_end(&stream) {
            Some(end) => {
                assert_eq!(one_by_one.outcome, Outcome::Open);
                assert_eq!(decided, end);
                assert_eq!(one_by_one.sent, requests, "all requests, once");
                if shaped.fed == end {
                    assert_eq!(shaped.outcome, Outcome::Open);
                    assert_eq!(shaped.sent, requests, "the same bytes whatever the reads");
                } else {
                    assert!(
                        matches!(shaped.outcome, Outcome::Bad(why) if why.contains("after its reply")),
                        "{:?} with bytes after the reply",
                        shaped.outcome
                    );
                }
            }
            None => {
                assert_ne!(one_by_one.outcome, Outcome::Open);
                assert_eq!(shaped.outcome, one_by_one.outcome);
            }
        }
    });
}
