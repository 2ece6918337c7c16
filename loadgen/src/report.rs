//! The summary: text for people, `--json` for scripts.

use std::time::Duration;

use serde::Serialize;

use crate::args::{Args, Mode};
use crate::latency::Percentiles;

/// What a successful run measured.
#[derive(Debug, Serialize)]
pub(crate) struct Report {
    /// Messages counted where the rate is measured (deliveries, for
    /// broadcast).
    pub(crate) messages: u64,
    #[serde(rename = "elapsed_s", serialize_with = "seconds")]
    pub(crate) elapsed: Duration,
    pub(crate) note: String,
    pub(crate) latency: Option<Percentiles>,
    pub(crate) broadcast: Option<BroadcastReport>,
    pub(crate) resume: Option<ResumeReport>,
}

/// Resume mode's figures: what was verified, across how many reconnects.
#[derive(Debug, Serialize)]
pub(crate) struct ResumeReport {
    pub(crate) subscribers: usize,
    /// Messages every subscriber received, exactly once and in order.
    pub(crate) messages: u64,
    pub(crate) first_position: Option<u64>,
    pub(crate) last_position: Option<u64>,
    /// The subscribers' reconnections (drops, nodes gone, resyncs).
    pub(crate) reconnects: u64,
    /// Reconnections (subscribers' and publishers') to each node, in
    /// `--url` order.
    pub(crate) reconnects_per_node: Vec<u64>,
    /// Nodes reconnected to.
    pub(crate) nodes: usize,
    /// Messages subscribers received on a resumed connection that were
    /// stored before it was made: the history's replay.
    pub(crate) replayed: u64,
    pub(crate) resyncs: u64,
    pub(crate) publishers: usize,
    pub(crate) publisher_reconnects: u64,
    /// Messages sent on a publisher's connection that died and never
    /// stored.
    pub(crate) publisher_lost: u64,
    pub(crate) seed: u64,
}

/// `n` with a comma every three digits, for the sentence people read.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl ResumeReport {
    /// The one sentence of what was verified.
    pub(crate) fn verified(&self) -> String {
        let positions = match (self.first_position, self.last_position) {
            (Some(first), Some(last)) => format!(" (positions {first}..{last})"),
            _ => String::new(),
        };
        // With resyncs allowed, a subscriber may miss what a resync skips.
        let how = if self.resyncs == 0 {
            "exactly once and in order".to_owned()
        } else {
            format!(
                "at most once and in order, with gaps only at the {} resyncs",
                self.resyncs
            )
        };
        format!(
            "{} subscribers x {} messages{positions}, {how}, across {} reconnects (to {} node{}), {} messages replayed, {} resyncs; publishers: {}, {} messages lost with a killed connection",
            self.subscribers,
            thousands(self.messages),
            thousands(self.reconnects),
            self.nodes,
            if self.nodes == 1 { "" } else { "s" },
            thousands(self.replayed),
            self.resyncs,
            self.publishers,
            thousands(self.publisher_lost),
        )
    }
}

/// Broadcast figures.
#[derive(Debug, Serialize)]
pub(crate) struct BroadcastReport {
    pub(crate) publishers: usize,
    pub(crate) subscribers: usize,
    /// Messages the publishers had confirmed (read back from their node).
    pub(crate) published: u64,
    pub(crate) nodes: Vec<NodeReport>,
    pub(crate) same_node: Option<Percentiles>,
    pub(crate) cross_node: Option<Percentiles>,
    pub(crate) closes: Vec<Closed>,
    pub(crate) lost_to_close: u64,
}

/// Deliveries to one node's subscribers.
#[derive(Debug, Serialize)]
pub(crate) struct NodeReport {
    pub(crate) url: String,
    pub(crate) subscribers: usize,
    pub(crate) deliveries: u64,
    pub(crate) deliveries_per_s: f64,
}

/// A connection a node closed.
#[derive(Debug, Serialize)]
pub(crate) struct Closed {
    pub(crate) connection: String,
    pub(crate) node: usize,
    pub(crate) code: u16,
}

impl NodeReport {
    pub(crate) fn new(url: &str) -> Self {
        Self {
            url: url.to_owned(),
            subscribers: 0,
            deliveries: 0,
            deliveries_per_s: 0.0,
        }
    }
}

impl Closed {
    pub(crate) fn new(connection: String, node: usize, code: u16) -> Self {
        Self {
            connection,
            node,
            code,
        }
    }
}

impl Report {
    pub(crate) fn new(messages: u64, elapsed: Duration, note: String) -> Self {
        Self {
            messages,
            elapsed,
            note,
            latency: None,
            broadcast: None,
            resume: None,
        }
    }

    pub(crate) fn with_latency(mut self, latency: Option<Percentiles>) -> Self {
        self.latency = latency;
        self
    }

    pub(crate) fn with_broadcast(mut self, broadcast: BroadcastReport) -> Self {
        self.broadcast = Some(broadcast);
        self
    }

    pub(crate) fn with_resume(mut self, resume: ResumeReport) -> Self {
        self.resume = Some(resume);
        self
    }

