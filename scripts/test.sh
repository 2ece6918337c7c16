#!/usr/bin/env bash
# The one test command (README "Testing"): formatting, lints, docs, every
# test and doc test of the three crates (lockgate, tokio-lockgate,
# async-lockgate; with and without TLS, the core also
# without its default features), the comparison benchmarks' lints, every
# fuzz target for a bounded time (about 3 minutes in all), interop
# with Python `websockets` and Node `ws` (package lockgate-interop),
# fan-out across processes through a real NATS server (lockgate-fanout and
# loadgen's broadcast mode, scripts/fanout-test.sh), and Autobahn in both
# modes through all three drivers, and the websocket tests of five web
# frameworks built on tokio-tungstenite, renamed (from the cargo registry). It installs
# what it needs on a fresh machine:
# the Autobahn runner's venv (PyPI), the interop peers (PyPI, npm registry)
# nats-server, tinyproxy, stunnel4, microsocks and chromium (Debian's packages),
# and pproxy (PyPI).
#
# A plain `cargo test` runs everything of the default members that needs
# nothing but cargo: lockgate-interop, lockgate-fanout, lockgate-loadgen and
# bench-peers are not default members, and are run here by name.
#
# `scripts/test.sh --quick` is the tier for a change in progress: formatting,
# the main clippy builds, every unit, integration and doc test of the three
# crates (the proxy and browser tests skip when their programs are absent,
# as in a plain `cargo test`) and a fuzz smoke of every target. It installs
# nothing. Measured with `time bash scripts/test.sh --quick` on the 2-core
# development machine with two CPU-bound loops running beside it and other
# builds sharing it (load average 4.5 to 7), 2026-11-28: 8 min 28 s with
# warm target directories after a change to src/lib.rs (clippy 91 s, tests
# 182 s, fuzz smoke 233 s, the fuzz targets rebuilt); 22 min 55 s with the
# fuzz crate's target directory cold (building libFuzzer and the targets
# took 836 s of it). No test asserts on elapsed wall-clock time, so load
# makes the tier slower, never failing. The full run stays the CI command.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=false
case "${1:-}" in
    --quick) quick=true ;;
    "") ;;
    *) echo "usage: scripts/test.sh [--quick]" >&2; exit 2 ;;
esac

# Incremental caches only help rebuilds; a CI run builds once, and they
# were a third of its target directory (2.5 of 7.7 GiB).
export CARGO_INCREMENTAL=0

