//! The `zsmalloc` command, run as a user runs it: the RFC's figures in table and JSON form, class
//! tables, the run table, memory limits and the 2012 profile. Workloads, output formats and
//! errors are in cli_workloads.rs, cli_outputs.rs and cli_errors.rs.

mod common;

use common::{json, ok, zsmalloc};
use serde_json::Value;

const BASE_BLOCK: [&str; 5] = [
    " zsmalloc_test: num write objects: 339598",
    " zsmalloc_test: pool pages used 175111, total allocated size 698213488",
    " zsmalloc_test: pool memory utilization: 97.3",
    " zsmalloc_test: num read objects: 339598",
    " zsmalloc_test: spanning objects: 110377, total memcpy size: 278318624",
];

const PATCHED_BLOCK: [&str; 5] = [
    " zsmalloc_test: num write objects: 339598",
    " zsmalloc_test: pool pages used 175920, total allocated size 698213488",
    " zsmalloc_test: pool memory utilization: 96.8",
    " zsmalloc_test: num read objects: 339598",
    " zsmalloc_test: spanning objects: 103256, total memcpy size: 265378608",
];

#[test]
fn compare_without_arguments_prints_the_rfc_blocks_and_deltas() {
    let out = ok(&["compare"]);
    let base = BASE_BLOCK.join("\n");
    let patched = PATCHED_BLOCK.join("\n");
    let (b, p) = (out.find(&base), out.find(&patched));
    assert!(b.is_some() && p.is_some() && b < p, "RFC blocks missing or out of order:\n{out}");
    assert!(out.contains("classic (page 4096, chain 10, delta 16, classic)"), "{out}");
    // One run each: the times say so, and no CPU-time delta is drawn from them.
    assert!(out.contains("cpu_time_s (1 run)") && out.contains("too few to compare"), "{out}");
    assert!(!out.contains("cpu_time [spread]"), "{out}");
    // One row per configuration with the result columns.
    let row = out
        .lines()
        .find(|l| l.starts_with("heuristic ") && l.contains(" 339598 "))
        .expect("heuristic row");
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        &cells[1..8],
        ["339598", "698213488", "175920", "175920", "96.8", "103256", "265378608"]
    );
    // Deltas against classic: pages, pages_peak, reads_spanning, read_copy_bytes (, wall time).
    let deltas = out.split("deltas vs classic").nth(1).expect("deltas section");
    let drow = deltas.lines().find(|l| l.starts_with("heuristic")).expect("delta row");
    let d: Vec<&str> = drow.split_whitespace().collect();
    assert_eq!(&d[1..5], ["+0.5%", "+0.5%", "-6.5%", "-4.6%"], "{drow}");
}

