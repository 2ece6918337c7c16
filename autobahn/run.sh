#!/usr/bin/env bash
# Run the Autobahn TestSuite cases (through kosoku, no docker) against the
# autobahn-server / autobahn-client examples and check the results against
# autobahn/expected-{server,client}.json.
#
#   bash autobahn/run.sh [server|client|all] [--update] [-v]
#
#   --update   rewrite the expected files from this run (only if it passes)
#   -v         print the full expected/received events of failing cases
#
# Needs python3 >= 3.10, cargo and access to PyPI (the first run creates
# autobahn/.venv and installs kosoku into it). Reports are written to
# autobahn/reports/<mode><suffix>/ (index.html there is the browsable report).
#
# Environment (all optional):
#   AUTOBAHN_PACKAGE          cargo package holding the examples (default: lockgate-examples,
#                             the blocking driver's, in examples/),
#                             e.g. tokio-lockgate
#   AUTOBAHN_SUFFIX           suffix for expected files and report dirs, e.g. -tokio
#                             -> expected-server-tokio.json, reports/server-tokio
#   AUTOBAHN_SERVER_EXAMPLE   example names (default autobahn-server / autobahn-client,
#   AUTOBAHN_CLIENT_EXAMPLE   with the package's prefix: tokio-lockgate's are
#                             tokio-autobahn-server / tokio-autobahn-client)
#   AUTOBAHN_INCLUDE          space-separated case ids/globs to run (default: all)
#   AUTOBAHN_EXCLUDE          space-separated case ids/globs to skip (default below)
#   AUTOBAHN_PARALLELISM      cases kosoku runs at once against the server (default 1)
#   AUTOBAHN_TIMEOUT          seconds allowed for one mode's kosoku run (default 900)
#   PYTHON                    interpreter used to create the venv (default python3)
set -euo pipefail

# All 517 cases run: the examples offer/accept permessage-deflate, so 12.*
# and 13.* are exercised too (kosoku counts UNIMPLEMENTED as a failure).
DEFAULT_EXCLUDE=''

KOSOKU_VERSION=0.1.0
AGENT=lockgate # what autobahn-client reports as its agent

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
VENV=$HERE/.venv
PYTHON=${PYTHON:-python3}
PACKAGE=${AUTOBAHN_PACKAGE:-lockgate-examples}
SUFFIX=${AUTOBAHN_SUFFIX:-}
# Example names are unique across the workspace (cargo cannot build two
# examples of one name together): a member crate `<prefix>-lockgate` names
# its examples `<prefix>-autobahn-server` / `<prefix>-autobahn-client`.
case $PACKAGE in
    *-lockgate) EXAMPLE_PREFIX=${PACKAGE%lockgate} ;;
    *) EXAMPLE_PREFIX= ;;
esac
SERVER_EXAMPLE=${AUTOBAHN_SERVER_EXAMPLE:-${EXAMPLE_PREFIX}autobahn-server}
CLIENT_EXAMPLE=${AUTOBAHN_CLIENT_EXAMPLE:-${EXAMPLE_PREFIX}autobahn-client}
INCLUDE=${AUTOBAHN_INCLUDE:-}
EXCLUDE=${AUTOBAHN_EXCLUDE-$DEFAULT_EXCLUDE}
PARALLELISM=${AUTOBAHN_PARALLELISM:-1}
RUN_TIMEOUT=${AUTOBAHN_TIMEOUT:-900}
STARTUP_TIMEOUT=30 # seconds to wait for a listener to come up
DRAIN_TIMEOUT=60   # seconds kosoku gets to write its report after the client is done

MODE=all
COMPARE_FLAGS=()
for arg in "$@"; do
    case $arg in
        server | client | all) MODE=$arg ;;
        --update) COMPARE_FLAGS+=(--update) ;;
        -v | --verbose) COMPARE_FLAGS+=(-v) ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "usage: $0 [server|client|all] [--update] [-v]" >&2
            exit 2
            ;;
    esac
done

log() { printf '[autobahn] %s\n' "$*" >&2; }

