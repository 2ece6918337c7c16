//! `lockgate-fanout --listen ADDR [--nats nats://HOST:PORT]`: a broadcast
//! WebSocket server (see the crate documentation and README.md).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use lockgate::deflate::DeflateConfig;
use lockgate_fanout::{DEFAULT_MAX_MESSAGE_SIZE, Node, NodeConfig};
use tokio_lockgate::hub::{HubConfig, SlowConsumer};
use tokio_lockgate::{CloseCode, Config};

/// A broadcast WebSocket server: clients of ws://ADDR/topics/NAME receive
/// every message sent to NAME, on this node and, with --nats, on every node
/// connected to the same NATS server.
#[derive(Debug, Parser)]
#[command(name = "lockgate-fanout", version)]
struct Args {
    /// Address to listen on (port 0 picks a free one).
    #[arg(long, value_name = "ADDR")]
    listen: SocketAddr,
    /// NATS server relaying topics between nodes; without it the node is
    /// standalone.
    #[arg(long, value_name = "nats://HOST:PORT")]
    nats: Option<String>,
    /// Messages queued per client before the slow-consumer policy applies.
    #[arg(long, default_value_t = 1024, value_name = "N")]
    queue_capacity: usize,
    /// What happens to a client whose queue is full: close it (with
    /// --slow-close-code), drop the message for it, or make publishers wait.
    #[arg(long, value_enum, default_value_t = Policy::Close)]
    slow_consumer: Policy,
    /// The close code for --slow-consumer close: 1008 (policy) or 1013
    /// (try again later).
    #[arg(long, default_value_t = 1008, value_parser = close_code)]
    slow_close_code: u16,
    /// The largest message a client may send, in bytes.
    #[arg(long, default_value_t = DEFAULT_MAX_MESSAGE_SIZE, value_name = "BYTES")]
    max_message_size: usize,
    /// Offer permessage-deflate, without server context takeover, so each
    /// broadcast is compressed once per node rather than per client.
    #[arg(long)]
    deflate: bool,
    /// Print the node's counters to stderr every SECS seconds (0: never).
    #[arg(long, default_value_t = 0, value_name = "SECS")]
    stats_interval: u64,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Policy {
    Close,
    Drop,
    Wait,
}

fn close_code(s: &str) -> Result<u16, String> {
    match s.parse() {
        Ok(code @ (1008 | 1013)) => Ok(code),
        _ => Err(format!("{s} is not 1008 or 1013")),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let policy = match args.slow_consumer {
        Policy::Close => SlowConsumer::Close(CloseCode::from(args.slow_close_code)),
        Policy::Drop => SlowConsumer::Drop,
        Policy::Wait => SlowConsumer::Wait,
    };
    let mut websocket = Config::default().max_message_size(Some(args.max_message_size));
    if args.deflate {
        websocket = websocket.deflate(Some(
            DeflateConfig::default().server_no_context_takeover(true),
        ));
    }
    let mut config = NodeConfig::new(args.listen)
        .hub(
            HubConfig::default()
                .queue_capacity(args.queue_capacity)
                .slow_consumer(policy),
        )
        .websocket(websocket);
    if let Some(url) = &args.nats {
        config = config.nats(url.clone());
    }
    let node = match Node::start(config).await {
        Ok(node) => node,
        Err(e) => {
            eprintln!("lockgate-fanout: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Scripts wait for this line.
    println!("listening on ws://{}", node.local_addr());
    if args.stats_interval > 0 {
        let every = Duration::from_secs(args.stats_interval);
        let mut ticks = tokio::time::interval(every);
        ticks.tick().await;
        loop {
            tokio::select! {
                _ = ticks.tick() => eprintln!("lockgate-fanout: {:?} {:?}", node.stats(), node.hub_stats()),
                _ = shutdown_signal() => break,
            }
        }
    } else {
        shutdown_signal().await;
    }
    node.shutdown().await;
    ExitCode::SUCCESS
}

/// Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("a SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
