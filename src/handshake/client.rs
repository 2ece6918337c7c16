//! The client side of the handshake under tungstenite's path
//! (`handshake::client`): its request and response types, the handshake
//! over a stream, and the key.

pub use super::accept_key::generate_key;
pub use super::client_upgrade::{ClientUpgrade, ClientUpgradeDone, IntoClientRequest};
pub use crate::client::ClientHandshake;

/// The upgrade request a client sends.
pub type Request = http::Request<()>;

/// The server's answer a client receives: the `101 Switching Protocols`
/// (with no body) on success; a refusal's is in
/// [`Error::Http`](crate::Error::Http), with the start of its body.
pub type Response = http::Response<Option<Vec<u8>>>;
