//! The opening handshake's sans-IO core (RFC 6455 section 4): bytes in,
//! bytes out, no socket and no driver. Its public items are shown under
//! [`crate::handshake`], which adds the blocking driver's handshake types
//! and tungstenite's paths; the dial (`crate::dial`) builds on this module,
//! never the other way round.

mod accept_key;
mod client_upgrade;
mod driver;
mod exchange;
mod extended_connect;
pub(crate) mod head;
mod limits;
pub(crate) mod messages;
mod options;
mod origin;
mod outgoing;
pub(crate) mod progress;
mod receive_buffer;
mod server_upgrade;
pub(crate) mod summary;

pub use accept_key::{derive_accept_key, generate_key};
pub use client_upgrade::{ClientUpgrade, ClientUpgradeDone, IntoClientRequest};
pub use driver::HandshakeDriver;
pub use exchange::{Exchange, Opened, Step};
pub use extended_connect::{
    ExtendedConnect, WEBSOCKET_PROTOCOL, extended_connect_response, is_extended_connect,
};
pub use limits::{
    DEFAULT_MAX_HEAD_SIZE, DEFAULT_MAX_HEADERS, DEFAULT_MAX_LINE_SIZE, HandshakeLimits,
};
pub use options::ServerOptions;
pub use origin::{OriginPatternError, OriginPolicy};
pub use outgoing::Outgoing;
pub use receive_buffer::ReceiveBuffer;
pub use server_upgrade::{
    Callback, ErrorResponse, NoCallback, ServerUpgrade, ServerUpgradeDone, choose_subprotocol,
    error_response_bytes, upgrade_response, upgrade_response_with_deflate,
};
