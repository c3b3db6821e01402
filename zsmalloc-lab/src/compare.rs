//! One workload on several configurations, with deltas against the first. Untimed runs go in
//! parallel; timed runs go one at a time, repeats interleaved ([`crate::runner::run_all`]).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::config::ConfigSpec;
use crate::error::{LabError, LabResult};
use crate::progress::ProgressSink;
use crate::result::{RunResult, WorkloadDesc};
use crate::runner::{run_all, run_one, RunOptions};
use crate::workload::Workload;

/// The runs of a comparison, in configuration order (the first is the reference).
#[derive(Debug, Clone)]
pub struct Comparison {
    pub workload: WorkloadDesc,
    pub runs: Vec<RunResult>,
    /// Keys swept (`--sweep`), in order; empty for explicit configurations.
    pub sweep_keys: Vec<String>,
}

/// Worker threads to use: `requested`, or every core; never more than there are runs.
pub fn jobs(requested: Option<usize>, runs: usize) -> usize {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    requested.unwrap_or(cores).clamp(1, runs.max(1))
}

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
    let runs = run_all(workload, specs, opts, jobs, sink)?;
    Ok(Comparison { workload: workload.desc(), runs, sweep_keys: Vec::new() })
}

/// Runs every spec once, `jobs` at a time (for counts: nothing is timed).
pub fn run_parallel(
    workload: &Workload,
    specs: &[ConfigSpec],
    opts: &RunOptions,
    jobs: usize,
    sink: &ProgressSink,
) -> LabResult<Vec<RunResult>> {
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let slots: Mutex<Vec<Option<LabResult<RunResult>>>> = Mutex::new(vec![None; specs.len()]);
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| loop {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(spec) = specs.get(i) else { break };
                let r = run_one(workload, spec, opts, sink);
                if r.is_err() {
                    stop.store(true, Ordering::Relaxed);
                }
                slots.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    let slots = slots.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut runs = Vec::with_capacity(specs.len());
    for r in slots {
        match r {
            Some(Ok(run)) => runs.push(run),
            Some(Err(e)) => return Err(e),
            None => {}
        }
    }
    if runs.len() != specs.len() {
        return Err(LabError::runtime("a configuration did not run"));
    }
    Ok(runs)
}
