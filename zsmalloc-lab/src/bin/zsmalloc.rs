//! The `zsmalloc` command: the lab's class tables, runs, comparisons, trace replays and the cost
//! study
//! (docs/LAB.md is the user guide).
//!
//! Exit codes: 0 success; 2 bad flags, bad configuration, unreadable input or unwritable
//! output (one line on stderr); 1 a failure while running (e.g. an object that does not read
//! back as written).

use std::io::Write;
use std::path::PathBuf;

use clap::error::ErrorKind;
use clap::{Args, Parser, Subcommand};

use zsmalloc_core::BackendKind;
use zsmalloc_lab::classes::{self, ClassTableReport};
use zsmalloc_lab::compare::{self, Comparison};
use zsmalloc_lab::config::assemble::{assemble, assemble_one, Defaults};
use zsmalloc_lab::config::flags::{ConfigFlags, ConfigList};
use zsmalloc_lab::config::ConfigSpec;
use zsmalloc_lab::progress::ProgressSink;
use zsmalloc_lab::report::{self, Format};
use zsmalloc_lab::runner::{self, RunOptions};
use zsmalloc_lab::workload::{dist, kernel_test, pages, trace, SameFilled, Workload};
use zsmalloc_lab::{plot, timeline, LabError, LabResult};

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
    Classes(ClassesArgs),
    /// Run a workload on one configuration (default workload: kernel-test).
    Run(RunArgs),
    /// Run a workload on several configurations, with deltas against the first (timed runs one
    /// at a time; --no-time in parallel). Without --config or --sweep: the RFC's classic vs
    /// heuristic at chain 10.
    Compare(CompareArgs),
    /// Replay a trace file (the same as `run trace FILE`).
    Replay(ReplayArgs),
    /// What reads cost in CPU time, decompression included, per configuration and read mode:
    /// read sections (spanning / in place / huge / incompressible), decompress, both consumers,
    /// both write paths, on real compressed pages.
    #[command(after_help = COST_HELP)]
    Cost(CostArgs),
    /// The Pareto frontier of class tables for a workload: pages (end and peak) against read
    /// cost, exact over per-class chains for a fixed layout, with classic and the heuristic on
    /// the same axes (default workload: kernel-test).
    Optimize {
        #[command(flatten)]
        args: zsmalloc_lab::optimize::OptimizeArgs,
        #[command(subcommand)]
        workload: Option<WorkloadCmd>,
    },
}

const COST_HELP: &str = "Default run (no path, no --config/--sweep): the built-in synthetic corpus \
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

#[derive(Args)]
struct CostArgs {
    #[command(flatten)]
    pool: ConfigFlags,
    /// Files or directories to take pages from (walked recursively) [default: the built-in corpus]
    paths: Vec<PathBuf>,
    /// Take pages from the anonymous memory of a live process (resident or swapped pages only)
    #[arg(long, value_name = "PID", conflicts_with = "paths")]
    pid: Option<u32>,
    /// lz4, zstd or both, comma-separated [default: lz4,zstd]
    #[arg(long, value_name = "LIST")]
    compressor: Option<String>,
    /// zstd level, 1..=22 (lz4 takes none) [default: 3, zram's]
    #[arg(long, value_name = "N")]
    level: Option<i32>,
    /// Read modes, comma-separated: copy, map, contiguous, sg [default: all four; --read-mode
    /// gives one]
    #[arg(long, value_name = "LIST")]
    modes: Option<String>,
    #[command(flatten)]
    list: ConfigList,
    /// Interleaved rounds; figures are min/median/max over them [default: 3]
    #[arg(long, value_name = "N")]
    repeat: Option<usize>,
    /// Seed of the built-in corpus and of the visiting order [default: 1]
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Pages of the built-in corpus [default: 4096]
    #[arg(long, value_name = "N")]
    synthetic_pages: Option<usize>,
    /// Input pages read at most from files or a process [default: 16384]
    #[arg(long, value_name = "N")]
    max_pages: Option<usize>,
    /// Fill each pool to this many MiB, repeating the corpus [default: twice the last-level cache]
    #[arg(long, value_name = "MIB")]
    pool_mib: Option<u64>,
    /// Operations per clock read, at least 10000 [default: 10000]
    #[arg(long, value_name = "N")]
    batch: Option<usize>,
    /// Also count user-space instructions: re-run under valgrind --tool=callgrind
    #[arg(long)]
    instructions: bool,
    #[arg(long, hide = true, value_name = "DIR")]
    callgrind_child: Option<PathBuf>,
    /// table, json or csv [default: table]
    #[arg(long, value_name = "FORMAT")]
    format: Option<String>,
    /// Draw an SVG: read cost by class and mode; with several configurations, a Pareto plot
    /// of pages against read CPU
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
}

