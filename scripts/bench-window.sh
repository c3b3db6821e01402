#!/usr/bin/env bash
# How a read's time grows with the instructions it adds to the baseline copy loop, whatever they
# do: the copy out of a malloc'd block (read-malloc) against the same copy after OPS_PAD extra
# single-cycle register adds (read-padded), and the pool's reads against the same baseline, all
# as interleaved A/B runs (scripts/ab-ops.sh: both at once, one per core). read-direct copies out
# of the pool's own objects through addresses taken once: the pool's layout without its protocol.
#
# Why: at N = 10^5 and 10^6 the objects miss the caches, and the baseline loop is short enough
# for the CPU to overlap several reads' misses; a longer loop body overlaps fewer. The table
# shows where that happens on this machine.
#
# Usage: scripts/bench-window.sh
# Environment: WIN_NS="10000 100000 1000000"  WIN_PADS="0 24 48 72 96 144"  WIN_RUNS=2
set -euo pipefail
cd "$(dirname "$0")/.."

NS=${WIN_NS:-"10000 100000 1000000"}
PADS=${WIN_PADS:-"0 24 48 72 96 144"}
RUNS=${WIN_RUNS:-2}
OUT=target/zsbench/window
scripts/build-ops-count.sh "$OUT" >/dev/null

ratio() { # mode n -> geometric mean of mode / read-malloc
  scripts/ab-ops.sh "$OUT/ops_count" "$1" "$OUT/ops_count" read-malloc "$2" "$RUNS" |
    sed -n 's/.*geometric mean \([0-9.]*\).*/\1/p'
}

printf '%-22s' "ratio to read-malloc"
for n in $NS; do printf ' %10s' "N=$n"; done
echo
for k in $PADS; do
  printf '%-22s' "padded, +$k"
  for n in $NS; do printf ' %10s' "$(OPS_PAD=$k ratio read-padded "$n")"; done
  echo
done
for mode in read-direct read-raw read-safe; do
  printf '%-22s' "$mode"
  for n in $NS; do printf ' %10s' "$(ratio "$mode" "$n")"; done
  echo
done
