//! The server side of the handshake under tungstenite's path
//! (`handshake::server`): the request, response and refusal types, the
//! [`Callback`] that inspects requests, and the handshake over a stream.

pub use super::server_upgrade::{
    Callback, ErrorResponse, NoCallback, ServerUpgrade, ServerUpgradeDone,
};
pub use crate::server::{
    ServerHandshake, create_response, create_response_with_body, write_response,
};

/// The upgrade request a server receives.
pub type Request = http::Request<()>;

/// The `101 Switching Protocols` response a server sends.
pub type Response = http::Response<()>;
