//! The `zsmalloc` command line: its clap definition, parsing (one-line refusals, exit 2) and
//! dispatch to [`crate::commands`] (the numeric flags' value parsers are
//! [`crate::flag_values`], which every command's flags use). The binary is this module's
//! [`main_code`].
//!
//! Exit codes: 0 success; 2 bad flags, bad configuration, unreadable input or unwritable
//! output (one line on stderr); 1 a failure while running (e.g. an object that does not read
//! back as written).

use clap::error::{ContextValue, ErrorKind};
use clap::{Command, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::commands::{
    classes, compare, corpus, cost, folios, inspect, kernel, optimize, replay, run, tier, trace,
};
use crate::error::{LabError, LabResult};
use zsmalloc_core::text_input::escape;

const ABOUT: &str = "A faithful, instrumented userspace zsmalloc: class tables, workloads and \
side-by-side comparisons of configurations.";

const AFTER_HELP: &str = "Examples:
  zsmalloc compare                                   # the RFC's benchmark: classic vs heuristic, 4K pages, chain 10
  zsmalloc classes --page-size 16K --vs class-delta=16
  zsmalloc run --chain-size 10 kernel-test --lo 32 --hi 4080 --step 16 -n 1337
  zsmalloc run dist --mean 694 --sd 474 --churn 200000 --compact --timeline t.csv
  zsmalloc run pages /usr/lib --compressor zstd --format json
  zsmalloc compare --sweep chain-size=4..16 --plot sweep.svg
  zsmalloc compare --repeat 5 dist                   # CPU times as min/median/max, deltas with their spread
  zsmalloc replay app.trace --format mm_stat
  zsmalloc trace convert app.trace app.bin --zstd      # the compact binary form; `trace info` describes either
  zsmalloc cost --page-size 16K --format json        # CPU time of reads per mode, decompression included
  zsmalloc inspect --watch 5                         # this machine's zram and zswap: what their pools cost
  zsmalloc folios --folio-sizes 4K,16K,64K --compressor lz4,lzo,zstd   # large folios as one object
  zsmalloc tier --budget 32M -- python3 script.py   # a program's memory under a budget, the rest in a pool
  zsmalloc corpus record -o corpus                  # ordinary programs' traces under the tier, and a manifest
  zsmalloc corpus study corpus/                      # chains, optimizer, folios, zblock, frees on every trace

See docs/LAB.md for every flag, the output fields and the trace format.";

#[derive(Parser)]
#[command(name = "zsmalloc", version, about = ABOUT, after_help = AFTER_HELP)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Subcommand)]
pub enum Cmd {
    /// Print the class table of a configuration; with --vs, two side by side; with --backend
    /// zblock, zblock's block table.
    Classes(classes::ClassesArgs),
    /// Run a workload on one configuration (default workload: kernel-test).
    Run(run::RunArgs),
    /// Run a workload on several configurations, with deltas against the first (timed runs one
    /// at a time; --no-time in parallel). Without --config or --sweep: the RFC's classic vs
    /// heuristic at chain 10.
    Compare(compare::CompareArgs),
    /// Replay a trace file (the same as `run trace FILE`).
    Replay(replay::ReplayArgs),
    /// What reads cost in CPU time, decompression included, per configuration and read mode:
    /// read sections (spanning / in place / huge / incompressible), decompress, both consumers,
    /// both write paths, on real compressed pages.
    #[command(after_help = cost::HELP)]
    Cost(cost::CostArgs),
    /// Large folios compressed whole and stored as one object each (the 2024 multi-page RFC)
    /// against 4K pages: pages, compaction, padding, swap-in and swap-out CPU per compressor
    /// (lz4, lzo, zstd) and folio size.
    #[command(after_help = folios::HELP)]
    Folios(folios::FoliosArgs),
    /// The running kernel's zram beside the project: check, capture, cost, import (check,
    /// capture and cost need root and zram).
    #[command(subcommand)]
    Kernel(kernel::KernelCmd),
    /// The Pareto frontier of class tables for a workload: pages (end and peak) against read
    /// cost, exact over per-class chains for a fixed layout, with classic and the heuristic on
    /// the same axes (default workload: kernel-test).
    Optimize(optimize::OptimizeCmd),
    /// This machine's zram devices and zswap: data, compressed bytes, pool memory and the
    /// allocator's overhead (no root needed); --snapshot zramN (root): the fragmentation its
    /// history holds and what other class tables would save on its data.
    Inspect(inspect::InspectArgs),
    /// A corpus of real programs' traces: record one (programs run under the tier with
    /// --record, and a manifest; docs/CORPUS.md), write one of its inputs, study one
    /// (docs/STUDY.md §8)
    #[command(subcommand)]
    Corpus(corpus::CorpusCmd),
    /// Traces: convert between the text and the binary form, describe one (info)
    #[command(subcommand)]
    Trace(trace::TraceCmd),
    /// Run a program with its memory under a budget: the pages above it compressed into a
    /// pool and brought back on their next touch (userfaultfd; root)
    #[command(after_help = tier::HELP)]
    Tier(tier::TierArgs),
}

/// Runs the command line `args` (the program's name first) and gives the exit code; a refusal
/// or a failure is printed on stderr, one line.
pub fn main_code(args: impl IntoIterator<Item = std::ffi::OsString>) -> i32 {
    let result = match parse(args) {
        // The tier's exit status is its program's.
        Ok(Parsed::Run(cli)) if matches!(cli.cmd, Cmd::Tier(_)) => match cli.cmd {
            Cmd::Tier(a) => return tier::run(a),
            _ => unreachable!("matched above"),
        },
        Ok(Parsed::Run(cli)) => dispatch(cli.cmd),
        Ok(Parsed::Printed(code)) => return code,
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("zsmalloc: {e}");
            e.exit_code()
        }
    }
}

