//! `--test WORKLOAD`: the references and the reported points' tables run on a second workload,
//! beside each other there. Nothing is predicted: every table is run.

use super::evaluate::{evaluate_all, with_table, Evaluation};
use super::report::{OptimizeReport, TestReport, TestRow};
use super::search::SearchOptions;
use crate::config::ConfigSpec;
use crate::error::LabResult;
use crate::progress::ProgressSink;
use crate::workload::Workload;
use zsmalloc_core::class_spec::ClassTableSpec;

/// Whether `e` has no more pages and spanning reads than every reference, and fewer of one.
pub fn dominates(e: &Evaluation, references: &[Evaluation]) -> bool {
    !references.is_empty()
        && references.iter().all(|r| {
            e.pages <= r.pages
                && e.reads_spanning <= r.reads_spanning
                && (e.pages < r.pages || e.reads_spanning < r.reads_spanning)
        })
}

/// Runs the report's references and points on `test`.
pub fn test_on(
    test: &Workload,
    report: &OptimizeReport,
    opts: &SearchOptions,
    sink: &ProgressSink,
) -> LabResult<TestReport> {
    test.check(opts.base.page_size as usize)?;
    let refs = opts.references();
    let mut specs = refs.clone();
    for p in &report.points {
        let table = ClassTableSpec::parse(&p.table)?;
        specs.push(ConfigSpec { label: p.label.clone(), config: with_table(&opts.base, table) });
    }
    let mut runs = evaluate_all(test, &specs, opts.jobs, sink)?;
    let points = runs.split_off(refs.len());
    let row = |e: &Evaluation, point: Option<usize>, against: &[Evaluation]| TestRow {
        label: e.label.clone(),
        point,
        pages: e.pages,
        pages_peak: e.pages_peak,
        reads_spanning: e.reads_spanning,
        read_cost: opts.objective.read_cost(e.reads_spanning),
        dominates_references: dominates(e, against),
    };
    let mut rows: Vec<TestRow> = runs.iter().map(|r| row(r, None, &[])).collect();
    for (e, p) in points.iter().zip(&report.points) {
        rows.push(row(e, p.point, &runs));
    }
    Ok(TestReport { workload: test.desc(), reads: runs.first().map_or(0, |r| r.reads), rows })
}
