#!/usr/bin/env python3
"""A small corpus for `zsmalloc corpus study`, made without `zsmalloc corpus record`: a few
programs of tier_program_list.py (their deterministic inputs generated there) run once untiered
for their peak RSS, then under `zsmalloc tier --budget RSS/3 --record`, and a manifest.json in
the schema of `zsmalloc corpus record` (zsmalloc-lab/src/corpus/manifest.rs). Root (the tier
needs userfaultfd).

    scripts/corpus-small.py [--zsmalloc target/release/zsmalloc] [--programs python3,perl,...]
                            [--folios python3] OUT_DIR

--folios names the programs also recorded with 16K and 64K folios (the folio question's
traces); --scale shrinks the programs' inputs for a quick corpus (the test's)."""

import argparse
import hashlib
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tier_program_list import PROGRAMS  # noqa: E402  (beside this script)

# Small programs of their own, for the test's tiny corpus (seconds, not minutes).
TINY = {
    "py-small": dict(argv=["python3", "-c",
                           "d={'k%06d' % i: 'v%d' % (i * 7919 % 100003) * 3 for i in range(40000)};"
                           "print(len(sorted(d.values())))"], stdin=None),
    "perl-small": dict(argv=["perl", "-e",
                             "my %h; $h{\"k$_\"} = ($_ * 7919) % 100003 for 0..39999;"
                             " print scalar(sort keys %h), \"\\n\";"], stdin=None),
}


def run(argv, cwd, stdin, env=None):
    """Runs argv; gives (exit status, wall seconds)."""
    t0 = time.monotonic()
    with open(stdin or os.devnull, "rb") as inp:
        p = subprocess.Popen(argv, cwd=cwd, stdin=inp, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, env=env)
        _, err = p.communicate()
    status = p.returncode
    if status != 0:
        sys.stderr.write(err.decode(errors="replace")[-2000:])
    return status, time.monotonic() - t0


def peak_rss(argv, cwd, stdin):
    """The program's peak RSS untiered. GNU time measures it: os.wait4's would count this
    script's own pages, which a forked child keeps until its exec and the kernel adds to the
    child's high-water mark (an overcount, used only without GNU time, and said so)."""
    gnu_time = "/usr/bin/time" if os.path.exists("/usr/bin/time") else None
    out = os.path.join(cwd, ".rusage")
    if gnu_time:
        argv = [gnu_time, "-f", "%M", "-o", out] + argv
    with open(stdin or os.devnull, "rb") as inp:
        p = subprocess.Popen(argv, cwd=cwd, stdin=inp, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("corpus-small: %s failed untiered" % argv[0])
    if gnu_time:
        with open(out) as f:
            kib = int(f.read().split()[-1])
        os.unlink(out)
        return kib * 1024
    sys.stderr.write("corpus-small: no GNU time: the peak RSS counts this script's pages too\n")
    return ru.ru_maxrss * 1024


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def machine(zs):
    cpu = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    version = subprocess.run([zs, "--version"], capture_output=True, text=True).stdout.strip()
    return {"kernel": platform.release(), "cpu": cpu, "cores": os.cpu_count(),
            "page_size": resource.getpagesize(), "zsmalloc": version}


def ops_of(path):
    with open(path, "rb") as f:
        return sum(1 for line in f if line[:1] not in (b"#", b"\n"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--zsmalloc", default="target/release/zsmalloc")
    ap.add_argument("--programs", default="python3,perl,sort,sqlite3")
    ap.add_argument("--folios", default="", help="programs also recorded at 16K and 64K")
    ap.add_argument("--compressor", default="lz4")
    a = ap.parse_args()
    zs = os.path.abspath(a.zsmalloc)
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    inputs = tempfile.mkdtemp(prefix="corpus-inputs-")
    by_name = {p["name"]: p for p in PROGRAMS}
    folios = [f for f in a.folios.split(",") if f]
    manifest = {"format": "zsmalloc-corpus", "version": 1, "command": " ".join(sys.argv),
                "machine": machine(zs), "traces": []}
    try:
        for name in a.programs.split(","):
            if name in TINY:
                argv, stdin, input_desc = TINY[name]["argv"], None, ""
            elif name in by_name:
                prog = by_name[name]
                if any(shutil.which(n) is None for n in prog["needs"]):
                    sys.exit("corpus-small: %s is not installed" % name)
                paths = prog["prepare"](inputs)
                argv = prog["argv"](paths)
                stdin = paths[prog["stdin"]] if prog.get("stdin") else None
                input_desc = "scripts/tier_program_list.py: %s" % prog["what"]
            else:
                sys.exit("corpus-small: unknown program %r" % name)
            run_dir = tempfile.mkdtemp(prefix="corpus-run-")
            rss = peak_rss(argv, run_dir, stdin)
            budget = max(64 << 10, rss // 3) // 4096 * 4096
            for folio in [4096] + ([16384, 65536] if name in folios else []):
                shutil.rmtree(run_dir)
                os.makedirs(run_dir)
                tag = "" if folio == 4096 else "-%dk" % (folio >> 10)
                trace = "%s%s.trace" % (name, tag)
                report = os.path.join(run_dir, "report.json")
                targv = [zs, "tier", "--budget", str(budget), "--compressor", a.compressor,
                         "--folio-size", str(folio), "--record", os.path.join(out, trace),
                         "--report", report, "--"] + argv
                sys.stderr.write("corpus-small: %s (folio %dK, budget %d of RSS %d)\n"
                                 % (name, folio >> 10, budget, rss))
                status, wall = run(targv, run_dir, stdin)
                if status != 0:
                    sys.exit("corpus-small: %s exited %d under the tier" % (name, status))
                with open(report) as f:
                    rep = json.load(f)
                path = os.path.join(out, trace)
                manifest["traces"].append({
                    "file": trace, "program": name, "argv": argv, "input": input_desc,
                    "rss_bytes": rss, "budget_bytes": budget, "budget_share": "1/3",
                    "policy": "fifo", "compressor": a.compressor, "folio_size": folio,
                    "pool_page_size": 4096, "ops": ops_of(path),
                    "trace_bytes": os.path.getsize(path), "sha256": sha256(path),
                    "wall_s": round(wall, 3), "faults": int(rep.get("faults", 0) or 0),
                    "exit_status": status})
            shutil.rmtree(run_dir)
    finally:
        shutil.rmtree(inputs, ignore_errors=True)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
