//! A client's whole dial as one sequence under one deadline: the
//! [`Route`]'s steps for each attempt, and the redirects between attempts.

use std::time::Instant;

use http::header::{AUTHORIZATION, COOKIE, HOST, LOCATION, PROXY_AUTHORIZATION, SEC_WEBSOCKET_KEY};
use http::{HeaderValue, Request, Uri};

use super::attempt::Attempt;
use super::client_options::ClientOptions;
use super::route::{DialStep, Route};
use super::tls::Connector;
use crate::error::{Error, Result, UrlError};
use crate::upgrade::{ClientUpgrade, HandshakeDriver, IntoClientRequest};

/// Everything a driver needs to dial a `ws://` or `wss://` URL, decided
/// once for every driver: each [`attempt`](Self::attempt)'s walk (where it
/// connects, and through what TLS [`Connector`] and proxy tunnel), the
/// opening [`handshake`](Self::handshake),
/// and whether a failed attempt's redirect is followed
/// ([`follow`](Self::follow)).
///
/// One deadline, [`Config::handshake_timeout`](crate::Config::handshake_timeout)
/// after the `now` the dial was made with, bounds all of it: every step of
/// every attempt, redirects included. A driver does each step within
/// what is left of [`deadline`](Self::deadline) and reports
/// a timeout ([`Error::timeout`](crate::Error::timeout)) when it passes.
///
/// A redirect to another origin (scheme, host or port) drops the
/// `Authorization`, `Cookie` and `Proxy-Authorization` headers: the
/// credentials were meant for the first server only.
///
/// # Examples
///
/// A driver's loop, with the steps left out:
///
/// ```
/// use std::time::Instant;
/// use lockgate::ClientOptions;
/// use lockgate::dial::Dial;
///
/// let dial = Dial::new("ws://example.com/feed", ClientOptions::new(), Instant::now())?;
/// let mut attempt = dial.attempt();
/// assert_eq!(attempt.first_hop(), ("example.com", 80));
/// assert!(attempt.poll_step().is_none()); // no TLS, no proxy: the handshake is next
/// // connect, walk the attempt's steps within `dial.deadline()`, then
/// // `dial.handshake()`; on a failed attempt, `dial.follow(error)?` and
/// // start over with the new steps.
/// # Ok::<(), lockgate::Error>(())
/// ```
#[derive(Debug)]
pub struct Dial {
    options: ClientOptions,
    request: Request<()>,
    route: Route,
    connector: Option<Connector>,
    /// When the dial began: every attempt's handshake deadline counts
    /// from it.
    started: Instant,
    deadline: Option<Instant>,
    redirects_left: u8,
}

impl Dial {
    /// The dial of `request` with `options`, its deadline counted from
    /// `now`.
    ///
    /// # Errors
    ///
    /// [`Error::Url`] for a URL that is not `ws://` or `wss://` with a
    /// host, for `wss://` (or an `https://` proxy) without a TLS feature,
    /// and for an unusable proxy in the environment.
    pub fn new(
        request: impl IntoClientRequest,
        options: ClientOptions,
        now: Instant,
    ) -> Result<Self> {
        let request = request.into_client_request()?;
        let route = options.route(request.uri())?;
        let connector = connector_for(&options, &route)?;
        let deadline = options
            .get_config()
            .get_handshake_timeout()
            .and_then(|timeout| now.checked_add(timeout));
        let redirects_left = options.get_max_redirects();
        Ok(Self {
            options,
            request,
            route,
            connector,
            started: now,
            deadline,
            redirects_left,
        })
    }

    /// Where this attempt connects.
    pub fn route(&self) -> &Route {
        &self.route
    }

