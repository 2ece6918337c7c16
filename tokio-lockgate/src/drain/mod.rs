//! Graceful drain: a registry of live connections that refuses new
//! upgrades, closes each connection after what is queued for it, spread
//! over a window, and waits for them.
//!
//! - A [`Drain`] is the registry (cheap to clone, `Send + Sync`). Each
//!   connection takes a [`Registration`] when its upgrade is accepted:
//!   [`Drain::register`] in a handshake callback or an HTTP handler, or
//!   [`Drain::accept_async`] and its siblings, which do it for you.
//! - [`Registration::guard`] wraps the connection (a [`WebSocketStream`]
//!   or a [`WebSocketReadHalf`]) in a [`Registered`] one, whose `read`
//!   learns of the drain while it waits.
//! - [`Drain::start`] begins the drain with [`DrainOptions`]: new upgrades
//!   are refused with `503 Service Unavailable` and `Retry-After`
//!   ([`Refused`]); connection *k* of the *n* live ones is given its turn
//!   at `k / n` of the window, so clients do not all reconnect in the same
//!   second; at its turn it is sent the close frame **behind** everything
//!   already queued for it; at the deadline the connections still open are
//!   cut. The future resolves with a [`DrainReport`] once every connection
//!   is gone, or at the deadline.
//! - Hub connections: [`Registration::attach_subscriber`] hands the close
//!   to the connection's [`Subscriber`]: at its turn the subscriber stops
//!   taking messages, its [`forward`](crate::hub::Subscriber::forward)
//!   writes every message the hub had queued for it, then the close frame.
//!
//! # How a connection learns of its turn
//!
//! The registry is a slab of slots beside the connections, not a field
//! of [`WebSocketStream`]: a slot is a one-byte turn, the waker of the
//! task reading the connection and, for a hub connection, a weak pointer
//! to its subscriber (64 bytes on the heap, plus 16 in the slab; a
//! [`Registration`] is three pointers). A registered `read` polls
//! the connection first and, only when that would wait, leaves its waker
//! in the slot. The drain's one timer walks the schedule: at a
//! connection's turn it flips the byte and wakes that task, whose `read`
//! queues the close frame behind the data already in the out buffer and
//! goes on reading, so messages the peer sent before it saw the close are
//! still returned, then its close reply, then
//! [`Error::ConnectionClosed`]. No task polls, and nothing is lost: the
//! turn is a state in the slot, and a `read` future dropped at any point
//! leaves it there for the next one (cancel-safe).
//!
//! At the deadline the turn becomes *cut*: a registered `read` returns
//! a timeout ([`Error::timeout`] is `Some(TimeoutKind::Close)`) once, then
//! [`Error::AlreadyClosed`], and the task drops the connection. A task
//! that never reads is not interrupted; [`Registration::signal`] is the
//! building block for one that waits on something else.
//!
//! # Examples
//!
//! A plain accept loop that drains on Ctrl-C:
//!
//! ```no_run
//! use std::time::Duration;
//! use tokio::net::TcpListener;
//! use tokio_lockgate::drain::{Drain, DrainOptions};
//!
//! # async fn serve() -> std::io::Result<()> {
//! let listener = TcpListener::bind("127.0.0.1:9001").await?;
//! let drain = Drain::new();
//! let accepting = drain.clone();
//! tokio::spawn(async move {
//!     loop {
//!         let Ok((tcp, _)) = listener.accept().await else { continue };
//!         let drain = accepting.clone();
//!         tokio::spawn(async move {
//!             // 503 with Retry-After once the drain started.
//!             let Ok(mut ws) = drain.accept_async(tcp).await else { return };
//!             while let Ok(msg) = ws.read().await {
//!                 if msg.is_data() && ws.send(msg).await.is_err() {
//!                     break;
//!                 }
//!             }
//!         });
//!     }
//! });
//! tokio::signal::ctrl_c().await?;
//! let options = DrainOptions::default()
//!     .window(Duration::from_secs(5))
//!     .deadline(Duration::from_secs(10));
//! let report = drain.start(options).await;
//! eprintln!("{} closed, {} cut", report.closed, report.cut);
//! # Ok(()) }
//! ```
//!
//! With hyper, register before answering, and guard what
//! [`accepted`] gives:
//!
//! ```no_run
//! # #[cfg(feature = "hyper")]
//! # mod example {
//! use http_body_util::Full;
//! use hyper::body::{Bytes, Incoming};
//! use tokio_lockgate::drain::Drain;
//! use tokio_lockgate::upgrade::{UpgradeSettings, accept_response, accepted};
//!
//! async fn serve(drain: Drain, mut request: hyper::Request<Incoming>) -> hyper::Response<Full<Bytes>> {
//!     let registration = match drain.register() {
//!         Ok(registration) => registration,
//!         // 503 with Retry-After while draining.
//!         Err(refused) => return refused.to_response().map(Full::from),
//!     };
//!     let accept = match accept_response(&mut request, UpgradeSettings::default()) {
//!         Ok(accept) => accept,
//!         Err(refusal) => return refusal.to_response().map(Full::from),
//!     };
//!     let response = accept.response.clone().map(|()| Full::default());
//!     tokio::spawn(async move {
//!         let Ok(ws) = accepted(accept).await else { return };
//!         let mut ws = registration.guard(ws);
//!         while let Ok(message) = ws.read().await {
//!             if message.is_data() && ws.send(message).await.is_err() {
//!                 break;
//!             }
//!         }
//!     });
//!     response
//! }
//! # }
//! ```
//!
//! The axum extractor does it in
//! `WebSocketUpgrade::on_upgrade_registered(&drain, callback)`.
//!
//! Runnable: `examples/drain.rs` (register, start, report, in one
//! program) and `examples/production.rs` (an axum server drained on
//! SIGTERM, its hub subscribers attached).
//!
//! [`accepted`]: https://docs.rs/tokio-lockgate/latest/tokio_lockgate/upgrade/fn.accepted.html
//! [`Subscriber`]: crate::hub::Subscriber
//! [`WebSocketReadHalf`]: crate::WebSocketReadHalf
//! [`Error::ConnectionClosed`]: lockgate::Error::ConnectionClosed
//! [`Error::timeout`]: lockgate::Error::timeout
//! [`TimeoutKind::Close`]: lockgate::TimeoutKind::Close
//! [`Error::AlreadyClosed`]: lockgate::Error::AlreadyClosed

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use lockgate::handshake::{Callback, ErrorResponse, NoCallback};
use lockgate::http::header::{HeaderValue, RETRY_AFTER};
use lockgate::http::{Request, Response, StatusCode};
use lockgate::{CloseCode, CloseFrame, Config, Result, ServerOptions, Utf8Bytes};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{Notify, watch};

