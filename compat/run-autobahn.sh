#!/usr/bin/env bash
# Runs the Autobahn TestSuite's cases 1.* to 7.* and 10.* (through kosoku,
# as autobahn/run.sh does) against the ported upstream Autobahn examples of
# lockgate-compat, unmodified, and grades the results against
# compat/autobahn/upstream-<crate>-<mode>.json: the results of the same
# examples built with tungstenite 0.30.0 / tokio-tungstenite 0.30.0. A
# ported program must pass what the original passes, case by case.
#
#   bash compat/run-autobahn.sh [tungstenite|tokio-tungstenite|all] [server|client|all] [--update] [-v]
#   bash compat/run-autobahn.sh --prepare   # the venv and the examples' builds only
#
#   server   kosoku drives `<crate>-autobahn-server`, which listens on
#            127.0.0.1:9002 (hard-coded upstream)
#   client   kosoku serves on 127.0.0.1:9001 and `<crate>-autobahn-client`
#            dials ws://localhost:9001 (hard-coded upstream) as agent
#            "Tungstenite" (both crates' examples use that name)
#   --update record this run as upstream's results (run it on upstream
#            builds, see COMPAT_EXAMPLES_DIR)
#   -v       print the full expected/received events of failing cases
#   --prepare  create the venv and build the examples, run nothing: what
#            needs the network, before a run in a private network
#            namespace (scripts/private-network.sh, as scripts/test.sh does)
#
# The ports are the examples' own: they take no address argument, and the
# point is to run them as shipped. They must be free (checked first).
#
# Grading (compat/autobahn/grade.py, built on autobahn/compare.py): every
# selected case must be in the report, and each must be OK or
# INFORMATIONAL for behavior and close behavior, or else exactly what
# upstream got and not FAILED. autobahn/run.sh accepts only OK and
# INFORMATIONAL, but upstream is NON-STRICT on 6.4.3 and 6.4.4; a port may
# do better than upstream, never worse, and never FAILED.
#
# The venv is autobahn/run.sh's (autobahn/.venv with its KOSOKU_VERSION,
# created here the same way if missing); reports go to
# autobahn/reports/compat-<crate>-<mode>/ with the example's and kosoku's
# logs beside them.
#
# Environment (all optional):
#   COMPAT_EXAMPLES_DIR   directory with the example executables to run
#                         instead of building lockgate-compat's (debug)
#                         ones, e.g. a build of the same examples against
#                         upstream tungstenite
#   COMPAT_AUTOBAHN_TIMEOUT  seconds allowed for one kosoku run (default 600)
#   PYTHON                interpreter used to create the venv (default python3)
set -euo pipefail

INCLUDE=('1.*' '2.*' '3.*' '4.*' '5.*' '6.*' '7.*' '10.*')
AGENT=Tungstenite # the AGENT constant of both upstream autobahn-client examples
SERVER_PORT=9002  # upstream autobahn-server's listener
CLIENT_PORT=9001  # where upstream autobahn-client expects the suite

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
AUTOBAHN=$ROOT/autobahn
VENV=$AUTOBAHN/.venv
PYTHON=${PYTHON:-python3}
EXAMPLES_DIR=${COMPAT_EXAMPLES_DIR:-}
RUN_TIMEOUT=${COMPAT_AUTOBAHN_TIMEOUT:-600}
STARTUP_TIMEOUT=30 # seconds to wait for a listener to come up
DRAIN_TIMEOUT=60   # seconds kosoku gets to write its report after the client is done
# Same kosoku as autobahn/run.sh.
KOSOKU_VERSION=$(sed -n 's/^KOSOKU_VERSION=\([0-9.]*\).*/\1/p' "$AUTOBAHN/run.sh")
[[ -n $KOSOKU_VERSION ]] || {
    echo "compat autobahn: no KOSOKU_VERSION in $AUTOBAHN/run.sh" >&2
    exit 1
}

CRATES=(tungstenite tokio-tungstenite)
MODES=(server client)
COMPARE_FLAGS=()
PREPARE_ONLY=0
for arg in "$@"; do
    case $arg in
        --prepare) PREPARE_ONLY=1 ;;
        tungstenite | tokio-tungstenite) CRATES=("$arg") ;;
        server | client) MODES=("$arg") ;;
        all) ;;
        --update) COMPARE_FLAGS+=(--update) ;;
        -v | --verbose) COMPARE_FLAGS+=(-v) ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "usage: $0 [tungstenite|tokio-tungstenite|all] [server|client|all] [--update] [-v] | --prepare" >&2
            exit 2
            ;;
    esac
