"""pandas helpers: class statistics, class tables and results as DataFrames.

pandas is imported only when a function here is called, so ``import zsmalloc.frames`` works
without it; the call then raises ``ImportError`` saying what to install.

>>> import zsmalloc, zsmalloc.frames as zf
>>> pool = zsmalloc.Pool(chain_size=10)
>>> df = zf.class_table(chain_size=10)          # one row per size class
>>> res = zf.results({"classic": zsmalloc.kernel_test(pool)})
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping

from . import _zsmalloc

if TYPE_CHECKING:  # pragma: no cover
    import pandas as _pd  # type: ignore[import-untyped]

    from ._zsmalloc import Pool

__all__ = ["class_stats", "class_table", "stats", "results", "require_pandas"]


def require_pandas() -> Any:
    """The pandas module, or ``ImportError`` with an install hint."""
    try:
        import pandas
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "zsmalloc.frames needs pandas: pip install pandas (or zsmalloc[frames])"
        ) from e
    return pandas


def _with_layout_columns(df: "_pd.DataFrame", page_size: int) -> "_pd.DataFrame":
    """Adds derived per-class columns: zspage bytes and waste as a percentage of them."""
    if len(df):
        df["zspage_bytes"] = df["pages_per_zspage"] * page_size
        df["tail_waste_pct"] = 100.0 * df["tail_waste"] / df["zspage_bytes"]
    return df


def class_stats(pool: "Pool") -> "_pd.DataFrame":
    """``pool.class_stats()`` as a DataFrame indexed by class index, with the 12 fullness
    groups as columns ``fullness_0 .. fullness_11`` and ``tail_waste_pct`` added."""
    pd = require_pandas()
    rows: list[dict[str, Any]] = []
    for stats in pool.class_stats():
        r: dict[str, Any] = dict(stats)
        for g, count in enumerate(r.pop("fullness")):
            r[f"fullness_{g}"] = count
        rows.append(r)
    df = pd.DataFrame(rows)
    if len(df):
        df = df.set_index("index")
    return _with_layout_columns(df, pool.page_size)


def class_table(*, by_index: bool = False, **config: Any) -> "_pd.DataFrame":
    """``zsmalloc.class_table(**config)`` as a DataFrame indexed by class index.

    With ``by_index=True`` there is one row per class *index* (merged indices included), each
    with its ``logical_size`` (``32 + index * delta``) and the class that serves it, so tables of
    two configurations with the same page size and delta line up row by row. An explicit
    ``class_table`` has no spacing and merges nothing: its classes are its indices, and each
    ``logical_size`` is the class's size.
    """
    pd = require_pandas()
    rows: list[dict[str, Any]] = [dict(r) for r in _zsmalloc.class_table(**config)]
    page = config.get("page_size", 4096)
    if by_index:
        delta = config.get("class_delta") or page >> 8
        explicit = config.get("class_table") is not None
        expanded = []
        for r in rows:
            for i in range(r["first_index"], r["last_index"] + 1):
                logical = r["size"] if explicit else min(32 + i * delta, page)
                expanded.append({"index": i, "logical_size": logical, **r})
                expanded[-1]["index"] = i
        expanded.sort(key=lambda r: r["index"])
        rows = expanded
    df = pd.DataFrame(rows)
    if len(df):
        df = df.set_index("index")
    return _with_layout_columns(df, page)


def stats(pools: "Pool | Mapping[str, Pool]") -> "_pd.DataFrame":
    """``pool.stats()`` as a one-row DataFrame, or one row per named pool."""
    pd = require_pandas()
    if isinstance(pools, Mapping):
        return pd.DataFrame({name: p.stats() for name, p in pools.items()}).T
    return pd.DataFrame([pools.stats()], index=[pools.name])


def results(
    runs: "Mapping[str, Mapping[str, Any]] | Iterable[Mapping[str, Any]]",
    base: str | None = None,
) -> "_pd.DataFrame":
    """Result dicts (e.g. of :func:`zsmalloc.kernel_test`) as rows of a DataFrame.

    ``runs`` maps a label to a result, or is a list of results (labelled 0, 1, ...). With
    ``base``, a ``Δ% vs <base>`` row is added for each other run: the percentage change of every
    numeric column, rounded to one decimal like the kernel's reports.
    """
    pd = require_pandas()
    labelled: Mapping[Any, Mapping[str, Any]] = (
        runs if isinstance(runs, Mapping) else dict(enumerate(runs))
    )
    df = pd.DataFrame([dict(v) for v in labelled.values()], index=list(labelled.keys()))
    if base is not None:
        # Integer counts and one-decimal deltas side by side: keep each cell as it is.
        df = df.astype(object)
        ref = df.loc[base]
        for label in list(df.index):
            if label == base:
                continue
            row = {}
            for col in df.columns:
                a, b = ref[col], df.loc[label, col]
                try:
                    row[col] = round(100.0 * (float(b) - float(a)) / float(a), 1) if a else None
                except (TypeError, ValueError):
                    row[col] = None
            df.loc[f"Δ% {label} vs {base}"] = row
    return df
