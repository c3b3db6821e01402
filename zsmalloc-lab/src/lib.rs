//! The lab: workloads, runner, comparisons and reports behind the `zsmalloc` command
//! (user guide in docs/LAB.md).
//!
//! One file per concept:
//! - [`config`]: typed configurations from flags and `--config` specs, assembled in one place
//!   for every command (`--sweep` in `config::sweep`);
//! - [`workload`]: `kernel-test`, `dist`, `pages` (+ synthetic corpus), `trace`;
//! - [`driver`]: runs a workload's operations on a pool through raw handle words
//!   ([`zsmalloc_core::HandleWords`]), with generated contents verified on read, trace recording
//!   ([`trace_format`]), the [`timeline`] and the [`progress`] bar;
//! - [`runner`]: one workload on one configuration -> [`result::RunResult`]; timed repeats;
//! - [`timing`]: the thread CPU clock, timed batches, `{min, median, max}`, interleaved repeats
//!   and deltas with their spread;
//! - [`compare`]: several configurations, deltas against the first;
//! - [`replay_many`]: one trace decoded once, driving the pools of several configurations;
//! - [`classes`]: class tables (`zsmalloc classes`); [`block_table`]: zblock's block table
//!   (`zsmalloc classes --backend zblock`);
//! - [`cost`]: the cost study (`zsmalloc cost`): CPU time of read sections, decompression and
//!   writes per configuration and read mode, on pages compressed with liblz4 and libzstd;
//! - [`page_compressors`]: the compressors `pages`, `dist`'s floor and `cost` measure (those of
//!   every command come from the `zsmalloc-codec` crate, as the tier's do);
//! - [`memory`]: every command's memory plan, refused before anything is allocated;
//! - [`line_wrap`]: long lines broken within 120 columns;
//! - [`report`]: every report's table, JSON and CSV (and a run's `mm_stat` and debugfs forms),
//!   one module per report kind; [`plot`]: SVG figures, one module per figure;
//! - [`kernel`]: the running kernel's zram beside the project (`zsmalloc kernel`);
//! - [`inspect`]: the machine's own zram and zswap, and what another table would save
//!   (`zsmalloc inspect`);
//! - [`folios`]: large folios stored whole as the 2024 multi-page RFC does (`zsmalloc folios`);
//! - [`corpus`]: real programs' traces recorded under the tier, and their manifest;
//! - [`optimize`]: the class tables that are best for a workload (`zsmalloc optimize`);
//! - [`atomic_file`]: every output file, whole or not at all; [`interrupt`]: the one
//!   SIGINT/SIGTERM/SIGHUP handler, which removes partial outputs and live devices;
//! - [`cli`]: the command line, parsed and dispatched; [`flag_values`]: the numeric flags'
//!   value parsers (every command's flags and workloads use them, below `cli`);
//! - [`commands`]: the `zsmalloc` command's subcommands, one module each.
//!
//! ```no_run
//! use zsmalloc_lab::{config::ConfigSpec, runner::{run_one, RunOptions}};
//! use zsmalloc_lab::{progress::ProgressSink, workload::Workload};
//! let config = zsmalloc_core::PoolConfig { chain_size: 10, ..Default::default() };
//! let spec = ConfigSpec { label: "classic".into(), config };
//! let r = run_one(&Workload::default(), &spec, &RunOptions::default(), &ProgressSink::silent())
//!     .unwrap();
//! assert_eq!(r.pages, 175111);
//! ```

pub mod atomic_file;
pub mod block_table;
pub mod classes;
pub mod cli;
pub mod commands;
pub mod compare;
pub mod config;
pub mod corpus;
pub mod cost;
pub mod driver;
pub mod error;
pub mod flag_values;
pub mod folios;
pub mod inspect;
pub mod interrupt;
pub mod kernel;
pub mod line_wrap;
pub mod memory;
pub mod optimize;
pub mod page_compressors;
pub mod plot;
pub mod progress;
pub mod replay_many;
pub mod report;
pub mod result;
pub mod runner;
pub mod timeline;
pub mod timing;
pub mod trace_format;
pub mod workload;
pub mod zram_name;
pub mod zram_page;

pub use error::{LabError, LabResult};
