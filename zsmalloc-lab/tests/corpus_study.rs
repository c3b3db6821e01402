//! `zsmalloc corpus study` on a tiny corpus the test records itself: two short programs (a
//! python3 and a perl one-liner) run by `zsmalloc corpus record` with 4K, 16K and 64K folios,
//! and the manifest it writes. Needs root (or access to
//! /dev/userfaultfd), python3 and perl; skips with the reason printed otherwise.

mod common;
mod tier_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{s, scratch, usage_error, zsmalloc};
use serde_json::Value;
use tier_support::{skip, userfaultfd};

/// The tiny corpus, recorded; `None` (with the reason printed) where it cannot be.
fn tiny_corpus(test: &str) -> Option<PathBuf> {
    if let Err(why) = userfaultfd() {
        skip(test, &format!("the tier cannot run here: {why}"));
        return None;
    }
    for tool in ["python3", "perl"] {
        if Command::new(tool).arg("-v").output().is_err() {
            skip(test, &format!("{tool} is not installed"));
            return None;
        }
    }
    let dir = scratch(test);
    std::fs::create_dir_all(&dir).expect("the test's directory");
    let list = dir.join("programs.json");
    std::fs::write(&list, TINY_PROGRAMS).expect("write the program list");
    let corpus = dir.join("corpus");
    let out = zsmalloc(&[
        "corpus",
        "record",
        "--programs",
        s(&list),
        "--folio-sizes",
        "4K,16K,64K",
        "-o",
        s(&corpus),
    ]);
    assert!(out.status.success(), "corpus record: {}", String::from_utf8_lossy(&out.stderr));
    Some(corpus)
}

/// Two programs of a few seconds between them (the notebook's and the Python tests' too).
const TINY_PROGRAMS: &str = include_str!("../../examples/corpus/tiny-programs.json");

/// The trace file of `program` at `folio` bytes, as the corpus's manifest names it.
fn trace_file(dir: &Path, program: &str, folio: u64) -> PathBuf {
    let m: Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    let t = m["traces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["program"] == program && t["folio_size"] == folio)
        .unwrap_or_else(|| panic!("no {program} trace at {folio} in {m}"));
    dir.join(t["file"].as_str().unwrap())
}

fn rows<'a>(report: &'a Value, path: &[&str]) -> &'a Vec<Value> {
    let v = path.iter().fold(report, |v, k| &v[k]);
    v.as_array().unwrap_or_else(|| panic!("{path:?} is not a list: {v}"))
}

fn int(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("{key} of {v}"))
}

