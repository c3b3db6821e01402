//! `zsmalloc classes --plot`: class-table shapes, and the difference of two tables.

use std::path::Path;

use super::draw::draw;
use super::figure::{steps, Figure, Panel, Series, Style};
use super::runs::class_difference;
use crate::classes::ClassTableReport;
use crate::error::LabResult;

/// Class-table shapes against logical size (chain, tail waste, merge waste and spanning
/// objects per zspage) as steps; with two tables, each in its own panel, then the second
/// minus the first.
pub fn classes(path: &Path, tables: &[ClassTableReport]) -> LabResult<()> {
    draw(path, &figure(tables))
}

fn figure(tables: &[ClassTableReport]) -> Figure {
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
        // With two tables, one panel each on the same scale: drawn together, the second
        // line hides the first wherever the two tables' steps are dense.
        let top = tables.iter().flat_map(|t| values(t, f)).map(|p| p.1).fold(0.0, f64::max);
        for (i, t) in tables.iter().enumerate() {
            let n = if t.label.is_empty() { name(t) } else { t.label.clone() };
            panels.push(Panel {
                title: if tables.len() > 1 { format!("{title}: {n}") } else { title.into() },
                x_desc: "logical size (bytes, header included)".into(),
                y_desc: unit.into(),
                series: vec![Series::new(n, steps(&values(t, f)), Style::Step, i)],
                from_zero: true,
                int_x: true,
                int_y: true,
                y_max: Some(top),
                ..Default::default()
            });
        }
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
    Figure { title, subtitle, panels }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classes::class_table;
    use crate::config::ConfigSpec;

    #[test]
    fn two_tables_are_drawn_apart_on_one_scale() {
        let mut base = ConfigSpec { label: "base".into(), ..Default::default() };
        base.config.page_size = 16384;
        let vs = ConfigSpec::with_overrides(&base, "class-delta=16").unwrap();
        let tables = [
            class_table(&base, 16, None, None).unwrap(),
            class_table(&vs, 16, None, None).unwrap(),
        ];
        let fig = figure(&tables);
        for p in &fig.panels {
            assert_eq!(p.series.len(), 1, "one line per panel: {}", p.title);
        }
        let chains: Vec<&Panel> =
            fig.panels.iter().filter(|p| p.title.starts_with("pages per zspage")).collect();
        assert_eq!(chains.len(), 2);
        assert_eq!(chains[0].y_max, chains[1].y_max);
        assert_eq!(chains[0].series[0].name, "base");
        assert_eq!(chains[1].series[0].name, "class-delta=16");
    }
}
