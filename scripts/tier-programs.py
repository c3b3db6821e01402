#!/usr/bin/env python3
"""Ordinary programs under `zsmalloc tier`, each at two budgets, against themselves untiered.

What it does: for each program of a fixed list (interpreters, compilers, compressors, a
database, version control, runtimes, text tools) found on this machine (`command -v`; a missing
one is listed as skipped, with why), it generates a deterministic input into a temporary
directory, runs the program untiered (stdout hash, exit status, wall and CPU time, peak RSS from
GNU time, else `os.wait4`), then under `zsmalloc tier --budget B --report R.json -- CMD` at budgets of 1/4 and
1/16 (`--budgets`) of that peak RSS (rounded down to a page multiple, at least 64K), and records
per run: same stdout hash and exit status, the slowdown, the report's peak resident memory
against `budget_bytes + slack_bytes`, evictions, faults, first touches, untiered bytes, state and
message, and whether anything was left behind (a `zsmalloc-tier-PID-*.stats` file of this run in
the temporary directory, `$TMPDIR` or /tmp; a process of the run still alive, found by a marker
variable in its environment or by its session). A run past `--timeout` is stopped (SIGTERM to
the program but not to the tier's command, so that its report is written; SIGKILL to its process
group 10 s later) and reported as timed out, a finding rather than an error. The program is named
as a new user would type it (pyenv's `python3` shim, rustup's `rustc`, `gcc` the driver), with no
flag but the budget and the report. Each run starts in a fresh directory; steps before it
(`javac`, a git repository's commit) and the checks after it (running the compiled program,
`git fsck`) run untiered and their output joins the hash.

Takes about 25 minutes on 2 busy CPUs for the whole list with `--timeout 150` (each program
0.3-3 s untiered, but most thrash at 1/16 and five runs reach the timeout), up to about 40 with
the default 300; generating the inputs takes under a minute. Progress goes to stderr,
one line per run.

Needs: Python 3 (standard library only), root (the tier's userfaultfd), the `zsmalloc` command
(`--zsmalloc`, default `$CARGO_TARGET_DIR/release/zsmalloc`, else the repository's
`target/release/zsmalloc`, else `zsmalloc` on PATH) with its library beside it, and the programs.

    scripts/tier-programs.py [--programs NAME,...] [--budgets 4,16] [--json OUT] [--markdown]
                             [--timeout SECS] [--keep]
"""

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

PAGE = 4096
MIN_BUDGET = 64 * 1024
MARKER = "ZSMALLOC_TIER_PROGRAMS_RUN"
TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None

from tier_program_list import PROGRAMS, write  # beside this script


# ---------------------------------------------------------------- running


def find_zsmalloc(arg):
    if arg:
        return arg
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for t in (os.environ.get("CARGO_TARGET_DIR"), os.path.join(here, "target")):
        if t and os.access(os.path.join(t, "release", "zsmalloc"), os.X_OK):
            return os.path.join(t, "release", "zsmalloc")
    return shutil.which("zsmalloc")


def stats_dirs(tmp):
    return sorted({tmp, os.environ.get("TMPDIR") or "/tmp", "/tmp"})


def leftover_stats(dirs, pid):
    found = []
    for d in dirs:
        try:
            names = os.listdir(d)
        except OSError:
            continue
        found += [os.path.join(d, n) for n in names
                  if n.startswith("zsmalloc-tier-%d-" % pid) and (n.endswith(".stats") or n.endswith(".trace"))]
    return found


def marked_processes(token, sid):
    """Processes carrying this run's marker in their environment, or in its session."""
    me = os.getpid()
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        try:
            with open("/proc/%s/environ" % d, "rb") as f:
                env = f.read()
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        fields = st[st.rfind(")") + 2:].split()
        if fields[0] == "Z":
            continue
        if (b"%s=%s\0" % (MARKER.encode(), token.encode())) in env or int(fields[3]) == sid:
            found.append(int(d))
    return found


def group_members(pgid):
    found = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    st = f.read()
            except OSError:
                continue
            if int(st[st.rfind(")") + 2:].split()[2]) == pgid:
                found.append(int(d))
    return found


