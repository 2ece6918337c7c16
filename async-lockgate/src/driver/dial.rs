//! `connect_async`, written once: the route's steps
//! ([`Route::steps`](lockgate::dial::Route::steps): TCP, a proxy's tunnel,
//! TLS, the handshake), each done by the runtime's [`Connect`], the whole
//! of it within the handshake's deadline.

use std::time::Instant;

use lockgate::dial::{Attempt, AttemptStep, Dial, DialStep, Route};
use lockgate::handshake::IntoClientRequest;
use lockgate::handshake::client::Response;
use lockgate::{ClientOptions, Connector, Error, Result, TimeoutKind};

use super::handshake::{exchange, until};
use super::stream::WebSocketStream;
use crate::runtime::Connect;

/// Connects to `request`'s URL with `options` on runtime `R`: TCP (with
/// `TCP_NODELAY` set to `nodelay`), the proxy's tunnel if one is set
/// ([`ClientOptions::proxy`], [`ClientOptions::proxy_from_env`]), TLS for
/// `wss://` (the [`ClientOptions::tls`] connector, or the default), then
/// the handshake; a redirect (`3xx` with `Location`) starts over at its
/// target, up to [`ClientOptions::max_redirects`] times. One deadline, the
/// config's handshake timeout, bounds all of it, every redirect included
/// (lockgate's [`Dial`] sequence).
///
/// # Errors
///
/// [`Error::Url`] for an unusable URL (or `wss://` without TLS),
/// [`Error::Io`] for resolution and connection failures (naming the
/// server, or the proxy), [`Error::Tls`], a timeout ([`Error::timeout`]) when the
/// deadline passes,
/// [`HandshakeFailure::ProxyRefused`](lockgate::HandshakeFailure::ProxyRefused)
/// when the proxy does not open the tunnel, and the handshake's errors
/// (see [`client_with`](super::client_with)).
pub async fn connect<R, Q>(
    request: Q,
    options: ClientOptions,
    nodelay: bool,
) -> Result<(WebSocketStream<R::Stream, R>, Response)>
where
    R: Connect,
    Q: IntoClientRequest,
{
    let mut dial = Dial::new(request, options, R::now())?;
    loop {
        match attempt::<R>(&dial, nodelay).await {
            Err(error) => dial.follow(error)?,
            opened => return opened,
        }
    }
}

/// One attempt of `dial`: the route's steps, then the opening handshake.
async fn attempt<R: Connect>(
    dial: &Dial,
    nodelay: bool,
) -> Result<(WebSocketStream<R::Stream, R>, Response)> {
    let mut stream = walk::<R>(dial.attempt(), nodelay).await?;
    // On the heap too: a task that connects keeps its future's size for
    // the life of the connection it then serves.
    let opened = Box::pin(exchange::<R, _, _>(&mut stream, dial.handshake()?)).await?;
    // The TCP peer (the proxy, through one) in the connection's span.
    #[cfg(feature = "tracing")]
    let opened = {
        let mut opened = opened;
        if let Some(peer) = R::peer_addr(&stream) {
            opened.context.record_peer_addr(peer);
        }
        opened
    };
    Ok((
        WebSocketStream::from_context(stream, opened.context),
        opened.response.map(|()| None),
    ))
}

/// Does `steps` of `route` (TCP, a proxy's tunnel, TLS through
/// `connector`) until the WebSocket handshake or the last step, all by
/// `deadline`: the connection the handshake then runs on. The steps are
/// [`Route::steps`] or the first of them, walked by lockgate's
/// [`Attempt`].
///
/// # Errors
///
/// As for [`connect`], but for the handshake's.
///
/// # Panics
///
/// As for [`Attempt::new`] and [`Attempt::poll_step`]: when `steps` do
/// not begin with [`DialStep::Connect`], or are not `route`'s.
pub async fn open<R: Connect>(
    route: &Route,
    steps: &[DialStep<'_>],
    connector: Option<&Connector>,
    nodelay: bool,
    deadline: Option<Instant>,
) -> Result<R::Stream> {
    walk::<R>(
        Attempt::new(route, steps.to_vec(), connector, deadline),
        nodelay,
    )
    .await
}

/// Does the steps of `attempt` with `R`'s I/O, all by its deadline: the
/// connection the handshake then runs on.
async fn walk<R: Connect>(mut attempt: Attempt<'_>, nodelay: bool) -> Result<R::Stream> {
    let deadline = attempt.deadline();
    // On the heap: a TLS handshake's state is large, and a task that
    // connects and then serves the connection would carry it for life.
    let connection = Box::pin(async {
        let (host, port) = attempt.first_hop();
        let tcp = R::tcp(host, port, nodelay).await.map_err(Error::from);
        let mut stream = attempt.handle_connect(tcp)?;
        while let Some(step) = attempt.poll_step() {
            match step {
                AttemptStep::Tls { host, connector } => {
                    stream = R::secure(stream, host, connector).await?;
                }
                AttemptStep::Resolve { host, port } => {
                    let address = R::lookup(host, port).await.map_err(Error::from);
                    attempt.handle_resolved(address)?;
                }
                AttemptStep::Tunnel(tunnel) => {
                    exchange::<R, _, _>(&mut stream, tunnel).await?;
                }
            }
        }
        Ok::<_, Error>(stream)
    });
    until::<R, _>(deadline, connection)
        .await
        .ok_or(Error::from(TimeoutKind::Handshake))?
}
