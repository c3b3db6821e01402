"""The tier from Python: ``zsmalloc tier`` runs a program with its memory above a budget kept
in a zsmalloc pool (docs/TIER.md), and :func:`run` returns its report as a :class:`TierReport`.

The tier needs root (or access to ``/dev/userfaultfd``, or ``user_faults_only=True`` with its
caveat). The ``zsmalloc`` command is found as
:func:`zsmalloc.lab.command` finds it (``ZSMALLOC_BIN``, then ``PATH``), and the tier's library
as the command finds it (``ZSMALLOC_TIER_LIBRARY``, else beside the command).

>>> from zsmalloc import tier                                          # doctest: +SKIP
>>> r = tier.run(["/usr/bin/python3", "-c", "x = [str(i) for i in range(10**6)]"],
...              budget="16M", chain_size=8, capture=True)             # doctest: +SKIP
>>> r.exit_status, r.evictions > 0, r.fault_ns["p50"] > 0             # doctest: +SKIP
(0, True, True)
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Optional, Union

from .lab import command

__all__ = ["TierReport", "run", "pool_flags"]

_PREFIXES = ("zsmalloc tier: ", "zsmalloc: ")
# The command's help and errors are colored where the environment forces colors (a Jupyter
# kernel sets CLICOLOR_FORCE); what is read of them is the text.
_COLORS = re.compile(r"\x1b\[[0-9;]*m")
# Flags of the command that run() sets itself rather than take as pool keywords.
_OWN_FLAGS = {"budget", "report", "help"}


def _thawed(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _thawed(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_thawed(v) for v in value]
    return value


def _frozen(value: Any) -> Any:
    if isinstance(value, dict):
        return MappingProxyType({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


@dataclass(frozen=True)
class TierReport:
    """The report of one tiered run: every field of ``zsmalloc tier --report``'s JSON as an
    attribute (``evictions``, ``faults``, ``peak_resident_bytes``, ``fault_ns["p99"]``...; the
    fields are listed in docs/TIER.md), ``fields`` the whole report read-only (fields a newer
    command adds are there and attributes too), and the program's output when :func:`run`
    captured it (``None`` otherwise)."""

    fields: Mapping[str, Any]
    stdout: Optional[str] = None
    stderr: Optional[str] = None

    @property
    def exit_status(self) -> int:
        """The program's exit status as a shell gives it (128 + N after signal N)."""
        status: int = self.fields["exit_status"]
        return status

    def __getattr__(self, name: str) -> Any:
        # Only called for names that are not attributes: the report's fields.
        if name.startswith("__") or name == "fields":
            raise AttributeError(name)
        try:
            return self.fields[name]
        except KeyError:
            raise AttributeError(f"the tier's report has no field {name!r}") from None

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *self.fields})

    def as_dict(self) -> dict[str, Any]:
        """The report as the JSON reads, in plain dicts and lists
        (``pandas.json_normalize(r.as_dict())`` makes it a row)."""
        fields: dict[str, Any] = _thawed(self.fields)
        return fields

    @classmethod
    def from_json(
        cls, fields: Mapping[str, Any], stdout: Optional[str] = None, stderr: Optional[str] = None
    ) -> TierReport:
        """A report from the command's JSON (a ``--report`` file's, loaded)."""
        return cls(fields=_frozen(dict(fields)), stdout=stdout, stderr=stderr)

    def __reduce__(self) -> tuple[Any, ...]:
        # A read-only mapping does not pickle; the plain one does (multiprocessing, dask).
        return (TierReport.from_json, (self.as_dict(), self.stdout, self.stderr))


# The flags of each command asked, by its path (one --help per command and process).
_ACCEPTED: dict[str, frozenset[str]] = {}
# Those of them that take no value (``--follow-children``): keywords given True or False.
_SWITCHES: dict[str, frozenset[str]] = {}


def _accepted(lab: str) -> frozenset[str]:
    if lab in _ACCEPTED:
        return _ACCEPTED[lab]
    done = subprocess.run(
        [lab, "tier", "--help"], capture_output=True, text=True, check=False, timeout=60
    )
    if done.returncode != 0:
        raise RuntimeError(f"{lab} tier --help failed: {done.stderr.strip() or done.returncode}")
    text = _COLORS.sub("", done.stdout)
    flags = re.findall(r"^\s+(?:-\w, )?--([a-z][a-z0-9-]*)( <)?", text, re.MULTILINE)
    accepted = frozenset(f.replace("-", "_") for f, _ in flags) - _OWN_FLAGS
    _SWITCHES[lab] = frozenset(f.replace("-", "_") for f, value in flags if not value) & accepted
    _ACCEPTED[lab] = accepted
    return accepted


def pool_flags(*, lab: Optional[str] = None) -> frozenset[str]:
    """The keywords :func:`run` takes for the pool: the flags ``zsmalloc tier --help`` lists
    besides ``--budget`` and ``--report``, with ``_`` for ``-`` (``chain_size``...)."""
    return _accepted(lab or command())


def _arguments(lab: str, budget: Union[int, str], config: Mapping[str, Any]) -> list[str]:
    if isinstance(budget, bool) or not isinstance(budget, (int, str)):
        raise TypeError(f"budget must be an int of bytes or a string like '32M', not {budget!r}")
    accepted = _accepted(lab)
    args = [f"--budget={budget}"]
    for key, value in config.items():
        if key not in accepted:
            raise TypeError(
                f"run() got an unexpected keyword argument {key!r}; the tier's pool keywords "
                f"are {', '.join(sorted(accepted))}"
            )
        if key in _SWITCHES.get(lab, frozenset()):
            if not isinstance(value, bool):
                raise TypeError(f"{key} is a switch: True or False, not {value!r}")
            if value:
                args.append(f"--{key.replace('_', '-')}")
        elif value is not None:
            shown = os.fspath(value) if isinstance(value, os.PathLike) else value
            args.append(f"--{key.replace('_', '-')}={shown}")
    return args


