//! [`WebSocket`]: the `std::io` driver.

use std::io::{self, IoSlice, Read, Write};

use crate::config::{Config, Role};
use crate::error::{Error, Result};
use crate::message::{CloseFrame, Message};
use crate::proto::WebSocketContext;

/// The most slices one vectored write hands to the socket.
const MAX_IOVECS: usize = 64;

/// A WebSocket over any `Read + Write` stream, blocking or non-blocking.
///
/// # The write/flush contract
///
/// - [`write`](Self::write) encodes a message into the out buffer and never
///   flushes. It writes to the stream only once the buffer holds
///   `write_buffer_size` bytes.
/// - [`flush`](Self::flush) writes the whole buffer and flushes the stream.
/// - [`send`](Self::send) is `write` then `flush`.
/// - A pong answering a ping, or the reply to a close, is written **and
///   flushed** by the next `read`, `write` or `flush`, behind any data
///   already buffered. `read` tries to send it before returning. Nothing
///   else is flushed implicitly.
///
/// # Non-blocking streams
///
/// Every method may fail with [`io::ErrorKind::WouldBlock`] (see
/// [`Error::is_would_block`]); call it again once the stream is ready. No
/// byte is lost or sent twice. For `write`/`send`, a would-block error means
/// the message **was** accepted into the buffer; only
/// [`Error::WriteBufferFull`] hands a message back.
///
/// # Examples
///
/// ```no_run
/// use lockgate::{Message, Role, Config, WebSocket};
/// # fn run(stream: std::net::TcpStream) -> lockgate::Result<()> {
/// let mut ws = WebSocket::from_raw_socket(stream, Role::Server, Config::default());
/// for i in 0..100 {
///     ws.write(Message::text(format!("event {i}")))?; // queued, not flushed
/// }
/// ws.flush()?; // one flush for the whole batch
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct WebSocket<S> {
    stream: S,
    context: WebSocketContext,
}

impl<S> WebSocket<S> {
    /// Wraps a stream whose opening handshake is already done.
    pub fn from_raw_socket(stream: S, role: Role, config: Config) -> Self {
        Self::from_context(stream, WebSocketContext::new(role, config))
    }

    /// Like [`from_raw_socket`](Self::from_raw_socket), for a stream from
    /// which `already_read` bytes past the handshake were consumed: they are
    /// the start of the frame stream.
    pub fn from_partially_read(stream: S, already_read: &[u8], role: Role, config: Config) -> Self {
        Self::from_context(
            stream,
            WebSocketContext::after_handshake(role, config, None, already_read),
        )
    }

    /// Drives an existing context over `stream`.
    pub fn from_context(stream: S, context: WebSocketContext) -> Self {
        Self { stream, context }
    }

    /// The stream.
    pub fn get_ref(&self) -> &S {
        &self.stream
    }

    /// The stream, mutably. Reading or writing it directly corrupts the
    /// connection.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.stream
    }

    /// Gives back the stream; buffered input and output are dropped.
    pub fn into_inner(self) -> S {
        self.stream
    }

    /// The protocol state.
    pub fn context(&self) -> &WebSocketContext {
        &self.context
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        self.context.config()
    }

    /// Replaces the configuration.
    pub fn set_config(&mut self, config: Config) {
        self.context.set_config(config);
    }

    /// Whether more messages can be read.
    pub fn can_read(&self) -> bool {
        !self.context.is_terminated()
    }

    /// Bytes written but not yet handed to the stream.
    pub fn buffered_output(&self) -> usize {
        self.context.output_len()
    }
}

impl<S: Read + Write> WebSocket<S> {
    /// Reads the next message.
    ///
    /// Data messages, pings, pongs and the peer's close frame are returned;
    /// pongs and close replies are queued and sent for you. Only buffered
    /// output that is owed a flush (a pong or close reply) is written first.
    ///
    /// # Errors
    ///
    /// - [`Error::ConnectionClosed`] once the closing handshake is complete,
    ///   then [`Error::AlreadyClosed`]. RFC 6455 then wants the TCP
    ///   connection closed: `std::io::Write` has no shutdown, so drop the
    ///   `WebSocket` (or call `shutdown` on the stream from
    ///   [`get_ref`](Self::get_ref)); some peers wait for that FIN.
    /// - [`Error::Protocol`] / [`Error::Capacity`]: the peer broke the
    ///   protocol or a limit; the matching close frame was sent (or queued,
    ///   if the stream would block) and the connection is over.
    /// - [`Error::Io`], including would-block on non-blocking streams (call
    ///   again; nothing is lost).
    pub fn read(&mut self) -> Result<Message> {
        loop {
            self.send_owed(self.context.wants_input())?;
            match self.context.next_message() {
                Ok(Some(msg)) => {
                    if self.context.has_pending_system_frame() {
                        // The message is already taken from the buffer; an
                        // error here resurfaces on the next call instead of
                        // losing it.
                        let _ = self.send_owed(true);
                    }
                    return Ok(msg);
                }
                Ok(None) if self.context.wants_input() => self.fill_input()?,
                // Closing: what is left is draining our output.
                Ok(None) => self.flush_output()?,
                Err(e) => {
                    if e.close_code().is_some() {
                        // Best effort: the connection is failing anyway.
                        let _ = self.send_owed(false);
                    }
                    return Err(e);
                }
            }
        }
    }

