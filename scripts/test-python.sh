#!/usr/bin/env bash
# The Python package's tests: builds the extension from source into a virtual environment, checks
# its type stubs against the built module (mypy's stubtest) and runs its pytest suite (API, errors,
# hypothesis model, threads, ctypes same-pool round trips, the chain-policies notebook, the speed
# harness smoke test, the optimizer on a dask LocalCluster).
#
#   scripts/test-python.sh            # venv in .venv-test/ (reused when present)
#   ZSMALLOC_VENV=/tmp/v scripts/test-python.sh -k capi   # extra arguments go to pytest
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${ZSMALLOC_VENV:-.venv-test}"
# Not passed on: pools read ZSMALLOC_* (and warn about names they do not know), and the speed
# harness refuses to run with any set.
unset ZSMALLOC_VENV
PYTHON="${PYTHON:-python3}"
# Cargo's output directory: $CARGO_TARGET_DIR when set (relative to the repository), else target/.
TARGET=$(realpath -m "${CARGO_TARGET_DIR:-target}")
WHEELS=$TARGET/wheels-py

step() { printf '\n--> %s\n' "$*"; }

if [ ! -x "$VENV/bin/python" ]; then
  step "virtual environment $VENV"
  "$PYTHON" -m venv "$VENV"
fi
PY="$(cd "$VENV/bin" && pwd)/python"

step "test dependencies"
"$PY" -m pip install --quiet --disable-pip-version-check -r zsmalloc-py/requirements-test.txt

step "build the extension from source (maturin, release) and install the wheel"
rm -rf "$WHEELS"
"$PY" -m maturin build --release --quiet -m zsmalloc-py/Cargo.toml --interpreter "$PY" --out "$WHEELS"
"$PY" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$WHEELS"/zsmalloc-*.whl

step "the C ABI is exported by the extension module itself"
SO="$("$PY" -c 'import zsmalloc; print(zsmalloc.library_path())')"
echo "$SO: $(nm -D --defined-only "$SO" | grep -c ' T zs_') zs_* functions"

step "type stubs match the built module (stubtest)"
# Run from Cargo's output directory (outside the sources; mypy leaves its cache there) so that the
# installed package, compiled module and stubs, is what is checked.
ALLOWLIST="$PWD/zsmalloc-py/stubtest-allowlist.txt"
(cd "$TARGET" && "$PY" -m mypy.stubtest zsmalloc --allowlist "$ALLOWLIST")

step "the lab's zsmalloc command and the tier's library (zsmalloc.lab, .kernel and .tier run them)"
cargo build --release --quiet -p zsmalloc-lab --bin zsmalloc
cargo build --release --quiet -p zsmalloc-tier-preload
ZSMALLOC_BIN="$(cd "${CARGO_TARGET_DIR:-target}/release" && pwd)/zsmalloc"
export ZSMALLOC_BIN

step "pytest"
cd zsmalloc-py
# Run from the tests folder's parent without putting python/ on the path: the installed wheel
# (compiled module, stubs and all) is what is tested.
exec "$PY" -m pytest -q -p no:cacheprovider tests "$@"
