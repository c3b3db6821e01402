#!/usr/bin/env bash
# The tier's fault service beside the floor, in one run (docs/TIER.md, "The fault-service
# floor"): the floor's same-CPU scenario (uffd-floor: a minimal handler serving one
# lz4-compressed 4 KiB page) and the tier's own (tier-touch under `zsmalloc tier`: a working set
# larger than the budget filled with the same page content, then every page touched in turn, each
# touch a fault on an evicted page), both pinned with their handler to one CPU and both timed in
# the faulting thread. Each round runs the floor, the tier, and the tier again with its steps
# timed (ZSMALLOC_TIER_BREAKDOWN=1), whose figures say what share of the wait the wake-up, the
# lookup, zs_obj_read (read_into_raw), decompression, UFFDIO_COPY and eviction take. Needs root
# (or access to /dev/userfaultfd); it changes no system setting.
#
# Targets: p50(tier) within 1.2 times p50(floor), p99(tier) at most p99(floor) + 25 µs.
#
# Usage: scripts/bench-tier-faults.sh [--rounds N] [--cpu C] [--budget BYTES] [--pages N]
#                                     [--faults N] [--warmup N]
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=3 cpu="" budget=4M pages=4096 faults=20000 warmup=500
while (($#)); do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --cpu) cpu=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --pages) pages=$2; shift 2 ;;
    --faults) faults=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    *) echo "bench-tier-faults.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ -z "$cpu" ]] && cpu=$(taskset -cp $$ | sed 's/.*: //; s/[,-].*//')

cargo build --release -q -p zsmalloc-tier --bin uffd-floor --bin tier-touch
cargo build --release -q -p zsmalloc-tier-preload -p zsmalloc-lab
T="${CARGO_TARGET_DIR:-target}/release"

busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo "machine: $(uname -sr), $(nproc) CPUs ($model), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "all on CPU $cpu; $faults faults timed ($warmup untimed first); tier: --budget $budget, $pages pages touched in turn, lz4"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ticks0=$(busy_ticks)
start=$(date +%s.%N)

printf '%-5s %-28s %8s %8s %8s %8s\n' round run "p50 µs" "p99 µs" "max µs" "mean µs"
row() { jq -r --arg r "$1" --arg n "$2" '"\($r)\t\($n)\t\(.p50_us)\t\(.p99_us)\t\(.max_us)\t\(.mean_us)"' "$3" |
  awk -F'\t' '{ printf "%-5s %-28s %8.1f %8.1f %8.1f %8.1f\n", $1, $2, $3, $4, $5, $6 }'; }
for r in $(seq 1 "$rounds"); do
  taskset -c "$cpu" "$T/uffd-floor" --only same_cpu --json --faults "$faults" --warmup "$warmup" |
    jq .scenarios.same_cpu >"$tmp/floor$r.json"
  row "$r" "floor (same CPU)" "$tmp/floor$r.json"
  for mode in plain steps; do
    flag=0; [[ $mode == steps ]] && flag=1
    status=0
    ZSMALLOC_TIER_BREAKDOWN=$flag taskset -c "$cpu" "$T/zsmalloc" tier --budget "$budget" \
      --report "$tmp/report-$mode$r.json" -- "$T/tier-touch" --json --pages "$pages" \
      --faults "$faults" --warmup "$warmup" >"$tmp/tier-$mode$r.json" 2>"$tmp/stderr" || status=$?
    if ((status)) || [[ $(jq -r .state "$tmp/report-$mode$r.json") != tiering ]]; then
      echo "bench-tier-faults.sh: the tier did not run to the end:" >&2
      cat "$tmp/stderr" >&2
      exit 1
    fi
    if (($(jq .faults "$tmp/report-$mode$r.json") < faults)); then
      echo "bench-tier-faults.sh: fewer faults on evicted pages than touches timed: --pages $pages" \
        "must be well above the budget's pages and their slack" >&2
      exit 2
    fi
    name="tier"; [[ $mode == steps ]] && name="tier, steps timed"
    row "$r" "$name" "$tmp/tier-$mode$r.json"
  done
done
end=$(date +%s.%N)
ticks1=$(busy_ticks)

echo
echo "against the targets (p50 ratio at most 1.20, p99 difference at most 25 µs):"
for r in $(seq 1 "$rounds"); do
  jq -rn --slurpfile f "$tmp/floor$r.json" --slurpfile t "$tmp/tier-plain$r.json" --arg r "$r" \
    '($t[0].p50_us / $f[0].p50_us) as $ratio | ($t[0].p99_us - $f[0].p99_us) as $d |
     "round \($r): p50 \($ratio * 100 | round / 100)x (\(if $ratio <= 1.2 then "within" else "over" end)),"
     + " p99 \(if $d >= 0 then "+" else "" end)\($d * 10 | round / 10) µs (\(if $d <= 25 then "within" else "over" end)),"
     + " mean \($t[0].mean_us * 10 | round / 10) µs against \($f[0].mean_us * 10 | round / 10)"'
done

echo
echo "where the tier's wait goes (runs with the steps timed; µs, and the share of the wait):"
printf '%-5s %-8s %8s %11s %11s %11s %11s %11s %11s\n' round "" wait wake-up lookup read decomp copy evict
for r in $(seq 1 "$rounds"); do
  for stat in p50 mean; do
    jq -rn --slurpfile t "$tmp/tier-steps$r.json" --slurpfile rep "$tmp/report-steps$r.json" \
      --arg r "$r" --arg s "$stat" '
      ($rep[0].fault_steps_ns) as $st |
      ($t[0][$s + "_us"]) as $wait |
      [ "lookup", "read", "decompress", "copy", "evict" ] | map($st[.][$s] / 1000) as $steps |
      ($wait - ($steps | add)) as $wake |
      ([$wake] + $steps) as $all |
      "\($r)\t\($s)\t\($wait)\t" + ($all | map("\(. * 100 | round / 100) (\(if $wait > 0 then . / $wait * 100 | round else 0 end)%)") | join("\t"))' |
      awk -F'\t' '{ printf "%-5s %-8s %8.1f", $1, $2, $3; for (i = 4; i <= NF; i++) printf " %11s", $i; printf "\n" }'
  done
done
echo "wait: the faulting thread's; wake-up: the wait less the handler's steps (the fault's message,"
echo "the switches between the threads, the wake); p50 rows: each step's median (evict: what a"
echo "fault that evicts nothing pays); mean rows: each step's mean (evict: the evictions per fault)"
awk -v b="$((ticks1 - ticks0))" -v hz="$(getconf CLK_TCK)" -v s="$start" -v e="$end" -v n="$(nproc)" 'BEGIN {
  printf "the machine was busy %.1f CPU-seconds of %.1f during the run (this run: at most %.1f, one CPU)\n",
    b / hz, (e - s) * n, e - s }'
