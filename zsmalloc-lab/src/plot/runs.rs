//! Runs: per-class steps, the huge classes apart, and differences against the first run.

use std::path::Path;

use super::draw::draw;
use super::figure::{spans, Figure, Panel, Series, Style};
use crate::error::LabResult;
use crate::result::{ClassRow, RunResult};
use zsmalloc_core::BackendKind;

/// `label: page 4096, chain 10, delta 16, classic`, or what the backend has instead.
fn describe(r: &RunResult) -> String {
    let c = &r.config;
    match c.backend {
        BackendKind::Zblock => {
            format!("{}: zblock, page {}, one block type per slot size", r.label, c.page_size)
        }
        BackendKind::Malloc => format!(
            "{}: malloc, page {}, one allocation per object: no classes, not drawn",
            r.label, c.page_size
        ),
        BackendKind::Zsmalloc => format!(
            "{}: page {}, chain {}, delta {}, {}",
            r.label, c.page_size, c.chain_size, c.class_delta, c.chain_policy
        ),
    }
}

/// One run's per-class values by class size: the non-huge classes, or with `huge` every
/// class.
fn class_values(r: &RunResult, huge: bool, f: ClassFn) -> Vec<(f64, f64)> {
    let shown = r.classes.iter().filter(|c| huge || !c.stats.huge);
    shown.map(|c| (f64::from(c.stats.size), f(r, c))).collect()
}

fn slack_kib(r: &RunResult, c: &ClassRow) -> f64 {
    let page = u64::from(r.config.page_size);
    (c.stats.pages_used * page).saturating_sub(c.stats.bytes_stored) as f64 / 1024.0
}

fn merge_kib(_: &RunResult, c: &ClassRow) -> f64 {
    c.merge_waste as f64 / 1024.0
}

fn spanning(_: &RunResult, c: &ClassRow) -> f64 {
    c.stats.reads_spanning as f64
}

fn pages(_: &RunResult, c: &ClassRow) -> f64 {
    c.stats.pages_used as f64
}

type ClassFn = fn(&RunResult, &ClassRow) -> f64;

/// What is drawn per class: its name, the y axis's unit, the value, and whether only
/// zsmalloc has it (zblock's slot sizes are not merged classes: it has no merge waste).
const PER_CLASS: [(&str, &str, ClassFn, bool); 4] = [
    ("pages", "pages per 100 B", pages, false),
    ("slack (pages minus stored bytes)", "KiB per 100 B", slack_kib, false),
    ("merge waste (class size minus unmerged class size)", "KiB per 100 B", merge_kib, true),
    ("spanning reads", "reads per 100 B", spanning, false),
];

/// Whether `r` has the value of a [`PER_CLASS`] entry (zsmalloc's only, or every backend's).
fn has_value(r: &RunResult, zsmalloc_only: bool) -> bool {
    !zsmalloc_only || r.config.backend == BackendKind::Zsmalloc
}

/// `; zblock: no merged classes, not drawn` for the runs without the value, or nothing.
fn not_drawn(classed: &[(usize, &RunResult)], zsmalloc_only: bool) -> String {
    let without: Vec<&str> = classed
        .iter()
        .filter(|(_, r)| !has_value(r, zsmalloc_only))
        .map(|(_, r)| r.label.as_str())
        .collect();
    if without.is_empty() {
        String::new()
    } else {
        format!("; {}: no merged classes, not drawn", without.join(", "))
    }
}

/// Classes as spans of object sizes: a class of size `s` serves the sizes above the previous
/// class up to `s`, the first from 0. `(from, to, value)`.
pub fn class_spans(points: &[(f64, f64)]) -> Vec<(f64, f64, f64)> {
    let from = std::iter::once(0.0).chain(points.iter().map(|p| p.0));
    from.zip(points).map(|(lo, &(hi, v))| (lo, hi, v)).collect()
}

/// Each span's value per 100 bytes of its width: classes (or groups of them) of different
/// widths compare by height, and a span's area is its value.
pub fn per_100_bytes(spans: &[(f64, f64, f64)]) -> Vec<(f64, f64, f64)> {
    spans.iter().map(|&(lo, hi, v)| (lo, hi, v * 100.0 / (hi - lo).max(1.0))).collect()
}

