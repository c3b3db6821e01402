//! `zsmalloc replay FILE`: a trace file replayed (the same as `zsmalloc run trace FILE`).

use std::path::PathBuf;

use clap::Args;

use super::output::OutputFlags;
use super::output::Record;
use super::run::run_workload;
use crate::config::flags::ConfigFlags;
use crate::error::LabResult;
use crate::trace_format::TraceFormat;
use crate::workload::{trace::Trace, Workload};

#[derive(Args, Debug)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub trace: Trace,
    #[command(flatten)]
    pub pool: ConfigFlags,
    #[command(flatten)]
    pub out: OutputFlags,
    /// Record the replayed operations again
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub record: Option<PathBuf>,
    /// The form of the --record trace: text (the default) or binary (docs/TRACE_FORMAT.md)
    #[arg(long, value_enum, value_name = "FORMAT", help_heading = "Output")]
    pub trace_format: Option<TraceFormat>,
}

pub fn run(a: ReplayArgs) -> LabResult<()> {
    let w = a.out.workload(Some(Workload::Trace(a.trace)));
    run_workload("replay", &a.pool, &a.out, w, Record::new(a.record, a.trace_format)?)
}
