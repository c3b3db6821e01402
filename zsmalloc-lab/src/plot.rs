//! `--plot FILE.svg`: per-class pages, waste and spanning objects (one line per configuration),
//! the sweep curve of `compare --sweep`, and class-table shapes for `classes`.

use std::path::Path;

use plotters::prelude::*;

use crate::classes::ClassTableReport;
use crate::compare::Comparison;
use crate::error::{LabError, LabResult};
use crate::result::RunResult;

/// One panel: a title, axis labels and named series of (x, y) points.
struct Panel {
    title: String,
    x_desc: String,
    y_desc: String,
    series: Vec<(String, Vec<(f64, f64)>)>,
    /// Start the y axis at 0 (else at the data's minimum, for curves whose change is small).
    from_zero: bool,
}

fn plot_err(path: &Path, e: impl std::fmt::Display) -> LabError {
    LabError::runtime(format!("cannot draw '{}': {e}", path.display()))
}

fn draw(path: &Path, title: &str, panels: &[Panel]) -> LabResult<()> {
    // Fail early and clearly when the file cannot be created.
    std::fs::File::create(path).map_err(|e| LabError::io("write", path, &e))?;
    let height = 60 + 320 * panels.len() as u32;
    let root = SVGBackend::new(path, (1100, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| plot_err(path, e))?;
    let root = root.titled(title, ("sans-serif", 22)).map_err(|e| plot_err(path, e))?;
    let areas = root.split_evenly((panels.len().max(1), 1));
    for (area, p) in areas.iter().zip(panels) {
        let pts = p.series.iter().flat_map(|(_, s)| s.iter());
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, 0f64);
        for &(x, y) in pts {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        if x0 > x1 {
            (x0, x1) = (0.0, 1.0);
        }
        if x1 <= x0 {
            x1 = x0 + 1.0;
        }
        let (y0, y1) = if p.from_zero || y0 > y1 {
            (0.0, if y1 <= 0.0 { 1.0 } else { y1 * 1.12 })
        } else {
            let pad = ((y1 - y0) * 0.15).max(y1.abs() * 0.002).max(0.5);
            ((y0 - pad).max(0.0), y1 + pad)
        };
        let wide = y1 - y0 >= 20.0;
        let y_fmt = move |v: &f64| if wide { format!("{v:.0}") } else { format!("{v:.2}") };
        let x_fmt = |v: &f64| if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v:.1}") };
        let mut chart = ChartBuilder::on(area)
            .caption(&p.title, ("sans-serif", 17))
            .margin(12)
            .x_label_area_size(38)
            .y_label_area_size(80)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|e| plot_err(path, e))?;
        chart
            .configure_mesh()
            .x_desc(p.x_desc.as_str())
            .y_desc(p.y_desc.as_str())
            .light_line_style(WHITE.mix(0.0))
            .y_label_formatter(&y_fmt)
            .x_label_formatter(&x_fmt)
            .draw()
            .map_err(|e| plot_err(path, e))?;
        for (i, (name, pts)) in p.series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let style = ShapeStyle::from(color).stroke_width(2);
            let anno = if pts.len() <= 32 {
                chart
                    .draw_series(LineSeries::new(pts.iter().copied(), style).point_size(3))
                    .map_err(|e| plot_err(path, e))?
            } else {
                chart
                    .draw_series(LineSeries::new(pts.iter().copied(), style))
                    .map_err(|e| plot_err(path, e))?
            };
            anno.label(name.as_str()).legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], ShapeStyle::from(color).stroke_width(2))
            });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| plot_err(path, e))?;
    }
    root.present().map_err(|e| plot_err(path, e))?;
    Ok(())
}

