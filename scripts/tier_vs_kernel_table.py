"""The rows of `tier-vs-kernel.py`: one per program and share, made once from the report of
`zsmalloc tier --vs-kernel` ([`row`]), and written from those rows as JSON (whole), CSV (their
figures) and a Markdown table (its cells formatted from the same fields). Imported by
`tier-vs-kernel.py`; not a command."""

import csv
import json
import os

FAULTS_GOAL = 1.25
WALL_GOAL = 1.5


def _num(v, key):
    x = (v or {}).get(key)
    return x if isinstance(x, (int, float)) else None


def _ratio(a, b):
    if a is None or b is None:
        return None
    if b == 0:
        return 0.0 if a == 0 else float("inf")
    return a / b


def kernel_completed(k):
    """The kernel run ran to the program's own end: not refused, killed or stopped."""
    return bool(k) and not k.get("killed") and not k.get("timed_out") and k.get("exit_status") == 0


def row(prog, share, budget, untiered, report, run, lines):
    """One program at one share: the figures the table shows, and both reports whole."""
    k = report.get("kernel") or {}
    t_wall, k_wall = _num(report, "elapsed_s"), _num(k, "elapsed_s")
    faults, ins = _num(report, "faults"), _num(k, "swap_ins")
    tier_ok = report.get("exit_status") == 0 and not run["timed_out"]["tier"]
    r = dict(program=prog["name"], what=prog["what"], share="%d/%d" % (share.numerator, share.denominator),
             budget_bytes=budget, untiered_wall_s=untiered["wall_s"],
             untiered_rss_bytes=untiered["peak_rss_bytes"], policy=report.get("policy"),
             tier_wall_s=t_wall, tier_faults=faults, tier_readahead_hits=_num(report, "readahead_hits"),
             tier_first_touches=_num(report, "first_touches"), tier_evictions=_num(report, "evictions"),
             tier_exit_status=report.get("exit_status"), tier_timed_out=run["timed_out"]["tier"],
             tier_state=report.get("state"),
             kernel_ran=bool(k), kernel_wall_s=k_wall, kernel_swap_ins=ins,
             kernel_swap_ins_from=k.get("swap_ins_from"), kernel_swap_outs=_num(k, "swap_outs"),
             kernel_oom_kills=_num(k, "oom_kill"), kernel_killed=k.get("killed"),
             kernel_exit_status=k.get("exit_status"),
             kernel_timed_out=run["timed_out"]["kernel"] or bool(k.get("timed_out")),
             faults_ratio=_ratio(faults, ins), wall_ratio=_ratio(t_wall, k_wall),
             command_status=run["status"], left_processes=run["left"])
    if not k:
        why = [l for l in lines if "--vs-kernel" in l and KERNEL_NOT_RUN_HINT not in l]
        r["kernel_not_run"] = why[-1] if why else "no kernel run"
    if report.get("exit_status") is None:
        r["goal"] = "not run"  # refused before the tier ran: the reason is in kernel_not_run
    elif r["tier_timed_out"]:
        r["goal"] = "tier timed out"  # and so no kernel run: nothing to compare
    elif kernel_completed(k) and not r["kernel_timed_out"]:
        r["goal"] = "pass" if tier_ok and r["faults_ratio"] <= FAULTS_GOAL and r["wall_ratio"] <= WALL_GOAL \
            else "fail"
    else:
        r["goal"] = "n/a"  # the kernel did not complete: no goal
    r["tier_report"], r["kernel_report"] = report, k
    return r


# The line the command prints before the kernel run: not a reason for its absence.
KERNEL_NOT_RUN_HINT = "is machine-wide while the kernel run lasts"


def fmt_bytes(n):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= div:
            return "%.1f%s" % (n / div, unit) if n < 10 * div else "%d%s" % (round(n / div), unit)
    return "%dB" % n


def _int(x):
    return "–" if x is None else "{:,}".format(int(x))


def _secs(x, timed_out=False):
    return "–" if x is None else "%.2f s%s" % (x, " (timed out)" if timed_out else "")


def _times(x, goal, judged=True):
    """The ratio, marked ✗ past its goal where the goal applies (the kernel completed)."""
    if x is None:
        return "–"
    if x == float("inf"):
        return "∞" + (" ✗" if judged else "")
    return "%.2f×%s" % (x, " ✗" if judged and x > goal else "")


