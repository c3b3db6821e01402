//! The workspace's structure: in every crate (zsmalloc-core, -capi, -py, -tier, -lab) the modules
//! of each folder import each other without cycles — the top-level modules of `src/`, and the
//! files (and subfolders) of every folder below it — and no Rust file (sources, tests, benches,
//! build scripts) is one a reader has to scroll through for long.
//!
//! The graphs are read from the sources. Every file has a module path (`src/a.rs` is `a`,
//! `src/a/mod.rs` is `a`, `src/a/b.rs` is `a::b`); every path it names that starts with
//! `crate::`, `super::` or `self::` (in a `use`, grouped or not, or in code) is resolved from that
//! module path to the module it names. In the folder of module `X` the nodes are `X`'s children
//! (a file `X/b.rs` or a folder `X/b/` with everything in it), and child `a` depends on child `b`
//! when code of `a` names `X::b` — as `crate::X::b`, or `super::b` from a file directly in `X`.
//! So a file `a.rs` importing `super::b` while `b.rs` imports `super::a` is a cycle, as are
//! top-level modules naming each other through `crate::`. Comments are ignored; a folder's own
//! file (`lib.rs`, `mod.rs`, which declare and re-export) is not one of its nodes, and the
//! binaries (`src/main.rs`, `src/bin/`) are not modules here. The lab is checked by tests of its
//! own, so that its state shows apart from the rest.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Longest Rust file accepted, in lines.
const MAX_LINES: usize = 600;
/// The library crates besides the lab, by directory.
const CRATES: [&str; 6] = [
    "zsmalloc-core",
    "zsmalloc-capi",
    "zsmalloc-py",
    "zsmalloc-tier",
    "zsmalloc-codec",
    "zsmalloc-tier-preload",
];
const LAB: &str = "zsmalloc-lab";
/// Not modules of a crate's graph: its binaries.
const NOT_MODULES: [&str; 2] = ["main", "bin"];

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

/// A module path, `["a", "b"]` for `a::b`; the crate root is empty.
type ModPath = Vec<String>;

/// The module path of `file` under `src` (`None` for the binaries).
fn module_path(src: &Path, file: &Path) -> Option<ModPath> {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: ModPath =
        rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    if parts.first().is_some_and(|p| NOT_MODULES.contains(&p.trim_end_matches(".rs"))) {
        return None;
    }
    let last = parts.pop().expect("a file name");
    match last.as_str() {
        "mod.rs" => {}
        "lib.rs" if parts.is_empty() => {}
        other => parts.push(other.trim_end_matches(".rs").to_string()),
    }
    Some(parts)
}

/// `text` without `//` comments (line and doc comments; string literals holding `//` are rare
/// enough in this crate not to matter, and would only hide an edge, never invent one).
fn code_of(text: &str) -> String {
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The paths of `tree` (the text right after a `::`): `a::b` gives `[a, b]`, a group
/// `{a::b, c}` gives one path per item; a path ends at anything that is not `ident::`.
fn use_tree(tree: &str) -> Vec<ModPath> {
    let tree = tree.trim_start();
    if let Some(group) = tree.strip_prefix('{') {
        // Split the group's top-level items, then read each as a tree.
        let (mut depth, mut start, mut out) = (0usize, 0usize, Vec::new());
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    out.extend(use_tree(&group[start..i]));
                    return out;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    out.extend(use_tree(&group[start..i]));
                    start = i + 1;
                }
                _ => {}
            }
        }
        out.extend(use_tree(&group[start..]));
        return out;
    }
    let ident: String = tree.chars().take_while(|&c| is_ident_char(c)).collect();
    if ident.is_empty() {
        return vec![Vec::new()];
    }
    match tree[ident.len()..].trim_start().strip_prefix("::") {
        Some(rest) => use_tree(rest)
            .into_iter()
            .map(|mut p| {
                p.insert(0, ident.clone());
                p
            })
            .collect(),
        None => vec![vec![ident]],
    }
}

