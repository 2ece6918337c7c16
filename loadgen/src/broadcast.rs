//! Broadcast mode: publishers send to a topic of one or more
//! lockgate-fanout nodes; every subscriber must receive every message
//! exactly once and in order per publisher.
//!
//! Subscribers and publishers are spread over the `--url`s in turn.
//! Publishers are subscribed too (by their path): each reads every message
//! back, checked like a subscriber's. A publisher keeps at most a window
//! of its messages not yet received by every connection ([`Pacer`]), so
//! it goes as fast as the slowest of them, and no node ever has more than
//! `publishers x window` messages queued for one connection. A
//! publisher's count of confirmed messages (read back from its own node)
//! is what every subscriber must then receive of it; latency is measured
//! per delivery, same-node or cross-node by the publisher's node.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tokio_lockgate::{CloseCode, CloseFrame, Error, Message};

use crate::args::Args;
use crate::dial::{Dialer, Ws};
use crate::echo::{CLOSE_REASON, Until, WINDOW_BATCHES};
use crate::latency::Latency;
use crate::pacing::Pacer;
use crate::payload::Payload;
use crate::report::{BroadcastReport, Closed, NodeReport, Report};
use crate::shared::{Counter, Shared};
use crate::verify::Expected;

/// After the publishers are done, how long subscribers may take to receive
/// the rest.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// Whether `url` names a path (other than `/`), which is then used as
/// given rather than `/topics/TOPIC`.
pub(crate) fn has_path(url: &str) -> bool {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    after_scheme.trim_end_matches('/').contains('/')
}

/// The URL of `topic` on the node at `url`: as given if it has a path,
/// else with `/topics/TOPIC` appended.
pub(crate) fn topic_url(url: &str, topic: &str) -> String {
    if has_path(url) {
        url.to_owned()
    } else {
        format!("{}/topics/{topic}", url.trim_end_matches('/'))
    }
}

/// How many of its messages a publisher may have sent that some
/// connection has not received yet.
pub(crate) fn window(args: &Args) -> usize {
    WINDOW_BATCHES * args.batch as usize
}

/// The most messages a node ever has queued for one connection of the
/// run: every publisher's window.
pub(crate) fn in_flight(args: &Args) -> usize {
    args.publishers as usize * window(args)
}

/// What the run's tasks share.
struct Run {
    shared: Arc<Shared>,
    payload: Payload,
    allow_closes: bool,
    publishers: usize,
    /// Receivers `0..subscribers` are the subscribers, then one per
    /// publisher.
    subscribers: usize,
    pacer: Arc<Pacer>,
    /// [`in_flight`], for the message when a node closes a slow consumer.
    in_flight: usize,
    /// Each publisher's confirmed count, once all publishers are done.
    sent: watch::Sender<Option<Arc<Vec<u64>>>>,
}

struct SubscriberOut {
    node: usize,
    expected: Expected,
    same_node: Latency,
    cross_node: Latency,
    last_ns: u64,
    closed: Option<u16>,
}

struct PublisherOut {
    confirmed: u64,
    closed: Option<u16>,
}

async fn connect(dialer: &Dialer, url: &str, what: &str) -> Result<Ws, String> {
    dialer
        .connect(url)
        .await
        .map_err(|err| format!("{what}: connect to {url}: {err}"))
}

/// Runs the broadcast against `urls` (one per node, topic paths included).
pub(crate) async fn run(
    args: &Args,
    dialer: &Dialer,
    urls: &[String],
    shared: Arc<Shared>,
) -> Result<Report, String> {
    let publishers = args.publishers as usize;
    let subscribers = args.subscribers as usize;
    let (sent_tx, _) = watch::channel(None);
    let run = Arc::new(Run {
        shared: Arc::clone(&shared),
        payload: Payload::new(args.size, args.text),
        allow_closes: args.allow_closes,
        publishers,
        subscribers,
        pacer: Arc::new(Pacer::new(
            subscribers + publishers,
            publishers,
            window(args) as u64,
        )),
        in_flight: in_flight(args),
        sent: sent_tx,
    });

    // Everyone connected (and so subscribed) before the first publish.
    let mut subscriber_ws = Vec::with_capacity(subscribers);
    for i in 0..subscribers {
        let node = i % urls.len();
        subscriber_ws.push((
            node,
            connect(dialer, &urls[node], &format!("subscriber {i}")).await?,
        ));
        shared.connected.fetch_add(1, Ordering::Relaxed);
    }
    let mut publisher_ws = Vec::with_capacity(publishers);
    for j in 0..publishers {
        let node = j % urls.len();
        publisher_ws.push((
            node,
            connect(dialer, &urls[node], &format!("publisher {j}")).await?,
        ));
        shared.connected.fetch_add(1, Ordering::Relaxed);
    }

    let start_ns = shared.start();
    let until = Until::new(args.budget(), start_ns);
    let mut subscriber_tasks = JoinSet::new();
    for (i, (node, ws)) in subscriber_ws.into_iter().enumerate() {
        subscriber_tasks.spawn(subscribe(i, node, ws, Arc::clone(&run), shared.counter()));
    }
    let mut publisher_tasks = JoinSet::new();
    for (j, (node, ws)) in publisher_ws.into_iter().enumerate() {
        publisher_tasks.spawn(publish(
            j,
            node,
            ws,
            Arc::clone(&run),
            until,
            args.batch as usize,
            args.rate,
        ));
    }

    let mut sent = vec![0; publishers];
    let mut closes = Vec::new();
    while let Some(joined) = publisher_tasks.join_next().await {
        let (j, out) = joined.map_err(|e| format!("publisher task failed: {e}"))??;
        sent[j] = out.confirmed;
        if let Some(code) = out.closed {
            closes.push(Closed::new(format!("publisher {j}"), j % urls.len(), code));
        }
    }
    let sent = Arc::new(sent);
    run.sent.send_replace(Some(Arc::clone(&sent)));

    let mut outs = Vec::with_capacity(subscribers);
    while let Some(joined) = subscriber_tasks.join_next().await {
        outs.push(joined.map_err(|e| format!("subscriber task failed: {e}"))??);
    }
    Ok(summarize(urls, &sent, outs, closes, start_ns))
}

