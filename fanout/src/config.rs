//! [`NodeConfig`]: how a node listens, relays and treats slow clients.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio_lockgate::Config;
use tokio_lockgate::handshake::OriginPolicy;
use tokio_lockgate::hub::HubConfig;

/// Settings of one [`Node`](crate::Node).
#[derive(Debug, Clone)]
pub struct NodeConfig {
    pub(crate) listen: SocketAddr,
    pub(crate) nats: Option<String>,
    pub(crate) hub: HubConfig,
    pub(crate) websocket: Config,
    pub(crate) origin: OriginPolicy,
    pub(crate) metrics: Option<RenderMetrics>,
}

/// The largest message a client may send, by default: a broadcast is
/// queued for every subscriber, so it is kept well below lockgate's
/// general-purpose default.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 1 << 20;

impl NodeConfig {
    /// A standalone node on `listen` (port 0 picks a free port) with the
    /// hub's defaults: 1,024 queued messages per client, and a client that
    /// falls that far behind is closed with 1008. Web pages may connect
    /// from the node's own origin only, and `GET /metrics` is not served.
    pub fn new(listen: SocketAddr) -> Self {
        Self {
            listen,
            nats: None,
            hub: HubConfig::default(),
            websocket: Config::default().max_message_size(Some(DEFAULT_MAX_MESSAGE_SIZE)),
            origin: OriginPolicy::same_origin(),
            metrics: None,
        }
    }

    /// Relay topics through the NATS server at `url` (`nats://HOST:PORT`),
    /// so that every node connected to it forms one broadcast domain.
    ///
    /// Needs the `nats` feature (on by default); without it,
    /// [`Node::start`](crate::Node::start) fails with
    /// [`ErrorKind::Unsupported`](std::io::ErrorKind::Unsupported).
    pub fn nats(mut self, url: impl Into<String>) -> Self {
        self.nats = Some(url.into());
        self
    }

    /// Queue bound and slow-consumer policy of the clients.
    pub fn hub(mut self, hub: HubConfig) -> Self {
        self.hub = hub;
        self
    }

    /// The clients' WebSocket settings (limits, deadlines, compression,
    /// [`rate_limit`](Config::rate_limit)).
    pub fn websocket(mut self, config: Config) -> Self {
        self.websocket = config;
        self
    }

    /// Which web pages may connect: an upgrade whose `Origin` `policy`
    /// refuses is answered with 403. Default:
    /// [`OriginPolicy::same_origin`] (no `Origin`, as from clients other
    /// than browsers, or the node's own).
    pub fn origin_policy(mut self, policy: OriginPolicy) -> Self {
        self.origin = policy;
        self
    }

    /// Answer `GET /metrics` on the listening address (the clients' port)
    /// with `200 OK`, `Content-Type: text/plain; version=0.0.4` and the
    /// text `render` returns: typically
    /// `metrics_exporter_prometheus::PrometheusHandle::render` of the
    /// process's recorder, which lockgate's and the hub's counters report
    /// to.
    ///
    /// Before each call the node reports its own counters
    /// ([`NodeStats`](crate::NodeStats)) to the `metrics` facade's recorder
    /// as `lockgate_fanout_*` (see the README), so they are in the text
    /// too when `render` renders that recorder.
    ///
    /// Only the request line is looked at (`GET /metrics`, with or without
    /// a query), by peeking at the connection's first bytes; every other
    /// request goes to the WebSocket handshake untouched. Default: not
    /// served (`GET /metrics` is refused as any request that is not an
    /// upgrade, with 400).
    pub fn metrics(mut self, render: impl Fn() -> String + Send + Sync + 'static) -> Self {
        self.metrics = Some(RenderMetrics(Arc::new(render)));
        self
    }
}

/// What renders the text of `GET /metrics`.
#[derive(Clone)]
pub(crate) struct RenderMetrics(Arc<dyn Fn() -> String + Send + Sync>);

impl RenderMetrics {
    pub(crate) fn render(&self) -> String {
        (self.0)()
    }
}

impl fmt::Debug for RenderMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RenderMetrics(..)")
    }
}
