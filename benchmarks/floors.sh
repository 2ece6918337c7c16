#!/usr/bin/env bash
# The echo-at-scale row against its floors (BENCHMARKS.md, "The io_uring
# target against the floors"): each server below runs REPS times,
# interleaved (the order rotated per repetition), under bench-peers' own
# load child at 10,000 connections, 500 busy, bursts of 16, 1 s of warm-up
# and a 3 s window. Prints every run's SCALE line, then per server the
# median CPU per echo (ns), its range, p99 (ms) and echoes per second.
#
#   cargo build --release -p bench-peers && bash benchmarks/floors.sh [REPS]
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${1:-5}
BIN=target/release/bench-peers
SERVERS=("floor-epoll batching" "floor-uring batching" "floor-uring-epoll batching"
    "floor-uring-nodefer batching" "tokio-lockgate natural" "tokio-lockgate batching"
    "uring-lockgate natural" "uring-lockgate batching" "sockudo-ws batching")
n=${#SERVERS[@]}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for ((rep = 0; rep < REPS; rep++)); do
    for ((k = 0; k < n; k++)); do
        server=${SERVERS[$(((k + rep) % n))]}
        # shellcheck disable=SC2086 # "LIB FORM" splits into two arguments
        line=$("$BIN" __scale_load echo $server 10000 500 16 1000 3000 | grep '^SCALE')
        echo "$server | $line" | tee -a "$out"
    done
done
echo
awk -F' [|] ' '
    { n = split($2, kv, " "); for (i = 2; i <= n; i++) { split(kv[i], p, "="); v[p[1]] = p[2] }
      k = $1; c[k, ++cnt[k]] = v["cpu_ns"] / v["msgs"]; q[k, cnt[k]] = v["p99_ns"] / 1e6
      r[k, cnt[k]] = v["msgs"] / v["secs"] / 1e6; if (!(k in seen)) { seen[k] = 1; order[++m] = k } }
    function median(a, k, n,   i, j, t, x) {
        for (i = 1; i <= n; i++) x[i] = a[k, i]
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
        lo = x[1]; hi = x[n]
        return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2 }
    END { for (o = 1; o <= m; o++) { k = order[o]; cm = median(c, k, cnt[k]); clo = lo; chi = hi
            printf "%-30s cpu/echo %5.0f ns [%.0f-%.0f]  p99 %5.1f ms  %.2f M echoes/s\n", k, cm, clo, chi, median(q, k, cnt[k]), median(r, k, cnt[k]) } }
' "$out"