#[derive(Args)]
struct OutputFlags {
    /// table, json, csv, mm_stat or debugfs [default: table]
    #[arg(long, global = true, value_name = "FORMAT")]
    format: Option<String>,
    /// Draw an SVG: per-class steps, huge classes apart, differences between configurations;
    /// with --sweep, curves and a Pareto plot of pages against spanning reads
    #[arg(long, global = true, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// Include per-class rows
    #[arg(long, global = true)]
    per_class: bool,
    /// Leave times out (CPU and wall), so the output of a seeded run is identical byte for
    /// byte; configurations then run in parallel
    #[arg(long, global = true)]
    no_time: bool,
    /// Write pages and utilization over the run's operations to a CSV file
    #[arg(long, global = true, value_name = "FILE.csv")]
    timeline: Option<PathBuf>,
    /// Timeline sample interval in operations [default: about 500 samples per run]
    #[arg(long, global = true, value_name = "OPS")]
    timeline_every: Option<u64>,
    /// Timed runs of each configuration, interleaved (A B A B); CPU times are reported as
    /// min/median/max over them [default: 1]
    #[arg(long, global = true, value_name = "N")]
    repeat: Option<usize>,
    /// Seed of the workload (contents, sizes, synthetic pages) [default: 1]
    #[arg(long, global = true, value_name = "N")]
    seed: Option<u64>,
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    pool: ConfigFlags,
    #[command(flatten)]
    out: OutputFlags,
    /// Record the run's operations as a trace file (replay it with `zsmalloc replay`)
    #[arg(long, global = true, value_name = "FILE")]
    record: Option<PathBuf>,
    #[command(subcommand)]
    workload: Option<WorkloadCmd>,
}

#[derive(Args)]
struct CompareArgs {
    #[command(flatten)]
    pool: ConfigFlags,
    #[command(flatten)]
    out: OutputFlags,
    #[command(flatten)]
    list: ConfigList,
    /// Configurations run at once when nothing is timed (--no-time); timed runs go one at a
    /// time [default: every core]
    #[arg(long, global = true, value_name = "N")]
    jobs: Option<usize>,
    #[command(subcommand)]
    workload: Option<WorkloadCmd>,
}

#[derive(Args)]
struct ReplayArgs {
    /// The trace file (format: docs/LAB.md)
    file: PathBuf,
    #[command(flatten)]
    pool: ConfigFlags,
    #[command(flatten)]
    out: OutputFlags,
    /// Record the replayed operations again
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
}

#[derive(Args)]
struct ClassesArgs {
    #[command(flatten)]
    pool: ConfigFlags,
    /// A second configuration (overrides, as `compare --config`) shown side by side
    #[arg(long, value_name = "SPEC")]
    vs: Option<String>,
    /// Logical-size step [default: the smaller class delta]
    #[arg(long, value_name = "BYTES")]
    step: Option<u32>,
    /// Smallest logical size shown
    #[arg(long, value_name = "BYTES")]
    min_size: Option<u32>,
    /// Largest logical size shown
    #[arg(long, value_name = "BYTES")]
    max_size: Option<u32>,
    /// table, json or csv [default: table]
    #[arg(long, value_name = "FORMAT")]
    format: Option<String>,
    /// Write the configuration's table in the class-table file format instead (load it back
    /// with --class-table or ZSMALLOC_CLASS_TABLE: it places every object as this configuration)
    #[arg(long, value_name = "FILE", conflicts_with_all = ["vs", "plot"])]
    export: Option<PathBuf>,
    /// Draw chain, tail waste, merge waste and spanning per zspage against logical size (and
    /// their differences with --vs)
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
}

