#!/usr/bin/env python3
"""Ordinary programs under the tier and under the kernel's zram swap at the same budget.

What it does: for each program (by default python3, perl, tclsh, sqlite3, sort and mawk of
`tier_program_list.py`, with its deterministic inputs, generated into a temporary directory), it
runs the program untiered once (its wall time and peak RSS, as `tier-programs.py` measures
them), then for each share (`--shares`, default 1/3,1/8 of that peak RSS, a page multiple, at
least 64K) runs

    zsmalloc tier --budget B [--policy P] --vs-kernel [--yes] --report R.json -- PROGRAM ...

in a fresh directory: the program under the tier, then again under the kernel's own zram swap
in a memory cgroup at the same budget (docs/TIER.md, "Beside the kernel": the private zram
device, its swap and the cgroup are made and taken down by that command, not by this script).
From each report it takes the tier's wall time, faults on evicted pages (of them, those served
from readahead) and first touches, evictions, and the kernel's wall time, swap-ins, swap-outs
and OOM kills, and checks the goal on every run where the kernel completed: the tier's faults at
most 1.25 times the kernel's swap-ins, its wall time at most 1.5 times the kernel's.

`--policy` is passed to the tier as given; without it the tier runs its default policy, and the
table names the policy each report says it ran.

Before each run it waits, at most 120 s, for no swap to be on and for the memory pressure's
10-second average to fall under 2% (the previous kernel run leaves its own stalls there, and
`--vs-kernel` refuses a machine above 5% unless `--yes`).

Each run of a program (untiered, under the tier, under the kernel) starts in a copy of its
prepared directory with its stdin opened anew: `sh -c 'd=$(mktemp -d ...) && cp -a seed/. "$d" &&
cd "$d" && exec "$@" < "$0"' STDIN PROGRAM ...` (the tier follows the exec), so that the kernel
run finds neither sqlite3's database as the tier run left it nor its input read to the end.

Each phase (the tier's run, then the kernel's) has `--timeout` seconds: past it the program
gets SIGTERM and, 10 s later, SIGKILL; the `zsmalloc` command never does, so that it writes its
report and takes its swap, device and cgroup down (a tier run ended so gets no kernel run). If
the command is still there 60 s later it gets SIGTERM, on which it takes them down too.
SIGINT or SIGTERM to this script sends the command SIGTERM and ends it (exit status 130),
having written nothing.

Writes into `--out DIR`: `results.json` (every row, with both reports whole), `results.csv`
(the table's figures), `table.md` (the table for docs/TIER.md) and `plot.svg` (slowdown and
faults per program, the tier beside the kernel). The plot needs matplotlib: when the Python
running this script has none, the script makes a virtual environment `.venv-plot/` in the
repository and installs matplotlib into it from PyPI (once), and draws with it.
`--redraw DIR` writes DIR's results.csv, table.md and plot.svg again from its results.json.

Needs: root (the tier's userfaultfd; the kernel side's zram, swap and cgroup), Python 3, the
`zsmalloc` command (`--zsmalloc`; found as `tier-programs.py` finds it) with its library beside
it, the programs. Progress on stderr, a line per run. About 15 minutes for the default six
programs on 2 busy CPUs (load average 14-16) with `--timeout 120`, one run reaching it.

    scripts/tier-vs-kernel.py [--programs NAME,...] [--shares 1/3,1/8] [--policy NAME]
                              [--out DIR] [--timeout SECS] [--yes] [--zsmalloc PATH]
    scripts/tier-vs-kernel.py --redraw DIR
"""

import argparse
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from fractions import Fraction

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from tier_program_list import PROGRAMS  # noqa: E402  (beside this script)
import tier_vs_kernel_table as table  # noqa: E402

DEFAULT_PROGRAMS = "python3,perl,tclsh,sqlite3,sort,mawk"
PAGE = 4096
MIN_BUDGET = 64 * 1024
KERNEL_STARTS = "--vs-kernel: a swap on a new zram device"
# Run in the run's directory as `sh -c EACH_RUN STDIN PROGRAM ARGS...`.
EACH_RUN = 'd=$(mktemp -d "$PWD/each.XXXXXX") && cp -a seed/. "$d" && cd "$d" && exec "$@" < "$0"'


