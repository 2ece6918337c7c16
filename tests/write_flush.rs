//! The blocking driver against the conformance kit (kit/src/conformance):
//! the write/flush contract and the closing handshake, the same cases every
//! driver runs.

lockgate_kit::conformance_suite!(lockgate_kit::conformance::Blocking);
