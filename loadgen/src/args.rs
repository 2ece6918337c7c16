//! The command line.

use std::path::PathBuf;
use std::time::Duration;

use clap::parser::ValueSource;
use clap::{ArgMatches, Parser, ValueEnum};

/// Throughput and latency of tokio-lockgate: echo, one-way and broadcast
/// traffic over loopback (or to --url), every message verified.
///
/// Without --url it starts its own server on 127.0.0.1 (a free port): an
/// echo server, or for broadcast a standalone lockgate-fanout node. Each
/// connection writes batches (N x write, one flush). Progress goes to
/// stderr, the summary to stdout (--json: one JSON object).
///
/// Options of another mode, --messages with --duration, and --ca-file
/// without a wss:// URL are refused (usage error).
///
/// Exit status: 0 when every message arrived as it should, 1 on a failure,
/// 2 on a usage error, 3 when the watchdog stopped a stuck run.
#[derive(Debug, Clone, Parser)]
#[command(name = "loadgen", version)]
pub(crate) struct Args {
    /// echo: the server echoes every message and round trips are timed.
    /// oneway: the server only reads and checks. broadcast: publishers send
    /// to a topic of lockgate-fanout nodes, and every subscriber must
    /// receive every message exactly once and in order. resume: broadcast
    /// with positions (lockgate.seq.v1) to nodes that keep a history;
    /// subscribers drop their connections at random and resume on a random
    /// node, and must still receive every message exactly once and in
    /// order.
    #[arg(long, value_enum, default_value_t = Mode::Echo)]
    pub(crate) mode: Mode,
    /// Concurrent connections (echo, oneway).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) connections: u32,
    /// Payload bytes per message (echo needs at least 16, broadcast 22).
    #[arg(long, default_value_t = 64)]
    pub(crate) size: usize,
    /// Messages per connection (per publisher in broadcast mode); not with
    /// --duration.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..), conflicts_with = "duration")]
    pub(crate) messages: u64,
    /// Send for SECS seconds instead of --messages.
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    pub(crate) duration: Option<Duration>,
    /// Messages written per flush.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=1_048_576))]
    pub(crate) batch: u32,
    /// Send text messages (ASCII payload) rather than binary ones.
    #[arg(long)]
    pub(crate) text: bool,
    /// The server: ws://HOST:PORT/PATH for echo and oneway; for broadcast,
    /// once per node, either ws://HOST:PORT (/topics/TOPIC is appended) or
    /// a full URL with a path. wss:// trusts the web PKI's CAs (Mozilla's
    /// roots) and those of --ca-file.
    #[arg(long, value_name = "URL")]
    pub(crate) url: Vec<String>,
    /// wss://: also trust the CA certificates in this PEM file, for a
    /// server whose certificate comes from a private CA.
    #[arg(long, value_name = "PATH")]
    pub(crate) ca_file: Option<PathBuf>,
    /// Broadcast: subscribing connections, spread over the --urls in turn
    /// (resume: 20 by default).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) subscribers: u32,
    /// Broadcast: publishing connections, spread over the --urls in turn.
    /// They are subscribed too (by their path) and read every message back.
    /// A publisher keeps at most 4 x --batch of its messages not yet
    /// received by every connection, which paces it to the slowest. A node
    /// then queues at most --publishers x 4 x --batch messages for one
    /// connection: the embedded node's queues hold that many; a node with
    /// shorter ones (lockgate-fanout's default: 1024) may close connections
    /// as slow consumers. Resume: 2 by default, paced by --rate only.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) publishers: u32,
    /// Broadcast: the topic, for --urls without a path.
    #[arg(long, default_value = "loadgen")]
    pub(crate) topic: String,
    /// Broadcast: messages per second per publisher (default: as fast as
    /// the slowest connection allows). A publisher behind schedule sends
    /// what is due together, up to --batch per flush. Resume: 200 by
    /// default (and --duration 10 unless --messages is given).
    #[arg(long, value_name = "MSGS_PER_SEC")]
    pub(crate) rate: Option<f64>,
    /// Broadcast: a subscriber or publisher closed by a node (1008 slow,
    /// 1012/1013 broker lost) is reported but does not fail the run; what it
    /// would still have received is counted as lost to the close.
    #[arg(long)]
    pub(crate) allow_closes: bool,
    /// Resume: mean time between a subscriber's drops (exponentially
    /// distributed): it drops its connection without a close frame and
    /// resumes on a random --url after the last position it received.
    #[arg(long, value_name = "MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) drop_interval: u64,
    /// Resume: the seed of the drop times and node choices (default: from
    /// the clock; the summary shows it).
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Resume: a node answering a resume with 4001 (resync: the position
    /// is no longer held, or the epoch changed) is counted, not a failure;
    /// the subscriber picks up from the oldest message held (from the live
    /// ones if the epoch changed), and only what it received between
    /// resyncs is checked for gaps.
    #[arg(long)]
    pub(crate) allow_resync: bool,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub(crate) json: bool,
}

/// What traffic to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Mode {
    Echo,
    #[value(alias = "one-way")]
    Oneway,
    Broadcast,
    Resume,
}

