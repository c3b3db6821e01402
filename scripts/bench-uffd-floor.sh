#!/usr/bin/env bash
# The userfaultfd fault-service floor on this machine (docs/TIER.md, "The fault-service floor"):
# missing-page faults of 4 KiB pages, each served by a minimal handler (read of the fault,
# LZ4_decompress_safe of one compressed page, UFFDIO_COPY) with the handler on the faulting
# thread's CPU, on another CPU, spinning on another CPU, and a plain first touch without
# userfaultfd, all in one run. Needs root (or access to /dev/userfaultfd) and two CPUs for the
# placements apart; it changes no system setting.
#
# The placements apart depend on what else runs: a handler's CPU that is idle must be woken
# (tens of µs in a virtual machine), a busy one makes the handler queue (tails in ms). So the
# script also says how much of the machine's CPU time other processes took during the run.
#
# Usage: scripts/bench-uffd-floor.sh [--faults N] [--warmup N] [--breakdown] [--json]
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release -q -p zsmalloc-tier --bin uffd-floor
BIN="${CARGO_TARGET_DIR:-target}/release/uffd-floor"

# Busy CPU time of the whole machine so far, in clock ticks (user nice system irq softirq), and
# the time the hypervisor gave the virtual CPUs to others (steal).
busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
steal_ticks() { awk '/^cpu / { print $9 }' /proc/stat; }

if [[ " $* " != *" --json "* ]]; then
  model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  echo "machine: $(uname -sr), $(nproc) CPUs ($model), load average $load"
  echo "command: $BIN $*"
fi
report_fd=1
[[ " $* " == *" --json "* ]] && report_fd=2
ticks0=$(busy_ticks)
steal0=$(steal_ticks)
start=$(date +%s.%N)
"$BIN" "$@"
end=$(date +%s.%N)
ticks1=$(busy_ticks)
steal1=$(steal_ticks)
# The run's own CPU time: `times` (in this shell, not a subshell) gives the children's user and
# system time on its second line.
times_out=$(mktemp)
trap 'rm -f "$times_out"' EXIT
times >"$times_out"
own=$(sed -n 2p "$times_out" | awk '{ for (i = 1; i <= 2; i++) { split($i, t, /m|s/); s += t[1] * 60 + t[2] } print s }')
awk -v b="$((ticks1 - ticks0))" -v hz="$(getconf CLK_TCK)" -v own="$own" -v s="$start" -v e="$end" \
  -v n="$(nproc)" -v st="$((steal1 - steal0))" 'BEGIN {
    other = b / hz - own; if (other < 0) other = 0
    printf "other processes: %.1f CPU-seconds of the %.1f the machine had during the run (%.0f%%);",
      other, (e - s) * n, 100 * other / ((e - s) * n)
    printf " stolen by the hypervisor: %.1f\n", st / hz
  }' >&"$report_fd"
