//! What the test files share: running the loadgen binary.

use std::process::{Command, Output};

/// Runs loadgen with `args` to its end.
pub(crate) fn loadgen(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args(args)
        .output()
        .expect("loadgen runs")
}
