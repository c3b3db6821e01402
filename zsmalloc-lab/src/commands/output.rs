//! What the run commands (`run`, `replay`, `compare`) share besides the configuration: the
//! output flags, and writing the report.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use crate::error::{LabError, LabResult};
use crate::flag_values;
use crate::report::{self, Format};
use crate::runner::RunOptions;
use crate::trace_format::TraceFormat;
use crate::workload::Workload;

/// `--record FILE` and the form it is written in (`--trace-format`).
#[derive(Debug, Clone, Default)]
pub struct Record {
    pub path: Option<PathBuf>,
    pub format: TraceFormat,
}

impl Record {
    /// `--trace-format` is refused without `--record`.
    pub fn new(path: Option<PathBuf>, format: Option<TraceFormat>) -> LabResult<Record> {
        if path.is_none() && format.is_some() {
            return Err(LabError::usage("--trace-format is the form of --record FILE: give both"));
        }
        Ok(Record { path, format: format.unwrap_or_default() })
    }
}

/// Output flags of the run commands.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Output")]
pub struct OutputFlags {
    /// Output format: table, json, csv, mm_stat (zram's line) or debugfs (the kernel's
    /// classes table)
    #[arg(long, global = true, value_name = "FORMAT", value_enum, default_value_t = Format::Table, hide_possible_values = true)]
    pub format: Format,
    /// Draw an SVG: per-class steps, huge classes apart, differences between configurations;
    /// with --sweep, curves and a Pareto plot of pages against spanning reads
    #[arg(long, global = true, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Include per-class rows
    #[arg(long, global = true)]
    pub per_class: bool,
    /// Leave times out (CPU and wall), so the output of a seeded run is identical byte for
    /// byte; configurations then run in parallel
    #[arg(long, global = true)]
    pub no_time: bool,
    /// Write pages and utilization over the run's operations to a CSV file
    #[arg(long, global = true, value_name = "FILE.csv")]
    pub timeline: Option<PathBuf>,
    /// Timeline sample interval in operations [default: about 500 samples per run]
    #[arg(long, global = true, value_name = "OPS", value_parser = flag_values::whole::<u64>(1, u64::MAX))]
    pub timeline_every: Option<u64>,
    /// Timed runs of each configuration, interleaved (A B A B); CPU times are reported as
    /// min/median/max over them [default: 1]
    #[arg(long, global = true, value_name = "N", value_parser = flag_values::whole::<usize>(1, 1000))]
    pub repeat: Option<usize>,
    /// Seed of the workload (contents, sizes, synthetic pages) [default: 1]
    #[arg(long, global = true, value_name = "N", value_parser = flag_values::any_whole::<u64>())]
    pub seed: Option<u64>,
    /// Refuse to run when the memory the run is planned to take (its pools at once) is above
    /// this, e.g. 6G [default: what the machine has available]
    #[arg(long, global = true, value_name = "BYTES", help_heading = "Run", value_parser = crate::memory::parse_memory)]
    pub max_memory: Option<u64>,
    /// Pools keep lengths and placement only, never the objects' bytes (docs/LAB.md, Placement
    /// only): the same pages, classes, spanning reads and compaction, for a few dozen bytes a
    /// live object; nothing is verified or timed, so no time rows
    #[arg(long, global = true, help_heading = "Run")]
    pub placement_only: bool,
}

impl OutputFlags {
    /// `--format`, table when absent.
    pub fn format(&self) -> LabResult<Format> {
        Ok(self.format)
    }

    /// `--seed`, 1 when absent.
    pub fn seed(&self) -> u64 {
        self.seed.unwrap_or(1)
    }

    /// The workload given (kernel-test when none) with the seed of `--seed`.
    pub fn workload(&self, w: Option<Workload>) -> Workload {
        w.unwrap_or_default().with_seed(self.seed())
    }

    /// How to run `w`; outputs written after the run are checked before it.
    pub fn run_options(&self, w: &Workload, record: Record) -> LabResult<RunOptions> {
        for (flag, path) in
            [("--plot", &self.plot), ("--timeline", &self.timeline), ("--record", &record.path)]
        {
            if let Some(p) = path {
                report::check_writable(flag, p)?;
            }
        }
        if let Some(p) = &self.plot {
            crate::plot::check_path(p)?;
        }
        let timeline_every = match (&self.timeline, self.timeline_every) {
            (_, Some(0)) => return Err(LabError::usage("--timeline-every must be at least 1")),
            (None, _) => 0,
            (Some(_), Some(n)) => n,
            (Some(_), None) => {
                // A trace knows its length once planned (the plan is made once, and kept).
                let limit = crate::memory::Limit::new(self.max_memory);
                w.memory_plan(4096, !self.placement_only, &limit)?;
                (w.estimated_ops() / 500).max(1)
            }
        };
        let repeat = self.repeat.unwrap_or(1);
        if !(1..=1000).contains(&repeat) {
            return Err(LabError::usage(format!("invalid --repeat {repeat}: 1..=1000")));
        }
        Ok(RunOptions {
            per_class: self.per_class,
            timing: !self.no_time && !self.placement_only,
            placement_only: self.placement_only,
            record: record.path,
            record_format: record.format,
            timeline_every,
            repeat,
            max_memory: self.max_memory,
        })
    }
}

/// Writes the report to stdout; a closed pipe (`| head`) is not an error.
pub fn emit(text: &str) -> LabResult<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|_| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(LabError::usage(format!(
            "cannot write the report: {}",
            zsmalloc_core::text_input::io_reason(&e)
        ))),
    }
}
