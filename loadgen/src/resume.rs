//! Resume mode ("resuming broadcast"): broadcast over `lockgate.seq.v1`
//! to nodes that keep a history, with subscribers that drop their
//! connections at random and resume on a random node.
//!
//! Every connection offers [`SUBPROTOCOL`] and receives each message with
//! its position. Subscribers drop their connection (no close frame) at
//! exponentially distributed times and reconnect to a random `--url` with
//! `?since=EPOCH:LAST`; a node that is gone (refused, 503, 1001/1012/1013,
//! reset) means reconnecting elsewhere after a short backoff. Publishers
//! send stamped messages at `--rate` and read the topic back, so each learns
//! the position its messages were stored at; one whose connection dies
//! resumes elsewhere and goes on with its next sequence number. At the end
//! every subscriber's messages must be the reference (the union of what
//! every connection received) exactly: see [`crate::timeline`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lockgate_fanout::seq::{Kind, RESYNC, SINCE_PARAM, SUBPROTOCOL, Sequenced, Since};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_lockgate::{CloseCode, CloseFrame, Error, Message, ProtocolError};

use crate::args::Args;
use crate::broadcast::{due_at_ns, due_now};
use crate::dial::{Dialer, Ws};
use crate::echo::{CLOSE_REASON, Until, WINDOW_BATCHES};
use crate::payload::Payload;
use crate::report::{Report, ResumeReport};
use crate::rng::Rng;
use crate::shared::{Counter, Shared};
use crate::timeline::{Received, Reference, Sent, SentOn};

/// After the publishers are done, how long receivers may take to receive
/// the rest.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);
/// A connection that cannot be made is tried again this many times (on
/// random nodes) ...
const CONNECT_ATTEMPTS: u32 = 40;
/// ... within this long, before the run fails.
const CONNECT_TIME: Duration = Duration::from_secs(20);
/// The first backoff after a failed connection; it doubles up to
/// [`MAX_BACKOFF`].
const BACKOFF: Duration = Duration::from_millis(20);
const MAX_BACKOFF: Duration = Duration::from_millis(500);
/// A subscriber that dropped its connection stays away for up to this long
/// (uniformly, and at most a quarter of `--drop-interval`): messages
/// are published meanwhile, so that resuming replays some from the
/// history rather than only picking up the live ones.
const MAX_AWAY: Duration = Duration::from_millis(100);

/// How many messages the embedded node's history keeps per topic: the
/// whole run twice over, so that no resume in it is ever too old.
pub(crate) fn history_size(args: &Args) -> u64 {
    let per_publisher = match args.duration {
        Some(d) => (d.as_secs_f64() * args.rate.unwrap_or(1000.0)).ceil() as u64,
        None => args.messages,
    };
    (2 * per_publisher * u64::from(args.publishers)).max(10_000)
}

/// `url` resuming after `since`.
fn with_since(url: &str, since: &Since) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}{SINCE_PARAM}={since}")
}

/// Whether a failed connection attempt means the node is gone (or going):
/// another node will do.
fn is_gone(err: &Error) -> bool {
    match err {
        Error::Io(_) | Error::ConnectionClosed | Error::AlreadyClosed => true,
        // The stream ended: mid-handshake, or without a close frame (a
        // killed node's socket).
        Error::Protocol(
            ProtocolError::HandshakeIncomplete | ProtocolError::ResetWithoutClosingHandshake,
        ) => true,
        Error::Http(response) => matches!(response.status().as_u16(), 502..=504),
        _ => false,
    }
}

/// The close codes of a node going away: shutting down (1001), restarting
/// (1012), or without its broker (1013).
fn is_leaving(code: CloseCode) -> bool {
    matches!(u16::from(code), 1001 | 1012 | 1013)
}

/// What the run's tasks share.
struct Run {
    shared: Arc<Shared>,
    dialer: Dialer,
    urls: Vec<String>,
    payload: Payload,
    seed: u64,
    /// Mean time between a subscriber's drops, in seconds.
    drop_mean: f64,
    allow_resync: bool,
    /// The highest position any connection received: what a resumed
    /// connection receives up to it was stored before it came back, and is
    /// counted as replayed.
    high_water: AtomicU64,
    /// Set once the publishers are done: the highest position any of them
    /// received.
    target: watch::Sender<Option<u64>>,
    /// Reconnections to each node.
    reconnects: Vec<AtomicU64>,
}

