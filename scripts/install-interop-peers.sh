#!/usr/bin/env bash
# Installs the third-party WebSocket peers used by interop/tests/interop.rs
# (package lockgate-interop, run by `cargo test -p lockgate-interop`):
#
#   interop/peers/.venv          Python venv with `websockets` (requirements.txt)
#   interop/peers/node_modules   Node's `ws` (package.json / package-lock.json)
#
#   bash scripts/install-interop-peers.sh
#
# Idempotent: each part is reinstalled only when its pinned inputs changed
# (a stamp file records the hash of requirements.txt / package-lock.json).
# Quiet on success; on failure it prints the failing tool's output and exits
# non-zero. Needs python3 >= 3.11 (websockets 17 requires it), node >= 18,
# npm, and access to PyPI and the npm registry.
#
# Environment (optional): PYTHON  interpreter for the venv (default python3)
#                         NPM     npm executable (default npm)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=$ROOT/interop/peers
VENV=$DIR/.venv
PYTHON=${PYTHON:-python3}
NPM=${NPM:-npm}

LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT

fail() {
    {
        echo "install-interop-peers: FAILED: $*"
        if [[ -s $LOG ]]; then
            echo "---- output ----"
            cat "$LOG"
            echo "----------------"
        fi
    } >&2
    exit 1
}

# run CMD...: runs quietly, keeping the output for fail().
run() {
    : >"$LOG"
    "$@" >"$LOG" 2>&1
}

in_dir() { # in_dir DIR CMD...
    local dir=$1
    shift
    (cd "$dir" && "$@")
}

hash_of() { # hash_of FILE
    "$PYTHON" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$1"
}

# --- Python: websockets ------------------------------------------------------
command -v "$PYTHON" >/dev/null || fail "'$PYTHON' not found (need Python >= 3.11)"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
    fail "$("$PYTHON" --version 2>&1) is too old: websockets 17 needs Python >= 3.11 (set PYTHON=...)"

if [[ -x $VENV/bin/python ]] && ! "$VENV/bin/python" -c '' 2>/dev/null; then
    rm -rf "$VENV" # broken (e.g. the interpreter it was made from is gone)
fi
if [[ ! -x $VENV/bin/python ]]; then
    run "$PYTHON" -m venv "$VENV" || fail "$PYTHON -m venv $VENV"
fi
want=$(hash_of "$DIR/requirements.txt")
if [[ $(cat "$VENV/.requirements.sha256" 2>/dev/null) != "$want" ]]; then
    run "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        -r "$DIR/requirements.txt" || fail "pip install -r $DIR/requirements.txt"
    echo "$want" >"$VENV/.requirements.sha256"
fi
run "$VENV/bin/python" -c 'import websockets.asyncio.server, websockets.asyncio.client' ||
    fail "websockets does not import from $VENV"

# --- Node: ws ----------------------------------------------------------------
command -v node >/dev/null || fail "'node' not found (need Node.js >= 18)"
command -v "$NPM" >/dev/null || fail "'$NPM' not found"

if [[ -f $DIR/package-lock.json ]]; then
    lock=$DIR/package-lock.json
    install=(ci)
else
    lock=$DIR/package.json
    install=(install)
fi
want=$(hash_of "$lock")
if [[ $(cat "$DIR/node_modules/.lock.sha256" 2>/dev/null) != "$want" ]]; then
    run in_dir "$DIR" "$NPM" "${install[@]}" --no-audit --no-fund --loglevel=error ||
        fail "npm ${install[*]} in $DIR"
    echo "$want" >"$DIR/node_modules/.lock.sha256"
fi
run node -e 'require(process.argv[1])' "$DIR/node_modules/ws" ||
    fail "ws does not load from $DIR/node_modules"