/// `b - a` per class, for per-class values whose class grids may differ, as spans (see
/// [`class_spans`]): over every size range between two boundaries of either grid, each run's
/// class value spread evenly over the sizes its class serves (as the per-100-B panels draw
/// it), so each span's difference is the share of the two classes over it and the spans add
/// up to the difference of the totals. With the same grid, that is the per-class difference.
pub fn class_difference(a: &[(f64, f64)], b: &[(f64, f64)]) -> Vec<(f64, f64, f64)> {
    let mut bounds: Vec<f64> = a.iter().chain(b).map(|p| p.0).collect();
    bounds.sort_by(f64::total_cmp);
    bounds.dedup();
    let (sa, sb) = (class_spans(a), class_spans(b));
    // The share of the spans `s` over `lo..hi` (inside one span of each grid).
    let share = |s: &[(f64, f64, f64)], lo: f64, hi: f64| -> f64 {
        s.iter()
            .find(|&&(from, to, _)| from <= lo && hi <= to)
            .map_or(0.0, |&(from, to, v)| v * (hi - lo) / (to - from).max(1.0))
    };
    let mut lo = 0.0;
    let mut out = Vec::with_capacity(bounds.len());
    for hi in bounds {
        out.push((lo, hi, share(&sb, lo, hi) - share(&sa, lo, hi)));
        lo = hi;
    }
    out
}

/// Per-class pictures of one or more runs (see the module documentation).
pub fn runs(path: &Path, runs: &[&RunResult]) -> LabResult<()> {
    draw(path, &figure(runs))
}

/// The figure of [`runs`]. Runs without classes (malloc: one allocation per object) have no
/// line; the subtitle says so. The huge classes' panel is drawn only when a run stored huge
/// objects.
fn figure(runs: &[&RunResult]) -> Figure {
    // Each run keeps its colour (its position) whether or not it has classes to draw.
    let classed: Vec<(usize, &RunResult)> =
        runs.iter().copied().enumerate().filter(|(_, r)| !r.classes.is_empty()).collect();
    let huge_stored = classed.iter().any(|(_, r)| r.huge_objects > 0);
    // Every per-class panel spans the same sizes: 0 up to the largest class of any run.
    let x_end = classed
        .iter()
        .flat_map(|(_, r)| r.classes.iter().map(|c| f64::from(c.stats.size)))
        .fold(1.0, f64::max);
    let x_range = Some((0.0, x_end));
    let mut panels = Vec::new();
    for (what, unit, f, only) in PER_CLASS {
        let series = classed
            .iter()
            .filter(|(_, r)| has_value(r, only))
            .map(|&(i, r)| {
                let pts = spans(&per_100_bytes(&class_spans(&class_values(r, false, f))));
                Series::new(r.label.clone(), pts, Style::Step, i)
            })
            .collect();
        let huge = if huge_stored { "huge classes: own panel" } else { "no huge objects stored" };
        panels.push(Panel {
            title: format!(
                "{what} per 100 B of object size, by class ({huge}{})",
                not_drawn(&classed, only)
            ),
            x_desc: "object size (bytes): each class over the sizes it serves".into(),
            y_desc: unit.into(),
            series,
            x_range,
            int_x: true,
            ..Default::default()
        });
    }
    if huge_stored {
        panels.extend(huge_panels(&classed));
    }
    if let Some((&(_, base), rest)) = classed.split_first() {
        if !rest.is_empty() {
            panels.extend(difference_panels(base, rest, x_range));
        }
    }
    let title = runs.first().map(|r| r.workload.summary.clone()).unwrap_or_default();
    let subtitle = runs.iter().map(|r| describe(r)).collect();
    Figure { title, subtitle, panels, columns: 1 }
}

