#!/usr/bin/env bash
# Builds the ops_count harness (zsmalloc-core/benches/ops_count.rs) in the release profile and
# copies it to OUTDIR/ops_count, so that a concurrent rebuild of the shared target dir cannot
# swap it mid-run. Prints the copy's path. Build output goes to OUTDIR/build.log.
#
# Usage: scripts/build-ops-count.sh OUTDIR
set -euo pipefail
[ $# -eq 1 ] || { sed -n '2,6p' "$0" >&2; exit 2; }
out=$1
cd "$(dirname "$0")/.."
command -v jq >/dev/null || { echo "jq is not installed" >&2; exit 1; }
mkdir -p "$out"
bin=$(cargo bench -p zsmalloc-core --bench ops_count --no-run --message-format=json 2>"$out/build.log" |
  jq -r 'select(.reason == "compiler-artifact" and .target.name == "ops_count") | .executable') || true
[ -n "$bin" ] && [ -x "$bin" ] || { cat "$out/build.log" >&2; echo "could not build the ops_count harness" >&2; exit 1; }
cp "$bin" "$out/ops_count"
echo "$out/ops_count"
