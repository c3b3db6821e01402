//! JSON: a run is one object with the field names of docs/LAB.md ("Result fields"); a comparison holds the workload, the
//! reference label and the runs, each with `deltas_pct` against the first.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::compare::Comparison;
use crate::error::LabResult;
use crate::report::json;
use crate::result::{delta_value, RunResult, WorkloadDesc};

pub fn run(r: &RunResult) -> LabResult<String> {
    json(r)
}

/// A run with its deltas against the reference, fields in declaration order.
#[derive(Serialize)]
struct RunWithDeltas<'a> {
    #[serde(flatten)]
    run: &'a RunResult,
    /// Percent against the first configuration, rounded to one decimal; null when undefined.
    deltas_pct: BTreeMap<&'static str, Option<f64>>,
    /// The CPU time's change against the first configuration, with its spread.
    #[serde(skip_serializing_if = "Option::is_none")]
    cpu_time_delta: Option<crate::timing::TimeDelta>,
}

#[derive(Serialize)]
struct ComparisonJson<'a> {
    workload: &'a WorkloadDesc,
    base: Option<&'a str>,
    sweep: &'a [String],
    runs: Vec<RunWithDeltas<'a>>,
}

pub fn comparison(c: &Comparison) -> LabResult<String> {
    let base = c.runs.first();
    let runs = c
        .runs
        .iter()
        .map(|run| RunWithDeltas {
            run,
            deltas_pct: base
                .map(|b| run.deltas(b).into_iter().map(|(k, t)| (k, delta_value(t))).collect())
                .unwrap_or_default(),
            cpu_time_delta: base.and_then(|b| run.cpu_delta(b)),
        })
        .collect();
    let doc = ComparisonJson {
        workload: &c.workload,
        base: base.map(|b| b.label.as_str()),
        sweep: &c.sweep_keys,
        runs,
    };
    json(&doc)
}
