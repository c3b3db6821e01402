"""The running kernel's zram beside the project: ``check``, ``capture``, ``cost`` and
``import_trace``, each the ``zsmalloc kernel`` command run with ``--format json`` and returned as
a dict of the same keys (docs/LAB.md, "The real kernel").

The kernel commands need root and a kernel with zram (``/sys/class/zram-control``); they make a
private zram device, never touch another, and remove it however they end. The ``zsmalloc``
command is found through ``$ZSMALLOC_BIN``, then ``PATH``.

>>> from zsmalloc import kernel                                    # doctest: +SKIP
>>> r = kernel.check(["/usr/lib"], compressor="lz4", max_pages=20000)  # doctest: +SKIP
>>> r["agree"], [p["agreeing"] for p in r["phases"]]               # doctest: +SKIP
(True, [20000, 10000, 1])
>>> kernel.frame(r)                                                # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any, Iterable, Optional

from .lab import command

__all__ = ["KernelError", "binary", "check", "capture", "cost", "import_trace", "frame"]


class KernelError(RuntimeError):
    """The command refused (``exit_code`` 2: not root, no zram control, a compressor the kernel
    lacks, a corpus too large...) or failed (1), with its one-line message."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def binary() -> str:
    """Path of the ``zsmalloc`` command, as :func:`zsmalloc.lab.command` finds it."""
    try:
        return command()
    except FileNotFoundError as e:
        raise KernelError(str(e), 2) from None


def _corpus_args(
    paths: Optional[Iterable[str]],
    pid: Optional[int],
    synthetic_pages: Optional[int],
    max_pages: Optional[int],
) -> list[str]:
    args = [os.fspath(p) for p in (paths or [])]
    for flag, value in (
        ("--pid", pid),
        ("--synthetic-pages", synthetic_pages),
        ("--max-pages", max_pages),
    ):
        if value is not None:
            args += [flag, str(value)]
    return args


def _options(**flags: Any) -> list[str]:
    args: list[str] = []
    for name, value in flags.items():
        if value is not None:
            args += ["--" + name.replace("_", "-"), str(value)]
    return args


def _run(args: list[str], ok_codes: tuple[int, ...] = (0,)) -> dict[str, Any]:
    proc = subprocess.run(
        [binary(), "kernel", *args, "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode not in ok_codes:
        message = proc.stderr.strip().removeprefix("zsmalloc: ") or f"exit {proc.returncode}"
        raise KernelError(message, proc.returncode)
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


def check(
    paths: Optional[Iterable[str]] = None,
    *,
    pid: Optional[int] = None,
    synthetic_pages: Optional[int] = None,
    max_pages: Optional[int] = None,
    compressor: Optional[str] = None,
    level: Optional[int] = None,
    free_share: Optional[float] = None,
    seed: Optional[int] = None,
    chain_size: Optional[int | str] = None,
    chain_policy: Optional[str] = None,
) -> dict[str, Any]:
    """``zsmalloc kernel check``: keys ``agree``, ``phases`` (fill, free, compact: ``steps``,
    ``agreeing``, ``kernel_pages``, ``project_pages``...), ``kernel``, ``first_disagreement``.
    A disagreement is a report with ``agree`` False, not an exception."""
    args = ["check", *_corpus_args(paths, pid, synthetic_pages, max_pages)]
    args += _options(
        compressor=compressor,
        level=level,
        free_share=free_share,
        seed=seed,
        chain_size=chain_size,
        chain_policy=chain_policy,
    )
    return _run(args, ok_codes=(0, 1))


def capture(
    output: str,
    paths: Optional[Iterable[str]] = None,
    *,
    pid: Optional[int] = None,
    synthetic_pages: Optional[int] = None,
    max_pages: Optional[int] = None,
    compressor: Optional[str] = None,
    level: Optional[int] = None,
    free_share: Optional[float] = None,
    seed: Optional[int] = None,
) -> dict[str, Any]:
    """``zsmalloc kernel capture -o OUTPUT``: the kernel's outcome per page as a trace file;
    returns its facts (``kernel_pages_after_fill``, ``stored``...)."""
    args = ["capture", "-o", os.fspath(output), *_corpus_args(paths, pid, synthetic_pages, max_pages)]
    args += _options(compressor=compressor, level=level, free_share=free_share, seed=seed)
    return _run(args)


def cost(
    paths: Optional[Iterable[str]] = None,
    *,
    pid: Optional[int] = None,
    synthetic_pages: Optional[int] = None,
    max_pages: Optional[int] = None,
    compressor: Optional[str] = None,
    level: Optional[int] = None,
    rounds: Optional[int] = None,
    seed: Optional[int] = None,
    conditions: Optional[str] = None,
) -> dict[str, Any]:
    """``zsmalloc kernel cost``: ``conditions`` (warm, cold: pool size, spanning objects, the
    heuristic's saving) and ``rows`` (per condition and length band: ``spanning`` and
    ``in_place`` figures, ``spanning_extra`` with its confidence interval)."""
    args = ["cost", *_corpus_args(paths, pid, synthetic_pages, max_pages)]
    args += _options(
        compressor=compressor, level=level, rounds=rounds, seed=seed, conditions=conditions
    )
    return _run(args)


def import_trace(events: str, output: str, *, pool: Optional[str] = None) -> dict[str, Any]:
    """``zsmalloc kernel import``: kprobe ``trace_pipe`` lines or the bpftrace one-liner's output
    (file ``events``) into a trace file; returns the counts (stores, frees, lost events...)."""
    return _run(["import", os.fspath(events), "-o", os.fspath(output), *_options(pool=pool)])


def frame(report: dict[str, Any]) -> Any:
    """The report's table as a pandas DataFrame: a check's ``phases``, a cost's ``rows``
    (figures flattened to ``spanning_median_ns``...). Needs pandas."""
    try:
        import pandas as pd  # type: ignore[import-untyped]
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("zsmalloc.kernel.frame needs pandas (pip install pandas)") from e
    if "phases" in report:
        return pd.DataFrame(report["phases"])
    if "rows" in report:
        return pd.json_normalize(report["rows"], sep="_")
    raise ValueError("not a check or cost report (no 'phases' or 'rows')")
