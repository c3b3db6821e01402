//! Workloads: seeded, reproducible sequences of pool operations.
//!
//! - [`kernel_test::KernelTest`]: the `zsmalloc_test` module's pattern (the RFC's figures);
//! - [`dist::Dist`]: sizes from a normal distribution, same-filled pages, churn, compaction;
//! - [`pages::Pages`]: real ([`files`]) or synthetic pages compressed with liblz4/libzstd,
//!   verified on read;
//! - [`trace::Trace`]: a recorded trace (docs/LAB.md, "Trace format").
//!
//! Each workload's parameters are one struct, which is also its command line: its flags,
//! their descriptions and their defaults are the clap attributes on that struct, and its
//! `Default` is what clap gives with no flag ([`defaults`]). Adding a workload: its module,
//! with a struct deriving `clap::Args` and implementing [`WorkloadKind`], one variant of
//! [`Workload`] and one arm in [`Workload::kind`] / [`Workload::kind_mut`].

pub mod corpus;
pub mod dist;
pub mod files;
pub mod id_map;
pub mod kernel_test;
pub mod pages;
pub mod trace;
pub mod trace_input;
pub mod trace_slots;

use clap::{Args, FromArgMatches, Subcommand, ValueEnum};

use crate::driver::Driver;
use crate::error::LabResult;
use crate::memory::{Limit, Plan, PER_OBJECT_BYTES};
use crate::result::{CorpusFacts, KernelTestLines, WorkloadDesc};

/// How same-filled pages are handled (`dist`, `pages`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum SameFilled {
    /// Kept outside the pool, as modern zram does (`same_pages` in `mm_stat`).
    #[default]
    Skip,
    /// Stored as a small object (`--same-size`, 28 bytes as in the 2012 measurement).
    Store,
}

impl SameFilled {
    pub fn name(self) -> &'static str {
        match self {
            SameFilled::Skip => "skip",
            SameFilled::Store => "store",
        }
    }
}

/// Workload-specific results.
#[derive(Debug, Default)]
pub struct Extra {
    pub kernel_test: Option<KernelTestLines>,
    pub corpus: Option<CorpusFacts>,
    pub dist: Option<dist::DistFacts>,
}

/// What every workload does; [`Workload`] hands each call to the workload it holds.
pub trait WorkloadKind {
    /// The parameters as JSON (`workload.params`) and as one line (`workload.summary`).
    fn params(&self) -> (serde_json::Value, String);
    /// Checks the parameters against a page size and that inputs are readable.
    fn check(&self, page: usize) -> LabResult<()>;
    /// Operations the workload will run (for the progress bar).
    fn estimated_ops(&self) -> u64;
    /// The most memory one run on pages of `page` bytes takes (its pool, the driver's records
    /// and the workload's own), from the parameters alone: nothing is stored to find it. A
    /// plan made by reading an input (a trace) stops once it is over `limit`'s budget.
    /// `payload`: the pool keeps the objects' bytes (else placement only).
    fn memory_plan(&self, page: usize, payload: bool, limit: &Limit) -> LabResult<Plan>;
    /// The seed contents (and sizes, where drawn) are derived from.
    fn seed(&self) -> u64;
    fn set_seed(&mut self, seed: u64);
    /// Runs the operations; `timing`: the workload may time its own phases.
    fn run(&self, d: &mut Driver<'_>, timing: bool) -> LabResult<Extra>;
}

/// One workload with its parameters (as `zsmalloc run WORKLOAD`).
#[derive(Debug, Clone, Subcommand)]
pub enum Workload {
    /// The zsmalloc_test module's pattern: for each size lo..=hi by step, n objects; then read
    /// and verify all in store order [default: the RFC's 32..=4080 step 16, 1337 each]
    #[command(allow_negative_numbers = true)]
    KernelTest(kernel_test::KernelTest),
    /// Sizes from a normal distribution (mean 694, sd 474, as measured in the thread "zsmalloc
    /// limitations and related topics") clipped to --min-len..=page, with same-filled pages, a
    /// churn phase and optional compaction
    #[command(allow_negative_numbers = true)]
    Dist(dist::Dist),
    /// Files or directories split into pages, compressed with lz4 or zstd, stored as zram does
    /// and verified on read; a synthetic corpus when no path is given
    #[command(allow_negative_numbers = true)]
    Pages(pages::Pages),
    /// Replay a trace file
    Trace(trace::Trace),
}

impl Default for Workload {
    /// The RFC's benchmark: `kernel-test` 32..=4080 step 16, 1337 objects per size.
    fn default() -> Self {
        Workload::KernelTest(kernel_test::KernelTest::default())
    }
}

/// Pool memory for `objects` objects of `bytes` in all, and each object's records: with
/// `payload`, the bytes over a utilization floor of 85% (below any class table's on a spread of
/// sizes); without, the pool's header word, zspage and page-table shares
/// ([`PLACEMENT_BYTES_PER_OBJECT`]).
pub(crate) fn pool_plan_bytes(objects: u64, bytes: u64, payload: bool) -> u64 {
    let held = if payload {
        (bytes / 85).saturating_mul(100)
    } else {
        objects.saturating_mul(PLACEMENT_BYTES_PER_OBJECT)
    };
    held.saturating_add(objects.saturating_mul(PER_OBJECT_BYTES))
}

/// A placement-only pool's memory per live object, at most (its header word, its share of a
/// 128-byte zspage entry and of the page tables: measured about 34 bytes on 200-3500-byte
/// objects, `zsmalloc-core/tests/payload_free.rs`).
pub const PLACEMENT_BYTES_PER_OBJECT: u64 = 48;

/// A workload's parameters with every flag at its default, as clap parses an empty command
/// line: so each default is written once, on its flag.
pub fn defaults<T: Args + FromArgMatches>() -> T {
    let cmd = T::augment_args(clap::Command::new("defaults"));
    let parsed = cmd
        .try_get_matches_from(["defaults"])
        .and_then(|m| T::from_arg_matches(&m))
        .map_err(|e| e.to_string());
    match parsed {
        Ok(t) => t,
        // Only a required argument without a default fails here: a programming error that the
        // `every_default_parses` test catches.
        Err(e) => unreachable!("a workload flag without a default: {e}"),
    }
}

impl Workload {
    pub fn name(&self) -> &'static str {
        match self {
            Workload::KernelTest(_) => "kernel-test",
            Workload::Dist(_) => "dist",
            Workload::Pages(_) => "pages",
            Workload::Trace(_) => "trace",
        }
    }

