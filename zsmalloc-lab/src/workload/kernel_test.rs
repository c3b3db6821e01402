//! The `zsmalloc_test` module's pattern: for each size `lo..=hi` by `step`, store all `n`
//! objects of that size, then the next size; then read and verify every object in store order.
//! With 32..=4080 step 16, 1337 objects, 4K pages and chain 10 it is the benchmark of the RFC
//! "zsmalloc: size-classes chain-length tunings" (January 2026).

use serde_json::json;
use zsmalloc_core::Backend;

use super::{Extra, WorkloadKind};
use crate::driver::{Driver, RunPhase};
use crate::error::{LabError, LabResult};
use crate::flag_values;
use crate::memory::{Limit, Plan};
use crate::result::{utilization_permille, KernelTestLines};

/// The parameters, as `zsmalloc run kernel-test` takes them.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct KernelTest {
    /// Smallest object length in bytes
    #[arg(long, value_name = "BYTES", default_value_t = 32, value_parser = flag_values::whole::<usize>(1, u64::from(zsmalloc_core::band::MAX_OBJECT)))]
    pub lo: usize,
    /// Largest object length in bytes (at most the page size)
    #[arg(long, value_name = "BYTES", default_value_t = 4080, value_parser = flag_values::whole::<usize>(1, u64::from(zsmalloc_core::band::MAX_OBJECT)))]
    pub hi: usize,
    /// Length step in bytes
    #[arg(long, value_name = "BYTES", default_value_t = 16, value_parser = flag_values::whole::<usize>(1, u64::from(zsmalloc_core::band::MAX_OBJECT)))]
    pub step: usize,
    /// Objects per size
    #[arg(short = 'n', long = "count", value_name = "N", default_value_t = 1337, value_parser = flag_values::whole::<usize>(1, MAX_OBJECTS))]
    pub n: usize,
    /// Seeds object contents only; placement does not depend on it (`--seed`).
    #[arg(skip = 1u64)]
    pub seed: u64,
}

impl Default for KernelTest {
    fn default() -> Self {
        super::defaults()
    }
}

/// At most this many objects (memory for handle words and bookkeeping).
const MAX_OBJECTS: u64 = 200_000_000;

impl KernelTest {
    fn count(&self) -> u64 {
        if self.step == 0 || self.lo > self.hi {
            return 0;
        }
        ((self.hi - self.lo) / self.step + 1) as u64 * self.n as u64
    }
}

impl WorkloadKind for KernelTest {
    fn params(&self) -> (serde_json::Value, String) {
        (
            json!({"lo": self.lo, "hi": self.hi, "step": self.step, "n": self.n, "seed": self.seed}),
            format!(
                "kernel-test lo={} hi={} step={} n={} seed={}",
                self.lo, self.hi, self.step, self.n, self.seed
            ),
        )
    }

    fn check(&self, page: usize) -> LabResult<()> {
        let bad = |m: String| Err(LabError::usage(format!("kernel-test: {m}")));
        if self.lo == 0 {
            return bad("--lo must be at least 1".into());
        }
        if self.lo > self.hi {
            return bad(format!("--lo {} is larger than --hi {}", self.lo, self.hi));
        }
        if self.hi > page {
            return bad(format!("--hi {} exceeds the page size {page}", self.hi));
        }
        if self.step == 0 {
            return bad("--step must be at least 1".into());
        }
        if self.n == 0 {
            return bad("-n must be at least 1".into());
        }
        if self.count() > MAX_OBJECTS {
            return bad(format!(
                "{} objects is more than the lab runs ({MAX_OBJECTS})",
                self.count()
            ));
        }
        Ok(())
    }

    fn estimated_ops(&self) -> u64 {
        2 * self.count()
    }

    fn memory_plan(&self, page: usize, payload: bool, _limit: &Limit) -> LabResult<Plan> {
        let sizes = (self.lo..=self.hi.min(page)).step_by(self.step.max(1));
        let bytes: u64 = sizes.map(|s| s as u64).sum::<u64>().saturating_mul(self.n as u64);
        let from =
            format!("-n {} ({} objects of {}..={} bytes)", self.n, self.count(), self.lo, self.hi);
        Ok(Plan::new(super::pool_plan_bytes(self.count(), bytes, payload), from))
    }

    fn seed(&self) -> u64 {
        self.seed
    }

    fn set_seed(&mut self, seed: u64) {
        self.seed = seed;
    }

    fn run(&self, d: &mut Driver<'_>, _timing: bool) -> LabResult<Extra> {
        d.phase(RunPhase::Write)?;
        for size in (self.lo..=self.hi).step_by(self.step) {
            for _ in 0..self.n {
                let slot = d.new_slot()?;
                d.store(slot, size)?;
            }
        }
        d.sync()?;
        let pages = d.pool().total_pages();
        let (writes, bytes) = (d.live_objects(), d.live_bytes());
        d.phase(RunPhase::Read)?;
        for slot in 0..d.slots() {
            if d.holds(slot) {
                d.read(slot, None)?;
            }
        }
        d.sync()?;
        let c = d.counters();
        let lines = KernelTestLines {
            num_write_objects: writes,
            pool_pages_used: pages,
            total_allocated_size: bytes,
            utilization_permille: utilization_permille(bytes, pages, d.page_size() as u64),
            num_read_objects: c.reads,
            spanning_objects: c.kernel_spanning,
            total_memcpy_size: c.kernel_memcpy,
        };
        Ok(Extra { kernel_test: Some(lines), ..Extra::default() })
    }
}
