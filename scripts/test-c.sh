#!/usr/bin/env bash
# The C ABI's checks, run by scripts/test-all.sh. Installs what it needs on a fresh Debian machine
# (liblz4-dev, valgrind, pkg-config via apt-get; cbindgen pinned, under target/).
#   1. libzsmalloc builds; include/zsmalloc.h has not drifted from what cbindgen generates;
#   2. libzsmalloc.so exports (nm -D) exactly the header's functions, every one of the contract
#      among them, and libzsmalloc.a defines them too;
#   3. the headers compile as C99 and C++ with -Wall -Wextra -Werror -pedantic; ZS_HANDLE_SIZE is
#      in zsmalloc.h and left to ported kernel code by zsmalloc_compat.h;
#   4. examples and test programs build with -Wall -Wextra -Werror, plain and with ASan+UBSan;
#      a program linked in the build tree runs after a plain cargo build (any CARGO_TARGET_DIR);
#      static linking works; make install gives a stripped libzsmalloc.so.0 with its links, a
#      zsmalloc.pc that a program builds and runs with, and the zsmalloc command in bin/;
#   5. under ASan+UBSan: the bad-input program, the reliability program (many sections of one
#      object, moves onto themselves, refused reads, injected faults), the compat demo, zsmalloc_test printing the RFC's
#      BASE (classic) and PATCHED (heuristic) lines exactly with ZSMALLOC_CHAIN_SIZE=10, a bad
#      ZSMALLOC_* value refused by name, mt_stress (objects moved while reading > 0), zram_store
#      under the LD_PRELOAD shim and the replay of its trace (examples/replay and the lab's
#      `zsmalloc replay`) giving identical figures; the read modes (read_modes, and zram_store
#      and mt_stress re-run under ZSMALLOC_READ_MODE=map and =contiguous: copy's figures, 0 bytes
#      copied; zsmalloc_test there: BASE's pages and spanning objects, 0 bytes copied); class
#      tables (tests/c/class_tables.c; zsmalloc_test with mainline's and the heuristic's
#      chain-10 tables as ZSMALLOC_CLASS_TABLE files printing the RFC's lines); kernel_test_zs
#      (the main run's benchmark on the library) verifying every object with BASE's figures;
#      multi_pages under ZSMALLOC_MULTI_PAGE_SIZE=16K in every read mode (objects up to 16K,
#      pages as a model of the RFC's class table gives); hostile_input (struct sizes that end
#      inside a field refused; /dev/zero, /dev/urandom, endless FIFOs, a 2 MB line and a 5 MB
#      file as ZSMALLOC_CLASS_TABLE refused by file and line, each within 5 s of CPU and 300 MiB, the
#      plain build under a 4 GiB address-space limit);
#   6. every program once under valgrind memcheck.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
# Cargo's output directory: $CARGO_TARGET_DIR when set (relative to the repository), else target/.
tgt=$(realpath -m "${CARGO_TARGET_DIR:-target}")

checks=0
ok() {
  checks=$((checks + 1))
  printf '  ok %s\n' "$*"
}
fail() {
  printf 'test-c: FAILED: %s\n' "$*" >&2
  exit 1
}
step() { printf '\n--> %s\n' "$*"; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

step "tools"
missing=()
[ -f /usr/include/lz4.h ] || missing+=(liblz4-dev)
command -v valgrind >/dev/null || missing+=(valgrind)
command -v pkg-config >/dev/null || missing+=(pkg-config)
command -v cc >/dev/null || missing+=(gcc)
command -v c++ >/dev/null || missing+=(g++)
command -v nm >/dev/null || missing+=(binutils)
command -v make >/dev/null || missing+=(make)
command -v file >/dev/null || missing+=(file)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]}"
  SUDO=
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
ok "cc, c++, liblz4-dev, valgrind, pkg-config, nm"

step "build libzsmalloc (and the zsmalloc command, for its replay)"
cargo build --release
lib=$tgt/release/libzsmalloc.so
[ -f "$lib" ] && [ -f "$tgt/release/libzsmalloc.a" ] || fail "libzsmalloc.so/.a not built"
ok "libzsmalloc.so and libzsmalloc.a"
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libzsmalloc.so.0 ] || fail "SONAME of $lib: '$soname'"
ok "SONAME $soname"

step "header drift (pinned cbindgen)"
scripts/cbindgen.sh "$tmp/zsmalloc.h"
if ! diff -u include/zsmalloc.h "$tmp/zsmalloc.h"; then
  fail "include/zsmalloc.h differs from the generated header: run 'make header' and commit it"
fi
ok "include/zsmalloc.h is what cbindgen generates"

