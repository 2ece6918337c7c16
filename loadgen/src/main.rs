//! loadgen: throughput and latency of tokio-lockgate, every message
//! verified. `loadgen --help` lists the options; README.md shows a run.
//!
//! The run is bounded: by `--messages` or `--duration`, and by a watchdog
//! that gives up when nothing has moved for 30 s or, with `--duration`,
//! 30 s after the duration is over.

mod args;
mod broadcast;
mod dial;
mod echo;
mod latency;
mod pacing;
mod payload;
mod progress;
mod report;
mod resume;
mod rng;
mod shared;
mod timeline;
mod verify;

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{CommandFactory, FromArgMatches};
use lockgate_fanout::{HistoryConfig, Node, NodeConfig};
use tokio_lockgate::hub::HubConfig;

use args::{Args, Mode};
use dial::Dialer;
use payload::Payload;
use progress::{GRACE, Progress};
use report::Outcome;
use shared::Shared;

#[tokio::main]
async fn main() -> ExitCode {
    let matches = Args::command().get_matches();
    let mut args = Args::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // clap's format: one line and a pointer to --help, exit status 2.
    let usage_error = |error: String| {
        Args::command()
            .error(clap::error::ErrorKind::ValueValidation, error)
            .exit()
    };
    if let Err(error) = args.validate(&matches) {
        usage_error(error);
    }
    args.apply_mode_defaults(&matches);
    let dialer = match Dialer::new(args.ca_file.as_deref()) {
        Ok(dialer) => dialer,
        Err(error) => usage_error(error),
    };
    let shared = Arc::new(Shared::new());
    let (target, work) = match start(&args, dialer, Arc::clone(&shared)).await {
        Ok(started) => started,
        Err(error) => {
            eprintln!("loadgen: {error}");
            return ExitCode::FAILURE;
        }
    };

    let progress = Progress::new();
    let connections = match args.mode {
        Mode::Broadcast | Mode::Resume => u64::from(args.subscribers + args.publishers),
        _ => u64::from(args.connections),
    };
    let hard_limit = args.duration.map(|d| d + GRACE);
    let outcome = tokio::select! {
        result = work => match result {
            Ok(report) => Outcome::Done(Box::new(report)),
            Err(error) => Outcome::Failed(error),
        },
        why = progress.watch(Arc::clone(&shared), connections, args.size, hard_limit) => {
            Outcome::Stopped(why, shared.connected(), shared.progress_total())
        }
    };
    progress.finish();
    report::print(&args, &target, &outcome);
    // The summary went to stdout; what went wrong goes to stderr as well.
    match &outcome {
        Outcome::Done(_) => {}
        Outcome::Failed(error) => eprintln!("loadgen: {error}"),
        Outcome::Stopped(why, ..) => eprintln!("loadgen: stopped by the watchdog: {why}"),
    }
    match outcome {
        Outcome::Done(_) => ExitCode::SUCCESS,
        Outcome::Failed(_) => ExitCode::FAILURE,
        Outcome::Stopped(..) => {
            // Tasks may be stuck in I/O: leave without waiting for them.
            let _ = std::io::stdout().flush();
            std::process::exit(3);
        }
    }
}

type Work = std::pin::Pin<Box<dyn Future<Output = Result<report::Report, String>> + Send>>;

/// The queue of each connection of lockgate-fanout's hub by default.
const FANOUT_QUEUE: usize = 1024;

/// Starts the embedded server if there is no `--url`; the target's
/// description and the run itself.
async fn start(args: &Args, dialer: Dialer, shared: Arc<Shared>) -> Result<(String, Work), String> {
    let args = args.clone();
    if matches!(args.mode, Mode::Resume | Mode::Broadcast) {
        let (bases, target) = if args.url.is_empty() {
            // The publishers' windows bound what is queued for a
            // connection; its queue holds that much, so the node closes no
            // one as slow (unless pacing is broken). Policy: the default.
            let hub =
                HubConfig::default().queue_capacity(FANOUT_QUEUE.max(broadcast::in_flight(&args)));
            let mut config = NodeConfig::new(([127, 0, 0, 1], 0).into()).hub(hub);
            let mut what = "embedded fan-out node";
            if args.mode == Mode::Resume {
                // Room for the whole run: a resume is never too old for it.
                config = config.history(HistoryConfig::last(resume::history_size(&args)));
                what = "embedded fan-out node with a history";
            }
            let node = Node::start(config)
                .await
                .map_err(|e| format!("embedded fan-out node: {e}"))?;
            let url = format!("ws://{}", node.local_addr());
            // The node lives as long as the process.
            std::mem::forget(node);
            (vec![url.clone()], format!("{what} at {url}"))
        } else {
            (args.url.clone(), args.url.join(" "))
        };
        let urls: Vec<String> = bases
            .iter()
            .map(|url| broadcast::topic_url(url, &args.topic))
            .collect();
        let work: Work = if args.mode == Mode::Resume {
            // From the clock unless given: the summary shows it, to run the
            // same schedule again.
            let seed = args.seed.unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64)
            });
            Box::pin(async move { resume::run(&args, &dialer, &urls, shared, seed).await })
        } else {
            Box::pin(async move { broadcast::run(&args, &dialer, &urls, shared).await })
        };
        return Ok((target, work));
    }
    let payload = Arc::new(Payload::new(args.size, args.text));
    let (url, server, target) = match args.url.first() {
        Some(url) => (url.clone(), None, url.clone()),
        None => {
            let (url, results) =
                echo::start_server(args.mode, Arc::clone(&shared), Arc::clone(&payload))
                    .await
                    .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?;
            let target = format!("embedded server at {url}");
            (url, Some(results), target)
        }
    };
    let work = async move { echo::run(&args, &dialer, &url, shared, payload, server).await };
    Ok((target, Box::pin(work)))
}
