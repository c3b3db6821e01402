//! The optimizer's promises, through the library: every reported point reproduces exactly from
//! its table in the file format; the frontier's sums are what runs measure on workloads with
//! churn, compaction and zram's huge pages; classic sits on or behind the frontier; the
//! search's figures do not depend on how many runs go at once. Through the command: its
//! formats come from the same rows, and its plot is SVG only.

mod common;

use zsmalloc_core::class_spec::ClassTableSpec;
use zsmalloc_core::PoolConfig;
use zsmalloc_lab::config::ConfigSpec;
use zsmalloc_lab::optimize::evaluate::{evaluate, with_table};
use zsmalloc_lab::optimize::references::PointKind;
use zsmalloc_lab::optimize::report::{Objective, OptimizeReport};
use zsmalloc_lab::optimize::search::{search, SearchOptions};
use zsmalloc_lab::progress::ProgressSink;
use zsmalloc_lab::workload::dist::Dist;
use zsmalloc_lab::workload::kernel_test::KernelTest;
use zsmalloc_lab::workload::pages::Pages;
use zsmalloc_lab::workload::trace::Trace;
use zsmalloc_lab::workload::Workload;

fn options(page: u32, points: usize) -> SearchOptions {
    let mut o = SearchOptions::new(PoolConfig { page_size: page, ..PoolConfig::default() });
    o.points = points;
    o.jobs = 2;
    o
}

fn run_search(w: &Workload, o: &SearchOptions) -> OptimizeReport {
    search(w, o, &ProgressSink::silent()).unwrap_or_else(|e| panic!("{}: {e}", w.name()))
}

/// Every reported point's table, read back from its file text and run again, measures exactly
/// the reported pages, peak pages and spanning reads.
fn assert_every_point_reproduces(w: &Workload, r: &OptimizeReport) {
    assert!(!r.points.is_empty());
    for p in &r.points {
        let table = ClassTableSpec::parse(&r.file_text(p).unwrap()).unwrap();
        assert_eq!(table, p.table, "point {:?}: the file text holds the table", p.kind);
        let base = PoolConfig { page_size: r.page_size, ..PoolConfig::default() };
        let spec = ConfigSpec { label: p.kind.label(), config: with_table(&base, table) };
        let e = evaluate(w, &spec).unwrap();
        assert_eq!(
            (e.pages, e.pages_peak, e.reads_spanning),
            (p.pages, p.pages_peak, p.reads_spanning),
            "{}: point {:?} does not reproduce",
            w.name(),
            p.kind
        );
    }
}

fn small_kernel_test() -> Workload {
    Workload::KernelTest(KernelTest { lo: 200, hi: 4000, step: 380, n: 60, seed: 1 })
}

#[test]
fn every_point_of_a_small_frontier_reproduces() {
    let w = small_kernel_test();
    let r = run_search(&w, &options(4096, 0));
    assert_eq!(r.points.len(), r.frontier_points, "--points 0 reports the whole frontier");
    assert!(r.frontier_points > 5, "{} points", r.frontier_points);
    assert_every_point_reproduces(&w, &r);
    // Sorted by pages, spanning reads strictly falling: a frontier.
    for pair in r.points.windows(2) {
        assert!(pair[0].pages < pair[1].pages && pair[0].reads_spanning > pair[1].reads_spanning);
    }
}

#[test]
fn classic_is_on_or_behind_the_frontier_and_the_default_point_is_within_its_pages() {
    let w = small_kernel_test();
    let r = run_search(&w, &options(4096, 0));
    let classic = &r.references.classic;
    assert_eq!(classic.kind, PointKind::Classic);
    assert!(
        r.points
            .iter()
            .any(|p| p.pages <= classic.pages && p.reads_spanning <= classic.reads_spanning),
        "classic's table is in the search: some point is at least as good"
    );
    let k = r.default_point.expect("a point within classic's pages");
    let d = r.point(k).unwrap();
    assert!(d.pages <= classic.pages);
    assert!(r
        .points
        .iter()
        .filter(|p| p.pages <= classic.pages)
        .all(|p| p.read_cost >= d.read_cost));
}