use crate::{WebSocketStream, accept_async_with};

mod registered;
mod registration;
mod registry;
mod schedule;

pub use registered::Registered;
pub use registration::{DrainSignal, Registration};
use registry::{Registry, Slot};

/// Live connections, and whether they are being drained. Cheap to clone;
/// `Send + Sync`. See the [module documentation](self).
#[derive(Debug, Clone, Default)]
pub struct Drain {
    shared: Arc<Shared>,
}

/// How a drain goes: the close frame, how its turns are spread, when it
/// gives up, and what refused clients are told.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DrainOptions {
    code: CloseCode,
    reason: Utf8Bytes,
    window: Duration,
    deadline: Duration,
    retry_after: Duration,
}

impl Default for DrainOptions {
    /// 1001 (Going Away) with the reason `draining`, turns spread over
    /// 5 s, connections cut at 10 s, and `Retry-After: 5`.
    fn default() -> Self {
        Self {
            code: CloseCode::Away,
            reason: Utf8Bytes::from_static("draining"),
            window: Duration::from_secs(5),
            deadline: Duration::from_secs(10),
            retry_after: Duration::from_secs(5),
        }
    }
}

impl DrainOptions {
    /// The close code: 1001 (Going Away, the default) for a server that
    /// stops, 1012 (Service Restart) for one that comes back.
    ///
    /// # Panics
    ///
    /// For a code that may not be sent (1005, 1006, 1015, reserved or
    /// out of range; see [`CloseCode::is_allowed_on_wire`]).
    pub fn code(mut self, code: CloseCode) -> Self {
        assert!(
            code.is_allowed_on_wire(),
            "{code:?} cannot be sent in a close frame"
        );
        self.code = code;
        self
    }

    /// The close frame's reason (at most 123 bytes; longer ones are cut by
    /// the connection). Default `draining`.
    pub fn reason(mut self, reason: impl Into<Utf8Bytes>) -> Self {
        self.reason = reason.into();
        self
    }

    /// The turns of the *n* connections are `window × k / n` after the
    /// start, for *k* in `0..n`: a longer window spreads the reconnects of
    /// the clients, a shorter one lets the drain end sooner. At most the
    /// deadline (a longer one is shortened to it). Default 5 s.
    pub fn window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// How long after the start the connections still open are cut, and
    /// the drain resolves whatever is left. Default 10 s.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// The `Retry-After` of the 503 answering new upgrades (in whole
    /// seconds, rounded up). Default 5 s.
    pub fn retry_after(mut self, retry_after: Duration) -> Self {
        self.retry_after = retry_after;
        self
    }