/// Per-class pages used, unused bytes (pages minus stored bytes) and spanning object slots of
/// each run.
pub fn runs(path: &Path, runs: &[&RunResult]) -> LabResult<()> {
    let mut pages = Vec::new();
    let mut waste = Vec::new();
    let mut span = Vec::new();
    for r in runs {
        let page = u64::from(r.config.page_size);
        let mut p = Vec::new();
        let mut w = Vec::new();
        let mut s = Vec::new();
        for c in &r.class_stats {
            let x = f64::from(c.size);
            let zspages = if c.objs_per_zspage == 0 {
                0
            } else {
                c.obj_allocated / u64::from(c.objs_per_zspage)
            };
            p.push((x, c.pages_used as f64));
            w.push((x, (c.pages_used * page).saturating_sub(c.bytes_stored) as f64 / 1024.0));
            s.push((x, (zspages * u64::from(c.spanning_per_zspage)) as f64));
        }
        pages.push((r.label.clone(), p));
        waste.push((r.label.clone(), w));
        span.push((r.label.clone(), s));
    }
    let title = runs.first().map(|r| r.workload.summary.clone()).unwrap_or_default();
    draw(
        path,
        &title,
        &[
            Panel {
                title: "pages per class".into(),
                x_desc: "class size (bytes)".into(),
                y_desc: "pages".into(),
                series: pages,
                from_zero: true,
            },
            Panel {
                title: "waste per class: pages minus stored bytes".into(),
                x_desc: "class size (bytes)".into(),
                y_desc: "KiB".into(),
                series: waste,
                from_zero: true,
            },
            Panel {
                title: "spanning object slots per class".into(),
                x_desc: "class size (bytes)".into(),
                y_desc: "objects".into(),
                series: span,
                from_zero: true,
            },
        ],
    )
}

/// A sweep: pages, spanning reads and bytes copied against the first swept key's value, one
/// line per combination of the other keys.
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
    let x_of = |r: &RunResult, i: usize| -> f64 {
        let v = match key.as_str() {
            "page-size" => Some(f64::from(r.config.page_size)),
            "chain-size" => Some(f64::from(r.config.chain_size)),
            "class-delta" => Some(f64::from(r.config.class_delta)),
            "mem-limit-pages" => Some(r.config.mem_limit_pages as f64),
            _ => None,
        };
        v.unwrap_or(i as f64)
    };
    let series = |f: &dyn Fn(&RunResult) -> f64| -> Vec<(String, Vec<(f64, f64)>)> {
        groups
            .iter()
            .map(|(n, rs)| {
                (n.clone(), rs.iter().enumerate().map(|(i, r)| (x_of(r, i), f(r))).collect())
            })
            .collect()
    };
    let x_desc = key.clone();
    draw(
        path,
        &format!("sweep of {key}: {}", c.workload.summary),
        &[
            Panel {
                title: "pages".into(),
                x_desc: x_desc.clone(),
                y_desc: "pages".into(),
                series: series(&|r| r.pages as f64),
                from_zero: false,
            },
            Panel {
                title: "spanning reads".into(),
                x_desc: x_desc.clone(),
                y_desc: "reads".into(),
                series: series(&|r| r.reads_spanning as f64),
                from_zero: false,
            },
            Panel {
                title: "bytes copied by reads".into(),
                x_desc,
                y_desc: "MiB".into(),
                series: series(&|r| r.read_copy_bytes as f64 / (1024.0 * 1024.0)),
                from_zero: false,
            },
        ],
    )
}

/// Class-table shape: chain, tail waste and spanning objects per zspage against class size.
pub fn classes(path: &Path, tables: &[ClassTableReport]) -> LabResult<()> {
    let mk = |f: &dyn Fn(&crate::classes::LogicalClassRow) -> f64| {
        tables
            .iter()
            .map(|t| {
                let mut pts: Vec<(f64, f64)> = Vec::new();
                for r in &t.rows {
                    let x = f64::from(r.class_size);
                    if pts.last().map(|p| p.0) != Some(x) {
                        pts.push((x, f(r)));
                    }
                }
                let name = if t.label.is_empty() { "table".to_string() } else { t.label.clone() };
                (name, pts)
            })
            .collect::<Vec<_>>()
    };
    draw(
        path,
        "class tables",
        &[
            Panel {
                title: "pages per zspage".into(),
                x_desc: "class size (bytes)".into(),
                y_desc: "pages".into(),
                series: mk(&|r| f64::from(r.chain)),
                from_zero: true,
            },
            Panel {
                title: "tail waste per zspage".into(),
                x_desc: "class size (bytes)".into(),
                y_desc: "bytes".into(),
                series: mk(&|r| f64::from(r.tail_waste)),
                from_zero: true,
            },
            Panel {
                title: "spanning objects per zspage".into(),
                x_desc: "class size (bytes)".into(),
                y_desc: "objects".into(),
                series: mk(&|r| f64::from(r.spanning_per_zspage)),
                from_zero: true,
            },
        ],
    )
}