    /// This attempt's steps up to the opening handshake, to walk
    /// ([`Attempt::poll_step`]).
    pub fn attempt(&self) -> Attempt<'_> {
        Attempt::new(
            &self.route,
            self.route.steps(),
            self.connector.as_ref(),
            self.deadline,
        )
    }

    /// When the whole dial times out; `None` if it never does.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Whether `now` is at or past the deadline.
    pub fn is_past_deadline(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|deadline| now >= deadline)
    }

    /// The opening handshake of this attempt ([`DialStep::Handshake`]),
    /// under the dial's deadline.
    ///
    /// # Errors
    ///
    /// [`Error::Url`] as for [`ClientUpgrade::new`].
    pub fn handshake(&self) -> Result<HandshakeDriver<ClientUpgrade>> {
        self.options
            .clone()
            .handshake(copy_of(&self.request), self.started)
    }

    /// After an attempt failed with `error`: `Ok` when it was a redirect
    /// (`3xx` with `Location`) to follow, and this dial now goes there
    /// (walk its [`attempt`](Self::attempt) again); otherwise, or with no
    /// redirect left, `Err` with the error to report (the redirect's
    /// response as [`Error::Http`] when none is left).
    ///
    /// # Errors
    ///
    /// `error` itself when it ends the dial; [`Error::Url`] for a
    /// `Location` that is not a usable URL.
    pub fn follow(&mut self, error: Error) -> Result<()> {
        let Error::Http(response) = &error else {
            return Err(error);
        };
        let location = match response.headers().get(LOCATION) {
            Some(location) if response.status().is_redirection() && self.redirects_left > 0 => {
                location
            }
            _ => return Err(error),
        };
        let request = redirected(copy_of(&self.request), location)?;
        let route = self.options.route(request.uri())?;
        self.connector = connector_for(&self.options, &route)?;
        self.route = route;
        self.request = request;
        self.redirects_left -= 1;
        Ok(())
    }
}

/// The connector a route's TLS steps use: the options' own, or the
/// default for `wss://`; `None` for a route without TLS. Known before any
/// connection is made, so a missing TLS feature fails at once.
fn connector_for(options: &ClientOptions, route: &Route) -> Result<Option<Connector>> {
    let needs_tls = route
        .steps()
        .iter()
        .any(|step| matches!(step, DialStep::Tls { .. }));
    Ok(match (options.get_connector(), needs_tls) {
        (_, false) => None,
        (Some(connector), true) => Some(connector.clone()),
        (None, true) => Some(Connector::for_wss()?),
    })
}

/// A copy of `request` (method, URI, version, headers) to send again.
fn copy_of(request: &Request<()>) -> Request<()> {
    let mut copy = Request::new(());
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.version_mut() = request.version();
    *copy.headers_mut() = request.headers().clone();
    copy
}

/// `request` sent to `location` instead (relative to its URL): the `Host`
/// header and key are made anew for it, and credentials stay behind when
/// the origin changes.
fn redirected(mut request: Request<()>, location: &HeaderValue) -> Result<Request<()>> {
    let location = location
        .to_str()
        .map_err(|_| UrlError::invalid("the redirect's Location is not text".to_owned()))?;
    let target: Uri = location.parse()?;
    let target = if target.scheme().is_some() {
        target
    } else {
        let base = request.uri();
        let mut parts = base.clone().into_parts();
        parts.path_and_query = target.path_and_query().cloned();
        Uri::from_parts(parts).map_err(http::Error::from)?
    };
    let same_origin = origin(&target) == origin(request.uri());
    let headers = request.headers_mut();
    if !same_origin {
        for credential in [AUTHORIZATION, COOKIE, PROXY_AUTHORIZATION] {
            headers.remove(credential);
        }
    }
    headers.remove(HOST);
    headers.remove(SEC_WEBSOCKET_KEY);
    *request.uri_mut() = target;
    Ok(request)
}

