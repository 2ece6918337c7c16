//! Helpers for non-blocking streams (tungstenite's `util`): turn "would
//! block" into `Ok(None)`.
//!
//! ```
//! use lockgate::util::NonBlockingResult;
//!
//! let would_block: lockgate::Result<()> =
//!     Err(std::io::Error::from(std::io::ErrorKind::WouldBlock).into());
//! assert!(matches!(would_block.no_block(), Ok(None)));
//! ```

use std::io;

use crate::error::Error;

/// An error that may only mean "would block".
pub trait NonBlockingError: Sized {
    /// `None` if the error is [`io::ErrorKind::WouldBlock`], else the
    /// error.
    fn into_non_blocking(self) -> Option<Self>;
}

impl NonBlockingError for io::Error {
    fn into_non_blocking(self) -> Option<Self> {
        (self.kind() != io::ErrorKind::WouldBlock).then_some(self)
    }
}

impl NonBlockingError for Error {
    fn into_non_blocking(self) -> Option<Self> {
        match self {
            Error::Io(error) => error.into_non_blocking().map(Error::Io),
            other => Some(other),
        }
    }
}

/// A result whose error may only mean "would block".
pub trait NonBlockingResult {
    /// The result with "would block" as `Ok(None)`.
    type Result;
    /// `Ok(Some(value))`, `Ok(None)` for "would block", or the error.
    ///
    /// # Errors
    ///
    /// Any error but "would block".
    fn no_block(self) -> Self::Result;
}

impl<T, E: NonBlockingError> NonBlockingResult for Result<T, E> {
    type Result = Result<Option<T>, E>;
    fn no_block(self) -> Self::Result {
        match self {
            Ok(value) => Ok(Some(value)),
            Err(error) => error.into_non_blocking().map_or(Ok(None), Err),
        }
    }
}
