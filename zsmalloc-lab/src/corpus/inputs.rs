//! The corpus's inputs, generated deterministically (`zsmalloc corpus input KIND`): the same
//! kind, size and seed give the same bytes on every machine, so a corpus's manifest names a
//! program's input by the command that makes it. Random choices come from ChaCha8 (a portable
//! stream) reduced by `%`, nothing that a library's version could change.

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use rand::RngCore;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::atomic_file::AtomicFile;
use crate::error::{LabError, LabResult};

/// What `zsmalloc corpus input` makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InputKind {
    /// Lines of a key, a number and seven words (--size bytes)
    Text,
    /// An SQL script: a table of --count rows inserted, an index, aggregates
    Sql,
    /// A JSON array of --count objects
    Json,
    /// A directory (-o) of --count text files of about --size bytes each, in 40 subdirectories
    Tree,
    /// A Rust program of --count generated functions
    Rust,
    /// A C program of --count generated functions
    C,
    /// A Python script: a dict of 120k strings, a JSON round trip, a sort
    Python,
    /// A Perl script: a hash of 120k keys, sorted keys and values
    Perl,
    /// A JavaScript script: a Map of 250k objects, an array sort
    Node,
    /// A Java class (Main.java): a HashMap of 350k strings, a sort
    Java,
    /// A Tcl script: an array of 200k keys, lsort
    Tcl,
}

/// A generator's parameters (each kind reads the ones it names).
#[derive(Debug, Clone, Copy)]
pub struct InputSpec {
    pub kind: InputKind,
    pub size: u64,
    pub count: u64,
    pub seed: u64,
}

/// Writes the input `spec` describes to `out` (a directory for [`InputKind::Tree`], made if
/// missing; `-` for standard output otherwise).
pub fn generate(spec: &InputSpec, out: &Path) -> LabResult<()> {
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    let n = spec.count as usize;
    let text = match spec.kind {
        InputKind::Tree => return tree(&mut rng, out, n, spec.size),
        InputKind::Text => text(&mut rng, spec.size),
        InputKind::Sql => sql(&mut rng, n),
        InputKind::Json => json(&mut rng, n),
        InputKind::Rust => rust(&mut rng, n),
        InputKind::C => c(&mut rng, n),
        InputKind::Python => include_str!("scripts/dicts.py").to_string(),
        InputKind::Perl => include_str!("scripts/hash.pl").to_string(),
        InputKind::Node => include_str!("scripts/map.js").to_string(),
        InputKind::Java => include_str!("scripts/Main.java").to_string(),
        InputKind::Tcl => include_str!("scripts/array.tcl").to_string(),
    };
    if out == Path::new("-") {
        let mut stdout = std::io::stdout().lock();
        return stdout
            .write_all(text.as_bytes())
            .map_err(|e| LabError::runtime(format!("standard output: {e}")));
    }
    write_file(out, &text)
}

fn write_file(path: &Path, text: &str) -> LabResult<()> {
    let mut f = AtomicFile::create(path)?;
    f.write_all(text.as_bytes()).map_err(|e| LabError::io("write", path, &e))?;
    f.commit()
}

/// A number below `n` (n > 0).
fn below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    rng.next_u64() % n
}

/// `n` pseudo-words of 2 to 9 letters: text that compresses like text.
fn vocabulary(rng: &mut ChaCha8Rng, n: usize) -> Vec<String> {
    (0..n)
        .map(|_| {
            let len = 2 + below(rng, 8);
            (0..len).map(|_| char::from(b'a' + below(rng, 26) as u8)).collect()
        })
        .collect()
}

fn pick<'a>(rng: &mut ChaCha8Rng, words: &'a [String]) -> &'a str {
    &words[below(rng, words.len() as u64) as usize]
}

fn text(rng: &mut ChaCha8Rng, size: u64) -> String {
    let words = vocabulary(rng, 4000);
    let mut s = String::with_capacity(size as usize + 128);
    while (s.len() as u64) < size {
        let key = pick(rng, &words);
        let _ = write!(s, "{key} {}", below(rng, 1_000_000));
        for _ in 0..7 {
            s.push(' ');
            s.push_str(pick(rng, &words));
        }
        s.push('\n');
    }
    s
}

fn sql(rng: &mut ChaCha8Rng, rows: usize) -> String {
    let mut s = String::from(
        "PRAGMA cache_size=-65536;\nPRAGMA journal_mode=MEMORY;\n\
         CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, g INTEGER, v INTEGER);\nBEGIN;\n",
    );
    for start in (0..rows).step_by(500) {
        s.push_str("INSERT INTO t VALUES ");
        for i in start..rows.min(start + 500) {
            let sep = if i == start { "" } else { "," };
            let (name, g, v) = (below(rng, 5000), below(rng, 100), below(rng, 1_000_000));
            let _ = write!(s, "{sep}({i},'n{name}',{g},{v})");
        }
        s.push_str(";\n");
    }
    s.push_str(
        "COMMIT;\nCREATE INDEX tn ON t(name, v);\n\
         SELECT g, count(*), sum(v), min(name), max(name) FROM t GROUP BY g ORDER BY g LIMIT 5;\n\
         SELECT count(DISTINCT name), sum(v % 7) FROM t;\n\
         SELECT name, sum(v) AS s FROM t GROUP BY name ORDER BY s DESC, name LIMIT 5;\n",
    );
    s
}

