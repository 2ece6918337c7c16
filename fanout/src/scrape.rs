//! `GET /metrics` on the clients' port: telling a scrape from an upgrade
//! by peeking at the request line, answering it, and the node's own
//! counters (`lockgate_fanout_*`) reported to the `metrics` facade.

use std::time::Duration;

#[cfg(feature = "metrics")]
use metrics::{Unit, counter, describe_counter, describe_gauge, gauge};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::config::RenderMetrics;
use crate::state::NodeStats;

/// The start of a request line asking for the metrics; a space or a `?`
/// follows.
const REQUEST: &[u8] = b"GET /metrics";

/// The longest request head read (the request line and the headers, which
/// are not looked at); a longer one is answered with 431.
const MAX_HEAD: usize = 8 << 10;

/// How long to wait before peeking again at a request line that has
/// arrived only in part (peeking does not wait for more bytes): doubled
/// after each peek up to [`MAX_PARTIAL_PAUSE`], so a client that stalls
/// mid-line (slowloris) costs a few wake-ups a second, not hundreds.
const PARTIAL_PAUSE: Duration = Duration::from_millis(5);
const MAX_PARTIAL_PAUSE: Duration = Duration::from_millis(250);

/// Whether the first bytes of `tcp` are `GET /metrics` and a space or a
/// `?`. They are peeked at, not read: any other request reaches the
/// WebSocket handshake intact. Decided as soon as the bytes differ, so an
/// upgrade waits for one peek; an error or the end of the stream is left
/// to the handshake to report.
pub(crate) async fn asks_for_metrics(tcp: &TcpStream) -> bool {
    let mut start = [0; REQUEST.len() + 1];
    let mut pause = PARTIAL_PAUSE;
    loop {
        let n = match tcp.peek(&mut start).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => n,
        };
        let common = n.min(REQUEST.len());
        if start[..common] != REQUEST[..common] {
            return false;
        }
        if n == start.len() {
            return matches!(start[REQUEST.len()], b' ' | b'?');
        }
        // A part of it: wait for the rest (the caller bounds the wait).
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(MAX_PARTIAL_PAUSE);
    }
}

/// Answers the scrape on `tcp`, within `limit`: reads the request head,
/// reports `stats`, renders, writes the response and closes.
pub(crate) async fn answer(
    mut tcp: TcpStream,
    render: &RenderMetrics,
    stats: NodeStats,
    limit: Option<Duration>,
) {
    let exchange = async {
        let response = match read_head(&mut tcp).await? {
            Head::Complete => {
                report(&stats);
                response("200 OK", "text/plain; version=0.0.4", &render.render())
            }
            Head::TooLarge => response(
                "431 Request Header Fields Too Large",
                "text/plain; charset=utf-8",
                "request head too large\n",
            ),
        };
        tcp.write_all(&response).await?;
        tcp.shutdown().await
    };
    let _ = match limit {
        Some(limit) => tokio::time::timeout(limit, exchange)
            .await
            .unwrap_or(Ok(())),
        None => exchange.await,
    };
}

enum Head {
    Complete,
    TooLarge,
}

/// Reads up to the end of the request head (an empty line), so that
/// closing the connection after the answer does not reset it (the
/// kernel resets a connection closed with unread bytes).
async fn read_head(tcp: &mut TcpStream) -> std::io::Result<Head> {
    let mut head = Vec::with_capacity(512);
    let mut chunk = [0; 1024];
    loop {
        let n = tcp.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        // The empty line may straddle two reads.
        let from = head.len().saturating_sub(3);
        head.extend_from_slice(&chunk[..n]);
        if head[from..].windows(4).any(|w| w == b"\r\n\r\n") {
            return Ok(Head::Complete);
        }
        if head.len() > MAX_HEAD {
            return Ok(Head::TooLarge);
        }
    }
}

fn response(status: &str, content_type: &str, body: &str) -> Vec<u8> {
    let mut response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    response.extend_from_slice(body.as_bytes());
    response
}

/// The node's counters, by name: an interface, as lockgate's.
#[cfg(feature = "metrics")]
mod names {
    pub(super) const ACCEPTED: &str = "lockgate_fanout_connections_accepted_total";
    pub(super) const OPEN: &str = "lockgate_fanout_connections_open";
    pub(super) const REFUSED: &str = "lockgate_fanout_upgrades_refused_total";
    pub(super) const HANDSHAKE_FAILED: &str = "lockgate_fanout_handshakes_failed_total";
    pub(super) const FROM_CLIENTS: &str = "lockgate_fanout_messages_from_clients_total";
    pub(super) const RELAYED_OUT: &str = "lockgate_fanout_messages_relayed_out_total";
    pub(super) const RELAYED_IN: &str = "lockgate_fanout_messages_relayed_in_total";
    pub(super) const RELAY_ERRORS: &str = "lockgate_fanout_relay_errors_total";
    pub(super) const BROKER_LOST: &str = "lockgate_fanout_broker_lost_total";
    pub(super) const BROKER_BACK: &str = "lockgate_fanout_broker_back_total";
    pub(super) const BROKER_UP: &str = "lockgate_fanout_broker_up";
}

/// Without the `metrics` feature there is no facade to hand them to.
#[cfg(not(feature = "metrics"))]
fn report(_stats: &NodeStats) {}

/// Hands `stats` to the `metrics` facade's recorder: counters as absolute
/// values, gauges set. Once per scrape, so their descriptions are given
/// each time too (whichever recorder is installed gets them).
#[cfg(feature = "metrics")]
fn report(stats: &NodeStats) {
    use names::*;
    let counters = [
        (ACCEPTED, "WebSocket connections accepted by the node"),
        (
            REFUSED,
            "Upgrades the node refused, by reason: path (404), unavailable (503, broker \
             unreachable), draining (503)",
        ),
        (HANDSHAKE_FAILED, "Opening handshakes that failed otherwise"),
        (
            FROM_CLIENTS,
            "Data messages received from the node's clients and published to its hub",
        ),
        (RELAYED_OUT, "Messages published to the broker"),
        (
            RELAYED_IN,
            "Messages received from the broker and published to the hub",
        ),
        (
            RELAY_ERRORS,
            "Messages that could not be relayed (in or out)",
        ),
        (BROKER_LOST, "Times the broker connection was lost"),
        (BROKER_BACK, "Times the broker connection came back"),
    ];
    for (name, help) in counters {
        describe_counter!(name, Unit::Count, help);
    }
    describe_gauge!(OPEN, Unit::Count, "WebSocket connections the node has open");
    describe_gauge!(
        BROKER_UP,
        "Whether the broker is reachable (1; always for a standalone node) or not (0)"
    );

    counter!(ACCEPTED).absolute(stats.accepted);
    for (reason, n) in [
        ("path", stats.refused_path),
        ("unavailable", stats.refused_unavailable),
        ("draining", stats.refused_draining),
    ] {
        counter!(REFUSED, "reason" => reason).absolute(n);
    }
    counter!(HANDSHAKE_FAILED).absolute(stats.handshake_failed);
    counter!(FROM_CLIENTS).absolute(stats.from_clients);
    counter!(RELAYED_OUT).absolute(stats.relayed_out);
    counter!(RELAYED_IN).absolute(stats.relayed_in);
    counter!(RELAY_ERRORS).absolute(stats.relay_errors);
    counter!(BROKER_LOST).absolute(stats.broker_lost);
    counter!(BROKER_BACK).absolute(stats.broker_back);
    gauge!(OPEN).set(stats.open as f64);
    gauge!(BROKER_UP).set(if stats.broker_up { 1.0 } else { 0.0 });
}
