//! Dialling a client connection: where to connect for a URL ([`Route`]),
//! the proxy to go through ([`Proxy`]: HTTP, HTTPS, SOCKS5, from a URL or
//! from the environment), the exchange that opens its tunnel ([`Tunnel`]:
//! HTTP CONNECT or SOCKS5, sans-IO), and TLS ([`Connector`]).
//!
//! The sequence is decided once, here, for every driver: a [`Dial`] lists
//! what to do for each attempt ([`Route::steps`]: connect, TLS to an
//! `https://` proxy, resolve for `socks5://`, the tunnel, TLS to the
//! server, the handshake), walks them ([`Attempt`]: what each step needs,
//! what each outcome means) and decides which redirect to follow after
//! it, and the
//! blocking `connect` and the async drivers' `connect_async*` each do
//! those steps with their own I/O, all under one deadline,
//! [`Config::handshake_timeout`](crate::Config::handshake_timeout), that
//! spans every step of every attempt. The
//! exchanges are run by the same loop as the opening handshake (they are
//! [`Exchange`](crate::handshake::Exchange)s).

mod attempt;
mod authority;
mod client_options;
pub(crate) mod error;
mod http_connect;
mod proxy;
mod route;
mod sequence;
mod socks5;
pub(crate) mod tls;
mod tunnel;

pub(crate) use attempt::time_left;
pub use attempt::{Attempt, AttemptStep, first_address};
pub use client_options::ClientOptions;
pub use error::{ProxyRefusal, Socks5Reason, Socks5Refusal, TlsError};
pub use http_connect::ProxyTunnel;
pub use proxy::{Proxy, ProxyScheme};
pub use route::{DialStep, Route};
pub use sequence::Dial;
pub use socks5::{Socks5Target, Socks5Tunnel};
pub use tls::Connector;
#[cfg(feature = "native-tls")]
#[cfg_attr(docsrs, doc(cfg(feature = "native-tls")))]
pub use tls::native_tls;
#[cfg(feature = "rustls")]
#[cfg_attr(docsrs, doc(cfg(feature = "rustls")))]
pub use tls::{client_config, rustls, rustls_io_error, server_name};
pub use tunnel::Tunnel;
