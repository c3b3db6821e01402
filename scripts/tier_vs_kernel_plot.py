#!/usr/bin/env python3
"""The plot of `tier-vs-kernel.py`: per program and share, the slowdown (wall time against the
untiered run's) and the faults on evicted pages against the kernel's swap-ins, the tier beside
the kernel, from its results.json. Run by `tier-vs-kernel.py` under a Python with matplotlib.

    tier_vs_kernel_plot.py RESULTS.json OUT.svg
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

TIER, KERNEL = "#1f77b4", "#d62728"


def label(ax, x, y, text, color, bold=False):
    ax.text(x, y, text, rotation=90, ha="center", va="bottom", fontsize=7, color=color,
            fontweight="bold" if bold else "normal")


def bars(ax, rows, tier_key, kernel_key, floor, fmt, scale=lambda r, x: x):
    """Two bars a row, from `floor` up (a log scale), each with its figure above it."""
    w = 0.38
    top = floor * 10
    for i, r in enumerate(rows):
        for dx, key, color, timed_out in ((-w / 2, tier_key, TIER, r["tier_timed_out"]),
                                          (w / 2, kernel_key, KERNEL, r["kernel_timed_out"])):
            x = i + dx
            if key == kernel_key and not r["kernel_ran"]:
                label(ax, x, floor * 1.1, "not run", color)
                continue
            v = r.get(key)
            if v is None:
                continue
            v = scale(r, v)
            top = max(top, v)
            # A run stopped before its end (OOM-killed, timed out) is pale: its figures are
            # only as far as it got.
            cut = timed_out or (key == kernel_key and bool(r["kernel_oom_kills"]))
            if v > floor:
                ax.bar(x, v - floor, w, bottom=floor, color=color, alpha=0.45 if cut else 1)
            text = fmt(v)
            if key == kernel_key and r["kernel_oom_kills"]:
                text += " OOM"
            elif timed_out:
                text += " timed out"
            label(ax, x, max(v, floor) * 1.1, text, color, bold=key == kernel_key and bool(r["kernel_oom_kills"]))
    ax.set_xticks(list(range(len(rows))))
    ax.set_xticklabels(["%s\n%s" % (r["program"], r["share"]) for r in rows], fontsize=8)
    ax.set_xlim(-0.6, len(rows) - 0.4)
    ax.set_yscale("log")
    ax.set_ylim(floor, top * 30)
    ax.grid(axis="y", which="major", alpha=0.3)


def ratios(ax, rows):
    """The tier's figures over the kernel's against the goals, where the kernel completed."""
    w = 0.38
    top = 2
    for i, r in enumerate(rows):
        judged = r["goal"] in ("pass", "fail")
        for dx, key, goal, color in ((-w / 2, "faults_ratio", 1.25, "#9467bd"),
                                     (w / 2, "wall_ratio", 1.5, "#2ca02c")):
            v = r.get(key)
            if not judged or v is None:
                continue
            ax.plot([i + dx - w / 2, i + dx + w / 2], [goal, goal], color="black", lw=1)
            if v == float("inf"):
                label(ax, i + dx, 0.15, "∞: %s ÷ 0" % "{:,}".format(int(r["tier_faults"])), color)
                continue
            top = max(top, v)
            ax.bar(i + dx, v, w, color=color)
            label(ax, i + dx, v * 1.1, "%.2f×" % v, color)
        if not judged:
            why = "tier timed out" if r["tier_timed_out"] else "kernel did not complete"
            label(ax, i, 0.15, why, "grey")
    ax.set_xticks(list(range(len(rows))))
    ax.set_xticklabels(["%s\n%s: %s" % (r["program"], r["share"], r["goal"]) for r in rows], fontsize=8)
    ax.set_xlim(-0.6, len(rows) - 0.4)
    ax.set_yscale("log")
    ax.set_ylim(0.1, top * 30)
    ax.set_ylabel("tier ÷ kernel")
    ax.set_title("Against the goals (black marks): faults ÷ swap-ins ≤ 1.25 (purple), "
                 "wall ÷ wall ≤ 1.5 (green); only where the kernel completed")
    ax.grid(axis="y", which="major", alpha=0.3)


def main():
    if len(sys.argv) != 3:
        print("usage: tier_vs_kernel_plot.py RESULTS.json OUT.svg", file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        data = json.load(f)
    rows = [r for r in data["rows"] if "skipped" not in r]
    if not rows:
        print("tier_vs_kernel_plot: no rows to draw in %s" % sys.argv[1], file=sys.stderr)
        return 2
    fig, (a1, a2, a3) = plt.subplots(3, 1, figsize=(max(8, 0.8 * len(rows) + 2), 11),
                                     constrained_layout=True, height_ratios=[3, 3, 2])
    slow = lambda r, x: x / r["untiered_wall_s"] if r["untiered_wall_s"] else None  # noqa: E731
    bars(a1, rows, "tier_wall_s", "kernel_wall_s", 0.5, lambda v: "%.1f×" % v, slow)
    a1.axhline(1, color="grey", lw=0.8)
    a1.set_ylabel("slowdown (wall ÷ untiered wall)")
    a1.set_title("Slowdown")
    bars(a2, rows, "tier_faults", "kernel_swap_ins", 0.5, lambda v: "{:,}".format(int(v)))
    a2.set_ylabel("count")
    a2.set_title("Faults on evicted pages (tier) and swap-ins (kernel)")
    ratios(a3, rows)
    from matplotlib.patches import Patch
    policy = sorted({r.get("policy") or "?" for r in rows})
    a1.legend(handles=[Patch(color=TIER, label="tier (--policy %s)" % ", ".join(policy)),
                       Patch(color=KERNEL, label="kernel (zram swap, memory cgroup)"),
                       Patch(color=KERNEL, alpha=0.45,
                             label="pale: stopped before its end (OOM-killed, timed out)")],
              loc="upper left", fontsize=8)
    fig.suptitle("The tier beside the kernel at the same budget (a share of the untiered peak RSS)",
                 fontsize=10)
    fig.savefig(sys.argv[2])
    print("tier_vs_kernel_plot: wrote %s" % sys.argv[2], file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
