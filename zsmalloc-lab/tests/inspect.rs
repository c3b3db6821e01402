//! `zsmalloc inspect`: every zram device of the machine listed with its exact `mm_stat` (no
//! root needed, also as an unprivileged user), `--watch` bounded and ended cleanly by Ctrl-C,
//! and `--snapshot` on a private device the test fills: its replay in slot order holds exactly
//! the kernel's pages, and after seeded discards no more than the kernel's. The kernel tests
//! skip, with the reason printed, without root or zram control; zram0 and every device the
//! test did not make are only read, and the test's device is removed however the test ends
//! (it is a `Device`, removed when dropped, also on a panic).

mod kernel_support;

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};

use kernel_support::*;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;
use zsmalloc_lab::kernel::corpus::CorpusArgs;
use zsmalloc_lab::kernel::device::{Device, DeviceSpec};
use zsmalloc_lab::kernel::host;
use zsmalloc_lab::kernel::mm_stat::MmStat;

fn inspect_json(args: &[&str]) -> Value {
    let mut all = vec!["inspect", "--format", "json"];
    all.extend_from_slice(args);
    json(&all)
}

/// The zram devices `/sys/block` lists now.
fn zram_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir("/sys/block")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str().map(String::from))
                .filter(|n| n.starts_with("zram"))
                .collect()
        })
        .unwrap_or_default();
    names.sort_by_key(|n| n[4..].parse::<u32>().unwrap_or(u32::MAX));
    names
}

fn listed(report: &Value) -> Vec<String> {
    report["zram"].as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap().into()).collect()
}

#[test]
fn every_device_and_zswap_are_listed_and_explained() {
    let before = zram_names();
    let r = inspect_json(&[]);
    let after = zram_names();
    let got = listed(&r);
    // Devices another program adds or removes meanwhile may come and go; the others are there.
    for name in before.iter().filter(|n| after.contains(n)) {
        assert!(got.contains(name), "{name} not listed: {got:?}");
    }
    assert!(r["zswap"]["present"].is_boolean());
    assert!(r["page_size"].as_u64().unwrap() >= 4096);
    let table = ok(&["inspect"]);
    assert!(table.contains("overhead") && table.contains("pool memory - compressed"), "{table}");
    let csv = ok(&["inspect", "--format", "csv"]);
    assert!(csv.starts_with("time_unix_s,name,"), "{csv}");
}

