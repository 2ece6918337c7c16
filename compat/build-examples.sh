#!/usr/bin/env bash
# Builds every example of lockgate-compat (the upstream tungstenite /
# tokio-tungstenite examples, renamed) with rustc's warnings as errors:
# issue 21 asks that the ported programs build with no warning at all.
#
#   bash compat/build-examples.sh [CARGO ARGS...]     e.g. --release
#
# One `cargo rustc --example NAME -- -D warnings` per example: the flag
# reaches only that example's own compilation, so unlike RUSTFLAGS it does
# not rebuild the dependency tree (lockgate, tokio, hyper, ...) with other
# flags. The lints are rustc's defaults, what a user's build has (the
# package does not opt into the workspace's lints, see compat/Cargo.toml).
# Every example is tried; the exit status is non-zero if any failed, and
# the failing ones are listed at the end.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

mapfile -t EXAMPLES < <(cargo metadata --format-version 1 --no-deps | python3 -c '
import json, sys
for p in json.load(sys.stdin)["packages"]:
    if p["name"] == "lockgate-compat":
        for t in p["targets"]:
            if "example" in t["kind"]:
                print(t["name"])
')
((${#EXAMPLES[@]} == 14)) || {
    echo "build-examples: expected 14 examples in lockgate-compat, found ${#EXAMPLES[@]}: ${EXAMPLES[*]}" >&2
    exit 1
}

failed=()
for example in "${EXAMPLES[@]}"; do
    if ! cargo rustc --quiet -p lockgate-compat --example "$example" "$@" -- -D warnings; then
        failed+=("$example")
    fi
done
if ((${#failed[@]})); then
    echo "build-examples: ${#failed[@]} of ${#EXAMPLES[@]} examples do not build without warnings: ${failed[*]}" >&2
    exit 1
fi
echo "build-examples: all ${#EXAMPLES[@]} examples build with warnings as errors"
