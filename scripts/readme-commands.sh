#!/usr/bin/env bash
# Runs the commands of README.md as written, each bounded in time, so that
# a newcomer's first commands work (scripts/test.sh runs this right after
# the tests):
#
#   bash scripts/readme-commands.sh          check every command
#   bash scripts/readme-commands.sh --list   each command and how it is checked
#
# Which lines are commands: every line of the README's ```sh blocks (a `#`
# after a space starts a comment, as in the shell; a trailing `\` joins the
# next line). The other blocks hold none: a line of a ```text block that
# starts like a command (cargo, bash, curl, ...) fails the check, and so do
# ```bash/```console/```shell blocks, so a command cannot slip past it.
#
# Each command needs a rule below, and each rule's command must be in the
# README: a new or changed command fails the check until its rule says how
# it is run, so the README and this script cannot drift apart.
#
#   pair SERVER PORT CLIENT...  SERVER runs in the background and must listen
#                               on 127.0.0.1:PORT; each CLIENT (an echo round
#                               trip) must exit 0 and print "closed cleanly";
#                               then SERVER is stopped by PID
#   tls_server SERVER PORT      SERVER prints a self-signed certificate and
#                               listens on PORT: an HTTPS GET of / and a
#                               WebSocket echo over TLS, trusting that
#                               certificate (python3's ssl), must succeed
#   once COMMAND                must exit 0
#   session START STOP COMMAND...  START must exit 0, then each COMMAND; STOP
#                               (also on any exit) undoes START
#   requires COMMAND            run before the rules after it (an installer),
#                               not a README command
#   build COMMAND               an extra build for the rules (not a README command)
#   skip COMMAND WHY [CHECK]    not run, for the reason given; CHECK (if any)
#                               must succeed
#
# Every `cargo run` is built first (`cargo build` with the same options,
# within BUILD_TIMEOUT seconds each) so that the run's own limit, RUN_TIMEOUT
# seconds, bounds the program and not the compiler. Servers listen on the
# README's fixed ports (9001, 9003, 3000, 3443): a port already taken fails
# the check at once. Logs: target/readme-commands/.
#
# Environment (optional): BUILD_TIMEOUT (default 1800), RUN_TIMEOUT (120),
# STARTUP_TIMEOUT (seconds for a server to listen, 60).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

BUILD_TIMEOUT=${BUILD_TIMEOUT:-1800}
RUN_TIMEOUT=${RUN_TIMEOUT:-120}
STARTUP_TIMEOUT=${STARTUP_TIMEOUT:-60}
SERVER_LIFETIME=900 # a server outliving this script is killed by its timeout
LOGS=${CARGO_TARGET_DIR:-$ROOT/target}/readme-commands
README=README.md

# The rules: how each README command is checked, in the order they run.
rules() {
    once 'cargo run --release -p lockgate-loadgen'

    pair 'cargo run --example echo-server' 9001 \
        'cargo run --example client'
    pair 'cargo run -p tokio-lockgate --example tokio-echo-server' 9001 \
        'cargo run -p tokio-lockgate --example tokio-client'
    pair 'cargo run -p tokio-lockgate --example hyper-upgrade' 9003 \
        'cargo run -p tokio-lockgate --example tokio-client -- ws://127.0.0.1:9003/ws'
    pair 'cargo run -p tokio-lockgate --features axum --example axum -- 127.0.0.1:3000' 3000 \
        'cargo run -p tokio-lockgate --example tokio-client -- ws://127.0.0.1:3000/ws'
    tls_server 'cargo run -p tokio-lockgate --features axum --example axum -- 127.0.0.1:3443 --tls' 3443

    # The cluster's state goes to a directory of its own: a cluster the
    # reader started by hand from the README is left alone.
    export FANOUT_DIR=$LOGS/fanout-cluster
    requires 'bash scripts/install-nats.sh'
    build 'cargo build --release -p lockgate-fanout'
    session 'bash scripts/fanout-cluster.sh start 2' 'bash scripts/fanout-cluster.sh stop' \
        "cargo run --release -p lockgate-loadgen -- --mode broadcast \$(bash scripts/fanout-cluster.sh urls | sed 's/^/--url /')"

    skip 'bash scripts/test.sh' \
        'the test command itself: this script is one of its steps'
    skip 'bash scripts/test.sh --quick' \
        'a subset of the test command, whose every step the full run runs'
    skip 'bash scripts/fuzz.sh' \
        'scripts/test.sh runs it (its fuzz step)'
    skip 'bash scripts/fuzz.sh context_server 3600' \
        'an hour by design; scripts/test.sh runs the same script on every target; the target is checked to exist' \
        'bash scripts/fuzz.sh --list | grep -qx context_server'
    skip 'cargo bench' \
        'criterion runs for many minutes; scripts/test.sh compiles every bench (clippy --all-targets)'
    skip 'cargo run --release -p bench-peers' \
        'the full comparison with six peer libraries takes most of an hour; scripts/test.sh lints bench-peers (clippy -p bench-peers --all-targets)'
}

