#!/usr/bin/env bash
# The project's one test command (README "Test"): every check CI runs, on a fresh machine.
# Sections are separate scripts so each can be run alone; this runs them in order.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never

step() { printf '\n==> %s\n' "$*"; }

step "test dependencies"
# `zsmalloc folios --compressor lzo` loads liblzo2 at run time (the kernel's lzo is its
# LZO1X-1); the tests measure it, so they need Debian's liblzo2-2.
if ! ldconfig -p | grep -q 'liblzo2\.so\.2'; then
  SUDO=
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq liblzo2-2 >/dev/null
fi

step "format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --release -- -D warnings

step "Rust tests (release profile: one build serves tests, benches and the CLI)"
# The library `zsmalloc tier` preloads is a cdylib, which `cargo test` does not link: the tier's
# tests run programs under it.
cargo build --release -p zsmalloc-tier-preload
cargo test --workspace --release

step "instruction-count guard of the main run (bench/instructions.baseline)"
scripts/check-instructions.sh

step "loom model of the pin / migration / handle-rewrite protocol"
scripts/test-loom.sh

step "coverage-guided fuzzing of the C ABI (bounded: FUZZ_SECS, 60 s by default)"
scripts/test-fuzz.sh

for part in scripts/test-c.sh scripts/test-python.sh scripts/test-readme.sh; do
  if [ -x "$part" ]; then
    step "$part"
    "$part"
  fi
done

step "all tests passed"
