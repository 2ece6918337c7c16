//! Through a SOCKS5 proxy: the CONNECT exchange of RFC 1928, with
//! username/password authentication (RFC 1929), sans-IO, run by the same
//! driver loop as the HTTP CONNECT tunnel and under the same deadline.
//!
//! ```text
//!  client                                       proxy
//!  05 01 M            greeting: one method M
//!                                               05 M'         method chosen (FF: none)
//!  01 ULEN UNAME PLEN PASSWD                    (only if M' = 02)
//!                                               01 S          status (00: success)
//!  05 01 00 ATYP DST.ADDR DST.PORT              CONNECT
//!                                               05 REP 00 ATYP BND.ADDR BND.PORT
//!  ...then the connection is the tunnel: TLS or the WebSocket handshake
//! ```
//!
//! Of the proxy's messages only their first five bytes decide anything;
//! those are kept, the rest of a reply (the address the proxy connected
//! from) is counted. Reading never goes past the end of the message being
//! read, so a read of any size costs nothing more, and no byte of the
//! server's is ever taken for the proxy's.

use std::fmt;
use std::net::SocketAddr;
use std::time::Instant;

use super::error::{Socks5Reason, Socks5Refusal};
use crate::error::{Error, HandshakeFailure, ProtocolError, Result, UrlError};
use crate::upgrade::progress::Progress;
use crate::upgrade::{Exchange, Step};

/// The protocol version of every SOCKS5 message but RFC 1929's.
const VERSION: u8 = 5;
/// RFC 1929: "The VER field contains the current version of the
/// subnegotiation, which is X'01'".
const AUTH_VERSION: u8 = 1;
const NO_AUTHENTICATION: u8 = 0x00;
const USERNAME_PASSWORD: u8 = 0x02;
const NO_ACCEPTABLE_METHODS: u8 = 0xFF;
const CONNECT: u8 = 0x01;
const IPV4: u8 = 0x01;
const DOMAIN: u8 = 0x03;
const IPV6: u8 = 0x04;
/// The status of RFC 1929 and the REP of RFC 1928 that mean success.
const SUCCEEDED: u8 = 0x00;
/// A user name, a password or a domain name is one length byte and up
/// to this many bytes.
const MAX_FIELD: usize = 255;
/// The longest message a proxy sends: a reply with a 255-byte name (VER
/// REP RSV ATYP, LEN and the name, PORT).
const MAX_MESSAGE: usize = 4 + 1 + MAX_FIELD + 2;
/// The bytes of a message that decide anything: VER and the code, and for
/// a reply RSV, ATYP and the length of a name.
const HEAD: usize = 5;

/// Where a SOCKS5 tunnel leads: an address the client resolved
/// (`socks5://`) or a name the proxy resolves (`socks5h://`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Socks5Target {
    /// An IP address and port (ATYP 1 or 4).
    Ip(SocketAddr),
    /// A host name, at most 255 bytes, and port (ATYP 3).
    Domain(String, u16),
}

impl Socks5Target {
    /// `host:port`, with brackets around an IPv6 address.
    fn describe(&self) -> String {
        match self {
            Socks5Target::Ip(address) => address.to_string(),
            Socks5Target::Domain(name, port) if name.contains(':') => format!("[{name}]:{port}"),
            Socks5Target::Domain(name, port) => format!("{name}:{port}"),
        }
    }
}

/// Which of the proxy's messages is being read.
///
/// ```text
///  Method --00--------------------> Reply --00--> open
///         --02--> AuthStatus --00--^
/// ```
///
/// Any other answer ends the exchange; its [`Progress`] holds the outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Awaiting {
    /// VER METHOD, the answer to the greeting.
    Method,
    /// VER STATUS, the answer to the user name and password.
    AuthStatus,
    /// The answer to CONNECT.
    Reply,
}

/// What the bytes of a message so far say (tri-state, like httparse's
/// `Status`), with how far to read: no byte past the message is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Parse {
    /// The message is at least this many bytes, more than there are.
    Partial(usize),
    /// The message is complete: its code (METHOD, STATUS or REP).
    Complete(u8),
}

/// The proxy's message being read: its first bytes and how many have
/// arrived. The rest of a reply, BND.ADDR and BND.PORT, is counted, not
/// kept: a client has no use for the address the proxy connected from.
struct Message {
    head: [u8; HEAD],
    /// At most [`MAX_MESSAGE`].
    len: usize,
}