step "exports (nm -D)"
grep -E '^[a-z].*\bzs_[a-z_]+\(' include/zsmalloc.h | grep -oE '\bzs_[a-z_]+\(' | tr -d '(' \
  | sort -u >"$tmp/declared"
nm -D --defined-only "$lib" | awk '$2 == "T" && $3 ~ /^zs_/ { print $3 }' | sort -u >"$tmp/exported"
diff -u "$tmp/declared" "$tmp/exported" || fail "exported zs_* symbols differ from the header"
contract="zs_pool_config_init zs_pool_config_from_env zs_create_pool zs_create_pool_with_config
  zs_destroy_pool zs_store zs_malloc zs_obj_write zs_free zs_handle_move zs_obj_read_begin
  zs_obj_read_end zs_obj_read_sg_begin zs_obj_read_sg_end zs_get_total_pages zs_huge_class_size
  zs_lookup_class_index zs_compact zs_pool_stats zs_class_stats zs_last_error zs_strerror
  zs_version zs_pool_config_init_sized zs_pool_config_from_env_sized
  zs_create_pool_with_config_sized zs_pool_stats_sized zs_class_stats_sized"
for f in $contract; do
  grep -qx "$f" "$tmp/exported" || fail "$f is not exported"
done
nm --defined-only "$tgt/release/libzsmalloc.a" 2>/dev/null | awk '$2 == "T" && $3 ~ /^zs_/ { print $3 }' \
  | sort -u >"$tmp/static"
diff -u "$tmp/declared" "$tmp/static" || fail "libzsmalloc.a does not define the header's functions"
ok "$(wc -l <"$tmp/exported") functions exported, all of the contract among them; .a defines them too"

step "headers compile as C99 and C++ (-Wall -Wextra -Werror -pedantic)"
for h in zsmalloc.h zsmalloc_compat.h; do
  printf '#include "%s"\n#include "%s"\nint main(void) { return zs_version() == ZS_ABI_VERSION ? 0 : 1; }\n' \
    "$h" "$h" >"$tmp/hdr.c"
  cc -std=c99 -Wall -Wextra -Werror -pedantic -Iinclude -c "$tmp/hdr.c" -o "$tmp/hdr.o"
  c++ -std=c++11 -Wall -Wextra -Werror -pedantic -Iinclude -x c++ -c "$tmp/hdr.c" -o "$tmp/hdr.o"
  ok "$h as C99 and C++11"
done
cc -std=c99 -Wall -Wextra -Werror -pedantic -D_POSIX_C_SOURCE=200809L -Iinclude -c \
  examples/compat_demo.c -o "$tmp/compat_demo.o"
ok "kernel-style code on zsmalloc_compat.h (with its own ZS_HANDLE_SIZE) compiles as pedantic C99"
# zsmalloc.h alone gives ZS_HANDLE_SIZE; zsmalloc_compat.h leaves it to the ported code, which
# may define it before or after the include (mm/zsmalloc.c defines it after its includes).
printf '%s\n' '#include "zsmalloc.h"' \
  'typedef char zs_handle_size_is_8[ZS_HANDLE_SIZE == 8 ? 1 : -1];' \
  'int main(void) { return (int)sizeof(zs_handle_size_is_8) - 1; }' >"$tmp/hs_plain.c"
printf '%s\n' '#include "zsmalloc_compat.h"' '#define ZS_HANDLE_SIZE (sizeof(unsigned long))' \
  'int main(void) { return ZS_HANDLE_SIZE == 8 ? 0 : 1; }' >"$tmp/hs_after.c"
printf '%s\n' '#define ZS_HANDLE_SIZE (sizeof(unsigned long))' '#include "zsmalloc.h"' \
  '#include "zsmalloc_compat.h"' 'int main(void) { return ZS_HANDLE_SIZE == 8 ? 0 : 1; }' \
  >"$tmp/hs_before.c"
printf '%s\n' '#include "zsmalloc.h"' '#include "zsmalloc_compat.h"' '#ifdef ZS_HANDLE_SIZE' \
  '#error "zsmalloc_compat.h must leave ZS_HANDLE_SIZE to the ported code"' '#endif' \
  '#define ZS_HANDLE_SIZE (sizeof(unsigned long))' 'int main(void) { return 0; }' >"$tmp/hs_both.c"
for t in hs_plain hs_after hs_before hs_both; do
  cc -std=c99 -Wall -Wextra -Werror -pedantic -Iinclude -c "$tmp/$t.c" -o "$tmp/$t.o" \
    || fail "ZS_HANDLE_SIZE: $t.c"
done
ok "ZS_HANDLE_SIZE from zsmalloc.h alone; through zsmalloc_compat.h, the ported code's own"

