#!/usr/bin/env bash
# Model-checks the concurrency protocol with loom: `--cfg loom` swaps the protocol's atomics for
# loom's. Builds only zsmalloc-core's loom tests (pins and migration; headers and claims; saturated headers), in
# their own target directory (target/loom by default) so the main build is not invalidated;
# bounded by LOOM_MAX_PREEMPTIONS.
set -euo pipefail
cd "$(dirname "$0")/.."
LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}" \
  RUSTFLAGS="${RUSTFLAGS:-} --cfg loom" \
  CARGO_TARGET_DIR="${LOOM_TARGET_DIR:-target/loom}" \
  cargo test -p zsmalloc-core --release --no-default-features --test loom_protocol --test loom_headers --test loom_saturation