fn summarize(
    urls: &[String],
    sent: &[u64],
    mut outs: Vec<(usize, SubscriberOut)>,
    mut closes: Vec<Closed>,
    start_ns: u64,
) -> Report {
    outs.sort_by_key(|(i, _)| *i);
    let mut same_node = Latency::default();
    let mut cross_node = Latency::default();
    let mut nodes: Vec<NodeReport> = urls.iter().map(|url| NodeReport::new(url)).collect();
    let mut last_ns = start_ns;
    let mut lost_to_close = 0;
    for (i, out) in &outs {
        same_node.merge(&out.same_node);
        cross_node.merge(&out.cross_node);
        nodes[out.node].subscribers += 1;
        nodes[out.node].deliveries += out.expected.total();
        last_ns = last_ns.max(out.last_ns);
        if let Some(code) = out.closed {
            closes.push(Closed::new(format!("subscriber {i}"), out.node, code));
            lost_to_close += out.expected.missing(sent);
        }
    }
    let elapsed = Duration::from_nanos(last_ns - start_ns);
    for node in &mut nodes {
        node.deliveries_per_s = node.deliveries as f64 / elapsed.as_secs_f64().max(1e-9);
    }
    let deliveries = nodes.iter().map(|n| n.deliveries).sum();
    let published: u64 = sent.iter().sum();
    let mut note = format!(
        "{published} messages published, each received exactly once and in order by every subscriber"
    );
    if !closes.is_empty() {
        note = format!(
            "{published} messages published; every subscriber still open received each exactly once and in order; {} connection(s) closed by a node, {lost_to_close} deliveries lost to those closes",
            closes.len()
        );
    }
    Report::new(deliveries, elapsed, note).with_broadcast(BroadcastReport {
        publishers: sent.len(),
        subscribers: outs.len(),
        published,
        nodes,
        same_node: same_node.percentiles(),
        cross_node: cross_node.percentiles(),
        closes,
        lost_to_close,
    })
}

/// A close frame from a node: the code, or the error if closes are not
/// allowed.
fn node_closed(run: &Run, who: &str, frame: Option<&CloseFrame>) -> Result<u16, String> {
    let code = frame.map_or(1005, |f| u16::from(f.code));
    if run.allow_closes {
        return Ok(code);
    }
    let reason = frame.map_or("", |f| f.reason.as_str());
    let mut error = format!(
        "{who}: closed by the node with {code} ({reason}); pass --allow-closes to accept that"
    );
    if frame.is_some_and(|f| f.code == CloseCode::Policy) {
        error += &format!(
            ". Up to {} messages are queued for a connection at a time (--publishers x {WINDOW_BATCHES} x --batch): \
             a node that queues fewer closes it as a slow consumer",
            run.in_flight
        );
    }
    Err(error)
}

