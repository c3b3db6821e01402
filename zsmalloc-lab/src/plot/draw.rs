//! Draws a [`Figure`] as SVG: panels one under the other, each with its legend beside it, axes
//! with readable ticks, the shared palette.

use std::io::Write;
use std::path::Path;

use plotters::prelude::*;

use super::figure::{Figure, Panel, Style, GREY};
use crate::atomic_file::AtomicFile;
use crate::error::{LabError, LabResult};

const WIDTH: u32 = 1200;
const PANEL_HEIGHT: u32 = 330;
const LEGEND_WIDTH: u32 = 290;

fn plot_err(path: &Path, e: impl std::fmt::Display) -> LabError {
    LabError::runtime(format!("cannot draw '{}': {e}", path.display()))
}

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

/// Draws `fig` as an SVG file (named `.svg`: [`super::check_path`]).
pub fn draw(path: &Path, fig: &Figure) -> LabResult<()> {
    super::check_path(path)?;
    // Fail early and clearly when the file cannot be written.
    let out = AtomicFile::create(path)?;
    let mut svg = String::new();
    draw_into(&mut svg, path, fig)?;
    write_svg(out, path, &svg)
}

/// Writes the drawn SVG: whole or not at all.
fn write_svg(mut out: AtomicFile, path: &Path, svg: &str) -> LabResult<()> {
    out.write_all(svg.as_bytes()).map_err(|e| LabError::io("write", path, &e))?;
    out.commit()
}

