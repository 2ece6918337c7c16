//! tungstenite's `protocol` module, for code written against it:
//! `lockgate::protocol::{Message, Role, WebSocket, WebSocketConfig,
//! CloseFrame}` and `lockgate::protocol::frame::coding::CloseCode` name
//! what `tungstenite::protocol::...` named.
//!
//! Everything here but [`WebSocketConfig`] and the [`frame`] module's
//! [`Frame`](frame::Frame) and [`FrameHeader`](frame::FrameHeader) is one
//! of lockgate's own types under tungstenite's path; new code can use the
//! crate root's names.

mod config;
pub mod frame;

pub use crate::config::Role;
pub use crate::message::{CloseFrame, Message};
pub use crate::proto::WebSocketContext;
pub use crate::websocket::WebSocket;
pub use config::WebSocketConfig;
