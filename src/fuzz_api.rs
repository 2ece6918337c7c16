//! Thin wrappers over crate-private parsers, for the fuzz targets in
//! `fuzz/`. Compiled only with `--cfg fuzzing` (which the fuzz build sets);
//! not part of the public API and not covered by semver.

#[cfg(feature = "deflate")]
use bytes::BytesMut;
use http::{HeaderMap, HeaderValue, header::SEC_WEBSOCKET_EXTENSIONS};

use crate::deflate::{DeflateConfig, DeflateParams};
use crate::dial::{Socks5Target, Socks5Tunnel};
use crate::error::HandshakeFailure;

/// Why [`Inflater::inflate`] failed.
#[cfg(feature = "deflate")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InflateFailure {
    /// The message inflates to more than the limit.
    TooLarge,
    /// Not valid DEFLATE data for this stream.
    Invalid,
}

/// The receiving side of permessage-deflate, with the message inflated so
/// far.
#[cfg(feature = "deflate")]
#[derive(Debug)]
pub struct Inflater {
    inner: crate::deflate::raw::Inflater,
    out: BytesMut,
}

#[cfg(feature = "deflate")]
impl Inflater {
    /// An inflater for the peer's window bits (clamped to 9..=15).
    pub fn new(window_bits: u8, no_context_takeover: bool) -> Self {
        Self {
            inner: crate::deflate::raw::Inflater::new(window_bits, no_context_takeover),
            out: BytesMut::new(),
        }
    }

    /// Inflates one frame's payload of the current message (`fin`: its last
    /// frame) under `max` bytes of message output. After an error the
    /// inflater starts over; take the output before the next message.
    ///
    /// # Errors
    ///
    /// The message is larger than `max`, or the data is invalid.
    pub fn inflate(&mut self, payload: &[u8], fin: bool, max: usize) -> Result<(), InflateFailure> {
        use crate::deflate::raw::InflateError;
        let result = self.inner.inflate(payload, fin, &mut self.out, max);
        result.map_err(|e| match e {
            InflateError::TooLarge { .. } => InflateFailure::TooLarge,
            InflateError::Invalid => InflateFailure::Invalid,
        })
    }

    /// The current message's output so far.
    pub fn output(&self) -> &[u8] {
        &self.out
    }

    /// The capacity of the output buffer.
    pub fn output_capacity(&self) -> usize {
        self.out.capacity()
    }

    /// Takes the output, starting an empty one for the next message.
    pub fn take_output(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out).to_vec()
    }
}

fn extension_headers(values: &[HeaderValue]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for value in values {
        headers.append(SEC_WEBSOCKET_EXTENSIONS, value.clone());
    }
    headers
}

/// The client's `Sec-WebSocket-Extensions` offer for `config`.
pub fn client_offer(config: &DeflateConfig) -> HeaderValue {
    crate::deflate::params::client_offer(config)
}

/// The server's choice among the offers in `values` (one header field
/// each): the agreed parameters and the answer, or `None` to decline.
pub fn server_negotiate(
    config: &DeflateConfig,
    values: &[HeaderValue],
) -> Option<(DeflateParams, HeaderValue)> {
    let headers = extension_headers(values);
    crate::deflate::params::server_negotiate(config, headers.get_all(SEC_WEBSOCKET_EXTENSIONS))
}

/// The client's check of the server's answer in `values` to
/// [`client_offer`]`(config)`.
///
/// # Errors
///
/// The answer is not a valid answer to that offer.
pub fn client_check_response(
    config: &DeflateConfig,
    values: &[HeaderValue],
) -> Result<Option<DeflateParams>, HandshakeFailure> {
    let headers = extension_headers(values);
    crate::deflate::params::client_check_response(config, headers.get_all(SEC_WEBSOCKET_EXTENSIONS))
}

/// The SOCKS5 exchange with the proxy at `proxy` (`host:port`) that opens
/// a tunnel to `target`, authenticating with `credentials` (user,
/// password) if given. The dialler makes these from a proxy URL; the
/// constructor itself is crate-private.
pub fn socks5_tunnel(
    proxy: &str,
    credentials: Option<(&str, &str)>,
    target: Socks5Target,
    deadline: Option<std::time::Instant>,
) -> Socks5Tunnel {
    let credentials = credentials.map(|(user, password)| (user.to_owned(), password.to_owned()));
    Socks5Tunnel::new(proxy.to_owned(), credentials, target, deadline)
}
