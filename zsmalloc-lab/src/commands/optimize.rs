//! `zsmalloc optimize`: the Pareto frontier of class tables for a workload ([`crate::optimize`]):
//! its flags, read into the library's options, and the report printed and plotted.

use std::path::PathBuf;

use clap::{Args, Parser};

use super::output::emit;
use crate::config::assemble::assemble_one;
use crate::config::flags::ConfigFlags;
use crate::error::{LabError, LabResult};
use crate::flag_values;
use crate::optimize::report::Objective;
use crate::optimize::report::OptimizeReport;
use crate::optimize::search::SearchOptions;
use crate::optimize::OptimizeOptions;
use crate::progress::ProgressSink;
use crate::report::{check_writable, Format, Render};
use crate::workload::Workload;

/// The flags of `zsmalloc optimize` (the workload is its subcommand, as for `run`).
#[derive(Args, Debug, Clone, Default)]
pub struct OptimizeArgs {
    #[command(flatten)]
    pub pool: ConfigFlags,
    /// What reads cost: `spanning` (spanning reads) or `ns` (spanning reads x
    /// --spanning-extra-ns) [default: spanning]
    #[arg(long, global = true, value_name = "spanning|ns")]
    pub objective: Option<String>,
    /// Extra nanoseconds of a spanning read over an in-place one (`zsmalloc cost`'s figures),
    /// for --objective ns
    #[arg(long, global = true, value_name = "NS", value_parser = flag_values::real(0.0, f64::MAX))]
    pub spanning_extra_ns: Option<f64>,
    /// Also search the class sizes: merge adjacent classes or split one, greedily, while the
    /// cheapest read cost within classic's pages falls (a heuristic; 48 runs a round)
    #[arg(long, global = true)]
    pub boundaries: bool,
    /// Frontier points to report, each run again to check it; 0 = every point (the frontier
    /// can hold thousands: a bar on a terminal says the time left) [default: 12]
    #[arg(long, global = true, value_name = "N", value_parser = flag_values::any_whole::<usize>())]
    pub points: Option<usize>,
    /// Write a point's table in the class-table file format (load it with --class-table or
    /// ZSMALLOC_CLASS_TABLE) [default point: the cheapest with no more pages than classic]
    #[arg(long, global = true, value_name = "FILE")]
    pub export_table: Option<PathBuf>,
    /// The frontier point to export (its number in the report)
    #[arg(long, global = true, value_name = "K", requires = "export_table", value_parser = flag_values::whole::<usize>(1, u64::MAX))]
    pub point: Option<usize>,
    /// Output format: table, json or csv
    #[arg(long, global = true, value_name = "FORMAT", value_enum, default_value_t = Format::Table, hide_possible_values = true)]
    pub format: Format,
    /// Draw the Pareto plot (SVG): pages (end and peak) against read cost, the frontier with
    /// classic and the heuristic
    #[arg(long, global = true, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Runs at a time [default: every core]
    #[arg(long, global = true, value_name = "N", value_parser = flag_values::whole::<usize>(1, flag_values::MAX_JOBS))]
    pub jobs: Option<usize>,
    /// A second workload the chosen tables (and classic and the heuristic) are run on, as
    /// `run` takes it: `--test "pages /usr/share --compressor zstd"`
    #[arg(long, global = true, value_name = "WORKLOAD")]
    pub test: Option<String>,
    /// Seed of the workloads [default: 1]
    #[arg(long, global = true, value_name = "N", value_parser = flag_values::any_whole::<u64>())]
    pub seed: Option<u64>,
    /// Refuse to run when the memory of --jobs runs at once is planned above this, e.g. 6G
    /// [default: what the machine has available]
    #[arg(long, global = true, value_name = "BYTES", value_parser = crate::memory::parse_memory)]
    pub max_memory: Option<u64>,
}

#[derive(Args, Debug)]
pub struct OptimizeCmd {
    #[command(flatten)]
    pub args: OptimizeArgs,
    #[command(subcommand)]
    pub workload: Option<Workload>,
}

/// The search's options from the flags.
pub fn search_options(args: &OptimizeArgs) -> LabResult<SearchOptions> {
    if args.pool.chain_policy.is_some() {
        return Err(LabError::usage(
            "optimize places classic and the heuristic on its axes itself: --chain-policy \
             means nothing here",
        ));
    }
    if args.pool.backend.as_deref().is_some_and(|b| b.contains(',')) {
        return Err(LabError::usage("optimize searches zsmalloc's class tables: one backend"));
    }
    let base = assemble_one(&args.pool, "optimize")?.config;
    let mut opts = SearchOptions::new(base);
    opts.objective =
        Objective::parse(args.objective.as_deref().unwrap_or("spanning"), args.spanning_extra_ns)?;
    if let Some(n) = args.points {
        opts.points = n;
    }
    opts.jobs = match args.jobs {
        Some(0) => return Err(LabError::usage("--jobs must be at least 1")),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    opts.boundaries = args.boundaries;
    if let Some(k) = args.point {
        opts.also_report.push(k);
    }
    Ok(opts)
}

pub fn run(a: OptimizeCmd) -> LabResult<()> {
    let args = &a.args;
    let seed = args.seed.unwrap_or(1);
    let w = a.workload.unwrap_or_default().with_seed(seed);
    let test = match &args.test {
        Some(text) => Some(test_workload(text, seed)?),
        None => None,
    };
    let format = args.format.offered_by::<OptimizeReport>()?;
    let mut opts = OptimizeOptions::new(search_options(args)?);
    for (flag, path) in [("--plot", &args.plot), ("--export-table", &args.export_table)] {
        if let Some(p) = path {
            check_writable(flag, p)?;
        }
    }
    if let Some(p) = &args.plot {
        crate::plot::check_path(p)?;
    }
    opts.max_memory = args.max_memory;
    opts.export_table = args.export_table.clone();
    opts.export_point = args.point;
    let sink = ProgressSink::auto();
    let report = crate::optimize::run(&opts, &w, test.as_ref(), &sink)?;
    sink.clear();
    if let Some(path) = &args.plot {
        crate::plot::optimize(path, &report)?;
    }
    emit(&report.render(format)?)
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