/// Operations of one kind in a text trace.
/// The trace's operations of kind `op`, as `zsmalloc trace info` counts them.
fn count_ops(trace: &Path, op: &str) -> u64 {
    let out = zsmalloc(&["trace", "info", s(trace), "--format", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let info: Value = serde_json::from_slice(&out.stdout).unwrap();
    int(&info["operations"], op)
}

#[test]
fn a_tiny_corpus_studied() {
    let Some(dir) = tiny_corpus("a_tiny_corpus_studied") else { return };
    let out = zsmalloc(&["corpus", "study", s(&dir), "--format", "json", "--free-ops", "2000"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // Progress on stderr, one line a step.
    assert!(stderr.contains("corpus study: ") && stderr.contains("chains: py-small"), "{stderr}");
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows(&r, &["traces"]).len(), 6, "two programs at 4K, 16K and 64K");

    // Chain length: every configuration replays the same reads; classic is the reference.
    let chains = rows(&r, &["chains"]);
    assert_eq!(chains.len(), 2 * 16);
    for trace in ["py-small", "perl-small"] {
        let mine: Vec<&Value> = chains.iter().filter(|c| c["trace"] == trace).collect();
        assert_eq!(mine[0]["config"], "classic");
        assert_eq!(mine[0]["peak_vs_classic_pct"], 0.0);
        let reads = count_ops(&trace_file(&dir, trace, 4096), "read");
        assert!(mine.iter().all(|c| int(c, "reads") == reads), "{mine:?}");
        assert!(mine.iter().all(|c| int(c, "pages_peak") >= int(c, "pages")));
    }

    // Leave-one-out: each trace tested on the table learnt on the other, measuring on its
    // prefix exactly what its per-class figures predicted.
    let loo = rows(&r, &["leave_one_out", "rows"]);
    assert_eq!(loo.len(), 2);
    for row in loo {
        assert_eq!(int(row, "trained_on"), 1);
        assert_eq!(row["predicted_exactly"], true, "{row}");
    }

    // Folios: the 16K and 64K traces beside the 4K one, each read back whole per fault.
    let folios = rows(&r, &["folios", "rows"]);
    let sizes: Vec<u64> = folios.iter().map(|f| int(f, "folio_size")).collect();
    assert_eq!(sizes, [4096, 16384, 65536, 4096, 16384, 65536]);
    for f in folios {
        let trace = trace_file(&dir, f["program"].as_str().unwrap(), int(f, "folio_size"));
        assert_eq!(int(f, "reads"), count_ops(&trace, "read"));
    }

    // zblock never spans pages; the backends replay the same trace.
    let backends = rows(&r, &["backends"]);
    assert_eq!(backends.len(), 2 * 3);
    for b in backends.iter().filter(|b| b["backend"] == "zblock") {
        assert_eq!(int(b, "reads_spanning"), 0);
    }
    // Mainline refuses nothing; what zblock refuses is counted.
    for b in backends.iter().filter(|b| b["backend"] == "zsmalloc") {
        assert_eq!(int(b, "stores_refused"), 0, "{b}");
    }

    // Frees: every free of the trace counted, pairs one fewer than the known frees.
    for f in rows(&r, &["frees"]) {
        let trace = trace_file(&dir, f["trace"].as_str().unwrap(), 4096);
        assert_eq!(int(f, "frees"), count_ops(&trace, "free"));
        assert_eq!(int(f, "pairs"), int(f, "frees") - int(f, "unknown") - 1, "{f}");
        let same = f["same_class_pct"].as_f64().unwrap();
        assert!(same <= f["within_1_pct"].as_f64().unwrap());
    }

    // The free cost: four cases measured, the parts the code cannot split named.
    assert_eq!(rows(&r, &["free_cost", "rows"]).len(), 4);
    assert_eq!(rows(&r, &["free_cost", "cannot_split"]).len(), 2);
}

#[test]
fn the_tables_and_csv_name_every_question() {
    let Some(dir) = tiny_corpus("the_tables_and_csv_name_every_question") else { return };
    let args = ["corpus", "study", s(&dir), "--free-ops", "0", "--quiet", "--format"];
    let table = common::ok(&[&args[..], &["table"]].concat());
    for title in ["Chain length", "learnt on the other traces", "Folios", "zblock", "Frees"] {
        assert!(table.contains(title), "{title}: {table}");
    }
    assert!(table.contains("not measured (--free-ops 0)"), "{table}");
    let csv = common::ok(&[&args[..], &["csv"]].concat());
    for name in ["traces", "chains", "leave_one_out", "folios", "backends", "frees"] {
        assert!(csv.lines().any(|l| l.starts_with(&format!("{name},"))), "{name}: {csv}");
    }
}

#[test]
fn not_a_corpus_is_refused_in_one_line() {
    let empty = scratch("not-a-corpus");
    std::fs::create_dir_all(&empty).unwrap();
    let err = usage_error(&["corpus", "study", s(&empty)]);
    assert!(err.contains("manifest.json"), "{err}");
    let missing = scratch("no-such-dir");
    assert!(usage_error(&["corpus", "study", s(&missing)]).contains("not a corpus directory"));
    std::fs::write(empty.join("manifest.json"), "{\"format\": \"zsmalloc-corpus\"}").unwrap();
    assert!(usage_error(&["corpus", "study", s(&empty)]).contains("not a corpus manifest"));
}