# --- the README's commands ---------------------------------------------------
README_CMDS=()  # command text
README_LINES=() # its line number
README_ERRORS=()
read_readme() {
    local n=0 line fence='' cmd='' start=0 code
    while IFS= read -r line || [[ -n $line ]]; do
        n=$((n + 1))
        if [[ $line =~ ^[[:space:]]*(\`\`\`|~~~)[[:space:]]*([^[:space:]]*) ]]; then
            if [[ -z $fence ]]; then
                fence=${BASH_REMATCH[2]:-none}
                case $fence in
                    bash | shell | console | zsh | shell-session)
                        README_ERRORS+=("$README:$n: a \`\`\`$fence block: commands go in \`\`\`sh blocks (this script runs them)")
                        ;;
                esac
            else
                fence=''
            fi
            continue
        fi
        case $fence in
            sh)
                # A `#` at the start or after a space starts a comment.
                code=$line
                [[ $code == \#* ]] && code=
                code=${code%%[[:space:]]#*}
                code=$(trim "$code")
                if [[ -z $cmd ]]; then start=$n; fi
                if [[ $code == *\\ ]]; then
                    cmd+="${code%\\} "
                    continue
                fi
                cmd+=$code
                cmd=$(trim "$cmd")
                if [[ -n $cmd ]]; then
                    README_CMDS+=("$cmd")
                    README_LINES+=("$start")
                fi
                cmd=''
                ;;
            '') ;;
            *)
                if [[ $line =~ ^[[:space:]]*(\$[[:space:]]+)?(cargo|bash|sh|curl|wget|python3?|pip3?|npm|npx|node|git|rustup|docker|make|sudo|apt-get|apt|kosoku|nats-server|\./)([[:space:]]|$) ]]; then
                    README_ERRORS+=("$README:$n: a command in a \`\`\`$fence block: put it in a \`\`\`sh block (this script runs those): $line")
                fi
                ;;
        esac
    done <"$README"
    [[ -z $fence ]] || README_ERRORS+=("$README: a code block is not closed")
}

trim() {
    local s=$1
    s=${s#"${s%%[![:space:]]*}"}
    s=${s%"${s##*[![:space:]]}"}
    printf '%s' "$s"
}

# --- rules: declared, listed, built, run -----------------------------------
# PHASE is declare (collect the commands the rules know), list, build or run.
PHASE=declare
declare -A KNOWN=()    # README command -> how it is checked
declare -A BUILT=()    # cargo build commands done
FAILURES=()
SUMMARY=()

know() { # know COMMAND HOW
    KNOWN[$1]=$2
    if [[ $PHASE == list ]]; then printf '  %-11s %s\n' "$2" "$1"; fi
}

log() { printf '[readme] %s\n' "$*" >&2; }

fail() { # fail WHAT [LOG]: record a failure, show the log's end
    FAILURES+=("$1")
    log "FAIL: $1"
    if [[ -n ${2:-} && -s $2 ]]; then
        log "last lines of $2:"
        tail -n 20 "$2" | sed 's/^/    /' >&2
    fi
}

ok() { SUMMARY+=("ok    $*"); log "ok: $*"; }

# A file name for a command's log.
log_file() {
    local name
    name=$(printf '%s' "$1" | tr -c 'A-Za-z0-9._-' '_' | cut -c1-100)
    printf '%s/%s.log' "$LOGS" "$name"
}

# `cargo build` for a `cargo run` command (its options, not the program's).
build_for() { # build_for COMMAND
    local cmd=$1
    [[ $cmd == 'cargo run '* ]] || return 0
    cmd=${cmd%% -- *}
    build_now "cargo build ${cmd#cargo run }"
}

build_now() { # build_now CARGO_BUILD_COMMAND, once each
    local cmd=$1 file pid
    [[ -z ${BUILT[$cmd]:-} ]] || return 0
    BUILT[$cmd]=1
    file=$(log_file "$cmd")
    log "building: $cmd"
    timeout "$BUILD_TIMEOUT" bash -c "$cmd" >"$file" 2>&1 </dev/null &
    pid=$!
    PIDS+=("$pid")
    wait "$pid" || fail "build failed or took over ${BUILD_TIMEOUT}s: $cmd" "$file"
    forget_pid "$pid"
}

port_open() { # port_open PORT: something accepts connections there
    timeout 2 bash -c ": </dev/tcp/127.0.0.1/$1" 2>/dev/null
}

# --- background processes: stopped by PID, always ----------------------------
PIDS=()
TEARDOWNS=()
stop_pid() { # stop_pid PID: TERM, then KILL to its process group if it lingers
    local pid=$1 i
    if ! kill -0 "$pid" 2>/dev/null; then
        wait "$pid" 2>/dev/null || true
        forget_pid "$pid"
        return 0
    fi
    # The PID is `timeout`'s, which passes the signal on and leads the
    # process group of what it runs.
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    forget_pid "$pid"
}
forget_pid() { # forget_pid PID: it has exited and been waited for
    local kept=() p
    for p in ${PIDS[@]+"${PIDS[@]}"}; do [[ $p == "$1" ]] || kept+=("$p"); done
    PIDS=(${kept[@]+"${kept[@]}"})
}
cleanup() {
    local pid cmd
    for pid in ${PIDS[@]+"${PIDS[@]}"}; do stop_pid "$pid"; done
    for cmd in ${TEARDOWNS[@]+"${TEARDOWNS[@]}"}; do
        timeout "$RUN_TIMEOUT" bash -c "$cmd" >/dev/null 2>&1 || true
    done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start_server COMMAND PORT LOG: starts COMMAND in the background once PORT
# is free, waits until it listens; its PID in SERVER_PID.
SERVER_PID=
start_server() {
    local cmd=$1 port=$2 file=$3 deadline
    SERVER_PID=
    if port_open "$port"; then
        fail "port $port is taken before \`$cmd\` starts (the README's commands use fixed ports)"
        return 1
    fi
    timeout --kill-after=5 "$SERVER_LIFETIME" bash -c "$cmd" >"$file" 2>&1 &
    SERVER_PID=$!
    PIDS+=("$SERVER_PID")
    deadline=$((SECONDS + STARTUP_TIMEOUT))
    until port_open "$port"; do
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            fail "\`$cmd\` exited before listening on $port" "$file"
            return 1
        fi
        if ((SECONDS >= deadline)); then
            fail "\`$cmd\` not listening on $port after ${STARTUP_TIMEOUT}s" "$file"
            return 1
        fi
        sleep 0.2
    done
}

stop_server() { # stop_server PORT: stops SERVER_PID and waits for PORT to close
    local port=$1 i
    [[ -n $SERVER_PID ]] || return 0
    stop_pid "$SERVER_PID"
    for i in $(seq 50); do
        port_open "$port" || return 0
        sleep 0.1
    done
    fail "port $port still open after its server was stopped"
}

# run_once COMMAND LOG: exits 0 within RUN_TIMEOUT. In the background and
# waited for, so that a signal to this script is handled at once.
run_once() {
    local cmd=$1 file=$2 rc=0 pid
    timeout --kill-after=5 "$RUN_TIMEOUT" bash -c "$cmd" >"$file" 2>&1 </dev/null &
    pid=$!
    PIDS+=("$pid")
    wait "$pid" || rc=$?
    forget_pid "$pid"
    if ((rc == 124)); then
        fail "\`$cmd\` still running after ${RUN_TIMEOUT}s" "$file"
    elif ((rc != 0)); then
        fail "\`$cmd\` exited $rc" "$file"
    fi
    return "$rc"
}

# --- the rule kinds ------------------------------------------------------------
once() {
    case $PHASE in
        declare | list) know "$1" once ;;
        build) build_for "$1" ;;
        run)
            log "running: $1"
            run_once "$1" "$(log_file "$1")" && ok "$1: exited 0"
            ;;
    esac
    return 0
}

pair() {
    local server=$1 port=$2 client file cfile
    shift 2
    case $PHASE in
        declare | list)
            know "$server" "server:$port"
            for client in "$@"; do know "$client" "client:$port"; done
            ;;
        build)
            build_for "$server"
            for client in "$@"; do build_for "$client"; done
            ;;
        run)
            file=$(log_file "$server")
            log "starting: $server (port $port)"
            if start_server "$server" "$port" "$file"; then
                ok "$server: listening on $port"
                for client in "$@"; do
                    cfile=$(log_file "$client")
                    log "running: $client"
                    if run_once "$client" "$cfile"; then
                        if grep -q 'closed cleanly' "$cfile"; then
                            ok "$client: echo round trip with \`$server\`, closed cleanly"
                        else
                            fail "\`$client\` exited 0 without \"closed cleanly\"" "$cfile"
                        fi
                    fi
                done
            fi
            stop_server "$port"
            ;;
    esac
    return 0
}

