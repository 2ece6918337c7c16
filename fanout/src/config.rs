//! [`NodeConfig`]: how a node listens, relays and treats slow clients.

use std::net::SocketAddr;

use tokio_lockgate::Config;
use tokio_lockgate::hub::HubConfig;

/// Settings of one [`Node`](crate::Node).
#[derive(Debug, Clone)]
pub struct NodeConfig {
    pub(crate) listen: SocketAddr,
    pub(crate) nats: Option<String>,
    pub(crate) hub: HubConfig,
    pub(crate) websocket: Config,
}

/// The largest message a client may send, by default: a broadcast is
/// queued for every subscriber, so it is kept well below lockgate's
/// general-purpose default.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 1 << 20;

impl NodeConfig {
    /// A standalone node on `listen` (port 0 picks a free port) with the
    /// hub's defaults: 1,024 queued messages per client, and a client that
    /// falls that far behind is closed with 1008.
    pub fn new(listen: SocketAddr) -> Self {
        Self {
            listen,
            nats: None,
            hub: HubConfig::default(),
            websocket: Config::default().max_message_size(Some(DEFAULT_MAX_MESSAGE_SIZE)),
        }
    }

    /// Relay topics through the NATS server at `url` (`nats://HOST:PORT`),
    /// so that every node connected to it forms one broadcast domain.
    pub fn nats(mut self, url: impl Into<String>) -> Self {
        self.nats = Some(url.into());
        self
    }

    /// Queue bound and slow-consumer policy of the clients.
    pub fn hub(mut self, hub: HubConfig) -> Self {
        self.hub = hub;
        self
    }

    /// The clients' WebSocket settings (limits, deadlines, compression).
    pub fn websocket(mut self, config: Config) -> Self {
        self.websocket = config;
        self
    }
}
