//! The opening handshake (RFC 6455 section 4), sans-IO: bytes in, bytes
//! out.
//!
//! [`ClientUpgrade`] builds the upgrade request and checks the server's
//! answer; [`ServerUpgrade`] checks a request, lets a [`Callback`] shape
//! or refuse the response, and serializes it. Neither reads nor writes a
//! socket: the caller moves the bytes, so the same code serves the blocking
//! and the async drivers. [`HandshakeDriver`] runs either side within the
//! handshake deadline and tells a driver what to do next; the blocking
//! entry points and the tokio adapter's are loops around it.
//!
//! Every server handshake checks the request's `Origin` against an
//! [`OriginPolicy`] before its callback runs: by default an upgrade
//! without `Origin` or from the server's own origin is accepted and any
//! other refused with 403, so that no other site's page can open a
//! WebSocket with the user's cookies.
//!
//! Extensions: permessage-deflate (RFC 7692) is negotiated when a
//! [`DeflateConfig`](crate::deflate::DeflateConfig) is given
//! ([`ClientUpgrade::with_deflate`], [`ServerUpgrade::with_deflate`],
//! [`upgrade_response_with_deflate`]); the agreed
//! [`DeflateParams`](crate::deflate::DeflateParams) are in the handshake's
//! result. Without one, no extension is offered or accepted.
//!
//! Heads are read incrementally: each input is scanned once for the end of
//! the head and checked against the [`HandshakeLimits`] (by default a 64
//! KiB head and 124 header fields, tungstenite's limits) before it is
//! buffered, and the complete head is parsed once, in room for the header
//! fields it has. Bytes that follow the head in the same input (early frames) are
//! handed back as `leftover`, never dropped. What a connection in its
//! handshake holds grows with what its peer has sent: the head buffer
//! doubles from 64 bytes as the head arrives, and the drivers read into a
//! [`ReceiveBuffer`] that starts at 256 bytes and is given back while they
//! wait.
//!
//! # Examples
//!
//! A client and a server talking through memory:
//!
//! ```
//! use lockgate::handshake::{ClientUpgrade, NoCallback, ServerUpgrade};
//!
//! let mut client = ClientUpgrade::new("ws://example.com/chat").unwrap();
//! let mut server = ServerUpgrade::new(NoCallback);
//!
//! // The client's first frame may arrive along with its request.
//! let mut wire = client.request_bytes().to_vec();
//! wire.extend_from_slice(b"\x81\x80\x00\x00\x00\x00");
//! let accepted = server.receive(&wire).unwrap().expect("complete request");
//! assert_eq!(&accepted.leftover[..], b"\x81\x80\x00\x00\x00\x00");
//!
//! let opened = client.receive(&accepted.response_bytes).unwrap().expect("complete response");
//! assert_eq!(opened.response.status(), 101);
//! ```
//!
//! This module is the public face of two layers: the sans-IO handshake
//! above, and the blocking driver's handshake over a stream
//! ([`MidHandshake`], [`HandshakeError`], [`client::ClientHandshake`],
//! [`server::ServerHandshake`]) under tungstenite's paths. It only
//! re-exports; the core itself knows no driver.

pub use crate::dial::ClientOptions;
/// Where they were before the dial module; [`crate::dial`] has them all.
pub use crate::dial::{Proxy, ProxyRefusal, ProxyTunnel, Route};
pub use crate::mid_handshake::{HandshakeError, HandshakeRole, MidHandshake};
pub use crate::upgrade::{
    Callback, ClientUpgrade, ClientUpgradeDone, DEFAULT_MAX_HEAD_SIZE, DEFAULT_MAX_HEADERS,
    DEFAULT_MAX_LINE_SIZE, ErrorResponse, Exchange, ExtendedConnect, HandshakeDriver,
    HandshakeLimits, IntoClientRequest, NoCallback, Opened, OriginPatternError, OriginPolicy,
    Outgoing, ReceiveBuffer, ServerOptions, ServerUpgrade, ServerUpgradeDone, Step,
    WEBSOCKET_PROTOCOL, choose_subprotocol, derive_accept_key, error_response_bytes,
    extended_connect_response, generate_key, is_extended_connect, upgrade_response,
    upgrade_response_with_deflate,
};
pub use machine::HandshakeMachine;

/// The stream of a handshake in progress, under tungstenite's path.
pub mod machine {
    pub use crate::mid_handshake::HandshakeMachine;
}

pub mod client {
    //! The client side of the handshake under tungstenite's path
    //! (`handshake::client`): its request and response types, the handshake
    //! over a stream, and the key.

    pub use crate::client::ClientHandshake;
    pub use crate::upgrade::generate_key;
    pub use crate::upgrade::{ClientUpgrade, ClientUpgradeDone, IntoClientRequest};

    pub use crate::upgrade::messages::client::{Request, Response};
}

pub mod server {
    //! The server side of the handshake under tungstenite's path
    //! (`handshake::server`): the request, response and refusal types, the
    //! [`Callback`] that inspects requests, and the handshake over a stream.

    pub use crate::server::{
        ServerHandshake, create_response, create_response_with_body, write_response,
    };
    pub use crate::upgrade::{
        Callback, ErrorResponse, NoCallback, ServerUpgrade, ServerUpgradeDone,
    };

    pub use crate::upgrade::messages::server::{Request, Response};
}