#[test]
fn acceptance_figures_in_json() {
    let v = json(&["compare", "--format", "json", "--no-time"]);
    assert_eq!(v["base"], "classic");
    let runs = v["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2);
    let expect = [
        ("classic", 175111, 97.3, 110377, 278318624u64),
        ("heuristic", 175920, 96.8, 103256, 265378608u64),
    ];
    for (run, (label, pages, util, spanning, copied)) in runs.iter().zip(expect) {
        assert_eq!(run["label"], label);
        assert_eq!(run["config"]["chain_size"], 10);
        assert_eq!(run["config"]["page_size"], 4096);
        assert_eq!(run["config"]["chain_policy"], label);
        assert_eq!(run["objects"], 339598);
        assert_eq!(run["bytes_stored"], 698213488u64);
        assert_eq!(run["pages"], pages);
        assert_eq!(run["pages_peak"], pages);
        assert_eq!(run["utilization_pct"].as_f64(), Some(util));
        assert_eq!(run["reads_spanning"], spanning);
        assert_eq!(run["read_copy_bytes"], copied);
        assert_eq!(run["pages_compacted"], 0);
        assert!(run["huge_class_size"].as_u64().is_some());
        assert!(run.get("wall_time_s").is_none(), "--no-time leaves wall time out");
        assert_eq!(run["kernel_test"]["spanning_objects"], spanning);
        assert_eq!(run["kernel_test"]["total_memcpy_size"], copied);
    }
    let d = &runs[1]["deltas_pct"];
    assert_eq!(d["pages"].as_f64(), Some(0.5));
    assert_eq!(d["reads_spanning"].as_f64(), Some(-6.5));
    assert_eq!(d["read_copy_bytes"].as_f64(), Some(-4.6));
}

#[test]
fn classes_rows_match_the_rfc_table() {
    let v = json(&[
        "classes",
        "--page-size",
        "16K",
        "--chain-size",
        "8",
        "--vs",
        "class-delta=16",
        "--min-size",
        "1072",
        "--max-size",
        "1120",
        "--format",
        "json",
    ]);
    let rows = |t: &Value| -> Vec<[u64; 6]> {
        t["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                [
                    "logical_size",
                    "class_size",
                    "chain",
                    "objs_per_zspage",
                    "tail_waste",
                    "merge_waste",
                ]
                .map(|k| r[k].as_u64().unwrap())
            })
            .collect()
    };
    let tables = v["tables"].as_array().unwrap();
    assert_eq!(tables[0]["config"]["class_delta"], 64);
    assert_eq!(
        rows(&tables[0]),
        [
            [1072, 1120, 8, 117, 32, 5616],
            [1088, 1120, 8, 117, 32, 3744],
            [1104, 1120, 8, 117, 32, 1872],
            [1120, 1120, 8, 117, 32, 0]
        ]
    );
    assert_eq!(
        rows(&tables[1]),
        [
            [1072, 1072, 4, 61, 144, 0],
            [1088, 1088, 1, 15, 64, 0],
            [1104, 1104, 6, 89, 48, 0],
            [1120, 1120, 8, 117, 32, 0]
        ]
    );
    // The side-by-side table shows the same cells.
    let text = ok(&[
        "classes",
        "--page-size",
        "16384",
        "--chain-size",
        "8",
        "--vs",
        "class-delta=16",
        "--min-size",
        "1072",
        "--max-size",
        "1120",
    ]);
    assert!(text.contains("Log |  Phys | Chain | Objs/Page | TailWaste | MergeWaste | Spanning"));
    let line = text.lines().find(|l| l.trim_start().starts_with("1072 ")).expect("row 1072");
    let (left, right) = line.split_once("||").expect("two tables");
    let cells = |half: &str| half.split('|').map(|c| c.trim().to_string()).collect::<Vec<_>>();
    assert_eq!(cells(left), ["1072", "1120", "8", "117", "32", "5616", "7"]);
    assert_eq!(cells(right), ["1072", "1072", "4", "61", "144", "0", "3"]);
    // CSV has one row per logical size per table.
    let csv = ok(&[
        "classes",
        "--page-size",
        "16K",
        "--format",
        "csv",
        "--min-size",
        "1072",
        "--max-size",
        "1120",
    ]);
    assert_eq!(csv.lines().count(), 1 + 1);
}

#[test]
fn run_table_names_the_fields() {
    let out = ok(&[
        "run",
        "--chain-size",
        "10",
        "kernel-test",
        "--hi",
        "1000",
        "-n",
        "20",
        "--per-class",
    ]);
    for k in [
        "objects",
        "bytes_stored",
        "pages",
        "pages_peak",
        "utilization_pct",
        "reads_spanning",
        "read_copy_bytes",
        "huge_class_size",
        "pages_compacted",
        "wall_time_s",
    ] {
        assert!(out.lines().any(|l| l.starts_with(&format!("{k} "))), "{k} missing:\n{out}");
    }
    assert!(out.contains(" zsmalloc_test: num write objects: 1220"), "{out}");
    assert!(out.contains("classes of classic"), "--per-class rows");
}

#[test]
fn memory_limit_failures_are_counted_not_fatal() {
    let v =
        json(&["run", "--mem-limit-pages", "50", "--format", "json", "kernel-test", "-n", "20"]);
    assert!(v["store_failures"].as_u64().unwrap() > 0);
    assert!(v["pages_peak"].as_u64().unwrap() <= 50);
    assert_eq!(v["reads"], v["objects"]);
}

#[test]
fn profile_2012_is_chain_4_delta_16_without_merging() {
    let mainline = json(&["classes", "--format", "json"]);
    let t = &mainline["tables"][0];
    assert_eq!(t["config"]["merge"], true);
    assert!(t["classes"].as_u64().unwrap() < 255, "mainline merges classes on 4K pages");

    let old = json(&["classes", "--profile", "2012", "--format", "json"]);
    let t = &old["tables"][0];
    assert_eq!(t["config"]["chain_size"], 4);
    assert_eq!(t["config"]["class_delta"], 16);
    assert_eq!(t["config"]["merge"], false);
    assert_eq!(t["classes"], 255, "every index its own class");
    assert_eq!(t["worst_merge_waste"], 0);

    // A flag after the profile overrides it.
    let t = json(&["classes", "--profile", "2012", "--chain-size", "6", "--format", "json"]);
    assert_eq!(t["tables"][0]["config"]["chain_size"], 6);

    for bad in [["--merge", "maybe"], ["--profile", "1999"]] {
        let out = zsmalloc(&["classes", bad[0], bad[1]]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&bad[0][2..]), "{err}");
    }
}