def _judged(r):
    return r["goal"] in ("pass", "fail")


def _kernel_killed(r):
    if not r["kernel_ran"]:
        return "not run (tier timed out)" if r["tier_timed_out"] else "not run"
    if r["kernel_oom_kills"]:
        return "**OOM** (%d)" % r["kernel_oom_kills"]
    if r["kernel_timed_out"]:
        return "timed out"
    return r["kernel_killed"] or "no"


def _tier_faults(r):
    s = _int(r["tier_faults"])
    if r["tier_readahead_hits"]:
        s += " (%s readahead)" % _int(r["tier_readahead_hits"])
    return s


# (heading, the cell of a row): the Markdown table and the CSV's columns both come from these.
COLUMNS = [
    ("program", lambda r: "`%s`" % r["program"]),
    ("untiered: wall, RSS", lambda r: "%.2f s, %s" % (r["untiered_wall_s"], fmt_bytes(r["untiered_rss_bytes"]))),
    ("share: budget", lambda r: "%s: %s" % (r["share"], fmt_bytes(r["budget_bytes"]))),
    ("tier: wall", lambda r: _secs(r["tier_wall_s"], r["tier_timed_out"])),
    ("faults on evicted pages", _tier_faults),
    ("first touches", lambda r: _int(r["tier_first_touches"])),
    ("evictions", lambda r: _int(r["tier_evictions"])),
    ("kernel: wall", lambda r: _secs(r["kernel_wall_s"], r["kernel_timed_out"])),
    ("swap-ins", lambda r: _int(r["kernel_swap_ins"])),
    ("swap-outs", lambda r: _int(r["kernel_swap_outs"])),
    ("killed", _kernel_killed),
    ("faults ÷ swap-ins (≤ 1.25)", lambda r: _times(r["faults_ratio"], FAULTS_GOAL, _judged(r))),
    ("wall ÷ wall (≤ 1.5)", lambda r: _times(r["wall_ratio"], WALL_GOAL, _judged(r))),
    ("goal", lambda r: r["goal"]),
]

CSV_FIELDS = ["program", "share", "budget_bytes", "policy", "untiered_wall_s", "untiered_rss_bytes",
              "tier_wall_s", "tier_faults", "tier_readahead_hits", "tier_first_touches", "tier_evictions",
              "tier_exit_status", "tier_timed_out", "kernel_ran", "kernel_wall_s", "kernel_swap_ins",
              "kernel_swap_ins_from", "kernel_swap_outs", "kernel_oom_kills", "kernel_killed",
              "kernel_exit_status", "kernel_timed_out", "faults_ratio", "wall_ratio", "goal"]


def markdown(rows):
    out = ["| " + " | ".join(h for h, _ in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        if "skipped" in r:
            out.append("| `%s` | skipped: %s |%s" % (r["program"], r["skipped"], " |" * (len(COLUMNS) - 2)))
            continue
        out.append("| " + " | ".join(cell(r) for _, cell in COLUMNS) + " |")
    notes = sorted({r["kernel_swap_ins_from"] for r in rows if r.get("kernel_swap_ins_from")})
    if notes == ["machine-wide"]:
        out.append("")
        out.append("Swap-ins and swap-outs: /proc/vmstat's `pswpin`/`pswpout` over each kernel run, "
                   "machine-wide (this kernel's cgroup `memory.stat` has none).")
    return "\n".join(out) + "\n"


def progress_line(r):
    return "%-8s %s %7s  tier %s  %s faults  |  kernel %s  %s swap-ins  %s  |  %s %s  %s" % (
        r["program"], r["share"], fmt_bytes(r["budget_bytes"]), _secs(r["tier_wall_s"], r["tier_timed_out"]),
        _int(r["tier_faults"]), _secs(r["kernel_wall_s"], r["kernel_timed_out"]), _int(r["kernel_swap_ins"]),
        _kernel_killed(r), _times(r["faults_ratio"], FAULTS_GOAL, _judged(r)),
        _times(r["wall_ratio"], WALL_GOAL, _judged(r)),
        r["goal"] + ("" if r["kernel_ran"] else " (%s)" % r.get("kernel_not_run")))


def write_all(out, meta, rows):
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(dict(meta, rows=rows), f, indent=1)
    with open(os.path.join(out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            if "skipped" not in r:
                w.writerow(r)
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(markdown(rows))