step "examples and test programs (-Wall -Wextra -Werror), plain and ASan+UBSan"
make --no-print-directory examples c-tests >/dev/null
make --no-print-directory examples c-tests SAN=1 >/dev/null
plain=build/examples
san=build/examples-san
tplain=build/tests
tsan=build/tests-san
ok "built into $plain, $tplain and $san, $tsan"
cc -O2 -std=gnu11 -Wall -Wextra -Werror -Iinclude examples/zsmalloc_test.c \
  "$tgt/release/libzsmalloc.a" -lpthread -ldl -lm -o "$tmp/zsmalloc_test_static"
"$tmp/zsmalloc_test_static" 32 4080 16 3 >/dev/null
ok "static linking against libzsmalloc.a"

printf '%s\n' '#include <zsmalloc.h>' 'int main(void)' '{' \
  '    struct zs_handle h = {0};' '    struct zs_pool_stats st;' '    char copy[4096];' \
  '    struct zs_pool *pool = zs_create_pool("link");' \
  '    if (!pool || zs_store(pool, &h, "hello", 5, 0) != 0)' '        return 1;' \
  '    const char *p = zs_obj_read_begin(pool, &h, 5, copy);' '    int ok = p && p[4] == '"'o'"';' \
  '    zs_obj_read_end(pool, &h, 5, (void *)p);' \
  '    ok = ok && zs_pool_stats(pool, &st) == 0 && st.objs_inuse == 1;' \
  '    zs_free(pool, &h);' '    zs_destroy_pool(pool);' '    return !ok;' '}' >"$tmp/prog.c"

step "linking in the build tree (-L ... -Wl,-rpath,... -lzsmalloc)"
link_tree() { # target dir: builds libzsmalloc there with plain cargo, links a program, runs it
  local dir=$1 out
  out="$tmp/tree.$(basename "$1")"
  CARGO_TARGET_DIR=$dir cargo build --release -p zsmalloc-capi
  cc -Wall -Wextra -Werror -Iinclude "$tmp/prog.c" -o "$out" \
    -L"$dir/release" -Wl,-rpath,"$dir/release" -lzsmalloc
  grep -q 'NEEDED.*\[libzsmalloc\.so\.0\]' <<<"$(readelf -d "$out")" || fail "$out does not need libzsmalloc.so.0"
  "$out" || fail "a program linked against $dir/release does not run"
}
link_tree "$tgt"
ok "after cargo build --release -p zsmalloc-capi: linked against $tgt/release, runs"
alt="$tgt/test-c-target-dir"
link_tree "$alt"
ok "the same with CARGO_TARGET_DIR=$alt"
make --no-print-directory CARGO_TARGET_DIR="$alt" BUILD="$tmp/build-alt" examples >/dev/null
"$tmp/build-alt/examples/zsmalloc_test" 32 256 16 2 >/dev/null
grep -q "$alt/release/libzsmalloc.so.0" <<<"$(ldd "$tmp/build-alt/examples/zsmalloc_test")" \
  || fail "make CARGO_TARGET_DIR=...: examples not linked against that directory"
ok "make CARGO_TARGET_DIR=... examples: linked against that directory, runs"

step "make install PREFIX=..."
prefix="$tmp/prefix"
make --no-print-directory install PREFIX="$prefix" >/dev/null
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
[ -f "$prefix/lib/libzsmalloc.so.$version" ] && [ ! -L "$prefix/lib/libzsmalloc.so.$version" ] \
  || fail "libzsmalloc.so.$version not installed"
[ "$(readlink "$prefix/lib/libzsmalloc.so.0")" = "libzsmalloc.so.$version" ] || fail "libzsmalloc.so.0 link"
[ "$(readlink "$prefix/lib/libzsmalloc.so")" = libzsmalloc.so.0 ] || fail "libzsmalloc.so link"
grep -q 'SONAME.*\[libzsmalloc\.so\.0\]' <<<"$(readelf -d "$prefix/lib/libzsmalloc.so")" \
  || fail "installed library has no SONAME libzsmalloc.so.0"
grep -q ', stripped' <<<"$(file -L "$prefix/lib/libzsmalloc.so")" \
  || fail "installed library not stripped: $(file -L "$prefix/lib/libzsmalloc.so")"
if grep -q '\.debug_' <<<"$(readelf -S "$prefix/lib/libzsmalloc.so" "$prefix/lib/libzsmalloc.a" 2>/dev/null)"; then
  fail "installed libraries carry debug sections"
fi
nm -D --defined-only "$prefix/lib/libzsmalloc.so" | awk '$2 == "T" && $3 ~ /^zs_/ { print $3 }' \
  | sort -u | diff -u "$tmp/declared" - || fail "installed library's exports differ from the header"
