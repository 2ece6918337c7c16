//! Without the `nats` feature there is no broker link: a node is
//! standalone, and a configuration that names a broker fails at start,
//! saying why. `Relay` is uninhabited, so every relayed path compiles away.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use tokio_lockgate::Message;

use crate::state::NodeState;

/// No link to a broker can exist in this build.
#[derive(Debug, Clone)]
pub(crate) enum Relay {}

impl Relay {
    /// Refuses: this build cannot reach a broker.
    pub(crate) async fn connect(
        url: &str,
        _state: Arc<NodeState>,
        _relay_topics: bool,
    ) -> io::Result<Self> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("cannot relay through {url}: built without the `nats` feature"),
        ))
    }

    pub(crate) async fn publish(&self, _topic: &str, _msg: &Message) {
        match *self {}
    }

    pub(crate) async fn flush(&self, _limit: Duration) {
        match *self {}
    }
}

#[cfg(test)]
mod tests {
    use std::io;

    use crate::{Node, NodeConfig};

    #[tokio::test]
    async fn a_node_built_without_nats_refuses_a_broker_at_start() {
        let config = NodeConfig::new(([127, 0, 0, 1], 0).into()).nats("nats://127.0.0.1:4222");
        let Err(error) = Node::start(config).await else {
            panic!("a node without the relay started with a broker");
        };
        assert_eq!(error.kind(), io::ErrorKind::Unsupported);
        assert!(error.to_string().contains("`nats` feature"), "{error}");
    }
}
