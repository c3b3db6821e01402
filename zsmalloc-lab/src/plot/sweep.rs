//! Sweeps: figures against the swept key, and pages against spanning reads.

use std::path::Path;

use super::draw::draw;
use super::figure::{Figure, Panel, Series, Style, YStart};
use super::pareto::{pareto_panel, ParetoPoint};
use super::runs::runs;
use crate::compare::Comparison;
use crate::error::LabResult;
use crate::result::RunResult;

/// The value of the swept `key` in a run, if numeric.
fn swept_value(r: &RunResult, key: &str) -> Option<f64> {
    match key {
        "page-size" => Some(f64::from(r.config.page_size)),
        "chain-size" => Some(f64::from(r.config.chain_size)),
        "class-delta" => Some(f64::from(r.config.class_delta)),
        "mem-limit-pages" => Some(r.config.mem_limit_pages as f64),
        _ => None,
    }
}

/// A sweep: pages, spanning reads and bytes copied against the first swept key's value, one
/// line per combination of the other keys; then pages against spanning reads (Pareto).
pub fn sweep(path: &Path, c: &Comparison) -> LabResult<()> {
    let Some(key) = c.sweep_keys.first() else {
        return runs(path, &c.runs.iter().collect::<Vec<_>>());
    };
    let mut groups: Vec<(String, Vec<&RunResult>)> = Vec::new();
    for r in &c.runs {
        let rest: Vec<&str> =
            r.label.split(',').filter(|p| !p.starts_with(&format!("{key}="))).collect();
        let name = if rest.is_empty() { r.config.chain_policy.clone() } else { rest.join(",") };
        match groups.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => v.push(r),
            None => groups.push((name, vec![r])),
        }
    }
    let numeric = c.runs.iter().all(|r| swept_value(r, key).is_some());
    let x_of = |r: &RunResult, i: usize| swept_value(r, key).unwrap_or(i as f64);
    let series = |f: &dyn Fn(&RunResult) -> f64| -> Vec<Series> {
        groups
            .iter()
            .enumerate()
            .map(|(gi, (n, rs))| {
                let pts = rs.iter().enumerate().map(|(i, r)| (x_of(r, i), f(r))).collect();
                Series::new(n.clone(), pts, Style::Line, gi)
            })
            .collect()
    };
    let panel = |title: &str, y: &str, f: &dyn Fn(&RunResult) -> f64, int_y: bool| Panel {
        title: title.into(),
        x_desc: key.clone(),
        y_desc: y.into(),
        series: series(f),
        int_x: numeric,
        int_y,
        y_start: YStart::DataWhenClose,
        ..Default::default()
    };
    let points: Vec<ParetoPoint> = groups
        .iter()
        .flat_map(|(g, rs)| {
            rs.iter().map(move |r| {
                let v = r.label.split(',').find_map(|p| p.strip_prefix(&format!("{key}=")));
                ParetoPoint::exact(
                    v.unwrap_or(&r.label).to_string(),
                    g.clone(),
                    r.pages as f64,
                    r.reads_spanning as f64,
                )
            })
        })
        .collect();
    let mut fixed = Vec::new();
    if let Some(b) = c.runs.first() {
        let cfg = &b.config;
        for (k, v) in [
            ("page-size", format!("page {}", cfg.page_size)),
            ("chain-size", format!("chain {}", cfg.chain_size)),
            ("class-delta", format!("delta {}", cfg.class_delta)),
            ("chain-policy", cfg.chain_policy.clone()),
        ] {
            if !c.sweep_keys.iter().any(|s| s == k) {
                fixed.push(v);
            }
        }
    }
    let subtitle = vec![format!("swept: {}; fixed: {}", c.sweep_keys.join(", "), fixed.join(", "))];
    let panels = vec![
        panel("pages", "pages", &|r| r.pages as f64, true),
        panel("spanning reads", "reads", &|r| r.reads_spanning as f64, true),
        panel(
            "bytes copied by reads",
            "MiB",
            &|r| r.read_copy_bytes as f64 / (1024.0 * 1024.0),
            false,
        ),
        pareto_panel(
            &format!("pages against spanning reads (Pareto; points labelled with {key}, in their line's colour)"),
            "pages",
            "spanning reads",
            &points,
        ),
    ];
    draw(
        path,
        &Figure {
            title: format!("sweep of {key}: {}", c.workload.summary),
            subtitle,
            panels,
            columns: 1,
        },
    )
}
