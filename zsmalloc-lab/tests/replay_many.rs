//! One trace decoded once for many pools (`zsmalloc_lab::replay_many`, and `compare … trace`
//! untimed) gives each configuration the result a replay of its own gives: whole results
//! compared, peaks, per-class rows and timelines included, on every kind of configuration,
//! with pools that keep the bytes and pools of lengths only.

mod common;

use std::path::{Path, PathBuf};

use common::{json, ok, s, scratch, zsmalloc};
use zsmalloc_lab::config::ConfigSpec;
use zsmalloc_lab::progress::ProgressSink;
use zsmalloc_lab::replay_many::{replay_many, replay_many_jobs};
use zsmalloc_lab::runner::{run_one, RunOptions};
use zsmalloc_lab::trace_format::TraceFormat;
use zsmalloc_lab::workload::trace::Trace;
use zsmalloc_lab::workload::{defaults, dist::Dist, Workload};

/// A class table file (the heuristic's at chain 8, exported by `zsmalloc classes`).
fn class_table() -> PathBuf {
    let file = scratch("replay-many.table");
    if !file.exists() {
        ok(&["classes", "--chain-policy", "heuristic", "--chain-size", "8", "--export", s(&file)]);
    }
    file
}

/// Every kind of configuration the lab has; the malloc backend only with `payload`.
fn specs(payload: bool) -> Vec<ConfigSpec> {
    let table = format!("class-table={},label=table", class_table().display());
    let mut list = vec![
        "classic",
        "heuristic,chain=10",
        "fixed-4",
        "class-delta=16",
        "page=16K",
        "page=64K",
        &table,
        "multi-page=16K",
        "backend=zblock",
    ];
    if payload {
        list.push("backend=malloc");
    }
    let base = ConfigSpec::default();
    list.iter().map(|s| ConfigSpec::with_overrides(&base, s).unwrap()).collect()
}

/// A trace the lab records: `dist` with churn and compaction, in `format`.
fn recorded(format: TraceFormat, name: &str) -> PathBuf {
    let file = scratch(name);
    let mut d: Dist = defaults();
    (d.objects, d.churn, d.compact_every) = (4000, Some(4000), Some(1500));
    let opts =
        RunOptions { record: Some(file.clone()), record_format: format, ..Default::default() };
    run_one(&Workload::Dist(d), &ConfigSpec::default(), &opts, &ProgressSink::silent()).unwrap();
    file
}

/// A hand-written trace with every operation, ids of a C program (addresses) beside the lab's,
/// objects up to 16 KiB, and operations the pools refuse (wrong lengths, empty handles).
fn handwritten() -> PathBuf {
    let file = scratch("replay-many-hand.trace");
    let mut t = String::from("# zsmalloc trace v1\n");
    for i in 0..600u64 {
        let id = if i % 3 == 0 { 0x7f00_dead_0000 + i * 48 } else { i };
        let len = 1 + (i * 2654435761) % if i % 50 == 7 { 16384 } else { 4000 };
        t += &format!("store {id} {len}\nread {id} {len}\n");
        match i % 9 {
            0 => t += &format!("free {id}\n"),
            1 => t += &format!("read {id} {}\nfree 999999\n", len + 1),
            2 => t += &format!("malloc {} 300\nwrite {} 300\n", 50_000 + i, 50_000 + i),
            3 => t += &format!("read_sg {id} {len}\n"),
            4 => t += &format!("move {id} {}\nread {} {len}\n", 90_000 + i, 90_000 + i),
            5 => t += "compact\n",
            6 => t += &format!("store {id} 10\nstore {} 0\n", 70_000 + i),
            _ => {}
        }
    }
    std::fs::write(&file, t).unwrap();
    file
}

fn opts(payload: bool) -> RunOptions {
    RunOptions {
        per_class: true,
        timeline_every: 97,
        placement_only: !payload,
        ..Default::default()
    }
}

