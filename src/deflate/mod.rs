//! permessage-deflate (RFC 7692): negotiation and compression.
//!
//! [`DeflateConfig`] says what an endpoint offers or accepts;
//! the negotiated parameters are what both ends agreed in the opening
//! handshake.

mod config;

pub use config::DeflateConfig;