    /// The workload it holds.
    pub fn kind(&self) -> &dyn WorkloadKind {
        match self {
            Workload::KernelTest(w) => w,
            Workload::Dist(w) => w,
            Workload::Pages(w) => w,
            Workload::Trace(w) => w,
        }
    }

    pub fn kind_mut(&mut self) -> &mut dyn WorkloadKind {
        match self {
            Workload::KernelTest(w) => w,
            Workload::Dist(w) => w,
            Workload::Pages(w) => w,
            Workload::Trace(w) => w,
        }
    }

    pub fn desc(&self) -> WorkloadDesc {
        let (params, summary) = self.kind().params();
        WorkloadDesc { name: self.name().to_string(), params, summary }
    }

    /// Checks the parameters against a page size and that inputs are readable.
    pub fn check(&self, page: usize) -> LabResult<()> {
        self.kind().check(page)
    }

    /// Operations the workload will run (for the progress bar).
    pub fn estimated_ops(&self) -> u64 {
        self.kind().estimated_ops()
    }

    /// The most memory one run on pages of `page` bytes takes ([`WorkloadKind::memory_plan`]).
    pub fn memory_plan(&self, page: usize, payload: bool, limit: &Limit) -> LabResult<Plan> {
        self.kind().memory_plan(page, payload, limit)
    }

    /// Generated workloads treat any refusal but a full pool as a bug; a trace replays what a
    /// program did, refusals included.
    pub fn strict(&self) -> bool {
        !matches!(self, Workload::Trace(_))
    }

    /// The seed contents are derived from.
    pub fn seed(&self) -> u64 {
        self.kind().seed()
    }

    /// The workload with its seed set (`--seed` is a flag of the command, not of the workload).
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.kind_mut().set_seed(seed);
        self
    }

    pub fn run(&self, d: &mut Driver<'_>, timing: bool) -> LabResult<Extra> {
        self.kind().run(d, timing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_parses() {
        assert_eq!(kernel_test::KernelTest::default().n, 1337);
        let d = dist::Dist::default();
        assert_eq!((d.mean, d.sd, d.same_share, d.same_size), (694.0, 474.0, 0.11, 28));
        assert_eq!((d.min_len, d.seed, d.churn), (dist::DEFAULT_MIN_LEN, 1, None));
        let p = pages::Pages::default();
        assert_eq!((p.synthetic_pages, p.compressor, p.seed), (16384, pages::Compressor::Lz4, 1));
        assert_eq!(Workload::default().with_seed(7).seed(), 7);
    }
}
