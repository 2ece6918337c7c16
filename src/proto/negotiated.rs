//! [`Negotiated`]: what a connection has beyond RFC 6455 itself, the one
//! owner of it: what the handshake negotiated (permessage-deflate and its
//! parameters, a subprotocol) and a rate limit's state.
//!
//! Most connections have none of it, and an idle connection should cost as
//! few bytes as possible, so it all sits behind one pointer that is null
//! for them: the hot paths test that pointer once
//! ([`is_empty`](Negotiated::is_empty)).

use std::time::Instant;

use crate::config::Role;
use crate::deflate::{DeflateConfig, DeflateParams};
use crate::message::Message;
use crate::proto::compression::{self, Compression};
use crate::proto::rate_limit::{RateLimit, RateLimiter};

/// A connection's extensions and rate limiter, behind one pointer.
#[derive(Debug, Default)]
pub(super) struct Negotiated(Option<Box<Parts>>);

#[derive(Debug, Default)]
struct Parts {
    /// The permessage-deflate state, with the parameters it was set up
    /// from: both or neither.
    compression: Option<(Compression, DeflateParams)>,
    subprotocol: Option<Box<str>>,
    /// The buckets of [`Config::rate_limit`](crate::Config::rate_limit),
    /// if one is set.
    rate: Option<Box<RateLimiter>>,
}

impl Negotiated {
    /// What a connection starts with: the compression state for `deflate`
    /// if it was negotiated (and the `deflate` feature is on), set up with
    /// the local `config`, and a limiter if there is a `limit`.
    pub(super) fn new(
        role: Role,
        deflate: Option<DeflateParams>,
        config: Option<&DeflateConfig>,
        limit: Option<RateLimit>,
    ) -> Self {
        let compression = deflate.and_then(|params| {
            compression::negotiated(role, Some(&params), config).map(|c| (c, params))
        });
        let mut negotiated = Self::default();
        if compression.is_some() {
            negotiated.parts().compression = compression;
        }
        if let Some(limit) = limit {
            negotiated.parts().rate = Some(Box::new(RateLimiter::new(limit)));
        }
        negotiated
    }

    /// Whether the connection has none of it: the one test the hot paths
    /// make.
    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    fn parts(&mut self) -> &mut Parts {
        self.0.get_or_insert_with(Box::default)
    }

    /// The permessage-deflate state, if it was negotiated.
    #[inline]
    pub(super) fn compression(&self) -> Option<&Compression> {
        self.0.as_deref()?.compression.as_ref().map(|(c, _)| c)
    }

    /// See [`compression`](Self::compression).
    #[inline]
    pub(super) fn compression_mut(&mut self) -> Option<&mut Compression> {
        self.0.as_deref_mut()?.compression.as_mut().map(|(c, _)| c)
    }

    /// The permessage-deflate parameters in use, if it was negotiated.
    pub(super) fn deflate(&self) -> Option<&DeflateParams> {
        self.0.as_deref()?.compression.as_ref().map(|(_, p)| p)
    }

    /// The subprotocol the handshake chose, if any.
    pub(super) fn subprotocol(&self) -> Option<&str> {
        self.0.as_deref()?.subprotocol.as_deref()
    }

    /// Records the subprotocol the handshake chose (allocating only to
    /// hold one).
    pub(super) fn set_subprotocol(&mut self, protocol: Option<&str>) {
        match (self.0.as_deref_mut(), protocol) {
            (Some(parts), protocol) => parts.subprotocol = protocol.map(Box::from),
            (None, Some(protocol)) => self.parts().subprotocol = Some(protocol.into()),
            (None, None) => {}
        }
    }

    /// The rate limiter, if a limit is set.
    #[inline]
    pub(super) fn rate_limiter(&self) -> Option<&RateLimiter> {
        self.0.as_deref()?.rate.as_deref()
    }

    /// See [`rate_limiter`](Self::rate_limiter).
    #[inline]
    pub(super) fn rate_limiter_mut(&mut self) -> Option<&mut RateLimiter> {
        self.0.as_deref_mut()?.rate.as_deref_mut()
    }

    /// The rate limit in force, which its limiter keeps (a connection
    /// without one holds nothing for it).
    pub(super) fn rate_limit(&self) -> Option<RateLimit> {
        self.rate_limiter().map(RateLimiter::limit)
    }

    /// Sets up, changes or removes the limiter to match `limit` (on
    /// `set_config`). A changed limit starts with full buckets. Removing
    /// the limit hands back the message it held, to be delivered next.
    pub(super) fn set_rate_limit(&mut self, limit: Option<RateLimit>) -> Option<Message> {
        if limit == self.rate_limit() {
            return None;
        }
        match (limit, self.rate_limiter_mut()) {
            (Some(limit), Some(limiter)) => limiter.fill(limit),
            (Some(limit), None) => self.parts().rate = Some(Box::new(RateLimiter::new(limit))),
            (None, _) => {
                let limiter = self.0.as_deref_mut().and_then(|parts| parts.rate.take());
                return limiter.and_then(|mut limiter| limiter.take_held());
            }
        }
        None
    }

    /// Whether a rate limit holds a message back until it fits.
    pub(super) fn is_throttled(&self) -> bool {
        self.rate_limiter().is_some_and(RateLimiter::holds)
    }

    /// When the message a rate limit holds back fits (as of the clock the
    /// limiter was last told), if one is held.
    #[inline]
    pub(super) fn throttled_until(&self) -> Option<Instant> {
        self.rate_limiter().and_then(RateLimiter::until)
    }

    /// The driver says it is `now`: the rate limiter's clock.
    #[inline]
    pub(super) fn tell_time(&mut self, now: Instant) {
        if let Some(limiter) = self.rate_limiter_mut() {
            limiter.observe(now);
        }
    }

    /// The message a rate limit held back, taking it.
    pub(super) fn take_held(&mut self) -> Option<Message> {
        self.rate_limiter_mut()?.take_held()
    }
}
