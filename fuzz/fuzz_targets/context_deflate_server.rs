//! As `context_server`, with permessage-deflate negotiated (window bits and
//! no-context-takeover from the input): compressed messages are inflated
//! under `max_message_size`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lockgate::Role;

fuzz_target!(|data: &[u8]| lockgate_fuzz::run_context(data, Role::Server, true));