#[derive(Subcommand, Clone)]
enum WorkloadCmd {
    /// The zsmalloc_test module's pattern: for each size lo..=hi by step, n objects; then read
    /// and verify all in store order [default: the RFC's 32..=4080 step 16, 1337 each]
    #[command(allow_negative_numbers = true)]
    KernelTest {
        #[arg(long, default_value_t = 32)]
        lo: usize,
        #[arg(long, default_value_t = 4080)]
        hi: usize,
        #[arg(long, default_value_t = 16)]
        step: usize,
        /// Objects per size
        #[arg(short = 'n', long = "count", default_value_t = 1337)]
        n: usize,
    },
    /// Sizes from a normal distribution (mean 694, sd 474, as measured in the thread "zsmalloc
    /// limitations and related topics") clipped to --min-len..=page, with same-filled pages, a churn
    /// phase and optional compaction
    #[command(allow_negative_numbers = true)]
    Dist {
        /// Pages written in the fill phase
        #[arg(long, default_value_t = 100_000)]
        objects: usize,
        #[arg(long, default_value_t = 694.0)]
        mean: f64,
        #[arg(long, default_value_t = 474.0)]
        sd: f64,
        /// Shortest object: smaller draws are stored at this length and counted [default:
        /// the shortest liblz4 output of a 4K page that is not same-filled]
        #[arg(long, value_name = "BYTES", default_value_t = dist::DEFAULT_MIN_LEN)]
        min_len: usize,
        /// Share of same-filled pages, 0..=1
        #[arg(long, default_value_t = 0.11)]
        same_share: f64,
        /// skip (kept outside the pool, modern zram) or store (at --same-size bytes, 2012)
        #[arg(long, default_value = "skip")]
        same_filled: String,
        #[arg(long, default_value_t = 28)]
        same_size: usize,
        /// Random free + re-store steps after the fill phase [default: --objects]
        #[arg(long)]
        churn: Option<usize>,
        /// Share of the pages freed at random after the churn phase, 0..=1 [default: 0]
        #[arg(long, default_value_t = 0.0)]
        shrink: f64,
        /// Compact after the churn (and shrink) phase
        #[arg(long)]
        compact: bool,
        /// Compact every N churn steps
        #[arg(long, value_name = "N")]
        compact_every: Option<usize>,
    },
    /// Files or directories split into pages, compressed with lz4 or zstd, stored as zram does
    /// and verified on read; a synthetic corpus when no path is given
    #[command(allow_negative_numbers = true)]
    Pages {
        /// Files or directories (walked recursively)
        paths: Vec<PathBuf>,
        /// lz4 or zstd
        #[arg(long, default_value = "lz4")]
        compressor: String,
        /// zstd level, 1..=22 (refused with lz4, which takes none) [default: 3, zram's]
        #[arg(long, value_name = "N")]
        level: Option<i32>,
        /// Pages of the synthetic corpus
        #[arg(long, default_value_t = 16384)]
        synthetic_pages: usize,
        /// Stop after this many pages
        #[arg(long)]
        max_pages: Option<usize>,
        /// skip or store, as for dist
        #[arg(long, default_value = "skip")]
        same_filled: String,
        #[arg(long, default_value_t = 28)]
        same_size: usize,
    },
    /// Replay a trace file
    Trace { file: PathBuf },
}

fn main() {
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
    // "the following required arguments were not provided:" is followed by their names.
    if msg.ends_with(':') {
        if let Some(next) = lines.next() {
            msg = format!("{msg} {next}");
        }
    }
    format!("{msg} (see 'zsmalloc --help')")
}

fn real_main() -> LabResult<()> {
    let cli = match Cli::try_parse() {
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
        Cmd::Classes(a) => cmd_classes(a),
        Cmd::Run(a) => {
            let w = workload(a.workload, &a.out)?;
            cmd_run("run", &a.pool, &a.out, w, a.record)
        }
        Cmd::Replay(a) => {
            let w = Workload::Trace(trace::Trace { file: a.file, seed: a.out.seed.unwrap_or(1) });
            cmd_run("replay", &a.pool, &a.out, w, a.record)
        }
        Cmd::Compare(a) => cmd_compare(a),
        Cmd::Cost(a) => cmd_cost(a),
        Cmd::Optimize { args, workload } => {
            let seed = args.seed.unwrap_or(1);
            let w = seeded_workload(workload, seed)?;
            let test = match &args.test {
                Some(text) => Some(test_workload(text, seed)?),
                None => None,
            };
            let sink = ProgressSink::auto();
            emit(&zsmalloc_lab::optimize::run(&args, &w, test.as_ref(), &sink)?)
        }
    }
}

/// `optimize --test "WORKLOAD ARGS"`: a workload as `run` takes it, from one string.
fn test_workload(text: &str, seed: u64) -> LabResult<Workload> {
    #[derive(Parser)]
    #[command(name = "--test", no_binary_name = true)]
    struct TestWorkload {
        #[command(subcommand)]
        workload: WorkloadCmd,
    }
    let parsed = TestWorkload::try_parse_from(text.split_whitespace())
        .map_err(|e| LabError::usage(format!("--test '{text}': {}", one_line(&e))))?;
    seeded_workload(Some(parsed.workload), seed)
}

