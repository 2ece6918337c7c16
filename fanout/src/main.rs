//! `lockgate-fanout --listen ADDR [--nats nats://HOST:PORT]`: a broadcast
//! WebSocket server, with its metrics at `http://ADDR/metrics` (see the
//! crate documentation and README.md).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use clap::{CommandFactory, Parser, ValueEnum};
use lockgate::deflate::DeflateConfig;
use lockgate::{RateLimit, RatePolicy};
use lockgate_fanout::{DEFAULT_MAX_MESSAGE_SIZE, HistoryConfig, Node, NodeConfig, NodeHandle};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tokio::signal::unix::{SignalKind, signal};
use tokio_lockgate::drain::DrainOptions;
use tokio_lockgate::handshake::{OriginPatternError, OriginPolicy};
use tokio_lockgate::hub::{HubConfig, SlowConsumer};
use tokio_lockgate::{CloseCode, Config};

/// A broadcast WebSocket server: clients of ws://ADDR/topics/NAME receive
/// every message sent to NAME, on this node and, with --nats, on every node
/// connected to the same NATS server. GET http://ADDR/metrics answers with
/// the node's counters in Prometheus' text format.
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
    /// Keep the last N messages of each topic (in NATS JetStream with
    /// --nats, replicated over its cluster; in this process's memory
    /// without). Clients that offer the subprotocol lockgate.seq.v1 receive
    /// each message with its position, and resume after a position with
    /// ws://ADDR/topics/NAME?since=EPOCH:POSITION (see README.md).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    history: Option<u64>,
    /// With --history: also drop messages older than SECS seconds.
    #[arg(long, value_name = "SECS", value_parser = seconds, requires = "history")]
    history_age: Option<Duration>,
    /// With --history and --nats: copies JetStream keeps of the history
    /// when it creates it, 1 to 5 (default: 3 on a NATS cluster of at least
    /// 3 servers, else 1).
    #[arg(long, value_name = "R", value_parser = clap::value_parser!(u64).range(1..=5), requires = "history")]
    history_replicas: Option<u64>,
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
    /// Also accept web pages from origins matching PATTERN (repeatable):
    /// [scheme://]host[:port], `*.` for subdomains
    /// (https://*.example.com), `*` alone for any page. By default only
    /// the node's own origin (the host and port of the request's Host) and
    /// clients that send no Origin (all but browsers); others get 403.
    #[arg(long, value_name = "PATTERN", value_parser = origin_pattern)]
    allow_origin: Vec<String>,
    /// Read at most N messages a second from each client, in bursts of up
    /// to N (default: no limit). Every message a client sends counts,
    /// pings and pongs included.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_message_rate: Option<u32>,
    /// What happens to a client that sends faster than --max-message-rate:
    /// throttle (it is read no faster, and TCP slows it down) or close
    /// (with 1008).
    #[arg(long, value_enum, default_value_t = RateAction::Throttle, requires = "max_message_rate")]
    rate_policy: RateAction,
    /// Print the node's counters to stderr every SECS seconds (0: never).
    #[arg(long, default_value_t = 0, value_name = "SECS")]
    stats_interval: u64,
    /// On SIGTERM or SIGINT, how long the drain may take: clients still
    /// open after SECS seconds are cut, and the node exits (status 0).
    #[arg(long, default_value = "10", value_name = "SECS", value_parser = seconds)]
    drain_timeout: Duration,
    /// Over how many seconds the drain spreads the clients' closes, so they
    /// do not all reconnect at once (default: half of --drain-timeout,
    /// leaving the other half for the last ones' closing handshakes).
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    drain_window: Option<Duration>,
}

impl Args {
    /// The node's settings: the one place they are put together.
    fn node_config(&self) -> NodeConfig {
        let policy = match self.slow_consumer {
            Policy::Close => SlowConsumer::Close(CloseCode::from(self.slow_close_code)),
            Policy::Drop => SlowConsumer::Drop,
            Policy::Wait => SlowConsumer::Wait,
        };
        let mut websocket = Config::default().max_message_size(Some(self.max_message_size));
        if self.deflate {
            websocket = websocket.deflate(Some(
                DeflateConfig::default().server_no_context_takeover(true),
            ));
        }
        if let Some(rate) = self.max_message_rate {
            let policy = match self.rate_policy {
                RateAction::Throttle => RatePolicy::Throttle,
                RateAction::Close => RatePolicy::Close,
            };
            websocket = websocket.rate_limit(
                RateLimit::messages_per_second(rate)
                    .message_burst(rate)
                    .policy(policy),
            );
        }
        let origins = OriginPolicy::allow(&self.allow_origin)
            .expect("clap checked every --allow-origin pattern");
        let mut config = NodeConfig::new(self.listen)
            .hub(
                HubConfig::default()
                    .queue_capacity(self.queue_capacity)
                    .slow_consumer(policy),
            )
            .websocket(websocket)
            .origin_policy(origins);
        if let Some(url) = &self.nats {
            config = config.nats(url.clone());
        }
        if let Some(messages) = self.history {
            config = config.history(
                HistoryConfig::last(messages)
                    .max_age(self.history_age)
                    .replicas(self.history_replicas.map(|r| r as usize)),
            );
        }
        config
    }

