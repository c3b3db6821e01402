#!/usr/bin/env bash
# The userfaultfd fault-service floor on this machine (docs/TIER.md, "The fault-service floor"):
# missing-page faults of 4 KiB pages, each served by a minimal handler (read of the fault,
# LZ4_decompress_safe of one compressed page, UFFDIO_COPY) with the handler on the faulting
# thread's CPU, on another CPU, spinning on another CPU, and a plain first touch without
# userfaultfd, all in one run. Needs root (or access to /dev/userfaultfd) and two CPUs for the
# placements apart; it changes no system setting.
#
# Usage: scripts/bench-uffd-floor.sh [--faults N] [--warmup N] [--json]
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release -q -p zsmalloc-tier --bin uffd-floor
BIN="${CARGO_TARGET_DIR:-target}/release/uffd-floor"

if [[ " $* " != *" --json "* ]]; then
  model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  echo "machine: $(uname -sr), $(nproc) CPUs ($model), load average $load"
  echo "command: $BIN $*"
fi
exec "$BIN" "$@"