ok "lib/libzsmalloc.so.$version: stripped, no debug sections, SONAME libzsmalloc.so.0; links .so.0, .so"
[ -x "$prefix/bin/zsmalloc" ] || fail "bin/zsmalloc not installed"
grep -q ', stripped' <<<"$(file "$prefix/bin/zsmalloc")" || fail "bin/zsmalloc not stripped"
PATH="$prefix/bin:$PATH" zsmalloc classes --format csv >"$tmp/installed-classes.csv" \
  || fail "the installed zsmalloc command does not run"
"$tgt/release/zsmalloc" classes --format csv | cmp -s - "$tmp/installed-classes.csv" \
  || fail "the installed zsmalloc command differs from the built one"
ok "bin/zsmalloc: stripped, on PATH it runs as the built one"
grep -q ', stripped' <<<"$(file "$prefix/lib/libzsmalloc_tier_preload.so")" \
  || fail "lib/libzsmalloc_tier_preload.so not installed stripped"
# The installed command finds its library in ../lib: the refusal is then the budget's.
tier_err=$("$prefix/bin/zsmalloc" tier --budget 0 -- true 2>&1 || true)
grep -q -- '--budget 0:' <<<"$tier_err" || fail "installed zsmalloc tier: $tier_err"
ok "lib/libzsmalloc_tier_preload.so: stripped, found by the installed zsmalloc tier"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
[ "$(pkg-config --modversion zsmalloc)" = "$version" ] || fail "zsmalloc.pc: version"
[ "$(pkg-config --variable=libdir zsmalloc)" = "$prefix/lib" ] || fail "zsmalloc.pc: libdir"
# shellcheck disable=SC2046
cc -Wall -Wextra -Werror "$tmp/prog.c" -o "$tmp/pc" $(pkg-config --cflags --libs zsmalloc)
grep -q 'NEEDED.*\[libzsmalloc\.so\.0\]' <<<"$(readelf -d "$tmp/pc")" || fail "pkg-config program: NEEDED"
LD_LIBRARY_PATH="$prefix/lib" "$tmp/pc" || fail "program built with pkg-config does not run"
# shellcheck disable=SC2046
cc -Wall -Wextra -Werror "$tmp/prog.c" -o "$tmp/pc_static" $(pkg-config --cflags zsmalloc) \
  "$prefix/lib/libzsmalloc.a" $(pkg-config --static --libs-only-l zsmalloc | sed 's/-lzsmalloc//')
"$tmp/pc_static" || fail "program linked with pkg-config --static does not run"
unset PKG_CONFIG_PATH
ok "cc prog.c \$(pkg-config --cflags --libs zsmalloc) builds and runs (and with --static)"

export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=detect_leaks=1

step "bad input (ASan+UBSan)"
"$tsan/bad_input" 2>"$tmp/bad.err" | tee "$tmp/bad.out"
grep -q ' 0 failed' "$tmp/bad.out" || { cat "$tmp/bad.err"; fail "bad_input"; }
ok "$(grep -oE '[0-9]+ passed' "$tmp/bad.out") bad-input checks"
"$san/compat_demo"
ok "compat demo"

step "abi_bench, briefly (ASan+UBSan)"
"$tsan/abi_bench" 3000 20000 1 | tee "$tmp/abi.out"
grep -qE '^abi N=3000 step: .* median ratio [0-9.]+x \| read \([0-9]+ non-spanning\)' "$tmp/abi.out" \
  || fail "abi_bench output"
ok "abi_bench runs the step and read loops through the C ABI"

step "zsmalloc_test: the RFC's figures from the environment (ASan+UBSan)"
cat >"$tmp/base" <<'EOF'
zsmalloc_test: num write objects: 339598
zsmalloc_test: pool pages used 175111, total allocated size 698213488
zsmalloc_test: pool memory utilization: 97.3
zsmalloc_test: num read objects: 339598
zsmalloc_test: spanning objects: 110377, total memcpy size: 278318624
EOF
cat >"$tmp/patched" <<'EOF'
zsmalloc_test: num write objects: 339598
zsmalloc_test: pool pages used 175920, total allocated size 698213488
zsmalloc_test: pool memory utilization: 96.8
zsmalloc_test: num read objects: 339598
zsmalloc_test: spanning objects: 103256, total memcpy size: 265378608
EOF
for run in classic:base heuristic:patched; do
  policy=${run%%:*}
  ZSMALLOC_CHAIN_SIZE=10 ZSMALLOC_CHAIN_POLICY=$policy "$san/zsmalloc_test" >"$tmp/out.$policy"
  cat "$tmp/out.$policy"
  diff -u "$tmp/${run#*:}" "$tmp/out.$policy" || fail "zsmalloc_test under $policy"
  ok "ZSMALLOC_CHAIN_POLICY=$policy prints the RFC's ${run#*:} figures exactly"
  ZSMALLOC_CHAIN_SIZE=10 ZSMALLOC_CHAIN_POLICY=$policy "$tsan/zsmalloc_test_kernel" >"$tmp/kout.$policy"
  diff -u "$tmp/${run#*:}" "$tmp/kout.$policy" || fail "zsmalloc_test_kernel under $policy"
  ok "the same from kernel-style code on zsmalloc_compat.h (tests/c/zsmalloc_test_kernel.c)"