    /// How a signal drains the node: clients closed with 1001.
    fn drain_options(&self) -> DrainOptions {
        let window = self.drain_window.unwrap_or(self.drain_timeout / 2);
        DrainOptions::default()
            .code(CloseCode::Away)
            .reason("node shutting down")
            .window(window)
            .deadline(self.drain_timeout)
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Policy {
    Close,
    Drop,
    Wait,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum RateAction {
    Throttle,
    Close,
}

/// A pattern `OriginPolicy::allow` takes.
fn origin_pattern(s: &str) -> Result<String, OriginPatternError> {
    OriginPolicy::same_origin().allow_origin(s)?;
    Ok(s.to_owned())
}

fn seconds(s: &str) -> Result<Duration, String> {
    s.parse::<f64>()
        .ok()
        .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
        .ok_or_else(|| format!("{s} is not a number of seconds"))
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
    if args.drain_window.is_some_and(|w| w > args.drain_timeout) {
        Args::command()
            .error(
                clap::error::ErrorKind::ArgumentConflict,
                "--drain-window must not exceed --drain-timeout",
            )
            .exit();
    }
    // Installed before the node listens: a signal from then on drains it.
    let mut signals = match Signals::new() {
        Ok(signals) => signals,
        Err(e) => {
            eprintln!("lockgate-fanout: signal handlers: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Installed before the first connection: lockgate registers its
    // counters with the recorder it first reports to.
    let metrics = match PrometheusBuilder::new().install_recorder() {
        Ok(handle) => handle,
        Err(e) => {
            eprintln!("lockgate-fanout: metrics recorder: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Every series of lockgate and of the hub at zero from the first
    // scrape, not from the first connection or message: alerts on
    // `rate()` or `absent()` see zeros.
    tokio_lockgate::hub::metrics::register_metrics();
    tokio::spawn(upkeep(metrics.clone()));
    let config = args.node_config().metrics(move || metrics.render());
    let node = match Node::start(config).await {
        Ok(node) => node,
        Err(e) => {
            eprintln!("lockgate-fanout: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Scripts wait for this line.
    println!("listening on ws://{}", node.local_addr());
    let signal = if args.stats_interval > 0 {
        let every = Duration::from_secs(args.stats_interval);
        let mut ticks = tokio::time::interval(every);
        ticks.tick().await;
        loop {
            tokio::select! {
                _ = ticks.tick() => eprintln!("lockgate-fanout: {:?} {:?}", node.stats(), node.hub_stats()),
                signal = signals.recv() => break signal,
            }
        }
    } else {
        signals.recv().await
    };
    drain(node, signal, args.drain_options(), args.history.is_some()).await;
    ExitCode::SUCCESS
}

/// Drains the node, saying so on stderr: the first line before, with the
/// messages accepted so far (every client is sent all of them before its
/// close), the second after, with the drain's counts.
async fn drain(node: NodeHandle, signal: &str, options: DrainOptions, history: bool) {
    let stats = node.stats();
    let (window, deadline) = (
        options.get_window().min(options.get_deadline()),
        options.get_deadline(),
    );
    // Said once new clients are refused: a script that reads the line
    // and connects is refused.
    let draining = node.drain(options);
    eprintln!(
        "lockgate-fanout: {signal}: draining: open={} accepted={} window={window:?} \
         timeout={deadline:?}",
        stats.open,
        // With a history every message reaches the hub from the stream,
        // this node's clients' included.
        if history {
            stats.relayed_in
        } else {
            stats.from_clients + stats.relayed_in
        },
    );
    let report = draining.await;
    eprintln!(
        "lockgate-fanout: drained: connections={} closed={} left={} cut={}",
        report.connections, report.closed, report.left, report.cut
    );
}

/// What `install_recorder` leaves to its caller: folding the histograms'
/// samples into their summaries now and then, so they do not pile up
/// between scrapes.
async fn upkeep(metrics: PrometheusHandle) {
    let mut ticks = tokio::time::interval(Duration::from_secs(5));
    loop {
        ticks.tick().await;
        metrics.run_upkeep();
    }
}

/// SIGTERM and SIGINT (Ctrl-C).
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> std::io::Result<Self> {
        Ok(Self {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    /// The next one, by name.
    async fn recv(&mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
        }
    }
}
