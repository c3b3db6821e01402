//! `zsmalloc optimize WORKLOAD`: its flags, and the run that searches, reports, plots and
//! exports.

use std::path::PathBuf;

use clap::Args;

use super::generalize::test_on;
use super::plot;
use super::report::{ExportDesc, Objective, OptimizeReport};
use super::search::{search, SearchOptions};
use crate::config::assemble::assemble_one;
use crate::config::flags::ConfigFlags;
use crate::error::{LabError, LabResult};
use crate::progress::ProgressSink;
use crate::report::check_writable;
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
    #[arg(long, global = true, value_name = "NS")]
    pub spanning_extra_ns: Option<f64>,
    /// Also search the class sizes: merge adjacent classes or split one, greedily, while the
    /// cheapest read cost within classic's pages falls (a heuristic; 48 runs a round)
    #[arg(long, global = true)]
    pub boundaries: bool,
    /// Frontier points to report, each run again to check it; 0 = every point [default: 12]
    #[arg(long, global = true, value_name = "N")]
    pub points: Option<usize>,
    /// Write a point's table in the class-table file format (load it with --class-table or
    /// ZSMALLOC_CLASS_TABLE) [default point: the cheapest with no more pages than classic]
    #[arg(long, global = true, value_name = "FILE")]
    pub export_table: Option<PathBuf>,
    /// The frontier point to export (its number in the report)
    #[arg(long, global = true, value_name = "K", requires = "export_table")]
    pub point: Option<usize>,
    /// table or json [default: table]
    #[arg(long, global = true, value_name = "FORMAT")]
    pub format: Option<String>,
    /// Draw the Pareto plot: pages (end and peak) against read cost, the frontier with classic
    /// and the heuristic
    #[arg(long, global = true, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Runs at a time [default: every core]
    #[arg(long, global = true, value_name = "N")]
    pub jobs: Option<usize>,
    /// A second workload the chosen tables (and classic and the heuristic) are run on, as
    /// `run` takes it: `--test "pages /usr/share --compressor zstd"`
    #[arg(long, global = true, value_name = "WORKLOAD")]
    pub test: Option<String>,
    /// Seed of the workloads [default: 1]
    #[arg(long, global = true, value_name = "N")]
    pub seed: Option<u64>,
    /// Refuse to run when the memory of --jobs runs at once is planned above this, e.g. 6G
    /// [default: what the machine has available]
    #[arg(long, global = true, value_name = "BYTES")]
    pub max_memory: Option<String>,
}

/// Whether the report is printed as a table or JSON.
fn json_format(format: Option<&str>) -> LabResult<bool> {
    match format.unwrap_or("table") {
        "table" => Ok(false),
        "json" => Ok(true),
        other => Err(LabError::usage(format!(
            "invalid --format '{other}': optimize prints table or json"
        ))),
    }
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

/// Searches, writes the plot and the exported table, and returns the report as printed.
/// `test`: the `--test` workload, parsed by the caller (the workloads' command line is the
/// binary's).
pub fn run(
    args: &OptimizeArgs,
    workload: &Workload,
    test: Option<&Workload>,
    sink: &ProgressSink,
) -> LabResult<String> {
    let json = json_format(args.format.as_deref())?;
    let opts = search_options(args)?;
    for (flag, path) in [("--plot", &args.plot), ("--export-table", &args.export_table)] {
        if let Some(p) = path {
            check_writable(flag, p)?;
        }
    }
    // Planned before anything runs: the search runs --jobs configurations at once.
    let max_memory = args.max_memory.as_deref().map(crate::memory::parse_memory).transpose()?;
    let page = opts.base.page_size as usize;
    for w in std::iter::once(workload).chain(test) {
        w.check(page)?;
        let plan = w.memory_plan(page)?.times(opts.jobs);
        crate::memory::Limit::new(max_memory).check(&format!("optimize {}", w.name()), &plan)?;
    }
    let mut report = search(workload, &opts, sink)?;
    if let Some(t) = test {
        report.test = Some(test_on(t, &report, &opts, sink)?);
    }
    sink.clear();
    if let Some(path) = &args.export_table {
        report.export = Some(export(&report, args.point, path)?);
    }
    if let Some(path) = &args.plot {
        plot::pareto(path, &report)?;
    }
    if json {
        report.to_json()
    } else {
        Ok(report.to_table())
    }
}

/// Writes point `point` (else the default point) of the report to `path`.
pub fn export(
    report: &OptimizeReport,
    point: Option<usize>,
    path: &PathBuf,
) -> LabResult<ExportDesc> {
    let k = point.or(report.default_point).ok_or_else(|| {
        LabError::usage(
            "no frontier point uses no more pages than classic (the layout is not classic's): \
             name one with --point",
        )
    })?;
    let p =
        report.point(k).ok_or_else(|| LabError::runtime(format!("point {k} was not reported")))?;
    std::fs::write(path, &p.table).map_err(|e| LabError::io("write", path, &e))?;
    Ok(ExportDesc { point: k, file: path.display().to_string() })
}
