#!/usr/bin/env bash
# Ports the examples of tungstenite 0.30.0 (6) and tokio-tungstenite 0.30.0
# (8) into compat/examples/ the way a user would port a program: by renaming
# the crates and nothing else (issue 21). compat/tests/ then runs them.
#
#   bash scripts/port-tungstenite.sh           # (re)write compat/examples/{tungstenite,tokio-tungstenite}/
#   bash scripts/port-tungstenite.sh --check   # fail with a diff if the committed copies differ
#
# The rename is a plain, case-sensitive search-and-replace over the whole
# file, in this order (what a user's editor or `sed` does; the order matters
# because the second pattern is a substring of the first):
#
#   tokio_tungstenite  ->  tokio_lockgate
#   tungstenite        ->  lockgate       (also turns tokio-tungstenite into tokio-lockgate)
#
# It leaves other spellings alone: the examples' strings "Tungstenite" (the
# Autobahn agent name) and "SOME_TUNGSTENITE_HEADER" (a response header) stay
# as upstream wrote them. Nothing else is edited: no reformatting, no
# comment, no added lint attribute.
#
# Where the upstream files come from: `cargo metadata` on this workspace
# (bench-peers depends on both crates, pinned with `=0.30.0`) names the
# manifests of tungstenite 0.30.0 and tokio-tungstenite 0.30.0 in cargo's
# registry source directory; on a fresh machine it downloads them first
# (as `cargo fetch` would). Each directory also gets the crate's MIT license
# text (tungstenite's LICENSE-MIT, tokio-tungstenite's LICENSE).
#
# Needs cargo and python3 (to read cargo's JSON).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DEST=$ROOT/compat/examples
VERSION=0.30.0

CHECK=0
case ${1:-} in
    "") ;;
    --check) CHECK=1 ;;
    -h | --help)
        sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "usage: $0 [--check]" >&2
        exit 2
        ;;
esac

fail() {
    echo "port-tungstenite: $*" >&2
    exit 1
}

# shellcheck source=scripts/tungstenite-rename.sh
source "$ROOT/scripts/tungstenite-rename.sh"

# package_dir NAME: the source directory of NAME $VERSION in the resolved graph.
METADATA=$(cd "$ROOT" && cargo metadata --format-version 1) ||
    fail "cargo metadata failed"
package_dir() { # bench-peers pins both crates at $VERSION
    registry_source_dir "$1" "$VERSION" <<<"$METADATA"
}

TUNGSTENITE=$(package_dir tungstenite) || fail "cannot locate tungstenite $VERSION"
TOKIO_TUNGSTENITE=$(package_dir tokio-tungstenite) || fail "cannot locate tokio-tungstenite $VERSION"

# The examples each crate ships (its examples/*.rs), named so that a new
# upstream version with more or fewer examples is noticed here.
TUNGSTENITE_EXAMPLES=(autobahn-client autobahn-server callback-error client server srv_accept_unmasked_frames)
TOKIO_TUNGSTENITE_EXAMPLES=(autobahn-client autobahn-server client echo-server interval-server
    server server-custom-accept server-headers)

# port SRC_CRATE_DIR OUT_DIR LICENSE_FILE EXAMPLE...
port() {
    local src=$1 out=$2 license=$3 name found
    shift 3
    mkdir -p "$out"
    found=$(cd "$src/examples" && ls -- *.rs | sed 's/\.rs$//' | sort | tr '\n' ' ')
    [[ $found == "$(printf '%s\n' "$@" | sort | tr '\n' ' ')" ]] ||
        fail "$src/examples has [$found], expected [$*]"
    for name in "$@"; do
        tungstenite_rename <"$src/examples/$name.rs" >"$out/$name.rs"
    done
    cp "$src/$license" "$out/$license"
}

generate() { # generate DIR: writes DIR/tungstenite and DIR/tokio-tungstenite
    port "$TUNGSTENITE" "$1/tungstenite" LICENSE-MIT "${TUNGSTENITE_EXAMPLES[@]}"
    port "$TOKIO_TUNGSTENITE" "$1/tokio-tungstenite" LICENSE "${TOKIO_TUNGSTENITE_EXAMPLES[@]}"
}

if ((CHECK)); then
    TMP=$(mktemp -d)
    trap 'rm -rf "$TMP"' EXIT
    generate "$TMP"
    status=0
    for dir in tungstenite tokio-tungstenite; do
        diff -ru "$TMP/$dir" "$DEST/$dir" || status=1
    done
    if ((status)); then
        fail "compat/examples differ from the renamed upstream examples (diff above: -regenerated, +committed); run bash scripts/port-tungstenite.sh"
    fi
    echo "port-tungstenite: compat/examples match tungstenite $VERSION / tokio-tungstenite $VERSION renamed"
else
    rm -rf "$DEST/tungstenite" "$DEST/tokio-tungstenite"
    generate "$DEST"
    echo "port-tungstenite: wrote $DEST/{tungstenite,tokio-tungstenite}"
fi
