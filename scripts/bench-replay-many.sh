#!/usr/bin/env bash
# What `compare … trace` with eight configurations costs against one replay, now that the trace
# is decoded once for all the pools (zsmalloc_lab::replay_many), all on one thread (--jobs 1).
#
# Whole-process CPU (user + sys, from getrusage of the finished child), in rounds that run each
# command once so all see the same machine:
#   decode   `trace info T`: reading and decoding the trace, with a map of its ids (as the
#            memory plan's pass does)
#   replay1  `replay T --no-time`: one replay (plan pass, decode, one pool)
#   compare8 `compare --jobs 1 --no-time` with eight configurations on T
#   alone8   the eight configurations each replayed by a process of its own (the sum)
# Then the same with --placement-only (the malloc backend keeps bytes always: its place is
# taken by the multi-page band).
#
#   scripts/bench-replay-many.sh        # ROUNDS=3; OBJECTS=300000 (about 10^6 operations)
# Output: per command the median CPU seconds over the rounds, compare8 / replay1 and
# compare8 / alone8 (medians of the per-round ratios), and the pools' share: (compare8 - decode)
# over compare8.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
OBJECTS=${OBJECTS:-300000}
TARGET=${CARGO_TARGET_DIR:-target}
OUT="$TARGET/zsbench/replay-many"
Z="$TARGET/release/zsmalloc"
mkdir -p "$OUT"
cargo build --release --quiet --bin zsmalloc -p zsmalloc-lab

T="$OUT/t.bin"
"$Z" run dist --objects "$OBJECTS" --churn $((OBJECTS * 5 / 6)) --no-time \
  --record "$T" --trace-format binary >/dev/null
echo "trace: $("$Z" trace info "$T" | sed -n 's/^operations *//p') operations ($T)"

PAYLOAD=(classic,chain=10 heuristic,chain=10 fixed-8 class-delta=16 page=16K page=64K
  backend=zblock backend=malloc)
PLACEMENT=(classic,chain=10 heuristic,chain=10 fixed-8 class-delta=16 page=16K page=64K
  backend=zblock multi-page=16K)

python3 - "$Z" "$T" "$ROUNDS" "${PAYLOAD[*]}" "${PLACEMENT[*]}" <<'EOF'
import resource, statistics, subprocess, sys

z, trace, rounds, payload, placement = sys.argv[1], sys.argv[2], int(sys.argv[3]), *sys.argv[4:]

def cpu(args):
    """CPU seconds (user + sys) of one child process running `zsmalloc args`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([z, *args], check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

# Each configuration as the flags of a replay of its own.
FLAGS = {"chain": "--chain-size", "page": "--page-size", "backend": "--backend",
         "class-delta": "--class-delta", "multi-page": "--multi-page"}
def flags(spec):
    out = []
    for part in spec.split(","):
        if "=" in part:
            k, v = part.split("=")
            out += [FLAGS[k], v]
        else:
            out += ["--chain-policy", part]
    return out

for name, configs, mode in [("payload", payload.split(), "--no-time"),
                            ("placement only", placement.split(), "--placement-only")]:
    compare = ["compare", "--jobs", "1", mode]
    for c in configs:
        compare += ["--config", c]
    compare += ["trace", trace]
    runs = {"decode": [], "replay1": [], "compare8": [], "alone8": []}
    for _ in range(rounds):
        runs["decode"].append(cpu(["trace", "info", trace]))
        runs["replay1"].append(cpu(["replay", trace, mode]))
        runs["compare8"].append(cpu(compare))
        runs["alone8"].append(sum(cpu(["replay", trace, mode, *flags(c)]) for c in configs))
    med = {k: statistics.median(v) for k, v in runs.items()}
    per_round = lambda a, b: statistics.median(x / y for x, y in zip(runs[a], runs[b]))
    print(f"\n{name}, {rounds} rounds (CPU seconds, median)")
    for k, v in med.items():
        print(f"  {k:<9} {v:7.3f}")
    print(f"  compare8 / replay1  {per_round('compare8', 'replay1'):.2f}")
    print(f"  compare8 / alone8   {per_round('compare8', 'alone8'):.2f}")
    print(f"  decode / replay1    {per_round('decode', 'replay1'):.2f}")
    print(f"  pools' share of compare8: {(med['compare8'] - med['decode']) / med['compare8']:.2f}")
EOF
