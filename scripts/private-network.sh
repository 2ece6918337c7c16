#!/usr/bin/env bash
# Runs a command in a private network namespace: its own loopback
# (127.0.0.1 and ::1) and nothing else, so that programs listening on fixed
# ports (the upstream tungstenite examples: 3012, 8080, 9001, 9002; the
# READMEs' servers) neither need those ports free on the host nor disturb
# whatever listens there.
#
#   bash scripts/private-network.sh COMMAND [ARG]...
#   bash scripts/private-network.sh --check   # exit 0 if a namespace can be made here
#
# Inside, cargo runs offline (the namespace has no route out): build and
# install what the command needs before (`cargo test --no-run`, a venv).
# Where no namespace can be made (not root, no `unshare` or `ip`), or with
# PRIVATE_NETWORK=off, the command runs on the host's network and this
# says so; the fixed ports must then be free.
set -euo pipefail
(($#)) || {
    echo "usage: $0 COMMAND [ARG]... | --check" >&2
    exit 2
}

possible() {
    [[ ${PRIVATE_NETWORK:-on} != off ]] && command -v unshare >/dev/null &&
        command -v ip >/dev/null && timeout 10 unshare -n ip link set lo up 2>/dev/null
}

if [[ $1 == --check ]]; then
    possible
    exit
fi
if possible; then
    exec env CARGO_NET_OFFLINE=true unshare -n bash -c 'ip link set lo up && exec "$@"' private-network "$@"
fi
echo "private-network.sh: no private network namespace here (unshare -n needs root, util-linux and iproute2; PRIVATE_NETWORK=${PRIVATE_NETWORK:-on}): running on the host's network" >&2
exec "$@"
