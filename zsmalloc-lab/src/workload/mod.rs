//! Workloads: seeded, reproducible sequences of pool operations.
//!
//! - [`kernel_test::KernelTest`]: the `zsmalloc_test` module's pattern (the RFC's figures);
//! - [`dist::Dist`]: sizes from a normal distribution, same-filled pages, churn, compaction;
//! - [`pages::Pages`]: real ([`files`]) or synthetic pages compressed with liblz4/libzstd,
//!   verified on read;
//! - [`trace::Trace`]: a recorded trace (docs/LAB.md, "Trace format").

pub mod corpus;
pub mod dist;
pub mod files;
pub mod kernel_test;
pub mod pages;
pub mod trace;

use crate::driver::Driver;
use crate::error::{LabError, LabResult};
use crate::result::{CorpusFacts, KernelTestLines, WorkloadDesc};

/// How same-filled pages are handled (`dist`, `pages`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SameFilled {
    /// Kept outside the pool, as modern zram does (`same_pages` in `mm_stat`).
    #[default]
    Skip,
    /// Stored as a small object (`--same-size`, 28 bytes as in the 2012 measurement).
    Store,
}

impl SameFilled {
    pub fn parse(s: &str) -> LabResult<Self> {
        match s {
            "skip" => Ok(SameFilled::Skip),
            "store" => Ok(SameFilled::Store),
            _ => Err(LabError::usage(format!(
                "invalid same-filled mode '{s}' (accepted: skip, store)"
            ))),
        }
    }

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

/// One workload with its parameters.
#[derive(Debug, Clone)]
pub enum Workload {
    KernelTest(kernel_test::KernelTest),
    Dist(dist::Dist),
    Pages(pages::Pages),
    Trace(trace::Trace),
}

impl Default for Workload {
    /// The RFC's benchmark: `kernel-test` 32..=4080 step 16, 1337 objects per size.
    fn default() -> Self {
        Workload::KernelTest(kernel_test::KernelTest::default())
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

    pub fn desc(&self) -> WorkloadDesc {
        let (params, summary) = match self {
            Workload::KernelTest(w) => w.params(),
            Workload::Dist(w) => w.params(),
            Workload::Pages(w) => w.params(),
            Workload::Trace(w) => w.params(),
        };
        WorkloadDesc { name: self.name().to_string(), params, summary }
    }

    /// Checks the parameters against a page size and that inputs are readable.
    pub fn check(&self, page: usize) -> LabResult<()> {
        match self {
            Workload::KernelTest(w) => w.check(page),
            Workload::Dist(w) => w.check(page),
            Workload::Pages(w) => w.check(page),
            Workload::Trace(w) => w.check(page),
        }
    }

    /// Operations the workload will run (for the progress bar).
    pub fn estimated_ops(&self) -> u64 {
        match self {
            Workload::KernelTest(w) => w.estimated_ops(),
            Workload::Dist(w) => w.estimated_ops(),
            Workload::Pages(w) => w.estimated_ops(),
            Workload::Trace(w) => w.estimated_ops(),
        }
    }

    /// Generated workloads treat any refusal but a full pool as a bug; a trace replays what a
    /// program did, refusals included.
    pub fn strict(&self) -> bool {
        !matches!(self, Workload::Trace(_))
    }

    /// The seed contents are derived from.
    pub fn seed(&self) -> u64 {
        match self {
            Workload::KernelTest(w) => w.seed,
            Workload::Dist(w) => w.seed,
            Workload::Pages(w) => w.seed,
            Workload::Trace(w) => w.seed,
        }
    }

    pub fn run(&self, d: &mut Driver<'_>, timing: bool) -> LabResult<Extra> {
        match self {
            Workload::KernelTest(w) => w.run(d),
            Workload::Dist(w) => w.run(d),
            Workload::Pages(w) => w.run(d, timing),
            Workload::Trace(w) => w.run(d),
        }
    }
}
