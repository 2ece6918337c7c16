//! [`PreparedMessage`]: one message, encoded once, written to many
//! connections.

use std::fmt;
use std::sync::Arc;

use crate::message::Message;

/// A message prepared for writing to many connections: encode once,
/// deliver to thousands.
///
/// Cloning is cheap (a reference count) and the value is `Send + Sync`, so
/// one prepared message can be queued for every subscriber of a topic.
/// [`WebSocketContext::write_prepared`](crate::WebSocketContext::write_prepared)
/// and the drivers' `write_prepared` follow the same write/flush contract
/// as `write`.
#[derive(Clone)]
pub struct PreparedMessage {
    inner: Arc<Prepared>,
}

struct Prepared {
    message: Message,
}

impl PreparedMessage {
    /// Prepares `msg` for writing to many connections.
    pub fn new(msg: Message) -> Self {
        Self {
            inner: Arc::new(Prepared { message: msg }),
        }
    }

    /// The message as given to [`new`](Self::new).
    pub fn message(&self) -> &Message {
        &self.inner.message
    }

    /// The length of the payload in bytes, uncompressed.
    pub fn len(&self) -> usize {
        self.inner.message.len()
    }

    /// Whether the payload is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl fmt::Debug for PreparedMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreparedMessage")
            .field("message", &self.inner.message)
            .finish_non_exhaustive()
    }
}

impl From<Message> for PreparedMessage {
    fn from(msg: Message) -> Self {
        Self::new(msg)
    }
}
