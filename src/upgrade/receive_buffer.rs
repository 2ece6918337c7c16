//! [`ReceiveBuffer`]: what a driver reads an [`Exchange`]'s input into.

#[cfg(doc)]
use super::exchange::{Exchange, Step};

/// The size of the first read, and the least any read is offered: one read
/// for a usual 101 response or a small upgrade request.
const MIN_READ: usize = 256;

/// The most one read is offered (what a read of the opening handshake has
/// always been offered): a head of up to 64 KiB still takes a handful of
/// reads.
const MAX_READ: usize = 4096;

/// The buffer a driver reads an [`Exchange`]'s input into before handing
/// it to [`Exchange::receive`]: sized by what the peer actually sends, and
/// held only while a read is under way.
///
/// A connection in its opening handshake mostly waits, and a server may
/// have thousands waiting at once (a slowloris peer sends its request a
/// byte at a time). So the first read is offered 256 bytes; a read that
/// fills its room doubles the next one (up to 4 KiB), and one that uses
/// less than a quarter of it halves the next one, so the bytes zeroed for
/// reads stay proportional to the bytes received. Between reads, a driver
/// that is about to wait calls [`release`](Self::release): a handshake
/// waiting for its peer then holds no read buffer at all, only the head
/// received so far.
///
/// # Examples
///
/// One read, as a driver does it for [`Step::Receive`]:
///
/// ```
/// use std::io::Read;
/// use lockgate::handshake::ReceiveBuffer;
///
/// let mut peer: &[u8] = b"GET /chat HTTP/1.1\r\n";
/// let mut buf = ReceiveBuffer::new();
/// let n = peer.read(buf.spare())?;
/// assert_eq!(buf.filled(n), b"GET /chat HTTP/1.1\r\n");
/// // Nothing more yet: give the memory back while waiting.
/// buf.release();
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct ReceiveBuffer {
    /// Zeroed room for a read; empty while released.
    buf: Vec<u8>,
    /// What the next read is offered; 0 before the first read.
    size: usize,
}

impl ReceiveBuffer {
    /// An empty buffer; nothing is allocated until the first
    /// [`spare`](Self::spare).
    pub const fn new() -> Self {
        Self {
            buf: Vec::new(),
            size: 0,
        }
    }

    /// Room for the next read, zeroed: read into it, then report how much
    /// was read with [`filled`](Self::filled). Allocated here if it was
    /// released; resized here if the last read changed its size.
    pub fn spare(&mut self) -> &mut [u8] {
        let size = self.size.max(MIN_READ);
        if self.buf.len() != size {
            if self.buf.capacity() < size {
                // A fresh, zeroed allocation rather than a resize: the old
                // bytes were consumed and need not be copied.
                self.buf = vec![0; size];
            } else {
                self.buf.resize(size, 0);
            }
        }
        &mut self.buf
    }

    /// A read put `n` bytes at the start of [`spare`](Self::spare)'s room:
    /// returns them, to hand to [`Exchange::receive`], and sizes the next
    /// read by how much of its room this one used.
    ///
    /// # Panics
    ///
    /// If `n` is larger than that room (a read cannot return more than it
    /// was given).
    pub fn filled(&mut self, n: usize) -> &[u8] {
        let offered = self.buf.len();
        assert!(n <= offered, "read {n} bytes into {offered} bytes of room");
        if n == offered {
            self.size = (offered * 2).min(MAX_READ);
        } else if n < offered / 4 {
            self.size = (offered / 2).max(MIN_READ);
        } else {
            self.size = offered;
        }
        if self.size < offered {
            // Smaller from now on: the extra room is given back at once.
            self.buf.truncate(n.max(self.size));
            self.buf.shrink_to(self.size);
        }
        &self.buf[..n]
    }

    /// Gives the memory back, keeping the size the next read is offered:
    /// call it when the stream has nothing to read and the driver is about
    /// to wait.
    pub fn release(&mut self) {
        self.buf = Vec::new();
    }

    /// Bytes allocated now.
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_allocated_until_a_read_and_after_a_release() {
        let mut buf = ReceiveBuffer::new();
        assert_eq!(buf.capacity(), 0);
        assert_eq!(buf.spare().len(), MIN_READ);
        buf.spare()[..3].copy_from_slice(b"GET");
        assert_eq!(buf.filled(3), b"GET");
        buf.release();
        assert_eq!(buf.capacity(), 0);
        assert_eq!(buf.spare(), &[0; MIN_READ][..], "zeroed again");
    }

    #[test]
    fn the_room_follows_what_reads_deliver() {
        let mut buf = ReceiveBuffer::new();
        // (bytes the read delivers, what the next read is offered)
        let reads = [
            (256, 512),
            (512, 1024),
            (1024, 2048),
            (2048, 4096),
            (4096, 4096),
            (2000, 4096),
            (1000, 2048),
            (1, 1024),
            (1, 512),
            (1, 256),
            (1, 256),
            (256, 512),
            (100, 256),
        ];
        for (read, next) in reads {
            let room = buf.spare();
            room[..read].fill(b'x');
            assert_eq!(buf.filled(read).len(), read);
            assert_eq!(buf.spare().len(), next, "after a read of {read}");
            assert!(buf.capacity() <= next.max(read), "after a read of {read}");
        }
    }

    #[test]
    #[should_panic = "read 257 bytes into 256 bytes of room"]
    fn a_read_cannot_overflow_its_room() {
        let mut buf = ReceiveBuffer::new();
        let _ = buf.spare();
        let _ = buf.filled(257);
    }
}
