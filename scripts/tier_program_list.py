"""The programs `tier-programs.py` runs under the tier: for each, its name, what it exercises,
the deterministic input it is given (generated here) and its command line. Imported by
`tier-programs.py`, which runs them; not a command of its own."""

import json
import os
import random
import shutil
import subprocess


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


# The interpreters' programs, shared with `zsmalloc corpus record` (which compiles them in).
SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "zsmalloc-lab", "src",
                       "corpus", "scripts")


def script(name):
    with open(os.path.join(SCRIPTS, name)) as f:
        return f.read()


PY = script("dicts.py")
PERL = script("hash.pl")
NODE = script("map.js")
JAVA = script("Main.java")
TCL = script("array.tcl")


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
