//! `zsmalloc optimize`: the class tables that are best for a workload.

pub mod frontier;
