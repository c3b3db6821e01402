# Build glue. `make test` is the project's test command (README); `make demo` runs the main job.
#   make                   libraries (libzsmalloc.so/.a, the zsmalloc command) and C examples
#   make examples          C examples into build/examples (SAN=1: ASan+UBSan into build/examples-san)
#   make header            regenerate include/zsmalloc.h (pinned cbindgen, scripts/cbindgen.sh)
#   make install PREFIX=…  library, headers and pkg-config file zsmalloc.pc
#   make bench-abi         SPEC §10 step and read through the C ABI against glibc (N = 10^4..10^6)
CARGO ?= cargo
CC ?= cc
PREFIX ?= /usr/local
DESTDIR ?=

LIBDIR := target/release
BUILD ?= build
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)

# Examples: warnings are errors; SAN=1 adds AddressSanitizer + UndefinedBehaviorSanitizer.
EX_CFLAGS ?= -O2 -g
WARN := -std=gnu11 -Wall -Wextra -Werror
ifeq ($(SAN),1)
EXDIR := $(BUILD)/examples-san
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
else
EXDIR := $(BUILD)/examples
SANFLAGS :=
endif
EX_LINK := -L$(LIBDIR) -lzsmalloc -Wl,-rpath,$(abspath $(LIBDIR))
EXAMPLES := zsmalloc_test zram_store mt_stress bad_input compat_demo replay abi_bench
EX_BINS := $(addprefix $(EXDIR)/,$(EXAMPLES)) $(EXDIR)/libzstrace.so
HEADERS := include/zsmalloc.h include/zsmalloc_compat.h

.PHONY: all lib examples header install test demo bench bench-abi FORCE
all: lib
	$(MAKE) examples

lib:
	$(CARGO) build --release

# Always asks cargo (a no-op when nothing changed): otherwise a library left from older sources
# would be linked into the examples and benchmarked.
$(LIBDIR)/libzsmalloc.so $(LIBDIR)/libzsmalloc.a: FORCE
	$(CARGO) build --release -p zsmalloc-capi

FORCE:

examples: $(EX_BINS)

$(EXDIR):
	mkdir -p $@

$(EXDIR)/%: examples/%.c $(HEADERS) $(LIBDIR)/libzsmalloc.so | $(EXDIR)
	$(CC) $(EX_CFLAGS) $(WARN) $(SANFLAGS) -Iinclude -o $@ $< $(EX_LINK) $(EXTRA_LIBS_$*)

EXTRA_LIBS_zram_store := -llz4
EXTRA_LIBS_mt_stress := -pthread
EXTRA_LIBS_abi_bench := -lm

# The LD_PRELOAD shim is never sanitized (it is preloaded ahead of the ASan runtime).
$(EXDIR)/libzstrace.so: examples/shim/zstrace.c $(HEADERS) | $(EXDIR)
	$(CC) $(EX_CFLAGS) $(WARN) -fPIC -shared -Iinclude -o $@ $< -ldl -pthread

header:
	scripts/cbindgen.sh include/zsmalloc.h

install: $(LIBDIR)/libzsmalloc.so $(LIBDIR)/libzsmalloc.a
	install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include
	install -m 755 $(LIBDIR)/libzsmalloc.so $(DESTDIR)$(PREFIX)/lib/libzsmalloc.so
	install -m 644 $(LIBDIR)/libzsmalloc.a $(DESTDIR)$(PREFIX)/lib/libzsmalloc.a
	install -m 644 $(HEADERS) $(DESTDIR)$(PREFIX)/include/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' zsmalloc-capi/zsmalloc.pc.in \
		> $(DESTDIR)$(PREFIX)/lib/pkgconfig/zsmalloc.pc

test:
	./scripts/test-all.sh

demo:
	$(CARGO) run --release --bin zsmalloc -- compare

bench:
	$(CARGO) bench -p zsmalloc-core

# The C caller's view of SPEC §10 (examples/abi_bench.c); ABI_BENCH_NS / ABI_BENCH_OPS override.
ABI_BENCH_NS ?= 10000 100000 1000000
ABI_BENCH_OPS ?= 2000000
bench-abi: $(BUILD)/examples/abi_bench
	@for n in $(ABI_BENCH_NS); do $(BUILD)/examples/abi_bench $$n $(ABI_BENCH_OPS) || exit 1; done
