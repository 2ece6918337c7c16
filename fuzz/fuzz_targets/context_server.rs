//! Arbitrary bytes, cut into arbitrary reads, received by a server
//! `WebSocketContext` with small limits; see `lockgate_fuzz::run_context`
//! for the invariants checked.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lockgate::Role;

fuzz_target!(|data: &[u8]| lockgate_fuzz::run_context(data, Role::Server, false));