# --- background processes: always cleaned up -------------------------------
PIDS=()
stop_pid() { # stop_pid PID: TERM, then KILL if it lingers
    local pid=$1 i
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}
cleanup() {
    local pid
    for pid in ${PIDS[@]+"${PIDS[@]}"}; do stop_pid "$pid"; done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- setup -------------------------------------------------------------------
ensure_venv() {
    if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
        echo "autobahn: $PYTHON >= 3.10 is required" >&2
        exit 1
    fi
    if [[ ! -x $VENV/bin/python ]]; then
        log "creating $VENV"
        "$PYTHON" -m venv "$VENV"
    fi
    if ! "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('kosoku') != '$KOSOKU_VERSION')" 2>/dev/null; then
        log "installing kosoku==$KOSOKU_VERSION into $VENV"
        "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "kosoku==$KOSOKU_VERSION"
    fi
}

SERVER_BIN=
CLIENT_BIN=
build_examples() {
    local pkg=() out
    [[ -n $PACKAGE ]] && pkg=(-p "$PACKAGE")
    log "building examples $SERVER_EXAMPLE, $CLIENT_EXAMPLE${PACKAGE:+ ($PACKAGE)} in release"
    # JSON on stdout gives the executables' paths (whatever the target dir);
    # diagnostics still go to stderr in the usual form.
    out=$(cd "$ROOT" && cargo build --release ${pkg[@]+"${pkg[@]}"} \
        --example "$SERVER_EXAMPLE" --example "$CLIENT_EXAMPLE" \
        --message-format=json-render-diagnostics)
    SERVER_BIN=$(executable_of "$SERVER_EXAMPLE" <<<"$out")
    CLIENT_BIN=$(executable_of "$CLIENT_EXAMPLE" <<<"$out")
}
executable_of() { # executable_of NAME < cargo json messages
    "$PYTHON" -c '
import json, sys
name = sys.argv[1]
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if msg.get("reason") == "compiler-artifact" and msg.get("target", {}).get("name") == name and msg.get("executable"):
        print(msg["executable"])
        break
else:
    sys.exit(f"cargo did not report an executable for example {name}")
' "$1"
}

free_port() {
    "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

wait_for_port() { # wait_for_port PORT PID: until something accepts on PORT, while PID lives
    local port=$1 pid=$2 deadline=$((SECONDS + STARTUP_TIMEOUT))
    until "$PYTHON" -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()' "$port" 2>/dev/null; do
        if ! kill -0 "$pid" 2>/dev/null; then
            log "process $pid exited before listening on port $port"
            return 1
        fi
        if ((SECONDS >= deadline)); then
            log "nothing listening on port $port after ${STARTUP_TIMEOUT}s"
            return 1
        fi
        sleep 0.2
    done
}

# Tell a fuzzingserver the run is over (what a client does last), so it writes
# the report for the cases that did run even if the client died half-way.
poke_update_reports() {
    "$PYTHON" - "$1" "$AGENT" <<'EOF' || true
import base64, os, socket, sys
port, agent = int(sys.argv[1]), sys.argv[2]
key = base64.b64encode(os.urandom(16)).decode()
try:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(
            f"GET /updateReports?agent={agent} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            "Upgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        s.recv(4096)
except OSError as err:
    print(f"[autobahn] updateReports: {err}", file=sys.stderr)
EOF
}

selection_args() { # kosoku / compare.py -i/-x flags
    local p
    SEL_ARGS=()
    set -f # the globs are for kosoku, not for the shell
    for p in $INCLUDE; do SEL_ARGS+=(-i "$p"); done
    for p in $EXCLUDE; do SEL_ARGS+=(-x "$p"); done
    set +f
}

# compare MODE OUTDIR: check the report against the expected file
compare() {
    local mode=$1 outdir=$2
    "$VENV/bin/python" "$HERE/compare.py" "$outdir" "$HERE/expected-$mode$SUFFIX.json" \
        ${SEL_ARGS[@]+"${SEL_ARGS[@]}"} --label "[$mode$SUFFIX] " ${COMPARE_FLAGS[@]+"${COMPARE_FLAGS[@]}"} \
        | tee "$outdir.compare.txt"
}

# --- modes -----------------------------------------------------------------
# Each prints one summary line into SUMMARY and returns non-zero on failure.
SUMMARY=()

run_server() {
    local outdir=$HERE/reports/server$SUFFIX port pid kpid rc=0 cmp=0 start=$SECONDS
    rm -rf "$outdir" "$outdir.compare.txt" && mkdir -p "$(dirname "$outdir")"
    port=$(free_port)
    log "server: $SERVER_BIN on 127.0.0.1:$port (log: $outdir.log)"
    "$SERVER_BIN" "127.0.0.1:$port" >"$outdir.log" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    wait_for_port "$port" "$pid" || {
        stop_pid "$pid"
        SUMMARY+=("[server$SUFFIX] FAIL: server did not start (see $outdir.log)")
        return 1
    }
    log "server: kosoku fuzzingclient ${SEL_ARGS[*]-} -p $PARALLELISM (log: $outdir.kosoku.log)"
    # In the background + wait, so a signal to this script is handled at once.
    timeout "$RUN_TIMEOUT" "$VENV/bin/kosoku" "127.0.0.1:$port" ${SEL_ARGS[@]+"${SEL_ARGS[@]}"} \
        -p "$PARALLELISM" -o "$outdir" >"$outdir.kosoku.log" 2>&1 &
    kpid=$!
    PIDS+=("$kpid")
    wait "$kpid" || rc=$?
    stop_pid "$pid"
    if ((rc == 124)); then log "server: kosoku timed out after ${RUN_TIMEOUT}s"; fi
    if ((rc != 0)); then log "server: kosoku exited $rc (log: $outdir.kosoku.log)"; fi
    compare server "$outdir" || cmp=$?
    finish server $((rc || cmp)) $((SECONDS - start)) "$outdir"
}

run_client() {
    local outdir=$HERE/reports/client$SUFFIX port kpid cpid rc=0 crc=0 cmp=0 start=$SECONDS deadline
    rm -rf "$outdir" "$outdir.compare.txt" && mkdir -p "$(dirname "$outdir")"
    port=$(free_port)
    log "client: kosoku fuzzingserver on 127.0.0.1:$port ${SEL_ARGS[*]-} (log: $outdir.kosoku.log)"
    # kosoku gets longer than the client, so it is still there to write the
    # report when the client has to be stopped.
    timeout $((RUN_TIMEOUT + DRAIN_TIMEOUT + 30)) "$VENV/bin/kosoku" -m fuzzingserver "127.0.0.1:$port" ${SEL_ARGS[@]+"${SEL_ARGS[@]}"} \
        -o "$outdir" >"$outdir.kosoku.log" 2>&1 &
    kpid=$!
    PIDS+=("$kpid")
    wait_for_port "$port" "$kpid" || {
        stop_pid "$kpid"
        SUMMARY+=("[client$SUFFIX] FAIL: kosoku fuzzingserver did not start (see $outdir.kosoku.log)")
        return 1
    }
    log "client: $CLIENT_BIN ws://127.0.0.1:$port"
    timeout "$RUN_TIMEOUT" "$CLIENT_BIN" "ws://127.0.0.1:$port" &
    cpid=$!
    PIDS+=("$cpid")
    wait "$cpid" || crc=$?
    if ((crc != 0)); then
        log "client: $CLIENT_EXAMPLE exited $crc; asking kosoku for the partial report"
        poke_update_reports "$port"
    fi
    deadline=$((SECONDS + DRAIN_TIMEOUT))
    while kill -0 "$kpid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
    if kill -0 "$kpid" 2>/dev/null; then
        log "client: kosoku still running ${DRAIN_TIMEOUT}s after the client finished; killing it"
        stop_pid "$kpid"
        rc=124
    else
        wait "$kpid" || rc=$?
    fi
    if ((rc != 0)); then log "client: kosoku exited $rc (log: $outdir.kosoku.log)"; fi
    compare client "$outdir" || cmp=$?
    finish client $((rc || crc || cmp)) $((SECONDS - start)) "$outdir"
}

finish() { # finish MODE FAILED SECONDS OUTDIR
    local mode=$1 failed=$2 secs=$3 outdir=$4 line
    line=$(tail -n 1 "$outdir.compare.txt" 2>/dev/null || true)
    [[ -n $line ]] || line="[$mode$SUFFIX] FAIL: no comparison (see $outdir.kosoku.log)"
    if ((failed)) && [[ $line == *"] PASS"* ]]; then
        line="${line/] PASS/] FAIL (see logs in $HERE/reports)}"
    fi
    SUMMARY+=("$line in ${secs}s")
    return "$failed"
}

ensure_venv
build_examples
selection_args

status=0
case $MODE in
    server) run_server || status=1 ;;
    client) run_client || status=1 ;;
    all)
        run_server || status=1
        run_client || status=1
        ;;
esac

echo
printf '%s\n' "${SUMMARY[@]}"
exit "$status"
