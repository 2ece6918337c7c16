//! lockgate-fanout: a broadcast WebSocket server built on tokio-lockgate's
//! [hub](tokio_lockgate::hub), where any number of processes form one
//! broadcast domain through a NATS server.
//!
//! A client that connects to `ws://ADDR/topics/NAME` is subscribed to
//! topic NAME, and every data message it sends is delivered, exactly once
//! and in the order sent, to every subscriber of NAME on every node, the
//! sender included:
//!
//! - each message is published to the local hub first (one
//!   [`PreparedMessage`](tokio_lockgate::PreparedMessage) for all local
//!   subscribers), then to the broker, which does not echo it back;
//! - messages from the broker become one prepared message per node;
//! - a client whose queue fills up is closed with 1008 (by default), so it
//!   never delays the others or grows the node's memory past its bound;
//! - a node that loses its broker closes its clients with 1013, since they
//!   would silently miss other nodes' messages, and refuses new ones with
//!   503 until the broker is back;
//! - a node that stops ([`NodeHandle::drain`], SIGTERM for the binary)
//!   refuses new clients with 503, sends each client what it accepted for
//!   it and then 1001, spread over a window, and cuts the rest at a
//!   deadline;
//! - web pages from other origins are refused with 403 unless allowed
//!   ([`NodeConfig::origin_policy`]), and a client may be held to a
//!   message rate, throttled or closed with 1008 (a
//!   [`RateLimit`](tokio_lockgate::lockgate::RateLimit) in
//!   [`NodeConfig::websocket`]);
//! - `GET /metrics` on the clients' port serves the counters of lockgate,
//!   of the hub and of the node ([`NodeConfig::metrics`]; the binary
//!   renders them in Prometheus' text format);
//! - with a history ([`NodeConfig::history`]: NATS JetStream with a
//!   broker, memory without), every message of a topic has a position,
//!   the same on every node, and a client that offers the
//!   [`seq::SUBPROTOCOL`] and reconnects, to any node, with
//!   `?since=EPOCH:POSITION` receives exactly what it missed, then the live
//!   messages; a position that cannot be served is closed with 4001 (see
//!   [`seq`]).
//!
//! ```
//! use lockgate_fanout::{Node, NodeConfig};
//! use tokio_lockgate::{Message, connect_async};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Standalone here; `.nats("nats://127.0.0.1:4222")` joins a domain.
//! let node = Node::start(NodeConfig::new("127.0.0.1:0".parse()?)).await?;
//! let url = format!("ws://{}/topics/news", node.local_addr());
//! let (mut alice, _) = connect_async(&url).await?;
//! let (mut bob, _) = connect_async(&url).await?;
//! # while node.hub_stats().subscribers < 2 { tokio::task::yield_now().await; }
//! alice.send(Message::text("hello")).await?;
//! assert_eq!(bob.read().await?, Message::text("hello"));
//! assert_eq!(alice.read().await?, Message::text("hello")); // the sender too
//! node.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! With a history, a client that dropped resumes where it was:
//!
//! ```
//! use lockgate_fanout::seq::{self, Sequenced, Since};
//! use lockgate_fanout::{HistoryConfig, Node, NodeConfig};
//! use tokio_lockgate::handshake::IntoClientRequest;
//! use tokio_lockgate::{Message, connect_async};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = NodeConfig::new("127.0.0.1:0".parse()?).history(HistoryConfig::last(1000));
//! let node = Node::start(config).await?;
//! let url = format!("ws://{}/topics/news", node.local_addr());
//! // A client that wants positions offers the subprotocol.
//! let sequenced = |url: String| async move {
//!     let mut request = url.into_client_request()?;
//!     let offer = seq::SUBPROTOCOL.parse()?;
//!     request.headers_mut().insert("sec-websocket-protocol", offer);
//!     let (ws, response) = connect_async(request).await?;
//!     let epoch = response.headers()[seq::EPOCH_HEADER].to_str()?.to_owned();
//!     Ok::<_, Box<dyn std::error::Error>>((ws, epoch))
//! };
//! let (mut reader, epoch) = sequenced(url.clone()).await?;
//! let (mut writer, _) = connect_async(&url).await?;
//! # while node.hub_stats().subscribers < 2 { tokio::task::yield_now().await; }
//! writer.send(Message::text("one")).await?;
//! let Message::Binary(frame) = reader.read().await? else { panic!() };
//! let one = Sequenced::decode(&frame).ok_or("a frame")?;
//! assert_eq!(one.payload, b"one");
//!
//! // The reader drops; "two" is published meanwhile; it comes back after
//! // the position it had.
//! drop(reader);
//! writer.send(Message::text("two")).await?;
//! let since = Since::new(&epoch, one.position).ok_or("an epoch")?;
//! let (mut reader, _) = sequenced(format!("{url}?since={since}")).await?;
//! let Message::Binary(frame) = reader.read().await? else { panic!() };
//! assert_eq!(Sequenced::decode(&frame).ok_or("a frame")?.payload, b"two");
//! node.shutdown().await;
//! # Ok(())
//! # }
//! ```

mod config;
mod connection;
mod history;
mod node;
#[cfg(feature = "nats")]
mod relay;
#[cfg(not(feature = "nats"))]
#[path = "relay_absent.rs"]
mod relay;
mod scrape;
pub mod seq;
mod state;
pub mod topic;

pub use config::{DEFAULT_MAX_MESSAGE_SIZE, HistoryConfig, NodeConfig};
pub use node::{Node, NodeHandle};
pub use state::{BROKER_LOST, NodeStats};