fn workload(cmd: Option<WorkloadCmd>, out: &OutputFlags) -> LabResult<Workload> {
    seeded_workload(cmd, out.seed.unwrap_or(1))
}

fn seeded_workload(cmd: Option<WorkloadCmd>, seed: u64) -> LabResult<Workload> {
    Ok(match cmd.unwrap_or(WorkloadCmd::KernelTest { lo: 32, hi: 4080, step: 16, n: 1337 }) {
        WorkloadCmd::KernelTest { lo, hi, step, n } => {
            Workload::KernelTest(kernel_test::KernelTest { lo, hi, step, n, seed })
        }
        WorkloadCmd::Dist {
            objects,
            mean,
            sd,
            min_len,
            same_share,
            same_filled,
            same_size,
            churn,
            shrink,
            compact,
            compact_every,
        } => Workload::Dist(dist::Dist {
            objects,
            mean,
            sd,
            min_len,
            same_share,
            same_filled: SameFilled::parse(&same_filled)?,
            same_size,
            churn,
            shrink,
            compact,
            compact_every,
            seed,
        }),
        WorkloadCmd::Pages {
            paths,
            compressor,
            level,
            synthetic_pages,
            max_pages,
            same_filled,
            same_size,
        } => Workload::Pages(pages::Pages {
            paths,
            compressor: pages::Compressor::parse(&compressor)?,
            level,
            synthetic_pages,
            max_pages,
            same_filled: SameFilled::parse(&same_filled)?,
            same_size,
            seed,
        }),
        WorkloadCmd::Trace { file } => Workload::Trace(trace::Trace { file, seed }),
    })
}

fn run_options(out: &OutputFlags, w: &Workload, record: Option<PathBuf>) -> LabResult<RunOptions> {
    // Outputs written after the run are checked before it.
    for (flag, path) in
        [("--plot", &out.plot), ("--timeline", &out.timeline), ("--record", &record)]
    {
        if let Some(p) = path {
            report::check_writable(flag, p)?;
        }
    }
    let timeline_every = match (&out.timeline, out.timeline_every) {
        (_, Some(0)) => return Err(LabError::usage("--timeline-every must be at least 1")),
        (None, _) => 0,
        (Some(_), Some(n)) => n,
        (Some(_), None) => (w.estimated_ops() / 500).max(1),
    };
    let repeat = out.repeat.unwrap_or(1);
    if !(1..=1000).contains(&repeat) {
        return Err(LabError::usage(format!("invalid --repeat {repeat}: 1..=1000")));
    }
    Ok(RunOptions {
        per_class: out.per_class,
        timing: !out.no_time,
        record,
        timeline_every,
        repeat,
    })
}

fn format_of(out: &OutputFlags) -> LabResult<Format> {
    out.format.as_deref().map_or(Ok(Format::Table), Format::parse)
}

/// Writes the report to stdout; a closed pipe (`| head`) is not an error.
fn emit(text: &str) -> LabResult<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|_| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(LabError::usage(format!("cannot write the report: {e}"))),
    }
}

fn cmd_run(
    command: &str,
    pool: &ConfigFlags,
    out: &OutputFlags,
    w: Workload,
    record: Option<PathBuf>,
) -> LabResult<()> {
    let format = format_of(out)?;
    let spec = assemble_one(pool, command)?;
    let opts = run_options(out, &w, record)?;
    let sink = ProgressSink::auto();
    let r = runner::run_all(&w, std::slice::from_ref(&spec), &opts, 1, &sink)?
        .pop()
        .ok_or_else(|| LabError::runtime("the run did not run"))?;
    sink.clear();
    if let Some(path) = &out.timeline {
        zsmalloc_lab::report::csv::write_timeline(path, &[(r.label.as_str(), &r.timeline)])?;
    }
    if let Some(path) = &out.plot {
        plot::runs(path, &[&r])?;
    }
    emit(&report::render_run(&r, format)?)
}

