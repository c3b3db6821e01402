//! `zsmalloc classes --plot`: class-table shapes, and the difference of two tables.

use std::path::Path;

use super::draw::draw;
use super::figure::{steps, Figure, Panel, Series, Style};
use super::runs::class_difference;
use crate::classes::ClassTableReport;
use crate::error::LabResult;

/// Class-table shapes against logical size (chain, tail waste, merge waste and spanning
/// objects per zspage) as steps; with two tables, the second minus the first.
pub fn classes(path: &Path, tables: &[ClassTableReport]) -> LabResult<()> {
    type RowFn = fn(&crate::classes::LogicalClassRow) -> f64;
    let shapes: [(&str, &str, RowFn); 4] = [
        ("pages per zspage (chain)", "pages", |r| f64::from(r.chain)),
        ("tail waste per zspage", "bytes", |r| f64::from(r.tail_waste)),
        ("merge waste per zspage (all objects of the logical size)", "bytes", |r| {
            f64::from(r.merge_waste)
        }),
        ("spanning objects per zspage", "objects", |r| f64::from(r.spanning_per_zspage)),
    ];
    let name = |t: &ClassTableReport| {
        let c = &t.config;
        let d = format!(
            "page {}, chain {}, delta {}, {}",
            c.page_size, c.chain_size, c.class_delta, c.chain_policy
        );
        if t.label.is_empty() {
            d
        } else {
            format!("{}: {d}", t.label)
        }
    };
    let values = |t: &ClassTableReport, f: RowFn| -> Vec<(f64, f64)> {
        t.rows.iter().map(|r| (f64::from(r.logical_size), f(r))).collect()
    };
    let mut panels = Vec::new();
    for (title, unit, f) in shapes {
        panels.push(Panel {
            title: title.into(),
            x_desc: "logical size (bytes, header included)".into(),
            y_desc: unit.into(),
            series: tables
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let n = if t.label.is_empty() { name(t) } else { t.label.clone() };
                    Series::new(n, steps(&values(t, f)), Style::Step, i)
                })
                .collect(),
            from_zero: true,
            int_x: true,
            int_y: true,
            ..Default::default()
        });
    }
    if let [a, b] = tables {
        for (title, unit, f) in shapes {
            if title.starts_with("tail") {
                continue;
            }
            let what = title.split(" (").next().unwrap_or(title);
            let diff = class_difference(&values(a, f), &values(b, f));
            let la = if a.label.is_empty() { "first" } else { a.label.as_str() };
            let lb = if b.label.is_empty() { "second" } else { b.label.as_str() };
            panels.push(Panel {
                title: format!("difference, {what}: {lb} minus {la}"),
                x_desc: "logical size (bytes, header included)".into(),
                y_desc: unit.into(),
                series: vec![Series::new(format!("{lb} minus {la}"), steps(&diff), Style::Step, 1)],
                zero_line: true,
                int_x: true,
                int_y: true,
                ..Default::default()
            });
        }
    }
    let title = match tables {
        [t] => format!("class table: {}", name(t)),
        _ => "class tables".to_string(),
    };
    let subtitle = if tables.len() > 1 { tables.iter().map(name).collect() } else { Vec::new() };
    draw(path, &Figure { title, subtitle, panels })
}