#[test]
fn churn_and_compaction_keep_the_classes_independent() {
    let w = Workload::Dist(Dist {
        objects: 6000,
        churn: Some(6000),
        shrink: 0.3,
        compact: true,
        compact_every: Some(1500),
        ..Dist::default()
    });
    let r = run_search(&w, &options(4096, 6));
    assert_every_point_reproduces(&w, &r);
}

#[test]
fn zram_huge_pages_at_16k_keep_the_classes_independent() {
    let w = Workload::Pages(Pages { synthetic_pages: 600, ..Pages::default() });
    let r = run_search(&w, &options(16384, 5));
    assert!(r.layout.huge_class_size > 0);
    assert_every_point_reproduces(&w, &r);
}

#[test]
fn the_figures_do_not_depend_on_the_parallelism_and_ns_prices_spanning_reads() {
    let w = small_kernel_test();
    let mut one = options(4096, 4);
    one.jobs = 1;
    let a = run_search(&w, &one);
    let b = run_search(&w, &options(4096, 4));
    assert_eq!(a, b);
    let mut ns = options(4096, 4);
    ns.objective = Objective::Nanoseconds { spanning_extra_ns: 2.5 };
    let c = run_search(&w, &ns);
    for (p, q) in a.points.iter().zip(&c.points) {
        assert_eq!((p.pages, p.reads_spanning), (q.pages, q.reads_spanning));
        assert_eq!(q.read_cost, p.reads_spanning as f64 * 2.5);
    }
}

#[test]
fn the_test_workload_runs_every_reported_table_beside_the_references() {
    use zsmalloc_lab::optimize::generalize::test_on;
    let w = small_kernel_test();
    let o = options(4096, 4);
    let r = run_search(&w, &o);
    let test = Workload::Dist(Dist { objects: 4000, churn: Some(2000), ..Dist::default() });
    let t = test_on(&test, &r, &o, &ProgressSink::silent()).unwrap();
    let kinds: Vec<PointKind> =
        t.references.iter().map(|(_, r)| r).chain(&t.points).map(|r| r.kind).collect();
    let want: Vec<PointKind> = r.all_points().map(|p| p.kind).collect();
    assert_eq!(kinds, want);
    // Each row is what its table measures on the test workload.
    let point = &r.points[1];
    let spec = ConfigSpec {
        label: "again".into(),
        config: with_table(&PoolConfig::default(), point.table.clone()),
    };
    let e = evaluate(&test, &spec).unwrap();
    let row = &t.points[1];
    assert_eq!(
        (row.pages, row.pages_peak, row.reads_spanning),
        (e.pages, e.pages_peak, e.reads_spanning)
    );
    let classic = ConfigSpec { label: "classic".into(), config: PoolConfig::default() };
    assert_eq!(t.references.classic.pages, evaluate(&test, &classic).unwrap().pages);
}

#[test]
fn the_naive_sweep_measures_the_same_options_as_the_chain_sweep() {
    use zsmalloc_lab::optimize::evaluate::evaluate_all;
    use zsmalloc_lab::optimize::layout::Layout;
    use zsmalloc_lab::optimize::naive::{candidate_spec, candidates, naive_matrix};
    use zsmalloc_lab::optimize::sweep::run_sweep;
    // Few sizes, so that few classes hold objects: the candidates of the empty classes
    // measure nothing and are left out of both.
    let w = Workload::Dist(Dist {
        objects: 3000,
        mean: 1500.0,
        sd: 60.0,
        churn: Some(3000),
        compact: true,
        ..Dist::default()
    });
    let base = PoolConfig::default();
    let layout = Layout::of_config(&base).unwrap();
    let sink = ProgressSink::silent();
    let sweep = run_sweep(&w, &layout, &base, 2, &sink).unwrap();
    let used: Vec<usize> = (0..layout.sizes().len())
        .filter(|&i| sweep.options[i].iter().any(|o| o.pages > 0))
        .collect();
    assert!((3..40).contains(&used.len()), "{} classes used", used.len());
    let cands: Vec<_> = candidates(&layout)
        .into_iter()
        .filter(|c| c.class.is_none_or(|i| used.contains(&i)))
        .collect();
    let specs: Vec<ConfigSpec> =
        cands.iter().map(|&c| candidate_spec(&layout, &base, c).unwrap()).collect();
    let runs = evaluate_all(&w, &specs, 2, &sink, "naive").unwrap();
    let naive = naive_matrix(&layout, &cands, &runs).unwrap();
    for &i in &used {
        assert_eq!(naive[i], sweep.options[i], "class {}", layout.sizes()[i]);
    }
}