/// The SOCKS5 exchange with a proxy, sans-IO: greet it, authenticate if
/// credentials were given, ask it to CONNECT to the target, read its
/// reply; success leaves the connection a tunnel to the target. Run it
/// like a [`HandshakeDriver`](crate::handshake::HandshakeDriver) (it is
/// an [`Exchange`]), then run the WebSocket handshake (after TLS, for
/// `wss://`) on the same connection.
///
/// Each of the proxy's messages is answered as soon as it is complete
/// (the next request is a [`Step::Transmit`]), and several may arrive in
/// one read: the outcome depends only on what the proxy sent, not on how
/// it was cut into reads, and so do the bytes sent when the tunnel opens.
/// The one exception is the end: the tunnel is open only if the reply ends
/// where a read does, since whatever follows it in that read came from
/// the proxy before the server could speak.
///
/// # Errors
///
/// [`Step::Done`] carries
/// - [`HandshakeFailure::Socks5Refused`]: the proxy refused (no
///   acceptable method, credentials refused, a CONNECT reply other than
///   success);
/// - [`HandshakeFailure::BadProxyAnswer`]: it answered something that is not
///   SOCKS5 (a wrong version, a method not offered, an unknown address
///   type, a non-zero reserved byte, bytes after its reply);
/// - [`ProtocolError::HandshakeIncomplete`]: the connection ended first;
/// - a timeout ([`Error::timeout`](crate::Error::timeout)) at the deadline, as for any exchange;
/// - [`Error::Url`] before anything is sent, when a user name, password
///   or domain name does not fit its one length byte.
pub struct Socks5Tunnel {
    proxy: String,
    target: Socks5Target,
    /// The one method offered: username/password with credentials, "no
    /// authentication" without.
    method: u8,
    /// RFC 1929's request (it holds the password), until it is queued.
    auth_request: Option<Vec<u8>>,
    /// The CONNECT request, until it is queued.
    connect_request: Vec<u8>,
    awaiting: Awaiting,
    message: Message,
    /// The bytes to send, the deadline, the outcome.
    progress: Progress<()>,
}

impl fmt::Debug for Socks5Tunnel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let method = match self.method {
            USERNAME_PASSWORD => "username/password",
            _ => "none",
        };
        f.debug_struct("Socks5Tunnel")
            .field("proxy", &self.proxy)
            .field("target", &self.target)
            .field("authentication", &method)
            .field("awaiting", &self.awaiting)
            .field("deadline", &self.progress.deadline())
            .field("state", &self.progress.describe())
            .finish_non_exhaustive()
    }
}

impl Socks5Tunnel {
    /// The exchange with the proxy at `proxy` (its `host:port`, for error
    /// messages) that opens a tunnel to `target`, under `deadline` (the
    /// handshake's).
    ///
    /// With `credentials` (user, password) it offers username/password
    /// only, without them "no authentication" only. Offering both when
    /// credentials are set, as curl and Go's client do, lets the proxy
    /// choose: one that ranks "no authentication" first (Dante picks in
    /// its own order) then never sees the credentials and applies its
    /// anonymous rules, and wrong credentials go unnoticed until some rule
    /// refuses the target. Credentials that were given are always
    /// presented (as an HTTP proxy's `Proxy-Authorization` is), and a proxy
    /// that does not take them says so at once (`NoAcceptableMethod`).
    ///
    /// A user name (1 to 255 bytes), a password (up to 255; RFC 1929's
    /// table says from 1, but proxies take an empty one) or a domain (1 to
    /// 255) that does not fit fails the exchange before anything is sent,
    /// with [`Error::Url`].
    pub(crate) fn new(
        proxy: String,
        credentials: Option<(String, String)>,
        target: Socks5Target,
        deadline: Option<Instant>,
    ) -> Self {
        let method = if credentials.is_some() {
            USERNAME_PASSWORD
        } else {
            NO_AUTHENTICATION
        };
        let mut tunnel = Self {
            proxy,
            target,
            method,
            auth_request: None,
            connect_request: Vec::new(),
            awaiting: Awaiting::Method,
            message: Message {
                head: [0; HEAD],
                len: 0,
            },
            progress: Progress::new(Vec::new(), deadline),
        };
        let requests = auth_request(credentials.as_ref())
            .and_then(|auth| Ok((auth, connect_request(&tunnel.target)?)));
        match requests {
            Ok((auth, connect)) => {
                tunnel.auth_request = auth;
                tunnel.connect_request = connect;
                // RFC 1928 section 3: VER NMETHODS METHODS.
                tunnel.progress = Progress::new(vec![VERSION, 1, method], deadline);
            }
            Err(why) => {
                let invalid = UrlError::invalid(format!("SOCKS5 proxy {}: {why}", tunnel.proxy));
                tunnel.progress.finish(Err(invalid), Vec::new());
            }
        }
        tunnel
    }

    /// The bytes it will send first, the greeting (before they are
    /// transmitted).
    pub fn request_bytes(&self) -> &[u8] {
        self.progress.owed()
    }

