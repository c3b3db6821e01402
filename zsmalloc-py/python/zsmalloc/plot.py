"""matplotlib helpers: per-class spanning and waste charts for one or more configurations.

matplotlib is imported only when a function here is called. Each function takes class rows
(``zsmalloc.class_table(...)`` or ``pool.class_stats()``) labelled by configuration, draws on
``ax`` (or a new figure) and returns the axes.

>>> import zsmalloc, zsmalloc.plot as zp
>>> tables = {p: zsmalloc.class_table(chain_size=10, chain_policy=p)
...           for p in ("classic", "heuristic")}
>>> ax = zp.spanning(tables)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["spanning", "waste", "chains", "overview", "require_matplotlib"]

Rows = Sequence[Mapping[str, Any]]


def require_matplotlib() -> Any:
    """``matplotlib.pyplot``, or ``ImportError`` with an install hint."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "zsmalloc.plot needs matplotlib: pip install matplotlib (or zsmalloc[plot])"
        ) from e
    return plt


def _axes(ax: "Axes | None") -> "Axes":
    if ax is not None:
        return ax
    plt = require_matplotlib()
    _, ax = plt.subplots(figsize=(10, 3.5))
    return ax


def _row_page_size(row: Mapping[str, Any], page_size: "int | None") -> int:
    """The page size a row's byte figures are relative to: the row's own `page_size` (rows from
    `class_table()` and `Pool.class_stats()` carry it), else the `page_size=` given. A row without
    one and no `page_size=`, or a `page_size=` that contradicts the row, is an error: a wrong page
    size silently mis-scales every percentage."""
    own = row.get("page_size")
    if own is None:
        if page_size is None:
            raise ValueError("a class row has no 'page_size'; pass page_size= for such rows")
        return int(page_size)
    if page_size is not None and int(page_size) != int(own):
        raise ValueError(f"page_size={page_size} contradicts the rows' page_size {own}")
    return int(own)


def _series(rows: Rows, key: str, page_size: "int | None") -> tuple[list[int], list[float]]:
    rows = [r for r in rows if not r.get("huge", False)]
    xs = [int(r["size"]) for r in rows]
    if key == "tail_waste_pct":
        ys = [
            100.0 * r["tail_waste"] / (r["pages_per_zspage"] * _row_page_size(r, page_size))
            for r in rows
        ]
    else:
        ys = [float(r[key]) for r in rows]
    return xs, ys


def _draw(
    tables: Mapping[str, Rows],
    key: str,
    ylabel: str,
    title: str,
    ax: "Axes | None",
    page_size: "int | None",
) -> "Axes":
    ax = _axes(ax)
    for label, rows in tables.items():
        xs, ys = _series(rows, key, page_size)
        ax.step(xs, ys, where="mid", label=str(label), linewidth=1.2)
    ax.set_xlabel("class size (bytes, header included)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend()
    return ax


def spanning(
    tables: Mapping[str, Rows], ax: "Axes | None" = None, page_size: "int | None" = None
) -> "Axes":
    """Objects per zspage that cross a page boundary, per class (non-huge classes)."""
    return _draw(
        tables, "spanning_per_zspage", "spanning objects / zspage",
        "Objects spanning two pages, per class", ax, page_size,
    )


def waste(tables: Mapping[str, Rows], ax: "Axes | None" = None, page_size: "int | None" = None) -> "Axes":
    """Tail waste of a zspage (bytes no object can use) as % of the zspage, per class."""
    return _draw(
        tables, "tail_waste_pct", "tail waste (% of zspage)",
        "Zspage tail waste, per class", ax, page_size,
    )


def chains(tables: Mapping[str, Rows], ax: "Axes | None" = None, page_size: "int | None" = None) -> "Axes":
    """Pages per zspage chosen by each configuration's chain policy, per class."""
    return _draw(
        tables, "pages_per_zspage", "pages / zspage", "Chain length, per class", ax, page_size
    )


def overview(tables: Mapping[str, Rows], page_size: "int | None" = None) -> "Figure":
    """A figure with spanning, waste and chain length stacked, sharing the size axis."""
    plt = require_matplotlib()
    fig, axes = plt.subplots(3, 1, figsize=(10, 9), sharex=True)
    spanning(tables, axes[0], page_size)
    waste(tables, axes[1], page_size)
    chains(tables, axes[2], page_size)
    for ax in axes[:-1]:
        ax.set_xlabel("")
    fig.tight_layout()
    return fig
