//! The examples of the futures-io entry points, run as programs on smol:
//! each is a server and a client in one process on 127.0.0.1:0, must print
//! what it shows, and exit with status 0.

use lockgate_kit::programs::Program;

/// Runs example `name` to its end (see [`Program::runs_to_completion`]).
fn runs_to_completion(name: &'static str, lines: &[&str]) {
    let _ = Program::start(name, &[]).runs_to_completion(lines);
}

#[test]
fn connect_async_and_accept_async() {
    runs_to_completion(
        "async-connect-accept",
        &[
            "client: connected to ws://127.0.0.1:",
            "client: got hello, smol",
            "closed cleanly",
        ],
    );
}

#[test]
fn client_async_over_a_dialled_stream() {
    runs_to_completion(
        "smol-echo",
        &[
            "smol-echo listening on",
            "echoed: message 9",
            "closed cleanly",
        ],
    );
}
