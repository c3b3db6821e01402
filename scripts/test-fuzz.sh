#!/usr/bin/env bash
# Coverage-guided fuzzing of the C ABI (tests/fuzz/fuzz_abi.c, libFuzzer with ASan+UBSan) with a
# shadow model of every object's bytes and the pool's counters.
#
# The harness is C; the library it calls is Rust, built here with stable rustc's
# SanitizerCoverage (the same inline 8-bit counters, PC table and comparison tracing that clang's
# -fsanitize=fuzzer emits), so libFuzzer's coverage is the allocator's as well as the harness's.
# That build has its own target directory (target/fuzz) and never touches target/release.
#
#   scripts/test-fuzz.sh                 # CI: a bounded run of FUZZ_SECS=60 seconds
#   FUZZ_SECS=3600 scripts/test-fuzz.sh  # a longer run (FUZZ_JOBS=N runs N in parallel)
#   FUZZ_MERGE=1 scripts/test-fuzz.sh    # then merge what it found, minimised, into
#                                        # tests/fuzz/corpus (the corpus kept in the repository)
#   scripts/test-fuzz.sh CRASH_FILE      # replay one input (a crash libFuzzer saved)
#
# Installs clang and the libFuzzer runtime (Debian: clang, libclang-rt-<version>-dev) with
# apt-get when missing. Prints libFuzzer's final coverage figures (cov: edges, ft: features).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never

FUZZ_SECS=${FUZZ_SECS:-60}
FUZZ_JOBS=${FUZZ_JOBS:-1}
OUT=target/fuzz
CORPUS=tests/fuzz/corpus
WORK=$OUT/corpus-work

step() { printf '\n--> %s\n' "$*"; }
fail() {
  printf 'test-fuzz: FAILED: %s\n' "$*" >&2
  exit 1
}

find_clang() {
  for c in ${CLANG:-} clang clang-19 clang-16 clang-14; do
    if command -v "$c" >/dev/null; then
      echo "$c"
      return
    fi
  done
}

# Whether $1 links a trivial libFuzzer target (the runtime is a separate Debian package).
links_fuzzer() {
  printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' \
    >"$OUT/probe.c"
  "$1" -fsanitize=fuzzer,address,undefined "$OUT/probe.c" -o "$OUT/probe" 2>/dev/null
}

step "clang and the libFuzzer runtime"
mkdir -p "$OUT"
CC_FUZZ=$(find_clang)
if [ -z "$CC_FUZZ" ] || ! links_fuzzer "$CC_FUZZ"; then
  SUDO=
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  if [ -z "$CC_FUZZ" ]; then
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq clang >/dev/null
    CC_FUZZ=$(find_clang)
  fi
  major=$("$CC_FUZZ" --version | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -n1)
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "libclang-rt-$major-dev" >/dev/null
  links_fuzzer "$CC_FUZZ" || fail "$CC_FUZZ cannot link -fsanitize=fuzzer"
fi
echo "$("$CC_FUZZ" --version | head -n1)"

step "libzsmalloc with SanitizerCoverage (target/fuzz)"
# An explicit --target keeps RUSTFLAGS off build scripts (they would need the fuzzer runtime).
host=$(rustc -vV | sed -n 's/^host: //p')
LIB=$OUT/$host/release/libzsmalloc.a
RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=3 \
  -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
  -Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions=on -Coverflow-checks=on" \
  CARGO_TARGET_DIR=$OUT cargo build --release -p zsmalloc-capi --target "$host"
counters=$(nm "$LIB" 2>/dev/null | grep -c '__sanitizer_cov_8bit_counters_init' || true)
[ "${counters:-0}" -gt 0 ] || fail "libzsmalloc.a carries no SanitizerCoverage counters"

step "the harness (-fsanitize=fuzzer,address,undefined)"
"$CC_FUZZ" -g -O1 -std=gnu11 -Wall -Wextra -Werror -fsanitize=fuzzer,address,undefined \
  -fno-sanitize-recover=undefined -Iinclude tests/fuzz/fuzz_abi.c "$LIB" \
  -lpthread -ldl -lm -o "$OUT/fuzz_abi"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

if [ $# -gt 0 ]; then
  step "replay $*"
  "$OUT/fuzz_abi" "$@"
  exit
fi

step "the kept corpus replays cleanly ($CORPUS)"
mkdir -p "$CORPUS" "$WORK"
"$OUT/fuzz_abi" -runs=0 "$CORPUS" 2>&1 | tail -n 2

step "fuzz for $FUZZ_SECS s ($FUZZ_JOBS job(s))"
log=$OUT/fuzz.log
args=(-max_total_time="$FUZZ_SECS" -max_len=4096 -timeout=20 -rss_limit_mb=2048
  -print_final_stats=1 -artifact_prefix="$OUT/")
if [ "$FUZZ_JOBS" -gt 1 ]; then
  args+=(-jobs="$FUZZ_JOBS" -workers="$FUZZ_JOBS")
fi
if ! "$OUT/fuzz_abi" "${args[@]}" "$WORK" "$CORPUS" >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  fail "the fuzzer found a failing input (saved under $OUT/; replay: scripts/test-fuzz.sh FILE)"
fi
final=$(grep -E '^#[0-9]+.*(DONE|pulse|NEW|REDUCE).*cov:' "$log" | tail -n 1)
echo "$final"
cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$final")
ft=$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$final")
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
echo "fuzz: ${FUZZ_SECS}s, ${execs:-?} inputs, cov: ${cov:-?} edges, ft: ${ft:-?} features, no failure"

if [ "${FUZZ_MERGE:-0}" = 1 ]; then
  step "merge into $CORPUS (minimised)"
  merged=$OUT/corpus-merged
  rm -rf "$merged"
  mkdir -p "$merged"
  "$OUT/fuzz_abi" -merge=1 -max_len=4096 "$merged" "$CORPUS" "$WORK" 2>&1 | tail -n 1
  rm -rf "$CORPUS"
  mv "$merged" "$CORPUS"
  echo "$CORPUS: $(find "$CORPUS" -type f | wc -l) inputs, $(du -sh "$CORPUS" | cut -f1)"
fi
