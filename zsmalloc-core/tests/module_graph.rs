//! The workspace's structure: in every crate (zsmalloc-core, -capi, -py, -lab) the top-level
//! modules import each other without cycles, and no Rust file (sources, tests, benches, build
//! scripts) is one a reader has to scroll through for long.
//!
//! The graph is read from the sources: a module is a file `src/x.rs` or a directory `src/x/`
//! (with its files), and `x` depends on `y` when code of `x` names `crate::y` (in a `use` or a
//! path) or, from a file directly under `src/`, `super::y`. Comments are ignored; the crate root
//! (`lib.rs`, which declares and re-exports) and the binaries under `src/bin` are not modules
//! here. The lab is checked by tests of its own, so that its state shows apart from the rest.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Longest Rust file accepted, in lines.
const MAX_LINES: usize = 600;
/// The library crates besides the lab, by directory.
const CRATES: [&str; 3] = ["zsmalloc-core", "zsmalloc-capi", "zsmalloc-py"];
const LAB: &str = "zsmalloc-lab";
/// Not modules of a crate's graph: its root and its binaries.
const NOT_MODULES: [&str; 3] = ["lib", "main", "bin"];

/// The directory of the workspace member `name`.
fn crate_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name);
    assert!(dir.join("Cargo.toml").is_file(), "no crate at {}", dir.display());
    dir
}

/// Every `.rs` file under `dir`, recursively (none if `dir` does not exist).
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A crate's source files by top-level module (its root and binaries left out).
fn modules(src: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut by_module: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(src).expect("under src");
        let first = rel.components().next().expect("a path").as_os_str().to_string_lossy();
        let name = first.trim_end_matches(".rs").to_string();
        if NOT_MODULES.contains(&name.as_str()) {
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
fn graph(
    src: &Path,
    modules: &BTreeMap<String, Vec<PathBuf>>,
) -> BTreeMap<String, BTreeSet<String>> {
    let mut g = BTreeMap::new();
    for (name, files) in modules {
        let mut deps = BTreeSet::new();
        for f in files {
            let code = code_of(&fs::read_to_string(f).expect("readable source"));
            let mut named = names_after(&code, "crate::");
            // `super::` names a sibling top-level module only from a file directly under src/.
            if f.parent() == Some(src) {
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

/// The import cycle of crate `name`, described, if it has one.
fn cycle_in(name: &str) -> Option<String> {
    let src = crate_dir(name).join("src");
    let modules = modules(&src);
    assert!(modules.len() > 2, "found {name}'s modules: {:?}", modules.keys());
    let g = graph(&src, &modules);
    let cycle = find_cycle(&g)?;
    let edges: Vec<String> = g
        .iter()
        .map(|(m, d)| format!("  {m} -> {}", Vec::from_iter(d.clone()).join(", ")))
        .collect();
    Some(format!("{name}: import cycle {}\nthe graph:\n{}", cycle.join(" -> "), edges.join("\n")))
}

/// Crate `name`'s Rust files over `MAX_LINES` lines, with their lengths.
fn long_files_in(name: &str) -> Vec<String> {
    let dir = crate_dir(name);
    let mut files = Vec::new();
    for sub in ["src", "tests", "benches", "examples"] {
        rust_files(&dir.join(sub), &mut files);
    }
    rust_files_at_top(&dir, &mut files);
    assert!(!files.is_empty(), "found {name}'s files");
    let mut long = Vec::new();
    for f in files {
        let lines = fs::read_to_string(&f).expect("readable source").lines().count();
        if lines > MAX_LINES {
            let rel = f.strip_prefix(&dir).expect("in the crate").display().to_string();
            long.push(format!("{name}/{rel} ({lines} lines)"));
        }
    }
    long
}

/// The `.rs` files directly in `dir` (a build script).
fn rust_files_at_top(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("readable crate directory") {
        let path = entry.expect("directory entry").path();
        if path.is_file() && path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn top_level_modules_import_each_other_without_cycles() {
    let cycles: Vec<String> = CRATES.iter().filter_map(|c| cycle_in(c)).collect();
    assert!(cycles.is_empty(), "{}", cycles.join("\n"));
}

#[test]
fn no_rust_file_is_over_the_limit() {
    let long: Vec<String> = CRATES.iter().flat_map(|c| long_files_in(c)).collect();
    assert!(long.is_empty(), "over {MAX_LINES} lines: {}", long.join(", "));
}

#[test]
fn the_lab_s_modules_import_each_other_without_cycles() {
    if let Some(cycle) = cycle_in(LAB) {
        panic!("{cycle}");
    }
}

#[test]
fn no_rust_file_of_the_lab_is_over_the_limit() {
    let long = long_files_in(LAB);
    assert!(long.is_empty(), "over {MAX_LINES} lines: {}", long.join(", "));
}
