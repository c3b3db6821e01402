//! `zsmalloc cost`: the JSON contract (keys, modes, uniqueness of the rows), refused and unknown
//! modes and compressors, the other formats and the plot, a live process as the corpus, the
//! physics that holds for `copy` (a spanning section copies, an in-place one does not), and
//! liblz4 against lz4_flex on the corpus.

use std::collections::HashSet;

use serde_json::Value;

mod common;

use common::{json, ok, zsmalloc};

/// A small, fast run: a few hundred pages, a small pool, one round.
const SMALL: [&str; 8] =
    ["--synthetic-pages", "256", "--pool-mib", "4", "--repeat", "1", "--format", "json"];

fn small(extra: &[&str]) -> Value {
    let mut args = vec!["cost"];
    args.extend_from_slice(&SMALL);
    args.extend_from_slice(extra);
    json(&args)
}

fn is_samples(v: &Value) -> bool {
    let f = |k: &str| v[k].as_f64();
    matches!((f("min"), f("median"), f("max")), (Some(a), Some(b), Some(c)) if a <= b && b <= c && a >= 0.0)
}

#[test]
fn the_json_contract() {
    let d = small(&["--page-size", "16384", "--chain-size", "8"]);
    for key in ["reads", "writes", "timer_overhead_ns", "summary", "skipped", "environment"] {
        assert!(d.get(key).is_some(), "missing {key}");
    }
    assert!(is_samples(&d["timer_overhead_ns"]));
    let modes = ["copy", "map", "contiguous", "sg"];
    let reads = d["reads"].as_array().unwrap();
    assert!(!reads.is_empty());
    let mut seen = HashSet::new();
    let mut mode_seen = HashSet::new();
    for r in reads {
        for k in [
            "label",
            "compressor",
            "mode",
            "spanning",
            "reads",
            "ns_per_section",
            "ns_per_decompress",
            "instructions_per_section",
            "instructions_scope",
            "kind",
        ] {
            assert!(r.get(k).is_some(), "read row without {k}: {r}");
        }
        let mode = r["mode"].as_str().unwrap();
        assert!(modes.contains(&mode), "{mode}");
        mode_seen.insert(mode.to_string());
        assert!(["lz4", "zstd"].contains(&r["compressor"].as_str().unwrap()));
        assert!(r["reads"].as_u64().unwrap() >= 10_000, "batches of at least 10^4: {r}");
        assert!(is_samples(&r["ns_per_section"]) && is_samples(&r["ns_per_decompress"]), "{r}");
        assert!(r["instructions_per_section"].is_null() || r["instructions_per_section"].is_u64());
        let kind = r["kind"].as_str().unwrap();
        assert!(["regular", "huge", "incompressible"].contains(&kind), "{kind}");
        if kind == "regular" {
            let key = (
                r["label"].as_str().unwrap().to_string(),
                r["compressor"].as_str().unwrap().to_string(),
                mode.to_string(),
                r["spanning"].as_bool().unwrap(),
            );
            assert!(seen.insert(key.clone()), "duplicate regular row {key:?}");
        } else {
            assert_eq!(r["spanning"], false, "{r}");
        }
    }
    // Both splits exist for copy, and every mode either ran or says why not.
    assert!(
        seen.iter().any(|k| k.2 == "copy" && k.3) && seen.iter().any(|k| k.2 == "copy" && !k.3)
    );
    let skipped: Vec<&Value> = d["skipped"].as_array().unwrap().iter().collect();
    for m in modes {
        let why = skipped.iter().find(|s| s["mode"] == m);
        assert!(
            mode_seen.contains(m) ^ why.is_some(),
            "mode {m}: ran {} skipped {why:?}",
            mode_seen.contains(m)
        );
        if let Some(s) = why {
            assert!(!s["reason"].as_str().unwrap().is_empty());
        }
    }
    let writes = d["writes"].as_array().unwrap();
    let paths: HashSet<&str> = writes.iter().map(|w| w["path"].as_str().unwrap()).collect();
    assert_eq!(paths, HashSet::from(["store", "malloc_write"]));
    for w in writes {
        assert!(w["label"].is_string() && is_samples(&w["ns_per_write"]), "{w}");
        assert!(w.get("instructions_per_write").is_some());
    }
    // The default configurations at 16K pages: classic, heuristic and delta 16.
    let labels: HashSet<&str> = reads.iter().map(|r| r["label"].as_str().unwrap()).collect();
    assert_eq!(labels, HashSet::from(["classic", "heuristic", "delta-16"]));
    let rows = d["summary"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3 * 2 * mode_seen.len());
    let pools = d["pools"].as_array().unwrap();
    for r in rows {
        assert!(r["pages"].as_u64().unwrap() > 0);
        assert_eq!(r["vs_base"].is_null(), r["label"] == "classic", "{r}");
        // Each row says how many copies its pages hold, and pages per copy compare between
        // compressors whose pools hold different numbers of copies.
        let pool = pools
            .iter()
            .find(|p| p["label"] == r["label"] && p["compressor"] == r["compressor"])
            .unwrap();
        assert_eq!(r["copies"], pool["replicas"], "{r}");
        let per_copy = r["pages"].as_f64().unwrap() / r["copies"].as_f64().unwrap();
        assert!((r["pages_per_copy"].as_f64().unwrap() - per_copy).abs() <= 0.05, "{r}");
    }
    let env = &d["environment"];
    assert_eq!(env["backing"], "anonymous");
    assert!(env["transparent_hugepage"].get("enabled").is_some());
    assert!(env["transparent_hugepage"].get("shmem_enabled").is_some());
    // Every pool of a compressor holds the corpus the same number of times (pages compare).
    for c in ["lz4", "zstd"] {
        let reps: HashSet<u64> = pools
            .iter()
            .filter(|p| p["compressor"] == c)
            .map(|p| p["replicas"].as_u64().unwrap())
            .collect();
        assert_eq!(reps.len(), 1, "{c}: {reps:?}");
    }
}

