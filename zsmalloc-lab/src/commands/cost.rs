//! `zsmalloc cost`: what reads cost in CPU time, decompression included, per configuration and
//! read mode (the study itself is [`crate::cost`]).

use std::path::PathBuf;

use clap::Args;
use zsmalloc_codec::Compressor;

use super::callgrind;
use super::output::emit;
use crate::config::assemble::{assemble, Defaults};
use crate::config::flags::{ConfigFlags, ConfigList};
use crate::config::ConfigSpec;
use crate::cost::corpus::MAX_SYNTHETIC_PAGES;
use crate::cost::MIN_BATCH;
use crate::cost::{self, corpus::Source};
use crate::error::{LabError, LabResult};
use crate::flag_values;
use crate::page_compressors::{LZ4_TAKES_NO_LEVEL, PAGE_COMPRESSORS};
use crate::progress::ProgressSink;
use crate::report::{Format, Render};
use crate::{plot, report};

/// The command's help after the flags.
pub const HELP: &str = "Default run (no path, no --config/--sweep): the built-in synthetic corpus \
(4096 pages of the page size, seed 1: text, heap-like words, sparse, random, zero and same-filled pages), \
compressed with liblz4 and libzstd (level 3); configurations `classic`, `heuristic` and, when the base \
class delta is not 16, `delta-16` (classic with class-delta=16), on the base flags (page 4096, chain 8 \
unless given); modes copy, map, contiguous and sg (a mode the core refuses is reported as skipped); \
each pool filled to twice the last-level cache with the corpus repeated; 3 interleaved rounds, \
batches of 10000 reads per clock read.

Examples:
  zsmalloc cost                                          # the default run, as a table
  zsmalloc cost --page-size 16384 --chain-size 8 --format json
  zsmalloc cost /usr/lib/x86_64-linux-gnu --max-pages 4096 --compressor zstd
  zsmalloc cost --pid 1234 --modes copy,sg
  zsmalloc cost --sweep chain-size=4..12:2 --sweep chain-policy=classic,heuristic --plot cost.svg
  zsmalloc cost --instructions                           # instruction counts under callgrind

See docs/LAB.md (cost) and docs/STUDY.md for the figures and what they mean.";

#[derive(Args, Debug)]
pub struct CostArgs {
    /// Files or directories to take pages from (walked recursively) [default: the built-in corpus]
    pub paths: Vec<PathBuf>,
    /// Take pages from the anonymous memory of a live process (resident or swapped pages only)
    #[arg(long, value_name = "PID", conflicts_with = "paths", value_parser = flag_values::whole::<u32>(1, u64::from(u32::MAX)))]
    pub pid: Option<u32>,
    /// lz4, zstd or both, comma-separated [default: lz4,zstd]
    #[arg(long, value_name = "LIST")]
    pub compressor: Option<String>,
    /// zstd level, 1..=22 (lz4 takes none) [default: 3, zram's]
    #[arg(long, value_name = "N", value_parser = flag_values::signed(1, 22))]
    pub level: Option<i32>,
    /// Read modes, comma-separated: copy, map, contiguous, sg [default: all four; --read-mode
    /// gives one]
    #[arg(long, value_name = "LIST")]
    pub modes: Option<String>,
    /// Interleaved rounds; figures are min/median/max over them [default: 3]
    #[arg(long, value_name = "N", value_parser = flag_values::whole::<usize>(1, 1000))]
    pub repeat: Option<usize>,
    /// Seed of the built-in corpus and of the visiting order [default: 1]
    #[arg(long, value_name = "N", value_parser = flag_values::any_whole::<u64>())]
    pub seed: Option<u64>,
    /// Pages of the built-in corpus [default: 4096]
    #[arg(long, value_name = "N", value_parser = flag_values::whole::<usize>(1, MAX_SYNTHETIC_PAGES as u64))]
    pub synthetic_pages: Option<usize>,
    /// Input pages read at most from files or a process [default: 16384]
    #[arg(long, value_name = "N", value_parser = flag_values::whole::<usize>(1, u64::MAX))]
    pub max_pages: Option<usize>,
    /// Fill each pool to this many MiB, repeating the corpus, and no further (a row with fewer
    /// than a batch of distinct objects then reads some again) [default: twice the last-level
    /// cache, at most 256 MiB, grown to give every row a batch of distinct objects]
    #[arg(long, value_name = "MIB", value_parser = flag_values::whole::<u64>(1, u64::MAX))]
    pub pool_mib: Option<u64>,
    /// Operations per clock read, at least 10000 [default: 10000]
    #[arg(long, value_name = "N", value_parser = flag_values::whole::<usize>(MIN_BATCH as u64, u64::MAX))]
    pub batch: Option<usize>,
    /// Refuse to run when the memory plan (printed before the run) needs more at its peak,
    /// e.g. 6G [default: what the machine has available]
    #[arg(long, value_name = "BYTES", value_parser = crate::memory::parse_memory)]
    pub max_memory: Option<u64>,
    /// Also count user-space instructions: re-run under valgrind --tool=callgrind
    #[arg(long)]
    pub instructions: bool,
    /// The --instructions child's output directory (set by the parent, not by users)
    #[arg(long, hide = true, value_name = "DIR")]
    pub callgrind_child: Option<PathBuf>,
    #[command(flatten)]
    pub pool: ConfigFlags,
    #[command(flatten)]
    pub list: ConfigList,
    /// Output format: table, json or csv
    #[arg(long, value_name = "FORMAT", help_heading = "Output", value_enum, default_value_t = Format::Table, hide_possible_values = true)]
    pub format: Format,
    /// Draw an SVG: read cost by class and mode; with several configurations, a Pareto plot
    /// of pages against read CPU
    #[arg(long, value_name = "FILE.svg", help_heading = "Output")]
    pub plot: Option<PathBuf>,
}