async fn subscribe(
    i: usize,
    node: usize,
    mut ws: Ws,
    run: Arc<Run>,
    progress: Arc<Counter>,
) -> Result<(usize, SubscriberOut), String> {
    let who = format!("subscriber {i} (node {node})");
    // However this ends, the publishers stop waiting for it.
    let _leave = run.pacer.guard(i);
    let mut out = SubscriberOut {
        node,
        expected: Expected::new(run.publishers),
        same_node: Latency::default(),
        cross_node: Latency::default(),
        last_ns: 0,
        closed: None,
    };
    let mut sent_rx = run.sent.subscribe();
    let mut drain_deadline = None;
    loop {
        // Done once every confirmed message arrived.
        let sent = sent_rx.borrow().clone();
        if let Some(sent) = &sent {
            if out.expected.missing(sent) == 0 {
                let _ = ws
                    .close(Some(CloseFrame::new(CloseCode::Normal, CLOSE_REASON)))
                    .await;
                // The rest (the close reply) is the node's business.
                return Ok((i, out));
            }
            drain_deadline.get_or_insert_with(|| tokio::time::Instant::now() + DRAIN_TIMEOUT);
        }
        let deadline = drain_deadline
            .unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(3600));
        let msg = tokio::select! {
            msg = ws.next() => msg,
            _ = sent_rx.changed(), if sent.is_none() => continue,
            _ = tokio::time::sleep_until(deadline) => {
                let sent = sent.as_deref().map(Vec::as_slice).unwrap_or(&[]);
                return Err(format!(
                    "{who}: missing messages {} s after the publishers finished: {}",
                    DRAIN_TIMEOUT.as_secs(),
                    out.expected.describe_missing(sent)
                ));
            }
        };
        match msg {
            Some(Ok(msg)) if msg.is_data() => {
                let now = run.shared.now_ns();
                let stamp = run.payload.stamp(&msg).map_err(|e| format!("{who}: {e}"))?;
                out.expected
                    .accept(stamp.publisher, stamp.seq)
                    .map_err(|e| format!("{who}: {e}"))?;
                run.pacer
                    .received(i, stamp.publisher as usize, stamp.seq + 1);
                let latency = now.saturating_sub(stamp.sent_ns);
                if usize::from(stamp.node) == node {
                    out.same_node.record(latency);
                } else {
                    out.cross_node.record(latency);
                }
                out.last_ns = now;
                progress.set(out.expected.total());
            }
            Some(Ok(Message::Close(frame))) => {
                out.closed = Some(node_closed(&run, &who, frame.as_ref())?);
                return Ok((i, out));
            }
            Some(Ok(_)) => {}
            Some(Err(err)) => return Err(format!("{who}: read: {err}")),
            None => return Err(format!("{who}: the connection ended without a close frame")),
        }
    }
}

/// When message `seq` is due at `rate` a second: `seq / rate` seconds
/// after the start, in nanoseconds.
pub(crate) fn due_at_ns(seq: u64, rate: f64) -> u64 {
    (seq as f64 / rate * 1e9) as u64
}

/// How many of the `n` messages from `seq` on go out `elapsed_ns` after
/// the start at `rate` a second: those due by then (behind schedule, they
/// go out together), and at least the one that was waited for.
pub(crate) fn due_now(seq: u64, n: usize, elapsed_ns: u64, rate: f64) -> usize {
    let due = (elapsed_ns as f64 * rate / 1e9) as u64 + 1;
    n.min(due.saturating_sub(seq).max(1) as usize)
}

