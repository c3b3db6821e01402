//! The `zsmalloc` command: the lab's class tables, runs, comparisons, trace replays and the cost
//! study (docs/LAB.md is the user guide). This file parses and dispatches; each command is a
//! module of [`zsmalloc_lab::commands`].
//!
//! Exit codes: 0 success; 2 bad flags, bad configuration, unreadable input or unwritable
//! output (one line on stderr); 1 a failure while running (e.g. an object that does not read
//! back as written). SIGINT, SIGTERM and SIGHUP end the process by the signal itself (a shell
//! sees 130, 143, 129) once unfinished outputs and zram devices are removed
//! ([`zsmalloc_lab::interrupt`]).

use clap::error::ErrorKind;
use clap::{Command, CommandFactory, FromArgMatches, Parser, Subcommand};

use zsmalloc_lab::commands::{
    classes, compare, cost, folios, inspect, kernel, optimize, replay, run,
};
use zsmalloc_lab::{LabError, LabResult};

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
  zsmalloc cost --page-size 16K --format json        # CPU time of reads per mode, decompression included
  zsmalloc inspect --watch 5                         # this machine's zram and zswap: what their pools cost
  zsmalloc folios --folio-sizes 4K,16K,64K --compressor lz4,lzo,zstd   # large folios as one object

See docs/LAB.md for every flag, the output fields and the trace format.";

#[derive(Parser)]
#[command(name = "zsmalloc", version, about = ABOUT, after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
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
}

fn main() {
    // Before anything is written: an interrupted command leaves no partial output.
    zsmalloc_lab::interrupt::install();
    let code = match real_main() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("zsmalloc: {e}");
            e.exit_code()
        }
    };
    std::process::exit(code);
}

/// clap's message, on one line.
fn one_line(e: &clap::Error) -> String {
    let text = e.to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("invalid arguments");
    let mut msg = first.strip_prefix("error: ").unwrap_or(first).to_string();
    // "the following required arguments were not provided:" is followed by their names, an
    // invalid value by the possible ones.
    if let Some(next) = lines.next().filter(|n| msg.ends_with(':') || n.starts_with("[possible")) {
        msg = format!("{msg} {next}");
    }
    // A negative value for a count or a size: say what is accepted, not how parsing failed.
    if msg.starts_with("invalid value '-") && msg.ends_with("invalid digit found in string") {
        let at = msg.len() - "invalid digit found in string".len();
        msg = format!("{}a whole number from 0 up is accepted, not a negative one", &msg[..at]);
    }
    format!("{msg} (see 'zsmalloc --help')")
}

/// The command line with negative numbers taken as values everywhere, so that `--seed -1` is
/// refused by the flag's own range rather than as an unknown argument.
fn negatives_as_values(cmd: Command) -> Command {
    cmd.allow_negative_numbers(true).mut_subcommands(negatives_as_values)
}

fn real_main() -> LabResult<()> {
    let parsed = negatives_as_values(Cli::command())
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m));
    let cli = match parsed {
        Ok(c) => c,
        Err(e) => match e.kind() {
            ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                let _ = e.print();
                return Ok(());
            }
            ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                let _ = e.print();
                std::process::exit(2);
            }
            _ => return Err(LabError::usage(one_line(&e))),
        },
    };
    match cli.cmd {
        Cmd::Classes(a) => classes::run(a),
        Cmd::Run(a) => run::run(a),
        Cmd::Compare(a) => compare::run(a),
        Cmd::Replay(a) => replay::run(a),
        Cmd::Cost(a) => cost::run(a),
        Cmd::Folios(a) => folios::run(a),
        Cmd::Kernel(k) => kernel::run(k),
        Cmd::Optimize(a) => optimize::run(a),
        Cmd::Inspect(a) => inspect::run(a),
    }
}
