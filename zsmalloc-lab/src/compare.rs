//! One workload on several configurations, with deltas against the first. Untimed runs go in
//! parallel, an untimed trace decoded once for all of them ([`crate::replay_many`]); timed runs
//! go one at a time, repeats interleaved ([`crate::runner::run_all`]).

use crate::config::ConfigSpec;
use crate::error::{LabError, LabResult};
use crate::progress::ProgressSink;
use crate::result::{RunResult, WorkloadDesc};
use crate::runner::{run_all, RunOptions};
use crate::workload::Workload;

/// The runs of a comparison, in configuration order (the first is the reference).
#[derive(Debug, Clone)]
pub struct Comparison {
    pub workload: WorkloadDesc,
    pub runs: Vec<RunResult>,
    /// Keys swept (`--sweep`), in order; empty for explicit configurations.
    pub sweep_keys: Vec<String>,
}

pub use crate::runner::jobs;

/// Runs `workload` on every spec (untimed: `jobs` threads; timed: one at a time, repeated).
pub fn compare(
    workload: &Workload,
    specs: &[ConfigSpec],
    opts: &RunOptions,
    jobs: usize,
    sink: &ProgressSink,
) -> LabResult<Comparison> {
    if specs.is_empty() {
        return Err(LabError::usage("compare needs at least one configuration"));
    }
    for s in specs {
        let cfg = s.pool_config()?;
        workload.check(cfg.page_size as usize)?;
    }
    let runs = match workload {
        Workload::Trace(_) if !opts.timing => {
            crate::replay_many::replay_many_jobs(workload, specs, opts, jobs, sink)?
        }
        _ => run_all(workload, specs, opts, jobs, sink)?,
    };
    Ok(Comparison { workload: workload.desc(), runs, sweep_keys: Vec::new() })
}
