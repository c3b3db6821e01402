//! `zsmalloc folios`: the JSON contract, what the three swap-in paths decompress, same-filled
//! tested over the whole folio, the refusals, the other formats and the plot, the traces it
//! writes and the band's tables.

use serde_json::Value;

mod common;

use common::{json, ok, s, scratch, svg_texts, usage_error};

/// A small, fast run.
const SMALL: [&str; 8] =
    ["folios", "--synthetic-pages", "256", "--repeat", "1", "--sample-mib", "1", "--format"];

fn small(format: &str, extra: &[&str]) -> String {
    let mut args = SMALL.to_vec();
    args.push(format);
    args.extend_from_slice(extra);
    if !extra.contains(&"--folio-sizes") {
        args.extend_from_slice(&["--folio-sizes", "4K,16K"]);
    }
    ok(&args)
}

fn is_samples(v: &Value) -> bool {
    let f = |k: &str| v[k].as_f64();
    matches!((f("min"), f("median"), f("max")), (Some(a), Some(b), Some(c)) if a <= b && b <= c && a >= 0.0)
}

fn row<'a>(r: &'a Value, compressor: &str, folio: u64) -> &'a Value {
    r["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["compressor"] == compressor && w["folio_size"] == folio)
        .unwrap_or_else(|| panic!("no row {compressor} {folio}"))
}

#[test]
fn rows_carry_the_figures_the_review_asked_for() {
    let r: Value = serde_json::from_str(&small("json", &["--compressor", "lz4,lzo,zstd"])).unwrap();
    assert_eq!(r["rows"].as_array().unwrap().len(), 6);
    assert_eq!(r["input_bytes"], 256 * 4096);
    for w in r["rows"].as_array().unwrap() {
        for k in ["compressed_bytes", "objects", "pages_used", "max_pages_used", "padding_bytes"] {
            assert!(w[k].as_u64().is_some(), "{k}: {w}");
        }
        assert!(w["pages_used"].as_u64() <= w["max_pages_used"].as_u64(), "{w}");
        assert!(w["pages_after_compaction"].as_u64() <= w["max_pages_used"].as_u64(), "{w}");
        assert!(w["compaction"]["objects_moved"].as_u64().is_some());
        assert!(w["compaction"]["bytes_moved"].as_u64().is_some());
        assert_eq!(w["churned"], 256 / (w["folio_size"].as_u64().unwrap() / 4096) / 2);
        for p in ["large_folio", "order0_fallback", "batch_fallback", "mixed_order0", "mixed_batch"]
        {
            assert!(is_samples(&w["reads"][p]["ns_per_4k"]), "{p}: {w}");
        }
        assert!(
            is_samples(&w["writes"]["ns_per_4k"]) && is_samples(&w["writes"]["ns_per_4k_by_page"])
        );
        let ratio = w["ratio"].as_f64().unwrap();
        let expect = w["compressed_bytes"].as_f64().unwrap() / (256.0 * 4096.0);
        assert!((ratio - expect).abs() < 1e-3, "{w}");
    }
    assert_eq!(row(&r, "lzo", 16384)["multi_page_size"], 16384);
    assert_eq!(row(&r, "lzo", 4096)["multi_page_size"], 0);
}