done
# The main run's allocator share (scripts/bench-main-run.sh): the lab's content, the RFC's pages.
ZSMALLOC_CHAIN_SIZE=10 "$tsan/kernel_test_zs" >"$tmp/kt_zs.out"
grep -qx 'objects 339598 bytes 698213488 verified 339598 pages 175111 spanning 110377' \
  "$tmp/kt_zs.out" || fail "kernel_test_zs: $(cat "$tmp/kt_zs.out")"
ok "kernel_test_zs verifies every object, with the RFC's BASE pages and spanning objects"
if ZSMALLOC_CHAIN_SIZE=17 "$san/zsmalloc_test" 32 64 16 1 >/dev/null 2>"$tmp/env.err"; then
  fail "ZSMALLOC_CHAIN_SIZE=17 accepted"
fi
grep -q ZSMALLOC_CHAIN_SIZE "$tmp/env.err" || fail "bad variable not named: $(cat "$tmp/env.err")"
ok "ZSMALLOC_CHAIN_SIZE=17: no pool, message names the variable"
# Arguments that are not whole numbers, or out of range: one line naming them, exit 2.
for args in "32 64 16 abc" "32 64 16 -5" "32 64 0x10 1" "32 64 16 0" "64 32 16 1" "32 5000 16 1" \
  "1 4096 1 99999999999999999"; do
  rc=0
  # shellcheck disable=SC2086 # the arguments are split on purpose
  "$san/zsmalloc_test" $args >"$tmp/args.out" 2>"$tmp/args.err" || rc=$?
  [ "$rc" = 2 ] && [ "$(wc -l <"$tmp/args.err")" = 1 ] && [ ! -s "$tmp/args.out" ] \
    || fail "zsmalloc_test $args: exit $rc, $(cat "$tmp/args.err" "$tmp/args.out")"
done
ok "zsmalloc_test with a bad argument (abc, -5, 0x10, 0, LO > HI, HI > page, N overflowing): one line, exit 2"
ZSMALLOC_CHAIN_SIZE=17 "$tsan/reliability" env >"$tmp/env.out" 2>"$tmp/env.err"
grep -q 'pools 0' "$tmp/env.out" || fail "ZSMALLOC_CHAIN_SIZE=17: $(cat "$tmp/env.out")"
[ "$(grep -c ZSMALLOC_CHAIN_SIZE "$tmp/env.err")" = 1 ] || fail "not said once: $(cat "$tmp/env.err")"
ok "a bad environment is said once however many pools are asked for"
ZSMALLOC_PAGE_SIZE=16K ZSMALLOC_CHAIN_SIZ=17 "$tsan/reliability" env >"$tmp/env.out" 2>"$tmp/env.err"
grep -q 'page_size 16384 (0), pools 3' "$tmp/env.out" || fail "ZSMALLOC_PAGE_SIZE=16K: $(cat "$tmp/env.out")"
[ "$(grep -c 'unknown environment variable ZSMALLOC_CHAIN_SIZ ' "$tmp/env.err")" = 1 ] \
  || fail "unknown ZSMALLOC_CHAIN_SIZ not warned once by name: $(cat "$tmp/env.err")"
ok "ZSMALLOC_PAGE_SIZE=16K accepted; unknown ZSMALLOC_CHAIN_SIZ warned once, by name"

step "class tables: struct and ZSMALLOC_CLASS_TABLE, identity and refusals (ASan+UBSan)"
"$tsan/class_tables" 2>"$tmp/tables.err" | tee "$tmp/tables.out"
grep -q ' 0 failed' "$tmp/tables.out" || { cat "$tmp/tables.err"; fail "class_tables"; }
ok "$(grep -oE '[0-9]+ passed' "$tmp/tables.out") class-table checks"
# An unmodified program given mainline's (and the RFC heuristic's) chain-10 table as a file
# prints the RFC's figures exactly, as with the settings that computed the table.
for run in classic:base heuristic:patched; do
  policy=${run%%:*}
  ZSMALLOC_CHAIN_SIZE=10 ZSMALLOC_CHAIN_POLICY=$policy "$tsan/class_tables" export "$tmp/$policy.table" \
    || fail "class_tables export under $policy"
  ZSMALLOC_CLASS_TABLE="$tmp/$policy.table" "$san/zsmalloc_test" >"$tmp/tout.$policy"
  diff -u "$tmp/${run#*:}" "$tmp/tout.$policy" || fail "zsmalloc_test with the $policy table file"
  ok "ZSMALLOC_CLASS_TABLE=<$policy chain-10 table>: the RFC's ${run#*:} figures exactly"
