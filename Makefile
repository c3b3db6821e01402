# Build glue. `make test` is the project's test command (README); `make demo` runs the main job.
CARGO ?= cargo

.PHONY: all test demo bench
all:
	$(CARGO) build --workspace --release

test:
	./scripts/test-all.sh

demo:
	$(CARGO) run --release --bin zsmalloc -- compare

bench:
	$(CARGO) bench -p zsmalloc-core