#[test]
fn bad_modes_compressors_and_levels_are_refused_with_the_accepted_names() {
    let e = zsmalloc(&["cost", "--modes", "copy,mmap"]);
    assert_eq!(e.status.code(), Some(2));
    let msg = String::from_utf8_lossy(&e.stderr);
    assert!(msg.contains("copy, map, contiguous, sg"), "{msg}");
    let e = zsmalloc(&["cost", "--compressor", "lzo"]);
    assert_eq!(e.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&e.stderr).contains("lz4, zstd"));
    let e = zsmalloc(&["cost", "--compressor", "lz4", "--level", "9"]);
    assert_eq!(e.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&e.stderr).contains("lz4"));
    let e = zsmalloc(&["cost", "--batch", "100"]);
    assert_eq!(e.status.code(), Some(2));
    let e = zsmalloc(&["cost", "/nonexistent/corpus"]);
    assert_eq!(e.status.code(), Some(2));
    let e = zsmalloc(&["cost", "--plot", "/nonexistent/dir/x.svg"]);
    assert_eq!(e.status.code(), Some(2));
    // Only a mode the core refuses: an error with its reason; accepted: it runs.
    for m in ["map", "contiguous"] {
        let mut args = vec!["cost", "--modes", m, "--compressor", "lz4", "--config", "classic"];
        args.extend_from_slice(&SMALL);
        let out = zsmalloc(&args);
        if out.status.success() {
            let d: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert!(d["reads"].as_array().unwrap().iter().all(|r| r["mode"] == m));
        } else {
            assert_eq!(out.status.code(), Some(2));
            assert!(String::from_utf8_lossy(&out.stderr).contains(m));
        }
    }
}

