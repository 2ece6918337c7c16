#!/usr/bin/env bash
# The one test command (README "Testing"): formatting, lints, docs, every
# test and doc test of both crates (with and without TLS), interop with
# Python `websockets` and Node `ws`, and Autobahn in both modes through both
# drivers. It installs what it needs on a fresh machine: the Autobahn
# runner's venv (PyPI) and the interop peers (PyPI, npm registry).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy -D warnings (default features, then TLS)"
cargo clippy --all-targets -- -D warnings
cargo clippy -p tokio-lockgate --all-targets --features rustls -- -D warnings

step "cargo doc (warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps

step "install interop peers (Python websockets, Node ws)"
bash scripts/install-interop-peers.sh

step "cargo test (unit, integration, interop, doc tests)"
# One package per invocation: both have examples named client, echo-server,
# autobahn-*, whose binaries would collide in a single build.
cargo test -p lockgate
cargo test -p tokio-lockgate
cargo test -p tokio-lockgate --features rustls --test tls

step "Autobahn conformance: blocking driver (server and client modes)"
bash autobahn/run.sh all

step "Autobahn conformance: tokio adapter (server and client modes)"
AUTOBAHN_PACKAGE=tokio-lockgate AUTOBAHN_SUFFIX=-tokio bash autobahn/run.sh all
