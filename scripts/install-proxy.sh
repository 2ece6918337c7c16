#!/usr/bin/env bash
# Installs the proxy servers the proxy tests tunnel through, from Debian's
# packages, each unless its command is already on PATH:
#
#   tinyproxy   HTTP proxy (CONNECT, BasicAuth): http:// proxies
#   stunnel4    TLS in front of tinyproxy: https:// proxies
#   microsocks  SOCKS5 with optional username/password: socks5://, socks5h://
#
# The tests start their own instances on 127.0.0.1 (kit/src/proxies.rs),
# never the packages' services. Idempotent and quiet on success. apt-get's
# package lists are updated only when an install fails without it
# (scripts/install-debian-package.sh): on a fresh machine, by the first
# install, which leaves them fresh for the other two.
#
#   bash scripts/install-proxy.sh
set -euo pipefail
INSTALL="$(dirname "$0")/install-debian-package.sh"
bash "$INSTALL" tinyproxy tinyproxy
bash "$INSTALL" stunnel4 stunnel4
bash "$INSTALL" microsocks microsocks
