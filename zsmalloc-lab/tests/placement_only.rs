//! `--placement-only` (docs/LAB.md, Placement only): every workload kind, on several pages,
//! chains, bands, read modes and backends, reports the figures of the same run with bytes — the
//! JSON differs only in `"payload": false` and the metadata sizes — and `compare`, `replay` and
//! `compare --metric pages` agree the same way. The run with bytes verified every read; the
//! placement-only one agrees with it, so its placement is that verified placement.

use std::process::Command;

use serde_json::Value;

fn zsmalloc(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_zsmalloc"))
        .args(args)
        .args(["--format", "json"])
        .output()
        .expect("run zsmalloc");
    assert!(
        out.status.success(),
        "zsmalloc {args:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON report")
}

/// The report without what only the payload changes (the metadata sizes, `payload`).
fn placement_of(mut v: Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                for k in ["payload", "metadata_bytes", "safety_bytes"] {
                    m.remove(k);
                }
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v
}

/// The first place two reports differ (a path of keys and indices), if any.
fn first_difference(a: &Value, b: &Value, at: String) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys = x.keys().chain(y.keys().filter(|k| !x.contains_key(*k)));
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(p), Some(q)) => first_difference(p, q, format!("{at}.{k}")),
                _ => Some(format!("{at}.{k}: only in one")),
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_difference(p, q, format!("{at}[{i}]"))),
        _ if a == b => None,
        _ => Some(format!("{at}: {a} vs {b}")),
    }
}

fn assert_same(full: Value, bare: Value, what: &str) {
    let (full, bare) = (placement_of(full), placement_of(bare));
    if let Some(d) = first_difference(&full, &bare, String::new()) {
        panic!("{what}: with bytes and without differ at {d}");
    }
}

fn same_with_and_without_bytes(args: &[&str]) {
    let full = zsmalloc(&[args, &["--no-time", "--per-class"]].concat());
    let bare = zsmalloc(&[args, &["--placement-only", "--per-class"]].concat());
    assert_eq!(bare["payload"], Value::Bool(false), "{args:?}: the report says so");
    assert!(full.get("payload").is_none(), "{args:?}: written only without bytes");
    assert!(bare.get("cpu_time_s").is_none(), "{args:?}: no time rows");
    assert_same(full, bare, &format!("{args:?}"));
}

#[test]
fn every_workload_kind_places_the_same_without_bytes() {
    let runs: &[&[&str]] = &[
        &["run", "kernel-test", "-n", "20"],
        &["run", "kernel-test", "-n", "20", "--chain-size", "16", "--page-size", "16K"],
        &["run", "kernel-test", "-n", "4", "--page-size", "64K", "--hi", "65536", "--step", "512"],
        &["run", "dist", "--objects", "4000", "--compact-every", "500"],
        &["run", "dist", "--objects", "3000", "--read-mode", "contiguous", "--chain-size", "10"],
        &["run", "dist", "--objects", "3000", "--read-mode", "map"],
        &["run", "dist", "--objects", "3000", "--chain-policy", "heuristic", "--merge", "off"],
        &["run", "dist", "--objects", "3000", "--backend", "zblock"],
        &["run", "pages", "--synthetic-pages", "2000"],
        &[
            "run",
            "pages",
            "--synthetic-pages",
            "1000",
            "--compressor",
            "zstd",
            "--page-size",
            "64K",
        ],
    ];
    for args in runs {
        same_with_and_without_bytes(args);
    }
}

#[test]
fn a_trace_replays_and_compares_the_same_without_bytes() {
    let dir = std::env::temp_dir().join(format!("zs-placement-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("t.trace");
    let t = trace.to_str().unwrap();
    zsmalloc(&["run", "dist", "--objects", "3000", "--no-time", "--record", t]);
    same_with_and_without_bytes(&["replay", t]);
    same_with_and_without_bytes(&["replay", t, "--chain-size", "4"]);
    let full = zsmalloc(&["compare", "trace", t, "--no-time"]);
    let bare = zsmalloc(&["compare", "trace", t, "--placement-only"]);
    assert_same(full, bare, "compare trace");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn malloc_has_no_placement_only_mode() {
    let out = Command::new(env!("CARGO_BIN_EXE_zsmalloc"))
        .args(["run", "dist", "--objects", "100", "--backend", "malloc", "--placement-only"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("payload") && err.lines().count() == 1, "{err}");
}
