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
# JetStream mode (the nodes keep a history, clients resume with ?since=):
#   FANOUT_JETSTREAM=1 bash scripts/fanout-cluster.sh start [N]   (or: start-js [N])
# starts 3 nats-servers as one JetStream cluster (storage under $FANOUT_DIR/js,
# monitor ports printed) and N nodes with --history ${FANOUT_HISTORY:-10000},
# node K listing server K first in its --nats list. Then:
#   bash scripts/fanout-cluster.sh kill-node K     SIGKILL node K (1..N)
#   bash scripts/fanout-cluster.sh term-node K     SIGTERM node K, wait until it has drained and exited
#   bash scripts/fanout-cluster.sh start-node K    start node K again, on its port
#   bash scripts/fanout-cluster.sh kill-leader     SIGKILL the nats-server leading the stream
#                                                  ${FANOUT_STREAM:-LOCKGATE}, print its number
#   bash scripts/fanout-cluster.sh start-servers   start again every nats-server that is down
#   bash scripts/fanout-cluster.sh servers         the servers: number, PID or "down", ports
#
# Then, for example:
#   cargo run --release -p lockgate-loadgen -- --mode broadcast \
#       $(bash scripts/fanout-cluster.sh urls | sed 's/^/--url /')
#
# State (PIDs, URLs, logs) lives in $FANOUT_DIR (default target/fanout-cluster).
# Extra node options go in FANOUT_NODE_ARGS (say "--queue-capacity 4096").
# Needs nats-server (scripts/install-nats.sh) and python3.
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
    stop_js
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

# --- JetStream mode ------------------------------------------------------
# Three nats-servers (1..3) in one JetStream cluster, each with client,
# route and monitor ports kept in $JS/serverI.ports so a killed one comes
# back where the others and the nodes look for it; nodes 1..N keep their
# port in $JS/nodeK.port for the same reason.
JS=$DIR/js
SERVERS=3
STREAM=${FANOUT_STREAM:-LOCKGATE}

pid_alive() {
    [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null
}

# read -r client route monitor < <(server_ports I)
server_ports() {
    cat "$JS/server$1.ports"
}

# Waits (at most 20 s) until something accepts connections on port $1.
wait_port() {
    for _ in $(seq 1 200); do
        python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.5).close()' "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "fanout-cluster: nothing listens on 127.0.0.1:$1 after 20 s" >&2
    return 1
}

start_server() {
    local i=$1 client route monitor routes="" j
    read -r client route monitor < <(server_ports "$i")
    for j in $(seq 1 $SERVERS); do
        local r
        r=$(server_ports "$j" | cut -d' ' -f2)
        routes+="${routes:+,}nats://127.0.0.1:$r"
    done
    # Appended: a restarted server's log follows its previous life's.
    nats-server -a 127.0.0.1 -p "$client" -m "$monitor" -js -sd "$JS/server$i" \
        -n "fanout-n$i" --cluster_name fanout-js \
        --cluster "nats://127.0.0.1:$route" --routes "$routes" \
        >>"$JS/server$i.log" 2>&1 &
    echo $! >"$JS/server$i.pid"
    if ! wait_port "$client" || ! wait_port "$monitor"; then
        tail -n 20 "$JS/server$i.log" >&2
        return 1
    fi
}

# Waits (at most 30 s) until the running servers are healthy and agree on
# a JetStream meta leader: before that, creating the stream fails.
wait_js_ready() {
    local args=() i
    for i in $(seq 1 $SERVERS); do
        pid_alive "$JS/server$i.pid" || continue
        args+=("$(server_ports "$i" | cut -d' ' -f3)")
    done
    python3 - "${args[@]}" <<'PY' || { echo "fanout-cluster: JetStream not ready after 30 s" >&2; return 1; }
import json, sys, time, urllib.request
def get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=3) as r:
        return json.load(r)
deadline = time.time() + 30
while time.time() < deadline:
    try:
        healthy = all(get(p, "/healthz?js-enabled-only=true").get("status") == "ok" for p in sys.argv[1:])
        leaders = {get(p, "/jsz").get("meta_cluster", {}).get("leader", "") for p in sys.argv[1:]}
        if healthy and len(leaders) == 1 and "" not in leaders:
            sys.exit(0)
    except Exception:
        pass
    time.sleep(0.2)
sys.exit(1)
PY
}

# The --nats list of node K: server ((K-1) mod 3)+1 first, so the nodes'
# preferred servers differ.
node_nats() {
    local k=$1 first i list=""
    first=$(((k - 1) % SERVERS + 1))
    for i in $(seq 0 $((SERVERS - 1))); do
        local s=$(((first - 1 + i) % SERVERS + 1))
        list+="${list:+,}nats://127.0.0.1:$(server_ports "$s" | cut -d' ' -f1)"
    done
    echo "$list"
}

start_node() {
    local k=$1 port=0 bin
    bin=$(cat "$JS/bin")
    if pid_alive "$JS/node$k.pid"; then
        echo "fanout-cluster: node $k is running (PID $(cat "$JS/node$k.pid"))" >&2
        return 1
    fi
    [[ -s $JS/node$k.port ]] && port=$(cat "$JS/node$k.port")
    : >"$JS/node$k.out"
    # shellcheck disable=SC2086
    "$bin" --listen "127.0.0.1:$port" --nats "$(node_nats "$k")" \
        --history "${FANOUT_HISTORY:-10000}" $NODE_ARGS \
        >"$JS/node$k.out" 2>>"$JS/node$k.log" &
    echo $! >"$JS/node$k.pid"
    local url
    url=$(wait_for_line "$JS/node$k.out" "^listening on " | sed 's/^listening on //') || return 1
    echo "${url##*:}" >"$JS/node$k.port"
    echo "$url"
}

