//! What `zsmalloc optimize` reports (JSON field names as docs/LAB.md lists them) and its table.

use serde::Serialize;

use crate::error::{LabError, LabResult};
use crate::report::grid::align;
use crate::result::{delta_str, delta_tenths_u64, WorkloadDesc};

/// How reads are priced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Objective {
    /// Read cost = spanning reads.
    Spanning,
    /// Read cost = spanning reads x the extra nanoseconds a spanning read costs over an
    /// in-place one (as `zsmalloc cost` measures it).
    Nanoseconds { spanning_extra_ns: f64 },
}

impl Objective {
    pub fn name(self) -> &'static str {
        match self {
            Objective::Spanning => "spanning",
            Objective::Nanoseconds { .. } => "ns",
        }
    }

    /// The read cost of `spanning` spanning reads.
    pub fn read_cost(self, spanning: u64) -> f64 {
        match self {
            Objective::Spanning => spanning as f64,
            Objective::Nanoseconds { spanning_extra_ns } => spanning as f64 * spanning_extra_ns,
        }
    }

    /// `--objective NAME` with `--spanning-extra-ns X` (needed by `ns` only).
    pub fn parse(name: &str, extra_ns: Option<f64>) -> LabResult<Self> {
        match (name, extra_ns) {
            ("spanning", None) => Ok(Objective::Spanning),
            ("spanning", Some(_)) => Err(LabError::usage(
                "--spanning-extra-ns prices reads for --objective ns; spanning counts them",
            )),
            ("ns", Some(x)) if x.is_finite() && x >= 0.0 => {
                Ok(Objective::Nanoseconds { spanning_extra_ns: x })
            }
            ("ns", Some(x)) => Err(LabError::usage(format!(
                "invalid --spanning-extra-ns {x}: a number of nanoseconds, 0 or more"
            ))),
            ("ns", None) => Err(LabError::usage(
                "--objective ns needs --spanning-extra-ns X: the extra nanoseconds of a spanning \
                 read (the `spanning` minus `in place` read section of `zsmalloc cost`)",
            )),
            (other, _) => Err(LabError::usage(format!(
                "invalid --objective '{other}' (accepted: spanning, ns)"
            ))),
        }
    }
}

/// One class of a reported table.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct ClassEntry {
    pub size: u32,
    pub chain: u8,
}

/// A class whose chain differs from the layout's base table.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct ChainChange {
    pub size: u32,
    pub chain: u8,
    pub base_chain: u8,
}

/// One table on the axes: a frontier point or a reference.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PointReport {
    /// `classic`, `heuristic`, `table` (a given one) or the point's number.
    pub label: String,
    /// The frontier point's number (1 = fewest pages), for `--point`; none for references.
    pub point: Option<usize>,
    pub pages: u64,
    pub pages_peak: u64,
    pub reads_spanning: u64,
    pub read_cost: f64,
    /// Fewer or as many pages and spanning reads as every reference, and fewer of one than each.
    pub dominates_references: bool,
    pub classes: Vec<ClassEntry>,
    /// Classes whose chain differs from the layout's base table.
    pub changed: Vec<ChainChange>,
    /// The table in the class-table file format (what `--export-table` writes).
    pub table: String,
}

/// The fixed class sizes the chains were chosen for.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct LayoutDesc {
    pub source: String,
    pub classes: usize,
    /// Classes whose chain the search chooses.
    pub searched: usize,
    pub huge_class_size: u32,
    /// With `--boundaries`: the merges and splits applied to the starting layout, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub boundary_moves: Vec<String>,
}

/// Where a table was exported.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ExportDesc {
    pub point: usize,
    pub file: String,
}

/// The tables of the search run on a second workload (`--test`): a table tuned on one
/// workload is only worth shipping if it holds on another.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TestReport {
    pub workload: WorkloadDesc,
    pub reads: u64,
    /// The references and the reported points, in the report's order, measured on this
    /// workload (`dominates_references` against the references measured here).
    pub rows: Vec<TestRow>,
}

/// One table measured on the test workload.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TestRow {
    pub label: String,
    pub point: Option<usize>,
    pub pages: u64,
    pub pages_peak: u64,
    pub reads_spanning: u64,
    pub read_cost: f64,
    pub dominates_references: bool,
}

/// The report of one `zsmalloc optimize`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OptimizeReport {
    pub workload: WorkloadDesc,
    pub page_size: u32,
    pub objective: String,
    pub spanning_extra_ns: Option<f64>,
    pub layout: LayoutDesc,
    /// Read sections of the workload (the same for every table).
    pub reads: u64,
    /// Points of the whole frontier; `points` reports a selection of them.
    pub frontier_points: usize,
    /// Runs of the workload the search made (sweep, references, reported points).
    pub runs: usize,
    pub references: Vec<PointReport>,
    pub points: Vec<PointReport>,
    /// The point `--export-table` would write by default: the cheapest with no more pages than
    /// the first reference (mainline classic).
    pub default_point: Option<usize>,
    pub export: Option<ExportDesc>,
    /// The same tables on the `--test` workload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test: Option<TestReport>,
}

