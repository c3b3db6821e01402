#!/usr/bin/env bash
# Generates the C header from zsmalloc-capi with a pinned cbindgen.
#   scripts/cbindgen.sh [OUTPUT]      (default: include/zsmalloc.h)
# cbindgen does not expand macros, and the exported functions live in the export_c_abi! macro
# (zsmalloc-capi/src/exports.rs) so that every cdylib can generate them. So this pastes the
# macro's items (between the @c-abi-begin/@c-abi-end markers, `$crate` read as `crate`) in place
# of their invocation in a temporary copy of lib.rs, and runs cbindgen on that copy.
set -euo pipefail
cd "$(dirname "$0")/.."

CBINDGEN_VERSION=0.29.0
TOOLS="$PWD/target/tools"
CBINDGEN="$TOOLS/bin/cbindgen"
if ! [ -x "$CBINDGEN" ] || [ "$("$CBINDGEN" --version 2>/dev/null)" != "cbindgen $CBINDGEN_VERSION" ]; then
  echo "installing cbindgen $CBINDGEN_VERSION into $TOOLS" >&2
  cargo install cbindgen --version "$CBINDGEN_VERSION" --locked --root "$TOOLS" >&2
fi

out=${1:-include/zsmalloc.h}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r zsmalloc-capi/src "$tmp/src"
awk '/^[ \t]*\/\/ @c-abi-begin$/{f=1; next} /^[ \t]*\/\/ @c-abi-end$/{f=0} f' zsmalloc-capi/src/exports.rs \
  | sed 's/\$crate/crate/g' >"$tmp/items.rs"
awk -v items="$tmp/items.rs" '
  /^#\[cfg\(feature = "export"\)\]$/ { next }
  /^__zs_c_abi_items!\(\);$/ { while ((getline l < items) > 0) print l; found = 1; next }
  { print }
  END { if (!found) { print "cbindgen.sh: invocation not found in lib.rs" > "/dev/stderr"; exit 1 } }
' zsmalloc-capi/src/lib.rs >"$tmp/src/lib.rs"
"$CBINDGEN" ${CBINDGEN_FLAGS:---quiet} --config zsmalloc-capi/cbindgen.toml --output "$tmp/zsmalloc.h" "$tmp/src/lib.rs"
mkdir -p "$(dirname "$out")"
cp "$tmp/zsmalloc.h" "$out"
