//! Draws a [`Figure`] as SVG: panels one under the other, each with its legend beside it, or
//! on a grid; axes from [`super::axes`], labels placed by [`super::labels`], the shared
//! palette.

use std::io::Write;
use std::path::Path;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::axes::{axes, label, tick_step, ticks, Y_TICKS};
use super::figure::{wrap, Figure, Panel, Style, GREY};
use super::labels::{leader, place_labels, LabelBox, LABEL_CHAR_WIDTH};
use crate::atomic_file::AtomicFile;
use crate::error::{LabError, LabResult};

const WIDTH: u32 = 1200;
const PANEL_HEIGHT: u32 = 330;
const LEGEND_WIDTH: u32 = 290;
/// A grid's panels: at least this wide, this tall.
const GRID_PANEL_WIDTH: u32 = 440;
const GRID_PANEL_HEIGHT: u32 = 280;
/// Pixels an x tick label needs.
const X_TICK_PIXELS: u32 = 80;

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

/// The picture's size in pixels, and the height of its title and subtitle.
pub fn size(fig: &Figure) -> (u32, u32, u32) {
    let head = 44 + 18 * fig.subtitle.len() as u32;
    let n = fig.panels.len().max(1) as u32;
    if fig.columns <= 1 {
        return (WIDTH, head + PANEL_HEIGHT * n, head);
    }
    let cols = fig.columns as u32;
    let rows = n.div_ceil(cols);
    (WIDTH.max(GRID_PANEL_WIDTH * cols), head + GRID_PANEL_HEIGHT * rows, head)
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
    let (width, height, head) = size(fig);
    let root = SVGBackend::with_string(svg, (width, height)).into_drawing_area();
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
    let grid = fig.columns > 1;
    let cols = fig.columns.max(1);
    let rows = fig.panels.len().max(1).div_ceil(cols);
    let areas = body.split_evenly((rows, cols));
    for (area, p) in areas.iter().zip(&fig.panels) {
        draw_panel(area, p, grid).map_err(|e| plot_err(path, e))?;
    }
    root.present().map_err(|e| plot_err(path, e))?;
    Ok(())
}

/// An axis with the ticks [`super::axes`] chose, and no others: plotters' own choice can put
/// ticks between categories, where they have no label.
struct Ticked {
    range: RangedCoordf64,
    ticks: Vec<f64>,
}

impl Ticked {
    fn new(range: std::ops::Range<f64>, ticks: Vec<f64>) -> Self {
        Ticked { range: range.into(), ticks }
    }
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.range.map(value, limit)
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.range.range()
    }
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

