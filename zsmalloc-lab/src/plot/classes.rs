//! `zsmalloc classes --plot`: class-table shapes, and the difference of two tables.

use std::path::Path;

use super::draw::draw;
use super::figure::{spans, Figure, Panel, Series, Style};
use super::runs::{class_difference, class_spans};
use crate::classes::{ClassTableReport, LogicalClassRow};
use crate::error::LabResult;

/// Class-table shapes against logical size (chain, tail waste, merge waste and spanning
/// objects per zspage) as steps, small multiples on a grid: with one table, each shape over
/// every size and, beside it, zoomed on the smallest sizes, where the classes are densest; with
/// two, a row per shape (the first table, the second, the second minus the first) and a last
/// row of chains zoomed likewise.
pub fn classes(path: &Path, tables: &[ClassTableReport]) -> LabResult<()> {
    draw(path, &figure(tables))
}

type RowFn = fn(&LogicalClassRow) -> f64;

/// The shapes drawn: name, unit, value. The first (the chain) is the one zoomed with two tables.
const SHAPES: [(&str, &str, RowFn); 4] = [
    ("pages per zspage (chain)", "pages", |r| f64::from(r.chain)),
    ("tail waste per zspage", "bytes", |r| f64::from(r.tail_waste)),
    ("merge waste per zspage", "bytes, objects all of the size", |r| f64::from(r.merge_waste)),
    ("spanning objects per zspage", "objects", |r| f64::from(r.spanning_per_zspage)),
];

/// Classes a zoomed panel shows at most: at the width of a grid's panel, a few pixels each.
const ZOOM_CLASSES: usize = 48;

/// The zoom's end: the size of the [`ZOOM_CLASSES`]th class of the table with most classes
/// (or its last class if it has fewer).
pub fn zoom_end(tables: &[ClassTableReport]) -> f64 {
    let ends = tables.iter().map(|t| {
        let mut sizes: Vec<u32> = t.rows.iter().map(|r| r.class_size).collect();
        sizes.dedup();
        (sizes.len(), sizes.get(ZOOM_CLASSES - 1).or(sizes.last()).copied().unwrap_or(1))
    });
    ends.max().map_or(1.0, |(_, end)| f64::from(end))
}

fn values(t: &ClassTableReport, f: RowFn) -> Vec<(f64, f64)> {
    t.rows.iter().map(|r| (f64::from(r.logical_size), f(r))).collect()
}

/// Spans (see [`class_spans`]) cut at `end`, for a zoomed panel.
fn upto(spans: Vec<(f64, f64, f64)>, end: f64) -> Vec<(f64, f64, f64)> {
    spans.into_iter().filter(|s| s.0 < end).map(|(lo, hi, v)| (lo, hi.min(end), v)).collect()
}

