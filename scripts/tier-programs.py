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
import random
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

# ---------------------------------------------------------------- inputs


def words(rng, n):
    """n pseudo-words drawn from a fixed vocabulary (text that compresses like text)."""
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
             for _ in range(4000)]
    return rng.choices(vocab, k=n)


def text_file(path, size):
    """A text file of about `size` bytes: lines of a key, a number and words."""
    rng = random.Random(1)
    vocab = words(rng, 4000)
    lines = []
    total = 0
    i = 0
    while total < size:
        w = rng.choices(vocab, k=8)
        line = "%s %d %s\n" % (w[0], rng.randrange(1000000), " ".join(w[1:]))
        lines.append(line)
        total += len(line)
        i += 1
    with open(path, "w") as f:
        f.writelines(lines)


def shared_text(inputs, size):
    path = os.path.join(inputs, "text-%d.txt" % size)
    if not os.path.exists(path):
        text_file(path, size)
    return path


def write(path, s):
    with open(path, "w") as f:
        f.write(s)
    return path


PY = r'''
import json
d = {"k%07d" % i: ("v%d" % (i * 7919 % 1000003)) * 3 for i in range(120000)}
s = json.dumps(d)
e = json.loads(s)
assert e == d
l = sorted(e.values())
print(len(d), len(s), l[0], l[-1], l[len(l) // 2])
'''

PERL = r'''
my %h;
for my $i (0 .. 119999) { $h{"key$i"} = ($i * 7919) % 1000003; }
my ($n, $s) = (0, 0);
for my $k (sort keys %h) { $n++; $s += $h{$k}; }
my @v = sort { $a <=> $b } values %h;
print "$n $s $v[0] $v[-1] $v[$#v/2]\n";
'''

NODE = r'''
const m = new Map();
for (let i = 0; i < 250000; i++) m.set("k" + i, { v: (i * 7919) % 1000003, s: "x" + i });
let s = 0;
for (const [k, o] of m) s += o.v;
const a = Array.from(m.values(), o => o.v).sort((x, y) => x - y);
console.log(m.size, s, a[0], a[a.length - 1], a[a.length >> 1]);
'''

JAVA = r'''
import java.util.*;
public class Main {
    public static void main(String[] args) {
        HashMap<String, Integer> m = new HashMap<>();
        for (int i = 0; i < 350000; i++) m.put("k" + i, (int) ((i * 7919L) % 1000003));
        long s = 0;
        for (Map.Entry<String, Integer> e : m.entrySet()) s += e.getValue();
        ArrayList<Integer> l = new ArrayList<>(m.values());
        Collections.sort(l);
        System.out.println(m.size() + " " + s + " " + l.get(0) + " " + l.get(l.size() - 1) + " " + l.get(l.size() / 2));
    }
}
'''

TCL = r'''
array set h {}
for {set i 0} {$i < 200000} {incr i} { set h(key$i) [expr {($i * 7919) % 1000003}] }
set s 0
foreach k [lsort [array names h]] { incr s $h($k) }
set v {}
foreach k [array names h] { lappend v $h($k) }
set l [lsort -integer $v]
puts "[array size h] $s [lindex $l 0] [lindex $l end] [string length [join $l ,]]"
'''


def gen_rust(path):
    rng = random.Random(3)
    out = ["use std::collections::HashMap;"]
    n = 15
    for i in range(n):
        a, b = rng.randrange(1, 1000), rng.randrange(1, 1000)
        out.append(
            "fn f%d(x: u64, m: &mut HashMap<u64, u64>) -> u64 {\n"
            "    let v: Vec<u64> = (0..%d).map(|j| (x ^ j).wrapping_mul(%d)).collect();\n"
            "    let s: u64 = v.iter().filter(|&&y| y %% 3 != 0).sum();\n"
            "    *m.entry(s %% 97).or_insert(0) += 1;\n"
            "    format!(\"{}-{}\", s, x).len() as u64 + s.rotate_left(%d)\n}" % (i, a, b, i % 63))
    body = "\n".join("    acc = acc.wrapping_add(f%d(acc %% 1000, &mut m));" % i for i in range(n))
    out.append("fn main() {\n    let mut m = HashMap::new();\n    let mut acc = 1u64;\n%s\n"
               "    let mut k: Vec<_> = m.into_iter().collect();\n    k.sort();\n"
               "    println!(\"{} {:?}\", acc, &k[..3]);\n}" % body)
    write(path, "\n".join(out) + "\n")