#[test]
fn the_fallbacks_decompress_what_the_rfc_says() {
    let r: Value = serde_json::from_str(&small(
        "json",
        &["--compressor", "lz4", "--folio-sizes", "4K,16K,64K"],
    ))
    .unwrap();
    let bytes = |folio: u64, p: &str| {
        row(&r, "lz4", folio)["reads"][p]["bytes_decompressed_per_4k"].as_f64().unwrap()
    };
    // A folio of a page: the three paths are the same work.
    assert_eq!(bytes(4096, "large_folio"), bytes(4096, "order0_fallback"));
    assert_eq!(bytes(4096, "large_folio"), bytes(4096, "batch_fallback"));
    for folio in [16384u64, 65536] {
        let large = bytes(folio, "large_folio");
        assert!(large > 0.0);
        // Each 4K fault decompresses the whole object: folio / 4K times the work.
        assert_eq!(bytes(folio, "order0_fallback"), large * (folio / 4096) as f64);
        // v3 4/4: one decompression per four small folios.
        assert_eq!(bytes(folio, "batch_fallback"), large * (folio / 16384) as f64);
        let w = row(&r, "lz4", folio);
        let mixed = w["reads"]["mixed_order0"]["bytes_decompressed_per_4k"].as_f64().unwrap();
        let expect = 0.9 * large + 0.1 * bytes(folio, "order0_fallback");
        assert!((mixed - expect).abs() < 1e-6, "{mixed} {expect}");
    }
}

#[test]
fn swap_ins_without_refill_leave_holes_for_compaction() {
    let r: Value = serde_json::from_str(&small(
        "json",
        &["--compressor", "zstd", "--churn-share", "0.75", "--refill-share", "0"],
    ))
    .unwrap();
    for w in r["rows"].as_array().unwrap() {
        assert_eq!(w["refilled"], 0, "{w}");
        assert!(w["churned"].as_u64().unwrap() > 0);
        assert!(w["pages_after_compaction"].as_u64() < w["pages_used"].as_u64(), "{w}");
        assert!(w["compaction"]["objects_moved"].as_u64().unwrap() > 0, "{w}");
    }
}

#[test]
fn same_filled_is_tested_over_the_whole_folio() {
    // 16 zero pages (one 64K folio), then 15 zero pages and one that is not.
    let mut data = vec![0u8; 32 * 4096];
    data[31 * 4096 + 100] = 1;
    let f = scratch("folios-same.bin");
    std::fs::write(&f, &data).unwrap();
    let r = json(&[
        "folios",
        s(&f),
        "--folio-sizes",
        "4K,64K",
        "--compressor",
        "lz4",
        "--repeat",
        "1",
        "--format",
        "json",
    ]);
    assert_eq!(row(&r, "lz4", 4096)["same_filled"], 31);
    assert_eq!(row(&r, "lz4", 65536)["same_filled"], 1);
    assert_eq!(row(&r, "lz4", 65536)["objects"], 1);
}

#[test]
fn bad_flags_are_refused_in_one_line() {
    let e = usage_error(&["folios", "--compressor", "lzo-rle"]);
    assert!(e.contains("only in the kernel"), "{e}");
    let e = usage_error(&["folios", "--folio-sizes", "12K"]);
    assert!(e.contains("--folio-sizes"), "{e}");
    usage_error(&["folios", "--folio-sizes", "128K"]);
    usage_error(&["folios", "--compressor", "lz4,lzo", "--level", "5"]);
    usage_error(&["folios", "--churn-share", "1.5"]);
    usage_error(&["folios", "--format", "mm_stat"]);
    usage_error(&["folios", "--backend", "zblock"]);
    let e = usage_error(&["folios", "--synthetic-pages", "4096", "--max-memory", "40M"]);
    assert!(e.contains("--synthetic-pages 4096"), "{e}");
}