/// A URL's origin: scheme, host and port (the scheme's default when it
/// has none), compared without regard to case.
fn origin(uri: &Uri) -> (String, String, Option<u16>) {
    let scheme = uri.scheme_str().unwrap_or_default().to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "ws" | "http" => Some(80),
        "wss" | "https" => Some(443),
        _ => None,
    };
    let host = uri.host().unwrap_or_default().to_ascii_lowercase();
    (scheme, host, uri.port_u16().or(default_port))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use http::{Response, StatusCode};

    use super::*;
    use crate::Config;
    use crate::upgrade::Step;

    fn redirect_to(location: &str) -> Error {
        let response = Response::builder()
            .status(StatusCode::FOUND)
            .header(LOCATION, location)
            .body(None)
            .unwrap();
        Error::Http(Box::new(response))
    }

    fn with_credentials(url: &str) -> Request<()> {
        let mut request = url.into_client_request().unwrap();
        let headers = request.headers_mut();
        headers.insert(AUTHORIZATION, HeaderValue::from_static("Bearer secret"));
        headers.insert(COOKIE, HeaderValue::from_static("session=1"));
        headers.insert(PROXY_AUTHORIZATION, HeaderValue::from_static("Basic eA=="));
        request
    }

    #[test]
    fn credentials_follow_a_redirect_only_within_the_origin() {
        // (from, Location, kept?)
        let cases = [
            ("ws://127.0.0.1:9001/a", "/b", true),
            ("ws://127.0.0.1:9001/a", "ws://127.0.0.1:9001/b", true),
            ("ws://example.com/a", "ws://EXAMPLE.com:80/b", true),
            ("ws://127.0.0.1:9001/a", "ws://localhost:9001/b", false),
            ("ws://127.0.0.1:9001/a", "ws://127.0.0.1:9002/b", false),
            ("wss://example.com/a", "ws://example.com/b", false),
            ("ws://example.com/a", "wss://example.com/b", false),
        ];
        for (from, location, kept) in cases {
            let options = ClientOptions::new().tls(Connector::Plain);
            let mut dial = Dial::new(with_credentials(from), options, Instant::now()).unwrap();
            dial.follow(redirect_to(location)).unwrap();
            let Step::Transmit(request) = dial.handshake().unwrap().poll(Instant::now()) else {
                panic!("the request goes first");
            };
            let sent = String::from_utf8_lossy(&request).to_ascii_lowercase();
            for name in ["authorization:", "cookie:", "proxy-authorization:"] {
                assert_eq!(
                    sent.lines().any(|line| line.starts_with(name)),
                    kept,
                    "{from} -> {location}: {name}\n{sent}"
                );
            }
        }
    }

    #[test]
    fn every_attempt_shares_the_first_deadline() {
        let start = Instant::now();
        let timeout = Duration::from_secs(2);
        let options = ClientOptions::new()
            .config(Config::default().handshake_timeout(Some(timeout)))
            .max_redirects(5);
        let mut dial = Dial::new("ws://127.0.0.1:9001/", options, start).unwrap();
        assert_eq!(dial.deadline(), Some(start + timeout));
        for _ in 0..5 {
            dial.follow(redirect_to("/again")).unwrap();
            assert_eq!(dial.deadline(), Some(start + timeout));
            assert_eq!(dial.handshake().unwrap().deadline(), Some(start + timeout));
        }
        // None left: the redirect itself is the error.
        let error = dial.follow(redirect_to("/again")).unwrap_err();
        assert!(matches!(error, Error::Http(response) if response.status() == 302));
    }

    #[test]
    fn a_redirect_moves_the_route_and_other_errors_end_the_dial() {
        let mut dial = Dial::new("ws://a.example/", ClientOptions::new(), Instant::now()).unwrap();
        dial.follow(redirect_to("ws://b.example:8080/x")).unwrap();
        let mut attempt = dial.attempt();
        assert_eq!(attempt.first_hop(), ("b.example", 8080));
        assert!(
            attempt.poll_step().is_none(),
            "ws:// without a proxy: the handshake is next"
        );
        let refused = Error::Http(Box::new(
            Response::builder().status(403).body(None).unwrap(),
        ));
        assert!(matches!(dial.follow(refused), Err(Error::Http(_))));
        let io = Error::Io(std::io::ErrorKind::ConnectionReset.into());
        assert!(matches!(dial.follow(io), Err(Error::Io(_))));
    }
}
