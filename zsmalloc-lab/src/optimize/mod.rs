//! `zsmalloc optimize`: the class tables that are best for a workload (docs/DESIGN.md, The
//! optimizer).
//!
//! - [`layout`]: the class sizes kept fixed and the chains each class may take;
//! - [`evaluate`]: one run reduced to pages, peak pages and spanning reads, per class too;
//! - [`sweep`]: the 16 runs (one per chain) that measure every class under every chain;
//! - [`frontier`]: the exact Pareto merge over per-class options;
//! - [`naive`]: one run per class and chain, the slow way to the same options;
//! - [`boundaries`]: `--boundaries`, merging and splitting classes greedily;
//! - [`search`]: sweep, references, frontier, the reported points run again;
//! - [`generalize`]: `--test`, the chosen tables on a second workload;
//! - [`report`]: what is reported (JSON, table); [`plot`]: the Pareto plot;
//! - [`command`]: the command's flags and its run.

pub mod boundaries;
pub mod command;
pub mod evaluate;
pub mod frontier;
pub mod generalize;
pub mod layout;
pub mod naive;
pub mod plot;
pub mod report;
pub mod search;
pub mod sweep;

pub use command::{run, OptimizeArgs};
