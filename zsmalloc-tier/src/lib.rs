//! The tier: an unmodified program's anonymous memory kept under a budget, the rest compressed
//! into a zsmalloc pool and brought back on the next touch through userfaultfd. This crate
//! holds the userfaultfd layer ([`uffd`]), the measured floor of a fault's service
//! ([`floor`]), and the side of `zsmalloc tier` that runs a program: its checks ([`program`]),
//! the launch ([`launch`]), the figures the preloaded library keeps ([`stats`]) and the report
//! ([`report`]). The library itself is crate `zsmalloc-tier-preload`.

#![deny(clippy::undocumented_unsafe_blocks)]

pub mod cpu;
pub mod ending;
pub mod fd_number;
pub mod floor;
pub mod folio;
mod folio_report;
pub mod latency;
pub mod launch;
pub mod pagemap;
pub mod pattern;
pub mod policy;
pub mod program;
pub mod region;
pub mod report;
mod run_report;
pub mod slack;
pub mod stats;
pub mod uffd;
