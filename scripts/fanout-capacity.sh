#!/usr/bin/env bash
# Measures a local broadcast domain for the capacity model in
# fanout/README.md: deliveries per second per node, and the CPU time of each
# node and of the broker per delivery, from /proc.
#
#   bash scripts/fanout-capacity.sh NODES SUBSCRIBERS PUBLISHERS MESSAGES [SIZE] [RATE]
#
# With FANOUT_JETSTREAM=1 the domain is 3 nats-servers as one JetStream
# cluster and nodes with --history (FANOUT_HISTORY, default 10000): every
# message is stored (3 replicas) before it is delivered, and the broker's
# line is the three servers'.
#
# RATE: messages per second per publisher (default: as fast as their
# window allows, which saturates the machine; latency is only meaningful
# with a rate below capacity). Nodes get FANOUT_NODE_ARGS (default
# "--queue-capacity 65536", so a saturated run measures throughput rather
# than the slow-consumer policy).
#
# Starts nats-server and NODES lockgate-fanout nodes (scripts/fanout-cluster.sh),
# runs loadgen's broadcast mode against all of them (every delivery
# verified), prints loadgen's summary, then one line per process:
# CPU seconds used during the run and nanoseconds per delivery. loadgen runs
# on the same machine and uses CPU too (its own line).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
nodes=${1:?nodes} subscribers=${2:?subscribers} publishers=${3:?publishers} messages=${4:?messages}
size=${5:-64}
rate_args=()
[[ -n ${6:-} ]] && rate_args=(--rate "$6")
export FANOUT_NODE_ARGS=${FANOUT_NODE_ARGS:---queue-capacity 65536}
export FANOUT_DIR=${FANOUT_DIR:-$ROOT/target/fanout-capacity}
cluster() { bash scripts/fanout-cluster.sh "$@"; }
trap 'cluster stop' EXIT
cargo build --release --quiet -p lockgate-loadgen
LOADGEN=${CARGO_TARGET_DIR:-$ROOT/target}/release/loadgen
cluster start "$nodes" >/dev/null
mapfile -t URLS < <(cluster urls)
url_args=()
for url in "${URLS[@]}"; do url_args+=(--url "$url"); done

ticks=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
names=()
if [[ -n ${FANOUT_JETSTREAM:-} ]]; then
    PIDS=()
    for i in 1 2 3; do PIDS+=("$(cat "$FANOUT_DIR/js/server$i.pid")"); names+=("server $i"); done
    for i in $(seq 1 "$nodes"); do PIDS+=("$(cat "$FANOUT_DIR/js/node$i.pid")"); done
else
    mapfile -t PIDS <"$FANOUT_DIR/pids"
    names=(broker)
fi
declare -A before
for pid in "${PIDS[@]}"; do before[$pid]=$(cpu_ticks "$pid"); done

/usr/bin/time -f "%U %S" -o "$FANOUT_DIR/loadgen.time" \
    "$LOADGEN" --mode broadcast "${url_args[@]}" --subscribers "$subscribers" \
    --publishers "$publishers" --messages "$messages" --size "$size" "${rate_args[@]}" --json \
    >"$FANOUT_DIR/capacity.json" 2>/dev/null
python3 - "$FANOUT_DIR/capacity.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["report"]; b = r["broadcast"]
print(f"deliveries {r['messages']} in {r['elapsed_s']:.3f} s: {r['messages']/r['elapsed_s']:.0f}/s")
for i, n in enumerate(b["nodes"]):
    print(f"node {i}: {n['subscribers']} subscribers, {n['deliveries_per_s']:.0f} deliveries/s")
for k in ("same_node", "cross_node"):
    if b[k]:
        print(f"{k}: p50 {b[k]['p50_us']:.0f} µs  p99 {b[k]['p99_us']:.0f} µs  p999 {b[k]['p999_us']:.0f} µs")
PY
deliveries=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["report"]["messages"])' "$FANOUT_DIR/capacity.json")
for i in $(seq 1 "$nodes"); do names+=("node $i"); done
for i in "${!PIDS[@]}"; do
    pid=${PIDS[$i]}
    used=$(( $(cpu_ticks "$pid") - before[$pid] ))
    python3 -c "import sys; t=$used/$ticks; print(f'{sys.argv[1]:>8}: {t:.2f} CPU s, {t*1e9/$deliveries:.0f} ns per delivery')" "${names[$i]}"
done
read -r user sys <"$FANOUT_DIR/loadgen.time"
python3 -c "t=$user+$sys; print(f' loadgen: {t:.2f} CPU s, {t*1e9/$deliveries:.0f} ns per delivery')"