#[test]
fn the_boundary_search_only_improves_and_its_points_reproduce() {
    let w = Workload::KernelTest(KernelTest { lo: 200, hi: 3000, step: 200, n: 40, seed: 1 });
    let chains_only = run_search(&w, &options(4096, 4));
    let mut o = options(4096, 4);
    o.boundaries = true;
    let r = run_search(&w, &o);
    let cost = |r: &OptimizeReport| r.point(r.default_point.unwrap()).unwrap().read_cost;
    assert!(cost(&r) <= cost(&chains_only), "{} > {}", cost(&r), cost(&chains_only));
    assert!(!r.layout.boundary_moves.is_empty(), "sizes 208..3008 leave room for better classes");
    assert!(r.runs > chains_only.runs);
    assert_every_point_reproduces(&w, &r);
}

#[test]
fn classes_the_workload_never_uses_keep_their_base_chain() {
    use zsmalloc_lab::optimize::layout::Layout;
    let w = small_kernel_test();
    let r = run_search(&w, &options(16384, 0));
    let layout =
        Layout::of_config(&PoolConfig { page_size: 16384, ..PoolConfig::default() }).unwrap();
    // kernel-test stores nothing above 4000 + 8 bytes.
    for p in &r.points {
        for (c, &base) in p.classes().iter().zip(layout.base_chains()) {
            if c.size > 4008 + 64 {
                assert_eq!(c.chain, base, "point {:?}: class {}", p.kind, c.size);
            }
        }
    }
}

#[test]
fn the_command_prints_the_same_rows_in_every_format_and_plots_svg_only() {
    use common::{json, ok, s, scratch, usage_error};
    let workload = ["kernel-test", "--lo", "200", "--hi", "4000", "--step", "380", "-n", "60"];
    fn run<'a>(extra: &[&'a str], workload: &[&'a str]) -> Vec<&'a str> {
        [&["optimize", "--points", "4"][..], extra, workload].concat()
    }
    let report = json(&run(&["--format", "json"], &workload));
    let rows: Vec<&serde_json::Value> = report["references"]
        .as_array()
        .unwrap()
        .iter()
        .chain(report["points"].as_array().unwrap())
        .collect();
    // The heuristic's class sizes are not classic's: its chains cannot be compared.
    assert_eq!(rows[1]["label"], "heuristic");
    assert!(rows[1]["changed"].is_null(), "{}", rows[1]["changed"]);
    assert!(rows[0]["changed"].is_array());
    let table = ok(&run(&[], &workload));
    let heuristic = table.lines().find(|l| l.trim_start().starts_with("heuristic")).unwrap();
    assert!(heuristic.ends_with(" n/a"), "{heuristic}");
    let csv = ok(&run(&["--format", "csv"], &workload));
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("table,label,point,pages,pages_peak,reads_spanning,read_cost,dominates_references")
    );
    for (line, row) in lines.zip(&rows) {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells[1], row["label"].as_str().unwrap());
        assert_eq!(cells[3], row["pages"].to_string());
    }
    let svg = scratch("optimize.svg");
    ok(&run(&["--plot", s(&svg)], &workload));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") && text.contains("frontier labels: each point"));
    // Two panels where some point's peak is above its end, one where none is.
    let peaks_differ = rows.iter().any(|r| r["pages"] != r["pages_peak"]);
    assert_eq!(text.contains("pages at the peak"), peaks_differ);
    assert_eq!(text.contains("the same at the end and at the peak"), !peaks_differ);
    // A `pages` workload frees nothing: one panel, not the same one twice.
    let pages = ["pages", "--synthetic-pages", "300"];
    let report = json(&run(&["--format", "json"], &pages));
    for r in report["points"].as_array().unwrap() {
        assert_eq!(r["pages"], r["pages_peak"], "{r}");
    }
    ok(&run(&["--plot", s(&svg)], &pages));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("pages (the same at the end and at the peak: nothing was freed)"));
    assert!(!text.contains("pages at the peak") && !text.contains("pages at the end"));
    let png = scratch("optimize.png");
    let err = usage_error(&run(&["--plot", s(&png)], &workload));
    assert!(err.contains("plots are SVG"), "{err}");
    assert!(!png.exists());
}

