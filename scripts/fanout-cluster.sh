#!/usr/bin/env bash
# A local broadcast domain: one NATS server and N lockgate-fanout nodes on
# 127.0.0.1, each on a free port.
#
#   bash scripts/fanout-cluster.sh start [N]   start (default N=2), print the nodes' URLs
#   bash scripts/fanout-cluster.sh urls        the nodes' URLs, one per line
#   bash scripts/fanout-cluster.sh stop        stop everything it started, by PID
#   bash scripts/fanout-cluster.sh kill-broker     kill the NATS server (SIGKILL, as a crash)
#   bash scripts/fanout-cluster.sh start-broker    start it again on the same port
#
# Then, for example:
#   cargo run --release -p lockgate-loadgen -- --mode broadcast \
#       $(bash scripts/fanout-cluster.sh urls | sed 's/^/--url /')
#
# State (PIDs, URLs, logs) lives in $FANOUT_DIR (default target/fanout-cluster).
# Extra node options go in FANOUT_NODE_ARGS (say "--queue-capacity 4096").
# Needs nats-server (scripts/install-nats.sh).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${FANOUT_DIR:-$ROOT/target/fanout-cluster}
NODE_ARGS=${FANOUT_NODE_ARGS:-}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Waits up to 20 s for a line matching $2 in file $1, and prints it.
wait_for_line() {
    local file=$1 pattern=$2
    for _ in $(seq 1 200); do
        if grep -m1 -E "$pattern" "$file" 2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    echo "fanout-cluster: timed out waiting for '$pattern' in $file" >&2
    cat "$file" >&2 || true
    return 1
}

# The broker's PID is the first line of the PID file.
start_broker() {
    local port
    port=$(cat "$DIR/nats.port")
    nats-server -a 127.0.0.1 -p "$port" >"$DIR/nats.log" 2>&1 &
    local pid=$!
    if [[ -s $DIR/pids ]]; then
        sed -i "1s/.*/$pid/" "$DIR/pids"
    else
        echo "$pid" >"$DIR/pids"
    fi
    wait_for_line "$DIR/nats.log" "Server is ready" >/dev/null
}

kill_broker() {
    local pid
    pid=$(head -n1 "$DIR/pids")
    kill -9 "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
}

stop() {
    [[ -f $DIR/pids ]] || return 0
    # Nodes first, then the broker, each by the PID recorded at start.
    tac "$DIR/pids" | while read -r pid; do
        kill "$pid" 2>/dev/null || true
    done
    for _ in $(seq 1 50); do
        alive=0
        while read -r pid; do
            kill -0 "$pid" 2>/dev/null && alive=1
        done <"$DIR/pids"
        [[ $alive == 0 ]] && break
        sleep 0.1
    done
    while read -r pid; do
        kill -9 "$pid" 2>/dev/null || true
    done <"$DIR/pids"
    rm -f "$DIR/pids" "$DIR/urls"
}

start() {
    local nodes=${1:-2}
    command -v nats-server >/dev/null || {
        echo "fanout-cluster: nats-server not found; run scripts/install-nats.sh" >&2
        exit 1
    }
    stop
    mkdir -p "$DIR"
    : >"$DIR/pids"
    : >"$DIR/urls"
    # Cargo's own progress goes to stderr: a first build takes minutes.
    echo "fanout-cluster: building lockgate-fanout (cargo build --release -p lockgate-fanout)" >&2
    (cd "$ROOT" && cargo build --release -p lockgate-fanout)
    local bin=${CARGO_TARGET_DIR:-$ROOT/target}/release/lockgate-fanout

    local nats_port
    nats_port=$(free_port)
    echo "$nats_port" >"$DIR/nats.port"
    start_broker

    for i in $(seq 1 "$nodes"); do
        # shellcheck disable=SC2086
        "$bin" --listen 127.0.0.1:0 --nats "nats://127.0.0.1:$nats_port" $NODE_ARGS \
            >"$DIR/node$i.out" 2>"$DIR/node$i.log" &
        echo $! >>"$DIR/pids"
        wait_for_line "$DIR/node$i.out" "^listening on " | sed 's/^listening on //' >>"$DIR/urls"
    done
    echo "nats://127.0.0.1:$nats_port (log: $DIR/nats.log)"
    cat "$DIR/urls"
}

case ${1:-} in
start) start "${2:-2}" ;;
urls) cat "$DIR/urls" ;;
kill-broker) kill_broker ;;
start-broker) start_broker ;;
stop) stop ;;
*)
    sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
