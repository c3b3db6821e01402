#!/usr/bin/env bash
# The lab at the scale of a device's swap: pools without payload (--placement-only) on 10^7 live
# objects and traces of 10^8 operations, with each command's peak memory and CPU time.
#
#   bench/scale.sh [OBJECTS]        OBJECTS: live objects of the big runs [default: 10000000]
#
# Environment: SCALE_DIR (where the traces go, several GiB for the 10^8-operation one
# [default: target/zsbench/scale]), SCALE_OPTIMIZE=0 skips the optimize run (the longest),
# SCALE_HUGE=0 skips the 10^8-operation trace. Prints one row per command: wall seconds, user+sys
# CPU seconds, peak RSS (GNU time's %M), and the command; the ratios the README quotes follow.
set -euo pipefail
cd "$(dirname "$0")/.."

N=${1:-10000000}
DIR=${SCALE_DIR:-target/zsbench/scale}
mkdir -p "$DIR"
command -v /usr/bin/time >/dev/null || { echo "scale: GNU time (/usr/bin/time) is needed" >&2; exit 1; }
cargo build --release --quiet --bin zsmalloc
ZS=$(realpath target/release/zsmalloc)

rows=$DIR/rows.tsv
: >"$rows"
# measure NAME ARGS...: runs `zsmalloc ARGS` once, appends "name wall cpu rss_kib".
measure() {
  local name=$1
  shift
  local t
  t=$(mktemp)
  /usr/bin/time -f '%e %U %S %M' -o "$t" "$ZS" "$@" >/dev/null
  read -r wall user sys rss <"$t"
  rm -f "$t"
  local cpu
  cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$wall" "$cpu" "$rss" "zsmalloc $*" >>"$rows"
  printf '%-22s %8.2f s wall %8.2f s cpu %8.0f MiB   zsmalloc %s\n' "$name" "$wall" "$cpu" \
    "$(awk -v r="$rss" 'BEGIN { print r / 1024 }')" "$*"
}

small=$((N / 10))
trace=$DIR/dist-$N.zstrace
measure run-small run dist --objects "$small" --placement-only \
  --record "$DIR/dist-$small.zstrace" --trace-format binary
measure run run dist --objects "$N" --placement-only --record "$trace" --trace-format binary
measure replay replay "$trace" --placement-only
measure run-bytes-small run dist --objects "$small" --no-time
if [ "${SCALE_OPTIMIZE:-1}" != 0 ]; then
  measure optimize optimize trace "$trace" --jobs 2
fi
if [ "${SCALE_HUGE:-1}" != 0 ]; then
  # 10^8 operations over a bounded live set: 10^6 objects churned a hundred times over.
  huge=$DIR/churn-1e8.zstrace
  measure run-1e8 run dist --objects 1000000 --churn 49000000 --placement-only \
    --record "$huge" --trace-format binary
  measure replay-1e8 replay "$huge" --placement-only
fi

echo
awk -F'\t' '{cpu[$1]=$3; rss[$1]=$4}
  END {
    printf "run dist %s objects: %.0f MiB peak; CPU %.2fx of 10 runs of a tenth\n", "'"$N"'",
      rss["run"] / 1024, cpu["run"] / (10 * cpu["run-small"])
    printf "replay of its trace: %.0f MiB peak; CPU %.2fx of the run that wrote it\n",
      rss["replay"] / 1024, cpu["replay"] / cpu["run"]
    if ("optimize" in rss) printf "optimize on the trace: %.0f MiB peak, %.0f s CPU\n",
      rss["optimize"] / 1024, cpu["optimize"]
    if ("replay-1e8" in rss) printf "replay of 10^8 operations: %.0f MiB peak, %.0f s CPU\n",
      rss["replay-1e8"] / 1024, cpu["replay-1e8"]
  }' "$rows"
