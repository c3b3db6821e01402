//! Every replay of the study goes through here: a corpus trace on several configurations, in
//! parallel, placement only (every figure the study compares is placement's, and a pool
//! without payload keeps no bytes). One place, so that a runner that decodes a trace once for
//! many pools can take over with one edit.

use std::path::Path;

use crate::compare;
use crate::config::ConfigSpec;
use crate::error::LabResult;
use crate::progress::ProgressSink;
use crate::result::RunResult;
use crate::runner::RunOptions;
use crate::workload::{trace::Trace, Workload};

/// `trace` replayed on each of `specs`, `jobs` at a time, with per-class rows when `per_class`.
pub fn replay(
    trace: &Path,
    specs: &[ConfigSpec],
    jobs: usize,
    per_class: bool,
) -> LabResult<Vec<RunResult>> {
    let w = workload(trace);
    let opts = RunOptions { per_class, timing: false, placement_only: true, ..Default::default() };
    let jobs = compare::jobs(Some(jobs), specs.len());
    Ok(compare::compare(&w, specs, &opts, jobs, &ProgressSink::silent())?.runs)
}

/// The replay workload of a trace file.
pub fn workload(trace: &Path) -> Workload {
    Workload::Trace(Trace::new(trace))
}
