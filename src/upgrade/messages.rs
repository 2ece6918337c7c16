//! The HTTP messages of the handshake as each side holds them, under the
//! names tungstenite gives them (`handshake::client::{Request, Response}`,
//! `handshake::server::{Request, Response}`): defined here, with the
//! core, so that every driver names them without going through the
//! public facade.

/// A client's messages.
pub(crate) mod client {
    /// The upgrade request a client sends.
    pub type Request = http::Request<()>;

    /// The server's answer a client receives: the `101 Switching Protocols`
    /// (with no body) on success; a refusal's is in
    /// [`Error::Http`](crate::Error::Http), with the start of its body.
    pub type Response = http::Response<Option<Vec<u8>>>;
}

/// A server's messages.
pub(crate) mod server {
    /// The upgrade request a server receives.
    pub type Request = http::Request<()>;

    /// The `101 Switching Protocols` response a server sends.
    pub type Response = http::Response<()>;
}