node_pid() {
    [[ -s $JS/node$1.pid ]] || {
        echo "fanout-cluster: no node $1" >&2
        exit 1
    }
    cat "$JS/node$1.pid"
}

kill_node() {
    local pid
    pid=$(node_pid "$1")
    kill -9 "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
}

# SIGTERM drains the node (its clients get 1001); waits for its exit, at
# most FANOUT_TERM_WAIT seconds (default 60).
term_node() {
    local pid limit=${FANOUT_TERM_WAIT:-60}
    pid=$(node_pid "$1")
    kill -TERM "$pid" 2>/dev/null || return 0
    for _ in $(seq 1 $((limit * 10))); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    echo "fanout-cluster: node $1 (PID $pid) still running ${limit} s after SIGTERM" >&2
    return 1
}

# The number of the server leading $STREAM: only a server that names
# itself as the leader is believed (a follower may still name a server
# just killed). Retries for 20 s: an election may be under way.
stream_leader() {
    local args=() i
    for i in $(seq 1 $SERVERS); do
        pid_alive "$JS/server$i.pid" || continue
        args+=("$i:$(server_ports "$i" | cut -d' ' -f3)")
    done
    python3 - "$STREAM" "${args[@]}" <<'PY'
import json, sys, time, urllib.request
stream, servers = sys.argv[1], [a.split(":") for a in sys.argv[2:]]
deadline = time.time() + 20
while time.time() < deadline:
    for i, port in servers:
        url = f"http://127.0.0.1:{port}/jsz?accounts=true&streams=true"
        try:
            with urllib.request.urlopen(url, timeout=3) as r:
                jsz = json.load(r)
        except Exception:
            continue
        for account in jsz.get("account_details") or []:
            for s in account.get("stream_detail") or []:
                if s.get("name") == stream and (s.get("cluster") or {}).get("leader") == f"fanout-n{i}":
                    print(i)
                    sys.exit(0)
    time.sleep(0.2)
sys.exit(1)
PY
}

kill_leader() {
    local i pid
    i=$(stream_leader) || {
        echo "fanout-cluster: no server leads stream $STREAM" >&2
        return 1
    }
    pid=$(cat "$JS/server$i.pid")
    kill -9 "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
    echo "killed nats-server $i (PID $pid), leader of stream $STREAM"
}

start_servers() {
    local i started=0
    for i in $(seq 1 $SERVERS); do
        pid_alive "$JS/server$i.pid" && continue
        start_server "$i"
        echo "started nats-server $i again (PID $(cat "$JS/server$i.pid"))"
        started=1
    done
    [[ $started == 1 ]] && wait_js_ready
    return 0
}

servers() {
    local i client route monitor state
    for i in $(seq 1 $SERVERS); do
        read -r client route monitor < <(server_ports "$i")
        state=down
        pid_alive "$JS/server$i.pid" && state="PID $(cat "$JS/server$i.pid")"
        echo "$i $state nats://127.0.0.1:$client monitor http://127.0.0.1:$monitor cluster $route"
    done
}

stop_js() {
    [[ -d $JS ]] || return 0
    local f pids=()
    # Nodes first (their clients see 1001), then the servers.
    for f in "$JS"/node*.pid "$JS"/server*.pid; do
        pid_alive "$f" && pids+=("$(cat "$f")")
    done
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for _ in $(seq 1 50); do
        local alive=0
        for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
        [[ $alive == 0 ]] && break
        sleep 0.1
    done
    for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
    rm -f "$JS"/*.pid
}

start_js() {
    local nodes=${1:-2} i
    command -v nats-server >/dev/null || {
        echo "fanout-cluster: nats-server not found; run scripts/install-nats.sh" >&2
        exit 1
    }
    stop
    # A fresh history each time: the stream, the ports and the logs.
    rm -rf "$JS"
    mkdir -p "$JS"
    : >"$DIR/urls"
    echo "fanout-cluster: building lockgate-fanout (cargo build --release -p lockgate-fanout)" >&2
    (cd "$ROOT" && cargo build --release -p lockgate-fanout)
    echo "${CARGO_TARGET_DIR:-$ROOT/target}/release/lockgate-fanout" >"$JS/bin"
    for i in $(seq 1 $SERVERS); do
        echo "$(free_port) $(free_port) $(free_port)" >"$JS/server$i.ports"
    done
    for i in $(seq 1 $SERVERS); do start_server "$i"; done
    wait_js_ready
    for i in $(seq 1 "$nodes"); do
        start_node "$i" >>"$DIR/urls"
    done
    servers
    cat "$DIR/urls"
}

case ${1:-} in
start)
    if [[ ${FANOUT_JETSTREAM:-0} == 1 ]]; then
        start_js "${2:-2}"
    else
        start "${2:-2}"
    fi
    ;;
start-js) start_js "${2:-2}" ;;
kill-node) kill_node "${2:?node number}" ;;
term-node) term_node "${2:?node number}" ;;
start-node) start_node "${2:?node number}" ;;
kill-leader) kill_leader ;;
start-servers) start_servers ;;
servers) servers ;;
urls) cat "$DIR/urls" ;;
kill-broker) kill_broker ;;
start-broker) start_broker ;;
stop) stop ;;
*)
    sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