/// Sends batches until the budget is spent, keeping at most a window of
/// its messages unconfirmed (not yet read back from its own node), and a
/// window not yet received by every connection. With a `rate`, what is
/// due goes out, up to a batch per flush.
async fn publish(
    j: usize,
    node: usize,
    ws: Ws,
    run: Arc<Run>,
    until: Until,
    batch: usize,
    rate: Option<f64>,
) -> Result<(usize, PublisherOut), String> {
    let who = format!("publisher {j} (node {node})");
    let window = WINDOW_BATCHES * batch;
    let credits = Arc::new(Semaphore::new(window));
    let confirmed = Arc::new(AtomicU64::new(0));
    let closed: Arc<OnceLock<u16>> = Arc::default();
    // Set once it sent its own close frame: a close frame after that is
    // the node's reply, not the node closing it.
    let closing = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (mut write, mut read) = ws.into_split();

    let reader = {
        let (run, credits, confirmed, closed, closing, who) = (
            Arc::clone(&run),
            Arc::clone(&credits),
            Arc::clone(&confirmed),
            Arc::clone(&closed),
            Arc::clone(&closing),
            who.clone(),
        );
        tokio::spawn(async move {
            // A receiver like the subscribers: every message checked for
            // order, and the publishers paced by it.
            let receiver = run.subscribers + j;
            let _leave = run.pacer.guard(receiver);
            let mut expected = Expected::new(run.publishers);
            let result = loop {
                match read.next().await {
                    Some(Ok(msg)) if msg.is_data() => {
                        let stamp = match run.payload.stamp(&msg) {
                            Ok(stamp) => stamp,
                            Err(e) => break Err(format!("{who}: {e}")),
                        };
                        if let Err(e) = expected.accept(stamp.publisher, stamp.seq) {
                            break Err(format!("{who}, reading back: {e}"));
                        }
                        run.pacer
                            .received(receiver, stamp.publisher as usize, stamp.seq + 1);
                        if stamp.publisher as usize == j {
                            confirmed.fetch_add(1, Ordering::Relaxed);
                            credits.add_permits(1);
                        }
                    }
                    Some(Ok(Message::Close(_))) if closing.load(Ordering::Acquire) => {}
                    Some(Ok(Message::Close(frame))) => {
                        match node_closed(&run, &who, frame.as_ref()) {
                            Ok(code) => {
                                let _ = closed.set(code);
                                break Ok(());
                            }
                            Err(e) => break Err(e),
                        }
                    }
                    Some(Ok(_)) => {}
                    // After our close: the handshake is complete.
                    None | Some(Err(Error::ConnectionClosed)) => break Ok(()),
                    Some(Err(err)) => break Err(format!("{who}: read: {err}")),
                }
            };
            // Wakes the writer if it waits for credits that will not come.
            credits.close();
            result
        })
    };

    let shared = &run.shared;
    let start_ns = shared.start();
    let mut seq = 0u64;
    let stopped = loop {
        let mut n = until.next_batch(seq, batch, shared.now_ns());
        if n == 0 {
            break false;
        }
        if let Some(rate) = rate {
            let due_ns = start_ns + due_at_ns(seq, rate);
            let now = shared.now_ns();
            if due_ns > now {
                tokio::time::sleep(Duration::from_nanos(due_ns - now)).await;
            }
            let elapsed_ns = shared.now_ns().saturating_sub(start_ns);
            n = due_now(seq, n, elapsed_ns, rate);
        }
        match credits.acquire_many(n as u32).await {
            Ok(permit) => permit.forget(),
            Err(_) => break true,
        }
        run.pacer.ready(j, seq + n as u64).await;
        let mut messages =
            run.payload
                .broadcast_batch(seq, n, shared.now_ns(), j as u32, node as u16);
        let mut result = Ok(());
        for _ in 0..n {
            result = write.write(run.payload.message(&mut messages)).await;
            if result.is_err() {
                break;
            }
        }
        if result.is_ok() {
            result = write.flush().await;
        }
        if let Err(err) = result {
            if closed.get().is_some() || run.allow_closes {
                break true;
            }
            return Err(format!("{who}: write: {err}"));
        }
        seq += n as u64;
    };
    if !stopped {
        // Every message confirmed, or the node closed us meanwhile.
        let _ = credits.acquire_many(window as u32).await;
        closing.store(true, Ordering::Release);
        let _ = write
            .close(Some(CloseFrame::new(CloseCode::Normal, CLOSE_REASON)))
            .await;
    }
    let read_result = tokio::time::timeout(DRAIN_TIMEOUT, reader)
        .await
        .map_err(|_| {
            format!(
                "{who}: no closing handshake within {} s",
                DRAIN_TIMEOUT.as_secs()
            )
        })?
        .map_err(|e| format!("{who}: reader task failed: {e}"))?;
    read_result?;
    let closed = closed.get().copied();
    if stopped && closed.is_none() {
        return Err(format!("{who}: stopped before sending everything"));
    }
    Ok((
        j,
        PublisherOut {
            confirmed: confirmed.load(Ordering::Relaxed),
            closed,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pace of `--rate`, on simulated time: 50 messages at 500 a
    /// second, the last due 98 ms in, one at a time when on schedule and
    /// what is due at once when behind.
    #[test]
    fn a_rate_spaces_messages_by_its_period() {
        const MS: u64 = 1_000_000;
        let rate = 500.0;
        assert_eq!(due_at_ns(0, rate), 0);
        // Within a nanosecond: the period is not a binary fraction.
        assert!(due_at_ns(1, rate).abs_diff(2 * MS) <= 1);
        assert!(due_at_ns(49, rate).abs_diff(98 * MS) <= 1);
        // On schedule: one message per wake, whatever the batch.
        assert_eq!(due_now(10, 64, due_at_ns(10, rate), rate), 1);
        // 10 ms behind: the five due since go out together.
        assert_eq!(due_now(10, 64, due_at_ns(10, rate) + 9 * MS, rate), 5);
        // Never more than the batch, never none.
        assert_eq!(due_now(0, 3, 1000 * MS, rate), 3);
        assert_eq!(due_now(10, 64, 0, rate), 1);
    }

    #[test]
    fn topic_urls_get_the_topic_path_unless_they_have_one() {
        for (url, expected) in [
            ("ws://127.0.0.1:9001", "ws://127.0.0.1:9001/topics/t"),
            ("ws://127.0.0.1:9001/", "ws://127.0.0.1:9001/topics/t"),
            ("ws://h:1/topics/other", "ws://h:1/topics/other"),
            ("wss://h/x/y", "wss://h/x/y"),
        ] {
            assert_eq!(topic_url(url, "t"), expected, "{url}");
        }
    }
}
