//! Through an HTTP proxy: a CONNECT tunnel (RFC 9110 section 9.3.6) to
//! the WebSocket server, sans-IO, run by the same driver loop as the
//! handshake and under the same deadline.

use std::fmt;
use std::time::Instant;

use http::StatusCode;
use http::header::{HOST, HeaderValue, PROXY_AUTHORIZATION};

use super::authority::authority;
use super::error::ProxyRefusal;
use crate::error::{Detail, Error, HandshakeFailure, ProtocolError, Result, UrlError};
use crate::upgrade::head::{self, HeadReader};
use crate::upgrade::progress::Progress;
use crate::upgrade::summary::{BODY_SUMMARY, summarize_body};
use crate::upgrade::{Exchange, Step};

/// The CONNECT exchange with an HTTP proxy, sans-IO: transmit the
/// request, read the proxy's answer; a 2xx leaves the connection a tunnel
/// to the target. Run it like a
/// [`HandshakeDriver`](crate::handshake::HandshakeDriver) (it is an
/// [`Exchange`]), then run the WebSocket handshake (after TLS, for
/// `wss://`) on the same connection.
pub struct ProxyTunnel {
    reader: HeadReader,
    proxy: String,
    target: String,
    /// The request to send, the deadline, the outcome.
    progress: Progress<()>,
}

impl fmt::Debug for ProxyTunnel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxyTunnel")
            .field("proxy", &self.proxy)
            .field("target", &self.target)
            .field("deadline", &self.progress.deadline())
            .field("state", &self.progress.describe())
            .finish_non_exhaustive()
    }
}

impl ProxyTunnel {
    /// The CONNECT through `proxy` (`host:port`, for messages) to
    /// `host:port`, sending `authorization` if any.
    pub(crate) fn new(
        proxy: String,
        authorization: Option<HeaderValue>,
        host: &str,
        port: u16,
        deadline: Option<Instant>,
    ) -> Self {
        let target = authority(host, port);
        let mut tunnel = Self {
            reader: HeadReader::proxy_response(),
            proxy,
            target,
            progress: Progress::new(Vec::new(), deadline),
        };
        let Ok(host) = HeaderValue::try_from(tunnel.target.as_str()) else {
            let target = &tunnel.target;
            let invalid = bad_url(format!("{target:?} is not a valid CONNECT target"));
            tunnel.progress.finish(Err(invalid), Vec::new());
            return tunnel;
        };
        let mut out = Vec::with_capacity(128);
        out.extend_from_slice(b"CONNECT ");
        out.extend_from_slice(tunnel.target.as_bytes());
        out.extend_from_slice(b" HTTP/1.1\r\n");
        head::write_header(&mut out, &HOST, &host);
        if let Some(authorization) = &authorization {
            head::write_header(&mut out, &PROXY_AUTHORIZATION, authorization);
        }
        out.extend_from_slice(b"\r\n");
        tunnel.progress = Progress::new(out, deadline);
        tunnel
    }

    /// The CONNECT request's bytes (before they are transmitted).
    pub fn request_bytes(&self) -> &[u8] {
        self.progress.owed()
    }

    /// The outcome of the proxy's complete response head.
    fn answer(&self, head: head::Head) -> Result<()> {
        let (status, len) = head::parse_fields(head.fields, |room| {
            let mut parsed = httparse::Response::new(room);
            let len = match parsed.parse(&head.bytes).map_err(HandshakeFailure::from)? {
                httparse::Status::Complete(len) => len,
                httparse::Status::Partial => {
                    return Err(HandshakeFailure::BadProxyAnswer(
                        "incomplete proxy response",
                    ));
                }
            };
            let status = parsed
                .code
                .and_then(|code| StatusCode::from_u16(code).ok())
                .ok_or(HandshakeFailure::BadProxyAnswer(
                    "the proxy's status is invalid",
                ))?;
            Ok((status, len))
        })
        // A proxy's answer is not a WebSocket handshake: its failures keep
        // lockgate's words, never tungstenite's handshake variants.
        .map_err(Detail::Handshake)?;
        let leftover = head.into_leftover(len);
        if !status.is_success() {
            return Err(HandshakeFailure::ProxyRefused(Box::new(ProxyRefusal {
                proxy: self.proxy.clone(),
                target: self.target.clone(),
                status,
                body: summarize_body(&leftover, BODY_SUMMARY),
            }))
            .into());
        }
        // The server speaks only after the client (the upgrade request, or
        // TLS's ClientHello): anything here came from the proxy.
        if !leftover.is_empty() {
            return Err(HandshakeFailure::BadProxyAnswer(
                "the proxy sent bytes after accepting CONNECT, before the server could speak",
            )
            .into());
        }
        Ok(())
    }
}