    fn rate(&self) -> f64 {
        self.messages as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// How a run ended.
pub(crate) enum Outcome {
    Done(Box<Report>),
    Failed(String),
    /// The watchdog stopped it: why, connections open, messages counted.
    Stopped(String, u64, u64),
}

#[cfg(test)]
mod tests {
    use super::ResumeReport;

    #[test]
    fn the_verified_sentence_says_what_was_checked() {
        let mut report = ResumeReport {
            subscribers: 20,
            messages: 4000,
            first_position: Some(12),
            last_position: Some(4011),
            reconnects: 213,
            reconnects_per_node: vec![70, 70, 73],
            nodes: 3,
            replayed: 8312,
            resyncs: 0,
            publishers: 2,
            publisher_reconnects: 1,
            publisher_lost: 3,
            seed: 1,
        };
        assert_eq!(
            report.verified(),
            "20 subscribers x 4,000 messages (positions 12..4011), exactly once and in order, \
             across 213 reconnects (to 3 nodes), 8,312 messages replayed, 0 resyncs; \
             publishers: 2, 3 messages lost with a killed connection"
        );
        report.resyncs = 2;
        assert!(
            report
                .verified()
                .contains("at most once and in order, with gaps only at the 2 resyncs"),
            "{}",
            report.verified()
        );
    }

    #[test]
    fn thousands_are_separated_by_commas() {
        for (n, text) in [
            (0, "0"),
            (999, "999"),
            (1000, "1,000"),
            (8312, "8,312"),
            (1234567, "1,234,567"),
        ] {
            assert_eq!(super::thousands(n), text);
        }
    }
}

#[derive(Serialize)]
struct Settings<'a> {
    mode: Mode,
    target: &'a str,
    connections: u32,
    size: usize,
    text: bool,
    batch: u32,
    messages_per_connection: Option<u64>,
    duration_s: Option<f64>,
}

/// Prints the summary to stdout.
pub(crate) fn print(args: &Args, target: &str, outcome: &Outcome) {
    if args.json {
        print_json(args, target, outcome);
    } else {
        print_text(args, target, outcome);
    }
}

fn print_json(args: &Args, target: &str, outcome: &Outcome) {
    let settings = Settings {
        mode: args.mode,
        target,
        connections: args.connections,
        size: args.size,
        text: args.text,
        batch: args.batch,
        messages_per_connection: args.duration.is_none().then_some(args.messages),
        duration_s: args.duration.map(|d| d.as_secs_f64()),
    };
    let (result, error, report) = match outcome {
        Outcome::Done(report) => ("ok", None, Some(&**report)),
        Outcome::Failed(error) => ("failed", Some(error.clone()), None),
        Outcome::Stopped(why, ..) => ("stopped", Some(why.clone()), None),
    };
    let json = serde_json::json!({
        "settings": settings,
        "result": result,
        "error": error,
        "messages_per_s": report.map(Report::rate),
        "mb_per_s": report.map(|r| r.rate() * args.size as f64 / 1e6),
        "report": report,
    });
    println!("{json}");
}

fn print_text(args: &Args, target: &str, outcome: &Outcome) {
    let kind = if args.text { "text" } else { "binary" };
    println!("mode         {}", args.mode);
    println!("target       {target}");
    if args.mode.has_topics() {
        println!(
            "connections  {} subscribers, {} publishers",
            args.subscribers, args.publishers
        );
    } else {
        println!("connections  {}", args.connections);
    }
    println!("size         {} B ({kind})", args.size);
    println!("batch        {} (messages per flush)", args.batch);
    match args.duration {
        Some(d) => println!("limit        {:.1} s", d.as_secs_f64()),
        None => println!("limit        {} messages per sender", args.messages),
    }
    let report = match outcome {
        Outcome::Done(report) => report,
        Outcome::Failed(error) => {
            println!("result       FAILED: {error}");
            return;
        }
        Outcome::Stopped(why, open, counted) => {
            println!(
                "result       STOPPED by the watchdog: {why}; {open} connection(s) open, {counted} messages counted"
            );
            return;
        }
    };
    let rate = report.rate();
    if let Some(resume) = &report.resume {
        println!(
            "deliveries   {} in {:.3} s ({rate:.0}/s)",
            report.messages,
            report.elapsed.as_secs_f64()
        );
        println!("seed         {}", resume.seed);
        println!("verified: {}", report.note);
        return;
    }
    let what = if report.broadcast.is_some() {
        "deliveries"
    } else {
        "messages"
    };
    println!("{what:<13}{} ({})", report.messages, report.note);
    println!("elapsed      {:.3} s", report.elapsed.as_secs_f64());
    println!("{:<13}{rate:.0}", format!("{what}/s"));
    println!(
        "MB/s         {:.2} (payload, 1 MB = 10^6 B)",
        rate * args.size as f64 / 1e6
    );
    if let Some(latency) = &report.latency {
        println!("latency µs   {latency}");
    }
    if let Some(b) = &report.broadcast {
        for (i, node) in b.nodes.iter().enumerate() {
            println!(
                "node {i}       {}: {} subscribers, {} deliveries, {:.0}/s",
                node.url, node.subscribers, node.deliveries, node.deliveries_per_s
            );
        }
        if let Some(p) = &b.same_node {
            println!("same node µs  {p}");
        }
        if let Some(p) = &b.cross_node {
            println!("cross node µs {p}");
        }
        for close in &b.closes {
            println!(
                "closed       {} on node {} with {}",
                close.connection, close.node, close.code
            );
        }
        if !b.closes.is_empty() {
            println!("lost         {} deliveries lost to closes", b.lost_to_close);
        }
    }
}