done

log() { printf '[compat autobahn] %s\n' "$*" >&2; }

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
ensure_venv() { # as autobahn/run.sh's
    if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
        echo "compat autobahn: $PYTHON >= 3.10 is required" >&2
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

# executable NAME: the path of example NAME (building it unless
# COMPAT_EXAMPLES_DIR is set).
executable() {
    local name=$1 out
    if [[ -n $EXAMPLES_DIR ]]; then
        [[ -x $EXAMPLES_DIR/$name ]] || {
            log "$EXAMPLES_DIR/$name is not an executable"
            return 1
        }
        echo "$EXAMPLES_DIR/$name"
        return
    fi
    # JSON on stdout gives the executable's path (whatever the target dir);
    # diagnostics still go to stderr in the usual form.
    out=$(cd "$ROOT" && cargo build --quiet -p lockgate-compat --example "$name" \
        --message-format=json-render-diagnostics) || return 1
    "$VENV/bin/python" -c '
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
' "$name" <<<"$out"
}

# listening PORT: whether a socket listens on TCP PORT (the kernel's tables,
# so that the server under test sees no probe connection).
listening() {
    "$VENV/bin/python" - "$1" <<'EOF'
import sys
port = int(sys.argv[1])
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    try:
        rows = open(table).read().splitlines()[1:]
    except OSError:
        continue
    for row in rows:
        fields = row.split()
        if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
            sys.exit(0)
sys.exit(1)
EOF
}

wait_for_port() { # wait_for_port PORT PID: until something listens on PORT, while PID lives
    local port=$1 pid=$2 deadline=$((SECONDS + STARTUP_TIMEOUT))
    until listening "$port"; do
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

require_free() { # require_free PORT
    if listening "$1"; then
        log "port $1 is in use; the upstream example hard-codes it, so it must be free"
        return 1
    fi
}

# Tell the fuzzingserver the run is over (what the client does last), so it
# writes the report for the cases that did run even if the client died.
poke_update_reports() {
    "$VENV/bin/python" - "$CLIENT_PORT" "$AGENT" <<'EOF' || true
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
    print(f"[compat autobahn] updateReports: {err}", file=sys.stderr)
EOF
}

SEL_ARGS=()
for p in "${INCLUDE[@]}"; do SEL_ARGS+=(-i "$p"); done

# compare LABEL OUTDIR UPSTREAM [grade.py flags]: grade the report
compare() {
    local label=$1 outdir=$2 upstream=$3
    shift 3
    "$VENV/bin/python" "$HERE/autobahn/grade.py" "$outdir" "$upstream" "${SEL_ARGS[@]}" \
        --label "[$label] " "$@" ${COMPARE_FLAGS[@]+"${COMPARE_FLAGS[@]}"} | tee "$outdir.compare.txt"
}

# --- modes -------------------------------------------------------------------
SUMMARY=()

run_server() { # run_server CRATE
    local crate=$1 label="compat-$1-server" outdir bin pid kpid rc=0 cmp=0 start=$SECONDS
    outdir=$AUTOBAHN/reports/$label
    rm -rf "$outdir" "$outdir.compare.txt" && mkdir -p "$(dirname "$outdir")"
    bin=$(executable "$crate-autobahn-server") || {
        SUMMARY+=("[$label] FAIL: $crate-autobahn-server did not build")
        return 1
    }
    require_free "$SERVER_PORT" || {
        SUMMARY+=("[$label] FAIL: port $SERVER_PORT in use")
        return 1
    }
    log "$label: $bin (log: $outdir.log)"
    "$bin" >"$outdir.log" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    wait_for_port "$SERVER_PORT" "$pid" || {
        stop_pid "$pid"
        SUMMARY+=("[$label] FAIL: server did not start (see $outdir.log)")
        return 1
    }
    log "$label: kosoku fuzzingclient 127.0.0.1:$SERVER_PORT ${SEL_ARGS[*]} (log: $outdir.kosoku.log)"
    timeout "$RUN_TIMEOUT" "$VENV/bin/kosoku" "127.0.0.1:$SERVER_PORT" "${SEL_ARGS[@]}" \
        -o "$outdir" >"$outdir.kosoku.log" 2>&1 &
    kpid=$!
    PIDS+=("$kpid")
    wait "$kpid" || rc=$?
    if ! kill -0 "$pid" 2>/dev/null; then
        log "$label: the server exited during the run (see $outdir.log)"
        rc=1
    fi
    stop_pid "$pid"
    if ((rc == 124)); then log "$label: kosoku timed out after ${RUN_TIMEOUT}s"; fi
    if ((rc != 0)); then log "$label: kosoku exited $rc (log: $outdir.kosoku.log)"; fi
    compare "$label" "$outdir" "$HERE/autobahn/upstream-$crate-server.json" || cmp=$?
    finish "$label" $((rc || cmp)) $((SECONDS - start)) "$outdir"
}

run_client() { # run_client CRATE
    local crate=$1 label="compat-$1-client" outdir bin kpid cpid rc=0 crc=0 cmp=0 start=$SECONDS deadline
    outdir=$AUTOBAHN/reports/$label
    rm -rf "$outdir" "$outdir.compare.txt" && mkdir -p "$(dirname "$outdir")"
    bin=$(executable "$crate-autobahn-client") || {
        SUMMARY+=("[$label] FAIL: $crate-autobahn-client did not build")
        return 1
    }
    require_free "$CLIENT_PORT" || {
        SUMMARY+=("[$label] FAIL: port $CLIENT_PORT in use")
        return 1
    }
    log "$label: kosoku fuzzingserver on 127.0.0.1:$CLIENT_PORT ${SEL_ARGS[*]} (log: $outdir.kosoku.log)"
    # kosoku gets longer than the client, so it is still there to write the
    # report when the client has to be stopped.
    timeout $((RUN_TIMEOUT + DRAIN_TIMEOUT + 30)) "$VENV/bin/kosoku" -m fuzzingserver \
        "127.0.0.1:$CLIENT_PORT" "${SEL_ARGS[@]}" -o "$outdir" >"$outdir.kosoku.log" 2>&1 &
    kpid=$!
    PIDS+=("$kpid")
    wait_for_port "$CLIENT_PORT" "$kpid" || {
        stop_pid "$kpid"
        SUMMARY+=("[$label] FAIL: kosoku fuzzingserver did not start (see $outdir.kosoku.log)")
        return 1
    }
    log "$label: $bin (log: $outdir.log)"
    timeout "$RUN_TIMEOUT" "$bin" >"$outdir.log" 2>&1 &
    cpid=$!
    PIDS+=("$cpid")
    wait "$cpid" || crc=$?
    if ((crc != 0)); then
        log "$label: the client exited $crc (see $outdir.log); asking kosoku for the partial report"
        poke_update_reports
    fi
    deadline=$((SECONDS + DRAIN_TIMEOUT))
    while kill -0 "$kpid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
    if kill -0 "$kpid" 2>/dev/null; then
        log "$label: kosoku still running ${DRAIN_TIMEOUT}s after the client finished; killing it"
        stop_pid "$kpid"
        rc=124
    else
        wait "$kpid" || rc=$?
    fi
    if ((rc != 0)); then log "$label: kosoku exited $rc (log: $outdir.kosoku.log)"; fi
    compare "$label" "$outdir" "$HERE/autobahn/upstream-$crate-client.json" --agent "$AGENT" || cmp=$?
    finish "$label" $((rc || crc || cmp)) $((SECONDS - start)) "$outdir"
}

finish() { # finish LABEL FAILED SECONDS OUTDIR
    local label=$1 failed=$2 secs=$3 outdir=$4 line
    line=$(tail -n 1 "$outdir.compare.txt" 2>/dev/null || true)
    [[ -n $line ]] || line="[$label] FAIL: no comparison (see $outdir.kosoku.log)"
    if ((failed)) && [[ $line == *"] PASS"* ]]; then
        line="${line/] PASS/] FAIL (see logs in $AUTOBAHN/reports)}"
    fi
    SUMMARY+=("$line in ${secs}s")
    return "$failed"
}

ensure_venv
if ((PREPARE_ONLY)); then
    for crate in "${CRATES[@]}"; do
        for mode in "${MODES[@]}"; do
            executable "$crate-autobahn-$mode" >/dev/null
        done
    done
    log "prepared: the venv and the examples are built"
    exit 0
fi

status=0
for crate in "${CRATES[@]}"; do
    for mode in "${MODES[@]}"; do
        "run_$mode" "$crate" || status=1
    done
done

echo
printf '%s\n' "${SUMMARY[@]}"
exit "$status"
