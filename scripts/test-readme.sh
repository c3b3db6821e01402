#!/usr/bin/env bash
# README.md's commands, as written, on a fresh copy of the repository (run by scripts/test-all.sh).
#   1. The repository's files (tracked ones, and new ones git does not ignore) are copied into a
#      temporary directory: what a fresh clone holds, nothing built.
#   2. README.md's fenced blocks run there in order, in one shell that stops at the first failure:
#      every line of each sh block; the C program saved as the prog.c the next block compiles;
#      the Python snippet run by `python` (of the virtual environment README.md makes); the Rust
#      snippet as the body of a program's main, built against the copy's zsmalloc-core.
#   3. The output of `make demo` printed in README.md is what `make demo` prints, times aside.
#
# What does not run exactly as written, and why (each is checked to still be in README.md, so
# this list cannot go stale):
#   make test                       this script is part of it
#   jupyter lab ...                 a server that runs until stopped (`jupyter execute` runs one)
#   $HOME/.local                    a temporary prefix (install, pkg-config and PATH lines)
#   FILES...                        some of the repository's files: text, C sources, a binary
#   zsmalloc cost --page-size 16K   the quick variant README.md gives for it (minutes otherwise)
#   zsmalloc tier ...               run only as root with /dev/userfaultfd (said when not)
#
# Cargo's output directory ($CARGO_TARGET_DIR when set, else the repository's target/) serves
# the copy too, so only the workspace's own crates are built again.
#
#   scripts/test-readme.sh          # README_KEEP=1 keeps the copy and prints where it is
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
export CARGO_TARGET_DIR
CARGO_TARGET_DIR=$(realpath -m "${CARGO_TARGET_DIR:-target}")

fail() {
  printf 'test-readme: FAILED: %s\n' "$*" >&2
  exit 1
}
step() { printf '\n--> %s\n' "$*"; }

tmp=$(mktemp -d)
if [ "${README_KEEP:-0}" = 1 ]; then
  trap 'echo "test-readme: the copy is in $tmp"' EXIT
else
  trap 'rm -rf "$tmp"' EXIT
fi
copy=$tmp/clone
prefix=$tmp/prefix
mkdir -p "$copy" "$prefix"

step "a fresh copy of the repository"
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || fail "not a git work tree: nothing says what a clone holds"
# Files deleted in the work tree but still in the index are left out (tar warns, goes on).
git ls-files -z --cached --others --exclude-standard \
  | tar --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -xf - -C "$copy"
[ -f "$copy/README.md" ] && [ -f "$copy/Makefile" ] || fail "the copy is incomplete"
echo "$(find "$copy" -type f | wc -l) files in $copy"

step "README.md as a script"
python3 - "$copy/README.md" "$tmp/readme.sh" "$prefix" <<'EOF'
import re, shlex, sys

readme_path, out_path, prefix = sys.argv[1:]
readme = open(readme_path).read()

# (README text, what runs instead); each must occur in README.md.
SKIPPED = ["make test", "jupyter lab examples/notebooks/"]
REPLACED = [
    ("$HOME/.local", '"$README_PREFIX"'),
    ("FILES...", "$README_FILES"),
]
QUICK = {
    "zsmalloc cost --page-size 16K":
        "zsmalloc cost --page-size 16K --synthetic-pages 256 --pool-mib 4 --repeat 1 --compressor lz4",
}
# Commands that need root and userfaultfd: run where they can, said otherwise.
ROOT_ONLY = ["zsmalloc tier "]
for text in ROOT_ONLY:
    if text not in readme:
        sys.exit(f"test-readme: '{text}' is no longer in README.md: update the script's list")
for text, _ in REPLACED:
    if text not in readme:
        sys.exit(f"test-readme: '{text}' is no longer in README.md: update the script's list")
for long, quick in QUICK.items():
    if quick not in readme:
        sys.exit(f"test-readme: README.md no longer gives '{quick}' for '{long}'")

RUST_MAIN = """fn main() -> Result<(), Box<dyn std::error::Error>> {
%s
    Ok(())
}
"""

def sh_lines(block):
    """Logical lines of an sh block: continuations joined, blank and comment lines left out."""
    lines, cur = [], ""
    for raw in block.splitlines():
        cur += raw
        if cur.endswith("\\"):
            cur = cur[:-1] + " "
            continue
        if cur.strip() and not cur.lstrip().startswith("#"):
            lines.append(cur.strip())
        cur = ""
    return lines