def gen_c(path):
    rng = random.Random(4)
    out = ["#include <stdio.h>", "#include <string.h>"]
    n = 70
    for i in range(n):
        a, b, c = rng.randrange(1, 1 << 30), rng.randrange(1, 64), rng.randrange(2, 50)
        out.append(
            "static unsigned long f%d(unsigned long x) {\n"
            "  unsigned long t[%d]; unsigned long s = 0;\n"
            "  for (int i = 0; i < %d; i++) t[i] = (x + i) * %dUL ^ (x >> %d);\n"
            "  for (int i = 0; i < %d; i++) { s += t[i] %% 13 ? t[i] : t[(i * 7) %% %d]; if (s & 1) s ^= s >> 3; else s += %d; }\n"
            "  switch (s %% 5) { case 0: s *= 3; break; case 1: s ^= %dUL; break; case 2: s += x; break; default: s -= %d; }\n"
            "  return s;\n}" % (i, c, c, a, b % 60, c, c, b, a, b))
    calls = "\n".join("  x = f%d(x) + %d;" % (i, i) for i in range(n))
    out.append("int main(void) {\n  unsigned long x = 1;\n%s\n  printf(\"%%lu\\n\", x);\n  return 0;\n}" % calls)
    write(path, "\n".join(out) + "\n")


def gen_sql(path):
    rng = random.Random(5)
    rows = []
    for i in range(200000):
        rows.append("(%d,'%s',%d,%d)" % (i, "n%d" % rng.randrange(5000), rng.randrange(100),
                                         rng.randrange(1000000)))
    sql = ["PRAGMA cache_size=-65536;", "PRAGMA journal_mode=MEMORY;",
           "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, g INTEGER, v INTEGER);", "BEGIN;"]
    for j in range(0, len(rows), 500):
        sql.append("INSERT INTO t VALUES %s;" % ",".join(rows[j:j + 500]))
    sql += ["COMMIT;", "CREATE INDEX tn ON t(name, v);",
            "SELECT g, count(*), sum(v), min(name), max(name) FROM t GROUP BY g ORDER BY g LIMIT 5;",
            "SELECT count(DISTINCT name), sum(v % 7) FROM t;",
            "SELECT name, sum(v) AS s FROM t GROUP BY name ORDER BY s DESC, name LIMIT 5;"]
    write(path, "\n".join(sql) + "\n")


def gen_json(path):
    rng = random.Random(6)
    vocab = words(rng, 2000)
    items = []
    for i in range(25000):
        items.append({"id": i, "name": rng.choice(vocab), "g": rng.randrange(50),
                      "v": rng.randrange(1000000), "tags": rng.choices(vocab, k=3)})
    with open(path, "w") as f:
        json.dump(items, f)


