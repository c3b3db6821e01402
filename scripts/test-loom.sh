#!/usr/bin/env bash
# Model-checks the concurrency protocol with loom (feature `loom` swaps the protocol's atomics).
# Builds only zsmalloc-core's loom tests (pins and migration; headers and claims); bounded by
# LOOM_MAX_PREEMPTIONS.
set -euo pipefail
cd "$(dirname "$0")/.."
LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}" \
  cargo test -p zsmalloc-core --release --no-default-features --features loom --test loom_protocol --test loom_headers
