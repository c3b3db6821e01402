//! `zsmalloc optimize`: the search as a table (the references, then the reported points, and
//! with `--test` the same tables on the test workload), as JSON (field names as docs/LAB.md
//! lists them) or as CSV (one row per table on the axes, the searched workload's rows and the
//! test workload's told apart by a `table` column).
//!
//! Every format is made from the same [`Row`]s: the JSON serialises them, the CSV reads its
//! columns out of that JSON by key, the table prints their fields.

use serde::Serialize;
use serde_json::Value;

use super::csv::{self, to_value, Column, Numbers};
use super::grid::align;
use super::Render;
use crate::error::LabResult;
use crate::optimize::references::PointKind;
use crate::optimize::report::{
    ChainChange, ClassEntry, ExportDesc, LayoutDesc, OptimizeReport, PointReport, TestReport,
    TestRow,
};
use crate::result::{delta_str, delta_tenths_u64, WorkloadDesc};

/// One table on the axes, as every format prints it.
#[derive(Debug, Clone, Serialize)]
struct Row {
    label: String,
    point: Option<usize>,
    pages: u64,
    pages_peak: u64,
    reads_spanning: u64,
    read_cost: f64,
    dominates_references: bool,
    /// A row of the searched workload: its table (rows of the test workload have none).
    #[serde(flatten)]
    table: Option<TableOf>,
}

/// The table of a row of the searched workload.
#[derive(Debug, Clone, Serialize)]
struct TableOf {
    classes: Vec<ClassEntry>,
    /// `null` when the table's class sizes are not the layout's (not comparable).
    changed: Option<Vec<ChainChange>>,
    /// The file text `--export-table` writes (in the JSON only: made when asked for).
    #[serde(skip_serializing_if = "Option::is_none")]
    table: Option<String>,
}

impl Row {
    fn of_point(p: &PointReport, file_text: Option<String>) -> Row {
        let table = TableOf { classes: p.classes(), changed: p.changed.clone(), table: file_text };
        Row {
            table: Some(table),
            ..Row::figures(
                p.kind,
                p.pages,
                p.pages_peak,
                p.reads_spanning,
                p.read_cost,
                p.dominates_references,
            )
        }
    }

    fn of_test(t: &TestRow) -> Row {
        Row::figures(
            t.kind,
            t.pages,
            t.pages_peak,
            t.reads_spanning,
            t.read_cost,
            t.dominates_references,
        )
    }

    fn figures(
        kind: PointKind,
        pages: u64,
        pages_peak: u64,
        reads_spanning: u64,
        read_cost: f64,
        dominates_references: bool,
    ) -> Row {
        Row {
            label: kind.label(),
            point: kind.point(),
            pages,
            pages_peak,
            reads_spanning,
            read_cost,
            dominates_references,
            table: None,
        }
    }
}

/// The JSON of the whole report, in its documented field order.
#[derive(Serialize)]
struct ReportJson<'a> {
    workload: &'a WorkloadDesc,
    page_size: u32,
    objective: &'static str,
    spanning_extra_ns: Option<f64>,
    layout: &'a LayoutDesc,
    reads: u64,
    frontier_points: usize,
    runs: usize,
    references: Vec<Row>,
    points: Vec<Row>,
    default_point: Option<usize>,
    export: &'a Option<ExportDesc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    test: Option<TestJson<'a>>,
}

#[derive(Serialize)]
struct TestJson<'a> {
    workload: &'a WorkloadDesc,
    reads: u64,
    /// The references, then the reported points, as on the searched workload.
    rows: Vec<Row>,
}

/// A row of the searched workload with its table's file text (the JSON's).
fn row_with_text(r: &OptimizeReport, p: &PointReport) -> LabResult<Row> {
    Ok(Row::of_point(p, Some(r.file_text(p)?)))
}

fn test_rows(t: &TestReport) -> Vec<Row> {
    t.references.iter().map(|(_, r)| r).chain(&t.points).map(Row::of_test).collect()
}

/// The rows of the searched workload, the references then the points, without file text
/// (the table and the CSV print none).
fn plain_rows(r: &OptimizeReport) -> Vec<Row> {
    r.all_points().map(|p| Row::of_point(p, None)).collect()
}

impl Render for OptimizeReport {
    const COMMAND: &'static str = "optimize";

    fn table(&self) -> String {
        table(self)
    }

    fn json(&self) -> LabResult<String> {
        let references = self
            .references
            .iter()
            .map(|(_, p)| row_with_text(self, p))
            .collect::<LabResult<_>>()?;
        let points =
            self.points.iter().map(|p| row_with_text(self, p)).collect::<LabResult<_>>()?;
        let report = ReportJson {
            workload: &self.workload,
            page_size: self.page_size,
            objective: self.objective.name(),
            spanning_extra_ns: self.objective.spanning_extra_ns(),
            layout: &self.layout,
            reads: self.reads,
            frontier_points: self.frontier_points,
            runs: self.runs,
            references,
            points,
            default_point: self.default_point,
            export: &self.export,
            test: self.test.as_ref().map(|t| TestJson {
                workload: &t.workload,
                reads: t.reads,
                rows: test_rows(t),
            }),
        };
        super::json(&report)
    }

