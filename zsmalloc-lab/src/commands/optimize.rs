//! `zsmalloc optimize`: the Pareto frontier of class tables for a workload ([`crate::optimize`]).

use clap::{Args, Parser};

use super::output::emit;
use crate::error::{LabError, LabResult};
pub use crate::optimize::OptimizeArgs;
use crate::progress::ProgressSink;
use crate::workload::Workload;

#[derive(Args, Debug)]
pub struct OptimizeCmd {
    #[command(flatten)]
    pub args: OptimizeArgs,
    #[command(subcommand)]
    pub workload: Option<Workload>,
}

pub fn run(a: OptimizeCmd) -> LabResult<()> {
    // Class tables, what optimize searches, hold one band of single pages (docs/DESIGN.md,
    // Objects of several pages).
    if crate::config::assemble::assemble_one(&a.args.pool, "optimize")?.config.multi_page_size != 0
    {
        return Err(LabError::usage(
            "optimize searches class tables, which have no multi-page band: leave --multi-page \
             at 0",
        ));
    }
    let seed = a.args.seed.unwrap_or(1);
    let w = a.workload.unwrap_or_default().with_seed(seed);
    let test = match &a.args.test {
        Some(text) => Some(test_workload(text, seed)?),
        None => None,
    };
    let sink = ProgressSink::auto();
    let text = crate::optimize::run(&a.args, &w, test.as_ref(), &sink)?;
    sink.clear();
    emit(&text)
}

/// `--test "WORKLOAD ARGS"`: a workload as `run` takes it, from one string.
fn test_workload(text: &str, seed: u64) -> LabResult<Workload> {
    #[derive(Parser)]
    #[command(name = "--test", no_binary_name = true)]
    struct TestWorkload {
        #[command(subcommand)]
        workload: Workload,
    }
    let parsed = TestWorkload::try_parse_from(text.split_whitespace()).map_err(|e| {
        let first = e.to_string().lines().next().unwrap_or("invalid workload").to_string();
        LabError::usage(format!("--test '{text}': {}", first.trim_start_matches("error: ")))
    })?;
    Ok(parsed.workload.with_seed(seed))
}