/// Every path of `code` that starts with `crate`, `super` or `self`, with that first segment
/// (`$crate::` inside macros and `foo_crate::` are not this crate's paths).
fn paths_in(code: &str) -> Vec<ModPath> {
    let mut out = Vec::new();
    for start in ["crate::", "super::", "self::"] {
        for (at, _) in code.match_indices(start) {
            let before = code[..at].trim_end();
            if code[..at].ends_with(|c: char| is_ident_char(c) || c == '$')
                || before.ends_with("::")
            {
                continue;
            }
            out.extend(use_tree(&code[at..]));
        }
    }
    out
}

/// The module `path` names from the file of module `from` (`None` when it climbs out of the
/// crate).
fn resolve(from: &[String], path: &[String]) -> Option<ModPath> {
    let (first, rest) = path.split_first()?;
    match first.as_str() {
        "crate" => Some(rest.to_vec()),
        "self" => Some(from.iter().chain(rest).cloned().collect()),
        "super" => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            let base = from.len().checked_sub(ups)?;
            Some(from[..base].iter().chain(&path[ups..]).cloned().collect())
        }
        _ => None,
    }
}

/// A crate's files by module path, each with the module paths its code names.
fn crate_files(src: &Path) -> Vec<(ModPath, BTreeSet<ModPath>)> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let Some(module) = module_path(src, &f) else { continue };
        let code = code_of(&fs::read_to_string(&f).expect("readable source"));
        let named = paths_in(&code).iter().filter_map(|p| resolve(&module, p)).collect();
        out.push((module, named));
    }
    out
}