fn cmd_compare(a: CompareArgs) -> LabResult<()> {
    let format = format_of(&a.out)?;
    let w = workload(a.workload, &a.out)?;
    let chain_given = a.pool.chain_size.is_some();
    // The demonstration: the RFC's BASE (classic) and PATCHED (heuristic), chain 10.
    let rfc_pair = |base: &ConfigSpec| {
        if !base.is_zsmalloc() {
            return Err(LabError::usage(format!(
                "compare needs several configurations: e.g. --backend zsmalloc,{}",
                base.config.backend.name()
            )));
        }
        let mut base = base.clone();
        if !chain_given {
            base.config.chain_size = 10;
        }
        ["classic", "heuristic"].iter().map(|p| ConfigSpec::with_overrides(&base, p)).collect()
    };
    let in_list = |base: &ConfigSpec| Ok(vec![zsmalloc_lab::config::assemble::zsmalloc(base)]);
    let assembly = assemble(&a.pool, &a.list, &Defaults { alone: &rfc_pair, in_list: &in_list })?;
    let specs = assembly.specs;
    let opts = run_options(&a.out, &w, None)?;
    if a.jobs == Some(0) {
        return Err(LabError::usage("--jobs must be at least 1"));
    }
    let jobs = compare::jobs(a.jobs, specs.len());
    let sink = ProgressSink::auto();
    let mut c: Comparison = compare::compare(&w, &specs, &opts, jobs, &sink)?;
    sink.clear();
    c.sweep_keys = assembly.sweep_keys;
    if let Some(path) = &a.out.timeline {
        let runs: Vec<(&str, &[timeline::Sample])> =
            c.runs.iter().map(|r| (r.label.as_str(), r.timeline.as_slice())).collect();
        zsmalloc_lab::report::csv::write_timeline(path, &runs)?;
    }
    if let Some(path) = &a.out.plot {
        if c.sweep_keys.is_empty() {
            plot::runs(path, &c.runs.iter().collect::<Vec<_>>())?;
        } else {
            plot::sweep(path, &c)?;
        }
    }
    emit(&report::render_comparison(&c, format)?)
}

fn cmd_classes(a: ClassesArgs) -> LabResult<()> {
    let format = match a.format.as_deref().map_or(Ok(Format::Table), Format::parse)? {
        f @ (Format::Table | Format::Json | Format::Csv) => f,
        _ => return Err(LabError::usage("classes prints --format table, json or csv")),
    };
    if let Some(p) = &a.plot {
        report::check_writable("--plot", p)?;
    }
    let mut base = assemble_one(&a.pool, "classes")?;
    match base.config.backend {
        BackendKind::Zblock => return cmd_block_table(&a, base.config.page_size, format),
        BackendKind::Malloc => {
            return Err(LabError::usage(
                "the malloc backend has no classes: each object is its own allocation",
            ))
        }
        BackendKind::Zsmalloc => {}
    }
    if let Some(path) = &a.export {
        let text = base.config.export_class_table().map_err(LabError::from)?;
        std::fs::write(path, &text).map_err(|e| LabError::io("write", path, &e))?;
        let classes = zsmalloc_core::ClassTable::new(&base.config)?.classes().len();
        return emit(&format!("{}: {classes} classes written to {}\n", base.label, path.display()));
    }
    // Rows carry their table's label (CSV, JSON): the policy (or `table`), or "base" beside --vs.
    base.label = base.default_label();
    let mut specs = vec![base.clone()];
    if let Some(vs) = &a.vs {
        base.label = "base".into();
        specs = vec![base.clone(), ConfigSpec::with_overrides(&base, vs)?];
    }
    let step =
        a.step.unwrap_or_else(|| specs.iter().map(|s| s.effective_delta()).min().unwrap_or(16));
    let tables = specs
        .iter()
        .map(|s| classes::class_table(s, step, a.min_size, a.max_size))
        .collect::<LabResult<Vec<ClassTableReport>>>()?;
    if let Some(path) = &a.plot {
        plot::classes(path, &tables)?;
    }
    let text = match format {
        Format::Json => classes::render_json(&tables)?,
        Format::Csv => classes::render_csv(&tables),
        _ => classes::render_table(&tables),
    };
    emit(&text)
}

/// `classes --backend zblock`: the block table of the page size.
fn cmd_block_table(a: &ClassesArgs, page_size: u32, format: Format) -> LabResult<()> {
    use zsmalloc_lab::block_table;
    if a.vs.is_some() || a.step.is_some() || a.min_size.is_some() || a.max_size.is_some() {
        return Err(LabError::usage(
            "--vs, --step, --min-size and --max-size are for zsmalloc's class tables; zblock's \
             table has one row per block type",
        ));
    }
    let t = block_table::block_table(page_size)?;
    if let Some(path) = &a.plot {
        block_table::plot(path, &t)?;
    }
    emit(&match format {
        Format::Json => block_table::render_json(&t)?,
        Format::Csv => block_table::render_csv(&t),
        _ => block_table::render_table(&t),
    })
}

