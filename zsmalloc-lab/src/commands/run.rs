//! `zsmalloc run`: one workload on one configuration.

use std::path::PathBuf;

use clap::Args;

use super::output::{emit, OutputFlags, Record};
use crate::config::assemble::assemble_one;
use crate::config::flags::ConfigFlags;
use crate::error::{LabError, LabResult};
use crate::progress::ProgressSink;
use crate::report::Render;
use crate::trace_format::TraceFormat;
use crate::workload::Workload;
use crate::{plot, report, runner};

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub pool: ConfigFlags,
    #[command(flatten)]
    pub out: OutputFlags,
    /// Record the run's operations as a trace file (replay it with `zsmalloc replay`)
    #[arg(long, global = true, value_name = "FILE", help_heading = "Output")]
    pub record: Option<PathBuf>,
    /// The form of the --record trace: text (the default) or binary (docs/TRACE_FORMAT.md)
    #[arg(long, global = true, value_enum, value_name = "FORMAT", help_heading = "Output")]
    pub trace_format: Option<TraceFormat>,
    #[command(subcommand)]
    pub workload: Option<Workload>,
}

pub fn run(a: RunArgs) -> LabResult<()> {
    let w = a.out.workload(a.workload);
    run_workload("run", &a.pool, &a.out, w, Record::new(a.record, a.trace_format)?)
}

/// Runs `w` on the one configuration of `pool` and prints the report (`run`, `replay`).
pub fn run_workload(
    command: &str,
    pool: &ConfigFlags,
    out: &OutputFlags,
    w: Workload,
    record: Record,
) -> LabResult<()> {
    let format = out.format()?;
    let spec = assemble_one(pool, command)?;
    let opts = out.run_options(&w, record)?;
    let sink = ProgressSink::auto();
    let r = runner::run_all(&w, std::slice::from_ref(&spec), &opts, 1, &sink)?
        .pop()
        .ok_or_else(|| LabError::runtime("the run did not run"))?;
    sink.clear();
    if let Some(path) = &out.timeline {
        report::csv::write_timeline(path, &[(r.label.as_str(), &r.timeline)])?;
    }
    if let Some(path) = &out.plot {
        plot::runs(path, &[&r])?;
    }
    emit(&r.render(format)?)
}
