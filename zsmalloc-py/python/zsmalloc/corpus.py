"""A corpus of real programs' traces, studied: ``zsmalloc corpus study DIR`` (docs/STUDY.md §8)
from Python, its tables as pandas DataFrames.

The call runs the ``zsmalloc`` command (found as :func:`zsmalloc.lab.command` finds it:
``ZSMALLOC_BIN``, else ``PATH``) with ``--format json``; pandas is imported only then::

    import zsmalloc.corpus
    tables = zsmalloc.corpus.study("corpus/")
    tables["chains"].pivot(index="config", columns="trace", values="peak_vs_classic_pct")

The tables, by name: ``traces``, ``chains``, ``leave_one_out``, ``folios``, ``backends``,
``frees`` and ``free_cost`` (one row per measured case); a table the corpus cannot fill is
empty, and :func:`notes` says why.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from .frames import require_pandas
from .lab import _json_report

if TYPE_CHECKING:  # pragma: no cover
    import pandas as _pd  # type: ignore[import-untyped]

__all__ = ["TABLES", "report", "study", "notes"]

#: The study's tables, in the order the command prints them, and where each sits in its JSON.
TABLES: dict[str, tuple[str, ...]] = {
    "traces": ("traces",),
    "chains": ("chains",),
    "leave_one_out": ("leave_one_out", "rows"),
    "folios": ("folios", "rows"),
    "backends": ("backends",),
    "frees": ("frees",),
    "free_cost": ("free_cost", "rows"),
}


def report(
    directory: str | os.PathLike[str],
    *,
    free_ops: int | None = None,
    jobs: int | None = None,
    lab: str | None = None,
) -> dict[str, Any]:
    """The study's JSON report of the corpus in ``directory`` (holding ``manifest.json``).

    ``free_ops`` sets the frees timed per measurement of the free-cost table (0: none timed);
    ``jobs`` the replays at a time. A refusal (no manifest, a missing trace) is a
    ``ValueError`` with the command's message; any other failure a ``RuntimeError``.
    """
    args = ["corpus", "study", os.fspath(directory), "--format", "json", "--quiet"]
    if free_ops is not None:
        args += ["--free-ops", str(free_ops)]
    if jobs is not None:
        args += ["--jobs", str(jobs)]
    return _json_report(lab, args)


def _rows(r: dict[str, Any], path: tuple[str, ...]) -> list[dict[str, Any]]:
    value: Any = r
    for key in path:
        value = value[key]
    return list(value)


def study(
    directory: str | os.PathLike[str],
    *,
    free_ops: int | None = None,
    jobs: int | None = None,
    lab: str | None = None,
    from_report: dict[str, Any] | None = None,
) -> dict[str, "_pd.DataFrame"]:
    """The study of the corpus in ``directory``: a DataFrame per table of :data:`TABLES`, the
    columns the JSON keys of its rows. ``from_report`` reuses a report :func:`report` gave
    instead of running the study again."""
    pd = require_pandas()
    r = from_report if from_report is not None else report(
        directory, free_ops=free_ops, jobs=jobs, lab=lab
    )
    return {name: pd.DataFrame(_rows(r, path)) for name, path in TABLES.items()}


def notes(r: dict[str, Any]) -> dict[str, str]:
    """What a report says besides its rows: why a table is empty, the free cost's derived
    parts and what the pool cannot time apart."""
    out: dict[str, str] = {}
    for name in ("leave_one_out", "folios"):
        if r[name].get("note"):
            out[name] = r[name]["note"]
    cost = r["free_cost"]
    parts = [
        f"release_ns={cost.get('release_ns')}",
        f"lock_contention_ns={cost.get('lock_contention_ns')}",
    ]
    out["free_cost"] = "; ".join(parts + [f"cannot split: {c}" for c in cost["cannot_split"]])
    return out
