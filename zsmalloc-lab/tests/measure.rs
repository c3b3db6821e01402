//! Measurements a reviewer can rely on: CPU times with their spread, density, the minimum
//! compressed length of `dist`, peak figures, CSV columns matching JSON, and the pictures.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

mod common;

use common::svg_texts;

fn ok(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_zsmalloc")).args(args).output().expect("run");
    assert!(
        out.status.success(),
        "zsmalloc {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

fn json(args: &[&str]) -> Value {
    let text = ok(args);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("bad JSON from {args:?}: {e}\n{text}"))
}

fn scratch(name: &str) -> PathBuf {
    common::scratch(name)
}

fn s(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn compare_repeat_carries_density_and_cpu_time_spread() {
    let v = json(&["compare", "--repeat", "3", "--format", "json", "dist", "--objects", "4000"]);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        let (objects, pages) = (r["objects"].as_f64().unwrap(), r["pages"].as_f64().unwrap());
        let density = r["density"].as_f64().expect("density");
        assert!((density - objects / pages).abs() < 0.0005, "{density} vs {objects}/{pages}");
        let t = &r["cpu_time_s"];
        let (min, med, max) =
            (t["min"].as_f64().unwrap(), t["median"].as_f64().unwrap(), t["max"].as_f64().unwrap());
        assert!(0.0 < min && min <= med && med <= max, "{t}");
        assert_eq!(r["repeat"], 3);
        assert!(r["wall_time_s"].as_f64().is_some(), "wall time stays, labelled as such");
        assert!(r["deltas_pct"].get("wall_time_s").is_none(), "no wall-clock delta");
        assert!(r["utilization_pct_peak"].as_f64().is_some());
        assert!(r["density_peak"].as_f64().is_some());
    }
    // The table shows a CPU-time delta only with its spread.
    let table = ok(&["compare", "--repeat", "2", "dist", "--objects", "3000"]);
    let deltas = table.split("deltas vs classic").nth(1).expect("deltas");
    assert!(deltas.contains("cpu_time [spread]"), "{table}");
    let row = deltas.lines().find(|l| l.starts_with("heuristic")).unwrap();
    assert!(row.contains("..") && row.contains('['), "{row}");
    let once = ok(&["compare", "dist", "--objects", "3000"]);
    let deltas = once.split("deltas vs classic").nth(1).expect("deltas");
    assert!(!deltas.contains("cpu_time ["), "one run has no spread: no time delta\n{once}");
    assert!(deltas.contains("use --repeat 3"), "{once}");
    assert!(!once.contains("wall_time_s  "), "no bare wall-clock delta column");
}

#[test]
fn dist_stores_nothing_shorter_than_the_minimum() {
    let lens = |min: Option<&str>| -> (Vec<usize>, Value) {
        let trace = scratch(&format!("min-{}.trace", min.unwrap_or("default")));
        let mut args = vec!["run", "--no-time", "--format", "json", "--record", s(&trace)];
        args.extend(["dist", "--objects", "20000", "--churn", "5000"]);
        if let Some(m) = min {
            args.extend(["--min-len", m]);
        }
        let v = json(&args);
        let text = std::fs::read_to_string(&trace).unwrap();
        let lens = text
            .lines()
            .filter_map(|l| l.strip_prefix("store "))
            .map(|l| l.split_whitespace().nth(1).unwrap().parse().unwrap())
            .collect();
        (lens, v)
    };
    let (default, v) = lens(None);
    let min = v["dist"]["min_len"].as_u64().unwrap() as usize;
    assert_eq!(min, 26, "the documented default");
    assert_eq!(v["workload"]["params"]["min_len"], 26);
    assert!(default.iter().all(|&l| l >= min), "a store below {min}");
    let clipped = v["dist"]["clipped_min"].as_u64().unwrap();
    assert!(clipped > 0, "the normal distribution reaches below the minimum");
    let at_min = default.iter().filter(|&&l| l == min).count() as u64;
    assert!(clipped <= at_min, "clipped draws are stored at the minimum");
    assert_eq!(v["dist"]["draws"].as_u64().unwrap(), default.len() as u64);
    let (high, v) = lens(Some("300"));
    assert!(high.iter().all(|&l| l >= 300));
    assert!(v["dist"]["clipped_min"].as_u64().unwrap() > clipped);
    // Without a floor the draws do go below it: the check above can fail.
    let (one, _) = lens(Some("1"));
    assert!(one.iter().any(|&l| l < 26));
    let table = ok(&["run", "--no-time", "dist", "--objects", "3000"]);
    assert!(table.lines().any(|l| l.starts_with("clipped_draws ") && l.contains("--min-len 26")));
}

#[test]
fn replay_reports_the_peak_as_well_as_the_end() {
    let trace = scratch("peak.trace");
    let mut text = String::new();
    for i in 0..2000 {
        text += &format!("store {i} {}\n", 100 + (i % 7) * 50);
    }
    for i in 0..2000 {
        text += &format!("free {i}\n");
    }
    std::fs::write(&trace, text).unwrap();
    let v = json(&["replay", s(&trace), "--no-time", "--format", "json"]);
    assert_eq!(v["pages"], 0);
    assert!(v["density"].is_null(), "no pages: no density");
    assert_eq!(v["utilization_pct"].as_f64(), Some(0.0));
    let peak = v["pages_peak"].as_f64().unwrap();
    assert!(peak > 0.0);
    // After the last store that left the pool at its peak: all 2000 objects.
    let dp = v["density_peak"].as_f64().unwrap();
    assert!((dp - 2000.0 / peak).abs() < 0.0005, "{dp}");
    let up = v["utilization_pct_peak"].as_f64().unwrap();
    assert!(up > 50.0 && up < 100.0, "{up}");
    let table = ok(&["replay", s(&trace), "--no-time"]);
    assert!(table.lines().any(|l| l.starts_with("utilization_pct_peak ")));
    assert!(table.lines().any(|l| l.starts_with("density ") && l.ends_with("n/a")));
}

/// Scalar keys of a run's JSON, flattened as the CSV names them.
fn flat_keys(run: &Value) -> Vec<String> {
    let mut keys = Vec::new();
    for (k, v) in run.as_object().unwrap() {
        match (k.as_str(), v) {
            ("workload", _) => keys.push("workload".into()),
            ("config", Value::Object(m)) => keys.extend(m.keys().cloned()),
            (_, Value::Object(m)) => keys
                .extend(m.iter().filter(|(_, v)| !v.is_object()).map(|(i, _)| format!("{k}_{i}"))),
            (_, Value::Array(_)) => {}
            _ => keys.push(k.clone()),
        }
    }
    keys
}

#[test]
fn csv_columns_match_json() {
    for workload in [&["dist", "--objects", "3000"][..], &["pages", "--synthetic-pages", "500"]] {
        let mut j = vec!["run", "--format", "json"];
        j.extend(workload);
        let mut c = vec!["run", "--format", "csv"];
        c.extend(workload);
        let v = json(&j);
        let csv = ok(&c);
        let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        for k in flat_keys(&v) {
            assert!(head.contains(&k.as_str()), "CSV lacks {k}: {head:?}");
        }
        for k in ["huge_objects", "huge_stores", "density", "cpu_time_s_median", "wall_time_s"] {
            assert!(head.contains(&k), "{k}");
        }
    }
    let v = json(&["run", "--format", "json", "pages", "--synthetic-pages", "800"]);
    let c = &v["corpus"];
    let eff = c["effective_compression_ratio"].as_f64().unwrap();
    let expect = c["input_pages"].as_f64().unwrap() / v["pages"].as_f64().unwrap();
    assert!((eff - expect).abs() < 0.001, "{eff} vs {expect}");
    assert!(eff < c["compression_ratio"].as_f64().unwrap(), "pool slack lowers the ratio");
    // Class tables name their rows.
    let csv = ok(&["classes", "--format", "csv", "--max-size", "64"]);
    assert!(csv.lines().skip(1).all(|l| l.starts_with("classic,")), "{csv}");
    let csv = ok(&["classes", "--format", "csv", "--max-size", "64", "--vs", "class-delta=32"]);
    assert!(csv.lines().skip(1).any(|l| l.starts_with("class-delta=32,")), "{csv}");
}

#[test]
fn pictures_have_their_panels() {
    let cmp = scratch("cmp.svg");
    ok(&["compare", "--no-time", "--plot", s(&cmp), "kernel-test", "-n", "30"]);
    let text = svg_texts(&std::fs::read_to_string(&cmp).unwrap()).join("\n");
    for want in [
        "pages per 100 B of object size, by class",
        "merge waste (class size minus unmerged class size) per 100 B",
        "huge classes",
        "heuristic's pages minus classic's, per 100 B of object size (huge classes in",
        "heuristic's merge waste minus classic's",
        "heuristic's spanning reads minus classic's",
        "classic: page 4096, chain 10, delta 16, classic",
        "heuristic minus classic",
    ] {
        assert!(text.contains(want), "{want}");
    }
    let sweep = scratch("pareto.svg");
    ok(&[
        "compare",
        "--no-time",
        "--plot",
        s(&sweep),
        "--sweep",
        "chain-size=4..6",
        "--sweep",
        "chain-policy=classic,heuristic",
        "kernel-test",
        "-n",
        "20",
    ]);
    let text = svg_texts(&std::fs::read_to_string(&sweep).unwrap()).join("\n");
    assert!(text.contains("pages against spanning reads (Pareto"));
    assert!(text.contains("on the front") && text.contains("Pareto front"));
    assert!(text.contains("chain-policy=classic") && text.contains("chain-policy=heuristic"));
    let cls = scratch("cls.svg");
    ok(&["classes", "--page-size", "16K", "--vs", "class-delta=16", "--plot", s(&cls)]);
    let text = svg_texts(&std::fs::read_to_string(&cls).unwrap()).join("\n");
    assert!(text.contains("page 16384, chain 8, delta 64, classic"));
    assert!(text.contains("merge waste per zspage: class-delta=16 minus base"));
    assert!(text.contains("pages per zspage, sizes to "), "the zoom");
}

#[test]
fn the_default_minimum_is_the_shortest_lz4_page() {
    let (corpus, one_byte) = zsmalloc_lab::workload::pages::shortest_lz4(4096, 16384).unwrap();
    eprintln!("shortest lz4: corpus {corpus}, one-byte pages {one_byte}");
    assert_eq!(zsmalloc_lab::workload::dist::DEFAULT_MIN_LEN, one_byte, "the floor");
    assert!(corpus >= one_byte, "no page of the corpus compresses below the floor");
}

#[test]
fn per_class_rows_add_up() {
    // The pool counts spanning reads under every read mode (copy alone hands back the caller's
    // buffer, the kernel test's way of telling).
    for mode in ["map", "contiguous"] {
        let args = ["run", "--no-time", "--per-class", "--format", "json", "--read-mode", mode];
        let v = json(&[&args[..], &["kernel-test", "-n", "10"]].concat());
        let classes = v["classes"].as_array().unwrap();
        let sum: u64 = classes.iter().map(|c| c["reads_spanning"].as_u64().unwrap()).sum();
        assert!(sum > 0, "{mode}");
        assert_eq!(sum, v["reads_spanning"].as_u64().unwrap(), "{mode}");
    }
    let v =
        json(&["run", "--no-time", "--per-class", "--format", "json", "kernel-test", "-n", "40"]);
    let classes = v["classes"].as_array().unwrap();
    let sum = |k: &str| classes.iter().map(|c| c[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!(sum("reads_spanning"), v["reads_spanning"].as_u64().unwrap());
    assert_eq!(sum("reads"), v["reads"].as_u64().unwrap());
    assert!(classes.iter().all(|c| c.get("spanning_reads").is_none()), "one spanning-read count");
    assert!(sum("merge_waste") > 0, "chain 8 on 4K merges classes");
    for c in classes {
        if c["first_index"] == c["last_index"] {
            assert_eq!(c["merge_waste"], 0, "an unmerged class loses nothing to merging: {c}");
        }
    }
    let csv =
        ok(&["run", "--no-time", "--per-class", "--format", "csv", "kernel-test", "-n", "40"]);
    let head = csv.lines().next().unwrap();
    assert!(head.ends_with(",merge_waste,reads_spanning"), "{head}");
}