started=$SECONDS
step() { printf '\n==> [%d s] %s\n' "$((SECONDS - started))" "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check
(cd fuzz && cargo fmt -- --check)

if $quick; then
    step "quick: cargo clippy -D warnings (default features; TLS, axum, metrics and tracing)"
    cargo clippy --all-targets -- -D warnings
    cargo clippy -p lockgate --all-targets --features rustls-tls-webpki-roots,native-tls,url,metrics,tracing -- -D warnings
    cargo clippy -p tokio-lockgate --all-targets --features axum,rustls,native-tls,metrics,tracing -- -D warnings
    cargo clippy -p lockgate-kit --all-targets --all-features -- -D warnings
    cargo clippy -p async-lockgate --lib --no-default-features -- -D warnings
    cargo clippy -p async-lockgate --all-targets --features rustls -- -D warnings

    step "quick: cargo test (unit, integration, doc tests of the three crates)"
    cargo test -p lockgate -p lockgate-examples -p tokio-lockgate -p async-lockgate
    cargo test -p lockgate -p tokio-lockgate --features lockgate/metrics,lockgate/tracing,tokio-lockgate/metrics,tokio-lockgate/tracing --lib --test metrics --test rate_limits

    step "quick: fuzz smoke, seeds up to date and every target for a few seconds"
    (cd fuzz && cargo run --quiet --example gen_corpus -- --check)
    FUZZ_SECONDS_PER_TARGET=${FUZZ_SECONDS_PER_TARGET:-4} bash scripts/fuzz.sh

    step "done (quick tier)"
    exit 0
fi

step "cargo clippy -D warnings (default features, TLS, no default features, bench-peers, interop)"
cargo clippy --all-targets -- -D warnings
cargo clippy -p tokio-lockgate --all-targets --features rustls -- -D warnings
cargo clippy -p tokio-lockgate --all-targets --features hyper -- -D warnings
cargo clippy -p tokio-lockgate --all-targets --features axum,rustls -- -D warnings
cargo clippy -p lockgate --all-targets --no-default-features -- -D warnings
cargo clippy -p lockgate --all-targets --features rustls-tls-webpki-roots,native-tls,url -- -D warnings
cargo clippy -p tokio-lockgate --all-targets --features native-tls,url -- -D warnings
# Metrics and tracing, together and each alone (their cfg combinations).
cargo clippy -p lockgate --all-targets --features metrics,tracing -- -D warnings
cargo clippy -p lockgate --lib --features metrics -- -D warnings
cargo clippy -p lockgate --lib --features tracing -- -D warnings
cargo clippy -p tokio-lockgate --all-targets --features metrics,tracing,axum -- -D warnings
cargo clippy -p bench-peers --all-targets -- -D warnings
cargo clippy -p bench-peers --all-targets --features metrics -- -D warnings
# The scale floors hold bench-peers' only unsafe code (the io_uring floor's
# provided buffers); their tests run it over loopback.
cargo test -p bench-peers --bin bench-peers floor
cargo clippy -p lockgate-interop --all-targets -- -D warnings
cargo clippy -p lockgate-fanout -p lockgate-loadgen --all-targets -- -D warnings
cargo clippy -p lockgate-kit --all-targets -- -D warnings
cargo clippy -p lockgate-kit --all-targets --all-features -- -D warnings
# async-lockgate as tokio-lockgate uses it: the runtime-generic driver only.
cargo clippy -p async-lockgate --lib --no-default-features -- -D warnings
cargo clippy -p async-lockgate --all-targets --features rustls -- -D warnings
cargo clippy -p uring-lockgate --all-targets -- -D warnings
# The fuzz crate (not a workspace member): once as a normal build, once
# with the cfg that compiles the targets using lockgate::fuzz_api.
(cd fuzz && cargo clippy --all-targets -- -D warnings)
(cd fuzz && RUSTFLAGS="--cfg fuzzing" cargo clippy --all-targets -- -D warnings)

step "cargo doc (warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p lockgate-fanout
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p lockgate-kit --all-features
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p tokio-lockgate --features axum,rustls
# As docs.rs builds them (every feature; `docsrs` is for nightly's
# doc(cfg) notes and is not set here).
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p lockgate -p tokio-lockgate -p async-lockgate --all-features

step "cargo package: the three crates package and build from what they ship"
# cargo verifies tokio-lockgate against the lockgate and async-lockgate it
# just packaged,
# through a local registry in the target directory, and unpacks that
# registry's crates under $CARGO_HOME/registry/src/-<hash of its path>. An
# unpacked crate is never unpacked again, so a fixed target directory on a
# machine that keeps $CARGO_HOME (a CI host checking out to the same path
# every run) verifies against an earlier run's lockgate. A new directory
# each run gives a new hash; its unpacked copies are removed afterwards.
mkdir -p target
package_dir=$(mktemp -d "$PWD/target/package-check.XXXXXX")
cargo package -p lockgate -p async-lockgate -p tokio-lockgate --allow-dirty --target-dir "$package_dir"
rm -rf "$package_dir"
for unpacked in "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/; do
    [ -d "$unpacked" ] || continue
    # Local registries only hold what `cargo package` put there: ours.
    if [ -z "$(ls -A "$unpacked" | grep -v -E '^((tokio|async)-)?lockgate-')" ]; then
        rm -rf "$unpacked"
    fi
done

step "cargo build and test, lockgate without default features (no permessage-deflate)"
cargo build -p lockgate --no-default-features
cargo test -p lockgate --no-default-features

step "the first run stays light: loadgen's build is at most 80 crates; fan-out builds and refuses a broker without NATS"
# The crates `cargo build --release -p lockgate-loadgen` compiles (one per
# package: cargo tree lists what cargo's Compiling lines would).
crates=$(cargo tree -p lockgate-loadgen -e normal,build --prefix none | sed 's/ (.*//' | sort -u | wc -l)
echo "lockgate-loadgen builds $crates crates"
if [ "$crates" -gt 80 ]; then
    echo "lockgate-loadgen pulls in $crates crates (the budget is 80): see 'cargo tree -p lockgate-loadgen'" >&2
    exit 1
fi
cargo clippy -p lockgate-fanout --no-default-features --lib -- -D warnings
cargo test -p lockgate-fanout --no-default-features --lib

step "install the proxies the proxy tests tunnel through (tinyproxy, stunnel4, microsocks, pproxy) and a browser (chromium)"
bash scripts/install-proxy.sh
bash scripts/install-pproxy.sh
bash scripts/install-debian-package.sh chromium chromium
# From here on, a missing proxy program or Chromium fails the tests that use
# them instead of skipping them.
export LOCKGATE_REQUIRE_TINYPROXY=1 LOCKGATE_REQUIRE_CHROMIUM=1 LOCKGATE_REQUIRE_PROXIES=1

step "cargo test (unit, integration, doc tests)"
# Each builds its package's examples first: tests run some as programs
# (accept_backoff.rs, axum_example.rs).
cargo test -p lockgate -p lockgate-examples
cargo test -p tokio-lockgate
cargo test -p async-lockgate
# Again with TLS and the axum/hyper integration: the wss:// tests, the
# axum example over HTTP/1.1, h2c and h2 over TLS (and from headless
# Chromium, which picks HTTP/2), and their doc tests.
cargo test -p tokio-lockgate --features axum,rustls
# The blocking driver's wss:// (rustls and native-tls) and the TLS docs.
cargo test -p lockgate --features rustls-tls-webpki-roots,native-tls,url --lib --test tls_connect --test kit
cargo test -p tokio-lockgate --features native-tls,hyper --test kit --test h2_client
# The futures-io driver's wss:// and https:// proxies (futures-rustls).
cargo test -p async-lockgate --features rustls --test kit
# The io_uring driver (not a default member: Linux, a kernel that allows
# io_uring): the kit's mock and socket cases, its doc test.
cargo test -p uring-lockgate
cargo test -p lockgate --features rustls-tls-webpki-roots,native-tls,url --doc
# Counters and spans: exact counts for known workloads, each close and
# timeout and refusal, the hub's counters, a drain's closes.
cargo test -p lockgate --features metrics,tracing --lib --test metrics --test rate_limits
# `--test` alone builds no example: the examples these run as programs
# are built first (production_example.rs: chat through the hub, 403 for
# another site's page, /metrics, SIGTERM's drain; entry_point_examples.rs:
# every entry-point example, observe included, which needs these features).
cargo build -p tokio-lockgate --features metrics,tracing,axum --examples
cargo test -p tokio-lockgate --features metrics,tracing,axum --lib --test metrics --test drain --test rate_limits --test production_example --test entry_point_examples

step "README commands, run as written: servers answered by the README's clients (scripts/readme-commands.sh)"
bash scripts/readme-commands.sh

step "fuzz: seeds up to date, then every target for a bounded time (scripts/fuzz.sh)"
(cd fuzz && cargo run --quiet --example gen_corpus -- --check)
bash scripts/fuzz.sh

step "install interop peers (Python websockets, Node ws)"
bash scripts/install-interop-peers.sh

step "interop tests (lockgate-interop: a missing peer fails them)"
cargo test -p lockgate-interop

step "tungstenite compatibility: the 14 upstream examples renamed (compat/), built with warnings as errors, run against each other, Python websockets and Autobahn 1-7, 10"
bash scripts/port-tungstenite.sh --check
bash compat/build-examples.sh
cargo clippy -p lockgate-compat --tests -- -D warnings
# The upstream examples listen on the ports they were written with (3012,
# 8080, 9001, 9002): they run in a private network namespace, built and
# installed before, so the host's ports need not be free.
cargo test -p lockgate-compat --no-run
bash compat/run-autobahn.sh --prepare
bash scripts/private-network.sh cargo test -p lockgate-compat
bash scripts/private-network.sh bash compat/run-autobahn.sh

step "web frameworks built on tokio-tungstenite: their websocket tests, renamed, on tokio-lockgate (scripts/framework-suites.sh)"
# axum, warp, poem, tokio-tungstenite-wasm, salvo_extra and hyper-tungstenite from the cargo registry;
# the summary gives each framework's passed and failed tests.
bash scripts/framework-suites.sh

step "fan-out across processes: nats-server, 2 lockgate-fanout nodes, loadgen broadcast, broker killed and restarted (scripts/fanout-test.sh)"
bash scripts/fanout-test.sh

# kosoku runs four server-mode cases at once (each driver serves many
# connections anyway): 127 s instead of 245 s for the futures-io driver's
# 517 cases, same results. Client mode runs one case at a time, as the
# examples do.
export AUTOBAHN_PARALLELISM=${AUTOBAHN_PARALLELISM:-4}

step "Autobahn conformance: blocking driver (server and client modes)"
bash autobahn/run.sh all

step "Autobahn conformance: tokio adapter (server and client modes)"
AUTOBAHN_PACKAGE=tokio-lockgate AUTOBAHN_SUFFIX=-tokio bash autobahn/run.sh all

step "Autobahn conformance: async-lockgate's futures-io driver on smol (server and client modes)"
AUTOBAHN_PACKAGE=async-lockgate AUTOBAHN_SUFFIX=-async bash autobahn/run.sh all

step "Autobahn conformance: uring-lockgate's io_uring driver (server and client modes)"
AUTOBAHN_PACKAGE=uring-lockgate AUTOBAHN_SUFFIX=-uring bash autobahn/run.sh all

step "done"
