//! The `zsmalloc` command's subcommands, one module each: its clap arguments and its `run`.
//! The binary parses and dispatches; shared flag groups are [`crate::config::flags`] (the
//! configuration) and [`output`] (formats, plots, timelines, repeats, seed).
//!
//! - [`run`]: one workload on one configuration; [`replay`]: a trace file;
//! - [`compare`]: one workload on several configurations;
//! - [`corpus`]: a corpus of real programs' traces, studied;
//! - [`classes`]: class tables (and zblock's block table);
//! - [`cost`]: the cost study, with [`callgrind`] for `--instructions`;
//! - [`folios`]: large folios compressed whole, one object each, against 4K pages;
//! - [`kernel`]: the running kernel's zram beside the project;
//! - [`inspect`]: the machine's own zram devices and zswap;
//! - [`optimize`]: the best class tables for a workload;
//! - [`tier`]: a program run with its memory under a budget (crate `zsmalloc-tier`);
//! - [`corpus`]: a corpus of real programs' traces recorded under the tier;
//! - [`trace`]: traces converted between their forms, and described ([`trace_info`]).

pub mod callgrind;
pub mod classes;
pub mod compare;
pub mod corpus;
pub mod cost;
pub mod folios;
pub mod inspect;
pub mod kernel;
pub mod optimize;
pub mod output;
pub mod replay;
pub mod run;
pub mod tier;
pub mod tier_vs_kernel;
pub mod trace;
pub mod trace_info;
