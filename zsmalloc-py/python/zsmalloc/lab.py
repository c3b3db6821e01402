"""The lab's optimizer from Python: ``zsmalloc optimize`` over one workload or many.

Each call runs the ``zsmalloc`` command (the lab, docs/LAB.md) with ``--format json`` and returns
its report as a dict: ``references`` (classic, heuristic), ``points`` (the frontier, each with
``pages``, ``pages_peak``, ``reads_spanning``, ``read_cost``, ``classes`` and ``table``, the table
in the class-table file format). The command is found as ``ZSMALLOC_BIN`` names it, else on
``PATH``.

Many workloads (a fleet's traces, say) fan out over a ``dask.distributed.Client`` when one is
given (``pip install zsmalloc[dask]``); nothing of dask is imported otherwise::

    from dask.distributed import Client, LocalCluster
    client = Client(LocalCluster(n_workers=2))
    reports = zsmalloc.lab.optimize_many(
        {"app": ["trace", "app.trace"], "dist": ["dist"]}, page_size=16384, client=client)
    frontier = zsmalloc.lab.frontier_rows(reports)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["command", "optimize", "optimize_many", "frontier_rows"]


def command() -> str:
    """The ``zsmalloc`` command: ``ZSMALLOC_BIN`` if set, else the one on ``PATH``."""
    found = os.environ.get("ZSMALLOC_BIN") or shutil.which("zsmalloc")
    if not found:
        raise FileNotFoundError(
            "the zsmalloc command was not found: set ZSMALLOC_BIN or put it on PATH "
            "(cargo build --release -p zsmalloc-lab)"
        )
    return found


def _arguments(
    workload: Sequence[str],
    page_size: int | None,
    points: int | None,
    objective: str | None,
    spanning_extra_ns: float | None,
    jobs: int | None,
) -> list[str]:
    args = ["optimize", "--format", "json"]
    for flag, value in [
        ("--page-size", page_size),
        ("--points", points),
        ("--objective", objective),
        ("--spanning-extra-ns", spanning_extra_ns),
        ("--jobs", jobs),
    ]:
        if value is not None:
            args += [flag, str(value)]
    return args + [str(w) for w in workload]


def optimize(
    workload: Sequence[str] = ("kernel-test",),
    *,
    page_size: int | None = None,
    points: int | None = None,
    objective: str | None = None,
    spanning_extra_ns: float | None = None,
    jobs: int | None = None,
    lab: str | None = None,
) -> dict[str, Any]:
    """``zsmalloc optimize`` on one workload, given as the command takes it
    (``["dist", "--mean", "900"]``, ``["pages", "/usr/lib"]``, ``["trace", "app.trace"]``).

    A refusal of the command (a bad flag or input) is a ``ValueError`` with its message; any
    other failure a ``RuntimeError``.
    """
    args = _arguments(workload, page_size, points, objective, spanning_extra_ns, jobs)
    done = subprocess.run([lab or command(), *args], capture_output=True, text=True, check=False)
    if done.returncode == 2:
        raise ValueError(done.stderr.strip())
    if done.returncode != 0:
        raise RuntimeError(f"zsmalloc {' '.join(args)} failed: {done.stderr.strip()}")
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def optimize_many(
    workloads: Mapping[str, Sequence[str]],
    *,
    client: Any = None,
    **options: Any,
) -> dict[str, dict[str, Any]]:
    """:func:`optimize` on each named workload; the reports by name.

    With ``client`` (a ``dask.distributed.Client``) the workloads run as its tasks, where its
    workers are (each worker needs the ``zsmalloc`` command); without one, one after another
    here. Each optimization itself runs its candidates on the cores it has (``jobs``).
    """
    names = list(workloads)
    if client is None:
        return {name: optimize(workloads[name], **options) for name in names}
    lab = options.pop("lab", None) or command()
    futures = client.map(
        lambda name: optimize(workloads[name], lab=lab, **options),
        names,
        key=[f"zsmalloc-optimize-{name}" for name in names],
        pure=False,
    )
    return dict(zip(names, client.gather(futures)))


def frontier_rows(reports: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per table of the reports, references and frontier points alike: ``workload``,
    ``label``, ``point``, ``pages``, ``pages_peak``, ``reads_spanning``, ``read_cost``,
    ``dominates_references`` (``pandas.DataFrame(rows)`` makes it a frame)."""
    keys = ["label", "point", "pages", "pages_peak", "reads_spanning", "read_cost", "dominates_references"]
    rows = []
    for name, report in reports.items():
        for p in [*report["references"], *report["points"]]:
            rows.append({"workload": name, **{k: p.get(k) for k in keys}})
    return rows
