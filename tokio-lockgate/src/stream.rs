//! [`WebSocketStream`]: async-lockgate's driver over tokio streams.

use async_lockgate::driver;

use crate::runtime::Tokio;

/// A WebSocket connection over a tokio stream (`AsyncRead + AsyncWrite +
/// Unpin`): [async-lockgate's driver](driver::WebSocketStream), whose
/// page lists its methods, the write/flush contract and what each method
/// keeps when cancelled, run on [`Tokio`].
///
/// # Examples
///
/// ```no_run
/// use tokio_lockgate::{Message, connect_async};
///
/// # async fn run() -> tokio_lockgate::Result<()> {
/// let (mut ws, _) = connect_async("ws://127.0.0.1:9001").await?;
/// for i in 0..64 {
///     ws.write(Message::text(format!("tick {i}"))).await?; // queued
/// }
/// ws.flush().await?; // one flush for the batch
/// let echo = ws.read().await?;
/// # let _ = echo; Ok(()) }
/// ```
pub type WebSocketStream<S> = driver::WebSocketStream<S, Tokio>;

/// The `send` and `flush` of a [`WebSocketStream`], reached through
/// `Deref` (see [`driver::SendFlush`] why).
pub type SendFlush<S> = driver::SendFlush<S, Tokio>;

#[cfg(test)]
mod tests {
    use lockgate::{Config, WebSocketContext};

    use super::*;

    #[test]
    fn a_parked_read_adds_one_pointer_to_its_task() {
        // Every idle connection's task holds this future for as long as it
        // waits: tokio sizes tasks in 128-byte steps, so bytes here decide
        // the step.
        let (a, _b) = tokio::io::duplex(64);
        let context = WebSocketContext::new(lockgate::Role::Server, Config::default());
        let mut ws = WebSocketStream::from_context(a, context);
        let read = ws.read();
        assert_eq!(std::mem::size_of_val(&read), std::mem::size_of::<usize>());
    }
}
