//! `zsmalloc corpus study DIR`: the corpus questions answered on every trace of a corpus
//! ([`crate::corpus::study`]), printed as a table per question (or JSON, or CSV).

use std::path::PathBuf;

use clap::Args;

use crate::commands::output::emit;
use crate::corpus::study::{study, StudyOptions, StudyReport};
use crate::error::LabResult;
use crate::flag_values;
use crate::report::{Format, Render};

pub const HELP: &str = "The corpus is a directory holding manifest.json (the schema `zsmalloc \
corpus record` writes) and the traces it names. Every replay is placement only; progress goes to \
stderr. Examples:
  zsmalloc corpus study corpus/
  zsmalloc corpus study corpus/ --format json > study.json
  zsmalloc corpus study corpus/ --free-ops 0 --format csv   # no timing at all";

/// The flags of `zsmalloc corpus study`.
#[derive(Args, Debug)]
pub struct StudyArgs {
    /// The corpus directory (holding manifest.json)
    pub dir: PathBuf,
    /// Output format: table, json or csv
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = Format::Table, hide_possible_values = true)]
    pub format: Format,
    /// Replays at a time [default: every core]
    #[arg(long, value_name = "N", value_parser = flag_values::whole::<usize>(1, flag_values::MAX_JOBS))]
    pub jobs: Option<usize>,
    /// Frees timed per measurement of the free-cost table (0: not measured)
    #[arg(long, value_name = "N", default_value_t = crate::corpus::study::free_cost::DEFAULT_OPS, value_parser = flag_values::whole::<usize>(0, 10_000_000))]
    pub free_ops: usize,
    /// No progress lines on stderr
    #[arg(long)]
    pub quiet: bool,
}

pub fn run(a: StudyArgs) -> LabResult<()> {
    let format = a.format.offered_by::<StudyReport>()?;
    let mut opts = StudyOptions { free_ops: a.free_ops, progress: !a.quiet, ..Default::default() };
    if let Some(j) = a.jobs {
        opts.jobs = j;
    }
    let report = study(&a.dir, &opts)?;
    emit(&report.render(format)?)
}
