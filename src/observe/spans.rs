//! The `tracing` side of [`observe`](super): one span per connection and
//! the few events of its life. Nothing here runs per message or per poll.

use std::net::SocketAddr;

use tracing::field::Empty;
use tracing::{Span, debug, debug_span, trace};

use super::{By, HandshakeReason, RateLimitAction};
use crate::config::Role;
use crate::error::{Error, TimeoutKind};

/// What a connection keeps of its span: nothing when no subscriber wants
/// it (boxed otherwise: 8 bytes per connection, not a whole `Span`).
pub(crate) type ConnectionSpan = Option<Box<Span>>;

/// The span of a connection opened now, a child of the current span.
pub(crate) fn connection(role: Role) -> ConnectionSpan {
    let span = debug_span!(
        target: "lockgate",
        "websocket",
        role = role_name(role),
        peer = Empty,
        subprotocol = Empty,
    );
    (!span.is_disabled()).then(|| Box::new(span))
}

pub(crate) fn record_subprotocol(span: &ConnectionSpan, protocol: &str) {
    if let Some(span) = span {
        span.record("subprotocol", protocol);
    }
}

pub(crate) fn record_peer(span: &ConnectionSpan, peer: SocketAddr) {
    if let Some(span) = span {
        span.record("peer", tracing::field::display(peer));
    }
}

/// An event in the connection's span, or in the current one if it has
/// none (no subscriber wanted it when it opened).
macro_rules! in_span {
    ($level:ident, $span:expr, $($event:tt)+) => {
        match $span {
            Some(span) => $level!(target: "lockgate", parent: &**span, $($event)+),
            None => $level!(target: "lockgate", $($event)+),
        }
    };
}

/// The connection started closing (or failed, or ended) for the first
/// time: once per connection.
pub(crate) fn closing(span: &ConnectionSpan, code: u16, by: By) {
    in_span!(debug, span, code, by = by.label(), "closed");
}

/// A state change of the connection, at TRACE.
pub(crate) fn transition(
    span: &ConnectionSpan,
    from: &dyn std::fmt::Debug,
    to: &dyn std::fmt::Debug,
) {
    in_span!(trace, span, ?from, ?to, "state");
}

pub(crate) fn timeout(span: &ConnectionSpan, kind: TimeoutKind) {
    in_span!(debug, span, kind = timeout_name(kind), "timed out");
}

pub(crate) fn protocol_error(span: &ConnectionSpan, error: &Error) {
    let code = error.close_code().map(u16::from);
    in_span!(debug, span, %error, code, "protocol error");
}

pub(crate) fn rate_limited(span: &ConnectionSpan, action: RateLimitAction) {
    in_span!(debug, span, action = action.label(), "rate limited");
}

pub(crate) fn handshake_failed(role: Role, reason: HandshakeReason, error: &Error) {
    debug!(
        target: "lockgate",
        role = role_name(role),
        reason = reason.label(),
        %error,
        "handshake failed"
    );
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::Client => "client",
        Role::Server => "server",
    }
}

pub(crate) fn timeout_name(kind: TimeoutKind) -> &'static str {
    match kind {
        TimeoutKind::Handshake => "handshake",
        TimeoutKind::Keepalive => "keepalive",
        TimeoutKind::Close => "close",
    }
}