def gen_tree(root, nfiles, size, seed):
    rng = random.Random(seed)
    vocab = words(rng, 3000)
    for i in range(nfiles):
        d = os.path.join(root, "d%02d" % (i % 40))
        os.makedirs(d, exist_ok=True)
        n = rng.randrange(size // 2, size * 3 // 2)
        text = []
        total = 0
        while total < n:
            line = " ".join(rng.choices(vocab, k=10)) + "\n"
            text.append(line)
            total += len(line)
        write(os.path.join(d, "f%05d.txt" % i), "".join(text))


AWK = ("{s[$1] += $2; for (i = 3; i <= NF; i++) w[$i]++; t += length($0)} "
       "END {for (k in s) c++; for (k in w) d++; print NR, c, d, t, s[\"the\"] + 0}")

GIT_ENV = {"GIT_AUTHOR_NAME": "tier", "GIT_AUTHOR_EMAIL": "tier@example.org",
           "GIT_COMMITTER_NAME": "tier", "GIT_COMMITTER_EMAIL": "tier@example.org",
           "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}

# ---------------------------------------------------------------- programs
#
# Each program: name, needs (commands that must exist), what it exercises, prepare(inputs) ->
# dict of paths (run once), setup(run_dir, paths) (untiered, before each run), argv(paths),
# stdin (key of paths or None), check(run_dir, paths) -> argv lists run untiered after each run,
# their stdout added to the hash.


def sh(argv, cwd, env=None):
    e = dict(os.environ)
    if env:
        e.update(env)
    subprocess.run(argv, cwd=cwd, env=e, check=True, stdout=subprocess.DEVNULL)


def p_python(inp):
    return {"script": write(os.path.join(inp, "dicts.py"), PY)}


def p_perl(inp):
    return {"script": write(os.path.join(inp, "hash.pl"), PERL)}


def p_node(inp):
    return {"script": write(os.path.join(inp, "map.js"), NODE)}


def p_java(inp):
    d = os.path.join(inp, "java")
    os.makedirs(d, exist_ok=True)
    write(os.path.join(d, "Main.java"), JAVA)
    sh(["javac", "-d", d, os.path.join(d, "Main.java")], d)
    return {"classes": d}


def p_tcl(inp):
    return {"script": write(os.path.join(inp, "array.tcl"), TCL)}


def p_rust(inp):
    p = os.path.join(inp, "gen.rs")
    gen_rust(p)
    return {"src": p}


def p_c(inp):
    p = os.path.join(inp, "gen.c")
    gen_c(p)
    return {"src": p}


def p_text(size):
    return lambda inp: {"text": shared_text(inp, size)}


def p_sql(inp):
    p = os.path.join(inp, "rows.sql")
    gen_sql(p)
    return {"sql": p}


def p_json(inp):
    p = os.path.join(inp, "items.json")
    gen_json(p)
    return {"json": p}


def p_tree(name, nfiles, size):
    def prepare(inp):
        root = os.path.join(inp, name)
        if not os.path.exists(root):
            gen_tree(root, nfiles, size, 7)
        return {"tree": root}
    return prepare


def s_git(run, paths):
    shutil.copytree(paths["tree"], os.path.join(run, "repo"))
    repo = os.path.join(run, "repo")
    for argv in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"],
                 ["git", "commit", "-q", "-m", "generated files"]):
        sh(argv, repo, GIT_ENV)
    # A second commit changing a tenth of the files, so that gc finds deltas.
    rng = random.Random(8)
    for dirpath, _, files in sorted(os.walk(repo)):
        if ".git" in dirpath:
            continue
        for f in sorted(files):
            if rng.random() < 0.1:
                with open(os.path.join(dirpath, f), "a") as fh:
                    fh.write("changed %d\n" % rng.randrange(1 << 30))
    sh(["git", "commit", "-q", "-a", "-m", "changes"], repo, GIT_ENV)


def c_git(run, paths):
    repo = os.path.join(run, "repo")
    return [(["git", "rev-parse", "HEAD"], repo), (["git", "fsck", "--full", "--no-progress"], repo),
            (["sh", "-c", "git count-objects -v | grep -E '^(count|in-pack|packs)'"], repo)]


def c_bin(name):
    return lambda run, paths: [([os.path.join(run, name)], run)]


PROGRAMS = [
    dict(name="python3", needs=["python3"], what="dict of 120k strings, json round trip, sort",
         prepare=p_python, argv=lambda p: ["python3", p["script"]]),
    dict(name="perl", needs=["perl"], what="hash of 120k keys, sorted keys and values",
         prepare=p_perl, argv=lambda p: ["perl", p["script"]]),
    dict(name="node", needs=["node"], what="Map of 250k objects, array sort (V8 heap, threads)",
         prepare=p_node, argv=lambda p: ["node", p["script"]]),
    dict(name="java", needs=["java", "javac"], what="HashMap of 350k strings, sort (JVM heap, GC threads)",
         prepare=p_java, argv=lambda p: ["java", "-cp", p["classes"], "Main"]),
    dict(name="tclsh", needs=["tclsh"], what="array of 200k keys, lsort",
         prepare=p_tcl, argv=lambda p: ["tclsh", p["script"]]),
    dict(name="rustc", needs=["rustc"], what="compiling a generated 15-function program (-O)",
         prepare=p_rust, argv=lambda p: ["rustc", "-O", "--edition", "2021", p["src"], "-o", "gen"],
         check=c_bin("gen")),
    dict(name="gcc", needs=["gcc"], what="compiling a generated 70-function C file (-O2)",
         prepare=p_c, argv=lambda p: ["gcc", "-O2", p["src"], "-o", "gen"], check=c_bin("gen")),
    dict(name="gzip", needs=["gzip"], what="gzip -6 of 24 MB of text (static buffers)",
         prepare=p_text(24 << 20), argv=lambda p: ["gzip", "-6", "-c", p["text"]]),
    dict(name="bzip2", needs=["bzip2"], what="bzip2 -9 of 8 MB of text",
         prepare=p_text(8 << 20), argv=lambda p: ["bzip2", "-9", "-c", p["text"]]),
    dict(name="xz", needs=["xz"], what="xz -1 -T2 of 4 MB of text (two threads)",
         prepare=p_text(4 << 20), argv=lambda p: ["xz", "-1", "-T2", "-c", p["text"]]),
    dict(name="zstd", needs=["zstd"], what="zstd -10 of 12 MB of text",
         prepare=p_text(12 << 20), argv=lambda p: ["zstd", "-10", "-q", "-c", p["text"]]),
    dict(name="lz4", needs=["lz4"], what="lz4 -9 of 24 MB of text",
         prepare=p_text(24 << 20), argv=lambda p: ["lz4", "-9", "-q", "-c", p["text"]]),
    dict(name="sort", needs=["sort"], what="sort -S 256M of 24 MB of text (its buffer, threads)",
         prepare=p_text(24 << 20), argv=lambda p: ["sort", "-S", "256M", p["text"]]),
    dict(name="mawk", needs=["mawk"], what="summing a column by key, counting words, over 24 MB",
         prepare=p_text(24 << 20), argv=lambda p: ["mawk", AWK, p["text"]]),
    dict(name="gawk", needs=["gawk"], what="summing a column by key, counting words, over 24 MB",
         prepare=p_text(24 << 20), argv=lambda p: ["gawk", AWK, p["text"]]),
    dict(name="sqlite3", needs=["sqlite3"], what="200k rows inserted, an index, aggregates (64 MB cache)",
         prepare=p_sql, argv=lambda p: ["sqlite3", "db.sqlite"], stdin="sql"),
    dict(name="git", needs=["git"], what="git gc of a repository of 1500 files (9 MB) in 2 commits",
         prepare=p_tree("tree-git", 1500, 6000), setup=s_git, argv=lambda p: ["git", "-C", "repo", "gc", "--quiet"],
         check=c_git),
    dict(name="jq", needs=["jq"], what="group_by and sums over a 2.5 MB JSON array",
         prepare=p_json,
         argv=lambda p: ["jq", "-c", "group_by(.g) | map({g: .[0].g, n: length, s: (map(.v) | add), "
                         "t: (map(.tags[]) | unique | length)})", p["json"]]),
    dict(name="tar", needs=["tar"], what="tar of 5000 files (50 MB) to stdout (small buffers)",
         prepare=p_tree("tree-tar", 5000, 10000),
         argv=lambda p: ["tar", "-C", p["tree"], "--sort=name", "--mtime=@0", "--owner=0", "--group=0",
                         "--numeric-owner", "-cf", "-", "."]),
]

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
