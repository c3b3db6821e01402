//! Class tables through the `zsmalloc` command: `classes --export` then `--class-table` places
//! every object as the exported configuration (the acceptance run, churn with compaction); bad
//! table files exit 2 naming the line; `optimize` exports tables that reproduce its figures.

use serde_json::Value;

mod common;

use common::{json, ok, s, scratch, zsmalloc};

/// A run's figures and per-class placement, without what names the table rather than measures
/// it (label, configuration, class indices and merge figures: an explicit table merges nothing).
fn placement(mut run: Value) -> Value {
    let o = run.as_object_mut().unwrap();
    o.remove("label");
    o.remove("config");
    for class in o["classes"].as_array_mut().unwrap() {
        let c = class.as_object_mut().unwrap();
        for key in ["index", "first_index", "last_index", "worst_merge_waste", "merge_waste"] {
            c.remove(key);
        }
    }
    run
}

#[test]
fn an_exported_table_places_every_object_as_its_configuration() {
    let configs: [&[&str]; 3] = [
        &[],
        &["--chain-policy", "heuristic", "--chain-size", "10"],
        &["--page-size", "16K", "--class-delta", "16"],
    ];
    let workloads: [&[&str]; 2] = [
        &["kernel-test"],
        &["dist", "--objects", "30000", "--churn", "30000", "--compact-every", "7000", "--compact"],
    ];
    for (i, flags) in configs.iter().enumerate() {
        let file = scratch(&format!("exported-{i}.table"));
        let said = ok(&[&["classes"], *flags, &["--export", s(&file)]].concat());
        assert!(said.contains("classes written to"), "{said}");
        for w in workloads {
            let common = ["run", "--no-time", "--per-class", "--format", "json"];
            let computed = json(&[&common[..], flags, w].concat());
            let explicit = json(&[&common[..], &["--class-table", s(&file)], w].concat());
            assert_eq!(explicit["config"]["page_size"], computed["config"]["page_size"]);
            assert!(explicit["config"]["class_table"].is_string());
            assert_eq!(placement(explicit), placement(computed), "{flags:?} {w:?}");
        }
    }
}

#[test]
fn bad_table_files_exit_2_naming_the_line() {
    let cases = [
        ("page_size 4096\n48 1\n32 1\n4096 1\n", "line 3 (`32 1`): size 32 is below the previous"),
        ("page_size 4096\n32 1\n32 2\n4096 1\n", "line 3 (`32 2`): duplicate size 32"),
        ("page_size 4096\n32 1\n44 1\n4096 1\n", "line 3 (`44 1`): size 44 is not a multiple of 8"),
        ("page_size 4096\n16 1\n4096 1\n", "line 2 (`16 1`): size 16 is below"),
        ("page_size 4096\n32 1\n8192 1\n", "line 3 (`8192 1`): size 8192 is above the page"),
        ("page_size 4096\n32 0\n4096 1\n", "line 2 (`32 0`): chain 0 is outside"),
        ("page_size 4096\n32 17\n4096 1\n", "line 2 (`32 17`): chain 17 is outside"),
        ("page_size 4096\n32 1\n2048 1\n", "line 3 (`2048 1`): no class stores a whole page"),
        ("page_size 4096\n32 1\n1024 1\n20", "line 4 (`20`): a class line is `size chain`"),
    ];
    let file = scratch("bad.table");
    for (text, want) in cases {
        std::fs::write(&file, text).unwrap();
        for args in [
            vec!["run", "--class-table", s(&file), "kernel-test", "-n", "1"],
            vec!["compare", "--no-time", "--config", &format!("class-table={}", s(&file))],
            vec!["classes", "--class-table", s(&file)],
        ] {
            let out = zsmalloc(&args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains("invalid class-table") && err.contains(want), "{args:?}: {err}");
        }
    }
    let many: String = std::iter::once("page_size 4096\n".to_string())
        .chain((0..=509).map(|i| format!("{} 1\n", 32 + 8 * i)))
        .collect();
    std::fs::write(&file, many).unwrap();
    let out = zsmalloc(&["run", "--class-table", s(&file)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(err.contains("line 511") && err.contains("too many classes"), "{err}");
    // A table for other pages than the pool's.
    std::fs::write(&file, "page_size 16384\n32 1\n16384 1\n").unwrap();
    let out = zsmalloc(&["run", "--class-table", s(&file), "--page-size", "4K"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(err.contains("the table is for 16384-byte pages, the pool's are 4096"), "{err}");
    let out = zsmalloc(&["run", "--class-table", s(&scratch("missing.table"))]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn optimize_exports_tables_that_reproduce_its_figures() {
    let workload = ["kernel-test", "--lo", "100", "--hi", "4000", "--step", "300", "-n", "40"];
    let default_file = scratch("default.table");
    let report = json(
        &[&["optimize", "--format", "json", "--export-table", s(&default_file)][..], &workload]
            .concat(),
    );
    let points = report["points"].as_array().unwrap();
    assert!(!points.is_empty());
    for key in ["pages", "pages_peak", "reads_spanning", "read_cost", "classes", "table"] {
        assert!(points.iter().all(|p| p.get(key).is_some()), "every point has {key}");
    }
    let labels: Vec<&str> = report["references"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["classic", "heuristic"]);
    let default_point = report["default_point"].as_u64().unwrap();
    assert_eq!(report["export"]["point"].as_u64(), Some(default_point));
    // Each exported point, run through --class-table, measures what the report says.
    let last = points.last().unwrap()["point"].as_u64().unwrap();
    for k in [default_point, 1, last] {
        let file = scratch(&format!("point-{k}.table"));
        let args = ["optimize", "--format", "json", "--export-table", s(&file), "--point"];
        let k_text = k.to_string();
        let r = json(&[&args[..], &[k_text.as_str()], &workload].concat());
        let p = r["points"].as_array().unwrap().iter().find(|p| p["point"] == k).unwrap().clone();
        let run = json(
            &[&["run", "--no-time", "--format", "json", "--class-table", s(&file)][..], &workload]
                .concat(),
        );
        for key in ["pages", "pages_peak", "reads_spanning"] {
            assert_eq!(run[key], p[key], "point {k}: {key}");
        }
    }
    assert_eq!(
        std::fs::read_to_string(&default_file).unwrap(),
        points.iter().find(|p| p["point"] == default_point).unwrap()["table"].as_str().unwrap()
    );
    let table = ok(&[&["optimize"][..], &workload].concat());
    assert!(table.contains("classic") && table.contains("heuristic") && table.contains("frontier"));
    let out = zsmalloc(&[&["optimize", "--objective", "ns"][..], &workload].concat());
    assert_eq!(out.status.code(), Some(2), "ns needs --spanning-extra-ns");
}
