//! The `zsmalloc` command's refusals and help: bad flags and inputs exit 2 with one line.

mod common;

use common::{json, ok, s, scratch, usage_error, zsmalloc};

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
fn an_empty_corpus_is_refused_saying_there_is_no_input() {
    let empty = scratch("empty-corpus");
    std::fs::create_dir_all(empty.join("sub")).unwrap();
    std::fs::write(empty.join("sub/empty.bin"), b"").unwrap();
    for args in [
        vec!["run", "--no-time", "pages", s(&empty)],
        vec!["run", "--no-time", "--format", "json", "pages", s(&empty), "--compressor", "zstd"],
        vec!["compare", "--no-time", "pages", s(&empty)],
    ] {
        let err = usage_error(&args);
        assert!(err.contains("no input") && err.contains(s(&empty)), "{args:?}: {err}");
    }
}

/// The options of a help text: (flag line, its description), a description on the flag's
/// line or on the lines under it.
fn options(help: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in help.lines() {
        let t = line.trim_start();
        if t.starts_with('-') {
            let (flag, desc) = match t.find("  ") {
                Some(i) => (&t[..i], t[i..].trim()),
                None => (t, ""),
            };
            out.push((flag.to_string(), desc.to_string()));
        } else if line.starts_with("          ") && !t.is_empty() {
            if let Some(last) = out.last_mut() {
                last.1 = format!("{} {t}", last.1).trim().to_string();
            }
        }
    }
    out
}

#[test]
fn every_flag_has_a_description_and_one_default() {
    let commands: [&[&str]; 11] = [
        &["run"],
        &["run", "kernel-test"],
        &["run", "dist"],
        &["run", "pages"],
        &["run", "trace"],
        &["compare"],
        &["compare", "dist"],
        &["replay"],
        &["classes"],
        &["cost"],
        &[],
    ];
    for cmd in commands {
        let mut args = cmd.to_vec();
        args.push("--help");
        let help = ok(&args);
        let opts = options(&help);
        assert!(opts.len() > 1, "{args:?}: no options found in\n{help}");
        for (flag, desc) in &opts {
            assert!(!desc.is_empty(), "{args:?}: {flag} has no description:\n{help}");
            assert!(desc.matches("[default:").count() <= 1, "{args:?}: {flag}: {desc}");
        }
    }
    let dist = ok(&["run", "dist", "--help"]);
    for (flag, default) in [
        ("--mean", "694"),
        ("--sd", "474"),
        ("--same-share", "0.11"),
        ("--same-size", "28"),
        ("--min-len", "26"),
        ("--shrink", "0"),
    ] {
        let (_, desc) = options(&dist).into_iter().find(|(f, _)| f.starts_with(flag)).unwrap();
        assert!(desc.ends_with(&format!("[default: {default}]")), "{flag}: {desc}");
    }
    // The workload's own flags come first; the shared groups under their headings.
    let (own, shared) = dist.split_once("Configuration:").expect("a Configuration heading");
    assert!(own.contains("--mean") && !own.contains("--page-size"), "{dist}");
    assert!(shared.contains("Output:") && shared.contains("--seed"), "{dist}");
    // A command's own flags stay out of the shared groups' headings.
    for (cmd, own) in [("cost", "--pid"), ("compare", "--jobs"), ("classes", "--vs")] {
        let help = ok(&[cmd, "--help"]);
        let (first, _) = help.split_once("Configuration:").expect("a Configuration heading");
        assert!(first.contains(own), "{cmd}: {own} under a shared heading:\n{help}");
    }
}

#[test]
fn configurations_are_assembled_by_one_rule() {
    let v = json(&[
        "compare",
        "--no-time",
        "--format",
        "json",
        "--backend",
        "zsmalloc,zblock",
        "--config",
        "heuristic",
        "kernel-test",
        "-n",
        "5",
    ]);
    let labels: Vec<&str> =
        v["runs"].as_array().unwrap().iter().map(|r| r["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["heuristic", "zblock"], "the named configurations are zsmalloc's");
    let err = usage_error(&["compare", "--backend", "zblock,malloc", "--config", "heuristic"]);
    assert!(err.contains("list zsmalloc"), "{err}");
    let err = usage_error(&["run", "--backend", "zsmalloc,zblock", "kernel-test", "-n", "5"]);
    assert!(err.contains("run takes one configuration"), "{err}");
    // `cost --read-mode` names the mode to measure, sg included.
    let v = json(&[
        "cost",
        "--read-mode",
        "sg",
        "--config",
        "classic",
        "--synthetic-pages",
        "64",
        "--pool-mib",
        "1",
        "--repeat",
        "1",
        "--compressor",
        "lz4",
        "--format",
        "json",
    ]);
    let reads = v["reads"].as_array().unwrap();
    assert!(!reads.is_empty() && reads.iter().all(|r| r["mode"] == "sg"), "{v}");
}
