#!/usr/bin/env bash
# Installs the HTTP proxy the proxy tests tunnel through (Debian's
# `tinyproxy`), unless it is already on PATH. The tests start their own
# instances on 127.0.0.1 (tests/support/tinyproxy.rs), never the service.
#
#   bash scripts/install-proxy.sh
set -euo pipefail
exec bash "$(dirname "$0")/install-debian-package.sh" tinyproxy tinyproxy