/// Each configuration replayed alone, then all at once on 1 and on 3 threads: the same results.
fn check(trace: &Path, payload: bool) {
    let (specs, opts, sink) = (specs(payload), opts(payload), ProgressSink::silent());
    let w = Workload::Trace(Trace::new(trace));
    let alone: Vec<_> = specs
        .iter()
        .map(|spec| serde_json::to_value(run_one(&w, spec, &opts, &sink).unwrap()).unwrap())
        .collect();
    for jobs in [1, 3] {
        let w = Workload::Trace(Trace::new(trace));
        let many = replay_many_jobs(&w, &specs, &opts, jobs, &sink).unwrap();
        assert_eq!(many.len(), specs.len());
        for ((one, many), spec) in alone.iter().zip(&many).zip(&specs) {
            assert!(many.timeline.len() > 2, "{}: a timeline", spec.label);
            let many = serde_json::to_value(many).unwrap();
            assert_eq!(one, &many, "{} on {} ({jobs} threads)", spec.label, trace.display());
        }
    }
    // The library's own entry (every core) agrees too.
    let all = replay_many(trace, &specs, &opts, &sink).unwrap();
    let all: Vec<_> = all.iter().map(|r| serde_json::to_value(r).unwrap()).collect();
    assert_eq!(all, alone);
}

#[test]
fn every_configuration_gets_the_result_of_its_own_replay() {
    let text = recorded(TraceFormat::Text, "replay-many-dist.trace");
    let binary = recorded(TraceFormat::Binary, "replay-many-dist.bin");
    let hand = handwritten();
    for trace in [&text, &binary, &hand] {
        for payload in [true, false] {
            check(trace, payload);
        }
    }
}

#[test]
fn compare_trace_prints_what_separate_replays_print() {
    let trace = recorded(TraceFormat::Binary, "replay-many-cli.bin");
    // Each configuration as a spec, and as the flags of a replay of its own.
    let configs: [(&str, &[&str]); 4] = [
        ("heuristic,chain=10", &["--chain-policy", "heuristic", "--chain-size", "10"]),
        ("page=16K", &["--page-size", "16K"]),
        ("backend=zblock", &["--backend", "zblock"]),
        ("backend=malloc", &["--backend", "malloc"]),
    ];
    let mut args = vec!["compare", "--jobs", "1", "--no-time", "--format", "json"];
    for (c, _) in &configs {
        args.extend(["--config", c]);
    }
    args.extend(["trace", s(&trace)]);
    let compared = json(&args);
    let unlabelled = |mut v: serde_json::Value| {
        let o = v.as_object_mut().unwrap();
        o.remove("deltas_pct");
        o.remove("label");
        v
    };
    for (i, (c, flags)) in configs.iter().enumerate() {
        let replay = [&["replay", s(&trace), "--no-time", "--format", "json"], *flags].concat();
        let alone = unlabelled(json(&replay));
        assert_eq!(unlabelled(compared["runs"][i].clone()), alone, "{c}");
    }
}

#[test]
fn the_memory_plan_counts_every_pool() {
    // 40,000 objects of 3,000 bytes live at once: about 150 MB for one pool.
    let file = scratch("replay-many-big.trace");
    let t: String = (0..40_000).map(|i| format!("store {i} 3000\n")).collect();
    std::fs::write(&file, t).unwrap();
    let args = |configs: &[&'static str]| {
        let mut a = vec!["compare", "--jobs", "1", "--no-time", "--max-memory", "400M"];
        for c in configs {
            a.extend(["--config", *c]);
        }
        a.extend(["trace", s(&file)]);
        a
    };
    let out = zsmalloc(&args(&["classic", "heuristic", "fixed-4"]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("3 runs at once") && err.contains("--max-memory"), "{err}");
    // Two pools fit.
    let out = zsmalloc(&args(&["classic", "heuristic"]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_replay_on_many_pools_is_not_timed() {
    let trace = handwritten();
    let opts = RunOptions { timing: true, ..Default::default() };
    let e = replay_many(&trace, &specs(true), &opts, &ProgressSink::silent()).unwrap_err();
    assert!(e.to_string().contains("not timed"), "{e}");
    let e = replay_many(&trace, &[], &RunOptions::default(), &ProgressSink::silent());
    assert!(e.unwrap_err().to_string().contains("at least one configuration"));
}
