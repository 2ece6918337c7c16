//! [`SkipThrough`]: the live queue of a resuming connection, without what
//! its replay already sent.

use tokio_lockgate::hub::PreparedSink;
use tokio_lockgate::{CloseFrame, PreparedMessage};

use super::position_of;

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