    /// See [`code`](Self::code).
    pub fn get_code(&self) -> CloseCode {
        self.code
    }

    /// See [`window`](Self::window): the window as given.
    pub fn get_window(&self) -> Duration {
        self.window
    }

    /// See [`deadline`](Self::deadline).
    pub fn get_deadline(&self) -> Duration {
        self.deadline
    }

    /// See [`retry_after`](Self::retry_after).
    pub fn get_retry_after(&self) -> Duration {
        self.retry_after
    }
}

/// What a drain did, counted from its start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DrainReport {
    /// Connections registered when it started.
    pub connections: usize,
    /// Of those, connections that ended after their turn and before the
    /// deadline: sent the close frame, then gone (usually once the closing
    /// handshake completed).
    pub closed: usize,
    /// Connections that ended before their turn (the client left).
    pub left: usize,
    /// Connections still open at the deadline, and cut.
    pub cut: usize,
}

/// A new upgrade refused because the server is draining; answer it with
/// [`to_response`](Self::to_response) (or, in a handshake callback,
/// [`to_error_response`](Self::to_error_response)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    retry_after: Duration,
}

impl Refused {
    /// When the client may try again ([`DrainOptions::retry_after`]).
    pub fn retry_after(&self) -> Duration {
        self.retry_after
    }

    /// `503 Service Unavailable` with `Retry-After` (whole seconds, rounded
    /// up) and a one-line body.
    pub fn to_response(&self) -> Response<String> {
        let mut response = Response::new(format!("{self}\n"));
        *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from(self.retry_after_secs()));
        response
    }

    /// [`to_response`](Self::to_response) in the shape a handshake
    /// [`Callback`] returns.
    pub fn to_error_response(&self) -> ErrorResponse {
        self.to_response().map(Some)
    }

    fn retry_after_secs(&self) -> u64 {
        let whole = self.retry_after.as_secs();
        whole + u64::from(self.retry_after.subsec_nanos() > 0)
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the server is draining and takes no new connections; retry in {} s",
            self.retry_after_secs()
        )
    }
}

impl std::error::Error for Refused {}

/// What every handle and registration of a drain shares.
#[derive(Debug, Default)]
struct Shared {
    registry: Mutex<Registry>,
    /// Set once, when the drain starts.
    started: OnceLock<Started>,
    /// The last connection was released during a drain.
    emptied: Notify,
    /// The final report, once there is one.
    report: watch::Sender<Option<DrainReport>>,
}

#[derive(Debug)]
struct Started {
    frame: CloseFrame,
    retry_after: Duration,
}

/// What a drain asks of a hub subscriber: close behind its queue at its
/// turn, at once at the deadline.
pub(crate) trait DrainHook: Send + Sync + fmt::Debug {
    fn close_after_queued(&self, frame: &CloseFrame);
    fn cut(&self, frame: &CloseFrame);
}

