//! The `zsmalloc` command, run as a user runs it: the RFC's figures in table and JSON form, class
//! tables, reproducibility, trace record/replay, SVG, mm_stat/debugfs and error handling.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

fn zsmalloc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zsmalloc"))
        .args(args)
        .env_remove("ZSMALLOC_CHAIN_SIZE")
        .output()
        .expect("run the zsmalloc binary")
}

/// Runs and expects success; returns stdout.
fn ok(args: &[&str]) -> String {
    let out = zsmalloc(args);
    assert!(
        out.status.success(),
        "zsmalloc {args:?} failed ({:?}): {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

fn json(args: &[&str]) -> Value {
    let text = ok(args);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("bad JSON from {args:?}: {e}\n{text}"))
}

/// A fresh scratch path for this test process.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zsmalloc-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn s(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

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
fn dist_is_reproducible_byte_for_byte() {
    let args = |seed: &str| {
        vec![
            "run",
            "--no-time",
            "--format",
            "json",
            "--seed",
            seed,
            "dist",
            "--objects",
            "6000",
            "--churn",
            "4000",
            "--compact-every",
            "1500",
            "--compact",
        ]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>()
    };
    let run = |seed: &str| {
        let a = args(seed);
        ok(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let (a, b, c) = (run("7"), run("7"), run("8"));
    assert_eq!(a, b, "same seed, same output");
    assert_ne!(a, c, "another seed, other figures");
    let v: Value = serde_json::from_str(&a).unwrap();
    assert_eq!(v["workload"]["name"], "dist");
    assert!(v["same_pages"].as_u64().unwrap() > 300, "about 11% same-filled pages skipped");
    assert!(v["objects"].as_u64().unwrap() + v["same_pages"].as_u64().unwrap() <= 6000);
    assert_eq!(v["reads"], v["objects"], "every live object read back");
    // Same-filled pages stored at 28 bytes instead (2012 zram).
    let stored = json(&[
        "run",
        "--no-time",
        "--format",
        "json",
        "dist",
        "--objects",
        "3000",
        "--same-filled",
        "store",
    ]);
    assert_eq!(stored["same_pages"], 0);
    assert_eq!(stored["objects"], 3000);
}

#[test]
fn pages_are_reproducible_and_verified() {
    for comp in ["lz4", "zstd"] {
        let args = [
            "run",
            "--no-time",
            "--format",
            "json",
            "pages",
            "--synthetic-pages",
            "3000",
            "--compressor",
            comp,
        ];
        let (a, b) = (ok(&args), ok(&args));
        assert_eq!(a, b, "{comp}: same seed, same output");
        let v: Value = serde_json::from_str(&a).unwrap();
        let c = &v["corpus"];
        assert_eq!(c["input_pages"], 3000);
        assert_eq!(
            c["same_filled_pages"].as_u64().unwrap()
                + c["incompressible_pages"].as_u64().unwrap()
                + c["compressed_pages"].as_u64().unwrap(),
            3000
        );
        assert!(c["incompressible_pages"].as_u64().unwrap() > 0, "random pages are stored raw");
        assert!(c["compression_ratio"].as_f64().unwrap() > 1.5);
        assert_eq!(v["reads"], v["objects"], "every stored page read back and verified");
    }
    // Real files: a directory of a text file, a zero file and a random-ish file.
    let dir = scratch("corpus");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("a.txt"), "zsmalloc stores compressed pages\n".repeat(700)).unwrap();
    std::fs::write(dir.join("sub/zero.bin"), vec![0u8; 3 * 4096]).unwrap();
    let noise: Vec<u8> =
        (0..5 * 4096u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    std::fs::write(dir.join("sub/noise.bin"), noise).unwrap();
    let v = json(&["run", "--format", "json", "pages", s(&dir), "--compressor", "zstd"]);
    let c = &v["corpus"];
    assert_eq!(c["input_pages"], 6 + 3 + 5);
    assert_eq!(c["same_filled_pages"], 3);
    assert_eq!(v["same_pages"], 3);
}

#[test]
fn a_recorded_trace_replays_to_identical_figures() {
    let trace = scratch("dist.trace");
    let recorded = json(&[
        "run",
        "--no-time",
        "--format",
        "json",
        "--record",
        s(&trace),
        "--chain-size",
        "6",
        "dist",
        "--objects",
        "5000",
        "--churn",
        "5000",
        "--compact-every",
        "2000",
        "--compact",
    ]);
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(text.lines().any(|l| l.starts_with("store ")));
    assert!(text.lines().any(|l| l.starts_with("free ")));
    assert!(text.lines().any(|l| l.starts_with("read ")));
    assert!(text.lines().any(|l| l == "compact"));
    let replayed =
        json(&["replay", s(&trace), "--no-time", "--format", "json", "--chain-size", "6"]);
    for k in [
        "objects",
        "bytes_stored",
        "pages",
        "pages_peak",
        "utilization_pct",
        "reads",
        "reads_spanning",
        "read_copy_bytes",
        "writes_spanning",
        "pages_compacted",
        "objs_moved",
        "stores",
        "frees",
    ] {
        assert_eq!(recorded[k], replayed[k], "{k}");
    }
    assert_eq!(replayed["op_errors"], 0);
    assert_eq!(replayed["workload"]["name"], "trace");
    // `run trace FILE` is the same as `replay FILE`.
    let again =
        json(&["run", "--no-time", "--format", "json", "--chain-size", "6", "trace", s(&trace)]);
    assert_eq!(again["pages"], replayed["pages"]);
}

#[test]
fn handwritten_trace_with_every_operation() {
    let trace = scratch("hand.trace");
    std::fs::write(
        &trace,
        "# a C shim writes handle addresses\n\
         store 0x7ffd0010 100\n\
         store 0x7ffd0018 4000\n\
         malloc 5 300\n\
         write 5 300\n\
         read 0x7ffd0010 100\n\
         read_sg 5 300\n\
         read 5 299\n\
         move 5 6\n\
         read 6 300\n\
         free 0x7ffd0018\n\
         free 0x7ffd0018\n\
         compact\n\
         store 9 0\n\
         \n",
    )
    .unwrap();
    let v = json(&["replay", s(&trace), "--format", "json"]);
    assert_eq!(v["objects"], 2);
    assert_eq!(v["bytes_stored"], 400);
    assert_eq!(v["reads"], 3);
    assert_eq!(v["op_errors"], 1, "the read of the wrong length is refused and counted");
    assert_eq!(v["store_failures"], 1, "a zero-length store is refused");
    assert_eq!(v["frees"], 1, "freeing an empty handle is a no-op");
}

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
    for caption in ["pages per class", "slack per class", "spanning reads per class"] {
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
fn bad_flags_and_inputs_exit_2_with_one_line() {
    let bad_trace = scratch("bad.trace");
    std::fs::write(&bad_trace, "store 1 10\nfrobnicate 1\n").unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["--bogus"],
        vec!["frobnicate"],
        vec!["run", "--page-size", "5000"],
        vec!["run", "--chain-size", "17"],
        vec!["run", "--class-delta", "12"],
        vec!["run", "--chain-policy", "greedy"],
        vec!["run", "--read-mode", "sideways"],
        vec!["run", "--mem-limit-pages", "-1"],
        vec!["run", "--format", "xml"],
        vec!["run", "kernel-test", "--hi", "5000"],
        vec!["run", "kernel-test", "--lo", "-3"],
        vec!["run", "kernel-test", "-n", "lots"],
        vec!["run", "dist", "--same-share", "1.5"],
        vec!["run", "dist", "--sd", "-4"],
        vec!["run", "dist", "--same-filled", "maybe"],
        vec!["run", "pages", "/nonexistent/corpus"],
        vec!["run", "pages", "--compressor", "lzo"],
        vec!["run", "--plot", "/nonexistent/dir/x.svg", "kernel-test", "-n", "1"],
        vec!["run", "--record", "/nonexistent/dir/t", "kernel-test", "-n", "1"],
        vec!["replay", "/nonexistent.trace"],
        vec!["replay", s(&bad_trace)],
        vec!["replay"],
        vec!["compare", "--config", "colour=red"],
        vec!["compare", "--config", "page-size=3K"],
        vec!["compare", "--sweep", "chain-size=16..4"],
        vec!["compare", "--sweep", "nothing"],
        vec!["classes", "--format", "debugfs"],
        vec!["classes", "--step", "12"],
    ];
    for args in cases {
        let out = zsmalloc(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line, got: {err}");
        assert!(err.starts_with("zsmalloc: "), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
    }
    let out = zsmalloc(&["replay", s(&bad_trace)]);
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("bad.trace:2: unknown operation 'frobnicate'"));
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