fn draw_panel(area: &Area<'_>, p: &Panel, grid: bool) -> DrawResult {
    let (width, _) = area.dim_in_pixel();
    let (plot_area, legend) = if grid {
        area.split_horizontally(width)
    } else {
        area.split_horizontally(width - LEGEND_WIDTH)
    };
    let a = axes(p);
    let ((x0, x1), (y0, y1)) = (a.x, a.y);
    let plot_width = plot_area.dim_in_pixel().0;
    let x_max_ticks = (plot_width / X_TICK_PIXELS).max(3) as usize;
    let x_step = tick_step(x0, x1, p.int_x, x_max_ticks);
    let y_step = tick_step(y0, y1, p.int_y, Y_TICKS);
    let x_ticks: Vec<f64> = if p.x_categories.is_empty() {
        ticks(x0, x1, p.int_x, x_max_ticks)
    } else {
        (0..p.x_categories.len()).map(|i| i as f64).collect()
    };
    let y_ticks = ticks(y0, y1, p.int_y, Y_TICKS);
    let cats = p.x_categories.clone();
    let x_fmt = move |v: &f64| {
        if cats.is_empty() {
            return label(*v, x_step);
        }
        cats.get(v.round().max(0.0) as usize).cloned().unwrap_or_default()
    };
    let y_fmt = move |v: &f64| label(*v, y_step);
    let caption = match &a.note {
        Some(note) => format!("{} ({note})", p.title),
        None => p.title.clone(),
    };
    // The caption in as many lines as it needs, rather than run off the picture.
    let font_size = if grid { 14 } else { 16 };
    let lines = wrap(&caption, (plot_width * 2 / font_size).max(20) as usize);
    let line_height = font_size as i32 + 4;
    let caption_font = TextStyle::from(("sans-serif", font_size).into_font())
        .pos(Pos::new(HPos::Center, VPos::Top));
    for (i, line) in lines.iter().enumerate() {
        let at = (plot_width as i32 / 2, 6 + line_height * i as i32);
        plot_area.draw(&Text::new(line.clone(), at, caption_font.clone()))?;
    }
    let mut chart = ChartBuilder::on(&plot_area)
        .margin(10)
        .margin_top(12 + line_height * lines.len() as i32)
        .x_label_area_size(40)
        .y_label_area_size(if grid { 70 } else { 86 })
        .build_cartesian_2d(Ticked::new(x0..x1, x_ticks), Ticked::new(y0..y1, y_ticks))?;
    chart
        .configure_mesh()
        .x_desc(p.x_desc.as_str())
        .y_desc(p.y_desc.as_str())
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
    // Point labels, once every series is drawn: each next to its own point where there is
    // room, else further out on a leader line, else left out and listed under the legend. A
    // label takes its series' colour: where two series' points crowd (two policies of a
    // sweep), a label between them still says whose it is.
    let labelled: Vec<((f64, f64), &String, usize)> = p
        .series
        .iter()
        .flat_map(|s| s.points.iter().copied().zip(&s.point_labels).map(|(pt, l)| (pt, l, s.color)))
        .collect();
    let boxes: Vec<LabelBox> = labelled
        .iter()
        .map(|&(pt, text, _)| {
            let (x, y) = chart.backend_coord(&pt);
            LabelBox { x, y, width: LABEL_CHAR_WIDTH * text.chars().count() as i32 }
        })
        .collect();
    let (xr, yr) = chart.plotting_area().get_pixel_range();
    let bounds = (xr.start, yr.start, xr.end, yr.end);
    let mut left_out: Vec<&str> = Vec::new();
    for (((pt, text, series_color), b), placement) in
        labelled.iter().zip(&boxes).zip(place_labels(&boxes, bounds))
    {
        let Some(pl) = placement else {
            left_out.push(text);
            continue;
        };
        let ink = darker(color(*series_color));
        let font = ("sans-serif", 12).into_font().color(&ink);
        let element = EmptyElement::at(*pt) + Text::new((*text).clone(), (pl.dx, pl.dy), font);
        chart.draw_series(std::iter::once(element))?;
        if pl.leader {
            let (from, to) = leader(b, &pl);
            let line = PathElement::new(vec![from, to], ink);
            chart.draw_series(std::iter::once(EmptyElement::at(*pt) + line))?;
        }
    }
    if grid {
        return Ok(());
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
        legend.draw(&Text::new(short(&s.name, 40), (38, y - 7), ("sans-serif", 13).into_font()))?;
        y += 22;
    }
    if !left_out.is_empty() {
        let text = format!("not labelled (no room): {}", left_out.join(", "));
        legend.draw(&Text::new(short(&text, 44), (8, y - 7), ("sans-serif", 12).into_font()))?;
    }
    Ok(())
}

/// `c` darkened for text on white: a label as legible as the grey it replaces, in its hue.
fn darker(c: RGBColor) -> RGBColor {
    let d = |v: u8| (f64::from(v) * 0.7) as u8;
    RGBColor(d(c.0), d(c.1), d(c.2))
}

/// `text`, cut to `chars` characters with an ellipsis.
fn short(text: &str, chars: usize) -> String {
    if text.chars().count() > chars {
        text.chars().take(chars - 1).collect::<String>() + "…"
    } else {
        text.to_string()
    }
}
