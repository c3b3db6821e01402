//! `zsmalloc tier --folio-size` and `--readahead` on the C test program
//! (zsmalloc-tier/tests/programs/tier_check.c): folios of 16K and 64K read back, racing
//! writers and a fork, parts of a folio emptied, readahead hits on a sequential re-read, their
//! refusals, and a folio trace replayed to the run's pool pages with its band. They need root
//! (or access to /dev/userfaultfd) and a C compiler, and skip with the reason printed
//! otherwise (tier_support).

mod tier_support;

use std::path::Path;

use serde_json::Value;
use tier_support::*;

/// `tier_check ARGS` under `budget` with `--folio-size folio`: every check passed, groups
/// evicted, and a fault bringing back more than one page on the average.
fn folio_run(p: &Path, folio: &str, budget: &str, args: &[&str], passes: &[&str]) -> Run {
    let all = [&["--budget", budget, "--folio-size", folio, "--", p.to_str().unwrap()], args];
    let r = tier(&all.concat());
    let budget = zsmalloc_core::config::parse_bytes(budget).unwrap();
    assert_tiered(&r, budget, passes);
    let pages: u64 = if folio == "16K" { 4 } else { 16 };
    assert_eq!(figure(&r, "folio_size"), pages * PAGE, "{:?}", r.report);
    assert!(figure(&r, "group_evictions") > 0, "{:?}", r.report);
    // Each group eviction moves out up to a folio's pages.
    assert!(figure(&r, "evictions") <= figure(&r, "group_evictions") * pages, "{:?}", r.report);
    assert!(r.stderr.contains(&format!("folios                {folio}: ")), "{}", r.stderr);
    r
}

#[test]
fn folios_of_16k_and_64k_read_back_every_word() {
    let Some(p) = program("folios_of_16k_and_64k_read_back_every_word") else { return };
    let single = tier(&["--budget", "4M", "--", p.to_str().unwrap(), "fill", "64"]);
    assert_eq!(figure(&single, "folio_size"), PAGE);
    assert_eq!(figure(&single, "group_evictions"), 0);
    let per_fault = |r: &Run| r.report.as_ref().unwrap()["decompressed_bytes_per_fault"].as_f64();
    assert!(per_fault(&single).unwrap() <= PAGE as f64, "{:?}", single.report);
    for (folio, pages) in [("16K", 4), ("64K", 16)] {
        let r = folio_run(p, folio, "4M", &["fill", "64"], &["first pass", "second pass"]);
        // A fault brings its group back: fewer faults, each decompressing several pages.
        assert!(figure(&r, "faults") * 2 < figure(&single, "faults"), "{:?}", r.report);
        let per = per_fault(&r).unwrap();
        assert!(per > (pages / 2 * PAGE) as f64 && per <= (pages * PAGE) as f64, "{per}");
        assert!(figure(&r, "decompressed_bytes") > 0);
    }
}

#[test]
fn folio_writers_racing_the_evictor_and_a_fork_lose_nothing() {
    let Some(p) = program("folio_writers_racing_the_evictor_and_a_fork_lose_nothing") else {
        return;
    };
    for folio in ["16K", "64K"] {
        folio_run(p, folio, "4M", &["race", "4", "32"], &["race"]);
        let p = p.to_str().unwrap();
        let r = tier(&["--budget", "4M", "--folio-size", folio, "--", p, "fork", "32"]);
        assert_ran(&r, 4 << 20, &["child", "parent", "parent again"]);
        assert_eq!(figure(&r, "forks"), 1);
        assert!(figure(&r, "group_evictions") > 0, "{:?}", r.report);
    }
}

#[test]
fn parts_of_a_folio_emptied_read_zeros_and_the_rest_keeps_its_bytes() {
    let Some(p) = program("parts_of_a_folio_emptied_read_zeros") else { return };
    for folio in ["16K", "64K"] {
        folio_run(p, folio, "2M", &["partial", "8"], &["partial"]);
        folio_run(p, folio, "256K", &["remap"], &["remap"]);
        // Groups whose other pages were first touched while one was out leave whole again.
        let r = folio_run(p, folio, "2M", &["sparse", "8"], &["sparse"]);
        assert_eq!(figure(&r, "pool_full_stops"), 0, "{:?}", r.report);
    }
}

