//! The exchange that opens a proxy's tunnel, whichever kind of proxy.

use std::time::Instant;

use super::http_connect::ProxyTunnel;
use super::socks5::Socks5Tunnel;
use crate::error::{Error, Result};
use crate::upgrade::{Exchange, Step};

/// A proxy's tunnel being opened: HTTP CONNECT or SOCKS5, run by a driver
/// like any [`Exchange`].
#[derive(Debug)]
#[non_exhaustive]
pub enum Tunnel {
    /// HTTP CONNECT (`http://` and `https://` proxies).
    Http(ProxyTunnel),
    /// SOCKS5 (`socks5://` and `socks5h://` proxies).
    Socks5(Socks5Tunnel),
}

impl Tunnel {
    fn exchange(&mut self) -> &mut dyn Exchange<Outcome = Result<()>> {
        match self {
            Tunnel::Http(tunnel) => tunnel,
            Tunnel::Socks5(tunnel) => tunnel,
        }
    }
}

impl Exchange for Tunnel {
    type Outcome = Result<()>;

    fn poll(&mut self, now: Instant) -> Step<Result<()>> {
        self.exchange().poll(now)
    }

    fn receive(&mut self, input: &[u8], now: Instant) {
        self.exchange().receive(input, now);
    }

    fn read_failed(&mut self, error: Error, now: Instant) {
        self.exchange().read_failed(error, now);
    }

    fn transmit_failed(&mut self, error: Error) {
        self.exchange().transmit_failed(error);
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.exchange().handle_timeout(now);
    }

    fn deadline(&self) -> Option<Instant> {
        match self {
            Tunnel::Http(tunnel) => tunnel.deadline(),
            Tunnel::Socks5(tunnel) => tunnel.deadline(),
        }
    }
}
