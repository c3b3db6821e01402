//! `--test WORKLOAD`: the references and the reported points' tables run on a second workload,
//! beside each other there. Nothing is predicted: every table is run.

use super::evaluate::{evaluate_all, with_table, Evaluation};
use super::references::{PointKind, References};
use super::report::{OptimizeReport, TestReport, TestRow};
use super::search::SearchOptions;
use crate::config::ConfigSpec;
use crate::error::{LabError, LabResult};
use crate::progress::ProgressSink;
use crate::workload::Workload;

/// Runs the report's references and points on `test`.
pub fn test_on(
    test: &Workload,
    report: &OptimizeReport,
    opts: &SearchOptions,
    sink: &ProgressSink,
) -> LabResult<TestReport> {
    test.check(opts.base.page_size as usize)?;
    let refs = opts.references();
    let mut specs: Vec<ConfigSpec> = refs.iter().map(|(_, r)| r.clone()).collect();
    for p in &report.points {
        let config = with_table(&opts.base, p.table.clone());
        specs.push(ConfigSpec { label: p.kind.label(), config });
    }
    let mut runs = evaluate_all(test, &specs, opts.jobs, sink, "optimize --test")?;
    let points = runs.split_off(refs.len());
    let references =
        refs.matched(runs).ok_or_else(|| LabError::runtime("the references did not all run"))?;
    let row = |e: &Evaluation, kind: PointKind, against: Option<&References<Evaluation>>| TestRow {
        kind,
        pages: e.pages,
        pages_peak: e.pages_peak,
        reads_spanning: e.reads_spanning,
        read_cost: opts.objective.read_cost(e.reads_spanning),
        dominates_references: against.is_some_and(|r| r.dominated_by(e)),
    };
    Ok(TestReport {
        workload: test.desc(),
        reads: references.classic.reads,
        references: references.map(|kind, e| row(e, kind, None)),
        points: points
            .iter()
            .zip(&report.points)
            .map(|(e, p)| row(e, p.kind, Some(&references)))
            .collect(),
    })
}
