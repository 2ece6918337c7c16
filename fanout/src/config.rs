//! [`NodeConfig`]: how a node listens, relays and treats slow clients.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

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
    pub(crate) history: Option<HistoryConfig>,
}

/// How much of each topic a node keeps, so that a client that reconnects
/// (to any node) with `?since=EPOCH:POSITION` receives what it missed; see
/// [`seq`](crate::seq).
///
/// With a broker ([`NodeConfig::nats`]) the history is a NATS JetStream
/// stream, replicated over the broker's cluster: every node gives a message
/// the same position, and a message is delivered only once the stream has
/// stored it. Without one, the history is the node's own memory, and its
/// epoch changes when the process restarts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryConfig {
    pub(crate) messages: u64,
    pub(crate) max_age: Option<Duration>,
    pub(crate) replicas: Option<usize>,
}

impl HistoryConfig {
    /// Keep the last `messages` messages of each topic (at least 1).
    pub fn last(messages: u64) -> Self {
        Self {
            messages: messages.max(1),
            max_age: None,
            replicas: None,
        }
    }

    /// Also drop messages older than `age` (default: kept until
    /// [`last`](Self::last) pushes them out).
    pub fn max_age(mut self, age: Option<Duration>) -> Self {
        self.max_age = age;
        self
    }

    /// Copies of the JetStream stream kept by the broker's cluster, 1 to 5
    /// (default: 3 when the broker is a cluster of at least 3 servers,
    /// else 1). Used when the stream is created.
    pub fn replicas(mut self, replicas: Option<usize>) -> Self {
        self.replicas = replicas.map(|r| r.clamp(1, 5));
        self
    }
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
            history: None,
        }
    }

    /// Keep a history of each topic (see [`HistoryConfig`]): messages carry
    /// positions for clients that offer [`seq::SUBPROTOCOL`], and a client
    /// resumes with `?since=`. Default: none, messages are delivered at
    /// most once, as they come.
    ///
    /// [`seq::SUBPROTOCOL`]: crate::seq::SUBPROTOCOL
    pub fn history(mut self, history: HistoryConfig) -> Self {
        self.history = Some(history);
        self
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
