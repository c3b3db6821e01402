//! `--plot FILE.svg`: pictures of runs, sweeps and class tables.
//!
//! - [`runs`]: per-class pages, slack, merge waste and spanning reads as step lines (a class of
//!   size `s` serves the sizes above the previous class up to `s`), the huge classes in their
//!   own panel so they cannot flatten the rest, and with two or more runs the difference of
//!   each run minus the first;
//! - [`sweep`]: pages, spanning reads and bytes copied against the swept key, and a Pareto
//!   plot of pages against spanning reads;
//! - [`classes`]: class-table shapes, and the difference of two tables (`classes --vs`);
//! - [`cost`]: `zsmalloc cost`: read CPU per class and mode, and with several configurations a
//!   Pareto plot of pages against read CPU, one colour per chain policy.
//!
//! Every picture is a [`Figure`] of [`Panel`]s drawn by [`draw`]; a panel's legend sits beside
//! its plot, never on the data. A new picture (say pages against read CPU time) is a new
//! function that builds panels, e.g. with [`pareto_panel`].

use std::path::Path;

use plotters::prelude::*;

use crate::classes::ClassTableReport;
use crate::compare::Comparison;
use crate::error::{LabError, LabResult};
use crate::result::{per_class, RunResult};

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Straight segments between points, a marker on each when there are few.
    Line,
    /// Points already laid out as steps (see [`steps`]), drawn as a line without markers.
    Step,
    /// Markers only: filled when `Series::highlight`, hollow otherwise.
    Points,
    /// One bar per point, centred on x.
    Bars,
}

/// One named series of (x, y) points.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub style: Style,
    /// Palette index (series of one configuration share a colour across panels).
    pub color: usize,
    /// Filled markers / full colour; otherwise hollow and pale (e.g. dominated points).
    pub highlight: bool,
    /// Text drawn next to each point (same length as `points`, or empty).
    pub point_labels: Vec<String>,
}

impl Series {
    pub fn new(
        name: impl Into<String>,
        points: Vec<(f64, f64)>,
        style: Style,
        color: usize,
    ) -> Self {
        Series {
            name: name.into(),
            points,
            style,
            color,
            highlight: true,
            point_labels: Vec::new(),
        }
    }
}

/// One chart.
#[derive(Debug, Clone, Default)]
pub struct Panel {
    pub title: String,
    pub x_desc: String,
    pub y_desc: String,
    pub series: Vec<Series>,
    /// Start the y axis at 0 (else at the data's minimum, for curves whose change is small).
    pub from_zero: bool,
    /// Values are whole numbers: ticks at integers, labels without decimals.
    pub int_x: bool,
    pub int_y: bool,
    /// Draw the y = 0 line (difference plots).
    pub zero_line: bool,
    /// Category names for the x positions 0, 1, ... (bar panels).
    pub x_categories: Vec<String>,
}

/// A picture: a title, lines under it (configurations) and panels, one under the other.
#[derive(Debug, Clone, Default)]
pub struct Figure {
    pub title: String,
    pub subtitle: Vec<String>,
    pub panels: Vec<Panel>,
}

const WIDTH: u32 = 1200;
const PANEL_HEIGHT: u32 = 330;
const LEGEND_WIDTH: u32 = 290;

fn plot_err(path: &Path, e: impl std::fmt::Display) -> LabError {
    LabError::runtime(format!("cannot draw '{}': {e}", path.display()))
}

/// Palette index of the grey used for guides (the Pareto front).
pub const GREY: usize = usize::MAX;

fn color(i: usize) -> RGBColor {
    if i == GREY {
        return RGBColor(120, 120, 120);
    }
    const C: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(148, 103, 189),
        RGBColor(255, 127, 14),
        RGBColor(23, 190, 207),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
    ];
    C[i % C.len()]
}

