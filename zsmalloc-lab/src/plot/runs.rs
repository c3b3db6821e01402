//! Runs: per-class steps, the huge classes apart, and differences against the first run.

use std::path::Path;

use super::draw::draw;
use super::figure::{steps, Figure, Panel, Series, Style};
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

/// One run's per-class values (non-huge classes, by class size).
fn class_values(r: &RunResult, f: &dyn Fn(&RunResult, &ClassRow) -> f64) -> Vec<(f64, f64)> {
    r.classes.iter().filter(|c| !c.stats.huge).map(|c| (f64::from(c.stats.size), f(r, c))).collect()
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

const PER_CLASS: [(&str, &str, ClassFn, bool); 4] = [
    ("pages per class", "pages", pages, true),
    ("slack per class: pages minus stored bytes", "KiB", slack_kib, false),
    (
        "merge waste per class: class size minus the unmerged class size, live objects",
        "KiB",
        merge_kib,
        false,
    ),
    ("spanning reads per class", "reads", spanning, true),
];

/// `b - a` per class, for per-class values whose class grids may differ: classes are grouped
/// into the smallest size ranges both grids share (the sizes where both have a class
/// boundary), and each range gets the difference of the sums over it. With the same grid,
/// that is the per-class difference.
pub fn class_difference(a: &[(f64, f64)], b: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let common: Vec<f64> = a.iter().map(|p| p.0).filter(|x| b.iter().any(|q| q.0 == *x)).collect();
    let (mut ia, mut ib) = (0, 0);
    let mut out = Vec::with_capacity(common.len());
    for x in common {
        let (mut sa, mut sb) = (0.0, 0.0);
        while ia < a.len() && a[ia].0 <= x {
            sa += a[ia].1;
            ia += 1;
        }
        while ib < b.len() && b[ib].0 <= x {
            sb += b[ib].1;
            ib += 1;
        }
        out.push((x, sb - sa));
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
    let mut panels = Vec::new();
    for (title, unit, f, int) in PER_CLASS {
        let series = classed
            .iter()
            .map(|&(i, r)| {
                Series::new(r.label.clone(), steps(&class_values(r, &f)), Style::Step, i)
            })
            .collect();
        panels.push(Panel {
            title: if huge_stored {
                format!("{title} (huge classes: own panel)")
            } else {
                format!("{title} (no huge objects stored)")
            },
            x_desc: "class size (bytes)".into(),
            y_desc: unit.into(),
            series,
            from_zero: true,
            int_x: true,
            int_y: int,
            ..Default::default()
        });
    }
    if huge_stored {
        panels.extend(huge_panels(&classed));
    }
    if let Some((&(_, base), rest)) = classed.split_first() {
        if !rest.is_empty() {
            panels.extend(difference_panels(base, rest));
        }
    }
    let title = runs.first().map(|r| r.workload.summary.clone()).unwrap_or_default();
    let subtitle = runs.iter().map(|r| describe(r)).collect();
    Figure { title, subtitle, panels }
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
    vec![
        Panel {
            title: format!("huge classes: pages ({what})"),
            x_desc: "configuration".into(),
            y_desc: "pages".into(),
            series: bars(&|r| huge(r, &|c| c.pages_used as f64)),
            from_zero: true,
            int_y: true,
            x_categories: cats.clone(),
            ..Default::default()
        },
        Panel {
            title: "huge classes: slack, pages minus the bytes stored in them".into(),
            x_desc: "configuration".into(),
            y_desc: "KiB".into(),
            series: bars(&|r| {
                let page = u64::from(r.config.page_size);
                huge(r, &|c| (c.pages_used * page).saturating_sub(c.bytes_stored) as f64 / 1024.0)
            }),
            from_zero: true,
            x_categories: cats,
            ..Default::default()
        },
    ]
}

/// Each run minus `base`, per class (grouped where the class grids differ).
fn difference_panels(base: &RunResult, rest: &[(usize, &RunResult)]) -> Vec<Panel> {
    let same_grid = rest.iter().all(|(_, r)| {
        r.classes.iter().map(|c| c.stats.size).eq(base.classes.iter().map(|c| c.stats.size))
    });
    let mut panels = Vec::new();
    for (title, unit, f, int) in PER_CLASS {
        if title.starts_with("slack") {
            continue;
        }
        let a = class_values(base, &f);
        let series = rest
            .iter()
            .map(|&(i, r)| {
                let pts = steps(&class_difference(&a, &class_values(r, &f)));
                Series::new(format!("{} minus {}", r.label, base.label), pts, Style::Step, i)
            })
            .collect();
        let what = title.split(':').next().unwrap_or(title);
        panels.push(Panel {
            title: if same_grid {
                format!("difference, {what}: each configuration minus {}", base.label)
            } else {
                format!(
                    "difference, {what}: minus {} (classes grouped where the grids differ)",
                    base.label
                )
            },
            x_desc: "class size (bytes)".into(),
            y_desc: unit.into(),
            series,
            zero_line: true,
            int_x: true,
            int_y: int,
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
}