/// The study's configurations when none is named: classic, heuristic and delta-16 for
/// zsmalloc; another backend alone is its one configuration.
fn study_set(base: &ConfigSpec) -> LabResult<Vec<ConfigSpec>> {
    if base.is_zsmalloc() {
        cost::default_specs(base)
    } else {
        Ok(vec![base.clone()])
    }
}

/// The study's options from the flags (configurations assembled by the common rule).
fn options(a: &mut CostArgs) -> LabResult<(cost::CostOptions, Vec<String>)> {
    // `--read-mode` names a read mode to measure (sg too): not a setting of the
    // configurations, whose pools each mode sets itself.
    let read_modes = a.pool.read_mode.take();
    let defaults = Defaults { alone: &study_set, in_list: &cost::default_specs };
    let assembly = assemble(&a.pool, &a.list, &defaults)?;
    let mut opts = cost::CostOptions::new(assembly.specs);
    let seed = a.seed.unwrap_or(1);
    opts.seed = seed;
    let pages = a.synthetic_pages.unwrap_or(cost::DEFAULT_SYNTHETIC_PAGES);
    opts.source = Source::from_flags(a.pid, &a.paths, pages, seed);
    let names = a.compressor.as_deref().unwrap_or("lz4,zstd");
    opts.compressors = Compressor::parse_list(names, PAGE_COMPRESSORS)?;
    if let Some(level) = a.level {
        if !opts.compressors.contains(&Compressor::Zstd) {
            return Err(LabError::usage(LZ4_TAKES_NO_LEVEL));
        }
        if opts.compressors.contains(&Compressor::Lz4) {
            eprintln!("zsmalloc: warning: --level {level} applies to zstd only; lz4 takes none");
        }
        opts.level = level;
    }
    if let Some(m) = a.modes.clone().or(read_modes) {
        opts.modes = cost::parse_modes(&m)?;
    }
    if let Some(r) = a.repeat {
        opts.repeat = r;
    }
    if let Some(m) = a.max_pages {
        opts.max_pages = m;
    }
    if let Some(mib) = a.pool_mib {
        opts.pool_bytes = match mib.checked_mul(1 << 20) {
            Some(b) if b > 0 => b,
            _ => return Err(LabError::usage(format!("invalid --pool-mib {mib}: 1 or more MiB"))),
        };
        opts.pool_bytes_fixed = true;
    }
    if let Some(b) = a.batch {
        opts.batch = b;
    }
    opts.max_memory = a.max_memory;
    Ok((opts, assembly.sweep_keys))
}

pub fn run(mut a: CostArgs) -> LabResult<()> {
    let format = a.format.offered_by::<cost::CostReport>()?;
    let (mut opts, sweep_keys) = options(&mut a)?;
    if let Some(dir) = &a.callgrind_child {
        return callgrind::run_child(&mut opts, dir);
    }
    opts.check()?;
    if let Some(p) = &a.plot {
        report::check_writable("--plot", p)?;
        plot::check_path(p)?;
    }
    let sink = ProgressSink::auto();
    let mut r = cost::run(&opts, &sink)?;
    sink.clear();
    if a.instructions {
        let counts = callgrind::rerun_under_callgrind()?;
        cost::instructions::apply(&mut r, &counts);
    }
    if let Some(p) = &a.plot {
        plot::cost(p, &r, &sweep_keys)?;
    }
    emit(&r.render(format)?)
}
