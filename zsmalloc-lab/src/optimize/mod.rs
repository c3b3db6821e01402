//! `zsmalloc optimize`: the class tables that are best for a workload (docs/DESIGN.md, The
//! optimizer). The command's flags are [`crate::commands::optimize`]'s; what it prints is
//! [`crate::report::optimize`]'s, what it draws [`crate::plot::optimize`](crate::plot::optimize()).
//!
//! - [`layout`]: the class sizes kept fixed and the chains each class may take;
//! - [`evaluate`]: one run reduced to pages, peak pages and spanning reads, per class too;
//! - [`sweep`]: the 16 runs (one per chain) that measure every class under every chain;
//! - [`frontier`]: the exact Pareto merge over per-class options;
//! - [`naive`]: one run per class and chain, the slow way to the same options;
//! - [`boundaries`]: `--boundaries`, merging and splitting classes greedily;
//! - [`references`]: classic, the heuristic and a given table, by name, and what a point is;
//! - [`search`]: sweep, references, frontier, the reported points run again;
//! - [`generalize`]: `--test`, the chosen tables on a second workload;
//! - [`report`]: the report's data, typed;
//! - [`mod@run`]: one run from its options: memory plan, search, test, export.

pub mod boundaries;
pub mod evaluate;
pub mod frontier;
pub mod generalize;
pub mod layout;
pub mod naive;
pub mod references;
pub mod report;
pub mod run;
pub mod search;
pub mod sweep;

pub use run::{run, OptimizeOptions};
