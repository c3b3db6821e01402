# Build glue. `make test` is the project's test command (README); `make demo` runs the main job.
#   make                   libraries (libzsmalloc.so/.a, the zsmalloc command) and C examples
#   make examples          C examples into build/examples (SAN=1: ASan+UBSan into build/examples-san)
#   make c-tests           C test programs (tests/c) into build/tests (SAN=1: build/tests-san)
#   make header            regenerate include/zsmalloc.h (pinned cbindgen, scripts/cbindgen.sh)
#   make install PREFIX=…  stripped library (libzsmalloc.so.0 and its links), headers, zsmalloc.pc,
#                          the zsmalloc command ($(PREFIX)/bin/zsmalloc) and the library it
#                          preloads for `zsmalloc tier` (lib/libzsmalloc_tier_preload.so)
#   make bench-abi         the steady-state step and read through the C ABI against glibc, timed
#   make bench-abi-callgrind  the same sequence in instructions (scripts/bench-callgrind-capi.sh)
# Cargo's output directory is $(CARGO_TARGET_DIR) when set (environment or command line).
CARGO ?= cargo
CC ?= cc
STRIP ?= strip
PREFIX ?= /usr/local
DESTDIR ?=

ifneq ($(CARGO_TARGET_DIR),)
export CARGO_TARGET_DIR
LIBDIR := $(CARGO_TARGET_DIR)/release
else
LIBDIR := target/release
endif
BUILD ?= build
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
# The SONAME's number (zsmalloc-capi/build.rs sets the SONAME; they must agree).
SOMAJOR := $(shell sed -n 's/^const SONAME_MAJOR: u32 = \([0-9]*\);/\1/p' zsmalloc-capi/build.rs)
SONAME := libzsmalloc.so.$(SOMAJOR)

# C programs: warnings are errors; SAN=1 adds AddressSanitizer + UndefinedBehaviorSanitizer.
EX_CFLAGS ?= -O2 -g
WARN := -std=gnu11 -Wall -Wextra -Werror
ifeq ($(SAN),1)
EXDIR := $(BUILD)/examples-san
TESTDIR := $(BUILD)/tests-san
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
else
EXDIR := $(BUILD)/examples
TESTDIR := $(BUILD)/tests
SANFLAGS :=
endif
EX_LINK = -L$(LIBDIR) -lzsmalloc -Wl,-rpath,$(abspath $(LIBDIR))
# examples/: programs a user would copy. tests/c/: programs that check or measure the library.
# examples/zram_store.c compresses with liblz4 and needs its header (Debian: liblz4-dev); without
# it the other examples are built and `make` says so on one line.
HAVE_LZ4 := $(shell $(CC) -E -include lz4.h -x c /dev/null >/dev/null 2>&1 && echo 1)
EXAMPLES := zsmalloc_test compat_demo replay $(if $(HAVE_LZ4),zram_store)
C_TESTS := bad_input mt_stress abi_bench abi_count zsmalloc_test_kernel read_modes reliability \
  class_tables kernel_test_zs multi_pages hostile_input
EX_BINS := $(addprefix $(EXDIR)/,$(EXAMPLES)) $(EXDIR)/libzstrace.so
TEST_BINS := $(addprefix $(TESTDIR)/,$(C_TESTS))
HEADERS := include/zsmalloc.h include/zsmalloc_compat.h

.PHONY: all lib examples c-tests header install test demo bench bench-abi bench-abi-callgrind FORCE
all: lib
	$(MAKE) examples

lib:
	$(CARGO) build --release
	@ln -sfn libzsmalloc.so $(LIBDIR)/$(SONAME)

# Always asks cargo (a no-op when nothing changed): otherwise a library left from older sources
# would be linked into the programs and benchmarked. The SONAME link beside the library is made
# by the build script; it is renewed here in case it was removed.
$(LIBDIR)/libzsmalloc.so $(LIBDIR)/libzsmalloc.a: FORCE
	$(CARGO) build --release -p zsmalloc-capi
	@ln -sfn libzsmalloc.so $(LIBDIR)/$(SONAME)

# The lab's command, for install; as for the library, cargo decides whether it is stale.
$(LIBDIR)/zsmalloc: FORCE
	$(CARGO) build --release -p zsmalloc-lab --bin zsmalloc

# The library `zsmalloc tier` preloads into the programs it runs (found beside the command or
# in ../lib from it).
$(LIBDIR)/libzsmalloc_tier_preload.so: FORCE
	$(CARGO) build --release -p zsmalloc-tier-preload

