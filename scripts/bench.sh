#!/usr/bin/env bash
# Speed and memory of zsmalloc-core against the malloc baseline, in one bounded run (~6-8 min on
# 2 cores): criterion (steady-state step, read), callgrind instruction counts, memory outside the
# pages; then one summary table of ratios with each target marked met or MISSED.
#
# Usage: scripts/bench.sh
# Environment:
#   ZS_BENCH_N="10000,100000,1000000"   N of the criterion benches
#   BENCH_WARMUP=1 BENCH_MEASURE=3      criterion warm-up / measurement seconds per benchmark
#   SKIP_CALLGRIND=1                    skip the callgrind part (its CG_* variables also apply)
#   BENCH_COMMIT=<text>                 what to print as the commit (default: git HEAD)
# Logs and raw figures: target/zsbench/ (criterion's own under target/criterion/).
# See docs/PERFORMANCE.md for how to read the output.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never

WARMUP=${BENCH_WARMUP:-1}
MEASURE=${BENCH_MEASURE:-3}
target_dir=$(cargo metadata --format-version 1 --no-deps | jq -r .target_directory)
logs=target/zsbench
mkdir -p "$logs"
start=$(date +%s)

step() { printf '\n==> %s\n' "$*"; }

step "machine"
{
  echo "nproc: $(nproc)"
  grep -m1 'model name' /proc/cpuinfo | sed 's/^model name[[:space:]]*: /cpu: /'
  echo "commit: ${BENCH_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- zsmalloc-core/src 2>/dev/null || echo ' (zsmalloc-core/src modified)')}"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "rustc: $(rustc --version)"
} | tee "$logs/machine.txt"

step "criterion: steady state and reads (warm-up ${WARMUP}s, measurement ${MEASURE}s each)"
# Runs "$@" into log $1, showing the lines matching $2; fails if the command fails.
run_logged() {
  local log=$1 show=$2 rc
  shift 2
  set +e +o pipefail
  "$@" 2>&1 | tee "$log" | grep --line-buffered -E "$show"
  rc=${PIPESTATUS[0]}
  set -e -o pipefail
  [ "$rc" = 0 ] || { tail -20 "$log" >&2; echo "failed: $* (log: $log)" >&2; exit 1; }
}
run_logged "$logs/criterion.log" '^(steady|read)/|time: +\[[0-9.]+ [nµm]s' \
  cargo bench -p zsmalloc-core --bench steady -- --warm-up-time "$WARMUP" --measurement-time "$MEASURE"

step "memory outside the pages (counting global allocator)"
run_logged "$logs/overhead.log" '^ |^memory' cargo bench -p zsmalloc-core --bench overhead

if [ "${SKIP_CALLGRIND:-0}" != 1 ]; then
  step "callgrind: instructions per operation"
  scripts/bench-callgrind.sh 2>&1 | tee "$logs/callgrind.log" | grep -v '^callgrind:'
else
  : >"$logs/callgrind.log"
fi

step "summary (all figures from this run)"
python3 - "$target_dir/criterion" "$start" "$logs" <<'EOF' | tee "$logs/summary.txt"
import json, os, re, sys

crit, start, logs = sys.argv[1], float(sys.argv[2]), sys.argv[3]

def est(group, fn, n):
    """Criterion's point estimate in ns (slope when sampled linearly, as criterion prints it)."""
    p = os.path.join(crit, group, fn, str(n), "new", "estimates.json")
    if not os.path.exists(p) or os.path.getmtime(p) < start:
        return None  # not measured in this run
    e = json.load(open(p))
    return (e.get("slope") or e["mean"])["point_estimate"]

def ns_list():
    found = set()
    for g in ("steady", "read"):
        d = os.path.join(crit, g, "malloc")
        if os.path.isdir(d):
            found |= {int(x) for x in os.listdir(d) if x.isdigit()}
    return sorted(n for n in found if est("steady", "malloc", n) or est("read", "malloc", n))

def ratio(a, b):
    return a / b if a and b else None

def fmt(x, spec="{:.1f}"):
    return spec.format(x) if x is not None else "-"

def verdict(r, limit):
    return "-" if r is None else ("met" if r <= limit else "MISSED")

def floor_table(group, floor, short, title):
    """A floor (information): its time against the baseline, and the pool's against the floor."""
    print("\n" + title)
    print(f"{'N':>9} {'malloc':>9} {floor:>17} {short + '/mall':>10} {'raw/' + short:>9} {'safe/' + short:>10}")
    for n in ns:
        b, f = est(group, "malloc", n), est(group, floor, n)
        s, r = est(group, "pool_safe", n), est(group, "pool_raw", n)
        print(f"{n:>9} {fmt(b):>9} {fmt(f):>17} {fmt(ratio(f, b), '{:.2f}x'):>10} "
              f"{fmt(ratio(r, f), '{:.2f}x'):>9} {fmt(ratio(s, f), '{:.2f}x'):>10}")

targets = []
ns = ns_list()
print("steady state: ns per step (free a random victim + store a new object), criterion")
print(f"{'N':>9} {'malloc':>9} {'pool_safe':>10} {'safe/mall':>10} {'pool_raw':>9} {'raw/mall':>9}   target <= 1.5x")
for n in ns:
    b, s, r = est("steady", "malloc", n), est("steady", "pool_safe", n), est("steady", "pool_raw", n)
    rs, rr = ratio(s, b), ratio(r, b)
    print(f"{n:>9} {fmt(b):>9} {fmt(s):>10} {fmt(rs, '{:.2f}x'):>10} {fmt(r):>9} {fmt(rr, '{:.2f}x'):>9}   "
          f"safe {verdict(rs, 1.5)}, raw {verdict(rr, 1.5)}")
    targets += [(f"store+free step, safe layer, N={n}", rs, 1.5), (f"store+free step, raw layer, N={n}", rr, 1.5)]

