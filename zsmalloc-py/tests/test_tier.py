"""zsmalloc.tier: a Python program run under a 4 MiB budget prints what it prints untiered, with
its pages evicted into the pool and faulted back; exit statuses are reports, refusals are
exceptions with the tier's line. Skipped, with the reason, without root, userfaultfd, the
zsmalloc command or the tier's library."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import lab_binary, run_notebook
from zsmalloc import tier

LIBRARY = "libzsmalloc_tier_preload.so"
# The tier preloads its library into the program it starts, so that must be the interpreter
# itself, not a launcher script (pyenv's shim) that executes it untiered.
PYTHON = os.path.realpath(sys.executable)
# A few tens of MiB of strings, and a checksum of them all.
PROGRAM = """
import hashlib
rows = [str(i) * 8 for i in range(1_500_000)]
print(len(rows), hashlib.sha256("".join(rows).encode()).hexdigest())
"""
TIMEOUT = 300


def _skip_reason() -> str | None:
    binary = lab_binary()
    if os.geteuid() != 0:
        return "the tier needs root (userfaultfd)"
    if not Path("/dev/userfaultfd").exists():
        return "this kernel has no /dev/userfaultfd"
    if binary is None:
        return "the zsmalloc command is not built (cargo build --release -p zsmalloc-lab)"
    if not (Path(binary).parent / LIBRARY).is_file() and "ZSMALLOC_TIER_LIBRARY" not in os.environ:
        return "the tier's library is not built (cargo build --release -p zsmalloc-tier-preload)"
    return None


SKIP = _skip_reason()
if SKIP:
    print(f"test_tier: skipped: {SKIP}", file=sys.stderr)
pytestmark = pytest.mark.skipif(SKIP is not None, reason=str(SKIP))


@pytest.fixture(autouse=True)
def _bin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZSMALLOC_BIN", str(lab_binary()))


def test_a_program_under_a_small_budget_prints_what_it_prints_untiered(tmp_path: Path) -> None:
    untiered = subprocess.run(
        [PYTHON, "-c", PROGRAM], capture_output=True, text=True, check=True, timeout=TIMEOUT
    )
    kept = tmp_path / "report.json"
    r = tier.run(
        [PYTHON, "-c", PROGRAM],
        budget="4M",
        chain_size=8,
        report=kept,
        capture=True,
        timeout=TIMEOUT,
    )
    assert r.stdout == untiered.stdout
    assert r.exit_status == 0 and r.state == "tiering"
    assert r.budget_bytes == 4 << 20
    assert r.evictions > 0 and r.faults > 0
    assert r.fault_ns["count"] == r.faults and r.fault_ns["p50"] > 0
    assert r.max_pool_pages > 0 and r.policy == "fifo"
    # The tier's text report follows the program's own output on stderr.
    assert "exited with status 0" in r.stderr
    assert set(r.fields) >= {"peak_resident_bytes", "same_filled_pages", "compressed_bytes"}
    with pytest.raises(AttributeError, match="no field"):
        r.no_such_field
    with pytest.raises(TypeError):
        r.fields["evictions"] = 0  # type: ignore[index]
    assert json.loads(kept.read_text()) == r.as_dict()
    assert pickle.loads(pickle.dumps(r)) == r


def test_a_nonzero_exit_is_reported_not_raised() -> None:
    r = tier.run([PYTHON, "-c", "raise SystemExit(3)"], budget=1 << 20, timeout=TIMEOUT)
    assert r.exit_status == 3
    assert r.stdout is None and r.stderr is None  # not captured: they went to ours
    killed = tier.run(
        [PYTHON, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"],
        budget="1M",
        capture=True,
        timeout=TIMEOUT,
    )
    assert killed.exit_status == 128 + 15


@pytest.mark.parametrize("capture", [False, True])
def test_refusals_raise_with_the_tiers_line(capture: bool) -> None:
    with pytest.raises(ValueError, match="the budget must be at least 64K"):
        tier.run([PYTHON, "-c", "pass"], budget=0, capture=capture, timeout=TIMEOUT)
    with pytest.raises(ValueError, match="--chain-size: 99 is outside 1..=16"):
        tier.run(["true"], budget="1M", chain_size=99, capture=capture, timeout=TIMEOUT)
    with pytest.raises(FileNotFoundError, match="no-such-program: command not found"):
        tier.run(["no-such-program"], budget="1M", capture=capture, timeout=TIMEOUT)


def test_keywords_are_the_commands_pool_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    # Read from the command's help, colored or not (a Jupyter kernel forces colors).
    monkeypatch.setenv("CLICOLOR_FORCE", "1")
    monkeypatch.setattr(tier, "_ACCEPTED", {})
    keywords = tier.pool_flags()
    assert {"chain_size", "chain_policy", "class_table", "backend", "pool_limit"} <= keywords
    with pytest.raises(TypeError, match="'chain_length'.*chain_size"):
        tier.run(["true"], budget="1M", chain_length=4)
    with pytest.raises(TypeError, match="budget"):
        tier.run(["true"], budget=4.5)  # type: ignore[arg-type]


def test_switches_follow_children_into_a_line_per_process() -> None:
    # A switch is a keyword given True or False; the child Python is tiered under its own line.
    child = "x = [str(i) * 8 for i in range(300_000)]; print(len(x))"
    parent = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {child!r}])"
    r = tier.run(
        [PYTHON, "-c", parent], budget="2M", follow_children=True, capture=True, timeout=TIMEOUT
    )
    assert r.exit_status == 0 and r.stdout == "300000\n"
    assert len(r.processes) == 2 and all(p["command"].startswith("python") for p in r.processes)
    first, second = r.processes
    assert first["pid"] != second["pid"] and second["evictions"] > 0
    assert r.evictions == first["evictions"] + second["evictions"]
    assert r.user_faults_only is False
    untiered_child = tier.run(
        [PYTHON, "-c", parent], budget="2M", follow_children=False, capture=True, timeout=TIMEOUT
    )
    assert "processes" not in untiered_child.fields
    with pytest.raises(TypeError, match="follow_children is a switch"):
        tier.run(["true"], budget="1M", follow_children="yes")


def _running_with(marker: str) -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:
            pass
    return found


def test_a_timeout_ends_the_program_and_the_tier() -> None:
    marker = f"tier-timeout-{os.getpid()}"
    with pytest.raises(subprocess.TimeoutExpired):
        tier.run([PYTHON, "-c", "import time; time.sleep(60)", marker], budget="1M", timeout=2)
    assert _running_with(marker) == []


def test_the_notebook_cell_runs_the_tier() -> None:
    text, _ = run_notebook("tier.ipynb", timeout=TIMEOUT)
    assert "tiered runs checked" in text


def test_the_tables_notebook_compares_three_tables_on_a_recorded_trace() -> None:
    text, images = run_notebook("tier_tables.ipynb", timeout=TIMEOUT)
    assert "three tables compared on one recorded trace" in text
    assert images == 1
