//! [`PreparedMessage`]: one message, encoded once, written to many
//! connections.

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::{BufMut, Bytes, BytesMut};

use crate::frame::{FrameHeader, MAX_HEADER_LEN, OpCode, encoded_header_len};
use crate::message::Message;

/// A message prepared for writing to many connections: encode once,
/// deliver to thousands.
///
/// Cloning is cheap (a reference count) and the value is `Send + Sync`, so
/// one prepared message can be queued for every subscriber of a topic.
/// [`WebSocketContext::write_prepared`](crate::WebSocketContext::write_prepared)
/// and the drivers' `write_prepared` follow the same write/flush contract
/// as `write`, and put the same bytes on the wire.
///
/// What is shared between the connections it is written to:
///
/// - **Server role:** the whole frame, encoded on first use. Large frames
///   are queued by reference and go out with vectored writes; small ones
///   are copied, which costs less than sharing them.
/// - **Client role:** the payload; each connection masks its own copy, as
///   RFC 6455 requires a fresh key per frame.
/// - **permessage-deflate without context takeover** (in the direction the
///   connection compresses): the compressed payload, once per distinct
///   compression level and window size, computed by the first connection
///   that needs it. Connections **with** context takeover compress it
///   themselves, since the bytes depend on what they sent before.
///
/// ```
/// use lockgate::{Config, Message, PreparedMessage, Role, WebSocketContext};
///
/// let prepared = PreparedMessage::new(Message::text("tick 42"));
/// let mut connections: Vec<_> = (0..3)
///     .map(|_| WebSocketContext::new(Role::Server, Config::default()))
///     .collect();
/// for ctx in &mut connections {
///     ctx.write_prepared(&prepared)?;
///     assert_eq!(ctx.buffered_output(), 2 + 7);
/// }
/// # Ok::<(), lockgate::Error>(())
/// ```
#[derive(Clone)]
pub struct PreparedMessage {
    inner: Arc<Prepared>,
}

struct Prepared {
    message: Message,
    opcode: OpCode,
    payload: Bytes,
    /// The unmasked, uncompressed frame (server role).
    frame: OnceLock<Bytes>,
    /// Compressed frames (unmasked, RSV1 set), one per parameter set.
    compressed: CompressedFrames,
}

/// What determines the bytes of a message compressed without context
/// takeover. (zlib-rs has no memory-level setting, so that is not part of
/// it.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CompressionKey {
    pub(crate) level: u32,
    pub(crate) window_bits: u8,
}

/// Nearly every deployment has one parameter set: it is read without a
/// lock. Other sets go in a short list behind one.
#[derive(Default)]
struct CompressedFrames {
    first: OnceLock<(CompressionKey, Bytes)>,
    others: Mutex<Vec<(CompressionKey, Bytes)>>,
}

impl PreparedMessage {
    /// Prepares `msg` for writing to many connections. Nothing is encoded
    /// yet: each form of the frame is built by the first connection that
    /// needs it.
    pub fn new(msg: Message) -> Self {
        let (opcode, payload) = match &msg {
            Message::Text(text) => (OpCode::Text, text.as_bytes().clone()),
            Message::Binary(data) => (OpCode::Binary, data.clone()),
            Message::Ping(data) => (OpCode::Ping, data.clone()),
            Message::Pong(data) => (OpCode::Pong, data.clone()),
            Message::Close(_) => (OpCode::Close, Bytes::new()),
            // Written as a raw frame by each connection, never shared.
            Message::Frame(_) => (OpCode::Binary, Bytes::new()),
        };
        Self {
            inner: Arc::new(Prepared {
                message: msg,
                opcode,
                payload,
                frame: OnceLock::new(),
                compressed: CompressedFrames::default(),
            }),
        }
    }

    /// The message as given to [`new`](Self::new).
    pub fn message(&self) -> &Message {
        &self.inner.message
    }

    /// The length of the payload in bytes, uncompressed.
    pub fn len(&self) -> usize {
        self.inner.payload.len()
    }

    /// Whether the payload is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `a` and `b` are clones of the same prepared message.
    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        Arc::ptr_eq(&a.inner, &b.inner)
    }

    /// How many compressed forms were computed so far: one per distinct
    /// compression level and window size among the connections without
    /// context takeover it was written to.
    pub fn compressed_forms(&self) -> usize {
        let others = self
            .inner
            .compressed
            .others
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .len();
        usize::from(self.inner.compressed.first.get().is_some()) + others
    }

    pub(crate) fn opcode(&self) -> OpCode {
        self.inner.opcode
    }

    pub(crate) fn payload(&self) -> &Bytes {
        &self.inner.payload
    }

    /// The unmasked, uncompressed frame.
    pub(crate) fn frame(&self) -> &Bytes {
        self.inner
            .frame
            .get_or_init(|| encode_frame(self.inner.opcode, &self.inner.payload, false))
    }

    /// The unmasked frame compressed with `key`, compressing with
    /// `compress` (which returns the compressed payload) on first use.
    pub(crate) fn compressed_frame(
        &self,
        key: CompressionKey,
        compress: impl Fn(&[u8]) -> Bytes,
    ) -> Bytes {
        let prepared = &*self.inner;
        let build = || encode_frame(prepared.opcode, &compress(&prepared.payload), true);
        let (first_key, first) = prepared.compressed.first.get_or_init(|| (key, build()));
        if *first_key == key {
            return first.clone();
        }
        // Held while compressing, so each other set is compressed once too.
        let mut others = prepared
            .compressed
            .others
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((_, frame)) = others.iter().find(|(k, _)| *k == key) {
            return frame.clone();
        }
        let frame = build();
        others.push((key, frame.clone()));
        frame
    }
}

/// `header` + `payload` in one buffer, so a server writes it as one chunk.
fn encode_frame(opcode: OpCode, payload: &[u8], rsv1: bool) -> Bytes {
    let mut header = FrameHeader::new(opcode, payload.len() as u64);
    header.rsv1 = rsv1;
    let mut head = [0u8; MAX_HEADER_LEN];
    let head_len = header.encode(&mut head);
    debug_assert_eq!(head_len, encoded_header_len(payload.len() as u64, false));
    let mut frame = BytesMut::with_capacity(head_len + payload.len());
    frame.put_slice(&head[..head_len]);
    frame.put_slice(payload);
    frame.freeze()
}

impl fmt::Debug for PreparedMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreparedMessage")
            .field("message", &self.inner.message)
            .field("compressed_forms", &self.compressed_forms())
            .finish_non_exhaustive()
    }
}

impl From<Message> for PreparedMessage {
    fn from(msg: Message) -> Self {
        Self::new(msg)
    }
}
