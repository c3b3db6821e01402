"""This machine's own zram devices and zswap: ``zsmalloc inspect`` from Python.

:func:`inspect` runs ``zsmalloc inspect --format json`` (no root needed) and returns its report
as a dict: ``time_unix_s``, ``kernel``, ``page_size``, ``zram`` (one dict per device: ``name``,
``initialised``, ``compressor``, ``swap``, ``mm_stat``, ``io_stat``, ``bd_stat`` and ``figures``
with ``data_bytes``, ``compressed_bytes``, ``pool_bytes``, ``overhead_bytes``, ``overhead_pct``,
``ratio``...), ``swaps``, ``missing``, ``zswap`` and ``unreadable``. :func:`sample` takes several
reports a fixed interval apart, :func:`frame` makes them one pandas DataFrame (a row per device
per report) to plot a machine's zram over time. :func:`snapshot` (root) is ``inspect
--snapshot``: the fragmentation a device's history holds and what other class tables would
save on its data. The command is found as :func:`zsmalloc.lab.command` finds it
(``ZSMALLOC_BIN``, then ``PATH``).

>>> import zsmalloc                                                # doctest: +SKIP
>>> r = zsmalloc.inspect()                                         # doctest: +SKIP
>>> [(d["name"], d["figures"] and d["figures"]["overhead_pct"]) for d in r["zram"]]  # doctest: +SKIP
[('zram0', 23.5)]
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any, Optional

from .lab import command

__all__ = ["inspect", "sample", "snapshot", "rows", "frame"]


def _run(args: list[str], lab: Optional[str]) -> str:
    done = subprocess.run(
        [lab or command(), "inspect", "--format", "json", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    message = done.stderr.strip().removeprefix("zsmalloc: ")
    if done.returncode == 2:
        raise ValueError(message)
    if done.returncode != 0:
        raise RuntimeError(f"zsmalloc inspect failed: {message or f'exit {done.returncode}'}")
    return done.stdout


def inspect(*, lab: Optional[str] = None) -> dict[str, Any]:
    """Every zram device and zswap, now (``zsmalloc inspect --format json``)."""
    report: dict[str, Any] = json.loads(_run([], lab))
    return report


def sample(count: int = 3, every: float = 1.0, *, lab: Optional[str] = None) -> list[dict[str, Any]]:
    """``count`` reports ``every`` seconds apart (``zsmalloc inspect --watch`` in one process)."""
    if count < 1:
        raise ValueError("count must be at least 1")
    out = _run(["--watch", str(every), "--count", str(count)], lab)
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def snapshot(
    device: str,
    *,
    optimize: bool = False,
    max_pages: Optional[int] = None,
    yes: bool = False,
    compressor: Optional[str] = None,
    level: Optional[int] = None,
    trace: Optional[str] = None,
    jobs: Optional[int] = None,
    lab: Optional[str] = None,
) -> dict[str, Any]:
    """``zsmalloc inspect --snapshot DEVICE`` (root): ``live_pages``, ``history_free_pages``,
    ``fragmentation_pages``, ``alternatives`` (chains 4..16, the heuristic) and, with
    ``optimize``, ``optimized`` (the optimizer's table with the fewest pages). Reading marks the
    device's slots accessed; a device that is active swap is refused unless ``yes``."""
    args = ["--snapshot", device]
    for flag, value in (
        ("--max-pages", max_pages),
        ("--compressor", compressor),
        ("--level", level),
        ("--trace", os.fspath(trace) if trace is not None else None),
        ("--jobs", jobs),
    ):
        if value is not None:
            args += [flag, str(value)]
    if optimize:
        args.append("--optimize")
    if yes:
        args.append("--yes")
    report: dict[str, Any] = json.loads(_run(args, lab))
    return report


FIGURES = [
    "stored_pages",
    "data_bytes",
    "compressed_bytes",
    "pool_bytes",
    "overhead_bytes",
    "overhead_pct",
    "ratio",
    "same_pages",
    "huge_pages",
    "pages_compacted",
    "peak_bytes",
]


def rows(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per device per report: ``time_unix_s``, ``device``, ``initialised``,
    ``compressor``, ``swap_priority`` and the figures (None for a device not initialised)."""
    out = []
    for r in reports:
        for d in r["zram"]:
            f = d.get("figures") or {}
            out.append(
                {
                    "time_unix_s": r["time_unix_s"],
                    "device": d["name"],
                    "initialised": d["initialised"],
                    "compressor": d["compressor"],
                    "swap_priority": (d.get("swap") or {}).get("priority"),
                    **{k: f.get(k) for k in FIGURES},
                }
            )
    return out


def frame(reports: list[dict[str, Any]]) -> Any:
    """:func:`rows` as a pandas DataFrame, with ``time`` as datetimes. Needs pandas."""
    try:
        import pandas as pd  # type: ignore[import-untyped]
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("zsmalloc.machine.frame needs pandas (pip install pandas)") from e
    columns = ["time_unix_s", "device", "initialised", "compressor", "swap_priority", *FIGURES]
    df = pd.DataFrame(rows(reports), columns=columns)
    df["time"] = pd.to_datetime(df["time_unix_s"], unit="s")
    return df
