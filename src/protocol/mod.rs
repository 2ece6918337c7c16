//! tungstenite's `protocol` module, for code written against it:
//! `lockgate::protocol::{Message, Role, WebSocket, WebSocketConfig,
//! CloseFrame}` and `lockgate::protocol::frame::coding::CloseCode` name
//! what `tungstenite::protocol::...` named.
//!
//! This module is the skin: tungstenite's paths over lockgate's core. It
//! re-exports or wraps the core's types and the core never imports it
//! (nothing under `frame/`, `codec/`, `proto/`, `deflate/` or
//! `handshake/`, nor the error and message types, names this module). Every
//! name here is one of lockgate's own types under tungstenite's path,
//! except what tungstenite's shape needs and the core has no use for:
//!
//! - [`WebSocketConfig`], tungstenite's struct with public fields, which
//!   converts into the core's [`Config`](crate::Config) (the conversions
//!   are here, in the skin);
//! - tungstenite's `std::io` methods on the core's raw frame types
//!   ([`FrameHeader::parse`](frame::FrameHeader::parse),
//!   [`len`](frame::FrameHeader::len) and
//!   [`format`](frame::FrameHeader::format),
//!   [`Frame::format`](frame::Frame::format)), since the core does no I/O.
//!
//! New code can use the crate root's and [`crate::frame`]'s names.

mod config;
pub mod frame;

pub use crate::config::Role;
pub use crate::message::{CloseFrame, Message};
pub use crate::proto::WebSocketContext;
pub use crate::websocket::WebSocket;
pub use config::{ConfigView, WebSocketConfig};
