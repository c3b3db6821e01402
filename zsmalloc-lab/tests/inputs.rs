//! Inputs checked before work, and what the lab counts from them: `run pages` on a tree with
//! symlink loops (finishes at once, each file once), output paths checked before a run,
//! out-of-range numbers refused naming their flag, `--level` refused with lz4, zram's
//! `huge_pages <= huge_pages_since`, and `pages` compressing with liblz4 (the cost study's codec).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

mod common;

use serde_json::Value;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_zsmalloc"));
    c.env_remove("ZSMALLOC_CHAIN_SIZE");
    c
}

fn zsmalloc(args: &[&str]) -> Output {
    bin().args(args).output().expect("run the zsmalloc binary")
}

/// Runs and measures (common::measured): what a command costs is bounded by its CPU time.
fn zsmalloc_measured(args: &[&str]) -> common::Measured {
    common::measured(bin().args(args), None)
}

fn ok_json(args: &[&str]) -> Value {
    let out = zsmalloc(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn scratch(name: &str) -> PathBuf {
    common::scratch(name)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Exit code 2, one line on stderr naming `needle`, nothing on stdout.
fn refused(args: &[&str], needle: &str) {
    let out = zsmalloc(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
    assert!(err.starts_with("zsmalloc: ") && err.contains(needle), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}");
}

#[test]
fn pages_walks_symlink_loops_and_links_once() {
    use std::os::unix::fs::symlink;
    let dir = scratch("loops");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    // Three pages of text, and a 20 KB file (5 pages) reached through two more links.
    std::fs::write(dir.join("a.txt"), "compressed pages of a corpus\n".repeat(423)).unwrap();
    let noise: Vec<u8> = (0..20480u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    std::fs::write(dir.join("sub/b.bin"), noise).unwrap();
    symlink("sub/b.bin", dir.join("link1")).unwrap();
    symlink("b.bin", dir.join("sub/link2")).unwrap();
    // Two `..` loops: followed blindly, 2^depth paths (the /usr/lib `build/Release -> ..`).
    symlink("..", dir.join("sub/up")).unwrap();
    symlink("..", dir.join("sub/up2")).unwrap();
    let args = ["run", "--no-time", "--format", "json", "pages", s(&dir)];
    let out = zsmalloc_measured(&args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["corpus"]["input_pages"], 3 + 5, "each file once");
    assert_eq!(v["reads"], v["objects"]);
    // Eight pages: a walk that followed the loops blindly would spend its time in them.
    assert!(out.cpu < Duration::from_secs(5), "{:?} of CPU", out.cpu);
    // The same file given twice and through a link: still once.
    let file = dir.join("sub/b.bin");
    let v = ok_json(&[
        "run",
        "--no-time",
        "--format",
        "json",
        "pages",
        s(&file),
        s(&dir.join("link1")),
    ]);
    assert_eq!(v["corpus"]["input_pages"], 5);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn output_paths_are_checked_before_the_run() {
    let file = scratch("a-file");
    std::fs::write(&file, "x").unwrap();
    let under_file = file.join("x.svg");
    for bad in ["/nonexistent-zsmalloc-dir/out", s(&under_file)] {
        for flag in ["--plot", "--timeline", "--record"] {
            // A run of several CPU seconds: the check must come before it.
            let args = ["run", "--no-time", flag, bad, "dist", "--objects", "2000000"];
            refused(&args, &format!("{flag}: cannot write '{bad}'"));
            let cpu = zsmalloc_measured(&args).cpu;
            assert!(cpu < Duration::from_millis(500), "{args:?}: {cpu:?} of CPU");
        }
        let args = ["compare", "--no-time", "--timeline", bad, "dist", "--objects", "2000000"];
        refused(&args, "--timeline: cannot write");
    }
    refused(&["cost", "--plot", "/nonexistent-zsmalloc-dir/c.svg"], "--plot: cannot write");
    refused(&["classes", "--plot", "/nonexistent-zsmalloc-dir/c.svg"], "--plot: cannot write");
    // A writable path is left as it was (an existing file untouched, a new one not created).
    let fresh = scratch("fresh.svg");
    let _ = std::fs::remove_file(&fresh);
    let out = zsmalloc(&["run", "--no-time", "--plot", s(&fresh), "dist", "--objects", "1"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read_to_string(&fresh).unwrap().contains("<svg"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
}

#[test]
fn out_of_range_numbers_are_refused_naming_the_flag() {
    let cases: [(&[&str], &str); 13] = [
        (&["run", "dist", "--mean", "-5"], "'-5' for '--mean <BYTES>': a number in 1..=65536"),
        (&["run", "dist", "--mean", "0"], "'0' for '--mean"),
        (&["run", "dist", "--mean", "5000"], "--mean 5000"),
        (&["run", "dist", "--sd", "-4"], "'-4' for '--sd"),
        (&["run", "dist", "--sd", "1e9"], "--sd"),
        (
            &["run", "dist", "--objects", "0"],
            "'0' for '--objects <N>': a whole number in 1..=200000000",
        ),
        (&["run", "dist", "--objects", "999999999999"], "--objects"),
        (&["run", "pages", "--synthetic-pages", "0"], "'0' for '--synthetic-pages"),
        (&["run", "pages", "--max-pages", "0"], "--max-pages"),
        (
            &["run", "pages", "--compressor", "zstd", "--level", "0"],
            "'0' for '--level <N>': a whole number in 1..=22",
        ),
        (&["run", "--timeline", "/tmp/t.csv", "--timeline-every", "0", "dist"], "--timeline-every"),
        (&["compare", "--no-time", "--jobs", "0", "dist"], "--jobs"),
        (&["run", "--repeat", "0", "dist"], "--repeat"),
    ];
    for (args, flag) in cases {
        refused(args, flag);
    }
    // The page size bounds the mean: 5000 is fine on 16K pages.
    let v = ok_json(&[
        "run",
        "--no-time",
        "--format",
        "json",
        "--page-size",
        "16K",
        "dist",
        "--mean",
        "5000",
        "--objects",
        "1000",
    ]);
    assert_eq!(v["workload"]["params"]["mean"], 5000.0);
}

#[test]
fn level_is_zstds_and_refused_with_lz4() {
    refused(&["run", "pages", "--level", "5"], "--level is zstd's: lz4");
    refused(&["run", "pages", "--compressor", "lz4", "--level", "3"], "lz4");
    let args = |extra: &[&'static str]| {
        let mut a =
            vec!["run", "--no-time", "--format", "json", "pages", "--synthetic-pages", "200"];
        a.extend_from_slice(extra);
        ok_json(&a)
    };
    assert_eq!(args(&[])["workload"]["params"]["level"], Value::Null, "lz4: no level");
    let z = args(&["--compressor", "zstd"]);
    assert_eq!(z["workload"]["params"]["level"], 3, "zram's default");
    let z9 = args(&["--compressor", "zstd", "--level", "9"]);
    assert_eq!(z9["workload"]["params"]["level"], 9);
}

fn mm_stat(args: &[&str]) -> Vec<u64> {
    let mut a = vec!["run", "--no-time", "--format", "mm_stat"];
    a.extend_from_slice(args);
    let out = zsmalloc(&a);
    assert!(out.status.success(), "{a:?}: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let f: Vec<u64> = text.split_whitespace().map(|x| x.parse().unwrap()).collect();
    assert_eq!(f.len(), 9, "{text}");
    f
}

#[test]
fn mm_stat_huge_pages_follow_zram() {
    // Heuristic, chain 10, 4K: the class of 3696 bytes holds one object per zspage (a huge
    // class) but sits below huge_class_size (3705): objects of 3600..3704 bytes in it are not
    // pages zram stores whole. Sizes 3600..=3720 step 8, 10 each: 3712 and 3720 are huge.
    let heur = ["--chain-policy", "heuristic", "--chain-size", "10"];
    let kt = ["kernel-test", "--lo", "3600", "--hi", "3720", "--step", "8", "-n", "10"];
    let mut json_args = vec!["run", "--no-time", "--format", "json"];
    json_args.extend_from_slice(&heur);
    json_args.extend_from_slice(&kt);
    let v = ok_json(&json_args);
    assert_eq!(v["huge_class_size"], 3705);
    assert!(v["huge_objects"].as_u64().unwrap() > 20, "objects in huge classes: more");
    assert_eq!(v["huge_pages"], 20);
    let f = mm_stat(&[&heur[..], &kt[..]].concat());
    assert_eq!((f[7], f[8]), (20, 20), "huge_pages, huge_pages_since");

    // Churn under the heuristic: huge pages come and go; live never above ever.
    let dist = ["dist", "--mean", "3500", "--sd", "300", "--objects", "20000"];
    let f = mm_stat(&[&heur[..], &dist[..]].concat());
    assert!(f[7] > 0 && f[7] <= f[8], "huge_pages {} huge_pages_since {}", f[7], f[8]);
    assert!(f[7] < f[8], "the churn freed some huge pages");

    // A known case: 4000, 4096 and 3900 are huge (classic 4K chain 8: huge_class_size 3625),
    // 3000 and 100 are not; 4000 and 4096 are freed again.
    let trace = scratch("huge.trace");
    std::fs::write(
        &trace,
        "store 1 4000\nstore 2 3000\nstore 3 4096\nfree 1\nstore 1 3900\nstore 4 100\nfree 3\n",
    )
    .unwrap();
    let v = ok_json(&["replay", s(&trace), "--no-time", "--format", "json"]);
    assert_eq!(v["huge_class_size"], 3625);
    let out = zsmalloc(&["replay", s(&trace), "--no-time", "--format", "mm_stat"]);
    let f: Vec<u64> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    assert_eq!((f[7], f[8]), (1, 3), "one live huge page of three stored");
}

/// `pages` compresses with liblz4, as the cost study does: bytes stored equal what
/// `LZ4_compress_default` gives on the synthetic corpus, stored as zram stores pages.
#[test]
fn pages_compress_with_liblz4() {
    use rand::SeedableRng;
    use zsmalloc_codec::{bound, Codec, Compressor};
    let v =
        ok_json(&["run", "--no-time", "--format", "json", "pages", "--synthetic-pages", "2000"]);
    let huge = v["huge_class_size"].as_u64().unwrap() as usize;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let mut page = vec![0u8; 4096];
    let mut out = vec![0u8; bound(4096)];
    let mut lz4 = Codec::new(Compressor::Lz4, 0, 4096).unwrap();
    let mut bytes = 0u64;
    for _ in 0..2000 {
        zsmalloc_lab::workload::corpus::synth_page(&mut rng, &mut page);
        if page.iter().all(|&b| b == page[0]) {
            continue; // same-filled: kept outside the pool
        }
        let n = lz4.compress(&page, &mut out).unwrap();
        bytes += if n >= huge { 4096 } else { n as u64 };
    }
    assert_eq!(v["bytes_stored"].as_u64().unwrap(), bytes);
}
