//! `zsmalloc kernel`: the running kernel's zram beside the project (check, capture, cost,
//! import). Each subcommand is the library call's parameters ([`crate::kernel`]) and the
//! output format; the reports render through [`crate::report::kernel`].

use clap::{Args, Subcommand};

use super::output::emit;
use crate::error::LabResult;
use crate::kernel::{capture, check, cost, cost_report, import};
use crate::report::{Format, Render};

/// `zsmalloc kernel <command>`.
#[derive(Subcommand, Debug, Clone)]
pub enum KernelCmd {
    /// Fill a private zram device with a corpus one page at a time, discard a seeded share,
    /// compact, and compare its pool pages with the project's after every step (exit 1 on any
    /// disagreement)
    Check(Formatted<check::Check>),
    /// Write the kernel's exact outcome per page (same-filled, huge, compressed length) as a
    /// trace `zsmalloc replay` reads
    Capture(Formatted<capture::Capture>),
    /// Time O_DIRECT reads of every stored page, warm (pool inside the last-level cache) and
    /// cold (twice the cache), grouped by the project's placement: spanning or in place, per
    /// length band, with the spanning extra and its confidence interval
    Cost(Formatted<cost::ReadCost>),
    /// Turn kprobe trace_pipe lines or the bpftrace one-liner's output (zs_malloc, zs_free,
    /// zs_compact) into a trace `zsmalloc replay` reads (no root needed)
    Import(Formatted<import::Import>),
}

/// A kernel command's parameters and its output format.
#[derive(Args, Debug, Clone)]
pub struct Formatted<P: Args> {
    #[command(flatten)]
    pub params: P,
    /// Output format: table or json
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = Format::Table, hide_possible_values = true)]
    pub format: Format,
}

/// Runs one kernel subcommand and prints its report; a disagreement exits 1 after printing.
pub fn run(cmd: KernelCmd) -> LabResult<()> {
    let (text, exit_code) = match &cmd {
        KernelCmd::Check(a) => {
            let format = a.format.offered_by::<check::CheckReport>()?;
            let r = check::run(&a.params)?;
            (r.render(format)?, r.exit_code())
        }
        KernelCmd::Capture(a) => {
            let format = a.format.offered_by::<capture::CaptureReport>()?;
            crate::report::check_writable("-o", &a.params.output)?;
            (capture::run(&a.params)?.render(format)?, 0)
        }
        KernelCmd::Cost(a) => {
            let format = a.format.offered_by::<cost_report::ReadCostReport>()?;
            (cost::run(&a.params)?.render(format)?, 0)
        }
        KernelCmd::Import(a) => {
            let format = a.format.offered_by::<import::ImportReport>()?;
            (import::run(&a.params)?.render(format)?, 0)
        }
    };
    emit(&text)?;
    if exit_code != 0 {
        std::process::exit(exit_code);
    }
    Ok(())
}
