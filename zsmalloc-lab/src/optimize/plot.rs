//! `optimize --plot FILE.svg`: the Pareto plot. Two panels on one read-cost axis: end pages and
//! peak pages. The reported frontier points are joined in order (the frontier is exact on end
//! pages; peak pages are measured per point and need not fall monotonically); classic and the
//! heuristic are marked and labelled; points that dominate every reference are filled.

use std::path::Path;

use plotters::prelude::*;

use super::report::{OptimizeReport, PointReport};
use crate::error::{LabError, LabResult};

const WIDTH: u32 = 960;
const PANEL_HEIGHT: u32 = 420;
const HEAD: u32 = 60;
const FRONTIER: RGBColor = RGBColor(31, 119, 180);
const REFERENCES: [RGBColor; 3] =
    [RGBColor(214, 39, 40), RGBColor(44, 160, 44), RGBColor(148, 103, 189)];

type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;
type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// Draws the report's Pareto plot to `path`.
pub fn pareto(path: &Path, report: &OptimizeReport) -> LabResult<()> {
    std::fs::File::create(path).map_err(|e| LabError::io("write", path, &e))?;
    let err = |e: DrawingAreaErrorKind<std::io::Error>| {
        LabError::runtime(format!("cannot draw '{}': {e}", path.display()))
    };
    let root = SVGBackend::new(path, (WIDTH, HEAD + 2 * PANEL_HEIGHT)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let (top, body) = root.split_vertically(HEAD);
    let title = format!("optimize: {} (page {})", report.workload.summary, report.page_size);
    let sub = format!(
        "exact frontier over chains: {} points, {} shown; layout {} ({} classes, {} searched)",
        report.frontier_points,
        report.points.len(),
        report.layout.source,
        report.layout.classes,
        report.layout.searched
    );
    top.draw(&Text::new(title, (14, 10), ("sans-serif", 18).into_font())).map_err(err)?;
    top.draw(&Text::new(
        sub,
        (14, 36),
        ("sans-serif", 13).into_font().color(&RGBColor(60, 60, 60)),
    ))
    .map_err(err)?;
    let cost = match report.spanning_extra_ns {
        Some(x) => format!("read cost: spanning reads x {x} ns"),
        None => "read cost: spanning reads".to_string(),
    };
    let panels = body.split_evenly((2, 1));
    let end = |p: &PointReport| p.pages;
    let peak = |p: &PointReport| p.pages_peak;
    panel(&panels[0], report, "pages at the end", &cost, &end).map_err(err)?;
    panel(&panels[1], report, "pages at the peak", &cost, &peak).map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

fn panel(
    area: &Area<'_>,
    report: &OptimizeReport,
    title: &str,
    x_desc: &str,
    pages: &dyn Fn(&PointReport) -> u64,
) -> DrawResult {
    let all: Vec<&PointReport> = report.points.iter().chain(&report.references).collect();
    let xy = |p: &PointReport| (p.read_cost, pages(p) as f64);
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for p in &all {
        let (x, y) = xy(p);
        (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
    }
    if all.is_empty() {
        (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
    }
    let (xp, yp) = (((x1 - x0) * 0.08).max(1.0), ((y1 - y0) * 0.1).max(1.0));
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 15))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d((x0 - xp).max(0.0)..x1 + xp, (y0 - yp).max(0.0)..y1 + yp)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc("pages")
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(RGBColor(232, 232, 232))
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .draw()?;
    let line: Vec<(f64, f64)> = report.points.iter().map(xy).collect();
    chart
        .draw_series(LineSeries::new(line, ShapeStyle::from(FRONTIER).stroke_width(2)))?
        .label("frontier")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], FRONTIER.stroke_width(2)));
    chart.draw_series(report.points.iter().map(|p| {
        let style = if p.dominates_references {
            ShapeStyle::from(FRONTIER).filled()
        } else {
            ShapeStyle::from(FRONTIER).stroke_width(1)
        };
        Circle::new(xy(p), 4, style)
    }))?;
    for p in &report.points {
        let font = ("sans-serif", 11).into_font().color(&RGBColor(60, 60, 60));
        chart.draw_series(std::iter::once(
            EmptyElement::at(xy(p)) + Text::new(p.label.clone(), (5, -14), font),
        ))?;
    }
    for (r, &c) in report.references.iter().zip(REFERENCES.iter().cycle()) {
        let font = ("sans-serif", 13).into_font().color(&c);
        let at = xy(r);
        chart
            .draw_series(std::iter::once(
                EmptyElement::at(at)
                    + TriangleMarker::new((0, 0), 7, ShapeStyle::from(c).filled())
                    + Text::new(r.label.clone(), (8, 4), font),
            ))?
            .label(r.label.clone())
            .legend(move |(x, y)| TriangleMarker::new((x + 8, y), 6, ShapeStyle::from(c).filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(200, 200, 200))
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    Ok(())
}
