//! The io_uring driver against the conformance kit (kit/src/conformance),
//! the same cases every driver runs: over the scripted mock (behind this
//! crate's completion I/O, so through the same owned-buffer transports as
//! a socket), the write/flush contract, the closing handshake and the cost
//! of assembly, through the whole stream and the split halves, each call
//! polled once and dropped when pending (so every case is also a
//! cancellation case).

lockgate_kit::async_conformance_suites!(uring_lockgate::Uring);
