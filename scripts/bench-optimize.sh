#!/bin/sh
# The optimizer's benchmark: the exact chain frontier of mainline's 4K layout on kernel-test
# with 999,998 objects, timed, against the naive sweep (one run per class and chain, timed on a
# sample of its runs) in the same run. Arguments go to the benchmark:
#   scripts/bench-optimize.sh [OBJECTS_PER_SIZE] [NAIVE_SAMPLE] [JOBS]
# Then the command itself on the same workload, timed.
set -eu
cd "$(dirname "$0")/.."
cargo build --release -q -p zsmalloc-lab --example bench_optimize --bin zsmalloc
target="${CARGO_TARGET_DIR:-target}/release"
"$target/examples/bench_optimize" "$@"
n="${1:-3937}"
start=$(date +%s.%N)
"$target/zsmalloc" optimize kernel-test -n "$n" > /dev/null
end=$(date +%s.%N)
echo "zsmalloc optimize kernel-test -n $n (sweep, references, 12 points run again): $(echo "$end - $start" | bc) s"