def run_one(argv, cwd, stdin_path, timeout, token, tiered=False):
    """Runs argv in its own session; returns status, times, rusage, stdout hash, stderr tail."""
    env = dict(os.environ)
    env[MARKER] = token
    out_path = os.path.join(cwd, ".stdout")
    ru_path = os.path.join(cwd, ".rusage")
    # GNU time measures the peak RSS: os.wait4's would count this script's own pages, which a
    # forked child keeps until its exec and the kernel adds to the child's high-water mark.
    if TIME:
        argv = [TIME, "-f", "%x %U %S %M", "-o", ru_path] + argv
    err_path = os.path.join(cwd, ".stderr")
    with open(out_path, "wb") as out, open(err_path, "wb") as err, \
            open(stdin_path or os.devnull, "rb") as inp:
        t0 = time.monotonic()
        p = subprocess.Popen(argv, cwd=cwd, env=env, stdin=inp, stdout=out, stderr=err,
                             start_new_session=True)
        timed_out = threading.Event()
        children = set()
        later = []

        def kill():
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass

        def expire():
            # SIGTERM to the program (not to GNU time, nor to the tier's command, which then
            # reports how the run stood), SIGKILL to all of it 10 s later.
            timed_out.set()
            spare = {p.pid} | (children if tiered else set())
            for q in group_members(p.pid):
                if q not in spare:
                    try:
                        os.kill(q, signal.SIGTERM)
                    except OSError:
                        pass
            later.append(threading.Timer(10, kill))
            later[0].daemon = True
            later[0].start()

        timer = threading.Timer(timeout, expire)
        timer.start()
        # The command's pid under GNU time (the tier names its stats file after it).
        done = threading.Event()

        def watch():
            while not done.is_set():
                try:
                    with open("/proc/%d/task/%d/children" % (p.pid, p.pid)) as f:
                        children.update(int(c) for c in f.read().split())
                except (OSError, ValueError):
                    pass
                if children:
                    return
                time.sleep(0.002)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        except BaseException:
            # Interrupted (SIGINT, or SIGTERM made one): the run goes with this script.
            kill()
            os.wait4(p.pid, 0)
            for q in marked_processes(token, p.pid):
                try:
                    os.kill(q, signal.SIGKILL)
                except OSError:
                    pass
            raise
        wall = time.monotonic() - t0
        done.set()
        timer.cancel()
        for t in later:
            t.cancel()
        p.returncode = 0  # reaped by wait4
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        code = 128 - code
    cpu, maxrss = ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024
    if TIME:
        try:
            with open(ru_path) as f:
                lines = f.read().splitlines()
            os.unlink(ru_path)
            x, u, s, m = lines[-1].split()
            code, cpu, maxrss = int(x), float(u) + float(s), int(m) * 1024
            for l in lines:
                if l.startswith("Command terminated by signal"):
                    code = 128 + int(l.split()[-1])
        except (OSError, ValueError, IndexError):
            pass  # killed with it: the status and rusage of wait4
    h = hashlib.sha256()
    with open(out_path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    out_bytes = os.path.getsize(out_path)
    with open(err_path, "rb") as f:
        err_text = f.read().decode("utf-8", "replace")
    os.unlink(out_path)
    os.unlink(err_path)
    alive = marked_processes(token, p.pid)
    if alive:
        time.sleep(0.5)
        alive = marked_processes(token, p.pid)
    for q in alive:
        try:
            os.kill(q, signal.SIGKILL)
        except OSError:
            pass
    return dict(pid=p.pid, pids=sorted(children | {p.pid}), status=code, wall=wall, cpu=cpu, maxrss=maxrss, timed_out=timed_out.is_set(), hash=h,
                stdout_bytes=out_bytes, stderr=err_text, alive=alive)


def checks(prog, run, paths, h):
    for argv, cwd in (prog.get("check") or (lambda r, p: []))(run, paths):
        r = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        h.update(r.stdout)
        h.update(b"exit %d\n" % r.returncode)


def fmt_bytes(n):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= div:
            return "%.1f%s" % (n / div, unit) if n < 10 * div else "%d%s" % (round(n / div), unit)
    return "%dB" % n


def budget_for(rss, frac):
    b = rss // frac // PAGE * PAGE
    return max(b, MIN_BUDGET)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--programs", help="NAME,... (default: all)")
    ap.add_argument("--budgets", default="4,16", help="fractions of the untiered peak RSS (default 4,16)")
    ap.add_argument("--json", help="write the rows to OUT")
    ap.add_argument("--markdown", action="store_true", help="print a table for the docs on stdout")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per run (default 300)")
    ap.add_argument("--zsmalloc", help="the zsmalloc command")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    a = ap.parse_args()

    def interrupted(signum, frame):
        raise KeyboardInterrupt("signal %d" % signum)

    signal.signal(signal.SIGTERM, interrupted)
    zs = find_zsmalloc(a.zsmalloc)
    if not zs:
        sys.exit("tier-programs: no zsmalloc command (build it, or give --zsmalloc)")
    fracs = [int(x) for x in a.budgets.split(",") if x]
    names = a.programs.split(",") if a.programs else None
    progs = [p for p in PROGRAMS if names is None or p["name"] in names]
    if names:
        unknown = set(names) - {p["name"] for p in PROGRAMS}
        if unknown:
            sys.exit("tier-programs: unknown programs: %s" % ",".join(sorted(unknown)))

    tmp = tempfile.mkdtemp(prefix="tier-programs-")
    inputs = os.path.join(tmp, "inputs")
    os.makedirs(inputs)
    rows = []
    t_start = time.monotonic()
    n_run = 0
    try:
        for prog in progs:
            missing = [c for c in prog["needs"] if not shutil.which(c)]
            row = dict(program=prog["name"], what=prog["what"])
            if missing:
                row["skipped"] = "not on this machine: %s" % ", ".join(missing)
                print("tier-programs: %s skipped (%s)" % (prog["name"], row["skipped"]), file=sys.stderr)
                rows.append(row)
                continue
            try:
                paths = prog["prepare"](inputs)
            except Exception as e:  # noqa: BLE001 - a failed preparation is a skip, said why
                row["skipped"] = "preparing its input failed: %s" % e
                print("tier-programs: %s skipped (%s)" % (prog["name"], row["skipped"]), file=sys.stderr)
                rows.append(row)
                continue
            argv = prog["argv"](paths)
            row["command"] = argv
            row["resolved"] = shutil.which(argv[0])
            stdin = paths[prog["stdin"]] if prog.get("stdin") else None

            def fresh():
                nonlocal n_run
                n_run += 1
                run = os.path.join(tmp, "run-%d" % n_run)
                os.makedirs(run)
                if prog.get("setup"):
                    prog["setup"](run, paths)
                return run

            run = fresh()
            r = run_one(argv, run, stdin, a.timeout, "%d-%d" % (os.getpid(), n_run))
            checks(prog, run, paths, r["hash"])
            shutil.rmtree(run)
            base = dict(status=r["status"], wall_s=round(r["wall"], 3), cpu_s=round(r["cpu"], 3),
                        peak_rss_bytes=r["maxrss"], stdout_sha256=r["hash"].hexdigest(),
                        stdout_bytes=r["stdout_bytes"], timed_out=r["timed_out"],
                        left_processes=r["alive"])
            if r["status"] != 0:
                base["stderr_tail"] = r["stderr"][-2000:]
            row["untiered"] = base
            print("tier-programs: %-8s untiered   %6.2f s  rss %7s  status %d%s" % (
                prog["name"], r["wall"], fmt_bytes(r["maxrss"]), r["status"],
                "  TIMED OUT" if r["timed_out"] else ""), file=sys.stderr)
            row["tiered"] = []
            for frac in fracs:
                budget = budget_for(r["maxrss"], frac)
                run = fresh()
                rep = os.path.join(run, ".report.json")
                targv = [zs, "tier", "--budget", str(budget), "--report", rep, "--"] + argv
                t = run_one(targv, run, stdin, a.timeout, "%d-%d" % (os.getpid(), n_run), tiered=True)
                checks(prog, run, paths, t["hash"])
                report = {}
                try:
                    with open(rep) as f:
                        report = json.load(f)
                except (OSError, ValueError) as e:
                    report = {"state": "no report", "message": str(e)}
                left_files = [f for q in t["pids"] for f in leftover_stats(stats_dirs(tmp), q)]
                for f in left_files:
                    try:
                        os.unlink(f)
                    except OSError:
                        pass
                shutil.rmtree(run)
                peak = report.get("peak_resident_bytes")
                bound = (report.get("budget_bytes") or 0) + (report.get("slack_bytes") or 0)
                tr = dict(fraction=frac, budget_bytes=budget, status=t["status"],
                          report_exit_status=report.get("exit_status"),
                          wall_s=round(t["wall"], 3), cpu_s=round(t["cpu"], 3),
                          slowdown=round(t["wall"] / r["wall"], 2) if r["wall"] > 0 else None,
                          peak_rss_bytes=t["maxrss"], stdout_sha256=t["hash"].hexdigest(),
                          same_output=t["hash"].hexdigest() == base["stdout_sha256"],
                          same_status=t["status"] == r["status"],
                          timed_out=t["timed_out"],
                          peak_resident_bytes=peak, bound_bytes=bound,
                          within=(peak is not None and bound > 0 and peak <= bound),
                          left_stats_files=left_files, left_processes=t["alive"],
                          left_behind=bool(left_files or t["alive"]))
                for k in ("state", "message", "slack_bytes", "evictions", "faults", "first_touches",
                          "untiered_bytes", "resident_bytes", "max_pool_pages", "forks", "shared_skips",
                          "tiered_share", "note", "thrash", "elapsed_s", "handler_cpu_s"):
                    tr[k] = report.get(k)
                tr["report"] = report
                lines = [l for l in t["stderr"].splitlines() if l.strip()]
                tier_at = next((i for i, l in enumerate(lines) if l.startswith("zsmalloc tier:")), len(lines))
                tr["program_stderr_tail"] = lines[max(0, tier_at - 10):tier_at]
                tr["tier_text"] = lines[tier_at:]
                row["tiered"].append(tr)
                ok = tr["same_output"] and tr["same_status"] and tr["within"] and not tr["left_behind"] \
                    and not tr["timed_out"]
                print("tier-programs: %-8s 1/%-2d %6s %6.2f s  x%-5.2f peak %7s of %7s  ev %d  f %d  %s%s%s" % (
                    prog["name"], frac, fmt_bytes(budget), t["wall"], tr["slowdown"] or 0,
                    fmt_bytes(peak or 0), fmt_bytes(bound), tr["evictions"] or 0, tr["faults"] or 0,
                    tr["state"], "" if ok else "  FAILED: " + ", ".join(
                        w for w, bad in (("output differs", not tr["same_output"]),
                                         ("status %d against %d" % (t["status"], r["status"]), not tr["same_status"]),
                                         ("over budget+slack", not tr["within"]),
                                         ("left behind", tr["left_behind"]),
                                         ("timed out", tr["timed_out"])) if bad),
                    (" (" + tr["message"] + ")") if tr.get("message") else ""), file=sys.stderr)
            rows.append(row)
    finally:
        if a.keep:
            print("tier-programs: kept %s" % tmp, file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    total = time.monotonic() - t_start
    print("tier-programs: %d programs, %d runs in %.0f s" % (
        len([r for r in rows if "skipped" not in r]), n_run, total), file=sys.stderr)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(zsmalloc=zs, budgets=fracs, timeout=a.timeout, total_s=round(total, 1),
                           rows=rows), f, indent=1)
    if a.markdown:
        print(markdown(rows, fracs))
    bad = [r for r in rows for t in r.get("tiered", [])
           if not (t["same_output"] and t["same_status"] and t["within"] and not t["left_behind"])]
    return 1 if bad else 0


def markdown(rows, fracs):
    head = ["program", "what it exercised", "untiered: time, RSS"]
    for f in fracs:
        head += ["1/%d: budget" % f, "slowdown", "evictions / faults", "tiered", "within", "same"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if "skipped" in r:
            out.append("| %s | %s | skipped: %s |%s" % (r["program"], r["what"], r["skipped"],
                                                       " |" * (len(head) - 3)))
            continue
        u = r["untiered"]
        cells = ["`%s`" % r["program"], r["what"], "%.2f s, %s" % (u["wall_s"], fmt_bytes(u["peak_rss_bytes"]))]
        for t in r["tiered"]:
            state = "" if t["state"] == "tiering" else " (%s)" % t["state"]
            cells += [fmt_bytes(t["budget_bytes"]),
                      ("%.2f×" % t["slowdown"]) + (" (timed out)" if t["timed_out"] else ""),
                      "{:,} / {:,}".format(t["evictions"] or 0, t["faults"] or 0),
                      ("%d%%" % round(100 * t["tiered_share"]) if t.get("tiered_share") is not None else "–")
                      + (" ⚠" if t.get("thrash") else ""),
                      ("yes" if t["within"] else "no") + state,
                      ("yes" if t["same_output"] and t["same_status"] else "no")
                      + ("" if not t["left_behind"] else ", left behind")]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