FORCE:

examples: $(EX_BINS)
ifneq ($(HAVE_LZ4),1)
	@echo "make: examples/zram_store.c skipped: lz4.h not found (Debian: apt-get install liblz4-dev)"
endif

c-tests: $(TEST_BINS)

$(EXDIR) $(TESTDIR):
	mkdir -p $@

$(EXDIR)/%: examples/%.c $(HEADERS) $(LIBDIR)/libzsmalloc.so | $(EXDIR)
	$(CC) $(EX_CFLAGS) $(WARN) $(SANFLAGS) -Iinclude -o $@ $< $(EX_LINK) $(EXTRA_LIBS_$*)

$(TESTDIR)/%: tests/c/%.c tests/c/check.h $(HEADERS) $(LIBDIR)/libzsmalloc.so | $(TESTDIR)
	$(CC) $(EX_CFLAGS) $(WARN) $(SANFLAGS) -Iinclude -o $@ $< $(EX_LINK) $(EXTRA_LIBS_$*)

$(TESTDIR)/kernel_test_zs: tests/c/kernel_test_content.h

EXTRA_LIBS_zram_store := -llz4
EXTRA_LIBS_mt_stress := -pthread
EXTRA_LIBS_read_modes := -pthread
EXTRA_LIBS_reliability := -pthread
EXTRA_LIBS_abi_bench := -lm
EXTRA_LIBS_abi_count := -lm

# The LD_PRELOAD shim is never sanitized (it is preloaded ahead of the ASan runtime).
$(EXDIR)/libzstrace.so: examples/shim/zstrace.c $(HEADERS) | $(EXDIR)
	$(CC) $(EX_CFLAGS) $(WARN) -fPIC -shared -Iinclude -o $@ $< -ldl -pthread

header:
	scripts/cbindgen.sh include/zsmalloc.h

# The library is installed stripped (no debug information) under its versioned name, with the
# SONAME link and the development link; the static library without debug information; the
# zsmalloc command stripped, into bin/.
install: $(LIBDIR)/libzsmalloc.so $(LIBDIR)/libzsmalloc.a $(LIBDIR)/zsmalloc \
		$(LIBDIR)/libzsmalloc_tier_preload.so
	install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/bin
	$(STRIP) --strip-unneeded -o $(DESTDIR)$(PREFIX)/lib/libzsmalloc.so.$(VERSION) $(LIBDIR)/libzsmalloc.so
	chmod 755 $(DESTDIR)$(PREFIX)/lib/libzsmalloc.so.$(VERSION)
	ln -sfn libzsmalloc.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/$(SONAME)
	ln -sfn $(SONAME) $(DESTDIR)$(PREFIX)/lib/libzsmalloc.so
	$(STRIP) --strip-debug -o $(DESTDIR)$(PREFIX)/lib/libzsmalloc.a $(LIBDIR)/libzsmalloc.a
	chmod 644 $(DESTDIR)$(PREFIX)/lib/libzsmalloc.a
	install -m 644 $(HEADERS) $(DESTDIR)$(PREFIX)/include/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' zsmalloc-capi/zsmalloc.pc.in \
		> $(DESTDIR)$(PREFIX)/lib/pkgconfig/zsmalloc.pc
	$(STRIP) --strip-unneeded -o $(DESTDIR)$(PREFIX)/bin/zsmalloc $(LIBDIR)/zsmalloc
	chmod 755 $(DESTDIR)$(PREFIX)/bin/zsmalloc
	$(STRIP) --strip-unneeded -o $(DESTDIR)$(PREFIX)/lib/libzsmalloc_tier_preload.so \
		$(LIBDIR)/libzsmalloc_tier_preload.so
	chmod 755 $(DESTDIR)$(PREFIX)/lib/libzsmalloc_tier_preload.so

test:
	./scripts/test-all.sh

demo:
	$(CARGO) run --release --bin zsmalloc -- compare

bench:
	$(CARGO) bench -p zsmalloc-core

# The C caller's view of the steady-state workload (tests/c/abi_bench.c);
# ABI_BENCH_NS / ABI_BENCH_OPS override.
ABI_BENCH_NS ?= 10000 100000 1000000
ABI_BENCH_OPS ?= 2000000
bench-abi: $(BUILD)/tests/abi_bench
	@for n in $(ABI_BENCH_NS); do $(BUILD)/tests/abi_bench $$n $(ABI_BENCH_OPS) || exit 1; done

bench-abi-callgrind:
	scripts/bench-callgrind-capi.sh
