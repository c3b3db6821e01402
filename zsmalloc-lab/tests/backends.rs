//! Backends from the command line: zsmalloc, zblock and malloc side by side on `dist` and
//! `pages` (table, JSON, CSV, plot), zblock's block table, refused settings, and the cost study
//! with a backend that refuses lengths.

use serde_json::Value;

mod common;

use common::{json, ok, scratch, zsmalloc};

const THREE: &str = "zsmalloc,zblock,malloc";

#[test]
fn compare_runs_the_three_backends_side_by_side_on_dist_and_pages() {
    for workload in [&["dist", "--objects", "3000"][..], &["pages", "--synthetic-pages", "600"][..]]
    {
        let mut args = vec!["compare", "--backend", THREE, "--no-time", "--format", "json"];
        args.extend_from_slice(workload);
        let v = json(&args);
        let runs = v["runs"].as_array().unwrap();
        let labels: Vec<&str> = runs.iter().map(|r| r["label"].as_str().unwrap()).collect();
        assert_eq!(labels, ["zsmalloc", "zblock", "malloc"], "{workload:?}");
        for r in runs {
            assert_eq!(r["config"]["backend"], r["label"]);
            assert!(r["pages"].as_u64().unwrap() > 0);
        }
        assert_eq!(runs[0]["objects"], runs[2]["objects"], "malloc stores every length");
        for r in &runs[1..] {
            assert_eq!(r["reads_spanning"], 0, "{}: nothing spans", r["label"]);
            assert_eq!(r["read_copy_bytes"], 0);
            assert!(r["deltas_pct"]["pages"].is_number(), "deltas against zsmalloc");
        }
        assert!(runs[0]["reads_spanning"].as_u64().unwrap() > 0);

        let mut csv_args = vec!["compare", "--backend", THREE, "--no-time", "--format", "csv"];
        csv_args.extend_from_slice(workload);
        let csv = ok(&csv_args);
        assert_eq!(csv.lines().filter(|l| !l.trim().is_empty()).count(), 4, "{csv}");
        assert!(csv.contains("zblock") && csv.contains("malloc"));

        let svg = scratch("backends.svg");
        let mut table_args = vec!["compare", "--backend", THREE, "--no-time", "--plot"];
        table_args.push(svg.to_str().unwrap());
        table_args.extend_from_slice(workload);
        let table = ok(&table_args);
        assert!(table.contains("deltas vs zsmalloc"), "{table}");
        assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
    }
}

#[test]
fn zblock_refuses_the_top_lengths_and_counts_them() {
    // kernel-test's sizes run to 4080 on 4K pages: zblock stores none of that size.
    let v = json(&[
        "run",
        "--backend",
        "zblock",
        "--no-time",
        "--format",
        "json",
        "kernel-test",
        "--lo",
        "3968",
        "--hi",
        "4080",
        "--step",
        "16",
        "-n",
        "5",
    ]);
    assert_eq!(v["store_failures"], 5, "the 4080-byte objects are refused");
    assert_eq!(v["objects"], 35);
}

#[test]
fn compare_deltas_say_when_a_backend_stored_fewer_objects() {
    // zblock refuses the 4080-byte objects: its page delta is over 35 objects, not 40.
    let table = ok(&[
        "compare",
        "--backend",
        "zsmalloc,zblock",
        "--no-time",
        "kernel-test",
        "--lo",
        "3968",
        "--hi",
        "4080",
        "--step",
        "16",
        "-n",
        "5",
    ]);
    let deltas = table.split("deltas vs zsmalloc").nth(1).expect("deltas section");
    let head: Vec<&str> = deltas.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(&head[..3], ["config", "objects", "pages"], "{table}");
    let row = deltas.lines().find(|l| l.starts_with("zblock")).expect("zblock row");
    assert_eq!(row.split_whitespace().nth(1), Some("-12.5%"), "{row}");
    assert!(
        deltas.contains(
            "objects: zblock stored 5 fewer objects than zsmalloc (35 vs 40; 5 stores refused vs \
             0): its deltas compare different contents"
        ),
        "{table}"
    );
    // The same objects everywhere: no objects column, no note.
    let same =
        ok(&["compare", "--backend", "zsmalloc,malloc", "--no-time", "dist", "--objects", "500"]);
    let deltas = same.split("deltas vs zsmalloc").nth(1).expect("deltas section");
    assert!(!deltas.contains("objects"), "{same}");
}

#[test]
fn zsmalloc_only_settings_are_refused_naming_the_flag_and_the_backend() {
    for (flag, value) in [
        ("--chain-size", "10"),
        ("--class-delta", "32"),
        ("--chain-policy", "heuristic"),
        ("--read-mode", "map"),
    ] {
        for backend in ["zblock", "malloc"] {
            let out = zsmalloc(&["run", "--backend", backend, flag, value, "dist"]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success());
            assert!(err.contains(&flag[2..]) && err.contains(backend), "{flag} {backend}: {err}");
        }
    }
    let out = zsmalloc(&["run", "--backend", "slab", "dist"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("zsmalloc, zblock, malloc"));
    let out = zsmalloc(&["run", "--backend", "zblock", "--page-size", "8K", "dist"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("8192"));
}

#[test]
fn classes_prints_zblock_s_block_table() {
    let table = ok(&["classes", "--backend", "zblock"]);
    assert!(table.contains("zblock block table, page 4096 (header 48 bytes)"), "{table}");
    assert!(table.contains("37 types; lengths from 4080 up are refused"), "{table}");
    let v = json(&["classes", "--backend", "zblock", "--page-size", "16K", "--format", "json"]);
    let rows = v["table"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 61);
    assert_eq!(v["table"]["header_bytes"], 72);
    assert_eq!((rows[0]["slots"].as_u64(), rows[0]["slot_size"].as_u64()), (Some(185), Some(88)));
    assert_eq!(v["table"]["smallest_refused_len"], 16360);
    let csv = ok(&["classes", "--backend", "zblock", "--format", "csv"]);
    assert_eq!(csv.lines().count(), 38);
    let svg = scratch("blocks.svg");
    ok(&["classes", "--backend", "zblock", "--plot", svg.to_str().unwrap()]);
    assert!(std::fs::read_to_string(&svg).unwrap().contains("pages per block"));
    let out = zsmalloc(&["classes", "--backend", "malloc"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no classes"));
}

#[test]
fn cost_studies_the_backends_and_says_what_zblock_refused() {
    let v = json(&[
        "cost",
        "--backend",
        "zsmalloc,zblock,malloc",
        "--synthetic-pages",
        "256",
        "--pool-mib",
        "2",
        "--repeat",
        "1",
        "--compressor",
        "lz4",
        "--modes",
        "copy",
        "--format",
        "json",
    ]);
    let pools = v["pools"].as_array().unwrap();
    let zblock = pools.iter().find(|p| p["label"] == "zblock").expect("a zblock pool");
    assert!(zblock["refused_objects"].as_u64().unwrap() > 0, "incompressible pages refused");
    assert_eq!(zblock["spanning_objects"], 0);
    let rows = v["reads"].as_array().unwrap();
    for label in ["zblock", "malloc"] {
        let mine: Vec<&Value> = rows.iter().filter(|r| r["label"] == label).collect();
        assert!(!mine.is_empty(), "{label} has read rows");
        assert!(mine.iter().all(|r| r["spanning"] == false), "{label}: nothing spans");
    }
    assert!(rows.iter().any(|r| r["label"] == "classic" && r["spanning"] == true));
}
