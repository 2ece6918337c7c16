//! loadgen: throughput and latency of tokio-lockgate, every message
//! verified. `loadgen --help` lists the options; README.md shows a run.
//!
//! The run is bounded: by `--messages` or `--duration`, and by a watchdog
//! that gives up when nothing has moved for 30 s or, with `--duration`,
//! 30 s after the duration is over.

mod args;
mod broadcast;
mod echo;
mod latency;
mod payload;
mod progress;
mod report;
mod shared;
mod verify;

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{CommandFactory, Parser};
use lockgate_fanout::{Node, NodeConfig};

use args::{Args, Mode};
use payload::Payload;
use progress::{GRACE, Progress};
use report::Outcome;
use shared::Shared;

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    if let Err(error) = args.validate() {
        // clap's format: one line and a pointer to --help, exit status 2.
        Args::command()
            .error(clap::error::ErrorKind::ValueValidation, error)
            .exit();
    }
    let shared = Arc::new(Shared::new());
    let (target, work) = match start(&args, Arc::clone(&shared)).await {
        Ok(started) => started,
        Err(error) => {
            eprintln!("loadgen: {error}");
            return ExitCode::FAILURE;
        }
    };

    let progress = Progress::new();
    let connections = match args.mode {
        Mode::Broadcast => u64::from(args.subscribers + args.publishers),
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

/// Starts the embedded server if there is no `--url`; the target's
/// description and the run itself.
async fn start(args: &Args, shared: Arc<Shared>) -> Result<(String, Work), String> {
    let args = args.clone();
    if args.mode == Mode::Broadcast {
        let (bases, target) = if args.url.is_empty() {
            let node = Node::start(NodeConfig::new(([127, 0, 0, 1], 0).into()))
                .await
                .map_err(|e| format!("embedded fan-out node: {e}"))?;
            let url = format!("ws://{}", node.local_addr());
            // The node lives as long as the process.
            std::mem::forget(node);
            (vec![url.clone()], format!("embedded fan-out node at {url}"))
        } else {
            (args.url.clone(), args.url.join(" "))
        };
        let urls: Vec<String> = bases
            .iter()
            .map(|url| broadcast::topic_url(url, &args.topic))
            .collect();
        let work = async move { broadcast::run(&args, &urls, shared).await };
        return Ok((target, Box::pin(work)));
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
    let work = async move { echo::run(&args, &url, shared, payload, server).await };
    Ok((target, Box::pin(work)))
}
