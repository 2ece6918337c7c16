#!/usr/bin/env bash
# Installs pproxy (a widely used HTTP/HTTPS/SOCKS5 proxy written in
# Python, from PyPI) into a venv of its own, for the proxy tests that
# tunnel through it (kit/src/proxies/pproxy.rs):
#
#   target/pproxy-venv/bin/pproxy
#
# The tests start their own instances on 127.0.0.1 and skip (with a note)
# when it is absent, unless LOCKGATE_REQUIRE_PROXIES is set. pproxy looks
# header names up case-sensitively, so it is also the test that lockgate
# writes them in canonical case (`Proxy-Authorization`).
#
# Idempotent: pproxy is reinstalled only when PPROXY_VERSION changed (a
# stamp file in the venv records the installed one). Quiet on success; on
# failure it prints pip's output and exits non-zero. Needs python3 with
# the venv module, and access to PyPI.
#
#   bash scripts/install-pproxy.sh
#
# Environment (optional): PYTHON  interpreter for the venv (default python3)
set -euo pipefail

# Pinned: the version the tests were written against (its CLI: `-l
# SCHEMES://HOST:PORT#USER:PASSWORD`, `--ssl CERT,KEY`, `--auth SECONDS`).
PPROXY_VERSION=2.7.9

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=$ROOT/target/pproxy-venv
PYTHON=${PYTHON:-python3}

LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT

fail() {
    {
        echo "install-pproxy: FAILED: $*"
        if [[ -s $LOG ]]; then
            echo "---- output ----"
            cat "$LOG"
            echo "----------------"
        fi
    } >&2
    exit 1
}

command -v "$PYTHON" >/dev/null || fail "'$PYTHON' not found"

if [[ -x $VENV/bin/python ]] && ! "$VENV/bin/python" -c '' 2>/dev/null; then
    rm -rf "$VENV" # broken (e.g. the interpreter it was made from is gone)
fi
if [[ ! -x $VENV/bin/python ]]; then
    "$PYTHON" -m venv "$VENV" >"$LOG" 2>&1 || fail "$PYTHON -m venv $VENV"
fi
if [[ $(cat "$VENV/.pproxy-version" 2>/dev/null) != "$PPROXY_VERSION" ]]; then
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        "pproxy==$PPROXY_VERSION" >"$LOG" 2>&1 || fail "pip install pproxy==$PPROXY_VERSION"
    echo "$PPROXY_VERSION" >"$VENV/.pproxy-version"
fi
"$VENV/bin/pproxy" --version >"$LOG" 2>&1 || fail "$VENV/bin/pproxy does not run"
