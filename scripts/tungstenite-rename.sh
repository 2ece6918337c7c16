# shellcheck shell=bash
# What scripts/port-tungstenite.sh and scripts/framework-suites.sh share
# (source this file): where a crate's published sources are, and the
# rename that ports a program from tungstenite to lockgate. The rename is a plain, case-sensitive search-and-replace over the whole text, in
# this order (the second pattern is a substring of the first):
#
#   tokio_tungstenite  ->  tokio_lockgate
#   tungstenite        ->  lockgate       (also turns tokio-tungstenite into tokio-lockgate)
tungstenite_rename() { # tungstenite_rename < upstream > ported
    sed -e 's/tokio_tungstenite/tokio_lockgate/g' -e 's/tungstenite/lockgate/g'
}

# registry_source_dir NAME VERSION < METADATA: the directory of crate NAME
# VERSION in cargo's registry sources, from `cargo metadata` JSON of a
# graph that depends on it (fails, saying so, if the graph does not).
registry_source_dir() {
    python3 -c '
import json, os, sys
name, version = sys.argv[1], sys.argv[2]
for p in json.load(sys.stdin)["packages"]:
    if p["name"] == name and p["version"] == version and p["source"]:
        print(os.path.dirname(p["manifest_path"]))
        break
else:
    sys.exit(f"{name} {version} is not in the dependency graph")
' "$1" "$2"
}