tls_server() {
    local server=$1 port=$2 file pem deadline
    case $PHASE in
        declare | list) know "$server" "tls:$port" ;;
        build) build_for "$server" ;;
        run)
            file=$(log_file "$server")
            pem=$LOGS/tls-$port.pem
            log "starting: $server (port $port)"
            if start_server "$server" "$port" "$file"; then
                # The certificate is printed before the listener line.
                deadline=$((SECONDS + STARTUP_TIMEOUT))
                until grep -q '^listening on https://' "$file"; do
                    if ((SECONDS >= deadline)); then
                        fail "\`$server\` printed no \"listening on https://\" line" "$file"
                        break
                    fi
                    sleep 0.2
                done
                sed -n '/-----BEGIN CERTIFICATE-----/,/-----END CERTIFICATE-----/p' "$file" >"$pem"
                if timeout "$RUN_TIMEOUT" python3 - "$port" "$pem" >>"$file" 2>&1 <<'EOF'; then
import base64, os, socket, ssl, sys

port, pem = int(sys.argv[1]), sys.argv[2]
context = ssl.create_default_context(cafile=pem)  # the printed certificate
context.set_alpn_protocols(["http/1.1"])


def connect():
    tcp = socket.create_connection(("127.0.0.1", port), timeout=20)
    return context.wrap_socket(tcp, server_hostname="localhost")


