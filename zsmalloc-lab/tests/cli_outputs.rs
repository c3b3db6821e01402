//! The `zsmalloc` command's outputs: SVG plots, mm_stat and debugfs, CSV and the timeline.

mod common;

use common::{ok, s, scratch};
use serde_json::Value;

#[test]
fn plots_are_real_svg() {
    let svg = scratch("classes.svg");
    ok(&[
        "run",
        "--plot",
        s(&svg),
        "kernel-test",
        "--lo",
        "32",
        "--hi",
        "4000",
        "--step",
        "16",
        "-n",
        "20",
    ]);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"), "{}", &text[..text.len().min(100)]);
    assert!(text.trim_end().ends_with("</svg>"));
    assert!(text.len() > 10_000, "an SVG of {} bytes", text.len());
    assert!(text.matches("<polyline").count() + text.matches("<path").count() >= 3);
    for caption in [
        "pages per 100 B of object size",
        "slack (pages minus stored bytes) per 100 B",
        "spanning reads per 100 B",
    ] {
        assert!(text.contains(caption), "{caption}");
    }
    let sweep = scratch("sweep.svg");
    let out = ok(&[
        "compare",
        "--sweep",
        "chain-size=4..8",
        "--plot",
        s(&sweep),
        "--format",
        "csv",
        "kernel-test",
        "-n",
        "10",
    ]);
    assert_eq!(out.lines().count(), 1 + 5);
    let text = std::fs::read_to_string(&sweep).unwrap();
    assert!(text.contains("sweep of chain-size") && text.contains("spanning reads"));
    assert!(text.matches("<circle").count() >= 15, "one marker per configuration and panel");
}

#[test]
fn mm_stat_and_debugfs_formats() {
    let args = [
        "run",
        "--no-time",
        "kernel-test",
        "--lo",
        "32",
        "--hi",
        "4000",
        "--step",
        "16",
        "-n",
        "30",
    ];
    let with = |f: &str| {
        let mut a = args.to_vec();
        a.extend(["--format", f]);
        ok(&a)
    };
    let v: Value = serde_json::from_str(&with("json")).unwrap();
    let mm = with("mm_stat");
    assert_eq!(mm.lines().count(), 1);
    let f: Vec<u64> = mm.split_whitespace().map(|x| x.parse().unwrap()).collect();
    assert_eq!(f.len(), 9, "{mm}");
    let pages = v["pages"].as_u64().unwrap();
    assert_eq!(f[0], v["objects"].as_u64().unwrap() * 4096, "orig_data_size");
    assert_eq!(f[1], v["bytes_stored"].as_u64().unwrap(), "compr_data_size");
    assert_eq!(f[2], pages * 4096, "mem_used_total");
    assert_eq!(f[3], 0, "mem_limit");
    assert_eq!(f[4], v["pages_peak"].as_u64().unwrap() * 4096, "mem_used_max");
    assert_eq!(f[7], v["huge_pages"].as_u64().unwrap(), "huge_pages");
    assert_eq!(f[8], v["huge_stores"].as_u64().unwrap(), "huge_pages_since");

    let dfs = with("debugfs");
    let mut lines = dfs.lines();
    let head: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        head,
        [
            "class",
            "size",
            "10%",
            "20%",
            "30%",
            "40%",
            "50%",
            "60%",
            "70%",
            "80%",
            "90%",
            "99%",
            "100%",
            "obj_allocated",
            "obj_used",
            "pages_used",
            "pages_per_zspage",
            "freeable"
        ]
    );
    let rows: Vec<Vec<u64>> = lines
        .clone()
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().map(|x| x.parse().unwrap()).collect())
        .collect();
    assert!(rows.iter().all(|r| r.len() == 18));
    let total = dfs.lines().find(|l| l.trim_start().starts_with("Total")).expect("Total row");
    let t: Vec<u64> = total.split_whitespace().skip(1).map(|x| x.parse().unwrap()).collect();
    assert_eq!(t.len(), 15);
    assert_eq!(t[11], rows.iter().map(|r| r[13]).sum::<u64>(), "obj_allocated total");
    assert_eq!(t[12], v["objects"].as_u64().unwrap(), "obj_used total");
    assert_eq!(t[13], pages, "pages_used total");

    // A comparison prints one mm_stat line per configuration, labelled.
    let cmp = ok(&[
        "compare",
        "--config",
        "classic",
        "--config",
        "heuristic",
        "--format",
        "mm_stat",
        "kernel-test",
        "-n",
        "5",
    ]);
    assert_eq!(cmp.lines().filter(|l| l.starts_with("# ")).count(), 2);
}

