#!/usr/bin/env bash
# Regression guard for the lab's main run: callgrind counts the instructions of a fixed small run
# (`zsmalloc run --chain-size 10 kernel-test --count 300`, 76,200 objects written and verified)
# and the count is compared with the committed baseline in bench/instructions.baseline.
# Instruction counts are deterministic for a given binary (the machine's load does not change
# them), so a small tolerance catches a per-operation cost added to the driver or the pool —
# e.g. a page-sized buffer zeroed per queued operation doubles the count.
#
#   scripts/check-instructions.sh                      # compare; exit 1 above baseline + tolerance
#   scripts/check-instructions.sh --update "why"       # a change meant to cost more (or less):
#                                                      # rewrite the baseline, with the reason
# Environment: INSTR_TOLERANCE_PCT (default 2), CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."

BASELINE=bench/instructions.baseline
TOLERANCE=${INSTR_TOLERANCE_PCT:-2}
RUN=(run --chain-size 10 kernel-test --count 300)
BIN="${CARGO_TARGET_DIR:-target}/release/zsmalloc"

if [ "$(uname -m)" != x86_64 ]; then
  echo "check-instructions: the baseline is x86_64's; skipped on $(uname -m)"
  exit 0
fi
if ! command -v valgrind >/dev/null; then
  echo "check-instructions: installing valgrind"
  if [ "$(id -u)" -eq 0 ]; then apt-get install -y -qq valgrind >/dev/null; else sudo apt-get install -y -qq valgrind >/dev/null; fi
fi
cargo build --release --quiet --bin zsmalloc

log=$(mktemp)
trap 'rm -f "$log"' EXIT
valgrind --tool=callgrind --callgrind-out-file=/dev/null "$BIN" "${RUN[@]}" >/dev/null 2>"$log" \
  || { cat "$log" >&2; exit 1; }
count=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$log")
[ -n "$count" ] || { cat "$log" >&2; echo "check-instructions: no count from callgrind" >&2; exit 1; }

if [ "${1:-}" = --update ]; then
  reason=${2:?"--update needs the reason the count changed, in quotes"}
  {
    echo "# Instructions (callgrind Ir, whole process) of: zsmalloc ${RUN[*]}"
    echo "# Checked by scripts/check-instructions.sh (tolerance ${TOLERANCE}%); why this value: $reason"
    echo "main-run $count"
  } >"$BASELINE"
  echo "check-instructions: baseline set to $count"
  exit 0
fi

base=$(awk '$1 == "main-run" { print $2 }' "$BASELINE")
awk -v c="$count" -v b="$base" -v t="$TOLERANCE" 'BEGIN {
  d = (c - b) * 100 / b
  printf "check-instructions: zsmalloc run --chain-size 10 kernel-test --count 300: %d instructions, baseline %d (%+.2f%%, tolerance %s%%)\n", c, b, d, t
  if (d > t) {
    print "check-instructions: FAIL: the main run costs more instructions than its baseline." > "/dev/stderr"
    print "  If the change is meant to cost more, run: scripts/check-instructions.sh --update \"<why>\"" > "/dev/stderr"
    exit 1
  }
  if (d < -t) print "check-instructions: below the baseline: consider --update so the guard starts from the new level"
}'
