#!/usr/bin/env bash
# Instructions per operation under callgrind, for the steady-state store+free step and
# the non-spanning read + copy, pool (safe and raw layers) against the malloc baseline.
#
# For each mode and N the harness (zsmalloc-core/benches/ops_count.rs) runs twice, with OPS1 and
# OPS2 operations after the identical setup; (Ir2 - Ir1) / (OPS2 - OPS1) is the cost of one
# operation with setup (filling N objects, building the sequence) cancelled out.
#
# Usage: scripts/bench-callgrind.sh            (all modes, N = 10^4 10^5 10^6)
# Environment: CG_MODES="safe raw malloc read-safe read-raw read-malloc"  CG_NS="10000 100000 1000000"
#              CG_OPS1=20000 CG_OPS2=120000     CG_OUT=target/zsbench/callgrind (profiles kept there)
# Output: a table (instructions per operation, spread across N = max/min - 1, ratio to malloc) and
# `callgrind:` lines that scripts/bench.sh reads. Inspect a profile with
#   callgrind_annotate --inclusive=yes "$CG_OUT/<mode>.<N>.<OPS2>.out"
# (profiles include setup; difference two of them, or use --toggle-collect, for the steps alone).
set -euo pipefail
cd "$(dirname "$0")/.."

MODES=${CG_MODES:-"safe raw malloc read-safe read-raw read-malloc"}
NS=${CG_NS:-"10000 100000 1000000"}
OPS1=${CG_OPS1:-20000}
OPS2=${CG_OPS2:-120000}
OUT=${CG_OUT:-target/zsbench/callgrind}

command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
scripts/build-ops-count.sh "$OUT" >/dev/null

ir() { # mode n ops -> total instructions
  local log="$OUT/$1.$2.$3.log"
  valgrind --tool=callgrind --callgrind-out-file="$OUT/$1.$2.$3.out" "$OUT/ops_count" "$1" "$2" "$3" \
    >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
  sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$log"
}

results=$(mktemp)
trap 'rm -f "$results"' EXIT
for mode in $MODES; do
  for n in $NS; do
    a=$(ir "$mode" "$n" "$OPS1")
    b=$(ir "$mode" "$n" "$OPS2")
    per=$(awk -v a="$a" -v b="$b" -v o1="$OPS1" -v o2="$OPS2" 'BEGIN { printf "%.1f", (b - a) / (o2 - o1) }')
    echo "$mode $n $per" >>"$results"
    echo "callgrind: mode=$mode n=$n ops1=$OPS1 ir1=$a ops2=$OPS2 ir2=$b ir_per_op=$per"
  done
done

awk -v ns="$NS" '
  { ir[$1, $2] = $3; if (!($1 in seen)) { seen[$1] = 1; order[++m] = $1 } }
  END {
    k = split(ns, n, " ")
    printf "\ninstructions per operation (callgrind Ir, setup cancelled)\n"
    printf "%-12s", "mode"; for (i = 1; i <= k; i++) printf " %12s", "N=" n[i]
    printf " %9s", "spread"
    for (i = 1; i <= k; i++) printf " %11s", "/malloc@" n[i]
    printf "\n"
    for (j = 1; j <= m; j++) {
      md = order[j]; lo = 1e18; hi = 0
      base = (md ~ /^read-/) ? "read-malloc" : "malloc"
      printf "%-12s", md
      for (i = 1; i <= k; i++) { v = ir[md, n[i]]; printf " %12.1f", v; if (v < lo) lo = v; if (v > hi) hi = v }
      printf " %8.1f%%", (lo > 0) ? 100 * (hi / lo - 1) : 0
      for (i = 1; i <= k; i++) {
        b = ir[base, n[i]]
        if (b > 0 && md != base) printf " %10.2fx", ir[md, n[i]] / b; else printf " %11s", "-"
      }
      printf "\n"
    }
    printf "spread = max/min - 1 across N (target: within 10%%)\n"
  }' "$results"
