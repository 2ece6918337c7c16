#!/usr/bin/env bash
# Installs the NATS server that lockgate-fanout relays through (Debian's
# `nats-server` package), unless one is already on PATH.
#
#   bash scripts/install-nats.sh
set -euo pipefail
exec bash "$(dirname "$0")/install-debian-package.sh" nats-server nats-server
