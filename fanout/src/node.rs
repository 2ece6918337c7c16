//! [`Node`]: a listening broadcast server, standalone or relayed.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_lockgate::CloseCode;
use tokio_lockgate::drain::{DrainOptions, DrainReport};
use tokio_lockgate::hub::{Hub, HubStats};

use crate::config::NodeConfig;
use crate::connection::{self, Path};
use crate::history::History;
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
    relay: Option<Relay>,
    stop: watch::Sender<bool>,
    accepting: JoinHandle<()>,
}

/// How long a stopping node waits for the broker to take what its clients
/// published.
const RELAY_FLUSH_LIMIT: std::time::Duration = std::time::Duration::from_millis(500);

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
            Some(url) => {
                Some(Relay::connect(url, Arc::clone(&state), config.history.is_none()).await?)
            }
            None => None,
        };
        let history = match config.history {
            Some(history) => Some(
                History::start(
                    history,
                    Arc::clone(&state),
                    #[cfg(feature = "nats")]
                    relay.as_ref().map(Relay::client),
                )
                .await?,
            ),
            None => None,
        };
        // With a history, messages travel through it; the relay only
        // watches the broker.
        let path = match history {
            Some(history) => Path::History(history),
            None => Path::Direct(relay.clone()),
        };
        let (stop, stopped) = watch::channel(false);
        let accepting = tokio::spawn(accept_loop(
            listener,
            config,
            Arc::clone(&state),
            path,
            stopped,
        ));
        Ok(NodeHandle {
            local_addr,
            state,
            relay,
            stop,
            accepting,
        })
    }
}

async fn accept_loop(
    listener: TcpListener,
    config: NodeConfig,
    state: Arc<NodeState>,
    path: Path,
    mut stopped: watch::Receiver<bool>,
) {
    // Shared by every connection's task.
    let config = Arc::new(config);
    let mut backoff = AcceptBackoff::default();
    loop {
        let tcp = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => {
                    backoff.succeeded();
                    tcp
                }
                // Out of file descriptors and the like: the listener
                // stays, and the next accept may succeed.
                Err(e) => {
                    let wait = backoff.failed(&e);
                    tokio::select! {
                        () = tokio::time::sleep(wait) => {}
                        _ = stopped.changed() => return,
                    }
                    continue;
                }
            },
            _ = stopped.changed() => return,
        };
        tokio::spawn(connection::serve(
            tcp,
            Arc::clone(&config),
            Arc::clone(&state),
            path.clone(),
        ));
    }
}

/// How long the accept loop waits after a failed `accept` (5 ms, doubling
/// to 1 s, back to nothing after a success), and how often it says so (the
/// first failure, then at most once a second with a count): a node out of
/// file descriptors neither spins nor floods its log.
#[derive(Debug, Default)]
struct AcceptBackoff {
    wait: std::time::Duration,
    unreported: u64,
    last_report: Option<std::time::Instant>,
}

impl AcceptBackoff {
    fn succeeded(&mut self) {
        self.wait = std::time::Duration::ZERO;
    }

    fn failed(&mut self, error: &std::io::Error) -> std::time::Duration {
        const FIRST: std::time::Duration = std::time::Duration::from_millis(5);
        const MAX: std::time::Duration = std::time::Duration::from_secs(1);
        self.wait = (self.wait * 2).clamp(FIRST, MAX);
        self.unreported += 1;
        let now = std::time::Instant::now();
        if self
            .last_report
            .is_none_or(|last| now.duration_since(last) >= std::time::Duration::from_secs(1))
        {
            eprintln!(
                "lockgate-fanout: accept failed: {error} ({} time(s) since the last report; \
                 next try in {:?})",
                self.unreported, self.wait
            );
            self.unreported = 0;
            self.last_report = Some(now);
        }
        self.wait
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

    /// Stops accepting and closes every client with 1001 (Going Away) at
    /// once, dropping what was queued for them; see [`drain`](Self::drain)
    /// for a graceful stop.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.accepting.await;
        self.state
            .hub
            .close_all(CloseCode::Away, "broadcast node shutting down");
        if let Some(relay) = &self.relay {
            relay.flush(RELAY_FLUSH_LIMIT).await;
        }
    }

    /// Stops gracefully: new clients are refused with 503 and
    /// `Retry-After` (the listener stays open meanwhile); every client is
    /// sent every message the node accepted before the drain started, then
    /// a close frame with `options`' code (1001 by default), at a turn
    /// spread over `options`' window; those still open at its deadline
    /// are cut. Then the node stops as [`shutdown`](Self::shutdown) does.
    /// Returns the drain's counts.
    ///
    /// The drain starts with the call, not at the first poll of the
    /// returned future: new clients are refused from then on.
    ///
    /// The relay keeps running during the drain: a client is sent what
    /// other nodes publish until its turn.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn drain(self, options: DrainOptions) -> impl Future<Output = DrainReport> + Send {
        // Started here, not at the first poll: the drain runs on a task of
        // its own and the future only waits for its report.
        let draining = self.state.drain.start(options);
        async move {
            let report = draining.await;
            self.shutdown().await;
            report
        }
    }

    /// Whether the node is draining (refusing new clients for good).
    pub fn is_draining(&self) -> bool {
        self.state.drain.is_draining()
    }
}

#[cfg(test)]
mod accept_backoff_tests {
    use std::time::Duration;

    use super::AcceptBackoff;

    #[test]
    fn waits_double_up_to_a_second_and_a_success_resets_them() {
        let error = std::io::Error::from_raw_os_error(24); // EMFILE
        let mut backoff = AcceptBackoff::default();
        let waits: Vec<Duration> = (0..10).map(|_| backoff.failed(&error)).collect();
        assert_eq!(waits[0], Duration::from_millis(5));
        assert_eq!(waits[1], Duration::from_millis(10));
        assert_eq!(*waits.last().unwrap(), Duration::from_secs(1));
        assert!(waits.windows(2).all(|w| w[0] <= w[1]));
        backoff.succeeded();
        assert_eq!(backoff.failed(&error), Duration::from_millis(5));
    }
}