script = [
    "set -euo pipefail",
    f"README_PREFIX={shlex.quote(prefix)}",
    "README_FILES='README.md docs/DESIGN.md include/zsmalloc.h examples/zram_store.c build/examples/zsmalloc_test'",
]
seen_skipped, seen_quick = set(), set()
blocks = re.findall(r"^```(\w*)\n(.*?)^```$", readme, flags=re.S | re.M)
for lang, body in blocks:
    if lang == "sh":
        for line in sh_lines(body):
            command = line.split(" #")[0].strip()
            if command in SKIPPED:
                seen_skipped.add(command)
                script.append(f"printf '%s\\n' {shlex.quote('(not run: ' + command + ')')}")
                continue
            for long, quick in QUICK.items():
                if command == long:
                    seen_quick.add(long)
                    line = quick
            script.append(f"printf '\\n$ %s\\n' {shlex.quote(line)}")
            for text, instead in REPLACED:
                line = line.replace(text, instead)
            if any(command.startswith(r) for r in ROOT_ONLY):
                why = shlex.quote("(not run: needs root and /dev/userfaultfd)")
                line = f'if [ "$(id -u)" = 0 ] && [ -e /dev/userfaultfd ]; then {line}; else printf "%s\\n" {why}; fi'
            script.append(line)
    elif lang == "c":
        script.append("printf '\\n(the C program, saved as prog.c)\\n'")
        script.append("cat >prog.c <<'README_C'\n" + body + "README_C")
    elif lang == "python":
        script.append("printf '\\n(the Python snippet, run by python)\\n'")
        script.append("python - <<'README_PY'\n" + body + "README_PY")
    elif lang == "rust":
        body = "\n".join("    " + l if l else l for l in body.splitlines())
        script.append("printf '\\n(the Rust snippet, as the body of main)\\n'")
        script.append("mkdir -p \"$README_RUST/src\"")
        script.append("cat >\"$README_RUST/src/main.rs\" <<'README_RS'\n" + RUST_MAIN % body + "README_RS")
        script.append("cargo run --release --quiet --manifest-path \"$README_RUST/Cargo.toml\"")
    elif lang != "text":
        sys.exit(f"test-readme: README.md has a ```{lang} block this script does not run")
for command in SKIPPED:
    if command not in seen_skipped:
        sys.exit(f"test-readme: '{command}' is no longer a command of README.md: update the script")
for long in QUICK:
    if long not in seen_quick:
        sys.exit(f"test-readme: '{long}' is no longer a command of README.md: update the script")
open(out_path, "w").write("\n".join(script) + "\n")
EOF
echo "$(grep -cF "printf '\\n\$ " "$tmp/readme.sh") commands"

# The Rust snippet's program: a package of its own on the copy's zsmalloc-core, with the copy's
# lock file (the versions already built).
rust=$tmp/rust-snippet
mkdir -p "$rust"
cat >"$rust/Cargo.toml" <<EOF
[package]
name = "readme-snippet"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
zsmalloc-core = { path = "$copy/zsmalloc-core" }

[workspace]
EOF
cp "$copy/Cargo.lock" "$rust/Cargo.lock"

step "README.md's blocks, in order, in the copy"
(cd "$copy" && README_RUST=$rust bash "$tmp/readme.sh") || fail "a README.md command failed (above)"
[ -s "$copy/sweep.svg" ] || fail "compare --plot sweep.svg drew nothing"
[ -s "$copy/t" ] || fail "the LD_PRELOAD shim traced nothing into t"

step "README.md's demo output is what make demo prints (times aside)"
(cd "$copy" && make -s demo 2>/dev/null) >"$tmp/demo.out"
python3 - "$copy/README.md" "$tmp/demo.out" <<'EOF'
import difflib, re, sys

readme, out = open(sys.argv[1]).read(), open(sys.argv[2]).read()
section = readme.index("## The two commands")
start = readme.index("```text\n", section) + len("```text\n")
shown = readme[start:readme.index("```", start)]

def comparable(text):
    """Lines with runs of blanks as one; in a table with times, a row's two times as names."""
    lines, timed = [], False
    for line in text.splitlines():
        if line.startswith("config") and "wall_time_s" in line:
            timed = True
        elif not line.strip():
            timed = False
        elif timed and re.match(r"^\S+\s+\d+\s", line):
            line = re.sub(r"\s+\S+\s+\S+$", " <cpu_time_s> <wall_time_s>", line)
        lines.append(" ".join(line.split()))
    return lines

diff = list(difflib.unified_diff(comparable(shown), comparable(out), "README.md", "make demo", lineterm=""))
if diff:
    print("\n".join(diff))
    sys.exit("test-readme: README.md's demo output differs from make demo's: paste the new output")
print(f"{len(comparable(shown))} lines agree")
EOF

printf '\ntest-readme: every command of README.md ran\n'