    fn refusal(&self, reason: Socks5Reason) -> Error {
        HandshakeFailure::Socks5Refused(Box::new(Socks5Refusal {
            proxy: self.proxy.clone(),
            target: self.target.describe(),
            reason,
            offered_credentials: self.method == USERNAME_PASSWORD,
        }))
        .into()
    }

    /// What the message so far says.
    fn parse(&self) -> Result<Parse> {
        let len = self.message.len;
        let bytes = &self.message.head[..len.min(HEAD)];
        match self.awaiting {
            Awaiting::Method => parse_pair(
                bytes,
                VERSION,
                "the SOCKS5 proxy's method choice is not version 5",
            ),
            Awaiting::AuthStatus => parse_pair(
                bytes,
                AUTH_VERSION,
                "the SOCKS5 proxy's authentication status is not version 1",
            ),
            Awaiting::Reply => parse_reply(bytes, len),
        }
    }

    /// Acts on a complete message's `code`: queues the next request, or
    /// ends the exchange. `Ok(true)`: the tunnel is open.
    fn answer(&mut self, code: u8) -> Result<bool> {
        match (self.awaiting, code) {
            (Awaiting::Method, NO_ACCEPTABLE_METHODS) => {
                Err(self.refusal(Socks5Reason::NoAcceptableMethod))
            }
            (Awaiting::Method, method) if method != self.method => {
                Err(HandshakeFailure::BadProxyAnswer(
                    "the SOCKS5 proxy chose an authentication method that was not offered",
                )
                .into())
            }
            (Awaiting::Method, _) => {
                match self.auth_request.take() {
                    Some(auth) => {
                        self.progress.send(auth);
                        self.awaiting = Awaiting::AuthStatus;
                    }
                    None => self.send_connect(),
                }
                Ok(false)
            }
            (Awaiting::AuthStatus, SUCCEEDED) => {
                self.send_connect();
                Ok(false)
            }
            (Awaiting::AuthStatus, _) => Err(self.refusal(Socks5Reason::AuthenticationFailed)),
            (Awaiting::Reply, SUCCEEDED) => Ok(true),
            (Awaiting::Reply, code) => Err(self.refusal(Socks5Reason::Reply(code))),
        }
    }

    fn send_connect(&mut self) {
        self.progress
            .send(std::mem::take(&mut self.connect_request));
        self.awaiting = Awaiting::Reply;
    }

    /// Reads `input` one message at a time; the outcome, once known.
    fn read(&mut self, mut input: &[u8]) -> Option<Result<()>> {
        loop {
            let need = match self.parse() {
                Err(error) => return Some(Err(error)),
                Ok(Parse::Partial(need)) => need,
                Ok(Parse::Complete(code)) => {
                    self.message.len = 0;
                    match self.answer(code) {
                        Err(error) => return Some(Err(error)),
                        Ok(false) => continue,
                        // The server speaks only after the client (the
                        // upgrade request, or TLS's ClientHello): anything
                        // here came from the proxy.
                        Ok(true) if !input.is_empty() => {
                            return Some(Err(HandshakeFailure::BadProxyAnswer(
                                "the SOCKS5 proxy sent bytes after its reply, before the server could speak",
                            )
                            .into()));
                        }
                        Ok(true) => return Some(Ok(())),
                    }
                }
            };
            if input.is_empty() {
                return None;
            }
            debug_assert!(self.message.len < need && need <= MAX_MESSAGE);
            let Message { head, len } = &mut self.message;
            let take = (need - *len).min(input.len());
            let start = (*len).min(HEAD);
            let kept = (HEAD - start).min(take);
            head[start..start + kept].copy_from_slice(&input[..kept]);
            *len += take;
            input = &input[take..];
        }
    }
}

/// A user name and password request (RFC 1929 section 2), if credentials
/// were given: VER ULEN UNAME PLEN PASSWD.
fn auth_request(credentials: Option<&(String, String)>) -> Result<Option<Vec<u8>>, String> {
    let Some((user, password)) = credentials else {
        return Ok(None);
    };
    if user.is_empty() {
        return Err("an empty user name cannot authenticate (RFC 1929: 1 to 255 bytes)".into());
    }
    if user.len() > MAX_FIELD {
        return Err(format!(
            "the user name is {} bytes, more than the 255 RFC 1929 allows",
            user.len()
        ));
    }
    if password.len() > MAX_FIELD {
        return Err("the password is longer than the 255 bytes RFC 1929 allows".into());
    }
    let mut out = Vec::with_capacity(3 + user.len() + password.len());
    out.extend_from_slice(&[AUTH_VERSION, user.len() as u8]);
    out.extend_from_slice(user.as_bytes());
    out.push(password.len() as u8);
    out.extend_from_slice(password.as_bytes());
    Ok(Some(out))
}

