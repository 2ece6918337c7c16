#!/usr/bin/env bash
# Runs the commands of every README in the repository (README.md,
# fanout/README.md, ...: `git ls-files '*README*'`) as written, each bounded
# in time, so that a newcomer's first commands work (scripts/test.sh runs
# this right after the tests):
#
#   bash scripts/readme-commands.sh          check every command
#   bash scripts/readme-commands.sh --list   each command and how it is checked
#
# Which lines are commands: every line of a README's ```sh blocks (a `#`
# after a space starts a comment, as in the shell; a trailing `\` joins the
# next line). The other blocks hold none: a line of a ```text block that
# starts like a command (cargo, bash, curl, ...) fails the check, and so do
# ```bash/```console/```shell blocks, so a command cannot slip past it.
#
# Each command needs a rule below, under its README's `readme FILE` line,
# and each rule's command must be in that README: a new or changed command
# fails the check until its rule says how it is run, so the READMEs and
# this script cannot drift apart. A README without commands needs no rules.
#
#   readme FILE                 the rules after it are FILE's
#   pair SERVER PORT CLIENT...  SERVER runs in the background and must listen
#                               on 127.0.0.1:PORT; each CLIENT (an echo round
#                               trip) must exit 0 and print "closed cleanly";
#                               then SERVER is stopped by PID
#   tls_server SERVER PORT      SERVER prints a self-signed certificate and
#                               listens on PORT: an HTTPS GET of / and a
#                               WebSocket echo over TLS, trusting that
#                               certificate (python3's ssl), must succeed
#   serve SERVER PORT COMMAND...  SERVER runs in the background and must
#                               listen on 127.0.0.1:PORT; each COMMAND must
#                               exit 0; then SERVER is stopped by PID
#   once COMMAND                must exit 0
#   session [--stop-listed] START STOP COMMAND...  START must exit 0, then
#                               each COMMAND; STOP (also on any exit) undoes
#                               START. --stop-listed: STOP is a README
#                               command too, and must exit 0
#   setup COMMAND               an installer the README lists: run before
#                               the commands (outside the namespace below,
#                               as it may need the network), must exit 0
#   requires COMMAND            run before the rules after it (an installer),
#                               not a README command
#   build COMMAND               an extra build for the rules (not a README command)
#   skip COMMAND WHY [CHECK]    not run, for the reason given; CHECK (if any)
#                               must succeed
#
# Two phases. Build: every `cargo run` is built first (`cargo build` with
# the same options, within BUILD_TIMEOUT seconds each), with the `build`,
# `requires` and `setup` rules, so that the run's own limit, RUN_TIMEOUT
# seconds, bounds the program and not the compiler. Run: the commands, in a
# private network namespace (`unshare -n`, loopback only, cargo offline:
# everything was built), where the READMEs' fixed ports (9001, 9003, 3000,
# 3443) meet nothing of the host's: the check neither needs them free nor
# disturbs what listens there. Without `unshare -n` (not root, no
# util-linux) the commands run on the host's network, as the README's
# reader does, and a port already taken fails the check at once. Logs:
# target/readme-commands/.
#
# Environment (optional): BUILD_TIMEOUT (default 1800), RUN_TIMEOUT (120),
# STARTUP_TIMEOUT (seconds for a server to listen, 60), RUN_PHASE_TIMEOUT
# (the whole run phase, 3600), README_NETNS=off (run on the host's network).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

BUILD_TIMEOUT=${BUILD_TIMEOUT:-1800}
RUN_TIMEOUT=${RUN_TIMEOUT:-120}
STARTUP_TIMEOUT=${STARTUP_TIMEOUT:-60}
SERVER_LIFETIME=900 # a server outliving this script is killed by its timeout
LOGS=${CARGO_TARGET_DIR:-$ROOT/target}/readme-commands

