#!/usr/bin/env bash
# The one test command (README "Testing"): formatting, lints, docs, every
# test and doc test, and Autobahn in both modes. It installs what it needs
# (the Autobahn runner's Python venv) on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo doc (warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps

step "cargo test (unit, integration, doc tests)"
cargo test --workspace

step "Autobahn conformance (server and client modes)"
bash autobahn/run.sh all