fn cmd_cost(mut a: CostArgs) -> LabResult<()> {
    use zsmalloc_lab::cost::{self, codec::Algo, corpus::Source};
    let format = match a.format.as_deref().map_or(Ok(Format::Table), Format::parse)? {
        f @ (Format::Table | Format::Json | Format::Csv) => f,
        _ => return Err(LabError::usage("cost prints --format table, json or csv")),
    };
    // `--read-mode` names the read modes to measure (sg too): not part of the configurations,
    // whose pools each mode sets itself.
    let read_modes = a.pool.read_mode.take();
    let cost_set = |base: &ConfigSpec| {
        if base.is_zsmalloc() {
            cost::default_specs(base)
        } else {
            Ok(vec![base.clone()])
        }
    };
    let in_list = |base: &ConfigSpec| cost::default_specs(base);
    let assembly = assemble(&a.pool, &a.list, &Defaults { alone: &cost_set, in_list: &in_list })?;
    let specs = assembly.specs;
    let mut opts = cost::CostOptions::new(specs);
    let seed = a.seed.unwrap_or(1);
    opts.seed = seed;
    opts.source = match (a.pid, a.paths.is_empty()) {
        (Some(pid), _) => Source::Pid(pid),
        (None, false) => Source::Files(a.paths.clone()),
        (None, true) => Source::Builtin {
            pages: a.synthetic_pages.unwrap_or(cost::DEFAULT_SYNTHETIC_PAGES),
            seed,
        },
    };
    opts.compressors = Algo::parse_list(a.compressor.as_deref().unwrap_or("lz4,zstd"))?;
    if let Some(level) = a.level {
        if !opts.compressors.contains(&Algo::Zstd) {
            return Err(LabError::usage(zsmalloc_lab::codec::LZ4_TAKES_NO_LEVEL));
        }
        if opts.compressors.contains(&Algo::Lz4) {
            eprintln!("zsmalloc: warning: --level {level} applies to zstd only; lz4 takes none");
        }
        opts.level = level;
    }
    let modes = a.modes.clone().or(read_modes);
    if let Some(m) = modes {
        opts.modes = cost::parse_modes(&m)?;
    }
    if let Some(r) = a.repeat {
        opts.repeat = r;
    }
    if let Some(m) = a.max_pages {
        opts.max_pages = m;
    }
    if let Some(mib) = a.pool_mib {
        opts.pool_bytes = mib.max(1) << 20;
    }
    if let Some(b) = a.batch {
        opts.batch = b;
    }
    if let Some(dir) = &a.callgrind_child {
        // The --instructions child: one round, a small pool; counts do not need a cold cache.
        opts.instructions = cost::InstructionSource::Callgrind;
        opts.repeat = 1;
        opts.pool_bytes = opts.pool_bytes.min(4 << 20);
        opts.max_pages = opts.max_pages.min(512);
        if let Source::Builtin { pages, .. } = &mut opts.source {
            *pages = (*pages).min(512);
        }
        cost::run(&opts, &ProgressSink::silent())?;
        return cost::instructions::write_manifest(dir);
    }
    opts.check()?;
    if let Some(p) = &a.plot {
        report::check_writable("--plot", p)?;
    }
    let sink = ProgressSink::auto();
    let mut r = cost::run(&opts, &sink)?;
    sink.clear();
    if a.instructions {
        let exe = std::env::current_exe()
            .map_err(|e| LabError::runtime(format!("cannot find this program: {e}")))?;
        let mut args: Vec<String> = Vec::new();
        let mut skip = false;
        for arg in std::env::args().skip(1) {
            if skip {
                skip = false;
                continue;
            }
            if arg == "--instructions" || arg.starts_with("--plot=") || arg.starts_with("--format=")
            {
                continue;
            }
            if arg == "--plot" || arg == "--format" {
                skip = true;
                continue;
            }
            args.push(arg);
        }
        eprintln!("zsmalloc: counting instructions under callgrind (one round, a small pool)...");
        let counts = cost::instructions::run_child(&exe, &args)?;
        cost::instructions::apply(&mut r, &counts);
    }
    if let Some(p) = &a.plot {
        plot::cost(p, &r, &assembly.sweep_keys)?;
    }
    emit(&cost::report::render(&r, format)?)
}