/// Draws `fig` into `svg` (`path` names it in errors).
fn draw_into(svg: &mut String, path: &Path, fig: &Figure) -> LabResult<()> {
    let head = 44 + 18 * fig.subtitle.len() as u32;
    let height = head + PANEL_HEIGHT * fig.panels.len().max(1) as u32;
    let root = SVGBackend::with_string(svg, (WIDTH, height)).into_drawing_area();
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
    // Every drawn point and whisker end; NaN points (line breaks) are not drawn.
    let spread_ends = p.series.iter().flat_map(|s| {
        s.points.iter().zip(&s.y_spread).flat_map(|(&(x, _), &(lo, hi))| [(x, lo), (x, hi)])
    });
    let pts = p.series.iter().flat_map(|s| s.points.iter().copied()).chain(spread_ends);
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for (x, y) in pts.filter(|(x, y)| x.is_finite() && y.is_finite()) {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
    }
    if let Some(top) = p.y_max {
        y1 = y1.max(top);
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
    // Bar series side by side at each x; series that share no x (one per category) each get
    // the whole width.
    let bar_xs: Vec<u64> = p
        .series
        .iter()
        .filter(|s| s.style == Style::Bars)
        .flat_map(|s| s.points.iter().map(|pt| pt.0.to_bits()))
        .collect();
    let shared = bar_xs.iter().enumerate().any(|(i, x)| bar_xs[..i].contains(x));
    let n_bar = if shared {
        p.series.iter().filter(|s| s.style == Style::Bars).count().max(1) as f64
    } else {
        1.0
    };
    let mut bar_i = 0.0;
    for s in &p.series {
        let c = color(s.color);
        let full = ShapeStyle::from(c).stroke_width(2);
        let pale = ShapeStyle::from(c.mix(0.55)).stroke_width(1);
        let style = if s.highlight { full } else { pale };
        match s.style {
            Style::Line => {
                for run in s.points.split(|p| !p.1.is_finite()).filter(|r| !r.is_empty()) {
                    chart.draw_series(LineSeries::new(run.iter().copied(), style))?;
                }
                let shown = || s.points.iter().filter(|p| p.1.is_finite());
                if shown().count() <= 40 {
                    chart.draw_series(shown().map(|&pt| Circle::new(pt, 3, style.filled())))?;
                }
            }
            Style::Step => {
                chart.draw_series(LineSeries::new(s.points.iter().copied(), style))?;
            }
            Style::Points => {
                for (&(x, _), &(lo, hi)) in s.points.iter().zip(&s.y_spread) {
                    chart.draw_series(LineSeries::new([(x, lo), (x, hi)], pale))?;
                }
                let marker = if s.highlight { full.filled() } else { pale };
                chart.draw_series(s.points.iter().map(|&pt| Circle::new(pt, 5, marker)))?;
            }
            Style::Bars => {
                let w = 0.8 / n_bar;
                let off = -0.4 + w * bar_i;
                if shared {
                    bar_i += 1.0;
                }
                chart.draw_series(s.points.iter().map(|&(x, y)| {
                    Rectangle::new([(x + off, 0.0), (x + off + w * 0.9, y)], c.mix(0.85).filled())
                }))?;
            }
        }
    }
    // Point labels, once every series is drawn: each level with its own point where it fits.
    let labelled: Vec<((f64, f64), &String)> =
        p.series.iter().flat_map(|s| s.points.iter().copied().zip(&s.point_labels)).collect();
    let boxes: Vec<LabelBox> = labelled
        .iter()
        .map(|&(pt, text)| {
            let (x, y) = chart.backend_coord(&pt);
            LabelBox { x, y, width: LABEL_CHAR_WIDTH * text.chars().count() as i32 }
        })
        .collect();
    let (xr, yr) = chart.plotting_area().get_pixel_range();
    let area = (xr.start, yr.start, xr.end, yr.end);
    for ((pt, text), offset) in labelled.iter().zip(place_labels(&boxes, area)) {
        let font = ("sans-serif", 12).into_font().color(&RGBColor(40, 40, 40));
        let element = EmptyElement::at(*pt) + Text::new((*text).clone(), offset, font);
        chart.draw_series(std::iter::once(element))?;
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

/// Width of a label character at the labels' 12-pixel font, pixels (about).
const LABEL_CHAR_WIDTH: i32 = 7;
const LABEL_HEIGHT: i32 = 12;
/// Pixels between a marker's centre and its label.
const LABEL_GAP: i32 = 8;

/// A labelled point, in pixels, and its label's width.
#[derive(Debug, Clone, Copy)]
pub struct LabelBox {
    pub x: i32,
    pub y: i32,
    pub width: i32,
}

/// Where each label goes, as the offset of its top-left corner from its point: right of the
/// point and level with it; else left of it; else above, else below; else at a corner
/// (above or below, right or left); else a line further above or below; the first place that neither covers a label already placed
/// nor another point's marker. Where every place covers something (a crowd of points), the
/// place covering the fewest. A label therefore sits nearer its own point than any other
/// wherever there is room. A place inside `area` (left, top, right, bottom: the plot's pixels)
/// always wins over one that leaves it, so a label at the edge turns inwards rather than run
/// into the axis or the legend.
pub fn place_labels(points: &[LabelBox], area: (i32, i32, i32, i32)) -> Vec<(i32, i32)> {
    let mut placed: Vec<(i32, i32, i32, i32)> = Vec::new();
    let mut out = Vec::with_capacity(points.len());
    let half = LABEL_HEIGHT / 2;
    for (i, p) in points.iter().enumerate() {
        let candidates = [
            (LABEL_GAP, -half),
            (-LABEL_GAP - p.width, -half),
            (-p.width / 2, -LABEL_GAP - LABEL_HEIGHT),
            (-p.width / 2, LABEL_GAP),
            (LABEL_GAP / 2, -LABEL_GAP / 2 - LABEL_HEIGHT),
            (LABEL_GAP / 2, LABEL_GAP / 2),
            (-LABEL_GAP / 2 - p.width, -LABEL_GAP / 2 - LABEL_HEIGHT),
            (-LABEL_GAP / 2 - p.width, LABEL_GAP / 2),
            (-p.width / 2, -LABEL_GAP - 2 * LABEL_HEIGHT - 2),
            (-p.width / 2, LABEL_GAP + LABEL_HEIGHT + 2),
        ];
        // What a label at `(dx, dy)` would cover: labels placed, then other points' markers.
        let covered = |&(dx, dy): &(i32, i32)| {
            let r = (p.x + dx, p.y + dy, p.x + dx + p.width, p.y + dy + LABEL_HEIGHT);
            let labels =
                placed.iter().filter(|b| !(r.2 <= b.0 || b.2 <= r.0 || r.3 <= b.1 || b.3 <= r.1));
            let markers = points.iter().enumerate().filter(|&(j, q)| {
                j != i && !(q.x + 5 <= r.0 || r.2 <= q.x - 5 || q.y + 5 <= r.1 || r.3 <= q.y - 5)
            });
            labels.count() + markers.count()
        };
        let outside = |&(dx, dy): &(i32, i32)| {
            let (l, t) = (p.x + dx, p.y + dy);
            l < area.0 || t < area.1 || l + p.width > area.2 || t + LABEL_HEIGHT > area.3
        };
        let (dx, dy) = candidates
            .iter()
            .copied()
            .enumerate()
            .min_by_key(|(k, c)| (outside(c), covered(c), *k))
            .map_or(candidates[0], |(_, c)| c);
        placed.push((p.x + dx, p.y + dy, p.x + dx + p.width, p.y + dy + LABEL_HEIGHT));
        out.push((dx, dy));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plot area no label leaves.
    const EVERYWHERE: (i32, i32, i32, i32) =
        (i32::MIN / 2, i32::MIN / 2, i32::MAX / 2, i32::MAX / 2);

    #[test]
    fn a_label_at_the_right_edge_turns_inwards() {
        let pts = [LabelBox { x: 995, y: 100, width: 90 }];
        let (dx, _) = place_labels(&pts, (0, 0, 1000, 400))[0];
        assert!(995 + dx + 90 <= 1000, "the label stays inside: offset {dx}");
        assert_eq!(place_labels(&pts, EVERYWHERE)[0], (LABEL_GAP, -LABEL_HEIGHT / 2));
    }

    /// The label's centre, in pixels.
    fn centre(p: &LabelBox, (dx, dy): (i32, i32)) -> (f64, f64) {
        (f64::from(p.x + dx) + f64::from(p.width) / 2.0, f64::from(p.y + dy + LABEL_HEIGHT / 2))
    }

    fn dist(a: (f64, f64), p: &LabelBox) -> f64 {
        ((a.0 - f64::from(p.x)).powi(2) + (a.1 - f64::from(p.y)).powi(2)).sqrt()
    }

    #[test]
    fn each_label_sits_nearest_its_own_point() {
        // The sweep's case: chain 2 classic (dominated) a few pixels above chain 2 heuristic
        // (on the front), at the same pages; and a lone point.
        let pts = [
            LabelBox { x: 100, y: 200, width: 7 },
            LabelBox { x: 100, y: 207, width: 7 },
            LabelBox { x: 300, y: 50, width: 14 },
        ];
        let offsets = place_labels(&pts, EVERYWHERE);
        for (i, (p, &o)) in pts.iter().zip(&offsets).enumerate() {
            let c = centre(p, o);
            for (j, q) in pts.iter().enumerate() {
                if i != j {
                    assert!(dist(c, p) < dist(c, q), "label {i} is nearer point {j}: {offsets:?}");
                }
            }
        }
        assert_eq!(offsets[2], (LABEL_GAP, -LABEL_HEIGHT / 2), "a lone label: right, level");
    }

    #[test]
    fn labels_in_a_crowd_stay_off_each_other() {
        // A reference between two frontier points a few pixels apart (as in optimize's default
        // run), their labels placed first.
        let pts = [
            LabelBox { x: 829, y: 335, width: 21 },
            LabelBox { x: 786, y: 332, width: 21 },
            LabelBox { x: 815, y: 332, width: 63 },
        ];
        let offsets = place_labels(&pts, EVERYWHERE);
        let rect = |p: &LabelBox, (dx, dy): (i32, i32)| {
            (p.x + dx, p.y + dy, p.x + dx + p.width, p.y + dy + LABEL_HEIGHT)
        };
        let r = rect(&pts[2], offsets[2]);
        for (q, &o) in pts.iter().zip(&offsets).take(2) {
            let b = rect(q, o);
            let apart = r.2 <= b.0 || b.2 <= r.0 || r.3 <= b.1 || b.3 <= r.1;
            assert!(apart, "{r:?} covers the label {b:?}: {offsets:?}");
        }
    }
}
