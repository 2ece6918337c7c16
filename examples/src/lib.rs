//! lockgate's blocking examples, a package of their own (`examples/*.rs`)
//! so that building one compiles lockgate and nothing of the core crate's
//! test and benchmark dependencies. There is no library: run them with
//! `cargo run --example echo-server`, `cargo run --example client`, or
//! `bash autobahn/run.sh` for the Autobahn server and client.