floor_table("steady", "malloc_locked", "lock",
            "step floor (information): the malloc step plus one class spin lock pair on each side, a CAS on the\n"
            "freed block's header and a CAS publishing the new block in its handle word: the least a step needs")

print("\nread: ns per non-spanning read section + copy out vs memcpy from a malloc'd block, criterion")
print(f"{'N':>9} {'malloc':>9} {'pool_safe':>10} {'safe/mall':>10} {'pool_raw':>9} {'raw/mall':>9} {'read_into':>10} {'into/mall':>10}   target <= 1.5x")
for n in ns:
    b = est("read", "malloc", n)
    s, r, i = est("read", "pool_safe", n), est("read", "pool_raw", n), est("read", "pool_read_into", n)
    rs, rr, ri = ratio(s, b), ratio(r, b), ratio(i, b)
    print(f"{n:>9} {fmt(b):>9} {fmt(s):>10} {fmt(rs, '{:.2f}x'):>10} {fmt(r):>9} {fmt(rr, '{:.2f}x'):>9} "
          f"{fmt(i):>10} {fmt(ri, '{:.2f}x'):>10}   safe {verdict(rs, 1.5)}, raw {verdict(rr, 1.5)}")
    targets += [(f"non-spanning read+copy, safe layer, N={n}", rs, 1.5),
                (f"non-spanning read+copy, raw layer, N={n}", rr, 1.5)]

floor_table("read", "malloc_registered", "reg",
            "read floor (information): the same copy out of malloc'd blocks whose 8-byte header each read\n"
            "registers on with one locked add and one locked sub, the least a read that a free can see needs")

print("\nspanning read (information): ns per spanning read section + copy out")
print(f"{'N':>9} {'malloc':>9} {'pool_safe':>10} {'safe/mall':>10}")
for n in ns:
    b, s = est("read", "spanning_malloc", n), est("read", "spanning_pool_safe", n)
    print(f"{n:>9} {fmt(b):>9} {fmt(s):>10} {fmt(ratio(s, b), '{:.2f}x'):>10}")

cg = {}
for line in open(os.path.join(logs, "callgrind.log")):
    m = re.match(r"callgrind: mode=(\S+) n=(\d+) .* ir_per_op=([\d.]+)", line)
    if m:
        cg.setdefault(m[1], {})[int(m[2])] = float(m[3])
if cg:
    cns = sorted({n for v in cg.values() for n in v})
    print("\ncallgrind: instructions per operation (setup cancelled)")
    print(f"{'mode':<12}" + "".join(f"{'N=' + str(n):>12}" for n in cns) + f"{'spread':>9}" +
          "".join(f"{'/malloc@' + str(n):>16}" for n in cns))
    for mode, v in cg.items():
        vals = [v.get(n) for n in cns]
        present = [x for x in vals if x]
        spread = max(present) / min(present) - 1 if present else None
        base = cg.get("read-malloc" if mode.startswith("read-") else "malloc", {})
        rats = [ratio(v.get(n), base.get(n)) if base is not v else None for n in cns]
        print(f"{mode:<12}" + "".join(f"{fmt(x):>12}" for x in vals) + f"{fmt(spread and 100 * spread, '{:.1f}%'):>9}" +
              "".join(f"{fmt(x, '{:.2f}x'):>16}" for x in rats))
        if mode in ("safe", "raw", "read-safe", "read-raw") and spread is not None and len(present) > 1:
            targets.append((f"instructions per op flat across N ({mode}), spread", spread, 0.10))

ov = {}
for line in open(os.path.join(logs, "overhead.log")):
    if line.startswith("overhead:"):
        kv = dict(x.split("=", 1) for x in line.split()[1:])
        ov[kv["layer"]] = kv
if ov:
    print("\nmemory outside the pages, % of pool bytes (counting global allocator)")
    for layer in ("raw", "safe"):
        if layer in ov:
            o = ov[layer]
            print(f"  {layer:<5} N={o['n']}: after fill {o['pct_fill']}% ({o['heap_fill']} B), after N steps "
                  f"{o['pct_steps']}% ({o['heap_steps']} B), peak {o['pct_peak']}%   (pool bytes {o['pool_bytes']})")
    if "slots" in ov:
        o = ov["slots"]
        print(f"  safe-layer handle slots (reported separately): {o['heap_fill']} B = {o['pct_fill']}% "
              f"(metadata_bytes().1 says {o['reported']} B)")
    if "raw" in ov:
        o = ov["raw"]
        targets.append(("heap outside pages at N=1e6 after fill (excl. handle slots)", float(o["pct_fill"]) / 100, 0.02))
        targets.append(("heap outside pages at N=1e6 after N steps (excl. handle slots)", float(o["pct_steps"]) / 100, 0.02))

print("\ntargets")
for name, value, limit in targets:
    shown = f"{100 * value:.2f}%" if limit < 1 else f"{value:.2f}x"
    lim = f"{100 * limit:.0f}%" if limit < 1 else f"{limit}x"
    print(f"  {verdict(value, limit):<7} {name}: {shown} (limit {lim})" if value is not None else f"  -       {name}: not measured")
EOF
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg); total time: $(( $(date +%s) - start )) s" | tee -a "$logs/summary.txt"