/// Nothing here leaves its state half-updated on a panic.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Drain {
    /// A registry without connections, not draining.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a drain has started (new upgrades are refused from then on).
    pub fn is_draining(&self) -> bool {
        self.shared.started.get().is_some()
    }

    /// Connections registered now.
    pub fn live(&self) -> usize {
        lock(&self.shared.registry).live
    }

    /// The counts so far (all zero before a drain starts).
    pub fn report(&self) -> DrainReport {
        lock(&self.shared.registry).counts
    }

    /// Registers a connection whose upgrade is about to be accepted. Call
    /// it before the response goes out (in a handshake callback, or in the
    /// HTTP handler), so that a drain starting meanwhile either counts the
    /// connection or refuses it, never neither.
    ///
    /// # Errors
    ///
    /// [`Refused`] once a drain has started: answer the request with it.
    pub fn register(&self) -> std::result::Result<Registration, Refused> {
        let mut registry = lock(&self.shared.registry);
        if registry.draining {
            let started = self.shared.started.get().expect("set when draining");
            return Err(Refused {
                retry_after: started.retry_after,
            });
        }
        let slot = Arc::new(Slot::default());
        let key = registry.insert(Arc::clone(&slot));
        Ok(Registration {
            shared: Arc::clone(&self.shared),
            slot,
            key,
        })
    }

    /// [`accept_async`](crate::accept_async), registered: while draining
    /// the request is answered with 503 and `Retry-After`.
    ///
    /// # Errors
    ///
    /// As for [`accept_async`](crate::accept_async); a refusal while
    /// draining is [`Error::Http`](lockgate::Error::Http) with the 503,
    /// after it was sent.
    pub async fn accept_async<S>(&self, stream: S) -> Result<Registered<WebSocketStream<S>>>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        self.accept_hdr_async_with_config(stream, NoCallback, Config::default())
            .await
    }

    /// [`accept_async`](Self::accept_async) with a configuration.
    ///
    /// # Errors
    ///
    /// As for [`accept_async`](Self::accept_async).
    pub async fn accept_async_with_config<S>(
        &self,
        stream: S,
        config: Config,
    ) -> Result<Registered<WebSocketStream<S>>>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        self.accept_hdr_async_with_config(stream, NoCallback, config)
            .await
    }

    /// [`accept_hdr_async`](crate::accept_hdr_async), registered: the
    /// drain refuses the request before `callback` sees it. Other
    /// [`ServerOptions`] go through [`register`](Self::register) in a
    /// callback of your own, and [`Registration::guard`].
    ///
    /// # Errors
    ///
    /// As for [`accept_async`](Self::accept_async), and a refusal by
    /// `callback`.
    pub async fn accept_hdr_async<S, C>(
        &self,
        stream: S,
        callback: C,
    ) -> Result<Registered<WebSocketStream<S>>>
    where
        S: AsyncRead + AsyncWrite + Unpin,
        C: Callback,
    {
        self.accept_hdr_async_with_config(stream, callback, Config::default())
            .await
    }

    /// [`accept_hdr_async`](Self::accept_hdr_async) with a configuration.
    ///
    /// # Errors
    ///
    /// As for [`accept_hdr_async`](Self::accept_hdr_async).
    pub async fn accept_hdr_async_with_config<S, C>(
        &self,
        stream: S,
        callback: C,
        config: Config,
    ) -> Result<Registered<WebSocketStream<S>>>
    where
        S: AsyncRead + AsyncWrite + Unpin,
        C: Callback,
    {
        let mut registration = None;
        #[allow(
            clippy::result_large_err,
            reason = "the handshake callback's signature is tungstenite's"
        )]
        let registering = |request: &Request<()>, response: Response<()>| {
            let registered = self.register().map_err(|r| r.to_error_response())?;
            let response = callback.on_request(request, response)?;
            registration = Some(registered);
            Ok(response)
        };
        let options = ServerOptions::new().config(config).callback(registering);
        let ws = accept_async_with(stream, options).await?;
        let registration = registration.expect("an accepted upgrade went through the callback");
        Ok(registration.guard(ws))
    }

    /// Starts draining: from now on [`register`](Self::register) refuses;
    /// each registered connection is given its turn (see
    /// [`DrainOptions::window`]), at which it is sent `options`' close
    /// frame behind what is queued for it; at the deadline those still
    /// open are cut.
    ///
    /// The schedule runs on a task of its own, so the drain goes on even if
    /// the returned future is dropped. The future resolves with the counts
    /// once no connection is left, or at the deadline; awaiting a second
    /// `start` (whose options are ignored) gives the same report.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn start(&self, options: DrainOptions) -> impl Future<Output = DrainReport> + Send + use<> {
        let mut report = self.shared.report.subscribe();
        let slots = {
            let mut registry = lock(&self.shared.registry);
            let slots = registry.start();
            if slots.is_some() {
                // Set before the registry is unlocked: a refusal reads it.
                let _ = self.shared.started.set(Started {
                    frame: CloseFrame::new(options.code, options.reason.clone()),
                    retry_after: options.retry_after,
                });
            }
            slots
        };
        if let Some(slots) = slots {
            tokio::spawn(schedule::run(Arc::clone(&self.shared), options, slots));
        }
        async move {
            match report.wait_for(Option::is_some).await {
                Ok(done) => done.expect("waited for it"),
                // The drain's task was dropped with its runtime.
                Err(_) => DrainReport::default(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::mem::size_of;

    use super::registry::Entry;
    use super::*;

    #[test]
    fn a_registered_connection_costs_a_few_words() {
        // In the connection's task: three pointers.
        assert_eq!(size_of::<Registration>(), 3 * size_of::<usize>());
        // On the heap: the slot (plus the `Arc`'s two counters, 64 bytes in
        // all on 64-bit targets), and its entry in the slab.
        #[cfg(target_pointer_width = "64")]
        assert_eq!(size_of::<Slot>(), 48);
        assert_eq!(size_of::<Entry>(), 2 * size_of::<usize>());
    }

    #[test]
    fn retry_after_is_whole_seconds_rounded_up() {
        for (given, header) in [(0, "0"), (1, "1"), (1500, "2"), (5000, "5")] {
            let refused = Refused {
                retry_after: Duration::from_millis(given),
            };
            let response = refused.to_response();
            assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(response.headers()[RETRY_AFTER], header, "{given} ms");
        }
    }
}