done
printf 'page_size 4096\n32 1\n32 1\n4096 1\n' >"$tmp/dup.table"
if ZSMALLOC_CLASS_TABLE="$tmp/dup.table" "$san/zsmalloc_test" 32 64 16 1 >/dev/null 2>"$tmp/tenv.err"; then
  fail "a table file with a duplicate size accepted"
fi
grep -q "ZSMALLOC_CLASS_TABLE: $tmp/dup.table: line 3" "$tmp/tenv.err" \
  || fail "bad table file not named with its line: $(cat "$tmp/tenv.err")"
ok "a bad table file: no pool, the message names the variable, the file and the line"

step "hostile input: struct sizes inside a field, endless and binary table files (ASan+UBSan)"
"$tsan/hostile_input" 2>"$tmp/hostile.err" | tee "$tmp/hostile.out"
grep -q ' 0 failed' "$tmp/hostile.out" || { cat "$tmp/hostile.err"; fail "hostile_input"; }
"$tplain/hostile_input" 2>"$tmp/hostile.err" | tee "$tmp/hostile.out"
grep -q ' 0 failed' "$tmp/hostile.out" || { cat "$tmp/hostile.err"; fail "hostile_input (plain)"; }
ok "$(grep -oE '[0-9]+ passed' "$tmp/hostile.out") hostile-input checks (plain: under a 4 GiB address-space limit)"

step "reliability: no call hangs, refusals change nothing, injected faults (ASan+UBSan)"
timeout 300 "$tsan/reliability" 2>"$tmp/rel.err" | tee "$tmp/rel.out" || true
grep -q ' 0 failed' "$tmp/rel.out" || { cat "$tmp/rel.err"; fail "reliability"; }
ok "$(grep -oE '[0-9]+ passed' "$tmp/rel.out") reliability checks"

step "mt_stress (ASan+UBSan)"
"$tsan/mt_stress" 4 4096 2 | tee "$tmp/mt.out"
moved=$(sed -n 's/.*moved-while-reading \([0-9]*\) objects.*/\1/p' "$tmp/mt.out")
[ "${moved:-0}" -gt 0 ] || fail "no object moved while readers were active"
ok "objects moved while reading: $moved"

step "zram_store under the LD_PRELOAD shim, then replay (ASan+UBSan)"
corpus="$tmp/corpus"
mkdir -p "$corpus"
cat zsmalloc-capi/src/*.rs examples/*.c tests/c/*.c >"$corpus/sources.txt"
head -c 262144 /dev/urandom >"$corpus/random.bin"
head -c 65536 /dev/zero >"$corpus/zero.bin"
head -c 2097152 "$lib" >"$corpus/libzsmalloc.so.part"
lab=
if [ -x "$tgt/release/zsmalloc" ] && "$tgt/release/zsmalloc" replay --help >/dev/null 2>&1; then
  lab=$tgt/release/zsmalloc
else
  echo "(the zsmalloc command has no replay here: only examples/replay is checked)"
fi
for page in 4096 16384; do
  trace="$tmp/trace.$page"
  ZSMALLOC_PAGE_SIZE=$page ZSTRACE_FILE="$trace" LD_PRELOAD="$PWD/$plain/libzstrace.so" \
    ASAN_OPTIONS=detect_leaks=1:verify_asan_link_order=0 \
    "$san/zram_store" "$corpus"/* | tee "$tmp/zram.$page"
  ZSMALLOC_PAGE_SIZE=$page "$san/replay" "$trace" | tee "$tmp/replay.$page"
  live=$(grep '^figures:' "$tmp/zram.$page")
  replayed=$(grep '^figures:' "$tmp/replay.$page")
  [ -n "$live" ] && [ "$live" = "$replayed" ] || fail "replay of $trace differs: '$live' vs '$replayed'"
  ok "page $page: $(grep -c '' "$trace") trace lines replay to identical figures (examples/replay)"
  # The lab's replayer reads the same format: same figures.
  if [ -n "$lab" ]; then
    "$lab" replay "$trace" --page-size "$page" --format json --no-time >"$tmp/lab.json"
    for key in stores pages_peak reads reads_spanning read_copy_bytes writes_spanning; do
      want=$(echo "$live" | sed -n "s/.* $key \([0-9]*\).*/\1/p")
      got=$(sed -n "s/^  \"$key\": \([0-9]*\),\{0,1\}$/\1/p" "$tmp/lab.json")
      [ -n "$want" ] && [ "$want" = "$got" ] || fail "zsmalloc replay: $key $got, live run $want"
    done
    ok "page $page: \`zsmalloc replay\` gives the same figures"
  fi
