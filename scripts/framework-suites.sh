#!/usr/bin/env bash
# Runs the websocket test suites of web frameworks built on
# tokio-tungstenite against tokio-lockgate, ported the way a user ports a
# program: by renaming the crates (issue 34 item 2). A framework that
# builds and passes its own websocket tests after the rename is the proof
# that tokio-lockgate is a drop-in for tokio-tungstenite 0.30 beyond the
# upstream examples (scripts/port-tungstenite.sh, compat/).
#
#   bash scripts/framework-suites.sh                 # every framework below
#   bash scripts/framework-suites.sh axum warp       # some of them
#   bash scripts/framework-suites.sh --upstream ...  # the same suites on tokio-tungstenite 0.30, not renamed
#
# The frameworks, and the tests run (each with `cargo test`):
#
#   axum 0.8.9                   --features ws: the library's unit and integration
#                                tests; extract::ws's unit tests again with http2
#                                (one more: over HTTP/2's extended CONNECT); the
#                                doc tests of extract::ws
#   warp 0.4.3                   --features websocket,test --test ws (the newest warp;
#                                its websocket support is tokio-tungstenite 0.29)
#   poem 3.1.12                  --features websocket,test: the unit and doc tests of
#                                web::websocket (poem uses tokio-tungstenite 0.27)
#   tokio-tungstenite-wasm 0.9.0 the native side's unit tests (tokio-tungstenite 0.29)
#   salvo_extra 1.1.0            --features websocket: the unit tests of salvo's
#                                websocket module (already on tokio-tungstenite 0.30)
#   hyper-tungstenite 0.30.0     its integration tests: a hyper server upgrading
#                                to a WebSocket, whole and split, over TCP (on
#                                tokio-tungstenite 0.30 and tungstenite 0.30)
#
# How, for each framework:
#
# 1. Source: a scratch package under the target directory depends on each
#    framework with an `=` version; `cargo metadata` on it (which downloads
#    what is missing, as `cargo fetch` would) names the framework's
#    manifest in cargo's registry source directory, as port-tungstenite.sh
#    does for tungstenite. The crate's directory is copied into a scratch
#    directory and made its own workspace (an empty `[workspace]`), so it
#    never joins ours.
# 2. Upstream first: its tokio-tungstenite dependency is bumped to 0.30
#    where it is older, and compat/frameworks/<name>.patch, if there is one,
#    is applied: the minimal edit a maintainer would make for the bump or
#    for this harness (each hunk's comment in the patch file says why).
#    warp's crate package ships no tests; compat/frameworks/warp/ws.rs is
#    its tests/ws.rs at the tag v0.4.3 (MIT, Sean McArthur).
# 3. The rename (scripts/tungstenite-rename.sh, the one port-tungstenite.sh
#    applies) over every .rs and .md file and the Cargo.toml:
#    `tokio_tungstenite` -> `tokio_lockgate`, then `tungstenite` ->
#    `lockgate`. The renamed dependency tables (`[dependencies.tokio-lockgate]`,
#    also dev- and target-specific ones) then get `path = ` this workspace's
#    tokio-lockgate (or lockgate) instead of their `version = `: the
#    framework builds against the checkout's crates, its other dependencies
#    come from the registry (its shipped Cargo.lock is kept as the start).
#    With --upstream this step is skipped.
# 4. `cargo test` as listed above, each call bounded by
#    FRAMEWORK_SUITES_TIMEOUT seconds (default 2400: a cold build of axum's
#    dev-dependencies on a loaded 2-core machine). No test binds a fixed
#    port (tokio-tungstenite-wasm's picked a random one; its patch binds
#    port 0).
#
# Everything lives under "${CARGO_TARGET_DIR:-target}/framework-suites":
# fetch/ (the scratch package), src/<name>/ (the copies, rewritten on each
# run) and target/ (one target directory shared by the frameworks).
# Needs cargo, python3 (to read cargo's JSON and edit the manifests),
# patch and timeout; the network only for the cargo registry.
#
# Output: cargo's, then a summary: per framework the tests passed and
# failed, and the same per `cargo test` command (or "build failed"). The
# exit status is 1 if any framework failed to build or any test failed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/tungstenite-rename.sh
source "$ROOT/scripts/tungstenite-rename.sh"

ALL_FRAMEWORKS=(axum warp poem tokio-tungstenite-wasm salvo_extra hyper-tungstenite)
TIMEOUT=${FRAMEWORK_SUITES_TIMEOUT:-2400}

