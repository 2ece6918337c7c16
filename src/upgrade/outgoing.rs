//! What a driver's I/O outcomes mean to an exchange, written once for
//! the blocking driver and the async ones: the bytes of a
//! [`Step::Transmit`](super::Step::Transmit) on their way out
//! ([`Outgoing`]), and which read results an exchange is told about
//! ([`Exchange::handle_read`](super::Exchange::handle_read)). Each driver
//! only does the I/O and waits its own way.

use std::io;

/// The bytes of a [`Step::Transmit`](super::Step::Transmit) on their way
/// out: what is left to write, then the flush still owed. A driver writes
/// [`unwritten`](Self::unwritten) and reports each result with
/// [`wrote`](Self::wrote) until nothing is left, flushes, and says so
/// with [`flushed`](Self::flushed).
#[derive(Debug, Default)]
pub struct Outgoing {
    bytes: Vec<u8>,
    /// How much of `bytes` is written.
    written: usize,
    /// `bytes` are (being) written; the stream still owes a flush.
    flush_owed: bool,
}

impl Outgoing {
    /// The bytes of a transmit, none of them written yet.
    pub fn new(bytes: Vec<u8>) -> Self {
        Self {
            bytes,
            written: 0,
            flush_owed: true,
        }
    }

    /// What is left to write (empty once all of it is: then only the
    /// flush is owed).
    pub fn unwritten(&self) -> &[u8] {
        &self.bytes[self.written..]
    }

    /// Whether anything is owed: bytes to write or the flush after them.
    pub fn is_pending(&self) -> bool {
        self.flush_owed
    }

    /// Counts one write's result: `Ok(n)` of the bytes were taken.
    ///
    /// # Errors
    ///
    /// A stream that takes none of a non-empty write (`Ok(0)`) fails
    /// with [`io::ErrorKind::WriteZero`]; an error is handed back, but
    /// [`io::ErrorKind::Interrupted`], which only means "write again".
    pub fn wrote(&mut self, result: io::Result<usize>) -> io::Result<()> {
        match result {
            Ok(0) if !self.unwritten().is_empty() => Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                self.written = (self.written + n).min(self.bytes.len());
                Ok(())
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// The stream is flushed: the transmit is over, and its buffer given
    /// back.
    pub fn flushed(&mut self) {
        *self = Self::default();
    }
}
