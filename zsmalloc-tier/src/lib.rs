//! The tier: an unmodified program's anonymous memory kept under a budget, the rest compressed
//! into a zsmalloc pool and brought back on the next touch through userfaultfd. Built in steps;
//! this crate holds the first: the userfaultfd layer ([`uffd`]) and the measured floor of a
//! fault's service ([`floor`]) that later steps are held to.

pub mod cpu;
pub mod floor;
pub mod latency;
pub mod launch;
pub mod lz4;
pub mod program;
pub mod region;
pub mod report;
pub mod stats;
pub mod uffd;