def _refusal(line: str, exit_code: int) -> Exception:
    """The exception for a refusal of the tier (no report written), by what its line says."""
    for prefix in _PREFIXES:
        line = line.removeprefix(prefix)
    if exit_code == 127:
        return FileNotFoundError(line)
    if exit_code == 126 or line.startswith("userfaultfd: permission denied"):
        return PermissionError(line)
    if line.startswith("userfaultfd:") or line.startswith("cannot make"):
        return OSError(line)
    if "tier's library" in line or line.startswith("ZSMALLOC_TIER_LIBRARY="):
        return FileNotFoundError(line)
    if exit_code == 2:
        return ValueError(line)
    return RuntimeError(f"zsmalloc tier failed (exit {exit_code}): {line}")


def _last_line(text: str) -> str:
    lines = [line for line in _COLORS.sub("", text).splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _preflight(lab: str, args: list[str], scratch: str) -> None:
    """The tier's checks that need no program (its library, the budget, the pool's
    configuration, userfaultfd), run with a program that does not exist: the tier makes them
    before it looks for the program, so its line can be raised while the real run's stderr
    stays the caller's. Passing them, it answers "command not found" (127)."""
    missing = os.path.join(scratch, "no-program")
    done = subprocess.run(
        [lab, "tier", *args, "--", missing], capture_output=True, text=True, check=False, timeout=60
    )
    if done.returncode != 127:
        raise _refusal(_last_line(done.stderr), done.returncode)


def _end(proc: subprocess.Popen[Any]) -> None:
    """Kills the program the tier runs (its children), then the tier."""
    try:
        with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
            children = [int(pid) for pid in f.read().split()]
    except OSError:
        children = []
    for pid in children:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.kill()
    proc.wait()


def run(
    argv: Sequence[Union[str, os.PathLike[str]]],
    *,
    budget: Union[int, str],
    report: Optional[Union[str, os.PathLike[str]]] = None,
    capture: bool = False,
    timeout: Optional[float] = None,
    lab: Optional[str] = None,
    **config: Any,
) -> TierReport:
    """Runs ``argv`` under ``zsmalloc tier --budget BUDGET`` and returns its report.

    ``budget`` is bytes (an int) or a size as the command takes it (``"64K"``, ``"32M"``,
    ``"1G"``). ``config`` is the pool's configuration, a keyword per flag of the command
    (:func:`pool_flags`: ``page_size``, ``chain_size``, ``class_delta``, ``chain_policy``,
    ``class_table``, ``backend``, ``pool_limit``...); another keyword is a ``TypeError``. The
    command's switches are keywords given ``True`` or ``False``: ``follow_children=True``
    tiers the children it forks and the programs they execute too (the programs the started
    process executes are tiered without it; the report's ``processes`` then has a line per
    tiered process), ``user_faults_only=True`` runs without root at the
    cost docs/TIER.md describes ("Without root").
    ``report`` also keeps the JSON in that file.

    The program's stdout and stderr are the caller's, untouched (so is the tier's text report,
    on stderr after the program's output), unless ``capture``: then both are captured as text
    into the report's ``stdout`` and ``stderr``. In a notebook, capture: a child's own output
    goes to the notebook server's terminal, not the cell. A program that exits nonzero (or is
    killed) is a report with that ``exit_status``, not an exception. After ``timeout`` seconds
    the program and the tier are killed and ``subprocess.TimeoutExpired`` is raised.

    A refusal of the tier raises with its line: ``ValueError`` for a bad budget or pool
    setting or a program it cannot tier (static, setuid), ``PermissionError`` without access to
    userfaultfd (root) or for a program that cannot be executed, ``FileNotFoundError`` for a program or the tier's library not found,
    ``OSError`` for another failure of userfaultfd.
    """
    if isinstance(argv, (str, bytes)) or not argv:
        raise ValueError("argv must be the program and its arguments as a list, e.g. ['ls', '-l']")
    lab = lab or command()
    args = _arguments(lab, budget, config)
    program = [os.fspath(a) for a in argv]
    with tempfile.TemporaryDirectory(prefix="zsmalloc-tier-") as scratch:
        if not capture:
            _preflight(lab, args, scratch)
        path = os.path.join(scratch, "report.json")
        pipe = subprocess.PIPE if capture else None
        proc = subprocess.Popen(
            [lab, "tier", *args, f"--report={path}", "--", *program],
            stdout=pipe,
            stderr=pipe,
            text=True,
        )
        try:
            out, err = proc.communicate(timeout=timeout)
        except BaseException:
            _end(proc)
            raise
        try:
            with open(path) as f:
                text = f.read()
        except FileNotFoundError:
            if capture:
                raise _refusal(_last_line(err), proc.returncode) from None
            # Only the checks on the program itself are left after the preflight; its line
            # went to the caller's stderr.
            shown = program[0]
            if proc.returncode == 127:
                raise FileNotFoundError(f"{shown}: command not found") from None
            raise _refusal(
                f"the tier refused to run {shown} (exit {proc.returncode}): its line is on stderr",
                proc.returncode,
            ) from None
    if report is not None:
        with open(report, "w") as f:
            f.write(text)
    return TierReport.from_json(json.loads(text), stdout=out, stderr=err)
