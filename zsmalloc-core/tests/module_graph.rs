//! The core's structure: its top-level modules import each other without cycles, and no source
//! file is one a reader has to scroll through for long.
//!
//! The graph is read from the sources: a module is a file `src/x.rs` or a directory `src/x/`
//! (with its files), and `x` depends on `y` when code of `x` names `crate::y` (in a `use` or a
//! path) or, from a file directly under `src/`, `super::y`. Comments are ignored; the crate root
//! (`lib.rs`, which only declares and re-exports) is not a module here. `src/lab` and `src/bin`
//! are not the allocator and are skipped while they are still in this crate.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Longest core source file accepted, in lines.
const MAX_LINES: usize = 800;
/// Not part of the allocator's module graph.
const SKIPPED: [&str; 2] = ["lab", "bin"];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("readable source directory") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The core's source files by top-level module (lab, bin and the crate root left out).
fn modules() -> BTreeMap<String, Vec<PathBuf>> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut by_module: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(src()).expect("under src");
        let first = rel.components().next().expect("a path").as_os_str().to_string_lossy();
        let name = first.trim_end_matches(".rs").to_string();
        if name == "lib" || SKIPPED.contains(&name.as_str()) {
            continue;
        }
        by_module.entry(name).or_default().push(f);
    }
    by_module
}

/// `text` without `//` comments (line and doc comments; string literals holding `//` are rare
/// enough in this crate not to matter, and would only hide an edge, never invent one).
fn code_of(text: &str) -> String {
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// The identifiers that follow `prefix` in `code` (`crate::` -> `x` of `crate::x`, including the
/// names inside `crate::{x, y::z}`).
fn names_after(code: &str, prefix: &str) -> BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect()
    };
    let mut names = BTreeSet::new();
    for (at, _) in code.match_indices(prefix) {
        // `$crate::` inside macros and `foo_crate::` are not this crate's paths.
        if code[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let rest = &code[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // A group: the first identifier of each top-level item.
            let mut depth = 0;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if c.is_whitespace() => {}
                    _ if item_start && depth == 0 => {
                        names.insert(ident(&group[i..]));
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            names.insert(ident(rest));
        }
    }
    names
}

/// Module -> the other modules its code names.
fn graph(modules: &BTreeMap<String, Vec<PathBuf>>) -> BTreeMap<String, BTreeSet<String>> {
    let mut g = BTreeMap::new();
    for (name, files) in modules {
        let mut deps = BTreeSet::new();
        for f in files {
            let code = code_of(&fs::read_to_string(f).expect("readable source"));
            let mut named = names_after(&code, "crate::");
            // `super::` names a sibling top-level module only from a file directly under src/.
            if f.parent() == Some(src().as_path()) {
                named.extend(names_after(&code, "super::"));
            }
            deps.extend(named.into_iter().filter(|d| d != name && modules.contains_key(d)));
        }
        g.insert(name.clone(), deps);
    }
    g
}

/// A cycle of `g`, if it has one (depth-first search, the cycle as a path that returns to its
/// first module).
fn find_cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        marks: &mut BTreeMap<String, Mark>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        marks.insert(n.to_string(), Mark::Open);
        path.push(n.to_string());
        for d in &g[n] {
            match marks[d.as_str()] {
                Mark::Open => {
                    let from =
                        path.iter().position(|p| p == d).expect("open modules are on the path");
                    let mut cycle = path[from..].to_vec();
                    cycle.push(d.clone());
                    return Some(cycle);
                }
                Mark::New => {
                    if let Some(c) = visit(d, g, marks, path) {
                        return Some(c);
                    }
                }
                Mark::Done => {}
            }
        }
        path.pop();
        marks.insert(n.to_string(), Mark::Done);
        None
    }
    let mut marks: BTreeMap<String, Mark> = g.keys().map(|k| (k.clone(), Mark::New)).collect();
    for n in g.keys() {
        if marks[n.as_str()] == Mark::New {
            if let Some(c) = visit(n, g, &mut marks, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn the_parser_sees_plain_grouped_and_nested_imports() {
    let code = "use crate::a::B;\nuse crate::{c::D, e::{F, G}, h};\nlet x = crate::i::j();\n\
                $crate::k::l!(); use super::m; not_crate::n;";
    let crate_names: Vec<_> = names_after(code, "crate::").into_iter().collect();
    assert_eq!(crate_names, ["a", "c", "e", "h", "i"]);
    assert_eq!(names_after(code, "super::").into_iter().collect::<Vec<_>>(), ["m"]);
    assert_eq!(code_of("use crate::a; // crate::b\n/// crate::c"), "use crate::a; \n");
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let g = |edges: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in edges {
            g.entry(a.to_string()).or_default().insert(b.to_string());
            g.entry(b.to_string()).or_default();
        }
        g
    };
    assert_eq!(find_cycle(&g(&[("a", "b"), ("b", "c"), ("a", "c")])), None);
    assert_eq!(
        find_cycle(&g(&[("a", "b"), ("b", "c"), ("c", "a")])),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
}

#[test]
fn top_level_modules_import_each_other_without_cycles() {
    let modules = modules();
    assert!(modules.len() > 5, "found the core's modules: {:?}", modules.keys());
    let g = graph(&modules);
    if let Some(cycle) = find_cycle(&g) {
        let edges: Vec<String> = g
            .iter()
            .map(|(m, d)| format!("  {m} -> {}", Vec::from_iter(d.clone()).join(", ")))
            .collect();
        panic!("import cycle: {}\nthe graph:\n{}", cycle.join(" -> "), edges.join("\n"));
    }
}

#[test]
fn no_core_source_file_is_over_the_limit() {
    let mut long = Vec::new();
    for files in modules().values() {
        for f in files {
            let lines = fs::read_to_string(f).expect("readable source").lines().count();
            if lines > MAX_LINES {
                long.push(format!("{} ({lines} lines)", f.display()));
            }
        }
    }
    assert!(long.is_empty(), "over {MAX_LINES} lines: {}", long.join(", "));
}
