//! The real kernel beside the simulation (`zsmalloc kernel`, docs/LAB.md "The real kernel"):
//! a private zram device of the running kernel, driven page by page, read through `mm_stat`.
//!
//! - [`host`]: root, zram control, release, page size, memory; [`device`]: one device this
//!   process created, its whole lifetime (record, removal on every exit, the signal handler,
//!   the sweep of an ended run's device); [`mm_stat`]: the kernel's line;
//! - [`steps`]: fill, discard, compact on the device, the kernel's outcome per step;
//! - [`replay`]: the same steps through the project's pool, compared step by step;
//! - [`check`], [`capture`], [`cost`] (+ [`cost_report`]): the commands; [`corpus`]: the
//!   corpus flags they share; [`import`]: kprobe and bpftrace traces into the trace format.
//!
//! Each command is a library call (`check::run(&CheckArgs) -> CheckReport`), rendered as a
//! table or JSON; [`run`] dispatches a parsed [`KernelCmd`].

pub mod capture;
pub mod check;
pub mod corpus;
pub mod cost;
pub mod cost_report;
pub mod device;
pub mod host;
pub mod import;
pub mod mm_stat;
pub mod replay;
pub mod steps;

use crate::error::LabResult;

/// `zsmalloc kernel <command>`.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum KernelCmd {
    /// Fill a private zram device with a corpus one page at a time, discard a seeded share,
    /// compact, and compare its pool pages with the project's after every step (exit 1 on any
    /// disagreement)
    Check(check::CheckArgs),
    /// Write the kernel's exact outcome per page (same-filled, huge, compressed length) as a
    /// trace `zsmalloc replay` reads
    Capture(capture::CaptureArgs),
    /// Time O_DIRECT reads of every stored page, warm (pool inside the last-level cache) and
    /// cold (twice the cache), grouped by the project's placement: spanning or in place, per
    /// length band, with the spanning extra and its confidence interval
    Cost(cost::CostArgs),
    /// Turn kprobe trace_pipe lines or the bpftrace one-liner's output (zs_malloc, zs_free,
    /// zs_compact) into a trace `zsmalloc replay` reads (no root needed)
    Import(import::ImportArgs),
}

/// A command's output and exit code.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub text: String,
    pub exit_code: i32,
}

/// Runs one kernel command.
pub fn run(cmd: &KernelCmd) -> LabResult<Outcome> {
    match cmd {
        KernelCmd::Check(a) => {
            let r = check::run(a)?;
            Ok(Outcome { text: r.render(&a.format)?, exit_code: r.exit_code() })
        }
        KernelCmd::Capture(a) => {
            let r = capture::run(a)?;
            Ok(Outcome { text: r.render(&a.format)?, exit_code: 0 })
        }
        KernelCmd::Cost(a) => {
            let r = cost::run(a)?;
            Ok(Outcome { text: r.render(&a.format)?, exit_code: 0 })
        }
        KernelCmd::Import(a) => {
            let r = import::run(a)?;
            Ok(Outcome { text: r.render(&a.format)?, exit_code: 0 })
        }
    }
}