    /// Queues `msg` in the out buffer, without flushing. Writes to the
    /// stream only if the buffer reached `write_buffer_size` or a pong/close
    /// reply is owed.
    ///
    /// # Errors
    ///
    /// - [`Error::WriteBufferFull`] with `msg`, untouched: flush and retry.
    /// - Errors of [`WebSocketContext::write`].
    /// - [`Error::Io`] from writing out: the message **was** queued.
    pub fn write(&mut self, msg: Message) -> Result<()> {
        self.context.prepare_output();
        self.context.write(msg)?;
        self.after_write()
    }

    /// Writes out what a queued message made due: everything and a flush if
    /// a pong or close is owed, everything without a flush once the buffer
    /// reached `write_buffer_size`.
    fn after_write(&mut self) -> Result<()> {
        if self.context.flush_owed() {
            self.flush_output()
        } else if self.context.should_write_out() {
            self.write_output()
        } else {
            Ok(())
        }
    }

    /// [`write`](Self::write), but never compressed, whatever
    /// permessage-deflate negotiated (see
    /// [`WebSocketContext::write_uncompressed`]).
    ///
    /// # Errors
    ///
    /// As for [`write`](Self::write).
    pub fn write_uncompressed(&mut self, msg: Message) -> Result<()> {
        self.context.prepare_output();
        self.context.write_uncompressed(msg)?;
        self.after_write()
    }

    /// Writes everything buffered and flushes the stream.
    ///
    /// # Errors
    ///
    /// [`Error::Io`]; on would-block, call again later.
    pub fn flush(&mut self) -> Result<()> {
        self.context.prepare_output();
        self.flush_output()
    }

    /// [`write`](Self::write) then [`flush`](Self::flush).
    ///
    /// # Errors
    ///
    /// As for both.
    pub fn send(&mut self, msg: Message) -> Result<()> {
        self.write(msg)?;
        self.flush()
    }

    /// Starts the closing handshake: queues a close frame and flushes. Keep
    /// calling [`read`](Self::read) until it returns
    /// [`Error::ConnectionClosed`] to complete the handshake; if the flush
    /// would block, `read` (or `flush`) finishes sending the close frame.
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyClosed`] once the connection is over; [`Error::Io`].
    pub fn close(&mut self, frame: Option<CloseFrame>) -> Result<()> {
        self.context.close(frame)?;
        self.flush()
    }

    /// Writes and flushes an owed pong or close reply. With `tolerate_block`,
    /// a stream that cannot take it now is not an error: reading goes on and
    /// a later call retries.
    fn send_owed(&mut self, tolerate_block: bool) -> Result<()> {
        self.context.prepare_output();
        if !self.context.flush_owed() {
            return Ok(());
        }
        match self.flush_output() {
            Err(e) if tolerate_block && e.is_would_block() => Ok(()),
            other => other,
        }
    }

    /// Writes and flushes everything, including a pong that was held back
    /// while an earlier one was still unflushed.
    fn flush_output(&mut self) -> Result<()> {
        loop {
            self.write_output()?;
            loop {
                match self.stream.flush() {
                    Ok(()) => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e.into()),
                }
            }
            self.context.on_flushed();
            if !self.context.has_pending_system_frame() {
                return Ok(());
            }
            self.context.prepare_output();
        }
    }

    /// Writes the out buffer to the stream, one vectored write per call
    /// when it spans several slices.
    fn write_output(&mut self) -> Result<()> {
        while self.context.output_len() > 0 {
            let written = if self.context.output_chunk_count() > 1 {
                let mut slices = [IoSlice::new(&[]); MAX_IOVECS];
                let n = self.context.output_chunks(&mut slices);
                self.stream.write_vectored(&slices[..n])
            } else {
                self.stream.write(self.context.output_chunk())
            };
            match written {
                Ok(0) => return Err(Error::Io(io::ErrorKind::WriteZero.into())),
                Ok(n) => self.context.advance_output(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// One read from the stream into the context.
    fn fill_input(&mut self) -> Result<()> {
        // The read may block for as long as the peer is silent.
        self.context.on_read_wait();
        loop {
            let spare = self.context.input_spare();
            let result = self.stream.read(spare);
            let n = *result.as_ref().unwrap_or(&0);
            self.context.commit_input(n);
            match result {
                Ok(0) => return Err(self.context.on_eof()),
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}