# The rules: how each README command is checked, in the order they run.
rules() {
    readme README.md
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
    serve 'cargo run -p tokio-lockgate --features axum,metrics,tracing --example production -- 127.0.0.1:3000' 3000 \
        "curl -s http://127.0.0.1:3000/ | grep -c 'new WebSocket'" \
        "curl -s http://127.0.0.1:3000/metrics | grep -E '^lockgate_(connections|hub_)'"

    # The cluster's state goes to a directory of its own: a cluster the
    # reader started by hand from the README is left alone.
    export FANOUT_DIR=$LOGS/fanout-cluster
    requires 'bash scripts/install-nats.sh'
    build 'cargo build --release -p lockgate-fanout'
    session 'bash scripts/fanout-cluster.sh start 2' 'bash scripts/fanout-cluster.sh stop' \
        "cargo run --release -p lockgate-loadgen -- --mode broadcast \$(bash scripts/fanout-cluster.sh urls | sed 's/^/--url /')"
    once 'cargo run --release -p lockgate-loadgen -- --mode resume'

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

    readme fanout/README.md
    setup 'bash scripts/install-nats.sh'
    session --stop-listed 'bash scripts/fanout-cluster.sh start 2' 'bash scripts/fanout-cluster.sh stop' \
        "cargo run --release -p lockgate-loadgen -- --mode broadcast \$(bash scripts/fanout-cluster.sh urls | sed 's/^/--url /')"
    session --stop-listed 'FANOUT_JETSTREAM=1 bash scripts/fanout-cluster.sh start 3' 'bash scripts/fanout-cluster.sh stop' \
        "cargo run --release -p lockgate-loadgen -- --mode resume \$(bash scripts/fanout-cluster.sh urls | sed 's/^/--url /')"
    serve "cargo run --release -p lockgate-fanout -- --listen 0.0.0.0:9001 --allow-origin 'https://*.example.com' --allow-origin http://localhost:5173" 9001 \
        "curl -s http://127.0.0.1:9001/metrics | grep -E '^lockgate_(messages|bytes|closes|connections|hub_(published|queued|delivered)|fanout_(messages|connections_open))'"

    readme autobahn/README.md
    skip 'bash autobahn/run.sh' \
        'scripts/test.sh runs it, both modes, for each of the three drivers (its Autobahn steps)'
    skip 'bash autobahn/run.sh --update' \
        'rewrites the committed expected results: for after an intended change, by hand'
    skip 'bash autobahn/run.sh server -v' \
        'the server half of the run above, printing failing cases in full; scripts/test.sh runs the server mode' \
        'bash autobahn/run.sh --help >/dev/null'

    readme compat/README.md
    local why='scripts/test.sh runs it (its tungstenite compatibility step, after installing the interop peers; upstream sources and PyPI need the network)'
    skip 'bash scripts/port-tungstenite.sh --check' "$why"
    skip 'bash compat/build-examples.sh' "$why"
    skip 'cargo clippy -p lockgate-compat --tests -- -D warnings' "$why"
    skip 'cargo test -p lockgate-compat' "$why"
    skip 'bash compat/run-autobahn.sh' "$why"

    readme fuzz/README.md
    once 'scripts/fuzz.sh --list'
    skip 'scripts/fuzz.sh' \
        'scripts/test.sh runs it (its fuzz step)'
    skip 'scripts/fuzz.sh context_server 3600' \
        'an hour by design; scripts/test.sh runs the same script on every target; the target is checked to exist' \
        'scripts/fuzz.sh --list | grep -qx context_server'
    skip 'cd fuzz && cargo clippy --all-targets -- -D warnings' \
        'scripts/test.sh runs it (its clippy step)'
    skip 'cd fuzz && RUSTFLAGS="--cfg fuzzing" cargo clippy --all-targets -- -D warnings' \
        'scripts/test.sh runs it (its clippy step)'
    skip 'cd fuzz && cargo run --example gen_corpus' \
        'rewrites the committed seeds: for after a change to the encoders, by hand; the check below runs the same program'
    skip 'cd fuzz && cargo run --example gen_corpus -- --check' \
        'scripts/test.sh runs it (its fuzz step; the fuzz crate builds libFuzzer, minutes on a cold target directory)'
}