/// A step function through `(size, value)` points sorted by size: each value is held from
/// the previous size (exclusive) up to its own; the first starts one step below itself.
pub fn steps(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for (i, &(x, y)) in points.iter().enumerate() {
        let prev = if i > 0 {
            points[i - 1].0
        } else {
            let step = points.get(1).map_or(16.0, |p| p.0 - x).max(1.0);
            x - step
        };
        out.push((prev, y));
        out.push((x, y));
    }
    out
}

/// Tick count for an axis: integers only when the range is small and the values whole.
fn ticks(lo: f64, hi: f64, int: bool) -> usize {
    if int && hi - lo <= 12.0 {
        ((hi - lo).round() as usize + 1).max(2)
    } else {
        10
    }
}

fn label(v: f64, int: bool, span: f64) -> String {
    if int || span >= 20.0 {
        if int && (v - v.round()).abs() > 1e-9 {
            return String::new();
        }
        let r = v.round() as i64;
        if r.abs() >= 10_000 {
            // Thousands separators keep large page counts readable.
            let s = r.abs().to_string();
            let mut g = String::new();
            for (i, ch) in s.chars().enumerate() {
                if i > 0 && (s.len() - i).is_multiple_of(3) {
                    g.push(',');
                }
                g.push(ch);
            }
            return if r < 0 { format!("-{g}") } else { g };
        }
        r.to_string()
    } else if span >= 2.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Draws `fig` as an SVG file.
pub fn draw(path: &Path, fig: &Figure) -> LabResult<()> {
    // Fail early and clearly when the file cannot be created.
    std::fs::File::create(path).map_err(|e| LabError::io("write", path, &e))?;
    let head = 44 + 18 * fig.subtitle.len() as u32;
    let height = head + PANEL_HEIGHT * fig.panels.len().max(1) as u32;
    let root = SVGBackend::new(path, (WIDTH, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| plot_err(path, e))?;
    let (top, body) = root.split_vertically(head);
    top.draw(&Text::new(fig.title.clone(), (14, 10), ("sans-serif", 20).into_font()))
        .map_err(|e| plot_err(path, e))?;
    for (i, line) in fig.subtitle.iter().enumerate() {
        top.draw(&Text::new(
            line.clone(),
            (14, 38 + 18 * i as i32),
            ("sans-serif", 14).into_font().color(&RGBColor(60, 60, 60)),
        ))
        .map_err(|e| plot_err(path, e))?;
    }
    let areas = body.split_evenly((fig.panels.len().max(1), 1));
    for (area, p) in areas.iter().zip(&fig.panels) {
        draw_panel(area, p).map_err(|e| plot_err(path, e))?;
    }
    root.present().map_err(|e| plot_err(path, e))?;
    Ok(())
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

fn draw_panel(area: &Area<'_>, p: &Panel) -> DrawResult {
    let (plot_area, legend) = area.split_horizontally(WIDTH - LEGEND_WIDTH);
    let pts = p.series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
    }
    let bars = p.series.iter().any(|s| s.style == Style::Bars);
    if bars {
        (x0, x1) = (x0 - 0.6, x1 + 0.6);
    } else if x1 <= x0 {
        (x0, x1) = (x0 - 1.0, x1 + 1.0);
    } else if p.series.iter().any(|s| s.style == Style::Points || !s.point_labels.is_empty()) {
        let pad = (x1 - x0) * 0.06;
        (x0, x1) = (x0 - pad, x1 + pad);
    }
    let (y0, y1) = if p.from_zero || p.zero_line {
        let (lo, hi) = (y0.min(0.0), y1.max(0.0));
        if hi - lo <= f64::EPSILON {
            (0.0, 1.0)
        } else {
            let pad = (hi - lo) * 0.1;
            (if lo < 0.0 { lo - pad } else { 0.0 }, hi + pad)
        }
    } else {
        let pad = ((y1 - y0) * 0.12).max(y1.abs() * 0.002).max(if p.int_y { 1.0 } else { 1e-6 });
        let lo = if y0 >= 0.0 { (y0 - pad).max(0.0) } else { y0 - pad };
        (lo, y1 + pad)
    };
    let (y0, y1) = if p.int_y { (y0.floor(), y1.ceil()) } else { (y0, y1) };
    let (xs, ys) = (x1 - x0, y1 - y0);
    let cats = p.x_categories.clone();
    let x_fmt = move |v: &f64| {
        if !cats.is_empty() {
            let i = v.round();
            if (v - i).abs() < 1e-9 && i >= 0.0 && (i as usize) < cats.len() {
                return cats[i as usize].clone();
            }
            return String::new();
        }
        label(*v, p.int_x, xs)
    };
    let y_fmt = move |v: &f64| label(*v, p.int_y, ys);
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(&p.title, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(86)
        .build_cartesian_2d(x0..x1, y0..y1)?;
    let x_ticks =
        if p.x_categories.is_empty() { ticks(x0, x1, p.int_x) } else { p.x_categories.len() + 2 };
    chart
        .configure_mesh()
        .x_desc(p.x_desc.as_str())
        .y_desc(p.y_desc.as_str())
        .x_labels(x_ticks)
        .y_labels(ticks(y0, y1, p.int_y))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(RGBColor(232, 232, 232))
        .y_label_formatter(&y_fmt)
        .x_label_formatter(&x_fmt)
        .draw()?;
    if p.zero_line {
        chart.draw_series(LineSeries::new([(x0, 0.0), (x1, 0.0)], BLACK.stroke_width(1)))?;
    }
    let n_bar = p.series.iter().filter(|s| s.style == Style::Bars).count().max(1) as f64;
    let mut bar_i = 0.0;
    for s in &p.series {
        let c = color(s.color);
        let full = ShapeStyle::from(c).stroke_width(2);
        let pale = ShapeStyle::from(c.mix(0.55)).stroke_width(1);
        let style = if s.highlight { full } else { pale };
        match s.style {
            Style::Line => {
                chart.draw_series(LineSeries::new(s.points.iter().copied(), style))?;
                if s.points.len() <= 40 {
                    chart.draw_series(
                        s.points.iter().map(|&pt| Circle::new(pt, 3, style.filled())),
                    )?;
                }
            }
            Style::Step => {
                chart.draw_series(LineSeries::new(s.points.iter().copied(), style))?;
            }
            Style::Points => {
                let marker = if s.highlight { full.filled() } else { pale };
                chart.draw_series(s.points.iter().map(|&pt| Circle::new(pt, 5, marker)))?;
            }
            Style::Bars => {
                let w = 0.8 / n_bar;
                let off = -0.4 + w * bar_i;
                bar_i += 1.0;
                chart.draw_series(s.points.iter().map(|&(x, y)| {
                    Rectangle::new([(x + off, 0.0), (x + off + w * 0.9, y)], c.mix(0.85).filled())
                }))?;
            }
        }
        // Labels above-right of front points, below-right of the others, so a point and its
        // dominated neighbour do not write over each other.
        let dy = if s.highlight { -17 } else { 5 };
        for (&(x, y), text) in s.points.iter().zip(&s.point_labels) {
            let font = ("sans-serif", 12).into_font().color(&RGBColor(40, 40, 40));
            let element = EmptyElement::at((x, y)) + Text::new(text.clone(), (6, dy), font);
            chart.draw_series(std::iter::once(element))?;
        }
    }
    // The legend, beside the plot.
    let mut y = 40;
    for s in &p.series {
        let c = color(s.color);
        let shade = if s.highlight { c.to_rgba() } else { c.mix(0.55) };
        match s.style {
            Style::Points => {
                let st = if s.highlight {
                    ShapeStyle::from(shade).filled()
                } else {
                    ShapeStyle::from(shade).stroke_width(1)
                };
                legend.draw(&Circle::new((18, y), 5, st))?;
            }
            Style::Bars => {
                legend.draw(&Rectangle::new([(8, y - 6), (28, y + 6)], shade.filled()))?
            }
            _ => legend.draw(&PathElement::new(
                vec![(6, y), (30, y)],
                ShapeStyle::from(shade).stroke_width(3),
            ))?,
        }
        let mut name = s.name.clone();
        if name.chars().count() > 40 {
            name = name.chars().take(39).collect::<String>() + "…";
        }
        legend.draw(&Text::new(name, (38, y - 7), ("sans-serif", 13).into_font()))?;
        y += 22;
    }
    Ok(())
}

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

/// A Pareto panel: `points` are (label, group, x, y), both axes to be minimised. Points on the
/// front (no other point is at least as good on both axes and better on one) are filled and
/// joined; dominated points are hollow and pale. One colour per group.
pub fn pareto_panel(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    points: &[(String, String, f64, f64)],
) -> Panel {
    let dominated = |i: usize| {
        let (_, _, x, y) = &points[i];
        points.iter().any(|(_, _, a, b)| a <= x && b <= y && (a < x || b < y))
    };
    let mut groups: Vec<String> = Vec::new();
    for (_, g, _, _) in points {
        if !groups.contains(g) {
            groups.push(g.clone());
        }
    }
    let mut series = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        for front in [true, false] {
            let idx: Vec<usize> =
                (0..points.len()).filter(|&i| points[i].1 == *g && dominated(i) != front).collect();
            if idx.is_empty() {
                continue;
            }
            let mut s = Series::new(
                format!("{g}: {}", if front { "on the front" } else { "dominated" }),
                idx.iter().map(|&i| (points[i].2, points[i].3)).collect(),
                Style::Points,
                gi,
            );
            s.highlight = front;
            s.point_labels = idx.iter().map(|&i| points[i].0.clone()).collect();
            series.push(s);
        }
    }
    let mut front: Vec<(f64, f64)> =
        (0..points.len()).filter(|&i| !dominated(i)).map(|i| (points[i].2, points[i].3)).collect();
    front.sort_by(|a, b| a.0.total_cmp(&b.0));
    if front.len() > 1 {
        let mut line = Vec::new();
        for w in front.windows(2) {
            line.push(w[0]);
            line.push((w[1].0, w[0].1));
        }
        line.push(front[front.len() - 1]);
        let mut s = Series::new("Pareto front (lower is better on both)", line, Style::Step, GREY);
        s.highlight = false;
        series.insert(0, s);
    }
    Panel {
        title: title.into(),
        x_desc: x_desc.into(),
        y_desc: y_desc.into(),
        series,
        int_x: true,
        int_y: true,
        ..Default::default()
    }
}

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
        ..Default::default()
    };
    let points: Vec<(String, String, f64, f64)> = groups
        .iter()
        .flat_map(|(g, rs)| {
            rs.iter().map(move |r| {
                let v = r.label.split(',').find_map(|p| p.strip_prefix(&format!("{key}=")));
                (
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
            &format!("pages against spanning reads (Pareto; points labelled with {key})"),
            "pages",
            "spanning reads",
            &points,
        ),
    ];
    draw(
        path,
        &Figure { title: format!("sweep of {key}: {}", c.workload.summary), subtitle, panels },
    )
}

/// `zsmalloc cost --plot`: per class, the CPU time of a read (section + decompress, zram
/// consumer) in each mode and compressor of the first configuration, modelled from the measured
/// rows and each class's share of spanning objects; then, with two or more configurations, per
/// compressor and mode, a Pareto plot of pages against the mean read CPU, one colour per chain
/// policy (both policies of a sweep), points labelled with the swept values.
pub fn cost(path: &Path, r: &crate::cost::CostReport, sweep_keys: &[String]) -> LabResult<()> {
    use crate::cost::Kind;
    let mut panels = Vec::new();
    let median = |label: &str, comp: &str, mode: &str, span: bool| {
        r.reads
            .iter()
            .find(|x| {
                x.label == label
                    && x.compressor == comp
                    && x.mode == mode
                    && x.kind == Kind::Regular
                    && x.spanning == span
            })
            .map(|x| x.ns_per_read.median)
    };
    if let Some(first) = r.pools.first() {
        let mut series = Vec::new();
        let mut ci = 0;
        for p in r.pools.iter().filter(|p| p.label == first.label) {
            let mut modes: Vec<&str> = Vec::new();
            for x in r.reads.iter().filter(|x| x.label == p.label && x.compressor == p.compressor) {
                if !modes.contains(&x.mode.as_str()) {
                    modes.push(&x.mode);
                }
            }
            for m in modes {
                let inplace = median(&p.label, &p.compressor, m, false);
                let span = median(&p.label, &p.compressor, m, true);
                let pts: Vec<(f64, f64)> = p
                    .classes
                    .iter()
                    .filter(|(size, n, _)| *n > 0 && u64::from(*size) < p.huge_class_size)
                    .filter_map(|&(size, n, s)| {
                        let share = s as f64 / n as f64;
                        let v = match (inplace, span) {
                            (Some(i), Some(sp)) => share * sp + (1.0 - share) * i,
                            (Some(i), None) => i,
                            (None, Some(sp)) => sp,
                            (None, None) => return None,
                        };
                        Some((f64::from(size), v))
                    })
                    .collect();
                if !pts.is_empty() {
                    series.push(Series::new(format!("{} {m}", p.compressor), pts, Style::Line, ci));
                    ci += 1;
                }
            }
        }
        panels.push(Panel {
            title: format!(
                "{}: CPU per read by class (spanning share x spanning row + rest x in-place row)",
                first.label
            ),
            x_desc: "class size (bytes)".into(),
            y_desc: "ns per read".into(),
            series,
            int_x: true,
            from_zero: true,
            ..Default::default()
        });
    }
    let labels: Vec<&str> = {
        let mut v: Vec<&str> = Vec::new();
        for p in &r.pools {
            if !v.contains(&p.label.as_str()) {
                v.push(&p.label);
            }
        }
        v
    };
    if labels.len() >= 2 {
        let mut keys: Vec<(String, String)> = Vec::new();
        for s in &r.summary.rows {
            let k = (s.compressor.clone(), s.mode.clone());
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        for (comp, mode) in keys {
            let points: Vec<(String, String, f64, f64)> = r
                .summary
                .rows
                .iter()
                .filter(|s| s.compressor == comp && s.mode == mode)
                .map(|s| {
                    let policy = r
                        .pools
                        .iter()
                        .find(|p| p.label == s.label)
                        .map_or(String::new(), |p| p.config.chain_policy.clone());
                    let point = s
                        .label
                        .split(',')
                        .filter(|part| sweep_keys.is_empty() || !part.starts_with("chain-policy="))
                        .collect::<Vec<_>>()
                        .join(",");
                    (point, policy, s.pages as f64, s.ns_per_read)
                })
                .collect();
            let mut p = pareto_panel(
                &format!("{comp}, {mode}: pages against CPU per read (Pareto, lower is better)"),
                "pages",
                "ns per read (section + decompress)",
                &points,
            );
            p.int_y = false;
            panels.push(p);
        }
    }
    let corpus = r.corpus.first().map_or(String::new(), |c| c.source.clone());
    let configs: Vec<String> = r
        .pools
        .iter()
        .filter(|p| p.compressor == r.pools[0].compressor)
        .map(|p| {
            format!(
                "{} (page {}, chain {}, delta {}, {})",
                p.label,
                p.config.page_size,
                p.config.chain_size,
                p.config.class_delta,
                p.config.chain_policy
            )
        })
        .collect();
    // Two configurations a line, so the subtitle fits the picture.
    let mut subtitle: Vec<String> =
        configs.chunks(2).map(|c| format!("configurations: {}", c.join("; "))).collect();
    subtitle.push(format!(
        "{} rounds, medians; backing {}; load average {}; classes below huge_class_size",
        r.environment.rounds,
        r.environment.backing,
        r.environment.load_average_before.map_or("?".into(), |l| l.to_string())
    ));
    draw(path, &Figure { title: format!("cost of reads: {corpus}"), subtitle, panels })
}

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