#[test]
fn table_csv_plot_and_a_sweep() {
    let dir = std::env::temp_dir().join(format!("zsmalloc-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("cost.svg");
    let mut args = vec![
        "cost",
        "--synthetic-pages",
        "128",
        "--pool-mib",
        "2",
        "--repeat",
        "1",
        "--compressor",
        "lz4",
        "--modes",
        "copy",
        "--sweep",
        "chain-size=4,8",
        "--sweep",
        "chain-policy=classic,heuristic",
        "--plot",
    ];
    args.push(svg.to_str().unwrap());
    let table = ok(&args);
    assert!(table.contains("summary") && table.contains("share of all read CPU"), "{table}");
    assert!(table.contains("handles: an embedded word is 8 B"));
    // A sweep's long labels still fit a terminal: the tables are split, not widened.
    assert!(table.lines().all(|l| l.chars().count() <= 120), "{table}");
    let pic = std::fs::read_to_string(&svg).unwrap();
    assert!(pic.contains("<svg") && pic.contains("Pareto"));
    args.truncate(args.len() - 2);
    args.extend(["--format", "csv"]);
    let csv = ok(&args);
    let mut blocks = csv.split("\n\n");
    let reads = blocks.next().unwrap();
    assert!(reads.starts_with("table,label,compressor,mode,kind,spanning"));
    // Four configurations x (spanning, in place, incompressible) at most.
    let n = reads.lines().skip(1).count();
    assert!((8..=16).contains(&n), "{n} rows\n{reads}");
    assert!(reads.contains("\"chain-size=4,chain-policy=heuristic\""));
    assert!(blocks.next().unwrap().starts_with("table,label,compressor,path"));
    assert!(blocks.next().unwrap().starts_with("table,label,compressor,mode,pages"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_live_process_is_a_corpus() {
    // This test process itself: its heap and stacks.
    let keep: Vec<u64> = (0..(1u64 << 18)).map(|i| i * 2654435761 % 1000).collect();
    std::hint::black_box(&keep);
    let pid = std::process::id().to_string();
    let d = small(&["--pid", &pid, "--max-pages", "512", "--compressor", "lz4", "--modes", "copy"]);
    let c = &d["corpus"][0];
    assert!(c["source"].as_str().unwrap().contains(&pid));
    assert!(c["input_pages"].as_u64().unwrap() > 0);
    let e = zsmalloc(&["cost", "--pid", "999999999"]);
    assert_eq!(e.status.code(), Some(2));
}

/// The physics that holds for `copy` today: a spanning section copies the object, an in-place
/// one returns a pointer, so spanning sections cost more. A generous margin (1.5x) on medians
/// over 3 rounds at 16K pages, where spanning objects are several KiB: measured ratios are
/// 4-8x on a loaded 2-core machine.
#[test]
fn copy_mode_spanning_sections_cost_more_than_in_place_ones() {
    let d = json(&[
        "cost",
        "--page-size",
        "16384",
        "--chain-size",
        "8",
        "--compressor",
        "lz4",
        "--modes",
        "copy",
        "--config",
        "classic",
        "--synthetic-pages",
        "512",
        "--repeat",
        "3",
        "--format",
        "json",
    ]);
    let med = |span: bool| {
        d["reads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["kind"] == "regular" && r["spanning"] == span)
            .map(|r| r["ns_per_section"]["median"].as_f64().unwrap())
            .unwrap()
    };
    let (s, i) = (med(true), med(false));
    assert!(s > 1.5 * i, "spanning {s} ns vs in place {i} ns");
}

/// liblz4's `LZ4_compress_default` called directly: the compressed length.
fn lz4_compress(src: &[u8], dst: &mut [u8]) -> usize {
    let (sl, dl) = (i32::try_from(src.len()).unwrap(), i32::try_from(dst.len()).unwrap());
    // SAFETY: the pointers and lengths describe the two live slices; liblz4 reads `sl` bytes
    // of `src` and writes at most `dl` bytes into `dst`.
    let n = unsafe {
        lz4_sys::LZ4_compress_default(src.as_ptr().cast(), dst.as_mut_ptr().cast(), sl, dl)
    };
    usize::try_from(n).ok().filter(|&n| n > 0).expect("fits the bound")
}

/// The study compresses with liblz4 (`LZ4_compress_default`, zram's lz4 at its default
/// acceleration), not lz4_flex: the two give different lengths on the corpus (so different
/// placement), and liblz4's are the ones the kernel's port of the same code gives.
#[test]
fn the_study_uses_liblz4_whose_lengths_differ_from_lz4_flex() {
    use zsmalloc_codec::{bound, Codec, Compressor};
    use zsmalloc_lab::cost::corpus::Source;
    let mut out = vec![0u8; bound(16384)];
    let mut flex = vec![0u8; lz4_flex::block::get_maximum_output_size(16384)];
    let (mut same, mut differ) = (0, 0);
    for page in [4096usize, 16384] {
        let pages = Source::Builtin { pages: 512, seed: 1 }.load(page, 512).unwrap();
        for p in pages.chunks(page) {
            let a = lz4_compress(p, &mut out);
            let b = lz4_flex::block::compress_into(p, &mut flex).unwrap();
            if a == b {
                same += 1;
            } else {
                differ += 1;
            }
            // And the study's codec is that library: same bytes, round trip.
            let mut c = Codec::new(Compressor::Lz4, 0, page).unwrap();
            let mut out2 = vec![0u8; bound(page)];
            assert_eq!(c.compress(p, &mut out2).unwrap(), a);
            assert_eq!(out2[..a], out[..a]);
            let mut back = vec![0u8; page];
            assert_eq!(c.decompress(&out2[..a], &mut back), Ok(page));
            assert_eq!(back, p);
        }
    }
    assert!(differ > same, "{same} pages of equal length, {differ} differ");
    // The shortest zero page with one other byte (at the offsets `dist`'s floor is taken at):
    // 26 bytes from liblz4, where lz4_flex gives 27.
    let mut buf = vec![0u8; 4096];
    let mut shortest = usize::MAX;
    for at in [0, 1, 7, 64, 2048, 4096 - 13, 4095] {
        buf.fill(0);
        buf[at] = 0x5a;
        shortest = shortest.min(lz4_compress(&buf, &mut out));
    }
    assert_eq!(shortest, 26);
}

/// The README's `zsmalloc cost --page-size 16K` needs a bounded, known amount of memory
/// whatever last-level cache the machine reports: pools were sized from it (twice 480 MiB on
/// one machine) and all held at once, and the run was killed by the out-of-memory killer at
/// about 17 GB. Its plan, with a reported 480 MiB cache, stays under 7 GiB with every mode's
/// pools at once, and under 4 GiB with a phase per pool read mode, its fallback.
#[test]
fn the_readme_run_is_planned_under_7_gib_whatever_cache_is_reported() {
    use zsmalloc_lab::config::ConfigSpec;
    use zsmalloc_lab::cost;
    let base = ConfigSpec::with_overrides(&ConfigSpec::default(), "page-size=16384").unwrap();
    for llc in [32u64 << 20, 480 << 20, 4 << 30] {
        let mut opts = cost::CostOptions::new(cost::default_specs(&base).unwrap());
        opts.pool_bytes = cost::default_pool_bytes_for(Some(llc));
        opts.evict_bytes = cost::evict_bytes_for(Some(llc));
        let plan = cost::memory_plan(&opts).unwrap();
        eprintln!("reported cache {} MiB: {}", llc >> 20, plan.describe());
        // Every mode's pools at once: three configurations in each of the three pool read
        // modes, one phase per compressor, so the modes are measured in the same rounds.
        assert!(plan.peak_bytes < 7 << 30, "cache {llc}: {}", plan.describe());
        if !plan.modes_apart {
            assert_eq!(plan.phases.len(), 2, "{}", plan.describe());
            assert!(plan.phases.iter().all(|p| p.pools.len() == 3 * 3));
        }
        // Where that is more than the machine has, the plan falls back to a phase per pool
        // read mode: a third of that, as the plan says. (The limit is well below the peak: the
        // plan counts the process's resident memory, which moves by a few MiB between calls.)
        opts.max_memory = Some(plan.peak_bytes - (256 << 20));
        let apart = cost::memory_plan(&opts).unwrap();
        assert!(apart.modes_apart && apart.phases.len() == 2 * 3, "{}", apart.describe());
        assert!(apart.peak_bytes < 4 << 30, "cache {llc}: {}", apart.describe());
        assert!(apart.describe().contains("a phase of its own"), "{}", apart.describe());
    }
}

/// The plan is printed before the run; a run stays under the peak it announced, and the table
/// says what the pools held.
#[test]
fn a_run_announces_its_memory_and_stays_under_it() {
    let mut args = vec!["cost"];
    args.extend_from_slice(&SMALL);
    args.extend(["--compressor", "lz4", "--modes", "copy,map"]);
    let out = zsmalloc(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("memory plan: peak about"), "{err}");
    let wide: Vec<&str> = err.lines().filter(|l| l.chars().count() > 120).collect();
    assert!(wide.is_empty(), "plan lines over 120 columns: {wide:#?}");
    // Both modes in one phase, on the pools of their own read modes.
    assert!(err.contains("phase 1 of 1:") && err.contains("classic (copy)"), "{err}");
    assert!(err.contains("classic (map)"), "{err}");
    let d: Value = serde_json::from_slice(&out.stdout).unwrap();
    let e = &d["environment"];
    let estimate = e["memory_estimate_bytes"].as_u64().unwrap();
    let peak = e["peak_rss_bytes"].as_u64().unwrap();
    assert!(peak > 0 && peak <= estimate, "peak {peak} above the estimate {estimate}");
    let held = e["pool_bytes_held"].as_array().unwrap();
    let page_bytes = |p: &Value| p["pages"].as_u64().unwrap() * 4096;
    let pools = d["pools"].as_array().unwrap();
    assert_eq!(held[0].as_u64(), pools.iter().map(page_bytes).min());
    assert_eq!(held[1].as_u64(), pools.iter().map(page_bytes).max());
    // --pool-mib 4 is the pools' size: the copies it asks for, not more for distinct batches
    // (many times more copies of a corpus this small).
    assert!(held[1].as_u64().unwrap() < 8 << 20, "pools of {held:?} for --pool-mib 4");
    // The table's method line states what the pools held, not only the target.
    let table = ok(&[
        "cost",
        "--synthetic-pages",
        "256",
        "--pool-mib",
        "4",
        "--repeat",
        "1",
        "--compressor",
        "lz4",
        "--modes",
        "copy",
    ]);
    let method = table.lines().find(|l| l.starts_with("method:")).unwrap();
    assert!(
        method.contains("method: pools of ") && method.contains("the 4 MiB of --pool-mib"),
        "{method}"
    );
}

#[test]
fn a_plan_above_the_limit_is_refused_before_the_pools_are_filled() {
    let mut args = vec!["cost", "--max-memory", "64M"];
    args.extend_from_slice(&SMALL);
    let out = zsmalloc(&args);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    // Refused from the flags alone, before the corpus is compressed or a probe filled.
    assert!(err.contains("more than --max-memory 64 MiB (67108864 B)"), "{err}");
    assert!(err.contains("before the plan") && !err.contains("memory plan: peak"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(out.stdout.is_empty());
    let out = zsmalloc(&["cost", "--max-memory", "lots"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("invalid value 'lots' for '--max-memory <BYTES>'"), "{err}");
}

/// The table fits a 120-column terminal; one round shows single values (no `[x..x]` spread
/// of one measurement) and says it has no spread; modes of one configuration are read in the
/// same rounds, and their pools' spread of the in-place section is stated.
#[test]
fn the_text_fits_a_terminal_and_a_single_round_shows_values() {
    let table = ok(&[
        "cost",
        "--synthetic-pages",
        "128",
        "--pool-mib",
        "2",
        "--repeat",
        "1",
        "--compressor",
        "lz4",
        "--modes",
        "copy,map,contiguous",
    ]);
    let wide: Vec<&str> = table.lines().filter(|l| l.chars().count() > 120).collect();
    assert!(wide.is_empty(), "lines over 120 columns: {wide:#?}");
    assert!(table.contains("one round:") && table.contains("no spread"), "{table}");
    let ranges = table
        .match_indices('[')
        .filter(|(i, _)| table[i + 1..].starts_with(|c: char| c.is_ascii_digit()));
    assert_eq!(ranges.count(), 0, "a single round has no range: {table}");
    // A negative spanning extra (contiguous reads spanning objects in place) is called noise.
    let summary = table.lines().skip_while(|l| !l.starts_with("summary (")).skip(2);
    let summary: Vec<&str> = summary.take_while(|l| l.contains('%')).collect();
    assert!(summary.len() >= 3, "{table}");
    for line in summary.iter().filter(|l| l.contains(" contiguous ")) {
        let extra = line.split_whitespace().nth(8).unwrap();
        if extra.starts_with('-') {
            assert!(line.contains("noise"), "{line}");
        }
    }
    let pools = table.lines().position(|l| l.starts_with("pools: the in-place section"));
    assert!(pools.is_some(), "{table}");
    // Every figure of the reads table is named in one of its parts.
    for head in ["section", "decompress", "read", "zswap", "faults/op"] {
        assert!(table.lines().any(|l| l.starts_with("config ") && l.contains(head)), "{head}");
    }
}