def tier_programs():
    """`tier-programs.py` as a module: its untiered run and its way to find `zsmalloc`."""
    spec = importlib.util.spec_from_file_location("tier_programs", os.path.join(HERE, "tier-programs.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def refuse(msg):
    print("tier-vs-kernel: %s" % msg, file=sys.stderr)
    sys.exit(2)


def parse_shares(text):
    shares = []
    for part in text.split(","):
        try:
            f = Fraction(part.strip())
        except (ValueError, ZeroDivisionError):
            refuse("--shares: %r is not a fraction (e.g. 1/3,1/8)" % part)
        if not 0 < f <= 1:
            refuse("--shares: %s is not in (0, 1]" % part)
        shares.append(f)
    return shares


def budget_for(rss, share):
    return max(int(rss * share) // PAGE * PAGE, MIN_BUDGET)


def session_members(sid):
    found = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    st = f.read()
            except OSError:
                continue
            fields = st[st.rfind(")") + 2:].split()
            if fields[0] != "Z" and int(fields[3]) == sid:
                found.append(int(d))
    return found


def signal_all(pids, sig):
    for q in pids:
        try:
            os.kill(q, sig)
        except OSError:
            pass


def memory_pressure():
    try:
        with open("/proc/pressure/memory") as f:
            some = f.readline().split()
        return float(dict(x.split("=") for x in some[1:])["avg10"])
    except (OSError, ValueError, KeyError, IndexError):
        return 0.0


def swapping():
    try:
        with open("/proc/swaps") as f:
            return len(f.read().splitlines()) > 1
    except OSError:
        return False


def settle(limit=120):
    """Waits (at most `limit` s) for the machine to look as `--vs-kernel` wants it: no swap on,
    /proc/pressure/memory's `some avg10` under 2% (it refuses above 5). The kernel run before
    this one stalled its own cgroup, and that stays in the 10-second average for a while."""
    t0 = time.monotonic()
    while (memory_pressure() >= 2 or swapping()) and time.monotonic() - t0 < limit:
        time.sleep(1)
    return time.monotonic() - t0


def run_vs_kernel(argv, cwd, stdin_path, timeout):
    """`argv` (the zsmalloc command) in its own session, each phase bounded by `timeout`.
    Returns its exit status, wall time, which phases timed out, and its stderr."""
    err_path = os.path.join(cwd, ".stderr")
    with open(err_path, "wb") as err, open(stdin_path or os.devnull, "rb") as inp:
        p = subprocess.Popen(argv, cwd=cwd, stdin=inp, stdout=subprocess.DEVNULL, stderr=err,
                             start_new_session=True)
    timed_out = {"tier": False, "kernel": False}
    done = threading.Event()

    def phase():
        try:
            with open(err_path, "rb") as f:
                return "kernel" if KERNEL_STARTS.encode() in f.read() else "tier"
        except OSError:
            return "tier"

    def watch():
        current, deadline, kill_at, last_resort = "tier", time.monotonic() + timeout, None, None
        while not done.wait(0.2):
            now, ph = time.monotonic(), phase()
            if ph != current:
                current, deadline, kill_at, last_resort = ph, now + timeout, None, None
            others = [q for q in session_members(p.pid) if q != p.pid]
            if deadline and now >= deadline:
                # The program, never the command: it reports, and takes its swap down.
                timed_out[current] = True
                signal_all(others, signal.SIGTERM)
                deadline, kill_at, last_resort = None, now + 10, now + 70
            if kill_at and now >= kill_at:
                signal_all(others, signal.SIGKILL)
                kill_at = None
            if last_resort and now >= last_resort:
                signal_all([p.pid], signal.SIGTERM)
                last_resort = None

    t0 = time.monotonic()
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        status = p.wait()
    except BaseException:
        # Interrupted: the command takes down what it made on SIGTERM.
        signal_all([p.pid], signal.SIGTERM)
        p.wait()
        raise
    finally:
        done.set()
        watcher.join()
    wall = time.monotonic() - t0
    with open(err_path, "rb") as f:
        stderr = f.read().decode("utf-8", "replace")
    os.unlink(err_path)
    left = session_members(p.pid)
    signal_all(left, signal.SIGKILL)
    return dict(status=status, wall=wall, timed_out=timed_out, stderr=stderr, left=left)


def prepare_inputs(prog, inputs):
    missing = [c for c in prog["needs"] if not shutil.which(c)]
    if missing:
        return None, "not on this machine: %s" % ", ".join(missing)
    try:
        return prog["prepare"](inputs), None
    except Exception as e:  # noqa: BLE001 - a failed preparation is a skip, said why
        return None, "preparing its input failed: %s" % e


def measure(a, zs, tp, progs, shares, tmp):
    inputs = os.path.join(tmp, "inputs")
    os.makedirs(inputs)
    rows, n = [], 0
    for prog in progs:
        paths, why = prepare_inputs(prog, inputs)
        if why:
            print("tier-vs-kernel: %s skipped (%s)" % (prog["name"], why), file=sys.stderr)
            rows.append(dict(program=prog["name"], what=prog["what"], skipped=why))
            continue
        argv = prog["argv"](paths)
        stdin = paths[prog["stdin"]] if prog.get("stdin") else None
        # Both runs of `--vs-kernel` share its working directory and stdin: what the tier run
        # wrote (sqlite3's database) would be there for the kernel's, and a file read to its end
        # at its end. A shell gives each run a copy of the prepared directory and the input
        # opened anew, then executes the program (the tier follows the exec).
        argv = ["sh", "-c", EACH_RUN, stdin or os.devnull] + argv
        stdin = None

        def fresh():
            nonlocal n
            n += 1
            run = os.path.join(tmp, "run-%d" % n)
            os.makedirs(os.path.join(run, "seed"))
            if prog.get("setup"):
                prog["setup"](os.path.join(run, "seed"), paths)
            return run

        run = fresh()
        u = tp.run_one(argv, run, stdin, a.timeout, "%d-%d" % (os.getpid(), n))
        shutil.rmtree(run)
        untiered = dict(wall_s=round(u["wall"], 3), peak_rss_bytes=u["maxrss"], status=u["status"],
                        timed_out=u["timed_out"])
        print("tier-vs-kernel: %-8s untiered  %6.2f s  rss %s  status %d" % (
            prog["name"], u["wall"], tp.fmt_bytes(u["maxrss"]), u["status"]), file=sys.stderr)
        for share in shares:
            budget = budget_for(u["maxrss"], share)
            run = fresh()
            rep = os.path.join(run, ".report.json")
            cmd = [zs, "tier", "--budget", str(budget)] + (["--policy", a.policy] if a.policy else []) \
                + ["--vs-kernel"] + (["--yes"] if a.yes else []) + ["--report", rep, "--"] + argv
            waited = settle()
            if waited >= 1:
                print("tier-vs-kernel: waited %.0f s for the machine to settle (memory pressure "
                      "%.1f%%, swap %s)" % (waited, memory_pressure(), "on" if swapping() else "off"),
                      file=sys.stderr)
            r = run_vs_kernel(cmd, run, stdin, a.timeout)
            try:
                with open(rep) as f:
                    report = json.load(f)
            except (OSError, ValueError) as e:
                report = {"state": "no report", "message": str(e)}
            shutil.rmtree(run)
            lines = [l for l in r["stderr"].splitlines() if l.startswith("zsmalloc tier")]
            row = table.row(prog, share, budget, untiered, report, r, lines)
            rows.append(row)
            print("tier-vs-kernel: " + table.progress_line(row), file=sys.stderr)
    return rows


def venv_python():
    """A Python with matplotlib: this one, else the repository's `.venv-plot/` (made once)."""
    if importlib.util.find_spec("matplotlib"):
        return sys.executable
    venv = os.path.join(os.path.dirname(HERE), ".venv-plot")
    py = os.path.join(venv, "bin", "python")
    probe = [py, "-c", "import matplotlib"]
    if os.access(py, os.X_OK) and subprocess.run(probe, stderr=subprocess.DEVNULL).returncode == 0:
        return py
    print("tier-vs-kernel: no matplotlib here: installing it into %s" % venv, file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    subprocess.run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "matplotlib>=3.7"], check=True)
    return py


def draw(out):
    py = venv_python()
    plot = os.path.join(HERE, "tier_vs_kernel_plot.py")
    return subprocess.run([py, plot, os.path.join(out, "results.json"), os.path.join(out, "plot.svg")]).returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--programs", default=DEFAULT_PROGRAMS, help="NAME,... of tier_program_list.py "
                    "(default %s)" % DEFAULT_PROGRAMS)
    ap.add_argument("--shares", default="1/3,1/8", help="budgets as shares of the untiered peak RSS "
                    "(default 1/3,1/8)")
    ap.add_argument("--policy", help="the tier's --policy (default: the tier's own default)")
    ap.add_argument("--out", default="tier-vs-kernel", help="directory of the outputs (default "
                    "tier-vs-kernel)")
    ap.add_argument("--timeout", type=float, default=120, help="seconds per phase of a run "
                    "(default 120)")
    ap.add_argument("--yes", action="store_true", help="passed to --vs-kernel: run on a machine "
                    "that already swaps or is under memory pressure")
    ap.add_argument("--zsmalloc", help="the zsmalloc command")
    ap.add_argument("--redraw", metavar="DIR", help="write DIR's table and plot again from its "
                    "results.json, and run nothing")
    a = ap.parse_args()
    if a.redraw:
        try:
            with open(os.path.join(a.redraw, "results.json")) as f:
                data = json.load(f)
            rows = data.pop("rows")
        except (OSError, ValueError, KeyError) as e:
            refuse("--redraw: %s" % e)
        table.write_all(a.redraw, data, rows)
        return draw(a.redraw)
    if os.geteuid() != 0:
        refuse("needs root (the tier's userfaultfd; the kernel side's zram device, swap and "
               "memory cgroup)")
    if a.timeout <= 0:
        refuse("--timeout: %s is not a positive number of seconds" % a.timeout)
    shares = parse_shares(a.shares)
    names = [x for x in a.programs.split(",") if x]
    known = {p["name"]: p for p in PROGRAMS}
    unknown = [x for x in names if x not in known]
    if unknown:
        refuse("--programs: unknown %s (known: %s)" % (",".join(unknown), ",".join(known)))
    tp = tier_programs()
    zs = tp.find_zsmalloc(a.zsmalloc)
    if not zs:
        refuse("no zsmalloc command (build it, or give --zsmalloc)")
    if a.policy:
        # Asked of the tier itself (`true` under it), so that a new policy needs nothing here.
        r = subprocess.run([zs, "tier", "--policy", a.policy, "--", "true"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            first = (r.stderr.strip().splitlines() or ["exit status %d" % r.returncode])[0]
            refuse("--policy %s: the tier refuses it: %s" % (a.policy, first))
    try:
        os.makedirs(a.out, exist_ok=True)
    except OSError as e:
        refuse("--out: %s" % e)

    def interrupted(signum, frame):
        raise KeyboardInterrupt("signal %d" % signum)

    signal.signal(signal.SIGTERM, interrupted)
    tmp = tempfile.mkdtemp(prefix="tier-vs-kernel-")
    t0 = time.monotonic()
    try:
        rows = measure(a, zs, tp, [known[x] for x in names], shares, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    meta = dict(zsmalloc=zs, policy=a.policy, shares=[str(s) for s in shares], timeout=a.timeout,
                total_s=round(time.monotonic() - t0, 1), load_average=os.getloadavg())
    table.write_all(a.out, meta, rows)
    print("tier-vs-kernel: %d runs in %.0f s; wrote %s/results.json, results.csv, table.md" % (
        len([r for r in rows if "skipped" not in r]), meta["total_s"], a.out), file=sys.stderr)
    if draw(a.out) != 0:
        print("tier-vs-kernel: the plot was not drawn", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        # The run under way was stopped (its command takes its swap down); nothing written.
        print("tier-vs-kernel: interrupted", file=sys.stderr)
        sys.exit(130)