#[test]
fn watch_prints_a_report_per_interval_and_ends_on_ctrl_c() {
    let out = ok(&["inspect", "--watch", "0.1", "--count", "3", "--format", "json"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    for l in lines {
        serde_json::from_str::<Value>(l).expect("one JSON report per line");
    }
    let mut child = zsmalloc()
        .args(["inspect", "--watch", "0.2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupted once two reports are out, however long the machine takes to print them.
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    while seen.matches("zswap:").count() < 2 {
        let n = std::io::BufRead::read_line(&mut stdout, &mut seen).unwrap();
        assert!(n > 0, "the watch ended before its second report: {seen}");
    }
    // SAFETY: kill has no memory-safety preconditions; the pid is our own child's, not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) }, 0);
    std::io::Read::read_to_string(&mut stdout, &mut seen).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(seen.matches("zswap:").count() >= 2);
}

#[test]
fn an_unprivileged_user_gets_the_same_devices() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || Command::new("setpriv").arg("--help").output().is_err() {
        eprintln!("SKIP an_unprivileged_user_gets_the_same_devices: needs root and setpriv");
        return;
    }
    // The binary where user 65534 can run it.
    let dir = std::env::temp_dir().join(format!("zsmalloc-inspect-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.join("zsmalloc");
    std::fs::copy(env!("CARGO_BIN_EXE_zsmalloc"), &bin).unwrap();
    let before = inspect_json(&[]);
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&bin)
        .args(["inspect", "--format", "json"])
        .output()
        .unwrap();
    let after = inspect_json(&[]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    // Other programs (other test runs) may add, fill or remove devices meanwhile: a device
    // there before and after, unchanged, is listed with the same mm_stat.
    let got = listed(&r);
    let stat = |rep: &Value, name: &str| {
        rep["zram"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == name)
            .map(|d| d["mm_stat"].clone())
    };
    for name in listed(&before) {
        let (b, a) = (stat(&before, &name), stat(&after, &name));
        if a.is_none() {
            continue;
        }
        assert!(got.contains(&name), "{name} is not listed for user 65534: {got:?}");
        if a == b {
            assert_eq!(stat(&r, &name), b, "{name}");
        }
    }
    let refused = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_zsmalloc"))
        .args(["inspect", "--snapshot", "zram0"])
        .output()
        .unwrap();
    // Not the binary under target/ (maybe not reachable for the user): any refusal is fine,
    // as long as nothing was read.
    assert!(!refused.status.success());
}

/// A private device filled with the built-in corpus in page order; `None` (skip) without root.
fn filled_device(test: &str, pages: usize) -> Option<(std::sync::MutexGuard<'static, ()>, Device)> {
    let guard = kernel_or_skip(test)?;
    let page = host::page_size();
    let corpus = CorpusArgs { synthetic_pages: Some(pages), ..Default::default() };
    let (data, _) = corpus.load(3, page).unwrap();
    let spec = DeviceSpec {
        compressor: Some("lz4".into()),
        level: None,
        pages: pages as u64,
        page_size: page,
    };
    let mut dev = Device::create(&spec).unwrap();
    for (i, p) in data.chunks_exact(page).enumerate() {
        dev.write_page(i as u64, p).unwrap();
    }
    Some((guard, dev))
}

fn mm_stat_of(report: &Value, name: &str) -> MmStat {
    let d = report["zram"].as_array().unwrap().iter().find(|d| d["name"] == name).unwrap();
    let m = &d["mm_stat"];
    let f = |k: &str| m[k].as_u64().unwrap();
    MmStat {
        orig_data_size: f("orig_data_size"),
        compr_data_size: f("compr_data_size"),
        mem_used_total: f("mem_used_total"),
        mem_limit: f("mem_limit"),
        mem_used_max: f("mem_used_max"),
        same_pages: f("same_pages"),
        pages_compacted: f("pages_compacted"),
        huge_pages: f("huge_pages"),
        huge_pages_since: f("huge_pages_since"),
    }
}

#[test]
fn a_filled_device_is_listed_exactly_and_its_snapshot_holds_the_kernel_s_pages() {
    let Some((_guard, mut dev)) = filled_device("inspect snapshot", 3000) else { return };
    let name = format!("zram{}", dev.id());
    let page = host::page_size() as u64;
    let live = dev.mm_stat().unwrap();
    let r = inspect_json(&[]);
    assert_eq!(mm_stat_of(&r, &name), live);
    let d = r["zram"].as_array().unwrap().iter().find(|d| d["name"] == name.as_str()).unwrap();
    let f = &d["figures"];
    assert_eq!(f["overhead_bytes"].as_u64().unwrap(), live.mem_used_total - live.compr_data_size);
    assert_eq!(d["compressor"], "lz4");

    // The fill in page order is the history-free pool: the replay holds the kernel's pages.
    let s = inspect_json(&["--snapshot", &name]);
    assert_eq!(s["live_pages"].as_u64().unwrap(), live.mem_used_total / page);
    assert_eq!(s["history_free_pages"], s["live_pages"], "{s:#}");
    assert_eq!(s["fragmentation_pages"], 0);
    assert_eq!(s["lengths_exact"], true, "{s:#}");
    assert_eq!(s["pages"]["huge"].as_u64().unwrap(), live.huge_pages);
    assert_eq!(dev.mm_stat().unwrap(), live, "the snapshot changed the inspected device");

    // Seeded discards: the live pool keeps pages its data no longer needs.
    let mut order: Vec<u64> = (0..3000).collect();
    order.shuffle(&mut ChaCha8Rng::seed_from_u64(11));
    for &p in &order[..1800] {
        dev.discard_page(p).unwrap();
    }
    let live = dev.mm_stat().unwrap();
    let s = inspect_json(&["--snapshot", &name, "--optimize", "--jobs", "1"]);
    eprintln!("{}", ok(&["inspect"]));
    eprintln!("{}", ok(&["inspect", "--snapshot", &name, "--optimize", "--jobs", "1"]));
    let (kernel, free) =
        (s["live_pages"].as_u64().unwrap(), s["history_free_pages"].as_u64().unwrap());
    assert_eq!(kernel, live.mem_used_total / page);
    assert!(free <= kernel, "the snapshot holds {free} pages, the kernel {kernel}");
    assert_eq!(s["fragmentation_pages"].as_i64().unwrap(), kernel as i64 - free as i64);
    assert_eq!(s["lengths_exact"], true);
    let best = s["optimized"]["pages"].as_u64().unwrap();
    assert!(best <= free, "the optimizer's table holds {best} pages, the kernel's table {free}");
    assert!(!s["optimized"]["table"].as_str().unwrap().is_empty());
    eprintln!(
        "after discards: kernel {kernel} pages, without history {free}, optimized {best} pages"
    );
    dev.remove().unwrap();
}

#[test]
fn a_snapshot_refuses_a_missing_device_and_a_partial_one_says_so() {
    let Some((_guard, dev)) = filled_device("inspect snapshot --max-pages", 500) else { return };
    let name = format!("zram{}", dev.id());
    let out = run(&["inspect", "--snapshot", "zram4000"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such device"));
    let s = inspect_json(&["--snapshot", &name, "--max-pages", "100"]);
    assert_eq!(s["complete"], false);
    assert!(s["fragmentation_pct"].is_null());
    let text = ok(&["inspect", "--snapshot", &name]);
    assert!(text.contains("held by fragmentation") && text.contains("classic chain 16"), "{text}");
    dev.remove().unwrap();
}
