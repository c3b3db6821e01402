#!/usr/bin/env bash
# Interleaved A/B of two builds of the ops_count harness (or two modes of one build): runs A and B
# at the same time, one per core, swapping cores every run, and prints each run's wall ns per
# operation and the geometric mean of the per-run ratios A/B. On these shared, noisy cores only
# runs made at the same time compare; consecutive runs of one binary differ by up to 20%.
#
# Usage: scripts/ab-ops.sh BIN_A MODE_A BIN_B MODE_B N [RUNS]
#   BIN_*: ops_count executables (`scripts/build-ops-count.sh DIR` builds one into DIR/ops_count;
#          give each build its own DIR)
#   MODE_*: safe | raw | malloc | step-floor | read-safe | read-raw | read-malloc | read-registered
#   RUNS: even, so that both binaries run on both cores equally often (default 4)
# Environment: OPS (operations per run, default 2000000).
set -euo pipefail
[ $# -ge 5 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
a=$1 ma=$2 b=$3 mb=$4 n=$5 runs=${6:-4} ops=${OPS:-2000000}
command -v taskset >/dev/null || { echo "taskset (util-linux) is needed" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ratios=() ta=() tb=()
for i in $(seq "$runs"); do
  if (( i % 2 )); then ca=0 cb=1; else ca=1 cb=0; fi
  OPS_TIME=1 taskset -c $ca "$a" "$ma" "$n" "$ops" 2>"$tmp/a" & pa=$!
  OPS_TIME=1 taskset -c $cb "$b" "$mb" "$n" "$ops" 2>"$tmp/b" & pb=$!
  wait $pa $pb
  x=$(awk '/ns\/op/ {v=$1} END {print v}' "$tmp/a") y=$(awk '/ns\/op/ {v=$1} END {print v}' "$tmp/b")
  [ -n "$x" ] && [ -n "$y" ] || { cat "$tmp/a" "$tmp/b" >&2; exit 1; }
  ta+=("$x") tb+=("$y") ratios+=("$(awk -v x="$x" -v y="$y" 'BEGIN {print log(x / y)}')")
done
g=$(printf '%s\n' "${ratios[@]}" | awk '{s += $1} END {printf "%.3f", exp(s / NR)}')
echo "N=$n  A ($ma): ${ta[*]} ns   B ($mb): ${tb[*]} ns   A/B geometric mean $g"