def read_head(tls):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = tls.recv(65536)
        if not chunk:
            sys.exit(f"connection closed after {data!r}")
        data += chunk
    return data.split(b"\r\n\r\n", 1)


with connect() as tls:
    tls.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    head, _ = read_head(tls)
    if not head.startswith(b"HTTP/1.1 200"):
        sys.exit(f"GET / over TLS: {head!r}")

key = base64.b64encode(os.urandom(16)).decode()
with connect() as tls:
    tls.sendall(
        "GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
        "Sec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    head, rest = read_head(tls)
    if not head.startswith(b"HTTP/1.1 101"):
        sys.exit(f"upgrade over TLS: {head!r}")
    payload, mask = b"hello over TLS", os.urandom(4)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    tls.sendall(bytes([0x81, 0x80 | len(payload)]) + mask + masked)
    while len(rest) < 2 + len(payload):
        chunk = tls.recv(65536)
        if not chunk:
            sys.exit(f"closed before the echo: {rest!r}")
        rest += chunk
    if rest[: 2 + len(payload)] != bytes([0x81, len(payload)]) + payload:
        sys.exit(f"echo over TLS: {rest!r}")
print(f"https://127.0.0.1:{port}/ and wss://127.0.0.1:{port}/ws answer, certificate as printed")
EOF
                    ok "$server: HTTPS GET / and a WebSocket echo over TLS, trusting the printed certificate"
                else
                    fail "\`$server\`: the TLS checks failed" "$file"
                fi
            fi
            stop_server "$port"
            ;;
    esac
    return 0
}

