#!/usr/bin/env bash
# The main job against its floor: `zsmalloc run --chain-size 10 kernel-test` (339,598 objects
# written and verified, the RFC's acceptance run) against tests/c/kernel_test_malloc.c, a minimal
# C program that mallocs the same objects, fills them with the same kind of content and verifies
# them. Whole-process CPU (user + sys, from wait4's rusage), in alternating pairs so both see the
# same machine; then callgrind instructions of both at a small count (deterministic).
#
#   scripts/bench-main-run.sh              # 9 pairs; PAIRS=N to change; CG_COUNT=300 (0: skip callgrind)
# Output: per program user, sys and cpu seconds as median [min..max], the ratio of the medians and
# the median of the per-pair ratios. Run it on a quiet machine: a loaded one inflates both sides'
# sys time (page faults) and the ratio moves towards 1.
set -euo pipefail
cd "$(dirname "$0")/.."

PAIRS=${PAIRS:-9}
CG_COUNT=${CG_COUNT:-300}
OUT="${CARGO_TARGET_DIR:-target}/zsbench/main-run"
LAB="${CARGO_TARGET_DIR:-target}/release/zsmalloc"
mkdir -p "$OUT"

cargo build --release --quiet --bin zsmalloc
${CC:-cc} -O2 -std=gnu11 -Wall -Wextra -Werror -o "$OUT/kernel_test_malloc" tests/c/kernel_test_malloc.c

python3 - "$PAIRS" "$LAB" "$OUT/kernel_test_malloc" <<'PY'
import os, statistics, subprocess, sys
pairs, lab, c = int(sys.argv[1]), sys.argv[2], sys.argv[3]
cmds = {"lab": [lab, "run", "--chain-size", "10", "kernel-test"], "malloc": [c]}

def run(cmd):
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)} failed")
    return ru.ru_utime, ru.ru_stime

for cmd in cmds.values():          # one unmeasured run each: page cache, binaries loaded
    run(cmd)
times = {k: [] for k in cmds}
for i in range(pairs):
    order = ["lab", "malloc"] if i % 2 == 0 else ["malloc", "lab"]
    for k in order:
        times[k].append(run(cmds[k]))

def spread(v):
    return f"{statistics.median(v):.3f} [{min(v):.3f}..{max(v):.3f}]"

print(f"whole process, {pairs} alternating pairs (seconds, median [min..max])")
print(f"{'program':<8} {'user':>22} {'sys':>22} {'cpu':>22}")
cpu = {}
for k, v in times.items():
    u, s = [t[0] for t in v], [t[1] for t in v]
    cpu[k] = [a + b for a, b in v]
    print(f"{k:<8} {spread(u):>22} {spread(s):>22} {spread(cpu[k]):>22}")
ratios = [a / b for a, b in zip(cpu["lab"], cpu["malloc"])]
print(f"lab / malloc cpu: ratio of medians {statistics.median(cpu['lab']) / statistics.median(cpu['malloc']):.3f}, "
      f"per-pair ratios {spread(ratios)}")
PY

if [ "$CG_COUNT" != 0 ] && command -v valgrind >/dev/null; then
  ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null \
           | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'; }
  a=$(ir "$LAB" run --chain-size 10 kernel-test --count "$CG_COUNT")
  b=$(ir "$OUT/kernel_test_malloc" 32 4080 16 "$CG_COUNT")
  awk -v a="$a" -v b="$b" -v n="$CG_COUNT" 'BEGIN {
    printf "callgrind instructions at --count %d: lab %d, malloc %d (lab / malloc %.2f)\n", n, a, b, a / b }'
fi
