//! `zsmalloc optimize --plot`: two Pareto panels on one read-cost axis, pages at the end and
//! pages at the peak (one panel when every point has the same pages at both, as when nothing
//! is freed); the reported frontier points in one colour, classic, the heuristic and a given
//! table in one each, labelled (frontier points by their number in the table, said in the
//! subtitle).

use std::path::Path;

use super::draw::draw;
use super::figure::{wrap, Figure};
use super::pareto::{pareto_panel, ParetoPoint};
use crate::error::LabResult;
use crate::optimize::references::PointKind;
use crate::optimize::report::{Objective, OptimizeReport, PointReport};

/// Characters of a subtitle line at most: a longer one (a workload's description can be) is
/// broken at spaces rather than cut off at the picture's edge.
const SUBTITLE_CHARS: usize = 140;

/// Draws the report's Pareto plot to `path`.
pub fn optimize(path: &Path, report: &OptimizeReport) -> LabResult<()> {
    draw(path, &figure(report))
}

fn group(kind: PointKind) -> String {
    match kind {
        PointKind::Frontier(_) => "frontier points".into(),
        PointKind::Given => "the given table".into(),
        reference => reference.label(),
    }
}

fn figure(report: &OptimizeReport) -> Figure {
    let x_desc = match report.objective {
        Objective::Nanoseconds { spanning_extra_ns } => {
            format!("read cost: spanning reads x {spanning_extra_ns} ns")
        }
        Objective::Spanning => "read cost: spanning reads".to_string(),
    };
    // The frontier first, so that it takes the palette's first colour and the references the
    // next ones, whichever of them are there.
    let shown: Vec<&PointReport> =
        report.points.iter().chain(report.references.iter().map(|(_, r)| r)).collect();
    let panel = |title: &str, pages: &dyn Fn(&PointReport) -> u64| {
        let points: Vec<ParetoPoint> = shown
            .iter()
            .map(|p| {
                let (x, y) = (p.read_cost, pages(p) as f64);
                ParetoPoint::exact(p.kind.label(), group(p.kind), x, y)
            })
            .collect();
        let mut panel = pareto_panel(title, &x_desc, "pages", &points);
        panel.int_x = report.objective == Objective::Spanning;
        panel
    };
    let mut subtitle = wrap(&format!("workload: {}", report.workload.summary), SUBTITLE_CHARS);
    subtitle.push(format!(
        "exact frontier over chains: {} points, {} shown; layout {} ({} classes, {} searched)",
        report.frontier_points,
        report.points.len(),
        report.layout.source,
        report.layout.classes,
        report.layout.searched
    ));
    if !report.points.is_empty() {
        subtitle.push(
            "frontier labels: each point's number, the table's point column (1: fewest pages); \
             --export-table FILE --point N writes point N's class table"
                .to_string(),
        );
    }
    // A workload that frees nothing peaks at its end: the two panels would be the same.
    let same = shown.iter().all(|p| p.pages == p.pages_peak);
    let panels = if same {
        vec![panel("pages (the same at the end and at the peak: nothing was freed)", &|p| p.pages)]
    } else {
        vec![panel("pages at the end", &|p| p.pages), panel("pages at the peak", &|p| p.pages_peak)]
    };
    Figure {
        title: format!(
            "optimize: class tables, pages against read cost (page {})",
            report.page_size
        ),
        subtitle,
        panels,
        columns: 1,
    }
}
