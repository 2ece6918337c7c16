//! A connection's write side with a history: the replay after its
//! `since`, then its live queue without what the replay already sent
//! ([`SkipThrough`]).

use tokio_lockgate::hub::{PreparedSink, Subscriber};
use tokio_lockgate::{CloseCode, CloseFrame, PreparedMessage};

use super::{History, ReplayError, position_of};
use crate::seq::{self, Since};

/// Runs a connection's write side until its subscriber ends: first what
/// it missed after `since` (a `lockgate.seq.v1` client's), then what its
/// queue holds, skipping what the replay sent. A `since` that cannot be
/// served closes it with 4001 (no history here, a position gone, another
/// epoch) or 1013 (the history is unavailable for now); a message the
/// history refused for good (`refused`) closes it with 1013.
pub(crate) async fn forward<W: PreparedSink>(
    history: Option<&History>,
    topic: &str,
    since: Option<Since>,
    subscriber: &mut Subscriber,
    ws: &mut W,
    refused: Option<impl Future<Output = String>>,
) {
    // Subscribed before the 101: what the replay does not send is in the
    // queue.
    let through = match (since, history) {
        (None, _) => 0,
        (Some(since), Some(history)) => match history.replay(topic, &since, ws).await {
            Ok(through) => through,
            Err(ReplayError::Closed) => return,
            Err(ReplayError::Resync) => return close(ws, seq::RESYNC, seq::RESYNC_REASON).await,
            Err(ReplayError::Unavailable(why)) => {
                eprintln!("lockgate-fanout: replay: {why}");
                return close(ws, CloseCode::Again, "history unavailable; reconnect").await;
            }
        },
        // No history here: no position can be served.
        (Some(_), None) => return close(ws, seq::RESYNC, seq::RESYNC_REASON).await,
    };
    let mut live = SkipThrough::new(ws, through);
    let forwarding = subscriber.forward(&mut live);
    let Some(refused) = refused else {
        let _ = forwarding.await;
        return;
    };
    tokio::select! {
        _ = forwarding => {}
        why = refused => {
            eprintln!("lockgate-fanout: {why}");
            close(ws, CloseCode::Again, "message not stored; reconnect").await;
        }
    }
}

async fn close<W: PreparedSink>(ws: &mut W, code: CloseCode, reason: &str) {
    let _ = ws.close(Some(CloseFrame::new(code, reason))).await;
}

/// A connection's write side that drops `lockgate.seq.v1` frames at or
/// below a position: the live messages that were queued while the
/// connection replayed, and that the replay sent already.
#[derive(Debug)]
pub(crate) struct SkipThrough<'a, W> {
    inner: &'a mut W,
    through: u64,
}

impl<'a, W> SkipThrough<'a, W> {
    pub(crate) fn new(inner: &'a mut W, through: u64) -> Self {
        Self { inner, through }
    }
}

impl<W: PreparedSink> PreparedSink for SkipThrough<'_, W> {
    async fn write_prepared(&mut self, msg: &PreparedMessage) -> tokio_lockgate::Result<()> {
        if self.through > 0 {
            match position_of(msg) {
                Some(position) if position <= self.through => return Ok(()),
                // Positions only grow: nothing later can be at or below.
                _ => self.through = 0,
            }
        }
        self.inner.write_prepared(msg).await
    }

    async fn flush(&mut self) -> tokio_lockgate::Result<()> {
        self.inner.flush().await
    }

    async fn close(&mut self, frame: Option<CloseFrame>) -> tokio_lockgate::Result<()> {
        self.inner.close(frame).await
    }
}