fn json(rng: &mut ChaCha8Rng, items: usize) -> String {
    let words = vocabulary(rng, 2000);
    let mut s = String::from("[");
    for i in 0..items {
        let sep = if i == 0 { "" } else { ", " };
        let name = pick(rng, &words).to_string();
        let (g, v) = (below(rng, 50), below(rng, 1_000_000));
        let tags: Vec<String> = (0..3).map(|_| format!("\"{}\"", pick(rng, &words))).collect();
        let _ = write!(
            s,
            "{sep}{{\"id\": {i}, \"name\": \"{name}\", \"g\": {g}, \"v\": {v}, \"tags\": [{}]}}",
            tags.join(", ")
        );
    }
    s.push_str("]\n");
    s
}

fn tree(rng: &mut ChaCha8Rng, root: &Path, files: usize, size: u64) -> LabResult<()> {
    let words = vocabulary(rng, 3000);
    let size = size.max(2);
    for i in 0..files {
        let dir = root.join(format!("d{:02}", i % 40));
        std::fs::create_dir_all(&dir).map_err(|e| LabError::io("create", &dir, &e))?;
        let len = size / 2 + below(rng, size);
        let mut s = String::with_capacity(len as usize + 128);
        while (s.len() as u64) < len {
            for j in 0..10 {
                s.push_str(if j == 0 { "" } else { " " });
                s.push_str(pick(rng, &words));
            }
            s.push('\n');
        }
        // Plain writes: a tree is thousands of files, each synced would take minutes.
        let path = dir.join(format!("f{i:05}.txt"));
        std::fs::write(&path, s).map_err(|e| LabError::io("write", &path, &e))?;
    }
    Ok(())
}

fn rust(rng: &mut ChaCha8Rng, functions: usize) -> String {
    let mut s = String::from("use std::collections::HashMap;\n");
    for i in 0..functions {
        let (a, b) = (1 + below(rng, 999), 1 + below(rng, 999));
        let _ = writeln!(
            s,
            "fn f{i}(x: u64, m: &mut HashMap<u64, u64>) -> u64 {{\n    \
             let v: Vec<u64> = (0..{a}).map(|j| (x ^ j).wrapping_mul({b})).collect();\n    \
             let s: u64 = v.iter().filter(|&&y| y % 3 != 0).sum();\n    \
             *m.entry(s % 97).or_insert(0) += 1;\n    \
             format!(\"{{}}-{{}}\", s, x).len() as u64 + s.rotate_left({})\n}}",
            i % 63
        );
    }
    s.push_str("fn main() {\n    let mut m = HashMap::new();\n    let mut acc = 1u64;\n");
    for i in 0..functions {
        let _ = writeln!(s, "    acc = acc.wrapping_add(f{i}(acc % 1000, &mut m));");
    }
    s.push_str(
        "    let mut k: Vec<_> = m.into_iter().collect();\n    k.sort();\n    \
         println!(\"{} {:?}\", acc, &k[..k.len().min(3)]);\n}\n",
    );
    s
}

fn c(rng: &mut ChaCha8Rng, functions: usize) -> String {
    let mut s = String::from("#include <stdio.h>\n#include <string.h>\n");
    for i in 0..functions {
        let (a, b, n) = (1 + below(rng, (1 << 30) - 1), 1 + below(rng, 63), 2 + below(rng, 48));
        let _ = writeln!(
            s,
            "static unsigned long f{i}(unsigned long x) {{\n  \
             unsigned long t[{n}]; unsigned long s = 0;\n  \
             for (int i = 0; i < {n}; i++) t[i] = (x + i) * {a}UL ^ (x >> {});\n  \
             for (int i = 0; i < {n}; i++) {{ s += t[i] % 13 ? t[i] : t[(i * 7) % {n}]; \
             if (s & 1) s ^= s >> 3; else s += {b}; }}\n  \
             switch (s % 5) {{ case 0: s *= 3; break; case 1: s ^= {a}UL; break; \
             case 2: s += x; break; default: s -= {b}; }}\n  return s;\n}}",
            b % 60
        );
    }
    s.push_str("int main(void) {\n  unsigned long x = 1;\n");
    for i in 0..functions {
        let _ = writeln!(s, "  x = f{i}(x) + {i};");
    }
    s.push_str("  printf(\"%lu\\n\", x);\n  return 0;\n}\n");
    s
}
