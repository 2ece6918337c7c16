#!/usr/bin/env bash
# Coverage-guided fuzzing of lockgate on the stable toolchain (fuzz/README.md).
#
#   scripts/fuzz.sh                    every target, FUZZ_SECONDS_PER_TARGET each
#   scripts/fuzz.sh <target> <seconds> one target, for a long run
#   scripts/fuzz.sh --list             the targets
#
# libFuzzer comes from the libfuzzer-sys crate (built with the C++
# compiler); coverage instrumentation from stable rustc flags (the ones
# `cargo fuzz build --sanitizer none` passes; no nightly, no
# RUSTC_BOOTSTRAP). Each run starts from a copy of the committed seeds in
# fuzz/corpus/<target> (never modified); crashes, timeouts and memory
# blow-ups go to fuzz/artifacts/<target>/ (git-ignored). Exits non-zero if
# any target found one, naming the target and the file.
#
# Environment: FUZZ_SECONDS_PER_TARGET (default 15: 14 targets in about
# 3.5 minutes), FUZZ_RSS_LIMIT_MB (2048), FUZZ_TIMEOUT (per input, seconds,
# default 20), FUZZ_MAX_LEN (bytes, default 8192), FUZZ_NICE (10).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
fuzz="$root/fuzz"

targets=(frame_header context_server context_client context_deflate_server
    context_deflate_client inflater handshake_server handshake_client
    extension_params roundtrip write_faults proxy_tunnel socks5_tunnel resume_wire)

if [[ ${1:-} == --list ]]; then
    printf '%s\n' "${targets[@]}"
    exit 0
fi
seconds=${FUZZ_SECONDS_PER_TARGET:-15}
if [[ $# -ge 1 ]]; then
    [[ " ${targets[*]} " == *" $1 "* ]] || { echo "unknown target '$1' (see --list)" >&2; exit 2; }
    targets=("$1")
    seconds=${2:-$seconds}
fi

# --- install what the build needs (quiet and idempotent) ---
command -v cargo >/dev/null || { echo "cargo (stable Rust) is required" >&2; exit 1; }
if ! command -v c++ >/dev/null; then
    # libfuzzer-sys compiles libFuzzer from its C++ sources.
    if command -v apt-get >/dev/null; then
        apt-get update -qq >/dev/null && apt-get install -y -qq g++ >/dev/null
    else
        echo "a C++ compiler is required (libfuzzer-sys builds libFuzzer)" >&2
        exit 1
    fi
fi

# --- build ---
host=$(rustc -vV | sed -n 's/^host: //p')
flags=(
    -Cpasses=sancov-module
    -Cllvm-args=-sanitizer-coverage-level=4
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters
    -Cllvm-args=-sanitizer-coverage-pc-table
    -Cllvm-args=-sanitizer-coverage-trace-compares
    -Cllvm-args=-sanitizer-coverage-stack-depth
    -Cllvm-args=-simplifycfg-branch-fold-threshold=0
    --cfg fuzzing
    -Ccodegen-units=1
)
# --target keeps these flags off build scripts and proc macros. The release
# profile (fuzz/Cargo.toml) adds debug assertions and overflow checks.
bins=()
for t in "${targets[@]}"; do bins+=(--bin "$t"); done
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! RUSTFLAGS="${flags[*]}" nice -n "${FUZZ_NICE:-10}" cargo build --quiet \
    --manifest-path "$fuzz/Cargo.toml" --release --target "$host" "${bins[@]}" >"$log" 2>&1; then
    cat "$log" >&2
    echo "fuzz build failed" >&2
    exit 1
fi
# Where cargo put them: fuzz/target, or CARGO_TARGET_DIR (and any other
# setting of the target directory) as cargo itself resolves it.
target_dir=$(cargo metadata --manifest-path "$fuzz/Cargo.toml" --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
bin_dir="$target_dir/$host/release"
for t in "${targets[@]}"; do
    [[ -x "$bin_dir/$t" ]] || { echo "fuzz build left no $bin_dir/$t" >&2; exit 1; }
done

# --- run ---
work=$(mktemp -d)
trap 'rm -f "$log"; rm -rf "$work"' EXIT
failed=()
printf '%-24s %6s %12s %9s %7s %7s %s\n' target seconds execs exec/s cov ft result
for t in "${targets[@]}"; do
    corpus="$work/corpus/$t"
    artifacts="$fuzz/artifacts/$t"
    mkdir -p "$corpus" "$artifacts"
    cp "$fuzz/corpus/$t/"* "$corpus/" 2>/dev/null || true
    out="$work/$t.log"
    findings() { find "$artifacts" -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) | wc -l; }
    before=$(findings)
    start=$(date +%s)
    status=0
    nice -n "${FUZZ_NICE:-10}" "$bin_dir/$t" "$corpus" \
        -max_total_time="$seconds" \
        -rss_limit_mb="${FUZZ_RSS_LIMIT_MB:-2048}" \
        -timeout="${FUZZ_TIMEOUT:-20}" \
        -max_len="${FUZZ_MAX_LEN:-8192}" \
        -artifact_prefix="$artifacts/" \
        -print_final_stats=1 >"$out" 2>&1 || status=$?
    elapsed=$(( $(date +%s) - start ))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out" | tail -1)
    last=$(grep -E '^#[0-9]+' "$out" | grep -E ' cov: ' | tail -1 || true)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    after=$(findings)
    if [[ $status -ne 0 || $after -gt $before ]]; then
        result="FAILED (exit $status)"
        failed+=("$t")
    else
        result=ok
    fi
    printf '%-24s %6s %12s %9s %7s %7s %s\n' "$t" "$elapsed" "${execs:-?}" "${rate:-?}" \
        "${cov:-?}" "${ft:-?}" "$result"
    if [[ $result != ok ]]; then
        grep -E -m 12 'panicked|HEAP BOUND|ERROR: libFuzzer|SUMMARY|left:|right:|assertion' "$out" | sed 's/^/    /' >&2 || true
        find "$artifacts" -type f -newermt "@$start" ! -name last-run.log | sed 's/^/    artifact: /' >&2
        cp "$out" "$artifacts/last-run.log"
        echo "    log: $artifacts/last-run.log" >&2
    fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
    echo "fuzzing found problems in: ${failed[*]} (artifacts under fuzz/artifacts/)" >&2
    echo "reproduce with: $bin_dir/<target> <artifact>" >&2
    exit 1
fi
