//! permessage-deflate (RFC 7692): negotiation and compression.
//!
//! [`DeflateConfig`] says what an endpoint offers or accepts;
//! [`DeflateParams`] is what both ends agreed in the opening handshake.
//! Compression itself needs the `deflate` cargo feature (on by default);
//! without it nothing is offered or accepted.

mod config;
pub(crate) mod params;
#[cfg(feature = "deflate")]
pub(crate) mod raw;
#[cfg(all(test, feature = "deflate"))]
mod sleep_tests;
#[cfg(feature = "deflate")]
mod window;

pub use config::DeflateConfig;
pub(crate) use config::usable;
pub use params::DeflateParams;