/// The CONNECT request (RFC 1928 section 4): VER CMD RSV ATYP DST.ADDR
/// DST.PORT.
fn connect_request(target: &Socks5Target) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(7 + MAX_FIELD);
    out.extend_from_slice(&[VERSION, CONNECT, 0]);
    let port = match target {
        Socks5Target::Ip(SocketAddr::V4(address)) => {
            out.push(IPV4);
            out.extend_from_slice(&address.ip().octets());
            address.port()
        }
        // The scope and flow label have no field: the proxy's routing
        // decides.
        Socks5Target::Ip(SocketAddr::V6(address)) => {
            out.push(IPV6);
            out.extend_from_slice(&address.ip().octets());
            address.port()
        }
        Socks5Target::Domain(name, port) => {
            if name.is_empty() {
                return Err("the target's host name is empty".into());
            }
            if name.len() > MAX_FIELD {
                return Err(format!(
                    "the target's host name is {} bytes, more than the 255 SOCKS5 allows",
                    name.len()
                ));
            }
            out.extend_from_slice(&[DOMAIN, name.len() as u8]);
            out.extend_from_slice(name.as_bytes());
            *port
        }
    };
    out.extend_from_slice(&port.to_be_bytes());
    Ok(out)
}

/// VER CODE: the method choice (RFC 1928 section 3) or the authentication
/// status (RFC 1929 section 2), each two bytes.
fn parse_pair(bytes: &[u8], version: u8, wrong_version: &'static str) -> Result<Parse> {
    match *bytes {
        [first, ..] if first != version => {
            Err(HandshakeFailure::BadProxyAnswer(wrong_version).into())
        }
        [_, code, ..] => Ok(Parse::Complete(code)),
        _ => Ok(Parse::Partial(2)),
    }
}

/// The reply to CONNECT (RFC 1928 section 6):
///
/// ```text
///  +----+-----+-------+------+----------+----------+
///  |VER | REP |  RSV  | ATYP | BND.ADDR | BND.PORT |
///  +----+-----+-------+------+----------+----------+
///  | 1  |  1  | X'00' |  1   | Variable |    2     |
///  +----+-----+-------+------+----------+----------+
/// ```
///
/// A refusal is complete at its REP: the rest of a failure reply says
/// nothing, and "the SOCKS server MUST terminate the TCP connection
/// shortly after sending the reply", so waiting for it could only turn a
/// clear refusal into an incomplete exchange. BND.ADDR's length is known
/// from ATYP (and for a name, its length byte, at most 255) before any of
/// it is read. `bytes` are the first (at most [`HEAD`]) of the `len` that
/// have arrived.
fn parse_reply(bytes: &[u8], len: usize) -> Result<Parse> {
    let bad = |why| Err(HandshakeFailure::BadProxyAnswer(why).into());
    if bytes.first().is_some_and(|&version| version != VERSION) {
        return bad("the SOCKS5 proxy's reply is not version 5");
    }
    let Some(&code) = bytes.get(1) else {
        return Ok(Parse::Partial(2));
    };
    if code != SUCCEEDED {
        return Ok(Parse::Complete(code));
    }
    // "Fields marked RESERVED (RSV) must be set to X'00'" (section 6).
    if bytes.get(2).is_some_and(|&reserved| reserved != 0) {
        return bad("the SOCKS5 proxy's reply has a reserved byte other than 0");
    }
    let Some(&kind) = bytes.get(3) else {
        return Ok(Parse::Partial(4));
    };
    let address = match kind {
        IPV4 => 4,
        IPV6 => 16,
        DOMAIN => match bytes.get(4) {
            Some(&len) => 1 + usize::from(len),
            None => return Ok(Parse::Partial(5)),
        },
        _ => return bad("the SOCKS5 proxy's reply has an unknown address type"),
    };
    let total = 4 + address + 2;
    Ok(if len < total {
        Parse::Partial(total)
    } else {
        Parse::Complete(SUCCEEDED)
    })
}

impl Exchange for Socks5Tunnel {
    type Outcome = Result<()>;

    fn poll(&mut self, now: Instant) -> Step<Result<()>> {
        self.progress.poll(now)
    }

    fn receive(&mut self, input: &[u8], now: Instant) {
        if !self.progress.reading(now) {
            return;
        }
        if input.is_empty() {
            let eof = Err(ProtocolError::HandshakeIncomplete.into());
            return self.progress.finish(eof, Vec::new());
        }
        match self.read(input) {
            None => {}
            // Requests still owed (the proxy answered them before they
            // were sent) go out first, so the bytes sent are the same
            // however the answers were cut into reads.
            Some(Ok(())) => {
                let owed = self.progress.owed().to_vec();
                self.progress.finish(Ok(()), owed);
            }
            Some(Err(error)) => self.progress.finish(Err(error), Vec::new()),
        }
    }