# --- the READMEs' commands ---------------------------------------------------
mapfile -t READMES < <(git ls-files -- '*README*' | grep -E '\.(md|markdown)$')
((${#READMES[@]})) || READMES=(README.md)
README_CMDS=()  # command text
README_FILES=() # its README
README_LINES=() # its line number
README_ERRORS=()
read_readme() { # read_readme FILE
    local README=$1 n=0 line fence='' cmd='' start=0 code
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
                    cmd+="$(trim "${code%\\}") "
                    continue
                fi
                cmd+=$code
                cmd=$(trim "$cmd")
                if [[ -n $cmd ]]; then
                    README_CMDS+=("$cmd")
                    README_FILES+=("$README")
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
declare -A KNOWN=()    # README<US>command -> how it is checked
US=$'\x1f'            # between a README's name and a command in KNOWN's keys
CURRENT_README=
declare -A BUILT=()    # cargo build commands done
FAILURES=()
SUMMARY=()

readme() { # readme FILE: the rules after it are FILE's
    CURRENT_README=$1
    if [[ $PHASE == list ]]; then printf '%s:\n' "$1"; fi
}

know() { # know COMMAND HOW
    KNOWN[$CURRENT_README$US$1]=$2
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

# served KIND CHECK SERVER PORT COMMAND...: SERVER in the background on
# PORT, each COMMAND run against it and judged by CHECK (called with the
# command and the server), then SERVER stopped: what `pair` and `serve`
# share.
served() {
    local kind=$1 check=$2 server=$3 port=$4 cmd file
    shift 4
    case $PHASE in
        declare | list)
            know "$server" "server:$port"
            for cmd in "$@"; do know "$cmd" "$kind:$port"; done
            ;;
        build)
            build_for "$server"
            for cmd in "$@"; do build_for "$cmd"; done
            ;;
        run)
            file=$(log_file "$server")
            log "starting: $server (port $port)"
            if start_server "$server" "$port" "$file"; then
                ok "$server: listening on $port"
                for cmd in "$@"; do
                    log "running: $cmd"
                    "$check" "$cmd" "$server"
                done
            fi
            stop_server "$port"
            ;;
    esac
    return 0
}

# An echo client: exits 0 and says "closed cleanly".
echo_round_trip() {
    local client=$1 server=$2 cfile
    cfile=$(log_file "$client")
    if run_once "$client" "$cfile"; then
        if grep -q 'closed cleanly' "$cfile"; then
            ok "$client: echo round trip with \`$server\`, closed cleanly"
        else
            fail "\`$client\` exited 0 without \"closed cleanly\"" "$cfile"
        fi
    fi
    return 0
}

# Any command: exits 0.
exits_zero() {
    local cmd=$1 server=$2
    run_once "$cmd" "$(log_file "$cmd")" && ok "$cmd: exited 0 with \`$server\` running"
    return 0
}

pair() { served client echo_round_trip "$@"; }

serve() { served with exits_zero "$@"; }

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
    local listed=false start stop cmd
    if [[ $1 == --stop-listed ]]; then
        listed=true
        shift
    fi
    start=$1 stop=$2
    shift 2
    case $PHASE in
        declare | list)
            know "$start" session
            if $listed; then know "$stop" end-session; fi
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

setup() {
    case $PHASE in
        declare | list) know "$1" setup ;;
        build)
            log "running: $1"
            run_once "$1" "$(log_file "$1")" && ok "$1: exited 0 (before the commands)"
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
report() { # the summary of the run phase; exits 1 on any failure
    echo
    printf '%s\n' ${SUMMARY[@]+"${SUMMARY[@]}"}
    if ((${#FAILURES[@]})); then
        printf 'FAIL  %s\n' "${FAILURES[@]}"
        echo "[readme] ${#FAILURES[@]} README command check(s) failed (logs: $LOGS)" >&2
        exit 1
    fi
    echo "[readme] every README command works as written"
    exit 0
}

# The run phase inside the private network namespace: this script again,
# started by the one that built everything (below), not a command for you.
# (scripts/private-network.sh brought its loopback up and set cargo
# offline: everything is built, nothing here can reach a registry.)
if [[ ${1:-} == --run-in-netns ]]; then
    # What the build phase reported (the setup commands), first.
    if [[ -s $LOGS/build-phase.summary ]]; then mapfile -t SUMMARY <"$LOGS/build-phase.summary"; fi
    PHASE=run
    rules
    report
fi

if [[ $# -gt 0 && $1 != --list ]]; then
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
    exit 2
fi
for file in "${READMES[@]}"; do read_readme "$file"; done
rules # declare

# Each README and its rules must name the same commands.
declare -A IN_README=()
for i in "${!README_CMDS[@]}"; do
    cmd=${README_CMDS[$i]}
    key=${README_FILES[$i]}$US$cmd
    IN_README[$key]=1
    if [[ -z ${KNOWN[$key]:-} ]]; then
        README_ERRORS+=("${README_FILES[$i]}:${README_LINES[$i]}: no rule says how to run \`$cmd\`: add one under \`readme ${README_FILES[$i]}\` in scripts/readme-commands.sh")
    fi
done
for key in "${!KNOWN[@]}"; do
    if [[ -z ${IN_README[$key]:-} ]]; then
        README_ERRORS+=("scripts/readme-commands.sh has a rule for \`${key#*"$US"}\`, which ${key%%"$US"*} does not have: update the rule")
    fi
done

if [[ ${1:-} == --list ]]; then
    PHASE=list
    echo "The READMEs' commands and the rule each one has (scripts/readme-commands.sh):"
    rules
fi
if ((${#README_ERRORS[@]})); then
    printf '[readme] %s\n' "${README_ERRORS[@]}" >&2
    exit 1
fi
[[ ${1:-} != --list ]] || exit 0
log "${#README_CMDS[@]} commands in ${#READMES[@]} READMEs (${READMES[*]}), each with a rule"

rm -rf "$LOGS" && mkdir -p "$LOGS"
PHASE=build
rules
((${#FAILURES[@]} == 0)) || report

netns=no
if [[ ${README_NETNS:-} == off ]]; then
    log "README_NETNS=off: the commands run on this host's network; the READMEs' fixed ports (9001, 9003, 3000, 3443) must be free"
elif ! bash "$ROOT/scripts/private-network.sh" --check; then
    log "no private network namespace (\`unshare -n\` needs root, util-linux and iproute2): the commands run on this host's network, as before; the READMEs' fixed ports (9001, 9003, 3000, 3443) must be free"
else
    netns=yes
fi
if [[ $netns == no ]]; then
    PHASE=run
    rules
    report
fi
log "running the commands in a private network namespace (unshare -n, loopback only, cargo offline)"
((${#SUMMARY[@]} == 0)) || printf '%s\n' "${SUMMARY[@]}" >"$LOGS/build-phase.summary"
rc=0
timeout --kill-after=10 "${RUN_PHASE_TIMEOUT:-3600}" \
    bash "$ROOT/scripts/private-network.sh" bash "${BASH_SOURCE[0]}" --run-in-netns &
pid=$!
PIDS+=("$pid")
wait "$pid" || rc=$?
forget_pid "$pid"
((rc != 124)) || log "FAIL: the run phase took over ${RUN_PHASE_TIMEOUT:-3600}s (RUN_PHASE_TIMEOUT)"
exit "$rc"
