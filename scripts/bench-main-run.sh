#!/usr/bin/env bash
# The main job against its floor: `zsmalloc run --chain-size 10 kernel-test` (339,598 objects
# written and verified, the RFC's acceptance run) beside two C programs doing the same writes and
# verifies with the same kind of content (tests/c/kernel_test_content.h):
#   malloc  tests/c/kernel_test_malloc.c: glibc malloc and nothing else (the floor);
#   zs      tests/c/kernel_test_zs.c: libzsmalloc through its C ABI, no lab (the allocator's own
#           cost; what the lab adds is the difference between `lab` and `zs`).
# Whole-process CPU (user + sys, from wait4's rusage), in rounds that run each program once, the
# order rotating, so all see the same machine; then callgrind instructions of each at a small
# count (deterministic).
#
#   scripts/bench-main-run.sh              # 9 rounds; PAIRS=N to change; CG_COUNT=300 (0: skip callgrind)
# Output: per program user, sys and cpu seconds as median [min..max]; the lab's and zs's CPU over
# malloc's and the lab's over zs's, as the median [min..max] of the per-round ratios. Run it on a
# quiet machine: load inflates every program's system time (page faults), and the ratios move
# towards 1.
set -euo pipefail
cd "$(dirname "$0")/.."

PAIRS=${PAIRS:-9}
CG_COUNT=${CG_COUNT:-300}
TARGET=${CARGO_TARGET_DIR:-target}
OUT="$TARGET/zsbench/main-run"
LAB="$TARGET/release/zsmalloc"
mkdir -p "$OUT"

cargo build --release --quiet --bin zsmalloc -p zsmalloc-lab
cargo build --release --quiet -p zsmalloc-capi
# A private copy of the library, so that a concurrent rebuild cannot swap it mid-run.
cp "$TARGET/release/libzsmalloc.so" "$OUT/libzsmalloc.so"
ln -sfn libzsmalloc.so "$OUT/libzsmalloc.so.0" # its SONAME
CFLAGS=(-O2 -std=gnu11 -Wall -Wextra -Werror)
${CC:-cc} "${CFLAGS[@]}" -o "$OUT/kernel_test_malloc" tests/c/kernel_test_malloc.c
${CC:-cc} "${CFLAGS[@]}" -Iinclude -o "$OUT/kernel_test_zs" tests/c/kernel_test_zs.c \
  -L"$OUT" -lzsmalloc -Wl,-rpath,"$(cd "$OUT" && pwd)"
# The lab's --chain-size 10, for the library's default pool.
export ZSMALLOC_CHAIN_SIZE=10

python3 - "$PAIRS" "$LAB" "$OUT/kernel_test_zs" "$OUT/kernel_test_malloc" <<'PY'
import os, statistics, subprocess, sys
rounds, lab, zs, c = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
cmds = {"lab": [lab, "run", "--chain-size", "10", "kernel-test"], "zs": [zs], "malloc": [c]}
names = list(cmds)

def run(cmd):
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)} failed")
    return ru.ru_utime, ru.ru_stime

for cmd in cmds.values():          # one unmeasured run each: page cache, binaries loaded
    run(cmd)
times = {k: [] for k in cmds}
for i in range(rounds):
    for k in names[i % 3:] + names[:i % 3]:
        times[k].append(run(cmds[k]))

def spread(v):
    return f"{statistics.median(v):.3f} [{min(v):.3f}..{max(v):.3f}]"

print(f"whole process, {rounds} rounds, order rotating (seconds, median [min..max])")
print(f"{'program':<8} {'user':>22} {'sys':>22} {'cpu':>22}")
cpu = {}
for k, v in times.items():
    u, s = [t[0] for t in v], [t[1] for t in v]
    cpu[k] = [a + b for a, b in v]
    print(f"{k:<8} {spread(u):>22} {spread(s):>22} {spread(cpu[k]):>22}")
for a, b in (("lab", "malloc"), ("zs", "malloc"), ("lab", "zs")):
    ratios = [x / y for x, y in zip(cpu[a], cpu[b])]
    print(f"{a} / {b} cpu, per round: {spread(ratios)}")
PY

if [ "$CG_COUNT" != 0 ] && command -v valgrind >/dev/null; then
  ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null \
           | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'; }
  a=$(ir "$LAB" run --chain-size 10 kernel-test --count "$CG_COUNT")
  z=$(ir "$OUT/kernel_test_zs" 32 4080 16 "$CG_COUNT")
  b=$(ir "$OUT/kernel_test_malloc" 32 4080 16 "$CG_COUNT")
  awk -v a="$a" -v z="$z" -v b="$b" -v n="$CG_COUNT" 'BEGIN {
    printf "callgrind instructions at --count %d: lab %d, zs %d, malloc %d (lab / zs %.2f, zs / malloc %.2f)\n",
      n, a, z, b, a / z, z / b }'
fi