/// clap's message on one line: the error, what follows a colon (the missing arguments, the
/// possible values), clap's tip (a similar flag), with every control character of a value
/// escaped.
fn one_line(e: &clap::Error) -> String {
    let mut text = e.to_string();
    for (_, value) in e.context() {
        let raw: Vec<&str> = match value {
            ContextValue::String(v) => vec![v.as_str()],
            ContextValue::Strings(v) => v.iter().map(String::as_str).collect(),
            _ => Vec::new(),
        };
        for v in raw.into_iter().filter(|v| v.chars().any(char::is_control)) {
            text = text.replace(v, &escape(v));
        }
    }
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("invalid arguments");
    let mut msg = first.strip_prefix("error: ").unwrap_or(first).to_string();
    if let Some(next) = lines.next().filter(|n| msg.ends_with(':') || n.starts_with("[possible")) {
        msg = format!("{msg} {next}");
    }
    if let Some(tip) = text.lines().map(str::trim).find_map(|l| l.strip_prefix("tip: ")) {
        msg = format!("{msg}; {tip}");
    }
    format!("{} (see 'zsmalloc --help')", escape(&msg))
}

/// The command line with negative numbers taken as values everywhere, so that `--seed -1` is
/// refused by the flag's own range rather than as an unknown argument.
fn negatives_as_values(cmd: Command) -> Command {
    cmd.allow_negative_numbers(true).mut_subcommands(negatives_as_values)
}

/// The command line as the program parses it (negative numbers taken as values).
pub fn command() -> Command {
    negatives_as_values(Cli::command())
}

/// What parsing gave: a command to run, or help or the version printed (with its exit code).
pub enum Parsed {
    Run(Box<Cli>),
    Printed(i32),
}

/// Parses `args` (the program's name first); a refusal is a usage error (exit 2), one line.
pub fn parse(args: impl IntoIterator<Item = std::ffi::OsString>) -> LabResult<Parsed> {
    let parsed = command().try_get_matches_from(args).and_then(|m| Cli::from_arg_matches(&m));
    match parsed {
        Ok(c) => Ok(Parsed::Run(Box::new(c))),
        Err(e) => match e.kind() {
            ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                let _ = e.print();
                Ok(Parsed::Printed(0))
            }
            ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                let _ = e.print();
                Ok(Parsed::Printed(2))
            }
            _ => Err(LabError::usage(one_line(&e))),
        },
    }
}

/// Runs a parsed command.
pub fn dispatch(cmd: Cmd) -> LabResult<()> {
    match cmd {
        Cmd::Classes(a) => classes::run(a),
        Cmd::Run(a) => run::run(a),
        Cmd::Compare(a) => compare::run(a),
        Cmd::Replay(a) => replay::run(a),
        Cmd::Cost(a) => cost::run(a),
        Cmd::Folios(a) => folios::run(a),
        Cmd::Kernel(k) => kernel::run(k),
        Cmd::Optimize(a) => optimize::run(a),
        Cmd::Inspect(a) => inspect::run(a),
        Cmd::Trace(t) => trace::run(t),
        Cmd::Corpus(c) => corpus::run(c),
        Cmd::Tier(a) => match tier::run(a) {
            0 => Ok(()),
            code => Err(LabError::runtime(format!("the program exited with status {code}"))),
        },
    }
}
