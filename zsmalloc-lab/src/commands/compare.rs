//! `zsmalloc compare`: one workload on several configurations, with deltas against the first.

use clap::Args;

use super::output::{emit, OutputFlags};
use crate::compare::{self, Comparison};
use crate::config::assemble::{self, assemble, Defaults};
use crate::config::flags::{ConfigFlags, ConfigList};
use crate::config::ConfigSpec;
use crate::error::{LabError, LabResult};
use crate::flag_values;
use crate::progress::ProgressSink;
use crate::report::Render;
use crate::workload::Workload;
use crate::{plot, report, timeline};

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Configurations run at once when nothing is timed (--no-time); timed runs go one at a
    /// time. An untimed trace is decoded once: its configurations' pools share N threads
    /// [default: every core]
    #[arg(long, global = true, value_name = "N", value_parser = flag_values::whole::<usize>(1, flag_values::MAX_JOBS))]
    pub jobs: Option<usize>,
    #[command(flatten)]
    pub pool: ConfigFlags,
    #[command(flatten)]
    pub list: ConfigList,
    #[command(flatten)]
    pub out: OutputFlags,
    #[command(subcommand)]
    pub workload: Option<Workload>,
}

/// The RFC's demonstration, when no configuration is named: its BASE (classic) and PATCHED
/// (heuristic) at chain 10 (unless `--chain-size` is given).
fn rfc_pair(base: &ConfigSpec, chain_given: bool) -> LabResult<Vec<ConfigSpec>> {
    if !base.is_zsmalloc() {
        return Err(LabError::usage(format!(
            "compare needs several configurations: e.g. --backend zsmalloc,{}",
            base.config.backend.name()
        )));
    }
    let mut base = base.clone();
    if !chain_given {
        base.config.chain_size = 10;
    }
    ["classic", "heuristic"].iter().map(|p| ConfigSpec::with_overrides(&base, p)).collect()
}

pub fn run(a: CompareArgs) -> LabResult<()> {
    let format = a.out.format()?;
    let w = a.out.workload(a.workload);
    let chain_given = a.pool.chain_size.is_some();
    let defaults = Defaults {
        alone: &|base| rfc_pair(base, chain_given),
        in_list: &|base| Ok(vec![assemble::zsmalloc(base)]),
    };
    let assembly = assemble(&a.pool, &a.list, &defaults)?;
    let opts = a.out.run_options(&w, Default::default())?;
    if a.jobs == Some(0) {
        return Err(LabError::usage("--jobs must be at least 1"));
    }
    let jobs = compare::jobs(a.jobs, assembly.specs.len());
    let sink = ProgressSink::auto();
    let mut c: Comparison = compare::compare(&w, &assembly.specs, &opts, jobs, &sink)?;
    sink.clear();
    c.sweep_keys = assembly.sweep_keys;
    if let Some(path) = &a.out.timeline {
        let runs: Vec<(&str, &[timeline::Sample])> =
            c.runs.iter().map(|r| (r.label.as_str(), r.timeline.as_slice())).collect();
        report::csv::write_timeline(path, &runs)?;
    }
    if let Some(path) = &a.out.plot {
        if c.sweep_keys.is_empty() {
            plot::runs(path, &c.runs.iter().collect::<Vec<_>>())?;
        } else {
            plot::sweep(path, &c)?;
        }
    }
    emit(&c.render(format)?)
}
