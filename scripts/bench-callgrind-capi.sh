#!/usr/bin/env bash
# Instructions per step under callgrind through the C ABI, against glibc and the Rust raw layer
# on the identical sequence: each step frees a random victim, stores a new normal(694, 474)
# object in its place and reads a random live object (begin, copy out, end).
#
#   abi_count zs       the C ABI (tests/c/abi_count.c linked against libzsmalloc.so)
#   abi_count malloc   glibc: free, malloc + memcpy in, memcpy out
#   raw_count raw      zsmalloc-core's raw layer (zsmalloc-capi/benches/raw_count.rs): the floor
#                      the C boundary adds to
#
# Each harness runs twice per N, with OPS1 and OPS2 steps after the identical setup;
# (Ir2 - Ir1) / (OPS2 - OPS1) is the cost of one step with setup cancelled out.
#
# Usage: scripts/bench-callgrind-capi.sh
# Environment: CG_MODES="zs malloc raw"  (also zs-step malloc-step raw-step zs-read malloc-read
#              raw-read)  CG_NS="10000 100000 1000000"  CG_OPS1=20000 CG_OPS2=120000
#              CG_OUT=target/zsbench/callgrind-capi (profiles kept there; inspect one with
#              callgrind_annotate --inclusive=yes "$CG_OUT/<mode>.<N>.<OPS2>.out")
set -euo pipefail
cd "$(dirname "$0")/.."

MODES=${CG_MODES:-"zs malloc raw"}
NS=${CG_NS:-"10000 100000 1000000"}
OPS1=${CG_OPS1:-20000}
OPS2=${CG_OPS2:-120000}
OUT=${CG_OUT:-target/zsbench/callgrind-capi}
TARGET=${CARGO_TARGET_DIR:-target}

command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
command -v jq >/dev/null || { echo "jq is not installed" >&2; exit 1; }
mkdir -p "$OUT"

# Private copies, so that a concurrent rebuild cannot swap a binary mid-run.
cargo build --release -p zsmalloc-capi 2>"$OUT/build.log" || { cat "$OUT/build.log" >&2; exit 1; }
cp "$TARGET/release/libzsmalloc.so" "$OUT/libzsmalloc.so"
ln -sfn libzsmalloc.so "$OUT/libzsmalloc.so.0" # its SONAME
${CC:-cc} -O2 -g -std=gnu11 -Wall -Wextra -Werror -Iinclude -o "$OUT/abi_count" tests/c/abi_count.c \
  -L"$OUT" -lzsmalloc -Wl,-rpath,"$(cd "$OUT" && pwd)" -lm
raw=$(cargo bench -p zsmalloc-capi --bench raw_count --no-run --message-format=json 2>>"$OUT/build.log" |
  jq -r 'select(.reason == "compiler-artifact" and .target.name == "raw_count") | .executable') || true
[ -n "$raw" ] && [ -x "$raw" ] || { cat "$OUT/build.log" >&2; echo "could not build raw_count" >&2; exit 1; }
cp "$raw" "$OUT/raw_count"

ir() { # mode n ops -> total instructions
  local bin=abi_count
  case $1 in raw*) bin=raw_count ;; esac
  local log="$OUT/$1.$2.$3.log"
  valgrind --tool=callgrind --callgrind-out-file="$OUT/$1.$2.$3.out" "$OUT/$bin" "$1" "$2" "$3" \
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
    echo "callgrind-capi: mode=$mode n=$n ops1=$OPS1 ir1=$a ops2=$OPS2 ir2=$b ir_per_step=$per"
  done
done

awk -v ns="$NS" '
  { ir[$1, $2] = $3; if (!($1 in seen)) { seen[$1] = 1; order[++m] = $1 } }
  function base_of(md, kind) {
    kind = ""; if (md ~ /-step$/) kind = "-step"; if (md ~ /-read$/) kind = "-read"
    return "malloc" kind
  }
  function raw_of(md, kind) {
    kind = ""; if (md ~ /-step$/) kind = "-step"; if (md ~ /-read$/) kind = "-read"
    return "raw" kind
  }
  END {
    k = split(ns, n, " ")
    printf "\ninstructions per step (callgrind Ir, setup cancelled)\n"
    printf "%-12s", "mode"; for (i = 1; i <= k; i++) printf " %10s", "N=" n[i]
    printf " %8s", "spread"
    for (i = 1; i <= k; i++) printf " %10s", "/glibc@" n[i]
    for (i = 1; i <= k; i++) printf " %10s", "/raw@" n[i]
    printf "\n"
    for (j = 1; j <= m; j++) {
      md = order[j]; lo = 1e18; hi = 0; b = base_of(md); r = raw_of(md)
      printf "%-12s", md
      for (i = 1; i <= k; i++) { v = ir[md, n[i]]; printf " %10.1f", v; if (v < lo) lo = v; if (v > hi) hi = v }
      printf " %7.1f%%", (lo > 0) ? 100 * (hi / lo - 1) : 0
      for (i = 1; i <= k; i++) {
        if (ir[b, n[i]] > 0 && md != b) printf " %9.2fx", ir[md, n[i]] / ir[b, n[i]]; else printf " %10s", "-"
      }
      for (i = 1; i <= k; i++) {
        if (ir[r, n[i]] > 0 && md ~ /^zs/) printf " %9.2fx", ir[md, n[i]] / ir[r, n[i]]; else printf " %10s", "-"
      }
      printf "\n"
    }
    printf "spread = max/min - 1 across N (target: within 10%%)\n"
  }' "$results"