#[test]
fn table_csv_and_plot() {
    let t = small("table", &["--compressor", "lz4"]);
    assert!(t.contains("Store") && t.contains("batch fallback") && t.contains("16K"), "{t}");
    assert!(t.contains("pool: page 4096, chain 8; churn") && !t.contains("level"), "{t}");
    // The pages left after compaction are named so: `compacted` elsewhere counts pages freed.
    let store_head = t.lines().skip_while(|l| !l.starts_with("Store")).nth(1).unwrap();
    assert!(store_head.contains("pages after compaction"), "{store_head}");
    assert!(!store_head.replace("pages after compaction", "").contains("compact"), "{store_head}");
    let t = small("table", &["--compressor", "lz4,zstd", "--folio-sizes", "16K"]);
    assert!(t.contains("pool: page 4096, chain 8; zstd level 3; churn"), "{t}");
    let csv = small("csv", &["--compressor", "lz4"]);
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert!(head.contains(&"max_pages_used") && head.contains(&"order0_fallback_ns_per_4k_median"));
    assert!(head.contains(&"pages_after_compaction"), "{head:?}");
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r.len() == head.len() && r.iter().all(|c| !c.is_empty())));
    let svg = scratch("folios.svg");
    small("json", &["--compressor", "lz4,zstd", "--folio-sizes", "4K,8K,16K", "--plot", s(&svg)]);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("<svg") && text.contains("swap-in CPU"), "plot");
    // Each panel: its caption, axis names, then its y ticks from the bottom: the pages axes
    // start at 0 as the CPU axes do; the x ticks are the folio sizes, nothing between them.
    let texts = svg_texts(&text);
    let captions: Vec<usize> = (0..texts.len())
        .filter(|&i| texts[i].starts_with("pool pages") || texts[i].starts_with("swap-"))
        .collect();
    assert_eq!(captions.len(), 5, "{texts:?}");
    assert!(texts.iter().all(|t| !t.is_empty()), "a tick without its label: {texts:?}");
    for &c in &captions {
        let first_tick =
            texts[c..].iter().find(|t| t.chars().all(|ch| ch.is_ascii_digit() || ch == ','));
        assert_eq!(first_tick.map(String::as_str), Some("0"), "{}: y axis from 0", texts[c]);
        let end = captions.iter().find(|&&n| n > c).copied().unwrap_or(texts.len());
        let x_ticks: Vec<&String> = texts[c..end]
            .iter()
            .filter(|t| t.strip_suffix('K').is_some_and(|n| n.parse::<u32>().is_ok()))
            .collect();
        assert_eq!(x_ticks, ["4K", "8K", "16K"], "{}", texts[c]);
    }
}

/// A class of the multi band: size, index, chain, objects per zspage, order.
type BandClass = (u64, u64, u64, u64, u64);

/// The distinct classes of the multi band of a `classes --multi-page` table.
fn band_classes(args: &[&str]) -> (Value, Vec<BandClass>) {
    let mut all = vec!["classes", "--multi-page", "16K", "--format", "json", "--step", "64"];
    all.extend_from_slice(args);
    let t = json(&all)["tables"][0].clone();
    let mut out: Vec<BandClass> = Vec::new();
    for r in t["rows"].as_array().unwrap() {
        let u = |k: &str| r[k].as_u64().unwrap_or_else(|| panic!("{k}: {r}"));
        let c = (u("class_size"), u("class_index"), u("chain"), u("objs_per_zspage"), u("order"));
        if c.0 > 4096 && !out.contains(&c) {
            out.push(c);
        }
    }
    (t, out)
}

#[test]
fn classes_with_the_band_give_the_reviewers_lists() {
    // Chain 8 at 16K: 13056 is followed by 13632 (classes 396-403 merge into 404); the
    // band's classes are of order 2, their chains in 16K units.
    let (t, band) = band_classes(&[]);
    assert_eq!(
        (t["huge_class_size"].as_u64(), t["huge_class_size_multi"].as_u64()),
        (Some(3625), Some(14521))
    );
    assert_eq!(t["class_indices"], 448);
    let at = band.iter().position(|c| c.0 == 13056).unwrap();
    assert_eq!(band[at + 1].0, 13632);
    assert_eq!(band[at + 1].1, 404);
    assert_eq!(band[at].1, 395);
    // 13632: 5 units of 16K hold 6 objects (81920 / 13632).
    assert_eq!((band[at + 1].2, band[at + 1].3, band[at + 1].4), (5, 6, 2));
    assert!(band.iter().all(|c| c.4 == 2 && c.3 == c.2 * 16384 / c.0), "{band:?}");
    for r in t["rows"].as_array().unwrap() {
        let size = r["logical_size"].as_u64().unwrap();
        if (13120..=13632).contains(&size) {
            assert_eq!(r["class_index"], 404, "{r}");
        }
        if size <= 4096 {
            assert_eq!(r["order"], 0, "{r}");
        }
    }
    // Chain 10: 10880 is followed by 11328.
    let (t, band) = band_classes(&["--chain-size", "10"]);
    assert_eq!(t["huge_class_size_multi"], 14841);
    let at = band.iter().position(|c| c.0 == 10880).unwrap();
    assert_eq!(band[at + 1].0, 11328);
    // The text table says both huge sizes; without the band, neither `order` nor the band's
    // huge size is printed.
    let text =
        ok(&["classes", "--multi-page", "16K", "--min-size", "13000", "--max-size", "13100"]);
    assert!(text.contains("huge_class_size 3625, huge_class_size_multi 14521"), "{text}");
    let plain = ok(&["classes", "--format", "json", "--max-size", "100"]);
    assert!(!plain.contains("order") && !plain.contains("multi"), "{plain}");
}

