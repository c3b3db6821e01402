//! `zsmalloc inspect`: the machine's own zram devices and zswap ([`crate::inspect`]).

use std::path::PathBuf;

use clap::Args;

use super::output::emit;
use crate::error::{LabError, LabResult};
use crate::flag_values::{self, MAX_JOBS};
use crate::inspect::machine::Machine;
use crate::inspect::snapshot_report::{self, SnapshotOptions};
use crate::inspect::watch::{self, Shape};
use crate::kernel::corpus::CompressorArgs;
use crate::report::{Format, Render};

#[derive(Args, Debug, Clone)]
pub struct InspectArgs {
    /// Output format: table, json or csv
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = Format::Table, hide_possible_values = true)]
    pub format: Format,
    /// Report again every SECONDS until Ctrl-C: redrawn in place on a terminal, one report
    /// after another otherwise (JSON: one line each)
    #[arg(long, value_name = "SECONDS", conflicts_with = "snapshot", value_parser = flag_values::real(watch::MIN_SECONDS, watch::MAX_SECONDS))]
    pub watch: Option<f64>,
    /// With --watch: stop after N reports
    #[arg(long, value_name = "N", requires = "watch", value_parser = flag_values::whole::<u64>(1, u64::MAX))]
    pub count: Option<u64>,
    /// (root) Read this device's stored pages (read-only; marks them accessed), store each
    /// again on a private device for the kernel's exact lengths, and replay them: the pool
    /// without its history, the fragmentation held, and other class tables on the same data
    #[arg(long, value_name = "zramN")]
    pub snapshot: Option<String>,
    /// With --snapshot: read a device that is active swap
    #[arg(long, requires = "snapshot")]
    pub yes: bool,
    /// With --snapshot: read at most N stored pages
    #[arg(long, value_name = "N", requires = "snapshot", value_parser = flag_values::whole::<u64>(1, u64::MAX))]
    pub max_pages: Option<u64>,
    #[command(flatten)]
    pub codec: CompressorArgs,
    /// With --snapshot: also run the optimizer on the device's data and report its table with
    /// the fewest pages
    #[arg(long, requires = "snapshot")]
    pub optimize: bool,
    /// With --snapshot: write the device's pages as a trace (`zsmalloc replay` reads it)
    #[arg(long, value_name = "FILE", requires = "snapshot")]
    pub trace: Option<PathBuf>,
    /// With --optimize: runs at a time [default: every core]
    #[arg(long, value_name = "N", requires = "optimize", value_parser = flag_values::whole::<usize>(1, MAX_JOBS))]
    pub jobs: Option<usize>,
    /// With --snapshot: refuse when the planned memory is above this, e.g. 2G
    #[arg(long, value_name = "BYTES", requires = "snapshot", value_parser = crate::memory::parse_memory)]
    pub max_memory: Option<u64>,
}

pub fn run(a: InspectArgs) -> LabResult<()> {
    let format = a.format.offered_by::<Machine>()?;
    if let Some(device) = &a.snapshot {
        let jobs = match a.jobs {
            Some(0) => return Err(LabError::usage("--jobs must be at least 1")),
            Some(n) => n,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        let o = SnapshotOptions {
            device: device.clone(),
            yes: a.yes,
            max_pages: a.max_pages,
            compressor: a.codec.compressor.clone(),
            level: a.codec.level,
            optimize: a.optimize,
            trace: a.trace.clone(),
            max_memory: a.max_memory,
            jobs,
        };
        return emit(&snapshot_report::run(&o)?.render(format)?);
    }
    if a.codec.compressor.is_some() || a.codec.level.is_some() {
        return Err(LabError::usage("--compressor and --level go with --snapshot"));
    }
    match a.watch {
        None => emit(&Machine::read().render(format)?),
        Some(seconds) => {
            let shape = match format {
                Format::Json => Shape::JsonLine,
                Format::Csv => Shape::Csv,
                _ => Shape::Whole,
            };
            watch::watch(watch::interval(seconds)?, a.count, shape, || {
                Machine::read().render(format)
            })
        }
    }
}
