//! Runs: per-class steps, the huge classes apart, and differences against the first run.

use std::path::Path;

use super::draw::draw;
use super::figure::{steps, Figure, Panel, Series, Style};
use crate::error::LabResult;
use crate::result::{per_class, RunResult};

/// `label: page 4096, chain 10, delta 16, classic`.
fn describe(r: &RunResult) -> String {
    let c = &r.config;
    format!(
        "{}: page {}, chain {}, delta {}, {}",
        r.label, c.page_size, c.chain_size, c.class_delta, c.chain_policy
    )
}

/// One run's per-class values (non-huge classes, by class size).
fn class_values(
    r: &RunResult,
    f: &dyn Fn(&RunResult, &zsmalloc_core::ClassStats) -> f64,
) -> Vec<(f64, f64)> {
    r.class_stats.iter().filter(|c| !c.huge).map(|c| (f64::from(c.size), f(r, c))).collect()
}

fn slack_kib(r: &RunResult, c: &zsmalloc_core::ClassStats) -> f64 {
    let page = u64::from(r.config.page_size);
    (c.pages_used * page).saturating_sub(c.bytes_stored) as f64 / 1024.0
}

fn merge_kib(r: &RunResult, c: &zsmalloc_core::ClassStats) -> f64 {
    per_class(&r.class_merge_waste, c.index) as f64 / 1024.0
}

fn spanning(r: &RunResult, c: &zsmalloc_core::ClassStats) -> f64 {
    per_class(&r.class_spanning_reads, c.index) as f64
}

fn pages(_: &RunResult, c: &zsmalloc_core::ClassStats) -> f64 {
    c.pages_used as f64
}

type ClassFn = fn(&RunResult, &zsmalloc_core::ClassStats) -> f64;

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
    let mut panels = Vec::new();
    for (title, unit, f, int) in PER_CLASS {
        let series = runs
            .iter()
            .enumerate()
            .map(|(i, r)| Series::new(r.label.clone(), steps(&class_values(r, &f)), Style::Step, i))
            .collect();
        panels.push(Panel {
            title: format!("{title} (huge classes: own panel)"),
            x_desc: "class size (bytes)".into(),
            y_desc: unit.into(),
            series,
            from_zero: true,
            int_x: true,
            int_y: int,
            ..Default::default()
        });
    }
    // Huge classes: pages and slack, one bar per configuration.
    let huge = |r: &RunResult, f: &dyn Fn(&zsmalloc_core::ClassStats) -> f64| -> f64 {
        r.class_stats.iter().filter(|c| c.huge).map(f).sum()
    };
    let cats: Vec<String> = runs.iter().map(|r| r.label.clone()).collect();
    let bar = |name: &str, color: usize, f: &dyn Fn(&RunResult) -> f64| {
        let pts = runs.iter().enumerate().map(|(i, r)| (i as f64, f(r))).collect();
        Series::new(name, pts, Style::Bars, color)
    };
    let none = runs.iter().all(|r| r.huge_objects == 0);
    panels.push(Panel {
        title: format!(
            "huge classes (objects of huge_class_size {} bytes or more, one per page){}",
            runs.first().map_or(0, |r| r.huge_class_size),
            if none { ": none stored" } else { "" }
        ),
        x_desc: "configuration".into(),
        y_desc: "pages / KiB".into(),
        series: vec![
            bar("pages", 0, &|r| huge(r, &|c| c.pages_used as f64)),
            bar("slack (KiB)", 1, &|r| {
                let page = u64::from(r.config.page_size);
                huge(r, &|c| (c.pages_used * page).saturating_sub(c.bytes_stored) as f64 / 1024.0)
            }),
        ],
        from_zero: true,
        x_categories: cats,
        ..Default::default()
    });
    if let Some((base, rest)) = runs.split_first() {
        if !rest.is_empty() {
            let same_grid = rest.iter().all(|r| {
                r.class_stats.iter().map(|c| c.size).eq(base.class_stats.iter().map(|c| c.size))
            });
            for (title, unit, f, int) in PER_CLASS {
                if title.starts_with("slack") {
                    continue;
                }
                let a = class_values(base, &f);
                let series = rest
                    .iter()
                    .enumerate()
                    .map(|(i, r)| {
                        let pts = steps(&class_difference(&a, &class_values(r, &f)));
                        Series::new(
                            format!("{} minus {}", r.label, base.label),
                            pts,
                            Style::Step,
                            i + 1,
                        )
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
        }
    }
    let title = runs.first().map(|r| r.workload.summary.clone()).unwrap_or_default();
    let subtitle = runs.iter().map(|r| describe(r)).collect();
    draw(path, &Figure { title, subtitle, panels })
}