impl Exchange for ProxyTunnel {
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
        match self.reader.push(input) {
            Ok(None) => {}
            Ok(Some(head)) => {
                let outcome = self.answer(head);
                self.progress.finish(outcome, Vec::new());
            }
            // As in `answer`: the proxy's words, never the handshake's.
            Err(failure) => {
                let error = Detail::Handshake(failure).into();
                self.progress.finish(Err(error), Vec::new());
            }
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

fn bad_url(message: String) -> Error {
    UrlError::invalid(message)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;

    use super::*;
    use crate::dial::Proxy;
    use crate::error::{Detail, TimeoutKind};

    fn tunnel(proxy: &Proxy, host: &str, port: u16, deadline: Option<Instant>) -> ProxyTunnel {
        match proxy.tunnel(host, port, None, deadline) {
            crate::dial::Tunnel::Http(tunnel) => tunnel,
            other => panic!("{other:?}"),
        }
    }

    fn run(proxy: &Proxy, responses: &[&[u8]]) -> (Vec<u8>, Result<()>) {
        let now = Instant::now();
        let mut tunnel = tunnel(
            proxy,
            "example.com",
            443,
            Some(now + Duration::from_secs(5)),
        );
        let Step::Transmit(request) = tunnel.poll(now) else {
            panic!("the request goes first")
        };
        let mut inputs = responses.iter();
        loop {
            match tunnel.poll(now) {
                Step::Transmit(_) => panic!("one request"),
                Step::Receive { .. } => tunnel.receive(inputs.next().copied().unwrap_or(b""), now),
                Step::Done(result) => return (request, result),
            }
        }
    }

    #[test]
    fn the_request_names_the_target_and_carries_credentials() {
        let proxy = Proxy::http("http://al%40ice:p%3Ass@proxy.test:3128").unwrap();
        assert_eq!((proxy.host(), proxy.port()), ("proxy.test", 3128));
        let (request, _) = run(&proxy, &[b"HTTP/1.1 200 OK\r\n\r\n"]);
        // Names in canonical case: pproxy looks `Proxy-Authorization` up
        // case-sensitively.
        let expected = format!(
            "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\
             Proxy-Authorization: Basic {}\r\n\r\n",
            STANDARD.encode("al@ice:p:ss")
        );
        assert_eq!(String::from_utf8(request).unwrap(), expected);
        let v6 = Proxy::http("[::1]:8080").unwrap();
        let tunnel = tunnel(&v6, "::1", 9001, None);
        assert!(
            tunnel
                .request_bytes()
                .starts_with(b"CONNECT [::1]:9001 HTTP/1.1\r\n")
        );
        assert_eq!(Proxy::http("proxy").unwrap().port(), 1080);
    }

    #[test]
    fn a_2xx_opens_the_tunnel_however_the_answer_is_split() {
        let proxy = Proxy::http("proxy:1").unwrap();
        for answer in [
            &b"HTTP/1.1 200 Connection established\r\n\r\n"[..],
            b"HTTP/1.0 200 Connection established\r\nProxy-agent: test\r\n\r\n",
        ] {
            for split in 1..answer.len() {
                let (_, result) = run(&proxy, &[&answer[..split], &answer[split..]]);
                assert!(result.is_ok(), "{split}: {result:?}");
            }
        }
    }

    #[test]
    fn refusals_and_bad_answers() {
        let proxy = Proxy::http("proxy:1").unwrap();
        let refused = |answer: &[u8]| match run(&proxy, &[answer]).1.map_err(Error::into_detail) {
            Err(Ok(Detail::Handshake(HandshakeFailure::ProxyRefused(refusal)))) => *refusal,
            other => panic!("{other:?}"),
        };
        let auth = refused(b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n");
        assert!(auth.needs_authentication());
        let forbidden = refused(
            b"HTTP/1.0 403 Forbidden\r\nContent-Length: 20\r\n\r\n<b>Access\x01 denied</b>",
        );
        assert_eq!(forbidden.status, 403);
        assert_eq!(forbidden.body, "<b>Access\\u{1} denied</b>");
        assert_eq!(
            forbidden.to_string(),
            "proxy proxy:1 refused CONNECT example.com:443: 403 Forbidden: <b>Access\\u{1} denied</b>"
        );
        let bad = [
            &b"SSH-2.0-OpenSSH\r\n"[..],
            b"HTTP/2 200\r\n\r\n",
            b"HTTP/1.1 200 OK\r\n\r\nearly",
            b"HTTP/1.1 200 OK\r\n",
        ];
        for answer in bad {
            assert!(run(&proxy, &[answer]).1.is_err(), "{answer:?}");
        }
    }

    #[test]
    fn the_deadline_ends_a_silent_proxy() {
        let proxy = Proxy::http("proxy:1").unwrap();
        let start = Instant::now();
        let mut tunnel = tunnel(
            &proxy,
            "example.com",
            80,
            Some(start + Duration::from_secs(1)),
        );
        assert!(matches!(tunnel.poll(start), Step::Transmit(_)));
        assert!(matches!(tunnel.poll(start), Step::Receive { .. }));
        tunnel.handle_timeout(start + Duration::from_secs(1));
        assert!(matches!(
            tunnel.poll(start),
            Step::Done(Err(ref e)) if e.timeout() == Some(TimeoutKind::Handshake)
        ));
    }

    #[test]
    fn body_summaries_are_one_short_line() {
        assert_eq!(summarize_body(b"  a\r\n\r\n  b\t", 50), "a b");
        assert_eq!(summarize_body(&[b'x'; 300], 5), "xxxxx…");
        assert_eq!(summarize_body(b"\xff\x07", 10), "\u{fffd}\\u{7}");
    }
}