fn figure(tables: &[ClassTableReport]) -> Figure {
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
    let short = |i: usize, t: &ClassTableReport| -> String {
        if !t.label.is_empty() {
            t.label.clone()
        } else {
            ["first", "second"].get(i).unwrap_or(&"table").to_string()
        }
    };
    let x_end = tables.iter().flat_map(|t| values(t, SHAPES[0].2)).map(|p| p.0).fold(1.0, f64::max);
    let zoom = zoom_end(tables);
    // The titles of a grid's panels are short: the zoom's reason is in the subtitle.
    let zoomed_title = |title: &str| {
        format!("{}, sizes to {zoom:.0} B", title.split(" (").next().unwrap_or(title))
    };
    let panel = |title: String, unit: &str, pts: Vec<(f64, f64, f64)>, color, end: f64| Panel {
        title,
        x_desc: "logical size (bytes, header included)".into(),
        y_desc: unit.into(),
        series: vec![Series::new(String::new(), spans(&pts), Style::Step, color)],
        x_range: Some((0.0, end)),
        int_x: true,
        int_y: true,
        ..Default::default()
    };
    let mut panels = Vec::new();
    if let [t] = tables {
        for (title, unit, f) in SHAPES {
            // The zoom on its neighbour's scale.
            let all = class_spans(&values(t, f));
            let top = all.iter().map(|s| s.2).fold(0.0, f64::max);
            panels.push(panel(title.to_string(), unit, all.clone(), 0, x_end));
            let mut zoomed = panel(zoomed_title(title), unit, upto(all, zoom), 0, zoom);
            zoomed.y_max = Some(top);
            panels.push(zoomed);
        }
    } else {
        let rows = SHAPES.iter().map(|&(title, unit, f)| (title.to_string(), unit, f, x_end));
        let zoomed =
            std::iter::once(SHAPES[0]).map(|(title, unit, f)| (zoomed_title(title), unit, f, zoom));
        for (title, unit, f, end) in rows.chain(zoomed) {
            // One panel per table, on one scale: drawn together, the second line would hide
            // the first wherever the steps are dense.
            let top = tables.iter().flat_map(|t| values(t, f)).map(|p| p.1).fold(0.0, f64::max);
            for (i, t) in tables.iter().enumerate() {
                let pts = upto(class_spans(&values(t, f)), end);
                let mut p = panel(format!("{title}: {}", short(i, t)), unit, pts, i, end);
                p.y_max = Some(top);
                panels.push(p);
            }
            if let [a, b] = tables {
                let diff = upto(class_difference(&values(a, f), &values(b, f)), end);
                let what = title.split(" (").next().unwrap_or(&title);
                let title = format!("{what}: {} minus {}", short(1, b), short(0, a));
                let mut p = panel(title, unit, diff, 1, end);
                p.zero_line = true;
                panels.push(p);
            }
        }
    }
    let title = match tables {
        [t] => format!("class table: {}", name(t)),
        _ => "class tables".to_string(),
    };
    let mut subtitle: Vec<String> =
        if tables.len() > 1 { tables.iter().map(name).collect() } else { Vec::new() };
    let zoomed_where = if tables.len() == 1 { "right" } else { "last row" };
    subtitle.push(format!(
        "{zoomed_where}: sizes up to {zoom:.0} B only ({ZOOM_CLASSES} classes), where the classes \
         are densest"
    ));
    let columns = match tables.len() {
        1 => 2,
        2 => 3,
        n => n,
    };
    Figure { title, subtitle, panels, columns }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classes::class_table;
    use crate::config::ConfigSpec;
    use crate::plot::draw::size;

    fn tables() -> [ClassTableReport; 2] {
        let mut base = ConfigSpec { label: "base".into(), ..Default::default() };
        base.config.page_size = 16384;
        let vs = ConfigSpec::with_overrides(&base, "class-delta=16").unwrap();
        [class_table(&base, 16, None, None).unwrap(), class_table(&vs, 16, None, None).unwrap()]
    }

    #[test]
    fn two_tables_are_drawn_apart_on_one_scale() {
        let tables = tables();
        let fig = figure(&tables);
        for p in &fig.panels {
            assert_eq!(p.series.len(), 1, "one line per panel: {}", p.title);
        }
        let chains: Vec<&Panel> =
            fig.panels.iter().filter(|p| p.title.starts_with("pages per zspage (chain)")).collect();
        assert_eq!(chains.len(), 2);
        assert_eq!(chains[0].y_max, chains[1].y_max);
        assert!(chains[0].title.ends_with(": base"), "{}", chains[0].title);
        assert!(chains[1].title.ends_with(": class-delta=16"), "{}", chains[1].title);
    }

    #[test]
    fn the_figure_is_one_screenful_with_the_dense_sizes_zoomed() {
        // 16K pages at delta 16: 1024 classes, a band of steps over the whole width.
        let tables = tables();
        let fig = figure(&tables);
        let (width, height, _) = size(&fig);
        assert_eq!(fig.columns, 3, "a table, the other, their difference");
        assert_eq!(fig.panels.len(), 15, "four shapes and the chains zoomed, three each");
        assert!(height <= 1600 && width <= 1400, "{width} x {height} pixels");
        let zoom = zoom_end(&tables);
        let zoomed: Vec<&Panel> =
            fig.panels.iter().filter(|p| p.title.contains("sizes to")).collect();
        assert_eq!(zoomed.len(), 3);
        for p in &zoomed {
            assert_eq!(p.x_range, Some((0.0, zoom)), "{}", p.title);
            let steps = &p.series[0].points;
            assert!(steps.iter().all(|pt| pt.0 <= zoom), "{}: cut at the zoom", p.title);
        }
        // The zoom holds at most ZOOM_CLASSES classes of the denser table, a few pixels each.
        for t in &tables {
            let mut inside: Vec<u32> = t
                .rows
                .iter()
                .filter(|r| f64::from(r.class_size) <= zoom)
                .map(|r| r.class_size)
                .collect();
            inside.dedup();
            assert!(inside.len() <= ZOOM_CLASSES, "{} classes", inside.len());
        }
        let one = figure(&tables[..1]);
        assert_eq!((one.columns, one.panels.len()), (2, 8), "each shape, whole and zoomed");
        assert!(size(&one).1 <= 1200, "{:?}", size(&one));
    }
}