#[test]
fn every_configured_command_takes_the_band() {
    let run = json(&["run", "--multi-page", "16K", "--no-time", "--format", "json"]);
    assert_eq!(run["config"]["multi_page_size"], 16384, "{run}");
    let plain = json(&["run", "--no-time", "--format", "json"]);
    assert!(plain["config"].get("multi_page_size").is_none());
    // Objects of a page or less stay in the base band: the same pages.
    assert_eq!(run["pages"], plain["pages"]);
    let c = json(&[
        "compare",
        "--no-time",
        "--format",
        "json",
        "--config",
        "classic",
        "--config",
        "multi-page=64K",
        "dist",
        "--objects",
        "2000",
    ]);
    assert_eq!(c["runs"][1]["config"]["multi_page_size"], 65536, "{c}");
    let e = usage_error(&["run", "--multi-page", "12K"]);
    assert!(e.contains("multi-page"), "{e}");
    usage_error(&["run", "--multi-page", "16K", "--backend", "zblock"]);
    let e = usage_error(&["folios", "--multi-page", "16K"]);
    assert!(e.contains("--folio-sizes"), "{e}");
}

#[test]
fn a_row_s_trace_replays_to_its_pages_and_band_tables_load_back() {
    let dir = scratch("folio-traces");
    std::fs::create_dir_all(&dir).unwrap();
    let r: Value =
        serde_json::from_str(&small("json", &["--compressor", "lz4", "--trace-dir", s(&dir)]))
            .unwrap();
    let trace = dir.join("lz4-16K.trace");
    let replay = |extra: &[&str]| {
        let mut args = vec!["replay", s(&trace), "--format", "json", "--no-time"];
        args.extend_from_slice(extra);
        json(&args)
    };
    let band = replay(&["--multi-page", "16K"]);
    let row = row(&r, "lz4", 16384);
    assert_eq!(band["pages"], row["pages_after_compaction"], "{band}");
    assert_eq!(band["pages_peak"], row["max_pages_used"], "{band}");
    assert_eq!(band["objects"], row["objects"]);
    assert_eq!(band["store_failures"], 0);
    // Without the band the folios do not fit a page: refused and counted, as a C program sees.
    assert!(replay(&[])["store_failures"].as_u64().unwrap() > 0);
    // The band's table, exported and given back, places every folio the same.
    let table = dir.join("band.table");
    ok(&["classes", "--multi-page", "16K", "--export", s(&table)]);
    let text = std::fs::read_to_string(&table).unwrap();
    assert!(text.contains("\n16384 1  2 "), "the order column: {text}");
    let given = replay(&["--class-table", s(&table)]);
    assert_eq!(
        (&given["pages"], &given["reads_spanning"]),
        (&band["pages"], &band["reads_spanning"])
    );
    let e = usage_error(&["replay", s(&trace), "--class-table", s(&table), "--multi-page", "32K"]);
    assert!(e.contains("must agree"), "{e}");
}
