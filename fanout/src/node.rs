//! [`Node`]: a listening broadcast server, standalone or relayed.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_lockgate::CloseCode;
use tokio_lockgate::hub::{Hub, HubStats};

use crate::config::NodeConfig;
use crate::connection;
use crate::relay::Relay;
use crate::state::{NodeState, NodeStats};

/// A broadcast node: clients connect to `ws://ADDR/topics/NAME`, and every
/// data message a client sends is delivered to every subscriber of NAME,
/// on this node and, with NATS, on every node of the broadcast domain.
#[derive(Debug)]
pub struct Node;

/// A running node.
#[derive(Debug)]
pub struct NodeHandle {
    local_addr: SocketAddr,
    state: Arc<NodeState>,
    stop: watch::Sender<bool>,
    accepting: JoinHandle<()>,
}

impl Node {
    /// Binds, connects to the broker if one is configured, and starts
    /// accepting clients.
    ///
    /// # Errors
    ///
    /// Binding fails, or the broker cannot be reached at start (once
    /// running, a lost broker is reconnected to).
    pub async fn start(config: NodeConfig) -> io::Result<NodeHandle> {
        let listener = TcpListener::bind(config.listen).await?;
        let local_addr = listener.local_addr()?;
        let state = Arc::new(NodeState::new(Hub::new(config.hub)));
        let relay = match &config.nats {
            Some(url) => Some(Relay::connect(url, Arc::clone(&state)).await?),
            None => None,
        };
        let (stop, stopped) = watch::channel(false);
        let accepting = tokio::spawn(accept_loop(
            listener,
            config,
            Arc::clone(&state),
            relay,
            stopped,
        ));
        Ok(NodeHandle {
            local_addr,
            state,
            stop,
            accepting,
        })
    }
}

async fn accept_loop(
    listener: TcpListener,
    config: NodeConfig,
    state: Arc<NodeState>,
    relay: Option<Relay>,
    mut stopped: watch::Receiver<bool>,
) {
    loop {
        let tcp = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                // Out of file descriptors and the like: the listener
                // stays, and the next accept may succeed.
                Err(e) => {
                    eprintln!("lockgate-fanout: accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = stopped.changed() => return,
        };
        tokio::spawn(connection::serve(
            tcp,
            config.websocket,
            Arc::clone(&state),
            relay.clone(),
        ));
    }
}

impl NodeHandle {
    /// The address clients connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The node's counters.
    pub fn stats(&self) -> NodeStats {
        self.state.stats()
    }

    /// The hub's counters (queues, drops, slow consumers closed).
    pub fn hub_stats(&self) -> HubStats {
        self.state.hub.stats()
    }

    /// Stops accepting and closes every client with 1001 (Going Away).
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.accepting.await;
        self.state
            .hub
            .close_all(CloseCode::Away, "broadcast node shutting down");
    }
}