/// The graph of the folder of module `folder`: its children, each with the children it names.
fn folder_graph(
    folder: &[String],
    files: &[(ModPath, BTreeSet<ModPath>)],
) -> BTreeMap<String, BTreeSet<String>> {
    let child = |m: &[String]| -> Option<String> {
        (m.len() > folder.len() && m.starts_with(folder)).then(|| m[folder.len()].clone())
    };
    let mut g: BTreeMap<String, BTreeSet<String>> =
        files.iter().filter_map(|(m, _)| child(m)).map(|c| (c, BTreeSet::new())).collect();
    for (m, named) in files {
        let Some(from) = child(m) else { continue };
        for to in named.iter().filter_map(|n| child(n)) {
            if to != from && g.contains_key(&to) {
                g.get_mut(&from).expect("a node").insert(to);
            }
        }
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

/// The groups of modules that reach each other (strongly connected, two or more), each with
/// one cycle through it: every cycle of `g` lies in one of them.
fn cycle_groups(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<(BTreeSet<String>, Vec<String>)> {
    let reach = |from: &str| {
        let (mut seen, mut todo) = (BTreeSet::new(), vec![from.to_string()]);
        while let Some(n) = todo.pop() {
            for d in &g[&n] {
                if seen.insert(d.clone()) {
                    todo.push(d.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> = g.keys().map(|n| (n, reach(n))).collect();
    let mut groups: Vec<(BTreeSet<String>, Vec<String>)> = Vec::new();
    for n in g.keys() {
        let group: BTreeSet<String> =
            reached[n].iter().filter(|m| reached[*m].contains(n)).cloned().collect();
        if group.len() < 2 || groups.iter().any(|(seen, _)| seen.contains(n)) {
            continue;
        }
        let inside: BTreeMap<String, BTreeSet<String>> = group
            .iter()
            .map(|m| (m.clone(), g[m].intersection(&group).cloned().collect()))
            .collect();
        groups.push((group, find_cycle(&inside).expect("a group of two or more has a cycle")));
    }
    groups
}

#[test]
fn the_parser_sees_plain_grouped_and_nested_imports() {
    let code = "use crate::a::B;\nuse crate::{c::D, e::{F, G}, h};\nlet x = crate::i::j();\n\
                $crate::k::l!(); use super::m; not_crate::n; use super::super::o::{self, P};";
    let paths: Vec<String> = paths_in(code).iter().map(|p| p.join("::")).collect();
    assert_eq!(
        paths,
        [
            "crate::a::B",
            "crate::c::D",
            "crate::e::F",
            "crate::e::G",
            "crate::h",
            "crate::i::j",
            "super::m",
            "super::super::o::self",
            "super::super::o::P"
        ]
    );
    assert_eq!(code_of("use crate::a; // crate::b\n/// crate::c"), "use crate::a; \n");
    let from: ModPath = vec!["x".into(), "y".into()];
    let path = |s: &str| s.split("::").map(String::from).collect::<ModPath>();
    assert_eq!(resolve(&from, &path("super::b::C")), Some(path("x::b::C")));
    assert_eq!(resolve(&from, &path("super::super::z")), Some(path("z")));
    assert_eq!(resolve(&from, &path("crate::x::b")), Some(path("x::b")));
    assert_eq!(resolve(&from, &path("super::super::super::w")), None);
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
    let groups = cycle_groups(&g(&[("a", "b"), ("b", "a"), ("b", "c"), ("d", "e"), ("e", "d")]));
    let sets: Vec<Vec<&str>> =
        groups.iter().map(|(s, _)| s.iter().map(String::as_str).collect()).collect();
    assert_eq!(sets, [vec!["a", "b"], vec!["d", "e"]]);
}

#[test]
fn a_file_importing_a_sibling_that_imports_it_is_a_cycle() {
    let file = |m: &str, named: &[&str]| {
        let path = |s: &str| s.split("::").map(String::from).collect::<ModPath>();
        (path(m), named.iter().map(|n| path(n)).collect::<BTreeSet<_>>())
    };
    let files = [
        file("x::a", &["x::b::F"]),
        file("x::b", &["x::a::G", "y::H"]),
        file("x::c::d", &["x::a"]),
        file("y", &[]),
    ];
    let g = folder_graph(&["x".to_string()], &files);
    assert_eq!(g.keys().map(String::as_str).collect::<Vec<_>>(), ["a", "b", "c"]);
    assert_eq!(find_cycle(&g), Some(vec!["a".into(), "b".into(), "a".into()]));
    assert_eq!(find_cycle(&folder_graph(&[], &files)), None, "x -> y only");
}

/// The import cycles of crate `name`, described, folder by folder.
fn cycles_in(name: &str) -> Vec<String> {
    let src = crate_dir(name).join("src");
    let files = crate_files(&src);
    let top: BTreeSet<&String> = files.iter().filter_map(|(m, _)| m.first()).collect();
    assert!(top.len() > 2, "found {name}'s modules: {top:?}");
    let folders: BTreeSet<ModPath> =
        files.iter().flat_map(|(m, _)| (0..m.len()).map(|n| m[..n].to_vec())).collect();
    let mut out = Vec::new();
    for folder in folders {
        let g = folder_graph(&folder, &files);
        let shown = if folder.is_empty() { "src/".to_string() } else { folder.join("/") + "/" };
        for (_, cycle) in cycle_groups(&g) {
            let edges: Vec<String> = g
                .iter()
                .map(|(m, d)| format!("  {m} -> {}", Vec::from_iter(d.clone()).join(", ")))
                .collect();
            out.push(format!(
                "{name}: import cycle in {shown}: {}\nthe graph of {shown}:\n{}",
                cycle.join(" -> "),
                edges.join("\n")
            ));
        }
    }
    out
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
fn modules_and_files_import_each_other_without_cycles() {
    let cycles: Vec<String> = CRATES.iter().flat_map(|c| cycles_in(c)).collect();
    assert!(cycles.is_empty(), "{}", cycles.join("\n"));
}

#[test]
fn no_rust_file_is_over_the_limit() {
    let long: Vec<String> = CRATES.iter().flat_map(|c| long_files_in(c)).collect();
    assert!(long.is_empty(), "over {MAX_LINES} lines: {}", long.join(", "));
}

#[test]
fn the_lab_s_modules_and_files_import_each_other_without_cycles() {
    let cycles = cycles_in(LAB);
    assert!(cycles.is_empty(), "{}", cycles.join("\n"));
}

#[test]
fn no_rust_file_of_the_lab_is_over_the_limit() {
    let long = long_files_in(LAB);
    assert!(long.is_empty(), "over {MAX_LINES} lines: {}", long.join(", "));
}
