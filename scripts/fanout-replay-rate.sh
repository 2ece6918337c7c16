#!/usr/bin/env bash
# Measures how fast a resuming client catches up, for the capacity model in
# fanout/README.md: from a node's memory, and from JetStream (a node started
# after the messages were stored, so its memory holds none of them).
#
#   bash scripts/fanout-replay-rate.sh [MESSAGES] [SIZE]   (default 10000 64)
#
# Starts 3 nats-servers as one JetStream cluster and 3 lockgate-fanout
# nodes with --history (scripts/fanout-cluster.sh), stops node 3, runs the
# replay-rate example (fanout/examples/replay-rate.rs) against nodes 1 and
# 2, starts node 3 again when it waits for it, and stops everything.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
messages=${1:-10000} size=${2:-64}
export FANOUT_DIR=${FANOUT_DIR:-$ROOT/target/fanout-replay-rate}
export FANOUT_HISTORY=${FANOUT_HISTORY:-$((messages * 2))}
cluster() { bash scripts/fanout-cluster.sh "$@"; }
trap 'cluster stop' EXIT
cargo build --release --quiet -p lockgate-fanout --bins --examples
RATE=${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/replay-rate
FANOUT_JETSTREAM=1 cluster start 3 >/dev/null
mapfile -t URLS < <(cluster urls)
cluster kill-node 3
out=$FANOUT_DIR/replay-rate.out
"$RATE" "$messages" "$size" "${URLS[0]}" "${URLS[1]}" --fresh "${URLS[2]}" >"$out" 2>&1 &
rate_pid=$!
for _ in $(seq 1 600); do
    grep -q '^waiting for' "$out" && break
    kill -0 "$rate_pid" 2>/dev/null || break
    sleep 0.1
done
grep -q '^waiting for' "$out" && cluster start-node 3 >/dev/null
wait "$rate_pid"
grep -v '^waiting for' "$out"