#[test]
fn csv_and_timeline() {
    let timeline = scratch("timeline.csv");
    let csv = ok(&[
        "compare",
        "--config",
        "chain-size=4",
        "--config",
        "label=eight,chain-size=8",
        "--format",
        "csv",
        "--timeline",
        s(&timeline),
        "dist",
        "--objects",
        "3000",
        "--churn",
        "3000",
    ]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3);
    let head: Vec<&str> = lines[0].split(',').collect();
    for k in [
        "label",
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
        "pages_delta_pct",
    ] {
        assert!(head.contains(&k), "{k}");
    }
    assert!(lines[1].starts_with("chain-size=4,"));
    assert!(lines[2].starts_with("eight,"));
    let t = std::fs::read_to_string(&timeline).unwrap();
    let mut tl = t.lines();
    assert_eq!(tl.next(), Some("label,op,phase,objects,bytes_stored,pages,utilization_pct"));
    let rows: Vec<&str> = tl.collect();
    assert!(rows.len() > 100, "{} samples", rows.len());
    assert!(
        rows.iter().any(|r| r.contains(",churn,")) && rows.iter().any(|r| r.starts_with("eight,"))
    );
}

/// Two runs that differ in a setting never print the same configuration, in the table and in
/// the CSV; mainline's settings print the line they always did.
#[test]
fn the_config_line_names_every_setting_that_is_not_mainlines() {
    let workload = ["dist", "--objects", "2000"];
    let run = |flags: &[&str], format: &str| {
        let mut args = vec!["run", "--no-time", "--format", format];
        args.extend_from_slice(flags);
        args.extend_from_slice(&workload);
        ok(&args)
    };
    let table_line = |flags: &[&str]| {
        let out = run(flags, "table");
        let line = out.lines().find(|l| l.starts_with("config ")).unwrap_or_default();
        line.trim_start_matches("config").trim().to_string()
    };
    let csv_config = |flags: &[&str]| {
        let out = run(flags, "csv");
        let head: Vec<&str> = out.lines().next().unwrap().split(',').collect();
        assert_eq!(head[..2], ["label", "config"], "{out}");
        // The config cell is quoted (it has commas) and comes second.
        let row = out.lines().nth(1).unwrap();
        row.split('"').nth(1).unwrap_or_default().to_string()
    };
    assert_eq!(table_line(&[]), "page 4096, chain 8, delta 16, classic");
    assert_eq!(csv_config(&[]), "page 4096, chain 8, delta 16, classic");
    for (flags, shown) in [
        (&["--merge", "off"][..], "page 4096, chain 8, delta 16, classic, no merging"),
        (&["--profile", "2012"], "page 4096, chain 4, delta 16, classic, no merging"),
        (&["--read-mode", "contiguous"], "page 4096, chain 8, delta 16, classic, read contiguous"),
        (
            &["--mem-limit-pages", "100000"],
            "page 4096, chain 8, delta 16, classic, limit 100000 pages",
        ),
        (&["--backend", "zblock"], "zblock, page 4096"),
    ] {
        assert_eq!(table_line(flags), shown, "{flags:?}");
        assert_eq!(csv_config(flags), shown, "{flags:?}");
    }
}