    fn csv(&self) -> String {
        let searched: Vec<Value> = plain_rows(self).iter().map(to_value).collect();
        let mut out = csv::table(&columns("workload"), &one(&searched), Numbers::AsJson);
        if let Some(t) = &self.test {
            let tested: Vec<Value> = test_rows(t).iter().map(to_value).collect();
            out += "\n";
            out += &csv::table(&columns("test"), &one(&tested), Numbers::AsJson);
        }
        out
    }
}

/// Rows that are their own only scope.
fn one(rows: &[Value]) -> Vec<Vec<&Value>> {
    rows.iter().map(|r| vec![r]).collect()
}

/// The CSV's columns: which workload the row was measured on, then the row's figures.
fn columns(table: &'static str) -> Vec<Column> {
    let mut c = vec![Column::constant("table", table)];
    for k in [
        "label",
        "point",
        "pages",
        "pages_peak",
        "reads_spanning",
        "read_cost",
        "dominates_references",
    ] {
        c.push(Column::at(&[k]));
    }
    c
}

/// The human-readable table: references first, then the points; `*` marks points that
/// dominate every reference, `>` the default export.
fn table(r: &OptimizeReport) -> String {
    let band = match r.layout.multi_page_size {
        0 => String::new(),
        m => format!(" | multi-page {m}, huge_class_size_multi {}", r.layout.huge_class_size_multi),
    };
    let mut out = format!(
        "optimize: {} | page {}{band} | {} classes, {} searched, huge_class_size {} ({})\n",
        r.workload.summary,
        r.page_size,
        r.layout.classes,
        r.layout.searched,
        r.layout.huge_class_size,
        r.layout.source,
    );
    if !r.layout.boundary_moves.is_empty() {
        out += &format!("boundary moves: {}\n", r.layout.boundary_moves.join(", "));
    }
    let cost_head = match r.objective.spanning_extra_ns() {
        Some(x) => format!("read cost (ns, {x} per spanning read)"),
        None => "read cost (spanning reads)".to_string(),
    };
    out += &format!(
        "frontier: {} points, {} shown; {} runs; {} reads; {cost_head}\n\n",
        r.frontier_points,
        r.points.len(),
        r.runs,
        r.reads
    );
    out += &rows_table(&plain_rows(r), r.reads, r.default_point);
    out += "\n* dominates every reference (pages and spanning reads); > the default export \
            (cheapest with no more pages than classic)\n";
    if let Some(t) = &r.test {
        out += &format!("\non the test workload: {} ({} reads)\n\n", t.workload.summary, t.reads);
        out += &rows_table(&test_rows(t), t.reads, r.default_point);
    }
    if let Some(e) = &r.export {
        out += &format!("exported point {} to {}\n", e.point, e.file);
    }
    out
}

/// The rows as a table; the first row is classic, the base of the `vs classic` columns.
fn rows_table(rows: &[Row], reads: u64, default_point: Option<usize>) -> String {
    let base = rows.first().filter(|r| r.label == PointKind::Classic.label());
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
        let default = p.point.is_some() && p.point == default_point;
        let mark = match (p.dominates_references, default) {
            (true, true) => "*>",
            (true, false) => "*",
            (false, true) => ">",
            (false, false) => "",
        };
        let vs = |a: u64, b: Option<u64>| delta_str(b.and_then(|b| delta_tenths_u64(b, a)));
        let share = if reads == 0 {
            "n/a".to_string()
        } else {
            format!("{:.2}", 100.0 * p.reads_spanning as f64 / reads as f64)
        };
        let changed = match &p.table {
            None => String::new(),
            Some(TableOf { changed: None, .. }) => "n/a".to_string(),
            Some(TableOf { changed: Some(c), .. }) => c.len().to_string(),
        };
        table.push(vec![
            mark.to_string(),
            p.label.clone(),
            p.pages.to_string(),
            vs(p.pages, base.map(|b| b.pages)),
            p.pages_peak.to_string(),
            p.reads_spanning.to_string(),
            share,
            format_cost(p.read_cost),
            vs(p.reads_spanning, base.map(|b| b.reads_spanning)),
            changed,
        ]);
    }
    align(&table, 2)
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

    fn row(label: &str, changed: Option<Option<usize>>) -> Row {
        let mut r = Row::figures(PointKind::Classic, 10, 12, 3, 3.0, false);
        r.label = label.into();
        r.table = changed.map(|c| TableOf {
            classes: Vec::new(),
            changed: c.map(|n| vec![ChainChange { size: 32, chain: 2, base_chain: 1 }; n]),
            table: None,
        });
        r
    }

    #[test]
    fn changed_is_not_applicable_where_the_sizes_differ() {
        let rows = [row("classic", Some(Some(0))), row("heuristic", Some(None)), row("x", None)];
        let text = rows_table(&rows, 100, None);
        let last_cells: Vec<&str> =
            text.lines().skip(1).map(|l| l.rsplit("  ").next().unwrap().trim()).collect();
        assert_eq!(last_cells, ["0", "n/a", "+0.0%"], "{text}");
        let json = to_value(&rows[1]);
        assert_eq!(json["changed"], Value::Null);
        assert!(to_value(&rows[2]).get("changed").is_none(), "test rows have no table");
    }

    #[test]
    fn every_csv_column_is_a_key_of_the_json() {
        let values: Vec<Value> = [row("classic", Some(Some(1)))].iter().map(to_value).collect();
        assert!(csv::unresolved(&columns("workload"), &one(&values)).is_empty());
    }
}
