#!/usr/bin/env bash
# Fan-out across processes, as CI runs it (called by scripts/test.sh):
#
# 1. installs nats-server if missing (scripts/install-nats.sh);
# 2. lockgate-fanout's tests (a real nats-server per test) and loadgen's;
# 3. a real domain: nats-server + 2 lockgate-fanout nodes
#    (scripts/fanout-cluster.sh), loadgen's broadcast mode across both,
#    every delivery verified;
# 4. the broker killed in the middle of a broadcast: every connection must
#    be told (1013) or have lost nothing (loadgen --allow-closes counts
#    both); then the broker is restarted on its port, the nodes reconnect,
#    and a second broadcast across both nodes must be complete again;
# 5. resumable fan-out: 3 nats-servers as one JetStream cluster and 3 nodes
#    with --history; loadgen's resume mode (subscribers dropping and
#    resuming on random nodes by position) must see every message exactly
#    once and in order while a node is killed (SIGKILL) and restarted, the
#    stream's leader is killed, and another node is drained (SIGTERM).
#
# Everything listens on 127.0.0.1 and is stopped by PID on exit.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export FANOUT_DIR=${FANOUT_DIR:-$ROOT/target/fanout-test}
# Delivery is what is checked here, on a machine loadgen saturates itself:
# queues deep enough that no verifying client is closed as a slow consumer
# (the 1008 policy has its own tests in lockgate-fanout and tokio-lockgate).
export FANOUT_NODE_ARGS=${FANOUT_NODE_ARGS:---queue-capacity 16384}
cluster() { bash scripts/fanout-cluster.sh "$@"; }
trap 'cluster stop' EXIT

step() { printf '\n--> %s\n' "$*"; }

bash scripts/install-nats.sh

step "cargo test -p lockgate-fanout -p lockgate-loadgen"
cargo test -p lockgate-fanout
cargo test -p lockgate-loadgen

step "a domain of 2 nodes through nats-server"
cargo build --release --quiet -p lockgate-loadgen
LOADGEN=${CARGO_TARGET_DIR:-$ROOT/target}/release/loadgen
cluster start 2
mapfile -t URLS < <(cluster urls)
url_args=()
for url in "${URLS[@]}"; do url_args+=(--url "$url"); done

# Prints the one-line JSON summary's fields the checks need.
field() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }

step "broadcast across both nodes: every delivery verified"
"$LOADGEN" --mode broadcast "${url_args[@]}" --subscribers 40 --publishers 4 \
    --messages 5000 --batch 16 --json >"$FANOUT_DIR/broadcast.json"
field 'd["report"]["note"]' <"$FANOUT_DIR/broadcast.json"
deliveries=$(field 'd["report"]["messages"]' <"$FANOUT_DIR/broadcast.json")
cross=$(field 'd["report"]["broadcast"]["cross_node"]["samples"]' <"$FANOUT_DIR/broadcast.json")
[[ $deliveries == $((40 * 4 * 5000)) ]] || { echo "expected 800000 deliveries, got $deliveries"; exit 1; }
[[ $cross -gt 0 ]] || { echo "nothing crossed between the nodes"; exit 1; }
echo "ok: $deliveries deliveries, $cross of them cross-node"

step "the broker dies mid-broadcast: clients are told (1013) or lose nothing"
"$LOADGEN" --mode broadcast "${url_args[@]}" --subscribers 20 --publishers 2 \
    --duration 6 --rate 2000 --allow-closes --json >"$FANOUT_DIR/broker-kill.json" &
loadgen_pid=$!
sleep 2
cluster kill-broker
set +e
wait "$loadgen_pid"
status=$?
set -e
cat "$FANOUT_DIR/broker-kill.json"
[[ $status == 0 ]] || { echo "loadgen failed across the broker's death (status $status)"; exit 1; }
python3 - "$FANOUT_DIR/broker-kill.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
b = d["report"]["broadcast"]
codes = {c["code"] for c in b["closes"]}
told = [c for c in b["closes"] if c["connection"].startswith("subscriber")]
# Each subscriber was either closed with 1013, or received everything
# (loadgen fails the run otherwise).
assert codes <= {1012, 1013}, f"unexpected close codes {codes}"
assert told, "the broker died mid-run but no subscriber was told"
print(f"ok: {len(told)} of {b['subscribers']} subscribers told with {sorted(codes)}, "
      f"{b['lost_to_close']} deliveries lost to those closes, none silently")
PY

step "the broker comes back on its port: the nodes reconnect"
cluster start-broker
for _ in $(seq 1 100); do
    if "$LOADGEN" --mode broadcast "${url_args[@]}" --subscribers 4 --messages 10 \
        --json >/dev/null 2>&1; then
        break
    fi
    sleep 0.2
done
"$LOADGEN" --mode broadcast "${url_args[@]}" --subscribers 20 --publishers 2 \
    --messages 2000 --json >"$FANOUT_DIR/after.json"
field 'd["report"]["note"]' <"$FANOUT_DIR/after.json"
echo "ok: complete again after the broker returned"

step "resumable fan-out: 3 JetStream servers, 3 nodes with --history; a node killed and restarted, the stream's leader killed, a node drained"
cluster stop
FANOUT_JETSTREAM=1 cluster start 3
mapfile -t URLS < <(cluster urls)
url_args=()
for url in "${URLS[@]}"; do url_args+=(--url "$url"); done
"$LOADGEN" --mode resume "${url_args[@]}" --duration 16 --json >"$FANOUT_DIR/resume.json" &
loadgen_pid=$!
sleep 4
echo "node 2 killed"
cluster kill-node 2
sleep 2
cluster start-node 2 >/dev/null
echo "node 2 back"
sleep 2
echo "stream leader killed: $(cluster kill-leader)"
sleep 4
echo "node 3 drained"
cluster term-node 3
set +e
wait "$loadgen_pid"
status=$?
set -e
[[ $status == 0 ]] || { cat "$FANOUT_DIR/resume.json"; echo "loadgen's resume run failed (status $status)"; exit 1; }
python3 - "$FANOUT_DIR/resume.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(d["report"]["note"])
r = d["report"]["resume"]
assert r["resyncs"] == 0, r
assert r["reconnects"] > 0 and r["messages"] > 0, r
print(f"ok: {r['subscribers']} subscribers x {r['messages']} messages, every one exactly once "
      f"and in order, across {r['reconnects']} reconnects")
PY
