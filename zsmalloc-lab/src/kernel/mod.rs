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
//! Each command is a library call on its parameters (`check::run(&Check) -> CheckReport`);
//! the `zsmalloc kernel` subcommands (`crate::commands::kernel`) parse them and render the
//! reports (`crate::report::kernel`).

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
