//! The split halves of a tokio [`WebSocketStream`](crate::WebSocketStream).

use async_lockgate::driver;

use crate::runtime::Tokio;

/// The reading half of [`WebSocketStream::into_split`](driver::WebSocketStream::into_split):
/// `read` and `Stream` ([`driver::WebSocketReadHalf`] on [`Tokio`]).
pub type WebSocketReadHalf<S> = driver::WebSocketReadHalf<S, Tokio>;

/// The writing half of [`WebSocketStream::into_split`](driver::WebSocketStream::into_split):
/// `write`, `flush`, `send`, `close` and `Sink`
/// ([`driver::WebSocketWriteHalf`] on [`Tokio`]).
pub type WebSocketWriteHalf<S> = driver::WebSocketWriteHalf<S, Tokio>;