/// Huge classes: pages, then slack, each on its own axis, one bar per configuration in its
/// colour.
fn huge_panels(classed: &[(usize, &RunResult)]) -> Vec<Panel> {
    let huge = |r: &RunResult, f: &dyn Fn(&zsmalloc_core::ClassStats) -> f64| -> f64 {
        r.classes.iter().map(|c| &c.stats).filter(|c| c.huge).map(f).sum()
    };
    let cats: Vec<String> = classed.iter().map(|(_, r)| r.label.clone()).collect();
    let bars = |f: &dyn Fn(&RunResult) -> f64| -> Vec<Series> {
        classed
            .iter()
            .enumerate()
            .map(|(at, &(color, r))| {
                Series::new(r.label.clone(), vec![(at as f64, f(r))], Style::Bars, color)
            })
            .collect()
    };
    let mut sizes: Vec<String> = Vec::new();
    for (_, r) in classed {
        let s = r.huge_class_size.to_string();
        if !sizes.contains(&s) {
            sizes.push(s);
        }
    }
    let sizes = if sizes.len() > 1 {
        classed
            .iter()
            .map(|(_, r)| format!("{} {}", r.label, r.huge_class_size))
            .collect::<Vec<_>>()
            .join(", ")
    } else {
        sizes.join("")
    };
    let what = format!("objects of huge_class_size {sizes} bytes or more, one per page");
    let slack = |r: &RunResult| {
        let page = u64::from(r.config.page_size);
        huge(r, &|c| (c.pages_used * page).saturating_sub(c.bytes_stored) as f64 / 1024.0)
    };
    // Stored as zram stores them, huge objects are whole raw pages: no slack to draw.
    let no_slack = classed.iter().all(|(_, r)| slack(r) == 0.0);
    let mut panels = vec![Panel {
        title: if no_slack {
            format!("huge classes: pages ({what}; each fills its page: no slack)")
        } else {
            format!("huge classes: pages ({what})")
        },
        x_desc: "configuration".into(),
        y_desc: "pages".into(),
        series: bars(&|r| huge(r, &|c| c.pages_used as f64)),
        int_y: true,
        x_categories: cats.clone(),
        ..Default::default()
    }];
    if !no_slack {
        panels.push(Panel {
            title: "huge classes: slack, pages minus the bytes stored in them".into(),
            x_desc: "configuration".into(),
            y_desc: "KiB".into(),
            series: bars(&slack),
            x_categories: cats,
            ..Default::default()
        });
    }
    panels
}

