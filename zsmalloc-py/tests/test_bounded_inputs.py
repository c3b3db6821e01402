"""Hostile class tables: endless iterables, devices, FIFOs and huge lines are refused with a
ValueError naming the entry or the file and line, lazily, in bounded time and memory."""

from __future__ import annotations

import itertools
import json
import os
import resource
import subprocess
import sys
import threading
from pathlib import Path
from typing import Iterator

import pytest

import zsmalloc

MAX_CLASS_LINES = 8189  # one class per multiple of 8 from 32 to 65536, the longest object


class Counted:
    """An endless iterable of ascending class rows that counts the rows taken from it."""

    def __init__(self) -> None:
        self.taken = 0

    def __iter__(self) -> Iterator[tuple[int, int]]:
        for i in itertools.count():
            self.taken += 1
            yield (32 + 8 * i, 1)


@pytest.mark.parametrize("entry", [zsmalloc.Pool, zsmalloc.class_table])
def test_an_endless_iterable_of_rows_is_refused_after_the_row_limit_lazily(entry):
    rows = Counted()
    with pytest.raises(ValueError, match=rf"class_table\[{MAX_CLASS_LINES}\] is beyond the most any table has, {MAX_CLASS_LINES}"):
        entry(class_table=iter(rows))
    assert rows.taken == MAX_CLASS_LINES + 1, "one row past the limit taken, no more"


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_as_the_table_file_is_refused_naming_the_file_and_line(device):
    with pytest.raises(ValueError, match=rf"^invalid class_table: {device}: line \d+: "):
        zsmalloc.Pool(class_table=device)
    with pytest.raises(ValueError, match=rf"^invalid class_table: {device}: line \d+: "):
        zsmalloc.class_table(class_table=Path(device))


def test_a_fifo_with_an_endless_writer_is_refused(tmp_path):
    fifo = tmp_path / "endless.table"
    os.mkfifo(fifo)
    stop = threading.Event()

    def writer() -> None:
        # The reader's refusal closes the FIFO: the next write fails and the writer ends.
        try:
            with open(fifo, "w") as f:
                f.write("page_size 4096\n")
                while not stop.is_set():
                    f.write("32 1\n" * 1000)
        except BrokenPipeError:
            pass

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        with pytest.raises(ValueError, match=rf"endless\.table: line {MAX_CLASS_LINES + 2} \(`32 1`\): too many classes"):
            zsmalloc.Pool(class_table=fifo)
    finally:
        stop.set()
        thread.join(timeout=10)
    assert not thread.is_alive()


def test_a_huge_line_and_a_huge_file_are_refused_by_line(tmp_path):
    long_line = tmp_path / "long-line.table"
    long_line.write_text("page_size 4096\n32 1\n" + "x" * (2 << 20) + "\n4096 1\n")
    with pytest.raises(ValueError, match=r"long-line\.table: line 3: the line is longer than 64 KiB"):
        zsmalloc.Pool(class_table=long_line)
    large = tmp_path / "large.table"
    large.write_text("page_size 4096\n" + "# a comment\n" * (500 << 10) + "32 1\n4096 1\n")
    with pytest.raises(ValueError, match=r"large\.table: line \d+: the input is larger than 4 MiB"):
        zsmalloc.Pool(class_table=large)


class EvilRepr:
    def __repr__(self) -> str:
        return "evil\x1b[2J\nnext"


@pytest.mark.parametrize(
    "table, error, shown",
    [
        ([(32, 1), ("32\x1b[2J", 1)], TypeError, r"size '32\x1b[2J' is not an int"),
        ([(32, 1), EvilRepr()], TypeError, r"class_table[1] is evil\u{1b}[2J\nnext, not a"),
        ([(EvilRepr(), 1), (4096, 1)], TypeError, r"size evil\u{1b}[2J\nnext is not an int"),
        ("/nonexistent/\x1b[2J\n.table", ValueError, r"/nonexistent/\u{1b}[2J\n.table: no such file"),
    ],
)
def test_control_characters_reach_a_message_escaped(table, error, shown):
    with pytest.raises(error) as refused:
        zsmalloc.Pool(class_table=table)
    message = str(refused.value)
    assert shown in message
    assert not any(c in message for c in "\x1b\n\r\0"), repr(message)


def test_a_table_file_with_control_characters_is_quoted_escaped(tmp_path):
    path = tmp_path / "escape.table"
    path.write_text("page_size 4096\n32 1\x1b[2J\n4096 1\n")
    with pytest.raises(ValueError, match=r"line 2 \(`32 1\\u\{1b\}\[2J`\)"):
        zsmalloc.Pool(class_table=path)


# Each hostile input refused in a fresh interpreter that limits its own address space to 4 GiB
# before importing zsmalloc; the child reports the CPU time of the refusal (which other load on
# the machine does not move, as it would wall-clock time), os.wait4 its peak RSS.
CHILD = r"""
import itertools, json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
import zsmalloc
kind, arg = sys.argv[1], sys.argv[2]
table = ((32 + 8 * i, 1) for i in itertools.count()) if kind == "generator" else arg
start = time.process_time()
try:
    zsmalloc.Pool(class_table=table)
    outcome = "accepted"
except ValueError as e:
    outcome = str(e)
print(json.dumps({"cpu_seconds": time.process_time() - start, "outcome": outcome}))
"""

MAX_RSS = 300 << 20
MAX_SECONDS = 5.0


def refuse_in_child(kind: str, arg: str, folder: Path) -> tuple[dict, int]:
    """The child's report and its peak RSS in bytes."""
    out_path, err_path = folder / "child.out", folder / "child.err"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZSMALLOC_")}
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        child = subprocess.Popen([sys.executable, "-c", CHILD, kind, arg], stdout=out, stderr=err, env=env)
    killer = threading.Timer(300, child.kill)  # a hang, not a bound: the bound is on CPU time
    killer.start()
    try:
        _, status, usage = os.wait4(child.pid, 0)
    finally:
        killer.cancel()
    child.returncode = os.waitstatus_to_exitcode(status)
    assert child.returncode == 0, f"{kind}: the interpreter died ({child.returncode}): {err_path.read_text()}"
    return json.loads(out_path.read_text()), usage.ru_maxrss * 1024


@pytest.mark.parametrize("kind", ["dev-zero", "generator", "long-line"])
def test_refusals_stay_within_time_and_memory_under_an_address_space_limit(kind, tmp_path):
    arg = {"dev-zero": "/dev/zero", "generator": "-", "long-line": str(tmp_path / "long.table")}[kind]
    if kind == "long-line":
        Path(arg).write_text("page_size 4096\n32 1\n" + "7" * (2 << 20) + "\n4096 1\n")
    report, peak = refuse_in_child(kind, arg, tmp_path)
    assert report["outcome"].startswith("invalid class_table: "), report
    assert report["cpu_seconds"] < MAX_SECONDS, report
    assert peak < MAX_RSS, f"{kind}: peak RSS {peak >> 20} MiB"