session() {
    local start=$1 stop=$2 cmd
    shift 2
    case $PHASE in
        declare | list)
            know "$start" session
            for cmd in "$@"; do know "$cmd" "in-session"; done
            ;;
        build) for cmd in "$@"; do build_for "$cmd"; done ;;
        run)
            TEARDOWNS+=("$stop")
            log "running: $start"
            if run_once "$start" "$(log_file "$start")"; then
                ok "$start: exited 0"
                for cmd in "$@"; do
                    log "running: $cmd"
                    run_once "$cmd" "$(log_file "$cmd")" && ok "$cmd: exited 0"
                done
            fi
            log "running: $stop"
            run_once "$stop" "$(log_file "$stop")" && ok "$stop: exited 0"
            ;;
    esac
    return 0
}

requires() {
    if [[ $PHASE == build ]]; then
        log "running: $1"
        run_once "$1" "$(log_file "$1")" || true
    fi
    return 0
}

build() {
    [[ $PHASE == build ]] && build_now "$1"
    return 0
}

skip() {
    local cmd=$1 why=$2 check=${3:-}
    case $PHASE in
        declare | list) know "$cmd" skip ;;
        run)
            if [[ -n $check ]]; then
                if timeout "$RUN_TIMEOUT" bash -c "$check"; then
                    SUMMARY+=("skip  $cmd: $why ($check: ok)")
                else
                    fail "\`$cmd\`: $check failed"
                fi
            else
                SUMMARY+=("skip  $cmd: $why")
            fi
            ;;
    esac
    return 0
}

# --- main ------------------------------------------------------------------------
if [[ $# -gt 0 && $1 != --list ]]; then
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
    exit 2
fi
read_readme
rules # declare

# The README and the rules must name the same commands.
declare -A IN_README=()
for i in "${!README_CMDS[@]}"; do
    cmd=${README_CMDS[$i]}
    IN_README[$cmd]=1
    if [[ -z ${KNOWN[$cmd]:-} ]]; then
        README_ERRORS+=("$README:${README_LINES[$i]}: no rule says how to run \`$cmd\`: add one to scripts/readme-commands.sh")
    fi
done
for cmd in "${!KNOWN[@]}"; do
    if [[ -z ${IN_README[$cmd]:-} ]]; then
        README_ERRORS+=("scripts/readme-commands.sh has a rule for \`$cmd\`, which $README does not have: update the rule")
    fi
done

if [[ ${1:-} == --list ]]; then
    PHASE=list
    echo "$README's commands and the rule each one has (scripts/readme-commands.sh):"
    rules
fi
if ((${#README_ERRORS[@]})); then
    printf '[readme] %s\n' "${README_ERRORS[@]}" >&2
    exit 1
fi
[[ ${1:-} != --list ]] || exit 0
log "${#README_CMDS[@]} commands in $README, each with a rule"

rm -rf "$LOGS" && mkdir -p "$LOGS"
PHASE=build
rules
if ((${#FAILURES[@]} == 0)); then
    PHASE=run
    rules
fi

echo
printf '%s\n' ${SUMMARY[@]+"${SUMMARY[@]}"}
if ((${#FAILURES[@]})); then
    printf 'FAIL  %s\n' "${FAILURES[@]}"
    echo "[readme] ${#FAILURES[@]} README command check(s) failed (logs: $LOGS)" >&2
    exit 1
fi
echo "[readme] every README command works as written"