#[test]
fn readahead_hits_on_a_sequential_reread() {
    let Some(p) = program("readahead_hits_on_a_sequential_reread") else { return };
    let p = p.to_str().unwrap();
    let r = tier(&["--budget", "4M", "--readahead", "3", "--", p, "fill", "16"]);
    assert_tiered(&r, 4 << 20, &["first pass", "second pass"]);
    let (read, hits) = (figure(&r, "readahead_pages"), figure(&r, "readahead_hits"));
    // The passes read every block in order: most of a cluster read ahead is used.
    assert!(hits > 0 && hits <= read && hits * 2 > read, "{hits} of {read}: {:?}", r.report);
    assert!(hits < figure(&r, "faults"), "a hit is a fault served from the cache");
    assert_eq!(figure(&r, "readahead"), 3);
    assert!(r.stderr.contains("page-cluster 3 (8 pages)"), "{}", r.stderr);
    // The readahead's reads are in the trace, its objects freed at the hits.
    let trace = tempfile("readahead.trace");
    let t = trace.to_str().unwrap();
    let r = tier(&["--budget", "4M", "--readahead", "3", "--record", t, "--", p, "fill", "16"]);
    assert_tiered(&r, 4 << 20, &["first pass", "second pass"]);
    let args = [trace.as_os_str(), "--no-time".as_ref(), "--format".as_ref(), "json".as_ref()];
    let (code, out, err) = zsmalloc(&[&["replay".as_ref()][..], &args].concat());
    assert_eq!(code, 0, "{err}");
    let replay: Value = serde_json::from_str(&out).expect("replay's JSON");
    assert_eq!(replay["pages_peak"].as_u64(), Some(figure(&r, "max_pool_pages")), "{replay}");
    assert_eq!(replay["op_errors"].as_u64(), Some(0), "{replay}");
    let none = tier(&["--budget", "4M", "--", p, "fill", "16"]);
    assert_eq!((figure(&none, "readahead_pages"), figure(&none, "readahead_hits")), (0, 0));
    let r = tier(&["--budget", "4M", "--readahead", "4", "--", p, "fork", "32"]);
    assert_ran(&r, 4 << 20, &["child", "parent", "parent again"]);
}

#[test]
fn folio_and_readahead_refusals_are_one_line_and_exit_2() {
    for (args, says) in [
        (&["--folio-size", "8K"][..], "4K, 16K or 64K is accepted"),
        (&["--readahead", "5"], "a whole number in 0..=4 is accepted"),
        (&["--readahead", "3", "--folio-size", "16K"], "brings its whole group already"),
        (&["--folio-size", "64K", "--multi-page", "16K"], "holds objects up to 16384 bytes"),
        (&["--folio-size", "16K", "--backend", "zblock"], "cannot store a folio as one object"),
    ] {
        let r = tier(&[args, &["--", "true"]].concat());
        assert_eq!((r.code, r.stderr.lines().count()), (2, 1), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
    }
}

#[test]
fn a_folio_trace_replays_to_the_same_pool_pages() {
    let Some(p) = program("a_folio_trace_replays_to_the_same_pool_pages") else { return };
    let trace = tempfile("folio.trace");
    let t = trace.to_str().unwrap();
    let args = ["--budget", "4M", "--folio-size", "64K", "--record", t, "--"];
    let r = tier(&[&args[..], &[p.to_str().unwrap(), "fill", "16"]].concat());
    assert_tiered(&r, 4 << 20, &["first pass", "second pass"]);
    let text = std::fs::read_to_string(&trace).expect("the trace");
    assert!(text.contains("multi_page_size 65536 (replay with --multi-page 65536)"), "header");
    let len = |l: &str| l.split_whitespace().nth(2).and_then(|n| n.parse::<u64>().ok());
    let stores: Vec<u64> =
        text.lines().filter(|l| l.starts_with("store ")).filter_map(len).collect();
    assert!(stores.iter().any(|&n| n > PAGE), "objects of several pages are stored");
    assert!(stores.iter().all(|&n| n <= 16 * PAGE));
    let replay = |extra: &[&str]| {
        let mut a: Vec<&std::ffi::OsStr> = vec!["replay".as_ref(), trace.as_os_str()];
        a.extend(extra.iter().map(std::ffi::OsStr::new));
        a.extend(["--no-time", "--format", "json"].map(std::ffi::OsStr::new));
        let (code, out, err) = zsmalloc(&a);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str::<Value>(&out).expect("replay's JSON")
    };
    let band = replay(&["--multi-page", "64K"]);
    assert_eq!(band["pages_peak"].as_u64(), Some(figure(&r, "max_pool_pages")), "{band}");
    assert_eq!(band["stores"].as_u64(), Some(stores.len() as u64), "{band}");
    assert_eq!(band["op_errors"].as_u64(), Some(0), "{band}");
    // Without the band the pool refuses the objects above a page.
    assert!(replay(&[])["op_errors"].as_u64() > Some(0));
}