/// Each run minus `base`, per 100 bytes of object size (classes grouped where the grids
/// differ). The huge classes are in: objects of a size one configuration keeps in its huge
/// class another may keep in a class of its own.
fn difference_panels(
    base: &RunResult,
    rest: &[(usize, &RunResult)],
    x_range: Option<(f64, f64)>,
) -> Vec<Panel> {
    let same_grid = rest.iter().all(|(_, r)| {
        r.classes.iter().map(|c| c.stats.size).eq(base.classes.iter().map(|c| c.stats.size))
    });
    let mut panels = Vec::new();
    for (what, unit, f, only) in PER_CLASS {
        if what.starts_with("slack") || !has_value(base, only) {
            continue;
        }
        let drawn: Vec<(usize, &RunResult)> =
            rest.iter().copied().filter(|(_, r)| has_value(r, only)).collect();
        if drawn.is_empty() {
            continue;
        }
        let a = class_values(base, true, f);
        let series = drawn
            .iter()
            .map(|&(i, r)| {
                let diff = class_difference(&a, &class_values(r, true, f));
                let pts = spans(&per_100_bytes(&diff));
                Series::new(format!("{} minus {}", r.label, base.label), pts, Style::Step, i)
            })
            .collect();
        let short = what.split(" (").next().unwrap_or(what);
        let whose = match drawn.as_slice() {
            [(_, r)] => format!("{}'s", r.label),
            _ => "each configuration's".to_string(),
        };
        let grouped = if same_grid {
            ""
        } else {
            "; where the grids differ, each class spread over the sizes it serves"
        };
        panels.push(Panel {
            title: format!(
                "{whose} {short} minus {}'s, per 100 B of object size (huge classes in{grouped})",
                base.label
            ),
            x_desc: "object size (bytes)".into(),
            y_desc: unit.into(),
            series,
            x_range,
            zero_line: true,
            int_x: true,
            ..Default::default()
        });
    }
    panels
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigSpec;
    use crate::progress::ProgressSink;
    use crate::runner::{run_one, RunOptions};
    use crate::workload::{dist::Dist, Workload};

    fn run(backend: &str) -> RunResult {
        let w = Workload::Dist(Dist { objects: 3000, churn: Some(500), ..Default::default() });
        let spec = ConfigSpec::with_overrides(
            &ConfigSpec::default(),
            &format!("backend={backend},label={backend}"),
        )
        .unwrap();
        run_one(&w, &spec, &RunOptions::default(), &ProgressSink::silent()).unwrap()
    }

    #[test]
    fn a_backend_comparison_describes_each_backend_and_draws_what_it_has() {
        let runs = [run("zsmalloc"), run("zblock"), run("malloc")];
        let fig = figure(&runs.iter().collect::<Vec<_>>());
        assert!(fig.subtitle[0].contains("chain 8, delta 16, classic"), "{:?}", fig.subtitle);
        for line in &fig.subtitle[1..] {
            assert!(!line.contains("chain") && !line.contains("classic"), "{line}");
        }
        assert!(fig.subtitle[2].contains("no classes"), "{}", fig.subtitle[2]);
        for p in &fig.panels {
            assert!(!p.title.starts_with("huge classes"), "no huge object was stored: {}", p.title);
            assert!(!p.series.is_empty(), "{}", p.title);
            for s in &p.series {
                assert!(!s.name.contains("malloc") || s.name.contains("zsmalloc"), "{}", s.name);
                assert!(!s.points.is_empty(), "{}: {}", p.title, s.name);
            }
        }
        // zblock keeps its colour (second) in every panel.
        assert!(fig
            .panels
            .iter()
            .all(|p| p.series.iter().all(|s| s.name != "zblock" || s.color == 1)));
    }

    /// The area under a step line drawn per 100 B: its total.
    fn area(pts: &[(f64, f64)]) -> f64 {
        pts.chunks(2).map(|s| (s[1].0 - s[0].0) * s[0].1 / 100.0).sum()
    }

    #[test]
    fn classes_of_any_width_compare_by_height_and_every_panel_spans_the_same_sizes() {
        let runs = [run("zsmalloc"), run("zblock")];
        let fig = figure(&runs.iter().collect::<Vec<_>>());
        let per_class: Vec<&Panel> =
            fig.panels.iter().filter(|p| p.x_categories.is_empty()).collect();
        assert_eq!(per_class.len(), 4 + 2, "four shapes, two differences (no merge waste)");
        // zblock has no merged classes: its merge waste is not drawn as a flat zero.
        let merge = per_class.iter().find(|p| p.title.starts_with("merge waste")).unwrap();
        assert!(merge.title.contains("zblock: no merged classes, not drawn"), "{}", merge.title);
        assert_eq!(merge.series.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["zsmalloc"]);
        assert!(per_class.iter().all(|p| !p.title.contains("merge waste minus")));
        let end = runs.iter().flat_map(|r| r.classes.iter()).map(|c| c.stats.size).max().unwrap();
        for p in &per_class {
            assert_eq!(super::super::axes::axes(p).x, (0.0, f64::from(end)), "{}", p.title);
        }
        // Per 100 B of object size, a line's area is its run's pages, however wide its classes.
        let total = |r: &RunResult, huge: bool| -> f64 {
            r.classes
                .iter()
                .filter(|c| huge || !c.stats.huge)
                .map(|c| c.stats.pages_used as f64)
                .sum()
        };
        for (s, r) in per_class[0].series.iter().zip(&runs) {
            assert!((area(&s.points) - total(r, false)).abs() < 1e-6, "{}", s.name);
        }
        let diff = per_class
            .iter()
            .find(|p| {
                p.title.starts_with("zblock's pages minus zsmalloc's, per 100 B of object size")
            })
            .expect("the difference titled in words");
        let want = total(&runs[1], true) - total(&runs[0], true);
        assert!((area(&diff.series[0].points) - want).abs() < 1e-6, "{}", diff.title);
        // zblock's block types are wider than zsmalloc's classes: per class, its steps would be
        // taller for the same pages.
        let widest = |r: &RunResult| {
            class_spans(&class_values(r, false, pages))
                .iter()
                .map(|s| s.1 - s.0)
                .fold(0.0, f64::max)
        };
        assert!(widest(&runs[1]) > widest(&runs[0]));
    }

    #[test]
    fn grids_that_differ_are_compared_between_every_boundary_of_either() {
        let a = [(16.0, 1.0), (32.0, 2.0), (48.0, 3.0)];
        let b = [(32.0, 10.0), (64.0, 20.0)];
        // Every boundary of either grid; b's classes, twice as wide, spread over two of a's.
        assert_eq!(
            class_difference(&a, &b),
            [(0.0, 16.0, 4.0), (16.0, 32.0, 3.0), (32.0, 48.0, 7.0), (48.0, 64.0, 10.0)]
        );
        let same = [(16.0, 5.0), (32.0, 1.0), (48.0, 4.0)];
        assert_eq!(
            class_difference(&a, &same),
            [(0.0, 16.0, 4.0), (16.0, 32.0, -1.0), (32.0, 48.0, 1.0)]
        );
        assert_eq!(per_100_bytes(&[(0.0, 50.0, 10.0)]), [(0.0, 50.0, 20.0)]);
    }
}