#[test]
fn the_band_s_chains_are_searched_and_every_point_reproduces() {
    let dir = common::scratch("optimize-band");
    std::fs::create_dir_all(&dir).unwrap();
    common::ok(&[
        "folios",
        "--synthetic-pages",
        "1024",
        "--folio-sizes",
        "16K",
        "--compressor",
        "lz4",
        "--repeat",
        "1",
        "--sample-mib",
        "1",
        "--trace-dir",
        common::s(&dir),
    ]);
    let w = Workload::Trace(Trace::new(&dir.join("lz4-16K.trace")));
    let mut o = options(4096, 0);
    o.base.multi_page_size = 16384;
    let r = run_search(&w, &o);
    assert_eq!((r.layout.multi_page_size, r.layout.huge_class_size_multi), (16384, 14521));
    assert!(r.points.iter().all(|p| p.table.multi_page_size() == 16384));
    // Some point changes a chain of the band (classes above the page, order 2).
    let classic = &r.references.classic.table;
    let band_changed = r.points.iter().any(|p| {
        p.table.classes().iter().zip(classic.classes()).any(|(a, b)| a.order == 2 && a != b)
    });
    assert!(band_changed, "no point changed a chain of the band");
    let best = r.points.iter().map(|p| p.pages).min().unwrap();
    assert!(
        best < r.references.classic.pages,
        "{best} pages, classic {}",
        r.references.classic.pages
    );
    assert_every_point_reproduces(&w, &r);
}

/// `zsmalloc ARGS` under a 4 GiB address-space limit, as a user's `ulimit -v` sets it.
fn under_4g(args: &[&str]) -> std::process::Output {
    std::process::Command::new("sh")
        .args(["-c", "ulimit -v 4194304 && exec \"$@\"", "sh", env!("CARGO_BIN_EXE_zsmalloc")])
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn runs_that_cannot_reserve_their_pools_under_ulimit_v_are_refused_at_once() {
    // 64 pools of 256 MiB at least cannot fit in 4 GiB: refused before anything runs, where
    // the runs used to take the address space in turn until a malloc aborted.
    for args in [
        &["optimize", "--jobs", "64", "dist", "--objects", "300000"][..],
        &["optimize", "--jobs", "2", "dist", "--objects", "4000000"],
        &[
            "compare",
            "--no-time",
            "--sweep",
            "chain-size=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16",
            "--jobs",
            "16",
            "dist",
            "--objects",
            "20000",
        ],
    ] {
        let out = under_4g(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("of address space") && err.contains("ulimit -v"), "{err}");
        assert!(out.stdout.is_empty());
    }
    // What fits runs, its pools sharing the space.
    let out = under_4g(&["optimize", "--jobs", "2", "--points", "2", "dist", "--objects", "20000"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
