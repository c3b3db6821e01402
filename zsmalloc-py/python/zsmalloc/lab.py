"""The lab's optimizer and comparisons from Python: ``zsmalloc optimize`` over one workload or
many, ``zsmalloc compare`` of several configurations on one.

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

A trace (one ``zsmalloc tier --record`` wrote, say) under three class tables::

    report = zsmalloc.lab.compare(
        ["trace", "app.trace"],
        {"classic": {}, "heuristic": {"chain_policy": "heuristic"}, "mine": {"class_table": "t.table"}})
    pages = {run["label"]: run["pages_peak"] for run in report["runs"]}
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["command", "compare", "optimize", "optimize_many", "frontier_rows"]


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
    return _json_report(lab, args)


def _json_report(lab: str | None, args: list[str]) -> dict[str, Any]:
    """Runs the lab with ``args`` (which ask for JSON) and returns its report."""
    done = subprocess.run([lab or command(), *args], capture_output=True, text=True, check=False)
    if done.returncode == 2:
        raise ValueError(done.stderr.strip())
    if done.returncode != 0:
        raise RuntimeError(f"zsmalloc {' '.join(args)} failed: {done.stderr.strip()}")
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def _config_spec(label: str, overrides: Mapping[str, Any]) -> str:
    """One ``--config`` of the command: ``key=value`` pairs (keywords with ``_`` as flags with
    ``-``) and the label."""
    if "," in label or "=" in label:
        raise ValueError(f"a configuration's label may not contain ',' or '=': {label!r}")
    pairs = []
    for key, value in overrides.items():
        if isinstance(value, bool):
            text = "on" if value else "off"
        elif isinstance(value, os.PathLike):
            text = os.fspath(value)
        else:
            text = str(value)
        if "," in text:
            raise ValueError(f"{key}={text!r}: a value may not contain ','")
        pairs.append(f"{key.replace('_', '-')}={text}")
    return ",".join([*pairs, f"label={label}"])


def compare(
    workload: Sequence[str],
    configs: Mapping[str, Mapping[str, Any]],
    *,
    timeline: str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    lab: str | None = None,
) -> dict[str, Any]:
    """``zsmalloc compare --no-time`` of ``configs`` (label -> overrides of the configuration
    flags, e.g. ``{"chain_policy": "heuristic"}``; ``{}`` is the defaults) on one workload, as
    the command takes it (``["trace", "app.trace"]``, ``["dist", "--objects", "20000"]``).

    Returns the JSON report: ``runs`` in the order given, each with its ``label``, ``pages``,
    ``pages_peak``, ``reads_spanning``, ... and ``deltas_pct`` against the first. ``timeline``
    writes pages and utilization over the operations as CSV (columns ``label``, ``op``,
    ``pages``, ...). A refused flag or value is a ``ValueError`` with the command's message.
    """
    if not configs:
        raise ValueError("compare needs at least one configuration")
    args = ["compare", "--no-time", "--format", "json"]
    for label, overrides in configs.items():
        args += ["--config", _config_spec(label, overrides)]
    if timeline is not None:
        args += ["--timeline", os.fspath(timeline)]
    if jobs is not None:
        args += ["--jobs", str(jobs)]
    return _json_report(lab, args + [str(w) for w in workload])


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
