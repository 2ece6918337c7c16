#!/usr/bin/env bash
# Installs the NATS server that lockgate-fanout relays through (Debian's
# `nats-server` package), unless one is already on PATH.
#
#   bash scripts/install-nats.sh
#
# Quiet on success; on failure prints apt's output and exits non-zero.
set -euo pipefail

if command -v nats-server >/dev/null 2>&1; then
    exit 0
fi
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT
SUDO=
if [[ $(id -u) != 0 ]]; then
    SUDO=sudo
fi
# A fresh machine's package lists may be empty or stale: update once, and
# only if the first attempt fails.
if ! $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q nats-server >"$LOG" 2>&1; then
    if ! { $SUDO apt-get update -q && $SUDO env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q nats-server; } >"$LOG" 2>&1; then
        echo "install-nats: FAILED: apt-get install nats-server" >&2
        cat "$LOG" >&2
        exit 1
    fi
fi
command -v nats-server >/dev/null 2>&1 || {
    echo "install-nats: nats-server is not on PATH after installing it" >&2
    exit 1
}