done

step "objects of several pages: ZSMALLOC_MULTI_PAGE_SIZE for an unmodified program (ASan+UBSan)"
for mode in copy map contiguous; do
  ZSMALLOC_READ_MODE=$mode ZSMALLOC_MULTI_PAGE_SIZE=16K "$tsan/multi_pages" 2>"$tmp/multi.err" \
    | tee "$tmp/multi.out" || { cat "$tmp/multi.err"; fail "multi_pages ($mode)"; }
  grep -q ' 0 failed, 0 refused' "$tmp/multi.out" || { cat "$tmp/multi.err"; fail "multi_pages ($mode)"; }
done
ok "multi_pages: objects up to 16K stored, read back, compacted, read again; pages as the model's"

step "read modes: map and contiguous against copy (ASan+UBSan)"
"$tsan/read_modes" 2>"$tmp/modes.err" | tee "$tmp/modes.out"
grep -q ' 0 failed' "$tmp/modes.out" || { cat "$tmp/modes.err"; fail "read_modes"; }
ok "$(grep -oE '[0-9]+ passed' "$tmp/modes.out") read-mode checks: identical placement, 0 bytes copied"
# Unmodified clients under ZSMALLOC_READ_MODE: the same figures as copy, nothing copied.
for page in 4096 16384; do
  copy_fig=$(grep '^figures:' "$tmp/zram.$page")
  for mode in map contiguous; do
    ZSMALLOC_READ_MODE=$mode ZSMALLOC_PAGE_SIZE=$page "$san/zram_store" "$corpus"/* >"$tmp/zram.$mode.$page" \
      || fail "zram_store under ZSMALLOC_READ_MODE=$mode"
    grep -q '^zram_store: verified' "$tmp/zram.$mode.$page" || fail "zram_store $mode: no verification"
    fig=$(grep '^figures:' "$tmp/zram.$mode.$page")
    copied=$(echo "$fig" | sed -n 's/.* read_copy_bytes \([0-9]*\).*/\1/p')
    [ "$copied" = 0 ] || fail "zram_store $mode: $copied bytes copied"
    strip() { sed 's/ read_copy_bytes [0-9]*//' <<<"$1"; }
    [ "$(strip "$fig")" = "$(strip "$copy_fig")" ] || fail "zram_store $mode: '$fig' vs copy '$copy_fig'"
  done
  ok "page $page: zram_store under map and contiguous: copy's figures, 0 bytes copied"
done
# The kernel test module's pattern (examples/zsmalloc_test) under ZSMALLOC_READ_MODE: the RFC's
# BASE placement and spanning count, nothing copied.
for mode in map contiguous; do
  ZSMALLOC_READ_MODE=$mode ZSMALLOC_CHAIN_SIZE=10 ZSMALLOC_CHAIN_POLICY=classic "$san/zsmalloc_test" \
    >"$tmp/out.$mode" || fail "zsmalloc_test under ZSMALLOC_READ_MODE=$mode"
  sed 's/total memcpy size: [0-9]*/total memcpy size: 0/' "$tmp/base" | diff -u - "$tmp/out.$mode" \
    || fail "zsmalloc_test under ZSMALLOC_READ_MODE=$mode"
  ok "zsmalloc_test under ZSMALLOC_READ_MODE=$mode: BASE's pages and spanning objects, 0 bytes copied"
done
for mode in map contiguous; do
  ZSMALLOC_READ_MODE=$mode "$tsan/mt_stress" 4 4096 1 | tee "$tmp/mt.$mode"
  moved=$(sed -n 's/.*moved-while-reading \([0-9]*\) objects.*/\1/p' "$tmp/mt.$mode")
  [ "${moved:-0}" -gt 0 ] || fail "mt_stress $mode: no object moved while readers were active"
  ok "mt_stress under ZSMALLOC_READ_MODE=$mode: objects moved while reading: $moved"
done