/// One receiving connection's state across its reconnects.
struct Receiver {
    who: String,
    rng: Rng,
    received: Received,
    /// The epoch of the history the positions belong to; `None` before
    /// the first connection and after a resync.
    epoch: Option<String>,
    node: usize,
    /// After a resync: resume from the oldest position held (`E:0`) rather
    /// than after the last received, until a message arrives.
    from_oldest: bool,
    /// Positions up to this, on the current connection, are replayed.
    replay_upto: u64,
    reconnects: u64,
    replayed: u64,
    resyncs: u64,
    progress: Arc<Counter>,
}

/// How a read ended other than with a message.
enum Ended {
    /// The node went away or the connection broke: resume elsewhere.
    Gone,
    /// The node cannot serve the position asked for (4001).
    Resync,
}

impl Receiver {
    fn new(who: String, rng: Rng, progress: Arc<Counter>) -> Self {
        Self {
            who,
            rng,
            received: Received::default(),
            epoch: None,
            from_oldest: false,
            node: 0,
            replay_upto: 0,
            reconnects: 0,
            replayed: 0,
            resyncs: 0,
            progress,
        }
    }

    /// Where to resume: after the last position received, or from the
    /// oldest held when nothing was (the topic's history is this run's:
    /// every receiver was connected before the first publish).
    fn since(&self) -> Option<Since> {
        let epoch = self.epoch.as_deref()?;
        let last = if self.from_oldest {
            0
        } else {
            self.received.last_position().unwrap_or(0)
        };
        Since::new(epoch, last)
    }