UPSTREAM=0
SELECTED=()
for arg in "$@"; do
    case $arg in
        --upstream) UPSTREAM=1 ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        -*)
            echo "usage: $0 [--upstream] [${ALL_FRAMEWORKS[*]}]..." >&2
            exit 2
            ;;
        *) SELECTED+=("$arg") ;;
    esac
done
((${#SELECTED[@]})) || SELECTED=("${ALL_FRAMEWORKS[@]}")

fail() {
    echo "framework-suites: $*" >&2
    exit 1
}

# framework NAME: sets VERSION (the crate's), FETCH_FEATURES (for the scratch
# package) and TESTS (one `cargo test` argument list per element).
framework() {
    case $1 in
        axum)
            VERSION=0.8.9
            FETCH_FEATURES='"ws"'
            TESTS=("--features ws --lib --tests" "--features ws,http2 --lib extract::ws"
                "--features ws --doc extract::ws")
            ;;
        warp)
            VERSION=0.4.3
            FETCH_FEATURES='"websocket", "test"'
            TESTS=("--features websocket,test --test ws")
            ;;
        poem)
            VERSION=3.1.12
            FETCH_FEATURES='"websocket"'
            TESTS=("--features websocket,test --lib web::websocket" "--features websocket,test --doc websocket")
            ;;
        tokio-tungstenite-wasm)
            VERSION=0.9.0
            FETCH_FEATURES=
            TESTS=("--lib")
            ;;
        salvo_extra)
            VERSION=1.1.0
            FETCH_FEATURES='"websocket"'
            TESTS=("--features websocket --lib websocket")
            ;;
        hyper-tungstenite)
            VERSION=0.30.0
            FETCH_FEATURES=
            TESTS=("--lib --tests --examples")
            ;;
        *) fail "unknown framework '$1' (known: ${ALL_FRAMEWORKS[*]})" ;;
    esac
}

