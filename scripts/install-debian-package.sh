#!/usr/bin/env bash
# Installs a Debian package unless its command is already on PATH.
#
#   bash scripts/install-debian-package.sh PACKAGE COMMAND
#
# Quiet on success; on failure prints apt's output and exits non-zero.
# scripts/install-nats.sh and scripts/install-proxy.sh use it.
set -euo pipefail

PACKAGE=$1
COMMAND=$2
if command -v "$COMMAND" >/dev/null 2>&1; then
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
if ! $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$PACKAGE" >"$LOG" 2>&1; then
    if ! { $SUDO apt-get update -q && $SUDO env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q "$PACKAGE"; } >"$LOG" 2>&1; then
        echo "install: FAILED: apt-get install $PACKAGE" >&2
        cat "$LOG" >&2
        exit 1
    fi
fi
command -v "$COMMAND" >/dev/null 2>&1 || {
    echo "install: $COMMAND is not on PATH after installing $PACKAGE" >&2
    exit 1
}