step "backends: zblock and malloc under the same programs (ASan+UBSan)"
for backend in zblock malloc; do
  "$tsan/bad_input" "$backend" 2>"$tmp/bad.$backend.err" | tee "$tmp/bad.$backend.out"
  grep -q ' 0 failed' "$tmp/bad.$backend.out" || { cat "$tmp/bad.$backend.err"; fail "bad_input $backend"; }
  ok "$(grep -oE '[0-9]+ passed' "$tmp/bad.$backend.out") bad-input checks on $backend"
done
# zsmalloc_test's fill on zblock: the pages its block table predicts (tests/c/zblock_fill_pages.py),
# every byte verified by the program, the lengths zblock refuses counted.
for page in 4096 16384 65536; do
  [ -n "$lab" ] || break
  "$lab" classes --backend zblock --page-size "$page" --format csv >"$tmp/zblock.$page.csv"
  n=$([ "$page" = 4096 ] && echo 1337 || echo 20)
  hi=$((page - 16))
  want=$(python3 tests/c/zblock_fill_pages.py "$tmp/zblock.$page.csv" 32 "$hi" 16 "$n")
  ZSMALLOC_BACKEND=zblock ZSMALLOC_PAGE_SIZE=$page "$san/zsmalloc_test" 32 "$hi" 16 "$n" >"$tmp/zt.zblock.$page" \
    || fail "zsmalloc_test on zblock, page $page"
  pages=$(sed -n 's/.*pool pages used \([0-9]*\).*/\1/p' "$tmp/zt.zblock.$page")
  refused=$(sed -n 's/.*refused objects: \([0-9]*\).*/\1/p' "$tmp/zt.zblock.$page")
  [ "pages $pages refused ${refused:-0}" = "$want" ] || fail "zblock page $page: pages $pages refused ${refused:-0}; model: $want"
  ok "page $page: zsmalloc_test on zblock uses the model's $want"
done
ZSMALLOC_BACKEND=malloc "$san/zsmalloc_test" 32 4096 16 50 >"$tmp/zt.malloc" || fail "zsmalloc_test on malloc"
grep -q 'spanning objects: 0, total memcpy size: 0' "$tmp/zt.malloc" || fail "malloc: $(cat "$tmp/zt.malloc")"
ok "zsmalloc_test on malloc: every byte verified, nothing spans"
for backend in zblock malloc; do
  ZSMALLOC_BACKEND=$backend "$san/zram_store" "$corpus"/* >"$tmp/zram.$backend" || fail "zram_store on $backend"
  grep -q '^zram_store: verified' "$tmp/zram.$backend" || fail "zram_store on $backend: no verification"
  refused=$(sed -n 's/^zram_store: \([0-9]*\) pages refused.*/\1/p' "$tmp/zram.$backend")
  ok "zram_store on $backend: $(grep -oE 'verified [0-9]+ pages' "$tmp/zram.$backend"), ${refused:-0} refused"
  ZSMALLOC_BACKEND=$backend "$tsan/mt_stress" 4 2048 1 0 | tee "$tmp/mt.$backend"
  ok "mt_stress on $backend"
done

step "valgrind memcheck (plain build)"
vg() {
  valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
    --show-leak-kinds=definite,indirect "$@"
}
vg "$tplain/bad_input" >/dev/null 2>"$tmp/vg.err" || { cat "$tmp/vg.err"; fail "valgrind bad_input"; }
vg "$plain/compat_demo" >/dev/null
vg "$plain/zsmalloc_test" 32 4080 16 4 >/dev/null
vg "$tplain/zsmalloc_test_kernel" 32 4080 16 2 >/dev/null
vg "$tplain/kernel_test_zs" 32 4080 16 2 >/dev/null
vg "$tplain/mt_stress" 2 512 1 0 >/dev/null
vg "$tplain/read_modes" 3000 >/dev/null
vg "$tplain/reliability" >/dev/null
ZSMALLOC_MULTI_PAGE_SIZE=16K vg "$tplain/multi_pages" >/dev/null
vg "$tplain/class_tables" >/dev/null 2>"$tmp/vg.tables.err" || { cat "$tmp/vg.tables.err"; fail "valgrind class_tables"; }
vg "$tplain/hostile_input" >/dev/null 2>"$tmp/vg.hostile.err" || { cat "$tmp/vg.hostile.err"; fail "valgrind hostile_input"; }
vg "$plain/zram_store" "$corpus/sources.txt" "$corpus/zero.bin" "$corpus/random.bin" >/dev/null
vg "$plain/replay" "$tmp/trace.4096" >/dev/null
ok "bad_input, compat_demo, zsmalloc_test(_kernel), kernel_test_zs, mt_stress, read_modes, reliability, multi_pages, class_tables, hostile_input, zram_store, replay: no memcheck errors"

printf '\ntest-c: %d passed, 0 failed\n' "$checks"