impl Mode {
    /// Whether the mode publishes to a topic of fan-out nodes.
    pub(crate) fn has_topics(self) -> bool {
        matches!(self, Mode::Broadcast | Mode::Resume)
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::Echo => "echo",
            Mode::Oneway => "oneway",
            Mode::Broadcast => "broadcast",
            Mode::Resume => "resume",
        })
    }
}

fn seconds(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if secs > 0.0 && secs <= 1e6 {
        Ok(Duration::from_secs_f64(secs))
    } else {
        Err(format!("{s:?} must be between 0 and 1000000 seconds"))
    }
}

/// The smallest payload of each mode: what it stamps into every message.
pub(crate) fn min_size(mode: Mode) -> usize {
    match mode {
        Mode::Echo => crate::payload::HEADER,
        Mode::Oneway => 0,
        Mode::Broadcast | Mode::Resume => crate::payload::BROADCAST_HEADER,
    }
}

/// Options of the modes with topics (broadcast, resume), by clap id.
const TOPIC_ONLY: [&str; 4] = ["subscribers", "publishers", "topic", "rate"];
/// Options that only broadcast mode uses.
const BROADCAST_ONLY: [&str; 1] = ["allow_closes"];
/// Options that only resume mode uses.
const RESUME_ONLY: [&str; 3] = ["drop_interval", "seed", "allow_resync"];
/// Options that the modes with topics do not use.
const NOT_TOPIC: [&str; 1] = ["connections"];

/// `--name` of a clap id.
fn flag(id: &str) -> String {
    format!("--{}", id.replace('_', "-"))
}

impl Args {
    /// Checks what clap cannot: an error message for the usage error.
    /// `matches` tell which options were given (rather than defaulted).
    pub(crate) fn validate(&self, matches: &ArgMatches) -> Result<(), String> {
        let given = |id: &str| matches.value_source(id) == Some(ValueSource::CommandLine);
        let topics = self.mode.has_topics();
        for (ids, modes, ok) in [
            (&TOPIC_ONLY[..], "broadcast and resume", topics),
            (
                &BROADCAST_ONLY[..],
                "broadcast",
                self.mode == Mode::Broadcast,
            ),
            (&RESUME_ONLY[..], "resume", self.mode == Mode::Resume),
        ] {
            if let Some(id) = ids.iter().find(|id| !ok && given(id)) {
                return Err(format!(
                    "{} is for --mode {modes} (this run's mode is {})",
                    flag(id),
                    self.mode
                ));
            }
        }
        if let Some(id) = NOT_TOPIC.iter().find(|id| topics && given(id)) {
            return Err(format!(
                "{} is for --mode echo and oneway ({} has --subscribers and --publishers)",
                flag(id),
                self.mode
            ));
        }
        if given("topic") {
            if let Some(url) = self.url.iter().find(|url| crate::broadcast::has_path(url)) {
                return Err(format!(
                    "--topic is appended to a --url without a path, and {url} has one"
                ));
            }
        }
        let wss = |url: &String| {
            url.get(..6)
                .is_some_and(|s| s.eq_ignore_ascii_case("wss://"))
        };
        if self.ca_file.is_some() && !self.url.iter().any(wss) {
            return Err("--ca-file is for wss:// servers (--url wss://...)".into());
        }
        let min = min_size(self.mode);
        if self.size < min {
            return Err(format!(
                "--size must be at least {min} in {} mode (it carries the message's stamp)",
                self.mode
            ));
        }
        if !topics && self.url.len() > 1 {
            return Err(format!("--url is given once in {} mode", self.mode));
        }
        if !lockgate_fanout::topic::is_valid(&self.topic) {
            return Err("--topic must be 1 to 128 of A-Z a-z 0-9 - _".into());
        }
        if self.rate.is_some_and(|r| !(r > 0.0 && r.is_finite())) {
            return Err("--rate must be a positive number".into());
        }
        Ok(())
    }

    /// Fills in the defaults that depend on the mode, for the options not
    /// given (`matches`): resume mode's run is a few seconds of a steady
    /// rate, which is what its drops need to interleave with.
    pub(crate) fn apply_mode_defaults(&mut self, matches: &ArgMatches) {
        let given = |id: &str| matches.value_source(id) == Some(ValueSource::CommandLine);
        if self.mode != Mode::Resume {
            return;
        }
        if !given("subscribers") {
            self.subscribers = 20;
        }
        if !given("publishers") {
            self.publishers = 2;
        }
        if self.rate.is_none() {
            self.rate = Some(200.0);
        }
        if !given("messages") && self.duration.is_none() {
            self.duration = Some(Duration::from_secs(10));
        }
        // A topic of its own: the history then holds this run's messages
        // only, which a receiver that has none yet resumes from (since
        // EPOCH:0, "from the oldest held").
        if !given("topic") {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            self.topic = format!("loadgen-resume-{nanos:x}-{}", std::process::id());
        }
    }

    /// Whether the run is bounded by time rather than by messages.
    pub(crate) fn budget(&self) -> Budget {
        match self.duration {
            Some(d) => Budget::For(d),
            None => Budget::Messages(self.messages),
        }
    }
}

/// How much each sender sends.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Budget {
    Messages(u64),
    For(Duration),
}