WORK=${CARGO_TARGET_DIR:-$ROOT/target}/framework-suites
[[ $WORK == /* ]] || WORK=$PWD/$WORK # as cargo reads a relative CARGO_TARGET_DIR
mkdir -p "$WORK/fetch/src" "$WORK/src" "$WORK/target"

# 1. The sources: one scratch package depending on every selected framework.
{
    printf '%s\n' '# Written by scripts/framework-suites.sh: pins the frameworks whose sources it copies.' \
        '[package]' 'name = "framework-sources"' 'version = "0.0.0"' 'edition = "2021"' 'publish = false' \
        '' '[workspace]' '' '[dependencies]'
    for name in "${SELECTED[@]}"; do
        framework "$name"
        printf '%s = { version = "=%s", default-features = false, features = [%s] }\n' \
            "$name" "$VERSION" "$FETCH_FEATURES"
    done
} >"$WORK/fetch/Cargo.toml"
: >"$WORK/fetch/src/lib.rs"
METADATA=$(cd "$WORK/fetch" && cargo metadata --format-version 1) || fail "cargo metadata failed in $WORK/fetch"

package_dir() { # package_dir NAME VERSION: its directory in cargo's registry sources
    registry_source_dir "$1" "$2" <<<"$METADATA"
}

# point_dependencies MANIFEST MODE: MODE "upstream" sets every
# tokio-tungstenite (and tungstenite) dependency table to version 0.30;
# MODE "lockgate" replaces the `version` of the renamed tables
# (tokio-lockgate, lockgate) with a path to this workspace's crate. The
# manifests are cargo's normalized ones (one `[...dependencies.NAME]`
# table per dependency), so a line edit inside those tables is enough.
point_dependencies() {
    python3 - "$1" "$2" "$ROOT" <<'PY'
import re, sys
manifest, mode, root = sys.argv[1:]
if mode == "upstream":
    targets = {"tokio-tungstenite": 'version = "0.30"', "tungstenite": 'version = "0.30"'}
else:
    targets = {"tokio-lockgate": f'path = "{root}/tokio-lockgate"', "lockgate": f'path = "{root}"'}
header = re.compile(r"^\[(?:target\..*\.)?(?:dev-|build-)?dependencies\.([A-Za-z0-9_-]+)\]\s*$")
out, current, edited = [], None, 0
for line in open(manifest).read().splitlines():
    m = header.match(line)
    if m:
        current = m.group(1) if m.group(1) in targets else None
    elif line.startswith("["):
        current = None
    elif current and line.startswith("version ="):
        line = targets[current]
        edited += 1
    out.append(line)
if not edited:
    sys.exit(f"{manifest}: no dependency table for {' or '.join(targets)}")
open(manifest, "w").write("\n".join(out) + "\n")
PY
}

# prepare NAME: (re)writes $WORK/src/NAME, ready to test.
prepare() {
    local name=$1 src dest=$WORK/src/$1 patch=$ROOT/compat/frameworks/$1.patch file
    framework "$name"
    src=$(package_dir "$name" "$VERSION") || fail "cannot locate $name $VERSION"
    rm -rf "$dest"
    cp -R "$src" "$dest"
    rm -f "$dest/Cargo.toml.orig" "$dest/.cargo_vcs_info.json"
    chmod -R u+w "$dest"
    printf '\n# Added by scripts/framework-suites.sh: a workspace of its own.\n[workspace]\n' >>"$dest/Cargo.toml"

    # 2. Upstream on tokio-tungstenite 0.30, with the harness's additions.
    point_dependencies "$dest/Cargo.toml" upstream
    if [[ $name == warp ]]; then
        mkdir -p "$dest/tests"
        cp "$ROOT/compat/frameworks/warp/ws.rs" "$dest/tests/ws.rs"
        printf '\n[[test]]\nname = "ws"\npath = "tests/ws.rs"\nrequired-features = ["websocket", "test"]\n' \
            >>"$dest/Cargo.toml"
    fi
    if [[ -f $patch ]]; then
        patch --quiet --no-backup-if-mismatch -d "$dest" -p1 <"$patch" ||
            fail "compat/frameworks/$name.patch does not apply to $name $VERSION"
    fi
    ((UPSTREAM)) && return 0

    # 3. The rename, then the path dependencies.
    while IFS= read -r -d '' file; do
        tungstenite_rename <"$file" >"$file.renamed"
        mv "$file.renamed" "$file"
    done < <(find "$dest" \( -name '*.rs' -o -name '*.md' -o -name Cargo.toml \) -type f -print0)
    point_dependencies "$dest/Cargo.toml" lockgate
}

# 4. The tests. count LOG: "P F", the tests passed and failed in cargo's output.
count() {
    local passed=0 failed=0 line
    while read -r line; do
        [[ $line =~ ([0-9]+)\ passed\;\ ([0-9]+)\ failed ]] || continue
        passed=$((passed + BASH_REMATCH[1]))
        failed=$((failed + BASH_REMATCH[2]))
    done < <(grep -a '^test result: ' "$1")
    echo "$passed $failed"
}

# run_tests NAME: runs its cargo test commands, appends its line to SUMMARY.
SUMMARY=()
STATUS=0
run_tests() {
    local name=$1 args log=$WORK/src/$1.log part=$WORK/src/$1.part.log passed failed
    local total_passed=0 total_failed=0 details=() what broken=
    framework "$name"
    : >"$log"
    for args in "${TESTS[@]}"; do
        printf '\n--- %s %s: cargo test %s\n' "$name" "$VERSION" "$args"
        what=
        # shellcheck disable=SC2086 # $args is a list of cargo arguments
        if ! (cd "$WORK/src/$name" && CARGO_TARGET_DIR=$WORK/target \
            timeout --kill-after=30 "$TIMEOUT" cargo test $args) 2>&1 | tee "$part"; then
            STATUS=1
            if grep -aq '^error\(\[E[0-9]*\]\)\?:' "$part"; then
                what=", build failed"
                broken=", build failed"
            else
                what=", cargo test failed (a timeout after $TIMEOUT s or a crashed test binary)"
                broken=${broken:-, cargo test failed}
            fi
        fi
        read -r passed failed < <(count "$part")
        ((failed)) && STATUS=1
        total_passed=$((total_passed + passed))
        total_failed=$((total_failed + failed))
        details+=("$args: $passed passed, $failed failed$what")
        cat "$part" >>"$log"
    done
    rm -f "$part"
    SUMMARY+=("$name $VERSION: $total_passed passed, $total_failed failed$broken (log: $log)")
    SUMMARY+=("${details[@]/#/    cargo test }")
}

against="tokio-lockgate (renamed)"
((UPSTREAM)) && against="tokio-tungstenite 0.30 (upstream, not renamed)"
for name in "${SELECTED[@]}"; do
    prepare "$name"
done
for name in "${SELECTED[@]}"; do
    run_tests "$name"
done

echo
echo "framework-suites: websocket tests of the frameworks against $against"
printf '  %s\n' "${SUMMARY[@]}"
exit "$STATUS"