impl OptimizeReport {
    /// The reported frontier point numbered `point`.
    pub fn point(&self, point: usize) -> Option<&PointReport> {
        self.points.iter().find(|p| p.point == Some(point))
    }

    pub fn to_json(&self) -> LabResult<String> {
        crate::report::json(self)
    }

    /// The human-readable table: references first, then the points; `*` marks points that
    /// dominate every reference, `>` the default export.
    pub fn to_table(&self) -> String {
        let mut out = format!(
            "optimize: {} | page {} | {} classes, {} searched, huge_class_size {} ({})\n",
            self.workload.summary,
            self.page_size,
            self.layout.classes,
            self.layout.searched,
            self.layout.huge_class_size,
            self.layout.source,
        );
        if !self.layout.boundary_moves.is_empty() {
            out += &format!("boundary moves: {}\n", self.layout.boundary_moves.join(", "));
        }
        let cost_head = match self.spanning_extra_ns {
            Some(x) => format!("read cost (ns, {x} per spanning read)"),
            None => "read cost (spanning reads)".to_string(),
        };
        out += &format!(
            "frontier: {} points, {} shown; {} runs; {} reads; {cost_head}\n\n",
            self.frontier_points,
            self.points.len(),
            self.runs,
            self.reads
        );
        let rows = self
            .references
            .iter()
            .chain(&self.points)
            .map(|p| Row {
                label: &p.label,
                point: p.point,
                pages: p.pages,
                pages_peak: p.pages_peak,
                spanning: p.reads_spanning,
                cost: p.read_cost,
                dominates: p.dominates_references,
                changed: Some(p.changed.len()),
            })
            .collect::<Vec<_>>();
        out += &self.rows_table(&rows, self.reads);
        out += "\n* dominates every reference (pages and spanning reads); > the default export \
                (cheapest with no more pages than classic)\n";
        if let Some(t) = &self.test {
            out +=
                &format!("\non the test workload: {} ({} reads)\n\n", t.workload.summary, t.reads);
            let rows = t
                .rows
                .iter()
                .map(|r| Row {
                    label: &r.label,
                    point: r.point,
                    pages: r.pages,
                    pages_peak: r.pages_peak,
                    spanning: r.reads_spanning,
                    cost: r.read_cost,
                    dominates: r.dominates_references,
                    changed: None,
                })
                .collect::<Vec<_>>();
            out += &self.rows_table(&rows, t.reads);
        }
        if let Some(e) = &self.export {
            out += &format!("exported point {} to {}\n", e.point, e.file);
        }
        out
    }

    /// References first (the first is the base of the `vs classic` columns), then points.
    fn rows_table(&self, rows: &[Row<'_>], reads: u64) -> String {
        let base = rows.first().filter(|r| r.point.is_none()).map(|r| (r.pages, r.spanning));
        let header = [
            "",
            "point",
            "pages",
            "vs classic",
            "pages_peak",
            "reads_spanning",
            "spanning %",
            "read_cost",
            "vs classic",
            "changed",
        ];
        let mut table: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
        for p in rows {
            let default = p.point.is_some() && p.point == self.default_point;
            let mark = match (p.dominates, default) {
                (true, true) => "*>",
                (true, false) => "*",
                (false, true) => ">",
                (false, false) => "",
            };
            let vs = |a: u64, b: Option<u64>| delta_str(b.and_then(|b| delta_tenths_u64(b, a)));
            let share = if reads == 0 {
                "n/a".to_string()
            } else {
                format!("{:.2}", 100.0 * p.spanning as f64 / reads as f64)
            };
            table.push(vec![
                mark.to_string(),
                p.label.to_string(),
                p.pages.to_string(),
                vs(p.pages, base.map(|b| b.0)),
                p.pages_peak.to_string(),
                p.spanning.to_string(),
                share,
                format_cost(p.cost),
                vs(p.spanning, base.map(|b| b.1)),
                p.changed.map_or_else(String::new, |c| c.to_string()),
            ]);
        }
        align(&table, 2)
    }
}

/// One line of a points table.
struct Row<'a> {
    label: &'a str,
    point: Option<usize>,
    pages: u64,
    pages_peak: u64,
    spanning: u64,
    cost: f64,
    dominates: bool,
    changed: Option<usize>,
}

fn format_cost(cost: f64) -> String {
    if cost.fract() == 0.0 && cost.abs() < 1e15 {
        format!("{cost:.0}")
    } else {
        format!("{cost:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objectives_price_spanning_reads() {
        assert_eq!(Objective::parse("spanning", None).unwrap().read_cost(7), 7.0);
        let ns = Objective::parse("ns", Some(12.5)).unwrap();
        assert_eq!(ns.read_cost(4), 50.0);
        for (name, x) in [("ns", None), ("spanning", Some(1.0)), ("ns", Some(-1.0)), ("time", None)]
        {
            assert_eq!(Objective::parse(name, x).unwrap_err().exit_code(), 2, "{name} {x:?}");
        }
    }
}