    /// Opens a connection to `node` (if given, else a random one), resuming
    /// where it is; a node that is gone is replaced by another after a
    /// backoff, within [`CONNECT_ATTEMPTS`] and [`CONNECT_TIME`].
    async fn open(&mut self, run: &Run, node: Option<usize>) -> Result<Ws, String> {
        let started = Instant::now();
        let mut backoff = BACKOFF;
        let mut node = node.unwrap_or_else(|| self.rng.below(run.urls.len()));
        let mut attempt = 1;
        loop {
            let since = self.since();
            let url = match &since {
                Some(since) => with_since(&run.urls[node], since),
                None => run.urls[node].clone(),
            };
            // Snapshot before the upgrade: whatever the node then sends up
            // to here was stored while this receiver was away.
            let high_water = run.high_water.load(Ordering::Relaxed);
            match run.dialer.connect_seq(&url).await {
                Ok((ws, Some(epoch))) => {
                    self.epoch = Some(epoch);
                    self.node = node;
                    self.replay_upto = if since.is_some() { high_water } else { 0 };
                    run.shared.connected.fetch_add(1, Ordering::Relaxed);
                    return Ok(ws);
                }
                Ok((_, None)) => {
                    return Err(format!(
                        "{}: {} keeps no history: its 101 has no Lockgate-Epoch header \
                         (resume mode needs lockgate-fanout nodes with a history)",
                        self.who, run.urls[node]
                    ));
                }
                Err(err) if is_gone(&err) => {
                    if attempt >= CONNECT_ATTEMPTS || started.elapsed() >= CONNECT_TIME {
                        return Err(format!(
                            "{}: no node could be reached in {attempt} attempts over {:.1} s; the last, {url}: {}",
                            self.who,
                            started.elapsed().as_secs_f64(),
                            run.dialer.describe(&err)
                        ));
                    }
                }
                Err(err) => {
                    return Err(format!(
                        "{}: connect to {url}: {}",
                        self.who,
                        run.dialer.describe(&err)
                    ));
                }
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
            attempt += 1;
            node = self.rng.below(run.urls.len());
        }
    }

    /// Drops `ws` (whatever state it is in) and resumes on a random node,
    /// after staying away for `away`.
    async fn reconnect(&mut self, run: &Run, ws: Ws, away: Duration) -> Result<Ws, String> {
        // Abruptly: no close frame, the TCP connection just goes.
        drop(ws);
        run.shared.connected.fetch_sub(1, Ordering::Relaxed);
        self.reconnects += 1;
        tokio::time::sleep(away).await;
        let ws = self.open(run, None).await?;
        run.reconnects[self.node].fetch_add(1, Ordering::Relaxed);
        Ok(ws)
    }

    /// Handles what a read returned: `Ok(Some(stamp))` for a data message
    /// (checked and recorded), `Ok(None)` for a control frame, `Err(Ok)`
    /// when the connection is over, `Err(Err)` on a failure.
    fn handle(
        &mut self,
        run: &Run,
        read: Result<Message, Error>,
    ) -> Result<Option<(u64, crate::payload::Stamp)>, Result<Ended, String>> {
        let who = &self.who;
        let node = self.node;
        match read {
            Ok(Message::Binary(frame)) => {
                let Some(message) = Sequenced::decode(&frame) else {
                    return Err(Err(format!(
                        "{who}: a binary frame of {} bytes from node {node} that is not lockgate.seq.v1",
                        frame.len()
                    )));
                };
                let stamp = run
                    .payload
                    .stamp_payload(message.payload, message.kind == Kind::Text)
                    .map_err(|e| Err(format!("{who}: position {}: {e}", message.position)))?;
                self.received
                    .accept(message.position, stamp)
                    .map_err(|e| Err(format!("{who} (now on node {node}): {e}")))?;
                self.from_oldest = false;
                if message.position <= self.replay_upto {
                    self.replayed += 1;
                }
                run.high_water
                    .fetch_max(message.position, Ordering::Relaxed);
                self.progress.set(self.received.len() as u64);
                Ok(Some((message.position, stamp)))
            }
            Ok(Message::Text(_)) => Err(Err(format!(
                "{who}: a text frame from node {node}: it did not speak {SUBPROTOCOL}"
            ))),
            Ok(Message::Close(frame)) => {
                let code = frame.as_ref().map_or(CloseCode::Status, |f| f.code);
                let reason = frame.as_ref().map_or("", |f| f.reason.as_str());
                if code == RESYNC {
                    if !run.allow_resync {
                        let since = self.since().map_or_else(String::new, |s| s.to_string());
                        return Err(Err(format!(
                            "{who}: node {node} closed with 4001 ({reason}) when resuming after {since}: \
                             its history no longer holds that position, or its epoch changed; \
                             pass --allow-resync to accept that"
                        )));
                    }
                    return Err(Ok(Ended::Resync));
                }
                if is_leaving(code) {
                    return Err(Ok(Ended::Gone));
                }
                Err(Err(format!(
                    "{who}: node {node} closed the connection with {} ({reason})",
                    u16::from(code)
                )))
            }
            Ok(_) => Ok(None),
            // A reset, or the end of the stream without a close frame.
            Err(e) if is_gone(&e) => Err(Ok(Ended::Gone)),
            Err(e) => Err(Err(format!("{who}: read from node {node}: {e}"))),
        }
    }

    /// After `ended`, resumes: elsewhere, or (resync, allowed) from the
    /// oldest message held; if even that is refused (the epoch changed),
    /// from the live messages of the new epoch.
    async fn recover(&mut self, run: &Run, ws: Ws, ended: Ended) -> Result<Ws, String> {
        if let Ended::Resync = ended {
            self.resyncs += 1;
            self.received.resync();
            // Not the live messages at once: a resync at the end of the
            // run, with nothing more published, would never reach the end.
            if self.from_oldest {
                self.epoch = None;
                self.from_oldest = false;
            } else {
                self.from_oldest = true;
            }
        }
        self.reconnect(run, ws, Duration::ZERO).await
    }

    /// How long a dropping subscriber stays away: see [`MAX_AWAY`].
    fn away(&mut self, run: &Run) -> Duration {
        let most = MAX_AWAY.min(Duration::from_secs_f64(run.drop_mean / 4.0));
        most.mul_f64(self.rng.unit())
    }
}

/// What a subscriber hands back.
struct SubscriberOut {
    received: Received,
    reconnects: u64,
    replayed: u64,
    resyncs: u64,
}

/// What a publisher hands back.
struct PublisherOut {
    received: Received,
    sent: Sent,
    reconnects: u64,
    resyncs: u64,
}

/// Runs resume mode against `urls` (one per node, topic paths included).
pub(crate) async fn run(
    args: &Args,
    dialer: &Dialer,
    urls: &[String],
    shared: Arc<Shared>,
    seed: u64,
) -> Result<Report, String> {
    let publishers = args.publishers as usize;
    let subscribers = args.subscribers as usize;
    let (target, _) = watch::channel(None);
    let run = Arc::new(Run {
        shared: Arc::clone(&shared),
        dialer: dialer.clone(),
        urls: urls.to_vec(),
        payload: Payload::new(args.size, args.text),
        seed,
        drop_mean: args.drop_interval as f64 / 1000.0,
        allow_resync: args.allow_resync,
        high_water: AtomicU64::new(0),
        target,
        reconnects: urls.iter().map(|_| AtomicU64::new(0)).collect(),
    });

    // Everyone connected (and so subscribed) before the first publish, so
    // that every subscriber starts from the same point.
    let mut subscriber_conns = Vec::with_capacity(subscribers);
    for i in 0..subscribers {
        let mut receiver = Receiver::new(
            format!("subscriber {i}"),
            Rng::new(seed, i as u64),
            shared.counter(),
        );
        let ws = receiver.open(&run, Some(i % urls.len())).await?;
        subscriber_conns.push((receiver, ws));
    }
    let mut publisher_conns = Vec::with_capacity(publishers);
    for j in 0..publishers {
        let mut receiver = Receiver::new(
            format!("publisher {j}"),
            Rng::new(seed, (subscribers + j) as u64),
            shared.counter(),
        );
        let ws = receiver.open(&run, Some(j % urls.len())).await?;
        publisher_conns.push((receiver, ws));
    }

    let start_ns = shared.start();
    let until = Until::new(args.budget(), start_ns);
    let rate = args.rate.unwrap_or(200.0);
    let batch = args.batch as usize;
    let mut subscriber_tasks = JoinSet::new();
    for (i, (receiver, ws)) in subscriber_conns.into_iter().enumerate() {
        let run = Arc::clone(&run);
        subscriber_tasks.spawn(async move { (i, subscribe(receiver, ws, run).await) });
    }
    let mut publisher_tasks = JoinSet::new();
    for (j, (receiver, ws)) in publisher_conns.into_iter().enumerate() {
        let run = Arc::clone(&run);
        publisher_tasks
            .spawn(async move { (j, publish(j, receiver, ws, run, until, batch, rate).await) });
    }

    let mut publisher_outs: Vec<Option<PublisherOut>> = (0..publishers).map(|_| None).collect();
    let mut subscriber_outs: Vec<Option<SubscriberOut>> = (0..subscribers).map(|_| None).collect();
    while !publisher_tasks.is_empty() {
        tokio::select! {
            Some(joined) = publisher_tasks.join_next() => {
                let (j, out) = joined.map_err(|e| format!("publisher task failed: {e}"))?;
                publisher_outs[j] = Some(out?);
            }
            // A subscriber ends before the publishers only on a failure:
            // reported now rather than at the end of --duration.
            Some(joined) = subscriber_tasks.join_next() => {
                let (i, out) = joined.map_err(|e| format!("subscriber task failed: {e}"))?;
                subscriber_outs[i] = Some(out?);
            }
        }
    }
    let publisher_outs: Vec<PublisherOut> = publisher_outs.into_iter().flatten().collect();
    let target = publisher_outs
        .iter()
        .filter_map(|out| out.received.last_position())
        .max()
        .unwrap_or(0);
    run.target.send_replace(Some(target));

    while let Some(joined) = subscriber_tasks.join_next().await {
        let (i, out) = joined.map_err(|e| format!("subscriber task failed: {e}"))?;
        subscriber_outs[i] = Some(out?);
    }
    let subscriber_outs: Vec<SubscriberOut> = subscriber_outs.into_iter().flatten().collect();
    let last_ns = shared.now_ns();
    verify(
        &run,
        target,
        &publisher_outs,
        &subscriber_outs,
        Duration::from_nanos(last_ns - start_ns),
    )
}

/// The end of the run: everything received against the reference.
fn verify(
    run: &Run,
    target: u64,
    publishers: &[PublisherOut],
    subscribers: &[SubscriberOut],
    elapsed: Duration,
) -> Result<Report, String> {
    let mut reference = Reference::default();
    for (j, out) in publishers.iter().enumerate() {
        reference.add(&format!("publisher {j}"), &out.received)?;
    }
    for (i, out) in subscribers.iter().enumerate() {
        reference.add(&format!("subscriber {i}"), &out.received)?;
    }
    for (i, out) in subscribers.iter().enumerate() {
        reference.check_receiver(&format!("subscriber {i}"), &out.received, target)?;
    }
    for (j, out) in publishers.iter().enumerate() {
        if let Some(last) = out.received.last_position() {
            reference.check_receiver(
                &format!("publisher {j}, reading back"),
                &out.received,
                last,
            )?;
        }
    }
    let sent: Vec<Sent> = publishers.iter().map(|out| out.sent.clone()).collect();
    let publisher_lost = reference.check_publishers(&sent)?;

    let messages = reference.count_upto(target) as u64;
    let positions = reference.span().map(|(first, _)| (first, target));
    let per_node: Vec<u64> = run
        .reconnects
        .iter()
        .map(|n| n.load(Ordering::Relaxed))
        .collect();
    let reconnects = subscribers.iter().map(|s| s.reconnects).sum();
    let resume = ResumeReport {
        subscribers: subscribers.len(),
        messages,
        first_position: positions.map(|(first, _)| first),
        last_position: positions.map(|(_, last)| last),
        reconnects,
        reconnects_per_node: per_node.clone(),
        nodes: per_node.iter().filter(|&&n| n > 0).count(),
        replayed: subscribers.iter().map(|s| s.replayed).sum(),
        resyncs: subscribers.iter().map(|s| s.resyncs).sum::<u64>()
            + publishers.iter().map(|p| p.resyncs).sum::<u64>(),
        publishers: publishers.len(),
        publisher_reconnects: publishers.iter().map(|p| p.reconnects).sum(),
        publisher_lost,
        seed: run.seed,
    };
    let deliveries = subscribers.iter().map(|s| s.received.len() as u64).sum();
    let note = resume.verified();
    Ok(Report::new(deliveries, elapsed, note).with_resume(resume))
}

/// Reads until the publishers are done and it has everything they saw
/// stored, dropping its connection at random times meanwhile.
async fn subscribe(mut me: Receiver, mut ws: Ws, run: Arc<Run>) -> Result<SubscriberOut, String> {
    let mut target_rx = run.target.subscribe();
    let mut drop_at = Instant::now() + Duration::from_secs_f64(me.rng.exponential(run.drop_mean));
    let mut drain_deadline = None;
    loop {
        let target = *target_rx.borrow_and_update();
        if let Some(target) = target {
            if me.received.last_position().unwrap_or(0) >= target {
                let _ = ws
                    .close(Some(CloseFrame::new(CloseCode::Normal, CLOSE_REASON)))
                    .await;
                run.shared.connected.fetch_sub(1, Ordering::Relaxed);
                return Ok(SubscriberOut {
                    received: me.received,
                    reconnects: me.reconnects,
                    replayed: me.replayed,
                    resyncs: me.resyncs,
                });
            }
            drain_deadline.get_or_insert_with(|| Instant::now() + DRAIN_TIMEOUT);
        }
        // Drops stop with the publishers, so that the end is reached; and
        // start with the first message: before it, the only resume is
        // since E:0, "from the oldest held", which a short history would
        // serve from after messages it no longer has, without a resync.
        let dropping = target.is_none() && me.received.last_position().is_some();
        let deadline = drain_deadline.unwrap_or(drop_at);
        tokio::select! {
            read = ws.read() => match me.handle(&run, read) {
                Ok(_) => {}
                Err(Ok(ended)) => ws = me.recover(&run, ws, ended).await?,
                Err(Err(error)) => return Err(error),
            },
            _ = tokio::time::sleep_until(drop_at), if dropping => {
                let away = me.away(&run);
                ws = me.reconnect(&run, ws, away).await?;
                drop_at = Instant::now() + Duration::from_secs_f64(me.rng.exponential(run.drop_mean));
            }
            _ = target_rx.changed(), if target.is_none() => {}
            _ = tokio::time::sleep_until(deadline), if drain_deadline.is_some() => {
                return Err(format!(
                    "{}: {} s after the publishers finished, it has received up to position {} of {}",
                    me.who,
                    DRAIN_TIMEOUT.as_secs(),
                    me.received.last_position().unwrap_or(0),
                    target.unwrap_or(0)
                ));
            }
        }
    }
}

/// Sends stamped messages at `rate` until the budget is spent, reading
/// the topic back; a connection that dies is resumed elsewhere. Ends once
/// its messages sent on its last connection are all back.
async fn publish(
    j: usize,
    mut me: Receiver,
    mut ws: Ws,
    run: Arc<Run>,
    until: Until,
    batch: usize,
    rate: f64,
) -> Result<PublisherOut, String> {
    let shared = &run.shared;
    let start_ns = shared.start();
    // At most this many of its messages on the current connection not yet
    // back: a node is never sent more than it has shown it stored.
    let window = (WINDOW_BATCHES * batch) as u64;
    let mut sent = Sent::default();
    let mut seq = 0u64;
    let mut on = SentOn {
        first: 0,
        end: 0,
        died: false,
    };
    // One past the highest sequence number of its own read back.
    let mut back = 0u64;
    let mut drain_deadline: Option<Instant> = None;
    loop {
        if drain_deadline.is_none() && until.next_batch(seq, batch, shared.now_ns()) == 0 {
            drain_deadline = Some(Instant::now() + DRAIN_TIMEOUT);
        }
        if drain_deadline.is_some() && back.max(on.first) >= on.end {
            // Everything sent on this connection is back, and with it
            // (replayed first) whatever the dead ones had stored.
            let _ = ws
                .close(Some(CloseFrame::new(CloseCode::Normal, CLOSE_REASON)))
                .await;
            run.shared.connected.fetch_sub(1, Ordering::Relaxed);
            sent.connections.push(on);
            return Ok(PublisherOut {
                received: me.received,
                sent,
                reconnects: me.reconnects,
                resyncs: me.resyncs,
            });
        }
        let can_send = drain_deadline.is_none() && seq - back.max(on.first) < window;
        let due_ns = start_ns + due_at_ns(seq, rate);
        let due_in = Duration::from_nanos(due_ns.saturating_sub(shared.now_ns()));
        let deadline = drain_deadline.unwrap_or_else(|| Instant::now() + due_in);
        let ended = tokio::select! {
            read = ws.read() => match me.handle(&run, read) {
                Ok(Some((_, stamp))) if stamp.publisher as usize == j => {
                    back = back.max(stamp.seq + 1);
                    None
                }
                Ok(_) => None,
                Err(Ok(ended)) => Some(ended),
                Err(Err(error)) => return Err(error),
            },
            _ = tokio::time::sleep(due_in), if can_send => {
                let room = (window - (seq - back.max(on.first))) as usize;
                let n = until.next_batch(seq, batch.min(room), shared.now_ns());
                let n = due_now(seq, n, shared.now_ns().saturating_sub(start_ns), rate);
                let mut messages = run.payload.broadcast_batch(seq, n, shared.now_ns(), j as u32, me.node as u16);
                // Counted as sent on this connection before the writes: if
                // it dies under them, the ones that did not get through are
                // lost with it.
                seq += n as u64;
                on.end = seq;
                let mut result = Ok(());
                for _ in 0..n {
                    result = ws.write(run.payload.message(&mut messages)).await;
                    if result.is_err() {
                        break;
                    }
                }
                if result.is_ok() {
                    result = ws.flush().await;
                }
                match result {
                    Ok(()) => None,
                    Err(e) if is_gone(&e) => Some(Ended::Gone),
                    Err(e) => return Err(format!("{}: write: {e}", me.who)),
                }
            }
            _ = tokio::time::sleep_until(deadline), if drain_deadline.is_some() => {
                return Err(format!(
                    "{}: its messages {back}..{} not back {} s after it finished sending",
                    me.who,
                    on.end,
                    DRAIN_TIMEOUT.as_secs()
                ));
            }
        };
        if let Some(ended) = ended {
            on.died = true;
            sent.connections.push(on);
            ws = me.recover(&run, ws, ended).await?;
            on = SentOn {
                first: seq,
                end: seq,
                died: false,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resuming_appends_since_to_the_topic_url() {
        let since = Since::new("k3x9", 42).unwrap();
        assert_eq!(
            with_since("ws://h:1/topics/t", &since),
            "ws://h:1/topics/t?since=k3x9:42"
        );
        assert_eq!(
            with_since("ws://h:1/topics/t?x=1", &since),
            "ws://h:1/topics/t?x=1&since=k3x9:42"
        );
    }

    #[test]
    fn a_node_going_away_is_told_from_one_that_refuses() {
        for (code, leaving) in [
            (1001, true),
            (1012, true),
            (1013, true),
            (1008, false),
            (4001, false),
        ] {
            assert_eq!(is_leaving(CloseCode::from(code)), leaving, "{code}");
        }
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(is_gone(&Error::Io(refused)));
        assert!(is_gone(&Error::Protocol(
            ProtocolError::ResetWithoutClosingHandshake
        )));
        assert!(!is_gone(&Error::Protocol(
            ProtocolError::MaskedFrameFromServer
        )));
        let status = |s: u16| {
            let response = tokio_lockgate::http::Response::builder()
                .status(s)
                .body(None)
                .unwrap();
            Error::Http(Box::new(response))
        };
        assert!(is_gone(&status(503)));
        assert!(!is_gone(&status(404)));
    }
}