    fn read_failed(&mut self, error: Error, now: Instant) {
        self.progress.read_failed(error, now);
    }

    fn transmit_failed(&mut self, error: Error) {
        self.progress.transmit_failed(error);
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.progress.handle_timeout(now);
    }

    fn deadline(&self) -> Option<Instant> {
        self.progress.deadline()
    }
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};
    use std::time::Duration;

    use super::*;
    use crate::error::{Detail, TimeoutKind};

    const PROXY: &str = "127.0.0.1:1080";
    const USER: &str = "alice";
    const PASSWORD: &str = "s3cret";

    fn credentials() -> Option<(String, String)> {
        Some((USER.to_owned(), PASSWORD.to_owned()))
    }

    fn domain() -> Socks5Target {
        Socks5Target::Domain("example.com".to_owned(), 443)
    }

    fn v4() -> Socks5Target {
        Socks5Target::Ip(SocketAddr::new(Ipv4Addr::new(93, 184, 216, 34).into(), 443))
    }

    fn v6() -> Socks5Target {
        let ip = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
        Socks5Target::Ip(SocketAddr::new(ip.into(), 8443))
    }

    fn tunnel(credentials: Option<(String, String)>, target: Socks5Target) -> Socks5Tunnel {
        Socks5Tunnel::new(PROXY.to_owned(), credentials, target, None)
    }

    /// Runs `tunnel` on `reads` (then the end of the stream): everything
    /// it sent, and its outcome.
    fn run(mut tunnel: Socks5Tunnel, reads: &[&[u8]]) -> (Vec<u8>, Result<()>) {
        let now = Instant::now();
        let mut sent = Vec::new();
        let mut reads = reads.iter();
        loop {
            match tunnel.poll(now) {
                Step::Transmit(bytes) => sent.extend_from_slice(&bytes),
                Step::Receive { .. } => tunnel.receive(reads.next().copied().unwrap_or(b""), now),
                Step::Done(result) => {
                    assert!(matches!(
                        tunnel.poll(now),
                        Step::Done(Err(Error::AlreadyClosed))
                    ));
                    return (sent, result);
                }
            }
        }
    }

    fn refusal(result: Result<()>) -> Socks5Refusal {
        match result.map_err(Error::into_detail) {
            Err(Ok(Detail::Handshake(HandshakeFailure::Socks5Refused(refusal)))) => *refusal,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    /// A success reply with an IPv4 BND.ADDR.
    const REPLY_V4: &[u8] = &[5, 0, 0, 1, 10, 0, 0, 1, 0x1f, 0x90];

    fn reply_v6() -> Vec<u8> {
        [&[5, 0, 0, 4][..], &[0xfe; 16], &[0, 80]].concat()
    }

    /// A success reply with the longest BND.ADDR, a 255-byte name.
    fn reply_long_name() -> Vec<u8> {
        [&[5, 0, 0, 3, 255][..], &[b'n'; 255], &[1, 187]].concat()
    }

    #[test]
    fn the_requests_are_the_rfcs_bytes() {
        let long = "x".repeat(255);
        let user_auth = |user: &str, password: &str| {
            [
                &[1, user.len() as u8][..],
                user.as_bytes(),
                &[password.len() as u8],
                password.as_bytes(),
            ]
            .concat()
        };
        // (credentials, target, greeting, authentication request, CONNECT)
        type Case = (
            Option<(String, String)>,
            Socks5Target,
            Vec<u8>,
            Vec<u8>,
            Vec<u8>,
        );
        let cases: Vec<Case> = vec![
            (
                None,
                v4(),
                vec![5, 1, 0],
                vec![],
                vec![5, 1, 0, 1, 93, 184, 216, 34, 1, 187],
            ),
            (
                None,
                v6(),
                vec![5, 1, 0],
                vec![],
                [
                    &[5, 1, 0, 4][..],
                    &[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                    &[0x20, 0xfb],
                ]
                .concat(),
            ),
            (
                credentials(),
                domain(),
                vec![5, 1, 2],
                b"\x01\x05alice\x06s3cret".to_vec(),
                b"\x05\x01\x00\x03\x0bexample.com\x01\xbb".to_vec(),
            ),
            (
                Some((USER.to_owned(), String::new())),
                v4(),
                vec![5, 1, 2],
                b"\x01\x05alice\x00".to_vec(),
                vec![5, 1, 0, 1, 93, 184, 216, 34, 1, 187],
            ),
            (
                Some((long.clone(), long.clone())),
                Socks5Target::Domain(long.clone(), 1),
                vec![5, 1, 2],
                user_auth(&long, &long),
                [&[5, 1, 0, 3, 255][..], long.as_bytes(), &[0, 1]].concat(),
            ),
        ];
        for (credentials, target, greeting, auth, connect) in cases {
            let answer = if credentials.is_some() {
                [&[5, 2, 1, 0][..], REPLY_V4].concat()
            } else {
                [&[5, 0][..], REPLY_V4].concat()
            };
            let tunnel = tunnel(credentials, target.clone());
            assert_eq!(tunnel.request_bytes(), greeting, "{target:?}");
            let (sent, result) = run(tunnel, &[&answer]);
            assert!(result.is_ok(), "{target:?}: {result:?}");
            assert_eq!(sent, [greeting, auth, connect].concat(), "{target:?}");
        }
    }

    #[test]
    fn the_tunnel_opens_however_the_answers_are_split() {
        // (credentials, target, the proxy's whole answer)
        let cases = [
            (None, v4(), [&[5, 0][..], REPLY_V4].concat()),
            (
                credentials(),
                v6(),
                [&[5, 2, 1, 0][..], &reply_v6()].concat(),
            ),
            (
                credentials(),
                domain(),
                [&[5, 2, 1, 0][..], &reply_long_name()].concat(),
            ),
            (None, domain(), [&[5, 0][..], &reply_long_name()].concat()),
        ];
        for (credentials, target, answer) in cases {
            let fresh = || tunnel(credentials.clone(), target.clone());
            let (expected, result) = run(fresh(), &[&answer]);
            assert!(result.is_ok(), "at once: {result:?}");
            let bytes: Vec<&[u8]> = answer.chunks(1).collect();
            let (sent, result) = run(fresh(), &bytes);
            assert!(result.is_ok(), "byte by byte: {result:?}");
            assert_eq!(sent, expected, "byte by byte");
            for split in 1..answer.len() {
                let (sent, result) = run(fresh(), &[&answer[..split], &answer[split..]]);
                assert!(result.is_ok(), "{split}: {result:?}");
                assert_eq!(sent, expected, "{split}");
            }
        }
    }

    #[test]
    fn each_refusal_says_why() {
        let refused = "SOCKS5 proxy 127.0.0.1:1080 refused CONNECT";
        // (credentials, answer, reason, needs authentication, message)
        let cases: &[(bool, &[u8], Socks5Reason, bool, &str)] = &[
            (
                false,
                &[5, 0xff],
                Socks5Reason::NoAcceptableMethod,
                true,
                "example.com:443: no acceptable authentication method (credentials missing or refused)",
            ),
            (
                true,
                &[5, 0xff],
                Socks5Reason::NoAcceptableMethod,
                false,
                "example.com:443: no acceptable authentication method (username/password was offered)",
            ),
            (
                true,
                &[5, 2, 1, 1],
                Socks5Reason::AuthenticationFailed,
                true,
                "example.com:443: username/password authentication failed (credentials missing or refused)",
            ),
            // A refusal is complete at its code, whatever follows.
            (
                false,
                &[5, 0, 5, 5],
                Socks5Reason::Reply(5),
                false,
                "example.com:443: connection refused (reply 5)",
            ),
            (
                true,
                &[5, 2, 1, 0, 5, 2, 0, 1, 0, 0, 0, 0, 0, 0, b'x'],
                Socks5Reason::Reply(2),
                false,
                "example.com:443: connection not allowed by ruleset (reply 2)",
            ),
        ];
        for &(with_credentials, answer, reason, needs_authentication, message) in cases {
            let credentials = with_credentials.then(credentials).flatten();
            for reads in [vec![answer], answer.chunks(1).collect()] {
                let refusal = refusal(run(tunnel(credentials.clone(), domain()), &reads).1);
                assert_eq!(refusal.reason, reason, "{answer:?}");
                assert_eq!(refusal.proxy, PROXY);
                assert_eq!(refusal.target, "example.com:443");
                assert_eq!(refusal.needs_authentication(), needs_authentication);
                assert_eq!(refusal.to_string(), format!("{refused} {message}"));
            }
        }
    }

    #[test]
    fn every_reply_code_is_named() {
        let cases = [
            (1, "general SOCKS server failure"),
            (2, "connection not allowed by ruleset"),
            (3, "network unreachable"),
            (4, "host unreachable"),
            (5, "connection refused"),
            (6, "TTL expired"),
            (7, "command not supported"),
            (8, "address type not supported"),
            (9, "unassigned reply code"),
            (0xff, "unassigned reply code"),
        ];
        for (code, words) in cases {
            let refusal = refusal(run(tunnel(None, v6()), &[&[5, 0, 5, code]]).1);
            assert_eq!(refusal.reason, Socks5Reason::Reply(code));
            assert_eq!(
                refusal.to_string(),
                format!(
                    "SOCKS5 proxy 127.0.0.1:1080 refused CONNECT [2001:db8::1]:8443: {words} (reply {code})"
                )
            );
        }
    }

    #[test]
    fn bad_answers_say_what_was_wrong() {
        // (credentials, answer, what was wrong)
        let cases: &[(bool, &[u8], &str)] = &[
            (
                false,
                &[4, 0],
                "the SOCKS5 proxy's method choice is not version 5",
            ),
            (
                false,
                b"HTTP/1.1 200 OK\r\n\r\n",
                "the SOCKS5 proxy's method choice is not version 5",
            ),
            (
                false,
                &[5, 2],
                "the SOCKS5 proxy chose an authentication method that was not offered",
            ),
            (
                false,
                &[5, 1],
                "the SOCKS5 proxy chose an authentication method that was not offered",
            ),
            (
                true,
                &[5, 0],
                "the SOCKS5 proxy chose an authentication method that was not offered",
            ),
            (
                true,
                &[5, 2, 5, 0],
                "the SOCKS5 proxy's authentication status is not version 1",
            ),
            (
                false,
                &[5, 0, 4, 0, 0, 1, 0, 0, 0, 0, 0, 0],
                "the SOCKS5 proxy's reply is not version 5",
            ),
            (
                false,
                &[5, 0, 5, 0, 1, 1, 0, 0, 0, 0, 0, 0],
                "the SOCKS5 proxy's reply has a reserved byte other than 0",
            ),
            (
                false,
                &[5, 0, 5, 0, 0, 2, 0, 0, 0, 0, 0, 0],
                "the SOCKS5 proxy's reply has an unknown address type",
            ),
            (
                false,
                &[5, 0, 5, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x16],
                "the SOCKS5 proxy sent bytes after its reply, before the server could speak",
            ),
        ];
        for &(with_credentials, answer, what) in cases {
            let credentials = with_credentials.then(credentials).flatten();
            // At once, and byte by byte up to the last read (bytes after
            // the reply must come in the same read as its end).
            let (last, rest) = answer.split_last().unwrap();
            let mut bytes: Vec<&[u8]> = rest.chunks(1).collect();
            if what.contains("after its reply") {
                let end = answer.len() - 2;
                bytes.truncate(end);
                bytes.push(&answer[end..]);
            } else {
                bytes.push(std::slice::from_ref(last));
            }
            for reads in [vec![answer], bytes] {
                let result = run(tunnel(credentials.clone(), domain()), &reads).1;
                match result.as_ref().err().and_then(|e| e.handshake_failure()) {
                    Some(HandshakeFailure::BadProxyAnswer(why)) => {
                        assert_eq!(*why, what, "{answer:?}");
                    }
                    _ => panic!("{answer:?}: {result:?}"),
                }
            }
        }
    }

    #[test]
    fn an_early_end_leaves_the_exchange_incomplete() {
        let answer = [&[5, 2, 1, 0][..], &reply_long_name()].concat();
        for end in 0..answer.len() {
            let (_, result) = run(tunnel(credentials(), domain()), &[&answer[..end]]);
            assert!(
                matches!(
                    result,
                    Err(Error::Protocol(ProtocolError::HandshakeIncomplete))
                ),
                "{end}: {result:?}"
            );
        }
    }

    #[test]
    fn what_cannot_be_sent_fails_before_anything_is() {
        let long = "x".repeat(256);
        let creds = |user: &str, password: &str| Some((user.to_owned(), password.to_owned()));
        // (credentials, target, what the message names)
        let cases = [
            (creds("", PASSWORD), domain(), "an empty user name"),
            (
                creds(&long, PASSWORD),
                domain(),
                "the user name is 256 bytes",
            ),
            (creds(USER, &long), domain(), "the password is longer"),
            (
                None,
                Socks5Target::Domain(long.clone(), 443),
                "the target's host name is 256 bytes",
            ),
            (
                credentials(),
                Socks5Target::Domain(String::new(), 443),
                "the target's host name is empty",
            ),
        ];
        for (credentials, target, what) in cases {
            let mut tunnel = tunnel(credentials, target);
            assert!(tunnel.request_bytes().is_empty());
            match tunnel.poll(Instant::now()) {
                Step::Done(Err(error)) if matches!(error.detail(), Some(Detail::InvalidUrl(_))) => {
                    let Some(Detail::InvalidUrl(message)) = error.detail() else {
                        unreachable!()
                    };
                    assert!(
                        message.starts_with("SOCKS5 proxy 127.0.0.1:1080: "),
                        "{message}"
                    );
                    assert!(message.contains(what), "{message}");
                    assert!(!message.contains(&long) && !message.contains(PASSWORD));
                }
                other => panic!("{what}: {other:?}"),
            }
        }
    }

    #[test]
    fn the_deadline_ends_a_silent_or_slow_proxy() {
        let start = Instant::now();
        let deadline = start + Duration::from_secs(1);
        let at = |millis| start + Duration::from_millis(millis);
        // How the tunnel learns the time once the proxy has chosen the
        // method (the authentication request is out).
        type Report = fn(&mut Socks5Tunnel, Instant);
        let reports: &[(&str, Report)] = &[
            ("poll", |_, _| {}),
            ("handle_timeout", |tunnel, now| tunnel.handle_timeout(now)),
            ("the answer after the deadline", |tunnel, now| {
                tunnel.receive(&[1, 0], now);
            }),
            ("a read cut by a timeout", |tunnel, now| {
                let timeout = std::io::Error::from(std::io::ErrorKind::WouldBlock);
                tunnel.read_failed(timeout.into(), now);
            }),
        ];
        for &(how, report) in reports {
            let mut tunnel =
                Socks5Tunnel::new(PROXY.to_owned(), credentials(), domain(), Some(deadline));
            assert!(matches!(tunnel.poll(start), Step::Transmit(_)), "{how}");
            assert!(
                matches!(tunnel.poll(start), Step::Receive { deadline: Some(d) } if d == deadline),
                "{how}"
            );
            tunnel.receive(&[5, 2], at(10));
            assert!(matches!(tunnel.poll(at(10)), Step::Transmit(_)), "{how}");
            tunnel.handle_timeout(at(999));
            assert!(
                matches!(tunnel.poll(at(999)), Step::Receive { .. }),
                "{how}"
            );
            report(&mut tunnel, deadline);
            assert!(
                matches!(
                    tunnel.poll(deadline),
                    Step::Done(Err(ref e)) if e.timeout() == Some(TimeoutKind::Handshake)
                ),
                "{how}"
            );
        }
        // Requests owed when the deadline passes are not sent.
        let mut tunnel = Socks5Tunnel::new(PROXY.to_owned(), None, v4(), Some(deadline));
        assert!(matches!(
            tunnel.poll(deadline),
            Step::Done(Err(ref e)) if e.timeout() == Some(TimeoutKind::Handshake)
        ));
    }

    #[test]
    fn a_failed_read_or_write_fails_the_exchange() {
        let now = Instant::now();
        let mut tunnel = tunnel(None, v4());
        let _greeting = tunnel.poll(now);
        let broken = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        tunnel.transmit_failed(broken.into());
        assert!(matches!(tunnel.poll(now), Step::Done(Err(Error::Io(_)))));
        let mut tunnel = self::tunnel(None, v4());
        let _greeting = tunnel.poll(now);
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        tunnel.read_failed(reset.into(), now);
        assert!(matches!(tunnel.poll(now), Step::Done(Err(Error::Io(_)))));
        // Inputs after the end are ignored.
        tunnel.receive(&[5, 0], now);
        assert!(matches!(
            tunnel.poll(now),
            Step::Done(Err(Error::AlreadyClosed))
        ));
    }

    #[test]
    fn debug_never_shows_the_password() {
        let now = Instant::now();
        let mut tunnel = tunnel(credentials(), domain());
        let before = format!("{tunnel:?}");
        assert!(before.contains("username/password") && before.contains("example.com"));
        let _greeting = tunnel.poll(now);
        // The authentication request is queued, then sent.
        tunnel.receive(&[5, 2], now);
        let queued = format!("{tunnel:?}");
        let _auth = tunnel.poll(now);
        let sent = format!("{tunnel:?}");
        for shown in [before, queued, sent] {
            assert!(!shown.contains(PASSWORD), "{shown}");
        }
    }

    #[test]
    fn a_flood_after_the_reply_is_refused_at_its_first_byte() {
        let answer = [&[5, 0][..], REPLY_V4, &[0; 64 << 10]].concat();
        let (_, result) = run(tunnel(None, v4()), &[&answer]);
        assert!(matches!(
            result.as_ref().err().and_then(|e| e.handshake_failure()),
            Some(HandshakeFailure::BadProxyAnswer(why)) if why.contains("after its reply")
        ));
        // Nothing in it grows with what arrives, and the longest message
        // (262 bytes) is not carried: its address is only counted.
        let size = std::mem::size_of::<Socks5Tunnel>();
        assert!(size < MAX_MESSAGE, "{size}");
    }
}
